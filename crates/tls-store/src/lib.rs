//! Key and trust stores in the three formats ZooKeeper's operators have (`KeyStoreFileType`):
//! PEM, PKCS12 and JKS. The type comes from `ssl.*.type`, else from the file name's extension
//! (`.pem`, `.p12`, `.jks`), as `KeyStoreFileType.fromPropertyValueOrFileName` decides.
//!
//! * PEM (`PEMFileLoader`): a key store is one file holding the private key (PKCS#8, PKCS#1 or
//!   SEC1) and the certificate chain, leaf first; a trust store is every certificate in the file.
//! * PKCS12: read by `p12-keystore`. As in Java, a trust store's anchors are the certificates
//!   carrying Java's trusted-certificate attribute (what `keytool -importcert` writes).
//! * JKS: read by `jks`; the store password also unlocks the key, as ZooKeeper passes one
//!   password for both.
//!
//! [`AnyServerName`] checks a server's chain but not its name (`hostnameVerification=false`).

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use std::path::{Path, PathBuf};

/// Where a store is, as the `ssl.keyStore.*` / `ssl.trustStore.*` keys say (zoo.cfg for the
/// server, `zookeeper.ssl.*` client properties for a client).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StoreLocation {
    pub path: PathBuf,
    /// `*.password`; empty when absent, as in ZooKeeper.
    pub password: String,
    /// `*.passwordPath`: a file whose content is the password; it wins over `*.password`.
    pub password_path: Option<PathBuf>,
    /// `*.type`: JKS, PEM, PKCS12 (any case); when absent, from the file name's extension.
    pub store_type: Option<String>,
}

impl StoreLocation {
    /// A store of the type its file name says, without a password.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            ..Self::default()
        }
    }

    pub fn with_password(mut self, password: &str) -> Self {
        self.password = password.to_string();
        self
    }
}

/// The three formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreType {
    Pem,
    Pkcs12,
    Jks,
}

/// A server's (or client's) certificate chain, leaf first, and its private key.
#[derive(Debug)]
pub struct KeyMaterial {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

/// Why a store could not be used. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: cannot read the password file: {source}")]
    PasswordFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: unable to auto-detect the store type from the file name (.pem, .p12 or .jks); set ssl.*.type")]
    UnknownType { path: PathBuf },
    #[error("{path}: not a valid {store_type:?} store: {detail}")]
    Malformed {
        path: PathBuf,
        store_type: StoreType,
        detail: String,
    },
    #[error("{path}: {what}")]
    Missing { path: PathBuf, what: &'static str },
}

impl StoreType {
    /// From `ssl.*.type` when set, else from the file name (`KeyStoreFileType`).
    pub fn of(location: &StoreLocation) -> Result<Self, StoreError> {
        match location.store_type.as_deref().map(str::to_ascii_uppercase) {
            Some(t) if t == "PEM" => return Ok(StoreType::Pem),
            Some(t) if t == "PKCS12" => return Ok(StoreType::Pkcs12),
            Some(t) if t == "JKS" => return Ok(StoreType::Jks),
            _ => {}
        }
        let name = location.path.to_string_lossy();
        let extension = name.rfind('.').map(|i| &name[i..]);
        match extension {
            Some(".pem") => Ok(StoreType::Pem),
            Some(".p12") => Ok(StoreType::Pkcs12),
            Some(".jks") => Ok(StoreType::Jks),
            _ => Err(StoreError::UnknownType {
                path: location.path.clone(),
            }),
        }
    }
}

/// The password: the content of `*.passwordPath` when set (ZooKeeper's `SecretUtils.readSecret`
/// keeps the content as it is but for a final line break), else `*.password`.
fn password(location: &StoreLocation) -> Result<String, StoreError> {
    let Some(path) = &location.password_path else {
        return Ok(location.password.clone());
    };
    let text = std::fs::read_to_string(path).map_err(|source| StoreError::PasswordFile {
        path: path.clone(),
        source,
    })?;
    Ok(text.trim_end_matches(['\n', '\r']).to_string())
}

fn read(path: &Path) -> Result<Vec<u8>, StoreError> {
    std::fs::read(path).map_err(|source| StoreError::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn malformed(location: &StoreLocation, store_type: StoreType, detail: impl ToString) -> StoreError {
    StoreError::Malformed {
        path: location.path.clone(),
        store_type,
        detail: detail.to_string(),
    }
}

/// Reads a key store: one private key and its certificate chain.
pub fn load_key_store(location: &StoreLocation) -> Result<KeyMaterial, StoreError> {
    let store_type = StoreType::of(location)?;
    let bytes = read(&location.path)?;
    let password = password(location)?;
    let material = match store_type {
        StoreType::Pem => pem_key_store(&bytes),
        StoreType::Pkcs12 => pkcs12_key_store(&bytes, &password),
        StoreType::Jks => jks_key_store(&bytes, &password),
    }
    .map_err(|detail| malformed(location, store_type, detail))?;
    if material.chain.is_empty() {
        return Err(StoreError::Missing {
            path: location.path.clone(),
            what: "the key store holds a private key but no certificate for it",
        });
    }
    Ok(material)
}

/// Reads a trust store: the certificates that anchor trust.
pub fn load_trust_store(
    location: &StoreLocation,
) -> Result<Vec<CertificateDer<'static>>, StoreError> {
    let store_type = StoreType::of(location)?;
    let bytes = read(&location.path)?;
    let password = password(location)?;
    let anchors = match store_type {
        StoreType::Pem => pem_certificates(&bytes),
        StoreType::Pkcs12 => pkcs12_trust_store(&bytes, &password),
        StoreType::Jks => jks_trust_store(&bytes, &password),
    }
    .map_err(|detail| malformed(location, store_type, detail))?;
    if anchors.is_empty() {
        return Err(StoreError::Missing {
            path: location.path.clone(),
            what: "the trust store holds no trusted certificate",
        });
    }
    Ok(anchors)
}

fn pem_certificates(bytes: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    CertificateDer::pem_slice_iter(bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("bad PEM certificate: {e}"))
}

fn pem_key_store(bytes: &[u8]) -> Result<KeyMaterial, String> {
    if bytes
        .windows(b"ENCRYPTED PRIVATE KEY".len())
        .any(|w| w == b"ENCRYPTED PRIVATE KEY")
    {
        return Err(
            "encrypted PEM private keys are not supported; store the key unencrypted (PKCS#8) \
             or use a PKCS12 or JKS key store"
                .to_string(),
        );
    }
    let key =
        PrivateKeyDer::from_pem_slice(bytes).map_err(|e| format!("no usable private key: {e}"))?;
    Ok(KeyMaterial {
        chain: pem_certificates(bytes)?,
        key,
    })
}

fn pkcs12_archive(bytes: &[u8], password: &str) -> Result<p12_keystore::Pkcs12Archive, String> {
    p12_keystore::Pkcs12Archive::from_pkcs12(bytes, password)
        .map_err(|e| format!("{e} (is the password right?)"))
}

fn pkcs12_key_store(bytes: &[u8], password: &str) -> Result<KeyMaterial, String> {
    let store = p12_keystore::KeyStore::from_pkcs12(
        bytes,
        password,
        p12_keystore::Pkcs12ImportPolicy::Strict,
    )
    .map_err(|e| format!("{e} (is the password right?)"))?;
    let (_, chain) = store
        .private_key_chain()
        .ok_or("no private key entry with its certificate")?;
    Ok(KeyMaterial {
        chain: chain
            .certs()
            .iter()
            .map(|c| CertificateDer::from(c.as_der().to_vec()))
            .collect(),
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(chain.key().as_der().to_vec())),
    })
}

fn pkcs12_trust_store(
    bytes: &[u8],
    password: &str,
) -> Result<Vec<CertificateDer<'static>>, String> {
    let archive = pkcs12_archive(bytes, password)?;
    let anchors: Vec<_> = archive
        .certs
        .iter()
        .filter(|bag| bag.trusted)
        .map(|bag| CertificateDer::from(bag.cert.as_der().to_vec()))
        .collect();
    if anchors.is_empty() && !archive.certs.is_empty() {
        return Err(
            "its certificates lack Java's trusted-certificate attribute, so Java does not \
                    trust them either; import them with keytool -importcert"
                .to_string(),
        );
    }
    Ok(anchors)
}

fn jks_load(bytes: &[u8], password: &str) -> Result<jks::KeyStore, String> {
    let mut store = jks::KeyStore::new();
    store
        .load(bytes, password.as_bytes())
        .map_err(|e| format!("{e} (is the password right?)"))?;
    Ok(store)
}

fn jks_key_store(bytes: &[u8], password: &str) -> Result<KeyMaterial, String> {
    let store = jks_load(bytes, password)?;
    let mut aliases = store.aliases();
    aliases.sort();
    let alias = aliases
        .into_iter()
        .find(|a| store.is_private_key_entry(a))
        .ok_or("no private key entry")?;
    let entry = store
        .get_private_key_entry(&alias, password.as_bytes())
        .map_err(|e| format!("cannot unlock the key {alias:?} with the store password: {e}"))?;
    Ok(KeyMaterial {
        chain: entry
            .certificate_chain
            .iter()
            .map(|c| CertificateDer::from(c.content.clone()))
            .collect(),
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(entry.private_key.clone())),
    })
}

fn jks_trust_store(bytes: &[u8], password: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let store = jks_load(bytes, password)?;
    let mut aliases = store.aliases();
    aliases.sort();
    let mut anchors = Vec::new();
    for alias in aliases {
        if let Ok(entry) = store.get_trusted_certificate_entry(&alias) {
            anchors.push(CertificateDer::from(entry.certificate.content.clone()));
        }
    }
    Ok(anchors)
}

/// `hostnameVerification=false`: the chain must still be trusted; only the name is not checked.
#[derive(Debug)]
pub struct AnyServerName(pub std::sync::Arc<rustls::client::WebPkiServerVerifier>);

impl ServerCertVerifier for AnyServerName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
