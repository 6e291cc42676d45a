//! TLS between ensemble members (`sslQuorum=true`, ZooKeeper's `QuorumX509Util`): every peer
//! connection is mutual TLS, the dialer as TLS client and the acceptor as TLS server, both
//! presenting the `ssl.quorum.keyStore` certificate and trusting `ssl.quorum.trustStore`.
//! With `ssl.quorum.hostnameVerification` (default true) each side also checks that the other's
//! certificate names the address it connected to or from (ZooKeeper checks both directions on
//! the quorum, the client's host name only there). A refused member is logged with the reason.
//! The meerkat handshake ([`super::handshake`]) then runs inside TLS.

use crate::config::{ClientAuth, QuorumTlsSettings, TlsSettings};
use crate::shared_socket::SharedTcp;
use crate::tls::server::{protocol_versions, provider, roots, stamp, Stamp, TlsError};
use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::ServerName;
use rustls::server::WebPkiClientVerifier;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// A TLS stream (or anything else a peer connection could run over).
pub trait PeerIo: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> PeerIo for T {}

/// An established peer connection: a plain socket (shared without a lock) or TLS.
pub enum PeerStream {
    Plain(TcpStream),
    Tls(Box<dyn PeerIo>),
}

/// The reading and writing halves of a peer connection, and the core's direct way onto a
/// plaintext one.
pub type PeerHalves = (
    Box<dyn AsyncRead + Send + Unpin>,
    Box<dyn AsyncWrite + Send + Unpin>,
    Option<Arc<TcpStream>>,
);

impl PeerStream {
    pub fn split(self) -> PeerHalves {
        match self {
            PeerStream::Plain(tcp) => {
                let tcp = Arc::new(tcp);
                (
                    Box::new(SharedTcp(tcp.clone())),
                    Box::new(SharedTcp(tcp.clone())),
                    Some(tcp),
                )
            }
            // A TLS stream's writes go through its session: only its task writes.
            PeerStream::Tls(tls) => {
                let (r, w) = tokio::io::split(tls);
                (Box::new(r), Box::new(w), None)
            }
        }
    }
}

/// The quorum's TLS client and server configurations, rebuilt from changed store files when
/// `sslQuorumReloadCertFiles=true` (ZooKeeper's `QuorumPeer` then watches the quorum stores and
/// resets its SSL context; connections already up keep the old one, as there).
#[derive(Clone)]
pub struct QuorumTls {
    settings: Arc<QuorumTlsSettings>,
    loaded: Arc<Mutex<Loaded>>,
}

/// The configurations built from the stores, and the stamps those files had then.
struct Loaded {
    acceptor: tokio_rustls::TlsAcceptor,
    connector: tokio_rustls::TlsConnector,
    stamps: Vec<Option<Stamp>>,
}

impl std::fmt::Debug for QuorumTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("QuorumTls")
    }
}

impl QuorumTls {
    /// Loads the quorum stores.
    pub fn new(settings: &QuorumTlsSettings) -> Result<Self, TlsError> {
        let stamps = stamps_of(settings);
        let (acceptor, connector) = build(settings)?;
        Ok(Self {
            settings: Arc::new(settings.clone()),
            loaded: Arc::new(Mutex::new(Loaded {
                acceptor,
                connector,
                stamps,
            })),
        })
    }

    /// The acceptor and connector for the next handshake, rebuilt first if reloading is on and
    /// a store file changed. A store that does not load (half written, wrong password) leaves
    /// the previous configuration in force and is logged once per change.
    fn current(&self) -> (tokio_rustls::TlsAcceptor, tokio_rustls::TlsConnector) {
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if self.settings.reload_cert_files {
            let now = stamps_of(&self.settings);
            if now != loaded.stamps {
                loaded.stamps = now;
                match build(&self.settings) {
                    Ok((acceptor, connector)) => {
                        tracing::info!("quorum TLS key or trust store changed on disk: reloaded");
                        loaded.acceptor = acceptor;
                        loaded.connector = connector;
                    }
                    Err(e) => tracing::error!(
                        error = %e,
                        "quorum TLS key or trust store changed on disk but cannot be loaded; keeping the previous one"
                    ),
                }
            }
        }
        (loaded.acceptor.clone(), loaded.connector.clone())
    }

    /// The dialer's side: TLS client to `addr`.
    pub async fn connect(
        &self,
        addr: SocketAddr,
        stream: TcpStream,
    ) -> std::io::Result<Box<dyn PeerIo>> {
        let name = ServerName::IpAddress(addr.ip().into());
        let (_, connector) = self.current();
        let stream = connector.connect(name, stream).await?;
        Ok(Box::new(stream))
    }

    /// The acceptor's side: TLS server for a dialer from `addr`, whose certificate must name
    /// that address when host names are verified.
    pub async fn accept(
        &self,
        addr: SocketAddr,
        stream: TcpStream,
    ) -> std::io::Result<Box<dyn PeerIo>> {
        let (acceptor, _) = self.current();
        let stream = acceptor.accept(stream).await?;
        if self.settings.hostname_verification {
            let leaf = stream
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|c| c.first())
                .ok_or_else(|| invalid("the peer sent no certificate".into()))?;
            let parsed = rustls::server::ParsedCertificate::try_from(leaf)
                .map_err(|e| invalid(format!("unreadable peer certificate: {e}")))?;
            rustls::client::verify_server_name(&parsed, &ServerName::IpAddress(addr.ip().into()))
                .map_err(|e| {
                    invalid(format!(
                        "the peer's certificate does not name {} (ssl.quorum.hostnameVerification): {e}",
                        addr.ip()
                    ))
                })?;
        }
        Ok(Box::new(stream))
    }
}

fn stamps_of(settings: &QuorumTlsSettings) -> Vec<Option<Stamp>> {
    settings
        .key_store
        .iter()
        .chain(settings.trust_store.iter())
        .map(|s| stamp(&s.path))
        .collect()
}

/// The acceptor and connector from the quorum stores.
fn build(
    settings: &QuorumTlsSettings,
) -> Result<(tokio_rustls::TlsAcceptor, tokio_rustls::TlsConnector), TlsError> {
    // The client-port helpers take the client-port settings' shape.
    let shape = TlsSettings {
        key_store: settings.key_store.clone(),
        trust_store: settings.trust_store.clone(),
        client_auth: ClientAuth::Need,
        protocol: settings.protocol.clone(),
        enabled_protocols: settings.enabled_protocols.clone(),
        cipher_suites: settings.cipher_suites.clone(),
        ..TlsSettings::default()
    };
    let key_location = shape.key_store.as_ref().ok_or_else(|| {
        TlsError::KeyStore(tls_store::StoreError::Missing {
            path: std::path::PathBuf::new(),
            what: "ssl.quorum.keyStore.location is not set",
        })
    })?;
    let trust_location = shape
        .trust_store
        .as_ref()
        .ok_or(TlsError::NoTrustStore(ClientAuth::Need))?;
    let provider = provider(&shape)?;
    let versions = protocol_versions(&shape)?;
    let roots = Arc::new(roots(trust_location)?);
    let material = tls_store::load_key_store(key_location).map_err(TlsError::KeyStore)?;

    let client_verifier =
        WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
            .build()
            .map_err(|e| TlsError::Verifier(e.to_string()))?;
    let server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| TlsError::NoProtocol(vec![e.to_string()]))?
        .with_client_cert_verifier(client_verifier)
        .with_single_cert(material.chain.clone(), material.key.clone_key())
        .map_err(|e| TlsError::Identity(e.to_string()))?;

    let server_verifier =
        rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
            .build()
            .map_err(|e| TlsError::Verifier(e.to_string()))?;
    let server_verifier: Arc<dyn ServerCertVerifier> = if settings.hostname_verification {
        server_verifier
    } else {
        Arc::new(tls_store::AnyServerName(server_verifier))
    };
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| TlsError::NoProtocol(vec![e.to_string()]))?
        .dangerous()
        .with_custom_certificate_verifier(server_verifier)
        .with_client_auth_cert(material.chain, material.key)
        .map_err(|e| TlsError::Identity(e.to_string()))?;
    Ok((
        tokio_rustls::TlsAcceptor::from(Arc::new(server)),
        tokio_rustls::TlsConnector::from(Arc::new(client)),
    ))
}

fn invalid(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::PermissionDenied, message)
}
