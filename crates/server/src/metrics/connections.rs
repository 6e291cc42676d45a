//! What the connection layer counts itself (ZooKeeper's `ServerStats` and `ServerMetrics`
//! figures about sockets and TLS), added to `mntr` after the core's lines, under ZooKeeper's
//! names: `auth_failed_count`, `non_mtls_remote_conn_count`, `non_mtls_local_conn_count`,
//! `outstanding_tls_handshake`, `unsuccessful_handshake`.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct ConnectionMetrics {
    /// TLS handshakes that failed, and certificates that gave no identity.
    auth_failed: AtomicU64,
    /// TLS handshakes that failed (ZooKeeper's `UNSUCCESSFUL_HANDSHAKE`).
    unsuccessful_handshake: AtomicU64,
    /// Plaintext connections accepted, from other hosts and from this one (cumulative).
    non_mtls_remote: AtomicU64,
    non_mtls_local: AtomicU64,
    /// TLS handshakes under way.
    handshakes: AtomicI64,
}

impl ConnectionMetrics {
    pub fn plaintext_connection(&self, ip: IpAddr) {
        let counter = if ip.is_loopback() {
            &self.non_mtls_local
        } else {
            &self.non_mtls_remote
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn handshake_started(&self) {
        self.handshakes.fetch_add(1, Ordering::Relaxed);
    }

    pub fn handshake_ended(&self, ok: bool) {
        self.handshakes.fetch_sub(1, Ordering::Relaxed);
        if !ok {
            self.unsuccessful_handshake.fetch_add(1, Ordering::Relaxed);
            self.auth_failed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A certificate that passed the handshake but gave no identity.
    pub fn auth_failed(&self) {
        self.auth_failed.fetch_add(1, Ordering::Relaxed);
    }

    /// `zk_<name>\t<value>` lines for `mntr`.
    pub fn mntr_lines(&self) -> String {
        let mut out = String::new();
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let lines = [
            ("auth_failed_count", load(&self.auth_failed) as i64),
            (
                "non_mtls_remote_conn_count",
                load(&self.non_mtls_remote) as i64,
            ),
            (
                "non_mtls_local_conn_count",
                load(&self.non_mtls_local) as i64,
            ),
            (
                "outstanding_tls_handshake",
                self.handshakes.load(Ordering::Relaxed).max(0),
            ),
            (
                "unsuccessful_handshake",
                load(&self.unsuccessful_handshake) as i64,
            ),
        ];
        for (name, value) in lines {
            let _ = writeln!(out, "zk_{name}\t{value}");
        }
        out
    }
}
