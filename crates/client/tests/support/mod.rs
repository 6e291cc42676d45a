//! Test support: an in-process meerkat server, a real Apache ZooKeeper 3.9.3 process, and a TCP
//! fault proxy that can cut or silence connections.
//!
//! Every wait is bounded in count and time; every process started here is killed by its pid
//! when its guard drops, including when a test panics.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod curator;
pub mod fault_proxy;
pub mod ops_suite;
pub mod recipe_inprocess;
pub mod recipe_suite;
pub mod reconnect_suite;
pub mod watch_suite;
pub mod workers;
pub mod zookeeper;

use client::{acl, Client, ClientConfig, CreateMode};
use server::config::ServerConfig;
use server::RunningServer;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Session timeout the tests ask for: pings every 2 s, a silent server dropped after 4 s.
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(6);

/// The longest any single wait for an event may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(20);

/// An in-process meerkat server and its data directory (removed when dropped).
pub struct Meerkat {
    pub client_address: SocketAddr,
    server: Option<RunningServer>,
    config: ServerConfig,
    _dir: tempfile::TempDir,
}

impl Meerkat {
    /// Stops the server (every connection drops) and starts it again on the same port and
    /// data directory: what was durable, sessions included, comes back.
    pub async fn restart(&mut self) {
        if let Some(server) = self.server.take() {
            server.stop();
        }
        let mut config = self.config.clone();
        config.client_port = self.client_address.port();
        // The stopped server's tasks release the port and the data-dir lock as they unwind.
        for _ in 0..200 {
            match server::start(config.clone()).await {
                Ok(server) => {
                    self.server = Some(server);
                    return;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
        panic!("meerkat did not restart on {}", self.client_address);
    }

    pub fn stop(mut self) {
        if let Some(server) = self.server.take() {
            server.stop();
        }
    }
}

impl Drop for Meerkat {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.stop();
        }
    }
}

/// A meerkat server on 127.0.0.1 with a port the OS picks, TTL znodes enabled, and a data
/// directory of its own.
pub async fn start_meerkat() -> Meerkat {
    let dir = tempfile::tempdir().expect("data dir");
    let mut config = ServerConfig::embedded_default();
    config.data_dir = dir.path().to_path_buf();
    config.data_log_dir = dir.path().to_path_buf();
    config.pre_alloc_size_kb = 1024;
    config.client_port = 0;
    config.client_port_address = IpAddr::V4(Ipv4Addr::LOCALHOST);
    config.tick_time_ms = 2000;
    config.min_session_timeout_ms = 4000;
    config.max_session_timeout_ms = 40_000;
    config.extended_types_enabled = true;
    let server = server::start(config.clone()).await.expect("meerkat starts");
    assert!(server.client_address.ip().is_loopback());
    Meerkat {
        client_address: server.client_address,
        server: Some(server),
        config,
        _dir: dir,
    }
}

pub fn config() -> ClientConfig {
    ClientConfig::default()
        .with_session_timeout(SESSION_TIMEOUT)
        .with_connect_timeout(WAIT)
}

pub async fn connect(address: &str) -> Client {
    Client::connect(address, config()).await.expect("connects")
}

pub fn addr(a: SocketAddr) -> String {
    a.to_string()
}

/// A fresh top-level path per call, so scenarios never see each other's znodes.
pub fn unique(name: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "/t{}-{}-{name}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

pub async fn mkdir(zk: &Client, path: &str) {
    zk.create(path, b"", &acl::open_unsafe(), CreateMode::Persistent)
        .await
        .expect("create dir");
}

/// Waits (bounded) for a future, failing the test with `what` if it takes longer than [`WAIT`].
pub async fn within<F: std::future::Future>(what: &str, f: F) -> F::Output {
    match tokio::time::timeout(WAIT, f).await {
        Ok(v) => v,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}
