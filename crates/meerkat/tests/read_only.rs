//! Read-only mode with real processes (docs/ensemble.md): three meerkat servers on loopback
//! with `readonlymode.enabled=true` and `localSessionsEnabled=true`; two are SIGKILLed by
//! pid, and the one left alone must, after ZooKeeper's delay, serve reads to a client that
//! accepts a read-only server, answer its writes NotReadOnly, refuse a client that does not,
//! and say `ro` to `isro`. With the two restarted it serves read-write again (`rw`), and the
//! same client, having looked for a read-write server, writes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use anyhow::{bail, ensure, Context, Result};
use client::{acl, Client, ClientConfig, CreateMode, ErrorCode, SessionState};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use testkit::{four_letter, Ensemble, Flavor, Options, Signal};

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
    let mut options = Options::new(3);
    options.extra_config = vec![
        "readonlymode.enabled=true".to_string(),
        "localSessionsEnabled=true".to_string(),
        "localSessionsUpgradingEnabled=true".to_string(),
    ];
    let ensemble = Ensemble::start(flavor, options).await?;
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

#[test]
fn a_member_cut_off_serves_reads_then_read_write_again() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    if let Err(error) = runtime.block_on(scenario()) {
        panic!("{error:#}");
    }
}
