//! TLS on the client port, as ZooKeeper 3.9's Netty server offers it: `secureClientPort`,
//! `client.portUnification`, key and trust stores in PEM, PKCS12 or JKS (the `tls-store` crate),
//! `ssl.clientAuth`, protocols and cipher suites, reloading of changed store files
//! ([`server`]) and the `x509` auth scheme ([`identity`]). rustls does the cryptography.
//!
//! [`accept`] runs one server-side handshake and returns the stream with the identities the
//! client's certificate gives (ZooKeeper's `X509AuthenticationProvider.handleAuthentication`):
//! `x509:<subject>`, preceded by `super:<subject>` when the subject is
//! `X509AuthenticationProvider.superUser`.

pub mod identity;
pub mod server;
pub use tls_store as store;

pub use server::{ServerTls, TlsError};

use crate::config::ClientAuth;
use crate::limits::TLS_HANDSHAKE_TIMEOUT;
use proto::Id;
use std::net::SocketAddr;
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

/// The first byte of a TLS connection: a handshake record (RFC 8446 §5.1). Port unification
/// tells TLS from plaintext by it, as ZooKeeper's `DualModeSslHandler` does.
pub const TLS_HANDSHAKE_RECORD_TYPE: u8 = 0x16;

/// Why [`accept`] refused a client (after a log line saying why).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The handshake failed or timed out (untrusted, expired or missing certificate, a
    /// plaintext client, a protocol or cipher mismatch).
    Handshake,
    /// The handshake succeeded but the certificate gives no identity.
    Identity,
}

/// Runs the server side of a handshake.
pub async fn accept(
    tls: &ServerTls,
    stream: TcpStream,
    peer: SocketAddr,
) -> Result<(TlsStream<TcpStream>, Vec<Id>), Refused> {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.config());
    let stream = match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            tracing::warn!(%peer, reason = %e, "TLS handshake failed; closing the connection");
            return Err(Refused::Handshake);
        }
        Err(_) => {
            tracing::warn!(%peer, timeout = ?TLS_HANDSHAKE_TIMEOUT, "TLS handshake not finished in time; closing the connection");
            return Err(Refused::Handshake);
        }
    };
    if tls.client_auth() == ClientAuth::None {
        return Ok((stream, Vec::new()));
    }
    let Some(leaf) = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
    else {
        // ssl.clientAuth=want and the client sent none: served anonymously, as in ZooKeeper.
        return Ok((stream, Vec::new()));
    };
    match identity::subject_name(leaf) {
        Ok(subject) => {
            let mut ids = Vec::with_capacity(2);
            if tls.x509_super_user() == Some(subject.as_str()) {
                tracing::info!(%peer, id = %subject, "authenticated as super user by certificate");
                ids.push(Id {
                    scheme: "super".into(),
                    id: subject.clone().into(),
                });
            }
            tracing::info!(%peer, id = %subject, "authenticated by certificate for scheme 'x509'");
            ids.push(Id {
                scheme: "x509".into(),
                id: subject.into(),
            });
            Ok((stream, ids))
        }
        Err(reason) => {
            tracing::warn!(%peer, %reason, "x509 authentication failed; closing the connection");
            Err(Refused::Identity)
        }
    }
}
