//! End to end on a 3-member meerkat ensemble of real processes, under the chroot `/ymb`:
//! brokers b1, b2, b3 serve topics t1 and t2, started in that order, so b1 is the primary of
//! both and b2, b3 are backups. b1 is SIGKILLed: b2 must be promoted for both topics and b3 must
//! stay a backup. Then the operator sets the shutdown flag: b2 and b3 drain and exit, leaving
//! no broker and no replica behind.

use anyhow::{ensure, Context, Result};
use client::{acl, Client, ClientConfig, CreateMode};
use std::process::Command;
use std::time::Duration;
use testkit::{meerkat_binary, Ensemble, Flavor, Options, Process};

/// Bound on each wait: a dead broker's session must expire first (4 s here).
const WAIT: Duration = Duration::from_secs(30);
const TOPICS: [&str; 2] = ["t1", "t2"];

fn topic_owner(name: &str, connect: &str, args: &[&str]) -> Result<Process> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_topic-owner"));
    command
        .arg(connect)
        .args(["--session-timeout-ms", "4000"])
        .args(args);
    Process::spawn(name, command)
}

/// The broker name in the lowest replica znode of `topic`, read directly.
async fn primary_of(zk: &Client, topic: &str) -> Result<String> {
    let dir = format!("/topics/{topic}");
    let (mut replicas, _) = zk.get_children(&dir).await?;
    replicas.sort();
    let lowest = replicas
        .first()
        .with_context(|| format!("{dir} has no replica"))?;
    let (name, _) = zk.get_data(&format!("{dir}/{lowest}")).await?;
    Ok(String::from_utf8_lossy(&name).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_is_promoted_when_the_primary_dies_and_the_flag_drains_all() -> Result<()> {
    let binary = meerkat_binary()?;
    let ensemble = Ensemble::start(Flavor::Meerkat { binary }, Options::new(3)).await?;
    let root = Client::connect(&ensemble.connect_string(), ClientConfig::default()).await?;
    root.create("/ymb", b"", &acl::open_unsafe(), CreateMode::Persistent)
        .await?;
    let zk = Client::connect(
        &format!("{}/ymb", ensemble.connect_string()),
        ClientConfig::default(),
    )
    .await?;
    let connect: Vec<String> = ensemble
        .connect_strings()
        .iter()
        .map(|c| format!("{c}/ymb"))
        .collect();

    // One at a time, so the replicas' sequence numbers follow the start order.
    let mut brokers = Vec::new();
    for (i, name) in ["b1", "b2", "b3"].into_iter().enumerate() {
        let broker = topic_owner(name, &connect[i], &["broker", name, "--topics", "t1,t2"])?;
        for topic in TOPICS {
            if i == 0 {
                broker
                    .wait_for_line(&format!("primary {topic}"), WAIT)
                    .await?;
            } else {
                broker
                    .wait_for_prefix(&format!("backup {topic} after "), WAIT)
                    .await?;
            }
        }
        brokers.push(broker);
    }
    let [b1, b2, b3] = &brokers[..] else {
        unreachable!("three brokers")
    };
    for topic in TOPICS {
        ensure!(
            primary_of(&zk, topic).await? == "b1",
            "b1 is not {topic}'s primary"
        );
    }

    let b3_mark = b3.line_count();
    b1.kill()?;
    for topic in TOPICS {
        b2.wait_for_line(&format!("primary {topic}"), WAIT).await?;
        ensure!(
            primary_of(&zk, topic).await? == "b2",
            "b2 is not {topic}'s primary"
        );
    }
    // b3 watches b2's replicas, which did not change: it was not even woken (a woken backup
    // prints its `backup ... after ...` line again), let alone promoted.
    ensure!(
        b3.line_count() == b3_mark,
        "b3 reacted to b1's death\n{}",
        b3.quote()
    );
    let (brokers_up, _) = zk.get_children("/brokers").await?;
    ensure!(
        brokers_up.len() == 2 && !brokers_up.contains(&"b1".to_string()),
        "registered brokers: {brokers_up:?}"
    );

    let operator = topic_owner("operator", &connect[0], &["shutdown"])?;
    ensure!(
        operator.wait_exit(WAIT).await? == Some(0),
        "{}",
        operator.quote()
    );
    for broker in [b2, b3] {
        broker.wait_for_line("drained", WAIT).await?;
        let code = broker.wait_exit(WAIT).await?;
        ensure!(
            code == Some(0),
            "{} exited with {code:?}\n{}",
            broker.name(),
            broker.quote()
        );
    }
    let (brokers_up, _) = zk.get_children("/brokers").await?;
    ensure!(brokers_up.is_empty(), "still registered: {brokers_up:?}");
    for topic in TOPICS {
        let (replicas, _) = zk.get_children(&format!("/topics/{topic}")).await?;
        ensure!(replicas.is_empty(), "{topic} still has {replicas:?}");
    }
    // With the flag up, a broker refuses to start.
    let late = topic_owner("late", &connect[0], &["broker", "b4", "--topics", "t1"])?;
    ensure!(late.wait_exit(WAIT).await? == Some(1), "{}", late.quote());
    Ok(())
}
