//! A real Prometheus server (Debian's package, installed by `scripts/prometheus.sh`) scrapes
//! meerkat's `/metrics` (`metricsProvider.className=...PrometheusMetricsProvider`), and PromQL
//! over ZooKeeper's metric names returns what the server reports: `znode_count` equals `mntr`'s
//! `zk_znode_count` after some creates, `fsynctime_count` counts fsyncs, and Prometheus's
//! metadata gives ZooKeeper's types (gauge, summary).
//!
//! Ignored in plain `cargo test` (it needs the Prometheus binary); `scripts/test-all.sh` runs
//! it with `--ignored` after `scripts/prometheus.sh`. Without Prometheus it fails, saying so.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use client::{acl, Client, ClientConfig, CreateMode};
use server::config::{FourLetterWhitelist, ServerConfig};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Bound on each wait for Prometheus (start-up, a scrape, a query result).
const WAIT: Duration = Duration::from_secs(60);

fn prometheus_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("MEERKAT_PROMETHEUS") {
        return PathBuf::from(path);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("prometheus"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "no prometheus binary: run scripts/prometheus.sh (it installs Debian's \
                 prometheus package) or set MEERKAT_PROMETHEUS"
            )
        })
}

/// The Prometheus child process, killed by its pid when dropped.
struct Prometheus {
    child: Child,
    address: SocketAddr,
    log: PathBuf,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_prometheus(dir: &std::path::Path, target: SocketAddr) -> Prometheus {
    let port = ports::free_port().unwrap();
    let address = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: meerkat\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let child = Command::new(prometheus_binary())
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address={address}"))
        .arg("--log.level=warn")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("prometheus starts");
    Prometheus {
        child,
        address,
        log: dir.join("prometheus.log"),
    }
}

/// GET over HTTP/1.0 (no client library needed for Prometheus's JSON API).
fn http_get(address: SocketAddr, path_and_query: &str) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET {path_and_query} HTTP/1.0\r\nHost: {address}\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status = head.lines().next()?;
    status.contains(" 200 ").then(|| body.to_string())
}

fn encode(query: &str) -> String {
    query
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The value of an instant PromQL query with one result, once it has one.
fn query(prometheus: &Prometheus, promql: &str) -> Option<f64> {
    let body = http_get(
        prometheus.address,
        &format!("/api/v1/query?query={}", encode(promql)),
    )?;
    let json: serde_json::Value = serde_json::from_str(&body).ok()?;
    let result = json["data"]["result"].as_array()?;
    let [only] = result.as_slice() else {
        return None;
    };
    only["value"][1].as_str()?.parse().ok()
}

/// Waits (bounded) until `promql` evaluates to `expected`.
fn wait_for(prometheus: &Prometheus, promql: &str, expected: f64) {
    let deadline = Instant::now() + WAIT;
    let mut last = None;
    while Instant::now() < deadline {
        last = query(prometheus, promql);
        if last == Some(expected) {
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let log = std::fs::read_to_string(&prometheus.log).unwrap_or_default();
    panic!("PromQL {promql} gave {last:?}, expected {expected}; Prometheus log:\n{log}");
}

fn metric_type(prometheus: &Prometheus, metric: &str) -> Option<String> {
    let body = http_get(
        prometheus.address,
        &format!("/api/v1/metadata?metric={metric}"),
    )?;
    let json: serde_json::Value = serde_json::from_str(&body).ok()?;
    Some(json["data"][metric][0]["type"].as_str()?.to_string())
}

fn mntr(address: SocketAddr, key: &str) -> f64 {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.write_all(b"mntr").unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}\t")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{key} not in mntr:\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Prometheus server: scripts/prometheus.sh, then cargo test -- --ignored"]
async fn prometheus_scrapes_zookeeper_metric_names() {
    let binary = prometheus_binary();
    assert!(binary.is_file(), "{} is not a file", binary.display());
    let dir = tempfile::tempdir().unwrap();
    let mut config = ServerConfig::embedded_default();
    config.data_dir = dir.path().join("data");
    config.data_log_dir = config.data_dir.clone();
    config.pre_alloc_size_kb = 1024;
    config.client_port = ports::free_port().unwrap();
    config.four_letter_words = FourLetterWhitelist::parse("*");
    config.metrics.prometheus = true;
    config.metrics.http_host = IpAddr::V4(Ipv4Addr::LOCALHOST);
    config.metrics.http_port = ports::free_port().unwrap();
    let server = server::start(config).await.expect("meerkat starts");
    let target = server.metrics_address.expect("a metrics endpoint");

    let zk = Client::connect(&server.client_address.to_string(), ClientConfig::default())
        .await
        .unwrap();
    for i in 0..7 {
        zk.create(
            &format!("/scraped-{i}"),
            b"x",
            &acl::open_unsafe(),
            CreateMode::Persistent,
        )
        .await
        .unwrap();
    }
    let client_address = server.client_address;
    let znodes = tokio::task::spawn_blocking(move || mntr(client_address, "zk_znode_count"))
        .await
        .unwrap();
    let fsyncs = tokio::task::spawn_blocking(move || mntr(client_address, "zk_cnt_fsynctime"))
        .await
        .unwrap();
    assert!(fsyncs >= 7.0, "each create was fsynced: {fsyncs}");

    let prometheus_dir = dir.path().join("prometheus");
    std::fs::create_dir_all(&prometheus_dir).unwrap();
    tokio::task::spawn_blocking(move || {
        let prometheus = start_prometheus(&prometheus_dir, target);
        wait_for(&prometheus, "up{job=\"meerkat\"}", 1.0);
        wait_for(&prometheus, "znode_count{job=\"meerkat\"}", znodes);
        wait_for(&prometheus, "fsynctime_count{job=\"meerkat\"} >= 7", fsyncs);
        // The median is a number once fsyncs happened (NaN compares false in PromQL).
        wait_for(
            &prometheus,
            "count(fsynctime{job=\"meerkat\",quantile=\"0.5\"} >= 0)",
            1.0,
        );
        wait_for(&prometheus, "global_sessions{job=\"meerkat\"}", 1.0);
        assert_eq!(
            metric_type(&prometheus, "znode_count").as_deref(),
            Some("gauge")
        );
        assert_eq!(
            metric_type(&prometheus, "fsynctime").as_deref(),
            Some("summary")
        );
    })
    .await
    .unwrap();
    zk.close().await;
    server.shutdown().await;
}
