//! `serverThreads` with a real process: the server runs its connections, peers and core on
//! exactly that many runtime threads (as its runtime reports them in the start-up log), and
//! serves on them, even on a single one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use anyhow::{ensure, Context, Result};
use client::{acl, Client, ClientConfig, CreateMode};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;
use testkit::process::Process;
use testkit::{four_letter, standalone};

/// Starts a standalone server with `serverThreads=threads`, checks its thread count and that a
/// client can write and read through it.
async fn serves_on(threads: usize) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let config = standalone::write_config(dir.path(), &format!("serverThreads={threads}\n"))?;
    let address = config.address;
    let mut command = Command::new(PathBuf::from(env!("CARGO_BIN_EXE_meerkat")));
    command.arg("server").arg(&config.path);
    let server = Process::spawn(&format!("server-{threads}"), command)?;
    four_letter::wait_serving(address, Duration::from_secs(30))
        .await
        .with_context(|| server.quote())?;
    // Logged before the server listens, so it is there once the server answers.
    let line = server
        .lines()
        .into_iter()
        .find(|l| l.contains("threads for connections, peers and the core"))
        .with_context(|| server.quote())?;
    ensure!(
        line.contains(&format!("threads={threads} ")) && line.contains("from=\"serverThreads\""),
        "serverThreads={threads}: {line}"
    );
    let client = Client::connect(&address.to_string(), ClientConfig::default()).await?;
    let path = format!("/on-{threads}-threads");
    client
        .create(
            &path,
            b"served",
            &acl::open_unsafe(),
            CreateMode::Persistent,
        )
        .await?;
    let (data, _) = client.get_data(&path).await?;
    ensure!(data == b"served", "read back {data:?}");
    client.close().await;
    Ok(())
}

#[tokio::test]
async fn a_server_runs_on_the_threads_it_is_given() {
    serves_on(1).await.unwrap();
    serves_on(3).await.unwrap();
}
