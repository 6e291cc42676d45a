//! The client port's TLS configuration, rebuilt when its store files change.
//!
//! ZooKeeper 3.9's Netty factory builds a fresh SSL context from the store files for every
//! connection it accepts (`NettyServerCnxnFactory.initSSL`), so a key or trust store replaced on
//! disk takes effect for the next client. meerkat does the same more cheaply: before each
//! handshake it compares the files' size, modification time and inode with those of the
//! loaded ones and reloads only when they differ. A store that no longer loads (half written,
//! wrong password) leaves the previous configuration in force and is reported once per change.

use super::store::{load_key_store, load_trust_store, StoreError};
use crate::config::{ClientAuth, StoreLocation, TlsSettings};
use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::RootCertStore;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;
use x509_parser::prelude::{FromDer, X509Certificate};

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("ssl.keyStore: {0}")]
    KeyStore(StoreError),
    #[error("ssl.trustStore: {0}")]
    TrustStore(StoreError),
    #[error("ssl.clientAuth={0:?} needs ssl.trustStore.location to check client certificates")]
    NoTrustStore(ClientAuth),
    #[error("ssl.enabledProtocols / ssl.protocol: none of {0:?} is a protocol meerkat offers (TLSv1.2, TLSv1.3)")]
    NoProtocol(Vec<String>),
    #[error("ssl.ciphersuites: none of {0:?} is a suite meerkat offers")]
    NoCipherSuite(Vec<String>),
    #[error("the trust store's certificates cannot check clients: {0}")]
    Verifier(String),
    #[error("the key store's certificate and key do not make a TLS identity: {0}")]
    Identity(String),
}

/// ZooKeeper's default protocol on a Java 11+ runtime (`X509Util.DEFAULT_PROTOCOL`).
const DEFAULT_PROTOCOL: &str = "TLSv1.3";

/// Size, modification time and inode of a store file: a change means "reload".
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

pub(crate) fn stamp(path: &PathBuf) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    Some(Stamp {
        len: meta.len(),
        modified: meta.modified().ok(),
        inode,
    })
}

struct Loaded {
    config: Arc<rustls::ServerConfig>,
    /// The stamps the loaded (or last failed) files had.
    stamps: Vec<Option<Stamp>>,
}

/// The server side of TLS on the client port.
pub struct ServerTls {
    settings: TlsSettings,
    loaded: Mutex<Loaded>,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("client_auth", &self.settings.client_auth)
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    /// Loads the stores and checks every setting.
    pub fn new(settings: &TlsSettings) -> Result<Self, TlsError> {
        let stamps = Self::stamps_of(settings);
        let config = build(settings)?;
        Ok(Self {
            settings: settings.clone(),
            loaded: Mutex::new(Loaded { config, stamps }),
        })
    }

    fn files(settings: &TlsSettings) -> impl Iterator<Item = &StoreLocation> {
        settings.key_store.iter().chain(settings.trust_store.iter())
    }

    fn stamps_of(settings: &TlsSettings) -> Vec<Option<Stamp>> {
        Self::files(settings).map(|s| stamp(&s.path)).collect()
    }

    /// The configuration for the next handshake, reloaded first if a store file changed.
    pub fn config(&self) -> Arc<rustls::ServerConfig> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        let now = Self::stamps_of(&self.settings);
        if now != loaded.stamps {
            loaded.stamps = now;
            match build(&self.settings) {
                Ok(config) => {
                    tracing::info!("TLS key or trust store changed on disk: reloaded");
                    loaded.config = config;
                }
                Err(e) => tracing::error!(
                    error = %e,
                    "TLS key or trust store changed on disk but cannot be loaded; keeping the previous one"
                ),
            }
        }
        loaded.config.clone()
    }

    pub fn client_auth(&self) -> ClientAuth {
        self.settings.client_auth
    }

    pub fn x509_super_user(&self) -> Option<&str> {
        self.settings.x509_super_user.as_deref()
    }
}

/// The protocol versions `ssl.enabledProtocols` (else `ssl.protocol`) allow.
pub(crate) fn protocol_versions(
    settings: &TlsSettings,
) -> Result<Vec<&'static rustls::SupportedProtocolVersion>, TlsError> {
    let names = settings.enabled_protocols.clone().unwrap_or_else(|| {
        vec![settings
            .protocol
            .clone()
            .unwrap_or_else(|| DEFAULT_PROTOCOL.to_string())]
    });
    let mut versions = Vec::new();
    for name in &names {
        let version = match name.as_str() {
            "TLSv1.3" => &rustls::version::TLS13,
            "TLSv1.2" => &rustls::version::TLS12,
            // Java's "TLS" means "the newest": 1.3 and 1.2.
            "TLS" => {
                versions.push(&rustls::version::TLS12);
                &rustls::version::TLS13
            }
            other => {
                tracing::warn!(
                    protocol = other,
                    "TLS protocol not offered (rustls speaks TLSv1.2 and TLSv1.3 only); skipped"
                );
                continue;
            }
        };
        if !versions.contains(&version) {
            versions.push(version);
        }
    }
    if versions.is_empty() {
        return Err(TlsError::NoProtocol(names));
    }
    Ok(versions)
}

/// rustls's ring provider, its cipher suites cut down to `ssl.ciphersuites` when set. Java
/// names TLS 1.3 suites `TLS_AES_128_GCM_SHA256`; rustls `TLS13_AES_128_GCM_SHA256`.
pub(crate) fn provider(settings: &TlsSettings) -> Result<Arc<CryptoProvider>, TlsError> {
    let mut provider = rustls::crypto::ring::default_provider();
    if let Some(wanted) = &settings.cipher_suites {
        let name_of = |suite: &rustls::SupportedCipherSuite| format!("{:?}", suite.suite());
        let mut chosen = Vec::new();
        for java_name in wanted {
            let tls13_name = java_name.replacen("TLS_", "TLS13_", 1);
            let found = provider
                .cipher_suites
                .iter()
                .find(|s| name_of(s) == *java_name || name_of(s) == tls13_name);
            match found {
                Some(suite) => chosen.push(*suite),
                None => tracing::warn!(
                    suite = %java_name,
                    "cipher suite not offered by rustls (CBC and non-ECDHE suites are not); skipped"
                ),
            }
        }
        if chosen.is_empty() {
            return Err(TlsError::NoCipherSuite(wanted.clone()));
        }
        provider.cipher_suites = chosen;
    }
    Ok(Arc::new(provider))
}

/// Roots from the trust store.
pub(crate) fn roots(location: &StoreLocation) -> Result<RootCertStore, TlsError> {
    let anchors = load_trust_store(location).map_err(TlsError::TrustStore)?;
    let mut roots = RootCertStore::empty();
    let (_, ignored) = roots.add_parsable_certificates(anchors);
    if ignored > 0 {
        tracing::warn!(
            path = %location.path.display(),
            ignored,
            "trust store certificates that cannot anchor trust were skipped"
        );
    }
    Ok(roots)
}

fn build(settings: &TlsSettings) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let Some(key_location) = &settings.key_store else {
        return Err(TlsError::KeyStore(StoreError::Missing {
            path: PathBuf::new(),
            what: "ssl.keyStore.location is not set",
        }));
    };
    let material = load_key_store(key_location).map_err(TlsError::KeyStore)?;
    let provider = provider(settings)?;
    let versions = protocol_versions(settings)?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| TlsError::NoProtocol(vec![e.to_string()]))?;
    let builder = match settings.client_auth {
        ClientAuth::None => builder.with_no_client_auth(),
        auth => {
            let trust = settings
                .trust_store
                .as_ref()
                .ok_or(TlsError::NoTrustStore(auth))?;
            let verifier = WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots(trust)?),
                provider.clone(),
            );
            let verifier = if auth == ClientAuth::Want {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier
                .build()
                .map_err(|e| TlsError::Verifier(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let certified = certified_key(&provider, material)?;
    let config = builder.with_cert_resolver(Arc::new(SingleCertAndKey::from(certified)));
    Ok(Arc::new(config))
}

/// The key store's chain and key as rustls's signing identity, the key checked against the
/// certificate. Not `with_single_cert`: its check parses the certificate with webpki, which
/// refuses X.509 v1 certificates, and Java (so ZooKeeper) serves those (kazoo's own test
/// harness makes one, as `openssl x509 -req` without extensions does).
fn certified_key(
    provider: &CryptoProvider,
    material: tls_store::KeyMaterial,
) -> Result<CertifiedKey, TlsError> {
    let key = provider
        .key_provider
        .load_private_key(material.key)
        .map_err(|e| TlsError::Identity(e.to_string()))?;
    let leaf = material
        .chain
        .first()
        .ok_or_else(|| TlsError::Identity("the key store has no certificate".into()))?;
    let (_, parsed) = X509Certificate::from_der(leaf)
        .map_err(|e| TlsError::Identity(format!("unreadable certificate: {e}")))?;
    // A key type whose public half rustls cannot give is not compared, as rustls's own
    // check treats it (InconsistentKeys::Unknown is no error there).
    let Some(key_spki) = key.public_key() else {
        return Ok(CertifiedKey::new(material.chain, key));
    };
    if key_spki.as_ref() != parsed.public_key().raw {
        return Err(TlsError::Identity(
            "the private key does not belong to the first certificate".into(),
        ));
    }
    Ok(CertifiedKey::new(material.chain, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> TlsSettings {
        TlsSettings::default()
    }

    #[test]
    fn protocols_default_to_ssl_protocol_as_zookeepers_netty_server() {
        let only_13 = protocol_versions(&settings()).expect("default");
        assert_eq!(only_13, vec![&rustls::version::TLS13]);
        let mut s = settings();
        s.protocol = Some("TLSv1.2".into());
        assert_eq!(
            protocol_versions(&s).expect("1.2"),
            vec![&rustls::version::TLS12]
        );
        s.enabled_protocols = Some(vec!["TLSv1.1".into(), "TLSv1.2".into(), "TLSv1.3".into()]);
        let both = protocol_versions(&s).expect("1.2 and 1.3; 1.1 skipped");
        assert_eq!(both, vec![&rustls::version::TLS12, &rustls::version::TLS13]);
        s.enabled_protocols = Some(vec!["SSLv3".into()]);
        assert!(matches!(
            protocol_versions(&s),
            Err(TlsError::NoProtocol(_))
        ));
    }

    #[test]
    fn cipher_suites_by_java_names() {
        let mut s = settings();
        s.cipher_suites = Some(vec![
            "TLS_AES_128_GCM_SHA256".into(),
            "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384".into(),
            "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA".into(),
        ]);
        let names: Vec<String> = provider(&s)
            .expect("two of three map")
            .cipher_suites
            .iter()
            .map(|c| format!("{:?}", c.suite()))
            .collect();
        assert_eq!(
            names,
            vec![
                "TLS13_AES_128_GCM_SHA256",
                "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"
            ]
        );
        s.cipher_suites = Some(vec!["TLS_RSA_WITH_AES_128_CBC_SHA".into()]);
        assert!(matches!(provider(&s), Err(TlsError::NoCipherSuite(_))));
    }

    #[test]
    fn client_auth_needs_a_trust_store_and_a_key_store_is_required() {
        let dir = tempfile::tempdir().expect("dir");
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .expect("params")
            .self_signed(&key)
            .expect("cert");
        let pem = dir.path().join("server.pem");
        std::fs::write(&pem, format!("{}{}", key.serialize_pem(), cert.pem())).expect("write");
        let mut s = settings();
        s.key_store = Some(StoreLocation::new(&pem));
        assert!(matches!(
            ServerTls::new(&s),
            Err(TlsError::NoTrustStore(ClientAuth::Need))
        ));
        s.client_auth = ClientAuth::None;
        ServerTls::new(&s).expect("no client auth, no trust store needed");
        s.key_store = Some(StoreLocation::new(dir.path().join("missing.pem")));
        let error = ServerTls::new(&s).expect_err("missing file");
        assert!(error.to_string().contains("missing.pem"), "{error}");
    }

    fn openssl(dir: &std::path::Path, args: &[&str]) {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("the openssl command (it makes the X.509 v1 certificate)");
        assert!(out.status.success(), "openssl {args:?}: {out:?}");
    }

    /// `openssl x509 -req` without extensions (OpenSSL 3.0) signs an X.509 v1 certificate, which
    /// ZooKeeper serves; a key that is not the certificate's is still refused.
    #[test]
    fn a_v1_certificate_is_served_and_a_foreign_key_refused() {
        let dir = tempfile::tempdir().expect("dir");
        let d = dir.path();
        let rsa = ["-newkey", "rsa:2048", "-nodes", "-days", "1"];
        openssl(
            d,
            &[
                &["req", "-x509"][..],
                &rsa,
                &["-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=ca"],
            ]
            .concat(),
        );
        openssl(
            d,
            &[
                &["req"][..],
                &rsa[..2],
                &rsa[2..3],
                &[
                    "-keyout",
                    "key.pem",
                    "-out",
                    "req.csr",
                    "-subj",
                    "/CN=server",
                ],
            ]
            .concat(),
        );
        openssl(
            d,
            &[
                "x509",
                "-req",
                "-in",
                "req.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "1",
                "-out",
                "cert.pem",
            ],
        );
        let cert = std::fs::read_to_string(d.join("cert.pem")).expect("cert");
        let der = rustls_pemfile_der(&cert);
        let (_, parsed) = X509Certificate::from_der(&der).expect("parse");
        assert_eq!(parsed.version().0, 0, "openssl made a v1 certificate");
        let key = std::fs::read_to_string(d.join("key.pem")).expect("key");
        let store = d.join("server.pem");
        std::fs::write(&store, format!("{key}{cert}")).expect("write");
        let mut s = settings();
        s.client_auth = ClientAuth::None;
        s.key_store = Some(StoreLocation::new(&store));
        ServerTls::new(&s).expect("a v1 certificate is served");
        let foreign = std::fs::read_to_string(d.join("ca.key")).expect("ca key");
        std::fs::write(&store, format!("{foreign}{cert}")).expect("write");
        let error = ServerTls::new(&s).expect_err("the CA's key is not the server's");
        assert!(error.to_string().contains("does not belong"), "{error}");
    }

    fn rustls_pemfile_der(pem: &str) -> Vec<u8> {
        use rustls::pki_types::pem::PemObject;
        rustls::pki_types::CertificateDer::from_pem_slice(pem.as_bytes())
            .expect("pem")
            .to_vec()
    }
}
