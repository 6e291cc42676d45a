//! End to end on a 3-member meerkat ensemble of real processes: masters m1 and m2, workers
//! w1, w2, w3 and six shards. m1 is elected and spreads the shards 2/2/2. w2 is SIGKILLed: its
//! shards must go to w1 and w3, who keep their own. Then m1 and w3 are SIGKILLed together: m2
//! must take over and give every shard to w1, the last worker.

use anyhow::{bail, ensure, Result};
use client::{Client, ClientConfig};
use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant};
use testkit::{meerkat_binary, Ensemble, Flavor, Options, Process};

/// Bound on each wait: a dead process's session must expire first (4 s here).
const WAIT: Duration = Duration::from_secs(30);
const SHARDS: usize = 6;

fn shard_assigner(connect: &str, args: &[&str]) -> Result<Process> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_shard-assigner"));
    command
        .arg(connect)
        .args(["--session-timeout-ms", "4000"])
        .args(args);
    Process::spawn(args[1], command)
}

/// The shards a worker said it serves last.
fn serving(worker: &Process) -> BTreeSet<String> {
    let last = worker
        .lines()
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("serving ").map(str::to_string))
        .unwrap_or_default();
    last.split(',')
        .filter(|s| !s.is_empty() && *s != "nothing")
        .map(str::to_string)
        .collect()
}

/// Waits until the workers' own reports cover every shard exactly once with the given loads.
async fn wait_for_cover(workers: &[&Process], loads: &[usize]) -> Result<Vec<BTreeSet<String>>> {
    let all: BTreeSet<String> = (0..SHARDS).map(|i| format!("shard-{i}")).collect();
    let deadline = Instant::now() + WAIT;
    loop {
        let served: Vec<BTreeSet<String>> = workers.iter().map(|w| serving(w)).collect();
        let union: BTreeSet<String> = served.iter().flatten().cloned().collect();
        let count: usize = served.iter().map(BTreeSet::len).sum();
        let sizes: Vec<usize> = served.iter().map(BTreeSet::len).collect();
        if union == all && count == SHARDS && sizes == loads {
            return Ok(served);
        }
        if Instant::now() >= deadline {
            let quotes: Vec<String> = workers.iter().map(|w| w.quote()).collect();
            bail!(
                "workers serve {served:?}, not every shard once with loads {loads:?}\n{}",
                quotes.join("\n")
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_workers_shards_are_reassigned_by_the_elected_master() -> Result<()> {
    let binary = meerkat_binary()?;
    let ensemble = Ensemble::start(Flavor::Meerkat { binary }, Options::new(3)).await?;
    let connect = ensemble.connect_strings();

    let w1 = shard_assigner(&connect[0], &["worker", "w1"])?;
    let w2 = shard_assigner(&connect[1], &["worker", "w2"])?;
    let w3 = shard_assigner(&connect[2], &["worker", "w3"])?;
    let shards = SHARDS.to_string();
    let m1 = shard_assigner(&connect[0], &["master", "m1", "--shards", &shards])?;
    m1.wait_for_line("leader m1", WAIT).await?;
    let m2 = shard_assigner(&connect[1], &["master", "m2", "--shards", &shards])?;
    let before = wait_for_cover(&[&w1, &w2, &w3], &[2, 2, 2]).await?;

    w2.kill()?;
    let after = wait_for_cover(&[&w1, &w3], &[3, 3]).await?;
    ensure!(
        after[0].is_superset(&before[0]) && after[1].is_superset(&before[2]),
        "a live worker lost a shard: before {before:?}, after {after:?}"
    );
    ensure!(
        !m2.lines().iter().any(|l| l == "leader m2"),
        "m2 led while m1 was alive\n{}",
        m2.quote()
    );

    m1.kill()?;
    w3.kill()?;
    m2.wait_for_line("leader m2", WAIT).await?;
    wait_for_cover(&[&w1], &[SHARDS]).await?;

    // The znodes agree with what the workers say: only w1 has an assignment left.
    let zk = Client::connect(&ensemble.connect_string(), ClientConfig::default()).await?;
    let (workers, _) = zk.get_children("/katta/workers").await?;
    let (assigned, _) = zk.get_children("/katta/assignments").await?;
    ensure!(
        workers == ["w1"] && assigned == ["w1"],
        "workers {workers:?}, assignments {assigned:?}"
    );
    ensure!(w1.is_running() && m2.is_running(), "a survivor exited");
    Ok(())
}
