//! End to end on a 3-member meerkat ensemble of real processes: four candidates a, b, c, d
//! (in that order); a leads and each other one watches only its predecessor. a (the leader) and
//! c (a middle candidate) are SIGKILLed together: b must lead and see the group shrink, d must
//! re-point its watch from c to b and stay a follower, and nobody else may wake.

use anyhow::{ensure, Context, Result};
use client::{Client, ClientConfig};
use std::process::Command;
use std::time::Duration;
use testkit::{meerkat_binary, Ensemble, Flavor, Options, Process};

/// Bound on each wait for a line: a dead candidate's session must expire first (4 s here).
const LINE_WAIT: Duration = Duration::from_secs(30);

fn candidate(connect: &str, name: &str) -> Result<Process> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_leader-election"));
    command
        .arg(connect)
        .arg(name)
        .args(["--session-timeout-ms", "4000"]);
    Process::spawn(name, command)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_successor_leads_when_the_leader_dies_and_nobody_else_wakes() -> Result<()> {
    let binary = meerkat_binary()?;
    let ensemble = Ensemble::start(Flavor::Meerkat { binary }, Options::new(3)).await?;
    let connect_strings = ensemble.connect_strings();

    // Started one after another, so their sequence numbers follow the start order.
    let mut candidates = Vec::new();
    let mut nodes = Vec::new();
    for (i, name) in ["a", "b", "c", "d"].into_iter().enumerate() {
        let process = candidate(&connect_strings[i % connect_strings.len()], name)?;
        nodes.push(process.wait_for_prefix("candidate ", LINE_WAIT).await?);
        candidates.push(process);
    }
    let ([a, b, c, d], [node_a, node_b, node_c, _]) = (&candidates[..], &nodes[..]) else {
        unreachable!("four candidates")
    };
    a.wait_for_line("leader a", LINE_WAIT).await?;
    a.wait_for_line("members a,b,c,d", LINE_WAIT).await?;
    // The watches form a chain: each candidate waits on the one just before it.
    b.wait_for_line(&format!("watching {}", node_a), LINE_WAIT)
        .await?;
    c.wait_for_line(&format!("watching {}", node_b), LINE_WAIT)
        .await?;
    d.wait_for_line(&format!("watching {}", node_c), LINE_WAIT)
        .await?;

    let (b_mark, d_mark) = (b.line_count(), d.line_count());
    a.kill()?;
    c.kill()?;
    b.wait_for_line_after(b_mark, "leader b", LINE_WAIT).await?;
    b.wait_for_line_after(b_mark, "members b,d", LINE_WAIT)
        .await?;
    d.wait_for_line_after(d_mark, &format!("watching {}", node_b), LINE_WAIT)
        .await?;

    // d woke once (its predecessor c died) and went back to waiting; it does not lead.
    let d_after: Vec<String> = d.lines().split_off(d_mark);
    ensure!(
        d_after == [format!("watching {}", node_b)],
        "d should only have moved its watch to b, printed {d_after:?}"
    );
    ensure!(b.is_running() && d.is_running(), "a survivor exited");

    // What the service says, read independently: b's znode is the lowest, the group is b, d.
    let zk = Client::connect(&ensemble.connect_string(), ClientConfig::default()).await?;
    let (mut election, _) = zk.get_children("/service/election").await?;
    election.sort();
    let first = election.first().context("empty election")?;
    let (leader, _) = zk.get_data(&format!("/service/election/{first}")).await?;
    ensure!(leader == b"b", "the lowest candidate holds {leader:?}");
    let (mut members, _) = zk.get_children("/service/members").await?;
    members.sort();
    ensure!(members == ["b", "d"], "members: {members:?}");
    Ok(())
}
