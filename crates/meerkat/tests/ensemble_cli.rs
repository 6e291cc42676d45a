//! `meerkat ensemble` end to end: `up -n 3` starts three real server processes that elect one
//! leader, a write through one server is read on another, and `down` leaves none of the
//! recorded processes running; a server that cannot start makes `up` fail, naming it, and stop
//! the others. Every wait is bounded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const SERVERS: usize = 3;

fn meerkat(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_meerkat"))
        .args(args)
        .arg("--dir")
        .arg(dir)
        .output()
        .expect("run meerkat")
}

fn text(output: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A base port whose client, quorum and election ports are all free now, all below the kernel's
/// ephemeral range (where the members' connections to each other could take one first).
fn free_base_port() -> u16 {
    // Tests in this binary run at once: each call starts elsewhere.
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let seed = u64::from(std::process::id()) * 7919 + call * 4099;
    let top = ports::ephemeral_range()
        .start()
        .saturating_sub(bench::ensemble::ELECTION_PORT_OFFSET + SERVERS as u16);
    assert!(top > 12_000, "the ephemeral range leaves too few low ports");
    let window = u64::from(top - 10_000);
    for attempt in 0..200u64 {
        let base = 10_000 + ((seed + attempt * 613) % window) as u16;
        let topology = bench::ensemble::Topology::from_base(SERVERS, 0, base);
        if topology.is_ok_and(|t| t.ports_in_use().is_empty()) {
            return base;
        }
    }
    panic!("no free range of ports found");
}

/// Runs `meerkat ensemble down` when the test ends, whatever happened.
struct Down(PathBuf);

impl Drop for Down {
    fn drop(&mut self) {
        if self.0.join("ensemble.json").exists() {
            let _ = meerkat(&["ensemble", "down"], &self.0);
        }
    }
}

/// Whether `pid` is a live (not zombie) process.
fn alive(pid: u64) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next());
    state.is_some_and(|s| s != "Z")
}

fn recorded_pids(dir: &Path) -> Vec<u64> {
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("ensemble.json")).unwrap()).unwrap();
    let servers = record["servers"].as_array().expect("servers");
    servers.iter().map(|s| s["pid"].as_u64().unwrap()).collect()
}

/// The role column of each server line of `status`.
fn roles(status: &str) -> Vec<String> {
    status
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|w| w.parse::<u64>().is_ok())
        })
        .map(|l| l.split_whitespace().nth(4).unwrap_or("").to_string())
        .collect()
}

#[test]
fn up_status_write_read_down() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ens");
    let _down = Down(dir.clone());
    let base = free_base_port().to_string();
    let up = meerkat(&["ensemble", "up", "-n", "3", "--base-port", &base], &dir);
    assert!(up.status.success(), "up failed: {}", text(&up));
    let up_out = String::from_utf8_lossy(&up.stdout).to_string();
    assert!(up_out.contains("connect string: 127.0.0.1:"), "{up_out}");
    let pids = recorded_pids(&dir);
    assert_eq!(pids.len(), SERVERS);

    let status = meerkat(&["ensemble", "status"], &dir);
    assert!(status.status.success(), "status failed: {}", text(&status));
    let status_out = String::from_utf8_lossy(&status.stdout).to_string();
    let mut roles = roles(&status_out);
    roles.sort();
    assert_eq!(roles, ["follower", "follower", "leader"], "{status_out}");
    assert!(status_out.contains("leader: server "), "{status_out}");

    let base: u16 = base.parse().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        tokio::time::timeout(Duration::from_secs(60), write_then_read_elsewhere(base))
            .await
            .expect("write and read within a minute");
    });

    let down = meerkat(&["ensemble", "down"], &dir);
    assert!(down.status.success(), "down failed: {}", text(&down));
    assert!(!dir.join("ensemble.json").exists());
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids.iter().any(|&p| alive(p)) {
        assert!(Instant::now() < deadline, "servers {pids:?} still run");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(dir.join("server-1/myid").exists(), "down keeps the data");
}

async fn write_then_read_elsewhere(base: u16) {
    use client::{acl, Client, ClientConfig, CreateMode};
    let first = format!("127.0.0.1:{base}");
    let third = format!("127.0.0.1:{}", base + 2);
    let writer = Client::connect(&first, ClientConfig::default())
        .await
        .expect("connect to server 1");
    writer
        .create(
            "/ensemble-cli",
            b"through server 1",
            &acl::open_unsafe(),
            CreateMode::Persistent,
        )
        .await
        .expect("create");
    let reader = Client::connect(&third, ClientConfig::default())
        .await
        .expect("connect to server 3");
    // sync: server 3 has applied everything committed before it answers.
    reader.sync("/ensemble-cli").await.expect("sync");
    let (data, _) = reader.get_data("/ensemble-cli").await.expect("read");
    assert_eq!(data, b"through server 1");
    writer.close().await;
    reader.close().await;
}

/// A standalone server holding `data_dir`'s lock; SIGKILLed (by its pid) when dropped.
struct LockHolder(Child);

impl LockHolder {
    fn start(data_dir: &Path, config_dir: &Path) -> LockHolder {
        let port = ports::free_port().expect("a free port");
        std::fs::create_dir_all(data_dir).unwrap();
        std::fs::create_dir_all(config_dir).unwrap();
        let config = config_dir.join("holder.cfg");
        std::fs::write(
            &config,
            format!("dataDir={}\nclientPort={port}\n", data_dir.display()),
        )
        .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_meerkat"))
            .arg("server")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the lock holder");
        let holder = LockHolder(child);
        // Serving means it has taken the data dir's lock.
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "the lock holder never served");
            std::thread::sleep(Duration::from_millis(20));
        }
        holder
    }
}

impl Drop for LockHolder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn up_names_a_server_that_cannot_start_and_stops_the_others() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ens");
    let _down = Down(dir.clone());
    // Server 3's data dir is locked by another server, so server 3 exits at start-up.
    let _holder = LockHolder::start(&dir.join("server-3"), tmp.path());
    let base = free_base_port();
    let up = meerkat(
        &[
            "ensemble",
            "up",
            "-n",
            "3",
            "--base-port",
            &base.to_string(),
        ],
        &dir,
    );
    assert!(!up.status.success(), "up succeeded: {}", text(&up));
    let stderr = String::from_utf8_lossy(&up.stderr);
    assert!(
        stderr.contains("server 3 (pid ") && stderr.contains("exited (exit status: 1)"),
        "{}",
        text(&up)
    );
    assert!(!dir.join("ensemble.json").exists(), "nothing recorded");
    // `up` reaped what it started before it returned: the others' client ports are closed.
    for port in [base, base + 1] {
        assert!(
            TcpStream::connect(("127.0.0.1", port)).is_err(),
            "a server on {port} still runs: {}",
            text(&up)
        );
    }
}
