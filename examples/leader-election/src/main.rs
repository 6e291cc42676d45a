//! Group membership and leader election (ZooKeeper paper §2.4) in one process: it joins a
//! service's group, then runs for leader of it until it dies.
//!
//! * Membership: `<service>/members/<name>`, ephemeral. The server deletes it when the
//!   process's session ends (a crash included), so the group never lists a dead member for
//!   longer than the session timeout.
//! * Election: `<service>/election/n_<seq>`, ephemeral sequential, holding the name. The lowest
//!   sequence leads. Every other candidate watches only the candidate just before it, so the
//!   death of the leader wakes exactly one process, its successor (no herd effect). A woken
//!   candidate reads the list again: the one before it may have died without ever leading.
//!
//! Prints `candidate NODE`, then `watching NODE` each time it starts waiting on a predecessor,
//! and `leader NAME` once it leads; the leader then prints `members A,B,...` on every change.

use clap::Parser;
use client::{acl, Client, ClientConfig, CreateMode, ErrorCode, KeeperState, OneshotWatch};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(about = "Group membership and leader election (ZooKeeper paper §2.4)")]
struct Args {
    /// Servers: host:port[,host:port...][/chroot], meerkat or Apache ZooKeeper.
    connect: String,
    /// This process's name in the group; unique.
    name: String,
    /// The service's znode; the group and the election live under it.
    #[arg(long, default_value = "/service")]
    service: String,
    #[arg(long, default_value_t = 10_000)]
    session_timeout_ms: u64,
}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    Zk(#[from] client::Error),
    #[error("another live member is already called {0}")]
    NameTaken(String),
    /// Only a session's end removes our own candidate znode.
    #[error("our candidate znode {0} is gone: the session ended")]
    CandidateGone(String),
    #[error("the session ended ({0:?})")]
    SessionEnded(KeeperState),
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("leader-election {}: {e}", args.name);
            ExitCode::FAILURE
        }
    }
}

async fn run(args: &Args) -> Result<(), Error> {
    let config = ClientConfig::default()
        .with_session_timeout(Duration::from_millis(args.session_timeout_ms));
    let zk = Client::connect(&args.connect, config).await?;
    let members = format!("{}/members", args.service);
    let election = format!("{}/election", args.service);
    for path in [args.service.as_str(), &members, &election] {
        create_if_missing(&zk, path).await?;
    }

    let member = format!("{members}/{}", args.name);
    if let Err(e) = zk
        .create(&member, b"", &acl::open_unsafe(), CreateMode::Ephemeral)
        .await
    {
        return Err(match e.code() {
            ErrorCode::NodeExists => Error::NameTaken(args.name.clone()),
            _ => e.into(),
        });
    }
    // If this create's answer were lost, the node would be an orphan of our own session: it
    // goes when we exit. (client::recipes::election avoids even that, Curator-style.)
    let (candidate, _) = zk
        .create(
            &format!("{election}/n_"),
            args.name.as_bytes(),
            &acl::open_unsafe(),
            CreateMode::EphemeralSequential,
        )
        .await?;
    println!("candidate {}", node_name(&candidate));

    wait_until_leading(&zk, &election, &candidate).await?;
    println!("leader {}", args.name);
    watch_members(&zk, &members).await
}

/// Returns once `candidate` is the lowest in `election`.
async fn wait_until_leading(zk: &Client, election: &str, candidate: &str) -> Result<(), Error> {
    let ours = node_name(candidate);
    loop {
        let (mut candidates, _) = zk.get_children(election).await?;
        // Every name is `n_` plus a 10-digit sequence, so text order is sequence order.
        candidates.sort();
        let Some(position) = candidates.iter().position(|c| c == ours) else {
            return Err(Error::CandidateGone(candidate.to_string()));
        };
        let Some(predecessor) = position.checked_sub(1).map(|p| &candidates[p]) else {
            return Ok(());
        };
        // An exists watch on the predecessor alone; if it is already gone, look again.
        let (stat, watch) = zk.exists_w(&format!("{election}/{predecessor}")).await?;
        if stat.is_some() {
            println!("watching {predecessor}");
            fired(watch).await?;
        }
    }
}

/// The leader's job here: know who is in the group, and say so on every change.
async fn watch_members(zk: &Client, members: &str) -> Result<(), Error> {
    loop {
        let (mut names, _, watch) = zk.get_children_w(members).await?;
        names.sort();
        println!("members {}", names.join(","));
        fired(watch).await?;
    }
}

/// Waits for a one-shot watch; it says only that something changed, the caller reads again.
async fn fired(watch: OneshotWatch) -> Result<(), Error> {
    let event = watch.await;
    if event.event_type == client::EventType::None {
        return Err(Error::SessionEnded(event.state));
    }
    Ok(())
}

/// Creates `path` (persistent, empty) unless it exists; racing another creator is fine.
async fn create_if_missing(zk: &Client, path: &str) -> Result<(), Error> {
    match zk
        .create(path, b"", &acl::open_unsafe(), CreateMode::Persistent)
        .await
    {
        Err(e) if e.code() != ErrorCode::NodeExists => Err(e.into()),
        _ => Ok(()),
    }
}

fn node_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}
