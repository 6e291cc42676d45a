//! Accepts client connections, enforcing `maxClientCnxns` per client address, and runs the TLS
//! handshake where the port asks for one.
//!
//! A listener is plaintext (`clientPort`), TLS only (`secureClientPort`) or unified
//! (`clientPort` with `client.portUnification=true`): a unified port looks at the first byte a
//! client sends and runs a TLS handshake if it starts a TLS record, as ZooKeeper's
//! `DualModeSslHandler` does, so four-letter words and old clients still work there.

use crate::connection::{self, serve, Shared};
use crate::tls::{self, ServerTls};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};

/// What a listener speaks.
#[derive(Clone, Debug)]
pub enum Security {
    Plaintext,
    Tls(Arc<ServerTls>),
    /// TLS or plaintext, by the client's first byte.
    Unified(Arc<ServerTls>),
}

/// Live connections per client address.
#[derive(Default)]
struct PerAddress {
    counts: Mutex<HashMap<IpAddr, u32>>,
}

impl PerAddress {
    fn try_add(&self, ip: IpAddr, max: u32) -> bool {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let n = counts.entry(ip).or_default();
        if max != 0 && *n >= max {
            return false;
        }
        *n += 1;
        true
    }

    fn remove(&self, ip: IpAddr) {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = counts.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&ip);
            }
        }
    }
}

pub async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    max_per_address: u32,
    security: Security,
) {
    let per_address = Arc::new(PerAddress::default());
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Usually EMFILE: back off instead of spinning, keep serving existing clients.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        if !per_address.try_add(peer.ip(), max_per_address) {
            tracing::warn!(%peer, max = max_per_address, "Too many connections from this address - closing");
            drop(stream);
            continue;
        }
        let conn = shared.next_conn.fetch_add(1, Ordering::Relaxed);
        let (shared, per_address, security) =
            (shared.clone(), per_address.clone(), security.clone());
        tokio::spawn(async move {
            handle(stream, peer, conn, shared, security).await;
            per_address.remove(peer.ip());
        });
    }
}

async fn handle(
    stream: TcpStream,
    peer: SocketAddr,
    conn: u64,
    shared: Arc<Shared>,
    security: Security,
) {
    let tls = match security {
        Security::Plaintext => None,
        Security::Tls(tls) => Some(tls),
        Security::Unified(tls) => {
            let mut first = [0u8; 1];
            match stream.peek(&mut first).await {
                Ok(1) if first[0] == tls::TLS_HANDSHAKE_RECORD_TYPE => Some(tls),
                Ok(1) => None,
                _ => return,
            }
        }
    };
    let metrics = &shared.connection_metrics;
    match tls {
        None => {
            metrics.plaintext_connection(peer.ip());
            serve(connection::plain(stream), peer, conn, Vec::new(), shared).await;
        }
        Some(tls) => {
            let _ = stream.set_nodelay(true);
            metrics.handshake_started();
            let accepted = tls::accept(&tls, stream, peer).await;
            metrics.handshake_ended(!matches!(accepted, Err(tls::Refused::Handshake)));
            match accepted {
                Ok((stream, ids)) => {
                    serve(connection::tls(stream), peer, conn, ids, shared).await;
                }
                Err(tls::Refused::Identity) => metrics.auth_failed(),
                Err(tls::Refused::Handshake) => {}
            }
        }
    }
}
