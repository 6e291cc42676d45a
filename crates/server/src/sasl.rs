//! SASL on the client port: the server's login (its DIGEST-MD5 users from a JAAS file) and
//! each connection's exchange.
//!
//! The exchange runs here, in the connection's task, not in the replica: it needs a fresh
//! random nonce per connection and the users' passwords, which the deterministic replica must
//! not hold (see `replica::sasl`). The replica gets each step's outcome as a typed input
//! ([`replica::sasl::SaslOutcome`]) and decides the reply, the identities and the close.
//!
//! The JAAS file is found as ZooKeeper's operators give it: `jaasLoginFile` in zoo.cfg
//! (meerkat's own key), else `-Djava.security.auth.login.config=PATH` in the environment
//! variable `SERVER_JVMFLAGS`, as `zkServer.sh` hands it to the JVM. Without either the server
//! has no SASL login, as ZooKeeper without a JAAS file.

use crate::config::SaslSettings;
use proto::Id;
use replica::sasl::SaslOutcome;
use sasl::digest_md5::{self, DigestMd5Server, Step};
use sasl::jaas::{self, JaasError};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The environment variable `zkServer.sh` passes to the JVM.
pub const SERVER_JVMFLAGS: &str = "SERVER_JVMFLAGS";

/// Why the server's SASL login could not be set up; the server does not start (ZooKeeper's
/// `ServerCnxnFactory.configureSaslLogin` fails the same way).
#[derive(Debug, thiserror::Error)]
pub enum SaslLoginError {
    #[error("cannot read the JAAS file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the JAAS file {path} is not valid: {source}")]
    Parse { path: PathBuf, source: JaasError },
    #[error("{0}")]
    Enforce(String),
    #[error("the JAAS section '{section}' in '{path}' uses the login module {class}: meerkat offers DIGEST-MD5 only ({}); GSSAPI/Kerberos is not supported (docs/operators.md)", jaas::DIGEST_LOGIN_MODULE)]
    UnsupportedModule {
        section: String,
        path: PathBuf,
        class: String,
    },
}

/// The server's SASL login: who may authenticate, with what password.
#[derive(Debug)]
pub struct SaslLogin {
    users: BTreeMap<String, String>,
    super_password: Option<String>,
    super_users: Vec<String>,
    /// The JAAS file, for log lines.
    pub path: PathBuf,
}

/// Where the JAAS file is: `jaasLoginFile`, else the JVM flag in `jvm_flags`.
pub fn jaas_path(settings: &SaslSettings, jvm_flags: Option<&str>) -> Option<PathBuf> {
    if let Some(path) = &settings.jaas_login_file {
        return Some(path.clone());
    }
    let flags = jvm_flags?;
    sasl::jvm_flags::system_property(flags, sasl::jvm_flags::JAAS_CONFIG_PROPERTY)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

impl SaslLogin {
    /// Loads the login from the JAAS file `settings` and `jvm_flags` name; None when neither
    /// names one.
    pub fn load(
        settings: &SaslSettings,
        jvm_flags: Option<&str>,
    ) -> Result<Option<SaslLogin>, SaslLoginError> {
        let Some(path) = jaas_path(settings, jvm_flags) else {
            return Ok(None);
        };
        let text = read_bounded(&path)?;
        let config = jaas::parse(&text).map_err(|source| SaslLoginError::Parse {
            path: path.clone(),
            source,
        })?;
        let section_name = &settings.server_section;
        let Some(section) = config.section(section_name) else {
            // ZooKeeper's configureSaslLogin fails only when the JAAS file itself does not
            // load; a file without the section leaves the server without a SASL login (kazoo's
            // test harness passes an empty file so).
            tracing::warn!(
                path = %path.display(),
                section = %section_name,
                "the JAAS file has no section for the server: no SASL login"
            );
            return Ok(None);
        };
        if let Some(other) = section
            .modules
            .iter()
            .find(|m| m.class != jaas::DIGEST_LOGIN_MODULE)
        {
            return Err(SaslLoginError::UnsupportedModule {
                section: section_name.clone(),
                path,
                class: other.class.clone(),
            });
        }
        Ok(Some(SaslLogin {
            users: section.digest_users(),
            super_password: settings.super_password.clone(),
            super_users: settings.super_users.clone(),
            path,
        }))
    }

    /// How many users may authenticate.
    pub fn user_count(&self) -> usize {
        self.users.len()
    }

    /// A user's password (`SaslServerCallbackHandler`: the SASL user `super` takes
    /// `SASLAuthenticationProvider.superPassword` when it is set).
    fn password_of(&self, user: &str) -> Option<String> {
        if user == "super" {
            if let Some(password) = &self.super_password {
                return Some(password.clone());
            }
        }
        let password = self.users.get(user).cloned();
        if password.is_none() {
            tracing::warn!(
                user,
                "User '{user}' not found in list of DIGEST-MD5 authenticateable users."
            );
        }
        password
    }

    /// Runs one step of `peer`'s exchange (started on its first token).
    pub fn step(
        &self,
        exchange: &mut Option<DigestMd5Server>,
        token: &[u8],
        peer: SocketAddr,
    ) -> SaslOutcome {
        let server = match exchange {
            Some(server) => server,
            None => match fresh_nonce() {
                Ok(nonce) => exchange.insert(DigestMd5Server::new(
                    sasl::ZOOKEEPER_PROTOCOL,
                    sasl::ZOOKEEPER_DIGEST_SERVER_NAME,
                    nonce,
                )),
                Err(reason) => return SaslOutcome::Failed { reason },
            },
        };
        match server.evaluate(token, |user| self.password_of(user)) {
            Ok(Step::Challenge(token)) => SaslOutcome::Continue { token },
            Ok(Step::Complete { token, user }) => {
                tracing::info!(%peer, "Successfully authenticated client: authenticationID={user}; authorizationID={user}.");
                let mut ids = vec![Id {
                    scheme: "sasl".into(),
                    id: user.clone().into(),
                }];
                if self.super_users.contains(&user) {
                    tracing::info!(%peer, "Authenticated Id '{user}' as super user");
                    ids.push(Id {
                        scheme: "super".into(),
                        id: "".into(),
                    });
                }
                SaslOutcome::Authenticated { token, ids }
            }
            Err(e) => {
                tracing::warn!(%peer, reason = %e, "Client failed to SASL authenticate");
                SaslOutcome::Failed {
                    reason: e.to_string(),
                }
            }
        }
    }
}

fn read_bounded(path: &Path) -> Result<String, SaslLoginError> {
    let read = |source| SaslLoginError::Read {
        path: path.to_path_buf(),
        source,
    };
    let size = std::fs::metadata(path).map_err(read)?.len();
    if size > jaas::FILE_BYTES_MAX as u64 {
        return Err(SaslLoginError::Parse {
            path: path.to_path_buf(),
            source: JaasError::TooLarge,
        });
    }
    let bytes = std::fs::read(path).map_err(read)?;
    // The JDK reads JAAS files in the platform encoding; UTF-8 here, Latin-1 if not.
    Ok(String::from_utf8(bytes)
        .unwrap_or_else(|e| e.into_bytes().into_iter().map(char::from).collect()))
}

/// A nonce from the operating system's random source.
fn fresh_nonce() -> Result<String, String> {
    use ring::rand::SecureRandom;
    let mut random = [0u8; digest_md5::NONCE_RANDOM_BYTES];
    ring::rand::SystemRandom::new()
        .fill(&mut random)
        .map_err(|_| "no random numbers for a DIGEST-MD5 nonce".to_string())?;
    Ok(digest_md5::nonce_from_random(&random))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings_with(path: &Path) -> SaslSettings {
        SaslSettings {
            jaas_login_file: Some(path.to_path_buf()),
            ..SaslSettings::default()
        }
    }

    #[test]
    fn jaas_file_from_the_key_or_the_jvm_flags() {
        let none = SaslSettings::default();
        assert_eq!(jaas_path(&none, None), None);
        assert_eq!(jaas_path(&none, Some("-Xmx1g")), None);
        let flags = "-Xmx1g -Djava.security.auth.login.config=/etc/zk/jaas.conf";
        assert_eq!(
            jaas_path(&none, Some(flags)),
            Some(PathBuf::from("/etc/zk/jaas.conf"))
        );
        let key = settings_with(Path::new("/other.conf"));
        assert_eq!(
            jaas_path(&key, Some(flags)),
            Some(PathBuf::from("/other.conf"))
        );
    }

    #[test]
    fn loads_users_and_refuses_what_it_cannot_serve() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("jaas.conf");
        std::fs::write(
            &path,
            "Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_bob=\"b\"; };",
        )
        .expect("write");
        let login = SaslLogin::load(&settings_with(&path), None)
            .expect("loads")
            .expect("configured");
        assert_eq!(login.user_count(), 1);
        assert!(SaslLogin::load(&SaslSettings::default(), None)
            .expect("no file")
            .is_none());
        let other = SaslSettings {
            server_section: "Missing".into(),
            ..settings_with(&path)
        };
        // As in ZooKeeper: a file that loads but lacks the section means no SASL login.
        assert!(SaslLogin::load(&other, None)
            .expect("no section is no error")
            .is_none());
        std::fs::write(&path, "").expect("write");
        assert!(SaslLogin::load(&settings_with(&path), None)
            .expect("an empty file is no error")
            .is_none());
        std::fs::write(
            &path,
            "Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_bob=\"b\"; };",
        )
        .expect("write");
        std::fs::write(
            &path,
            "Server { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true; };",
        )
        .expect("write");
        let err = SaslLogin::load(&settings_with(&path), None).expect_err("kerberos");
        assert!(matches!(err, SaslLoginError::UnsupportedModule { .. }));
        std::fs::write(&path, "Server {").expect("write");
        let err = SaslLogin::load(&settings_with(&path), None).expect_err("broken");
        assert!(matches!(err, SaslLoginError::Parse { .. }));
        let missing = dir.path().join("absent.conf");
        let err = SaslLogin::load(&settings_with(&missing), None).expect_err("absent");
        assert!(matches!(err, SaslLoginError::Read { .. }));
    }
}
