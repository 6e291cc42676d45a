//! The SASL and authentication keys, as ZooKeeper 3.9 reads them: all are system properties
//! (`zookeeper.<key>`) that `QuorumPeerConfig` sets from zoo.cfg, so both spellings work.
//!
//! * `authProvider.N=CLASS` registers an authentication provider (`ProviderRegistry`). The
//!   ones ZooKeeper ships map to meerkat's built-in schemes; any other class is warned about
//!   and skipped, as ZooKeeper logs `Problems loading CLASS` and starts without it.
//! * `enforce.auth.enabled` / `enforce.auth.schemes`, and `sessionRequireClientSASLAuth`
//!   (which means enforce `sasl`): `AuthenticationHelper`. A scheme whose provider is not
//!   registered stops the server, as ZooKeeper's `IllegalArgumentException` does.
//! * `superUser` (and `superUser.*`): SASL users that are also `super`.
//! * `SASLAuthenticationProvider.superPassword`: the password of the SASL user `super`,
//!   whatever the JAAS file says.
//! * `allowSaslFailedClients`: a failed SASL exchange keeps the connection (unless SASL is
//!   enforced).
//! * `sasl.serverconfig`: the JAAS section with the server's users (default `Server`).
//! * `jaasLoginFile`: meerkat's own key for the JAAS file; ZooKeeper takes it only as the JVM
//!   flag `-Djava.security.auth.login.config=PATH` (in `SERVER_JVMFLAGS`), which meerkat reads
//!   too (`crate::sasl`).

use std::collections::BTreeMap;
use std::path::PathBuf;

/// The `authProvider` classes ZooKeeper ships, and the scheme each registers.
pub const KNOWN_PROVIDERS: &[(&str, &str)] = &[
    (
        "org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
        "sasl",
    ),
    (
        "org.apache.zookeeper.server.auth.X509AuthenticationProvider",
        "x509",
    ),
    (
        "org.apache.zookeeper.server.auth.DigestAuthenticationProvider",
        "digest",
    ),
    (
        "org.apache.zookeeper.server.auth.IPAuthenticationProvider",
        "ip",
    ),
];

/// Schemes whose providers are always there: `ip`, `digest` (`ProviderRegistry.initialize`)
/// and `x509` (meerkat's TLS layer always knows it; docs/operators.md).
const BUILT_IN_SCHEMES: &[&str] = &["ip", "digest", "x509"];

/// Every SASL and authentication setting. `Default` is ZooKeeper's: nothing enforced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslSettings {
    /// `jaasLoginFile`.
    pub jaas_login_file: Option<PathBuf>,
    /// `sasl.serverconfig`: the JAAS section the server's users are in.
    pub server_section: String,
    /// Schemes registered by `authProvider.N` (ZooKeeper's own providers only).
    pub provider_schemes: Vec<String>,
    /// The schemes a connection must hold one of before any request but auth and SASL; empty
    /// when nothing is enforced.
    pub enforce_auth_schemes: Vec<String>,
    /// `superUser`, `superUser.*`.
    pub super_users: Vec<String>,
    /// `SASLAuthenticationProvider.superPassword`.
    pub super_password: Option<String>,
    /// `allowSaslFailedClients`.
    pub allow_failed_clients: bool,
}

impl Default for SaslSettings {
    fn default() -> Self {
        Self {
            jaas_login_file: None,
            server_section: sasl::DEFAULT_SERVER_SECTION.to_string(),
            provider_schemes: Vec::new(),
            enforce_auth_schemes: Vec::new(),
            super_users: Vec::new(),
            super_password: None,
            allow_failed_clients: false,
        }
    }
}

impl SaslSettings {
    /// Whether every enforced scheme has a provider (`AuthenticationHelper.
    /// validateConfiguredProperties`); the error is ZooKeeper's message.
    pub fn check_providers(&self) -> Result<(), String> {
        for scheme in &self.enforce_auth_schemes {
            let available = BUILT_IN_SCHEMES.contains(&scheme.as_str())
                || self.provider_schemes.contains(scheme);
            if !available {
                let mut message = format!("Authentication scheme {scheme} is not available.");
                if scheme == "sasl" {
                    message.push_str(" Register it with authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider");
                }
                return Err(message);
            }
        }
        Ok(())
    }
}

/// What reading one key did.
pub(super) enum Outcome {
    NotMine,
    Read,
    /// `authProvider.N` naming a class meerkat does not have: the warning's text.
    UnknownProvider(String),
}

/// The keys of one file, before [`SaslKeys::finish`] checks them together.
#[derive(Debug, Default)]
pub(super) struct SaslKeys {
    pub(super) settings: SaslSettings,
    enforce_enabled: Option<(bool, usize)>,
    enforce_schemes: Option<Vec<String>>,
    require_sasl: Option<(bool, usize)>,
    /// `superUser*` and `authProvider.*` by property name: a later value for the same name
    /// replaces the earlier one, as a system property set again does.
    super_users: BTreeMap<String, String>,
    providers: BTreeMap<String, String>,
}

const SYSTEM_PROPERTY_PREFIX: &str = "zookeeper.";

impl SaslKeys {
    pub(super) fn read(&mut self, key: &str, value: &str, line: usize) -> Result<Outcome, String> {
        if key == "jaasLoginFile" {
            self.settings.jaas_login_file =
                Some(PathBuf::from(value)).filter(|_| !value.is_empty());
            return Ok(Outcome::Read);
        }
        let name = key.strip_prefix(SYSTEM_PROPERTY_PREFIX).unwrap_or(key);
        let s = &mut self.settings;
        match name {
            "sasl.serverconfig" => s.server_section = value.to_string(),
            "enforce.auth.enabled" => {
                self.enforce_enabled = Some((java_parse_boolean(value), line))
            }
            "enforce.auth.schemes" => self.enforce_schemes = Some(java_split_trim(value)),
            "sessionRequireClientSASLAuth" => {
                self.require_sasl = Some((java_parse_boolean(value), line));
            }
            "SASLAuthenticationProvider.superPassword" => {
                s.super_password = Some(value.to_string());
            }
            "allowSaslFailedClients" => s.allow_failed_clients = java_parse_boolean(value),
            _ if name == "superUser" || name.starts_with("superUser.") => {
                self.super_users.insert(name.to_string(), value.to_string());
            }
            _ if name.starts_with("authProvider.") => {
                let class = value.trim();
                match KNOWN_PROVIDERS.iter().find(|(known, _)| *known == class) {
                    Some((_, scheme)) => {
                        self.providers.insert(name.to_string(), scheme.to_string());
                    }
                    None => {
                        self.providers.remove(name);
                        return Ok(Outcome::UnknownProvider(format!(
                            "Problems loading {class}: meerkat has only ZooKeeper's own \
                             providers (SASL, X509, Digest, IP AuthenticationProvider); \
                             starting without it, as ZooKeeper does"
                        )));
                    }
                }
            }
            _ => return Ok(Outcome::NotMine),
        }
        Ok(Outcome::Read)
    }

    /// Settles what is enforced (`AuthenticationHelper.initConfigurations`); an error is the
    /// line to blame and ZooKeeper's message. Whether each enforced scheme has a provider is
    /// checked only with `check_providers`: a provider may also come from `SERVER_JVMFLAGS`,
    /// which the server reads when it starts ([`sasl_settings_with_jvm_flags`]).
    pub(super) fn finish(
        mut self,
        check_providers: bool,
    ) -> Result<SaslSettings, (usize, &'static str, String)> {
        let super_users = self.super_users.values().filter(|v| !v.is_empty());
        self.settings.super_users = super_users.cloned().collect();
        for scheme in self.providers.values() {
            if !self.settings.provider_schemes.contains(scheme) {
                self.settings.provider_schemes.push(scheme.clone());
            }
        }
        let (enforced, line, key) = match (self.require_sasl, self.enforce_enabled) {
            (Some((true, line)), _) => (
                Some(vec!["sasl".to_string()]),
                line,
                "sessionRequireClientSASLAuth",
            ),
            (_, Some((true, line))) => (
                Some(self.enforce_schemes.take().unwrap_or_default()),
                line,
                "enforce.auth.enabled",
            ),
            _ => (None, 0, ""),
        };
        if let Some(schemes) = enforced {
            if schemes.is_empty() {
                let message = "zookeeper.enforce.auth.enabled is true \
                               zookeeper.enforce.auth.schemes must be configured."
                    .to_string();
                return Err((line, key, message));
            }
            self.settings.enforce_auth_schemes = schemes;
            if check_providers {
                self.settings
                    .check_providers()
                    .map_err(|message| (line, key, message))?;
            }
        }
        Ok(self.settings)
    }
}

/// The SASL settings of a zoo.cfg's `entries` over the `-Dzookeeper.KEY=VALUE` system
/// properties of a JVM flags string (`SERVER_JVMFLAGS`), where ZooKeeper's operators often put
/// `zookeeper.authProvider.1`, `zookeeper.superUser` or `zookeeper.allowSaslFailedClients`.
/// zoo.cfg wins, as ZooKeeper sets its keys as system properties after the JVM started.
/// Returns the settings and the warnings about unknown providers.
///
/// # Errors
///
/// ZooKeeper's message when what is enforced cannot be (see [`SaslSettings`]).
pub fn sasl_settings_with_jvm_flags(
    entries: &[(String, String)],
    jvm_flags: &str,
) -> Result<(SaslSettings, Vec<String>), String> {
    let mut keys = SaslKeys::default();
    let mut warnings = Vec::new();
    let properties = jvm_flags
        .split_ascii_whitespace()
        .filter_map(|word| word.strip_prefix("-D"))
        .map(|definition| definition.split_once('=').unwrap_or((definition, "")))
        .filter(|(name, _)| name.starts_with(SYSTEM_PROPERTY_PREFIX));
    let file = entries.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    for (key, value) in properties.chain(file) {
        if let Outcome::UnknownProvider(message) = keys.read(key, value, 0)? {
            warnings.push(format!("{key}: {message}"));
        }
    }
    let settings = keys.finish(true).map_err(|(_, _, message)| message)?;
    Ok((settings, warnings))
}

/// Java's `Boolean.parseBoolean`: `true` in any case is true, anything else false.
fn java_parse_boolean(value: &str) -> bool {
    value.eq_ignore_ascii_case("true")
}

/// Java's `value.split(",")` (trailing empty strings dropped), each part trimmed.
fn java_split_trim(value: &str) -> Vec<String> {
    let mut parts: Vec<String> = value.split(',').map(|s| s.trim().to_string()).collect();
    while parts.last().is_some_and(|p| p.is_empty()) && value.ends_with(',') {
        parts.pop();
    }
    if value.is_empty() {
        parts.clear();
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(lines: &[(&str, &str)]) -> SaslKeys {
        let mut keys = SaslKeys::default();
        for (i, (k, v)) in lines.iter().enumerate() {
            let outcome = keys.read(k, v, i + 1).expect("reads");
            assert!(!matches!(outcome, Outcome::NotMine), "{k}");
        }
        keys
    }

    const SASL_PROVIDER: (&str, &str) = (
        "authProvider.1",
        "org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
    );

    #[test]
    fn session_require_client_sasl_auth_enforces_sasl() {
        let s = keys(&[
            SASL_PROVIDER,
            ("zookeeper.sessionRequireClientSASLAuth", "TRUE"),
        ])
        .finish(true)
        .expect("valid");
        assert_eq!(s.enforce_auth_schemes, vec!["sasl".to_string()]);
        assert_eq!(s.provider_schemes, vec!["sasl".to_string()]);
    }

    #[test]
    fn enforce_auth_schemes_need_providers() {
        let s = keys(&[
            ("enforce.auth.enabled", "true"),
            ("enforce.auth.schemes", " digest , sasl,"),
            SASL_PROVIDER,
        ])
        .finish(true)
        .expect("valid");
        assert_eq!(s.enforce_auth_schemes, vec!["digest", "sasl"]);
        let err = keys(&[
            ("enforce.auth.enabled", "true"),
            ("enforce.auth.schemes", "sasl"),
        ])
        .finish(true)
        .expect_err("no provider");
        assert_eq!(err.0, 1);
        assert!(err
            .2
            .starts_with("Authentication scheme sasl is not available."));
        let err = keys(&[("enforce.auth.enabled", "true")])
            .finish(true)
            .expect_err("no schemes");
        assert!(err.2.contains("enforce.auth.schemes must be configured"));
        // Off unless exactly "true" (any case), as Boolean.parseBoolean.
        let s = keys(&[
            ("enforce.auth.enabled", "yes"),
            ("enforce.auth.schemes", "x"),
        ])
        .finish(true)
        .expect("off");
        assert!(s.enforce_auth_schemes.is_empty());
    }

    #[test]
    fn providers_super_users_and_files() {
        let mut k = keys(&[
            ("jaasLoginFile", "/etc/zk/jaas.conf"),
            ("zookeeper.sasl.serverconfig", "ZkServer"),
            ("superUser", "admin"),
            ("zookeeper.superUser.2", "root"),
            ("SASLAuthenticationProvider.superPassword", "pw"),
            ("allowSaslFailedClients", "true"),
            (
                "authProvider.x509",
                "org.apache.zookeeper.server.auth.X509AuthenticationProvider",
            ),
        ]);
        let unknown = k
            .read("authProvider.9", "com.example.Custom", 8)
            .expect("reads");
        assert!(
            matches!(unknown, Outcome::UnknownProvider(ref m) if m.contains("Problems loading com.example.Custom"))
        );
        let s = k.finish(true).expect("valid");
        assert_eq!(s.jaas_login_file, Some(PathBuf::from("/etc/zk/jaas.conf")));
        assert_eq!(s.server_section, "ZkServer");
        assert_eq!(s.super_users, vec!["admin", "root"]);
        assert_eq!(s.super_password.as_deref(), Some("pw"));
        assert!(s.allow_failed_clients);
        assert_eq!(s.provider_schemes, vec!["x509"]);
        assert!(matches!(
            SaslKeys::default().read("tickTime", "1", 1),
            Ok(Outcome::NotMine)
        ));
    }

    #[test]
    fn jvm_flags_under_zoo_cfg() {
        let flags = "-Xmx1g -Dzookeeper.authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider \
                     -Dzookeeper.superUser=a -Dzookeeper.allowSaslFailedClients=true -Dother=1 \
                     -Dzookeeper.authProvider.2=com.example.Nope";
        let entries = vec![
            ("superUser".to_string(), "b".to_string()),
            ("enforce.auth.enabled".to_string(), "true".to_string()),
            ("enforce.auth.schemes".to_string(), "sasl".to_string()),
        ];
        let (s, warnings) = sasl_settings_with_jvm_flags(&entries, flags).expect("valid");
        assert_eq!(
            s.super_users,
            vec!["b"],
            "zoo.cfg's superUser replaces the flag's"
        );
        assert!(s.allow_failed_clients);
        assert_eq!(s.enforce_auth_schemes, vec!["sasl"]);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("com.example.Nope"));
        let err = sasl_settings_with_jvm_flags(&entries, "").expect_err("no provider");
        assert!(err.starts_with("Authentication scheme sasl is not available."));
    }
}
