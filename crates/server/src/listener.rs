//! Accepts client connections, enforcing `maxClientCnxns` per client address.

use crate::connection::{serve, Shared};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;

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

pub async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, max_per_address: u32) {
    let per_address = Arc::new(PerAddress::default());
    let mut next_conn: u64 = 1;
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
        let conn = next_conn;
        next_conn += 1;
        let (shared, per_address) = (shared.clone(), per_address.clone());
        tokio::spawn(async move {
            serve(stream, peer, conn, shared).await;
            per_address.remove(peer.ip());
        });
    }
}
