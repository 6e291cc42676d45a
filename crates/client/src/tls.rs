//! TLS to the server, as ZooKeeper's Java client does it with `zookeeper.client.secure=true`:
//! a trust store to check the server (`zookeeper.ssl.trustStore.*`), an optional key store for
//! a client certificate (`zookeeper.ssl.keyStore.*`, PEM, PKCS12 or JKS), and
//! `zookeeper.ssl.hostnameVerification` (default true: the server's certificate must name the
//! address connected to, by IP address or DNS name). rustls does the cryptography.

use rustls::client::danger::ServerCertVerifier;
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::ServerName;
use rustls::RootCertStore;
use std::sync::Arc;
pub use tls_store::StoreLocation;
use tokio::net::TcpStream;

/// What a TLS connection needs; see [`TlsConfig::client`].
#[derive(Debug, Clone)]
pub struct TlsConfig {
    /// The certificates that may sign the server's certificate.
    pub trust_store: StoreLocation,
    /// The client's own certificate and key, for servers with `ssl.clientAuth=need` (and the
    /// `x509` auth scheme).
    pub key_store: Option<StoreLocation>,
    /// Check that the server's certificate names the host connected to (default true).
    pub hostname_verification: bool,
}

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("trust store: {0}")]
    TrustStore(tls_store::StoreError),
    #[error("key store: {0}")]
    KeyStore(tls_store::StoreError),
    #[error("{0}")]
    Rustls(String),
}

impl TlsConfig {
    pub fn new(trust_store: StoreLocation) -> Self {
        Self {
            trust_store,
            key_store: None,
            hostname_verification: true,
        }
    }

    pub fn with_key_store(mut self, key_store: StoreLocation) -> Self {
        self.key_store = Some(key_store);
        self
    }

    pub fn with_hostname_verification(mut self, on: bool) -> Self {
        self.hostname_verification = on;
        self
    }

    /// Loads the stores and builds the TLS client.
    pub fn client(&self) -> Result<TlsClient, TlsError> {
        let anchors =
            tls_store::load_trust_store(&self.trust_store).map_err(TlsError::TrustStore)?;
        let mut roots = RootCertStore::empty();
        roots.add_parsable_certificates(anchors);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier =
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .map_err(|e| TlsError::Rustls(e.to_string()))?;
        let verifier: Arc<dyn ServerCertVerifier> = if self.hostname_verification {
            verifier
        } else {
            Arc::new(tls_store::AnyServerName(verifier))
        };
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Rustls(e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let config = match &self.key_store {
            None => builder.with_no_client_auth(),
            Some(location) => {
                let material = tls_store::load_key_store(location).map_err(TlsError::KeyStore)?;
                builder
                    .with_client_auth_cert(material.chain, material.key)
                    .map_err(|e| TlsError::Rustls(e.to_string()))?
            }
        };
        Ok(TlsClient {
            connector: tokio_rustls::TlsConnector::from(Arc::new(config)),
        })
    }
}

/// A ready TLS client configuration, shared by every connection of a session.
#[derive(Clone)]
pub struct TlsClient {
    connector: tokio_rustls::TlsConnector,
}

impl std::fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsClient")
    }
}

impl TlsClient {
    /// Runs the handshake over a connected socket to `host` (`address:port`).
    pub(crate) async fn connect(
        &self,
        host: &str,
        stream: TcpStream,
    ) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
        let name = host
            .rsplit_once(':')
            .map_or(host, |(name, _)| name)
            .trim_start_matches('[')
            .trim_end_matches(']');
        let server_name = ServerName::try_from(name.to_string())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        self.connector.connect(server_name, stream).await
    }
}
