//! End to end on a 3-member meerkat ensemble of real processes: three workers wait at the
//! rendezvous until the master fills it in, all see each configuration, and still do after the
//! server the first of them is connected to (the ensemble's leader) is SIGKILLed: its session
//! moves to another server with its watch.

use anyhow::{ensure, Result};
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use testkit::{meerkat_binary, Ensemble, Flavor, Options, Process, Signal};

/// Bound on each wait for a line (sessions move and the ensemble elects within it).
const LINE_WAIT: Duration = Duration::from_secs(30);

fn config_service(connect: &str, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_config-service"));
    command
        .arg(connect)
        .args(["--session-timeout-ms", "4000"])
        .args(args);
    command
}

/// Runs a one-shot role to its end; it must succeed.
async fn run_once(name: &str, connect: &str, args: &[&str]) -> Result<()> {
    let process = Process::spawn(name, config_service(connect, args))?;
    let code = process.wait_exit(LINE_WAIT).await?;
    ensure!(
        code == Some(0),
        "{name} exited with {code:?}\n{}",
        process.quote()
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meerkat() -> Result<()> {
    let binary = meerkat_binary()?;
    every_worker_follows_the_configuration_across_a_server_crash(Flavor::Meerkat { binary }).await
}

/// The same against Apache ZooKeeper 3.9.3 (needs Java; Maven fetches it the first time):
/// `cargo test -p config-service -- --ignored`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Java and Maven: runs Apache ZooKeeper 3.9.3"]
async fn zookeeper() -> Result<()> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/zookeeper.sh");
    every_worker_follows_the_configuration_across_a_server_crash(Flavor::ZooKeeper { script }).await
}

async fn every_worker_follows_the_configuration_across_a_server_crash(
    flavor: Flavor,
) -> Result<()> {
    let ensemble = Ensemble::start(flavor, Options::new(3)).await?;
    let leader = ensemble.leader().await?;
    let others: Vec<u32> = ensemble
        .sids()
        .into_iter()
        .filter(|&s| s != leader)
        .collect();

    // Worker i is connected to member i of [leader, others...]: the client takes the first
    // host of its connect string that serves.
    let mut workers = Vec::new();
    for (i, sid) in std::iter::once(leader)
        .chain(others.iter().copied())
        .enumerate()
    {
        let name = format!("w{}", i + 1);
        let connect = ensemble.connect_string_from(sid);
        workers.push(Process::spawn(
            &name,
            config_service(&connect, &["worker", &name]),
        )?);
    }
    // They block at the empty rendezvous: nobody knows the master before it publishes.
    for worker in &workers {
        worker
            .wait_for_line("waiting for the master", LINE_WAIT)
            .await?;
        ensure!(
            !worker.lines().iter().any(|l| l.starts_with("master ")),
            "{} saw a master before it published\n{}",
            worker.name(),
            worker.quote()
        );
    }

    let survivors = ensemble.connect_string_from(others[0]);
    run_once("master", &survivors, &["master", "10.1.2.3:8080"]).await?;
    for worker in &workers {
        worker
            .wait_for_line("master 10.1.2.3:8080", LINE_WAIT)
            .await?;
    }
    run_once("set-1", &survivors, &["set", "threads=4"]).await?;
    for worker in &workers {
        worker.wait_for_line("config threads=4", LINE_WAIT).await?;
        // The value is written with the create, so no worker ever reads an empty one.
        ensure!(
            !worker.lines().contains(&"config ".to_string()),
            "{} read an empty configuration\n{}",
            worker.name(),
            worker.quote()
        );
    }

    // The first worker's server dies; its session (and watch) must move to a survivor.
    ensemble.signal(leader, Signal::Kill)?;
    ensemble.wait_leader(&[leader]).await?;
    run_once("set-2", &survivors, &["set", "threads=8"]).await?;
    for worker in &workers {
        worker.wait_for_line("config threads=8", LINE_WAIT).await?;
        ensure!(
            worker.is_running(),
            "{} ended\n{}",
            worker.name(),
            worker.quote()
        );
    }
    Ok(())
}
