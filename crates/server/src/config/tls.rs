//! The TLS keys of the client port, as ZooKeeper 3.9 reads them.
//!
//! `secureClientPort` and `secureClientPortAddress` are `QuorumPeerConfig` keys; the `ssl.*`
//! keys, `client.portUnification`, `client.certReload` and `X509AuthenticationProvider.superUser`
//! are system properties (`zookeeper.ssl.keyStore.location`, ...), so both spellings work here.
//! The `ssl.quorum.*` family (quorum TLS) is not read yet and stays an unsupported key.
//!
//! Values are checked here; the stores themselves are read when the server starts
//! (`crate::tls`), so a zoo.cfg can be parsed on a machine without them.

use std::net::IpAddr;
use std::path::PathBuf;

use super::values;

/// `ssl.clientAuth`: whether the server asks the client for a certificate
/// (`X509Util.ClientAuth`). ZooKeeper's default when the key is absent or empty is `need`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    /// No certificate is requested.
    None,
    /// A certificate is requested; a client without one is served anonymously.
    Want,
    /// A client without a trusted certificate is refused.
    #[default]
    Need,
}

pub use tls_store::StoreLocation;

/// Every TLS setting of the client port. `Default` is "no TLS", with ZooKeeper's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// `secureClientPort`: a port that speaks only TLS.
    pub secure_client_port: Option<u16>,
    /// `secureClientPortAddress`; all interfaces when absent, as in ZooKeeper.
    pub secure_client_port_address: Option<IpAddr>,
    /// `client.portUnification`: `clientPort` takes TLS and plaintext clients alike.
    pub port_unification: bool,
    pub key_store: Option<StoreLocation>,
    pub trust_store: Option<StoreLocation>,
    pub client_auth: ClientAuth,
    /// `ssl.protocol`; ZooKeeper's default on Java 11+ is TLSv1.3.
    pub protocol: Option<String>,
    /// `ssl.enabledProtocols`; when absent, `ssl.protocol` alone (ZooKeeper's Netty server).
    pub enabled_protocols: Option<Vec<String>>,
    /// `ssl.ciphersuites`, Java (IANA) names; when absent, every suite rustls offers.
    pub cipher_suites: Option<Vec<String>>,
    /// `ssl.hostnameVerification` (default true). ZooKeeper's server never checks a client's
    /// host name on the client port (`ClientX509Util.shouldVerifyClientHostname` is false), so
    /// this key matters to clients only; it is read to be checked and shown.
    pub hostname_verification: bool,
    /// `X509AuthenticationProvider.superUser`: a client certificate subject that is `super`.
    pub x509_super_user: Option<String>,
}

impl Default for TlsSettings {
    fn default() -> Self {
        Self {
            secure_client_port: None,
            secure_client_port_address: None,
            port_unification: false,
            key_store: None,
            trust_store: None,
            client_auth: ClientAuth::Need,
            protocol: None,
            enabled_protocols: None,
            cipher_suites: None,
            hostname_verification: true,
            x509_super_user: None,
        }
    }
}

impl TlsSettings {
    /// Whether any listener serves TLS.
    pub fn serves_tls(&self) -> bool {
        self.secure_client_port.is_some() || self.port_unification
    }
}

/// TLS between ensemble members (`sslQuorum=true` and the `ssl.quorum.*` keys, ZooKeeper's
/// `QuorumX509Util`): every peer connection is mutual TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumTlsSettings {
    /// `sslQuorum`.
    pub enabled: bool,
    pub key_store: Option<StoreLocation>,
    pub trust_store: Option<StoreLocation>,
    /// `ssl.quorum.hostnameVerification` (default true): each side checks that the other's
    /// certificate names the address it connects from or to.
    pub hostname_verification: bool,
    pub protocol: Option<String>,
    pub enabled_protocols: Option<Vec<String>>,
    pub cipher_suites: Option<Vec<String>>,
    /// `sslQuorumReloadCertFiles` (default false): store files changed on disk are used by the
    /// next peer handshake.
    pub reload_cert_files: bool,
}

impl Default for QuorumTlsSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            key_store: None,
            trust_store: None,
            hostname_verification: true,
            protocol: None,
            enabled_protocols: None,
            cipher_suites: None,
            reload_cert_files: false,
        }
    }
}

/// The raw TLS keys of one file, before they are put together.
#[derive(Debug, Default)]
pub(super) struct TlsKeys {
    pub(super) settings: TlsSettings,
    key_store: StoreKeys,
    trust_store: StoreKeys,
    hostname_verification: Option<bool>,
    pub(super) quorum: QuorumTlsSettings,
    quorum_key_store: StoreKeys,
    quorum_trust_store: StoreKeys,
    quorum_hostname_verification: Option<bool>,
}

#[derive(Debug, Default)]
struct StoreKeys {
    location: Option<String>,
    password: Option<String>,
    password_path: Option<String>,
    store_type: Option<String>,
}

impl StoreKeys {
    fn finish(self) -> Option<StoreLocation> {
        let path = self.location.filter(|l| !l.is_empty())?;
        Some(StoreLocation {
            path: PathBuf::from(path),
            password: self.password.unwrap_or_default(),
            password_path: self
                .password_path
                .filter(|p| !p.is_empty())
                .map(PathBuf::from),
            store_type: self.store_type.filter(|t| !t.is_empty()),
        })
    }
}

/// What reading one key did.
pub(super) enum Outcome {
    /// Not a TLS key.
    NotMine,
    /// Read.
    Read,
    /// A ZooKeeper TLS key meerkat accepts but does not act on (a warning follows unless the
    /// value is what meerkat does anyway).
    Ignored { quiet: bool },
}

/// The `zookeeper.` system-property prefix, which every key here but the port keys may carry.
const SYSTEM_PROPERTY_PREFIX: &str = "zookeeper.";

impl TlsKeys {
    /// Reads `key=value` if it is a TLS key.
    pub(super) fn read(&mut self, key: &str, value: &str) -> Result<Outcome, String> {
        match key {
            "secureClientPort" => {
                self.settings.secure_client_port = Some(values::port(value)?);
                return Ok(Outcome::Read);
            }
            "secureClientPortAddress" => {
                self.settings.secure_client_port_address = Some(values::ip_address(value)?);
                return Ok(Outcome::Read);
            }
            "sslQuorum" => {
                self.quorum.enabled = values::java_bool(value)?;
                return Ok(Outcome::Read);
            }
            "sslQuorumReloadCertFiles" => {
                self.quorum.reload_cert_files = values::java_bool(value)?;
                return Ok(Outcome::Read);
            }
            _ => {}
        }
        let name = key.strip_prefix(SYSTEM_PROPERTY_PREFIX).unwrap_or(key);
        if let Some(quorum) = name.strip_prefix("ssl.quorum.") {
            return self.read_quorum(quorum, value);
        }
        let s = &mut self.settings;
        match name {
            "ssl.keyStore.location" => self.key_store.location = Some(value.to_string()),
            "ssl.keyStore.password" => self.key_store.password = Some(value.to_string()),
            "ssl.keyStore.passwordPath" => self.key_store.password_path = Some(value.to_string()),
            "ssl.keyStore.type" => self.key_store.store_type = Some(store_type(value)?),
            "ssl.trustStore.location" => self.trust_store.location = Some(value.to_string()),
            "ssl.trustStore.password" => self.trust_store.password = Some(value.to_string()),
            "ssl.trustStore.passwordPath" => {
                self.trust_store.password_path = Some(value.to_string());
            }
            "ssl.trustStore.type" => self.trust_store.store_type = Some(store_type(value)?),
            "ssl.clientAuth" => s.client_auth = client_auth(value)?,
            "ssl.protocol" => s.protocol = Some(value.to_string()),
            "ssl.enabledProtocols" => s.enabled_protocols = Some(list(value)),
            "ssl.ciphersuites" => s.cipher_suites = Some(list(value)),
            "ssl.hostnameVerification" => {
                self.hostname_verification = Some(values::java_bool(value)?);
            }
            "client.portUnification" => s.port_unification = values::java_bool(value)?,
            "X509AuthenticationProvider.superUser" => {
                s.x509_super_user = Some(value.to_string()).filter(|v| !v.is_empty());
            }
            // meerkat looks at the store files before every handshake, so it always reloads.
            "client.certReload" => return Ok(Outcome::Ignored { quiet: true }),
            // Only the built-in x509 provider exists.
            "ssl.authProvider" => {
                return Ok(Outcome::Ignored {
                    quiet: value == "x509",
                })
            }
            // ZooKeeper's own tuning of its Java TLS stack: nothing to do with rustls.
            "ssl.sslProvider" | "ssl.handshakeDetectionTimeoutMillis" | "fips-mode" => {
                return Ok(Outcome::Ignored { quiet: true })
            }
            "ssl.crl" | "ssl.ocsp" => {
                let on = values::java_bool(value)?;
                return Ok(Outcome::Ignored { quiet: !on });
            }
            "ssl.context.supplier.class" => return Ok(Outcome::Ignored { quiet: false }),
            // One connection layer serves both of ZooKeeper's factories.
            "serverCnxnFactory" => return Ok(Outcome::Ignored { quiet: true }),
            _ => return Ok(Outcome::NotMine),
        }
        Ok(Outcome::Read)
    }

    fn read_quorum(&mut self, name: &str, value: &str) -> Result<Outcome, String> {
        let q = &mut self.quorum;
        match name {
            "keyStore.location" => self.quorum_key_store.location = Some(value.to_string()),
            "keyStore.password" => self.quorum_key_store.password = Some(value.to_string()),
            "keyStore.passwordPath" => {
                self.quorum_key_store.password_path = Some(value.to_string());
            }
            "keyStore.type" => self.quorum_key_store.store_type = Some(store_type(value)?),
            "trustStore.location" => self.quorum_trust_store.location = Some(value.to_string()),
            "trustStore.password" => self.quorum_trust_store.password = Some(value.to_string()),
            "trustStore.passwordPath" => {
                self.quorum_trust_store.password_path = Some(value.to_string());
            }
            "trustStore.type" => self.quorum_trust_store.store_type = Some(store_type(value)?),
            "hostnameVerification" => {
                self.quorum_hostname_verification = Some(values::java_bool(value)?);
            }
            "protocol" => q.protocol = Some(value.to_string()),
            "enabledProtocols" => q.enabled_protocols = Some(list(value)),
            "ciphersuites" => q.cipher_suites = Some(list(value)),
            // Peers always present certificates to each other.
            "clientAuth" => {
                return Ok(Outcome::Ignored {
                    quiet: client_auth(value)? == ClientAuth::Need,
                })
            }
            "sslProvider" | "handshakeDetectionTimeoutMillis" => {
                return Ok(Outcome::Ignored { quiet: true })
            }
            "crl" | "ocsp" => {
                return Ok(Outcome::Ignored {
                    quiet: !values::java_bool(value)?,
                })
            }
            _ => return Ok(Outcome::Ignored { quiet: false }),
        }
        Ok(Outcome::Read)
    }

    /// The quorum's TLS settings once the whole file is read.
    pub(super) fn finish_quorum(&mut self) -> QuorumTlsSettings {
        let mut quorum = std::mem::take(&mut self.quorum);
        quorum.key_store = std::mem::take(&mut self.quorum_key_store).finish();
        quorum.trust_store = std::mem::take(&mut self.quorum_trust_store).finish();
        quorum.hostname_verification = self.quorum_hostname_verification.unwrap_or(true);
        quorum
    }

    /// Puts the keys together once the whole file is read.
    pub(super) fn finish(self) -> TlsSettings {
        let mut settings = self.settings;
        settings.key_store = self.key_store.finish();
        settings.trust_store = self.trust_store.finish();
        settings.hostname_verification = self.hostname_verification.unwrap_or(true);
        settings
    }
}

fn client_auth(value: &str) -> Result<ClientAuth, String> {
    match value.to_ascii_lowercase().as_str() {
        "" | "need" => Ok(ClientAuth::Need),
        "want" => Ok(ClientAuth::Want),
        "none" => Ok(ClientAuth::None),
        _ => Err("expected none, want or need".to_string()),
    }
}

fn store_type(value: &str) -> Result<String, String> {
    match value.to_ascii_uppercase().as_str() {
        "" | "JKS" | "PEM" | "PKCS12" => Ok(value.to_ascii_uppercase()),
        "BCFKS" => Err(
            "BCFKS (Bouncy Castle FIPS) stores are not supported; use PKCS12, JKS or PEM"
                .to_string(),
        ),
        _ => Err("expected JKS, PEM or PKCS12".to_string()),
    }
}

fn list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}
