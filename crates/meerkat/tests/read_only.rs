//! Read-only mode with real processes (docs/ensemble.md): three meerkat servers on loopback
//! with `readonlymode.enabled=true` and `localSessionsEnabled=true`; two are SIGKILLed by
//! pid, and the one left alone must, after ZooKeeper's delay, serve reads to a client that
//! accepts a read-only server, answer its writes NotReadOnly, refuse a client that does not,
//! and say `ro` to `isro`. With the two restarted it serves read-write again (`rw`), and the
//! same client, having looked for a read-write server, writes. A second scenario isolates one
//! member (peer proxies): it goes read-only while the other two serve, and a client connected
//! to it read-only moves to them on its own, having asked them `isro`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use anyhow::{bail, ensure, Context, Result};
use client::{acl, Client, ClientConfig, CreateMode, ErrorCode, SessionState};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use testkit::{four_letter, Cut, Ensemble, Flavor, Options, Signal};

/// Waits until `address` answers `isro` with `word`; the last answer otherwise.
async fn wait_isro(address: SocketAddr, word: &str, limit: Duration) -> Result<Duration> {
    let start = Instant::now();
    let mut last = String::new();
    while start.elapsed() < limit {
        last = four_letter::ask(address, "isro").await.unwrap_or_default();
        if last == word {
            return Ok(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    bail!("isro on {address} never answered {word:?} within {limit:?} (last: {last:?})")
}

async fn scenario() -> Result<()> {
    let flavor = Flavor::Meerkat {
        binary: PathBuf::from(env!("CARGO_BIN_EXE_meerkat")),
    };
    let ensemble = Ensemble::start(flavor, read_only_options()).await?;
    let result = run(&ensemble).await;
    if result.is_err() {
        ensemble.keep_files();
    }
    result
}

async fn run(ensemble: &Ensemble) -> Result<()> {
    let leader = ensemble.wait_leader(&[]).await?;
    let survivor = ensemble.sids().into_iter().find(|&s| s != leader).unwrap();
    let others: Vec<u32> = ensemble
        .sids()
        .into_iter()
        .filter(|&s| s != survivor)
        .collect();
    let address = ensemble.client_address(survivor);
    ensure!(four_letter::ask(address, "isro").await? == "rw");

    let setup = Client::connect(&ensemble.connect_string(), ClientConfig::default()).await?;
    let open = acl::open_unsafe();
    setup
        .create("/ro", b"before", &open, CreateMode::Persistent)
        .await?;
    // A local session's ephemeral upgrades it to a global one.
    setup
        .create("/ro/eph", b"", &open, CreateMode::Ephemeral)
        .await?;
    setup.close().await;

    for &sid in &others {
        ensemble.signal(sid, Signal::Kill)?;
    }
    let took = wait_isro(address, "ro", Duration::from_secs(20)).await?;
    eprintln!(
        "server {survivor} read-only {} ms after the kills",
        took.as_millis()
    );
    ensure!(
        took >= Duration::from_millis(1500),
        "read-only mode came after {took:?}, before ZooKeeper's two seconds of looking"
    );
    let srvr = four_letter::ask(address, "srvr").await?;
    ensure!(srvr.contains("Mode: read-only"), "srvr: {srvr}");
    ensure!(srvr.contains("READ-ONLY mode; serving only read-only clients"));

    // A client that accepts a read-only server reads, and its writes are refused.
    let config = ClientConfig::default()
        .with_session_timeout(Duration::from_secs(4))
        .with_connect_timeout(Duration::from_secs(10))
        .with_can_be_read_only(true);
    let reader = Client::connect(&ensemble.connect_string(), config).await?;
    ensure!(reader.state() == SessionState::ConnectedReadOnly);
    let mntr = four_letter::mntr(address).await?;
    ensure!(
        mntr.get("zk_server_state").map(String::as_str) == Some("read-only")
            && mntr.get("zk_local_sessions").map(String::as_str) == Some("1"),
        "mntr in read-only mode: {mntr:?}"
    );
    let (data, _) = reader.get_data("/ro").await?;
    ensure!(data == b"before");
    let write = reader.set_data("/ro", b"during", -1).await;
    ensure!(
        write.as_ref().map_err(|e| e.code()) == Err(ErrorCode::NotReadOnly),
        "write on a read-only server: {write:?}"
    );
    let create = reader
        .create("/ro/new", b"", &open, CreateMode::Persistent)
        .await;
    ensure!(create.map_err(|e| e.code()) == Err(ErrorCode::NotReadOnly));

    // zkCli's -r: the shell reads there too.
    let binary = env!("CARGO_BIN_EXE_meerkat");
    let server = address.to_string();
    let cli = tokio::task::spawn_blocking(move || {
        std::process::Command::new(binary)
            .args(["cli", "-server", &server, "-r", "get", "/ro"])
            .output()
    })
    .await??;
    let printed = String::from_utf8_lossy(&cli.stdout);
    ensure!(
        cli.status.success() && printed.trim() == "before",
        "meerkat cli -r get /ro: {:?} {printed:?} {:?}",
        cli.status,
        String::from_utf8_lossy(&cli.stderr)
    );

    // A client that does not accept a read-only server is refused.
    let strict = ClientConfig::default().with_connect_timeout(Duration::from_secs(2));
    let refused = Client::connect(&address.to_string(), strict).await;
    ensure!(
        refused.as_ref().err().map(|e| e.code()) == Some(ErrorCode::ConnectionLoss),
        "a read-write client got a session from a read-only server"
    );

    // The quorum comes back: read-write again, and the client finds it.
    let mut events = reader.session_events();
    for &sid in &others {
        ensemble.restart(sid)?;
    }
    for &sid in &ensemble.sids() {
        ensemble.wait_serving(sid).await?;
    }
    wait_isro(address, "rw", Duration::from_secs(20)).await?;
    let back = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match events.recv().await {
                Ok(SessionState::Connected) => return Ok(()),
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => return Err(e),
            }
        }
    })
    .await;
    ensure!(
        matches!(back, Ok(Ok(()))),
        "the read-only client never reached a read-write server: {back:?}"
    );
    reader
        .set_data("/ro", b"after", -1)
        .await
        .context("writing once read-write again")?;
    let (data, _) = reader.get_data("/ro").await?;
    ensure!(data == b"after");
    reader.close().await;
    Ok(())
}

fn read_only_options() -> Options {
    let mut options = Options::new(3);
    options.extra_config = vec![
        "readonlymode.enabled=true".to_string(),
        "localSessionsEnabled=true".to_string(),
        "localSessionsUpgradingEnabled=true".to_string(),
    ];
    options
}

/// Server 1 is cut off from the others, which go on serving; a client that reached it
/// read-only finds them by asking `isro` and moves there while server 1 is still read-only.
async fn client_finds_read_write() -> Result<()> {
    let flavor = Flavor::Meerkat {
        binary: PathBuf::from(env!("CARGO_BIN_EXE_meerkat")),
    };
    let ensemble = Ensemble::start(flavor, read_only_options().with_peer_proxies()).await?;
    let result = async {
        ensemble.wait_leader(&[]).await?;
        let alone = 1;
        let address = ensemble.client_address(alone);
        ensemble.isolate(alone, Cut::Close)?;
        wait_isro(address, "ro", Duration::from_secs(20)).await?;
        // Server 1 first in the connect string: the client reaches it first, read-only.
        let hosts: Vec<String> = ensemble
            .sids()
            .into_iter()
            .map(|sid| ensemble.client_address(sid).to_string())
            .collect();
        let config = ClientConfig::default()
            .with_session_timeout(Duration::from_secs(4))
            .with_can_be_read_only(true);
        let client = Client::connect(&hosts.join(","), config).await?;
        let mut events = client.session_events();
        let (state, first) = (client.state(), client.info().server);
        ensure!(
            state == SessionState::ConnectedReadOnly && first == address.to_string(),
            "the client should have reached server 1 read-only, got {state:?} on {first}"
        );
        let moved = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                match events.recv().await {
                    Ok(SessionState::Connected) => return Ok(()),
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(e) => return Err(e),
                }
            }
        })
        .await;
        ensure!(
            matches!(moved, Ok(Ok(()))),
            "never moved to a read-write server: {moved:?}"
        );
        ensure!(
            four_letter::ask(address, "isro").await? == "ro",
            "server 1 is still read-only: the client moved on its own"
        );
        let now = client.info().server;
        ensure!(now != address.to_string(), "moved to {now}");
        client
            .create(
                "/found-rw",
                b"",
                &acl::open_unsafe(),
                CreateMode::Persistent,
            )
            .await
            .context("writing through the read-write server found")?;
        client.close().await;
        ensemble.heal();
        wait_isro(address, "rw", Duration::from_secs(20)).await?;
        Ok(())
    }
    .await;
    if result.is_err() {
        ensemble.keep_files();
    }
    result
}

fn block_on(scenario: impl std::future::Future<Output = Result<()>>) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    if let Err(error) = runtime.block_on(scenario) {
        panic!("{error:#}");
    }
}

/// One scenario at a time: they share 2 cores.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_member_cut_off_serves_reads_then_read_write_again() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    block_on(scenario());
}

#[test]
fn a_read_only_client_moves_to_a_read_write_server_it_finds() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    block_on(client_finds_read_write());
}
