//! A topic owner in the manner of the Yahoo! Message Broker (ZooKeeper paper §3): brokers
//! register, each topic has a primary broker and backups, a primary's failure promotes a
//! backup, and an operator's shutdown flag drains every broker.
//!
//! * `/brokers/NAME`, ephemeral: the broker is up.
//! * `/topics/TOPIC/replica-SEQ`, ephemeral sequential, holding the broker's name: one per
//!   broker serving the topic. The lowest is the primary, the others are backups in order.
//!   Each backup watches only the replica just before it, so a primary's death wakes exactly
//!   the first backup, which is promoted (no herd effect).
//! * `/shutdown`: when the operator creates it (`shutdown`), every broker gives up its topics,
//!   unregisters and exits; brokers do not start while it exists.
//!
//! Put it all under another znode with a chroot in the connect string (`host:port/ymb`).
//! Brokers print `backup TOPIC after REPLICA` each time they start waiting as a backup,
//! `primary TOPIC` when they lead a topic, and `drained` before exiting on the shutdown flag.

use clap::{Parser, Subcommand};
use client::{acl, Client, ClientConfig, CreateMode, ErrorCode, KeeperState, OneshotWatch};
use std::process::ExitCode;
use std::time::Duration;
use tokio::task::JoinSet;

const BROKERS: &str = "/brokers";
const TOPICS: &str = "/topics";
const SHUTDOWN: &str = "/shutdown";

#[derive(Parser)]
#[command(about = "A YMB-like topic owner: primaries, backups, promotion, a shutdown flag")]
struct Args {
    /// Servers: host:port[,host:port...][/chroot], meerkat or Apache ZooKeeper.
    connect: String,
    #[arg(long, default_value_t = 10_000)]
    session_timeout_ms: u64,
    #[command(subcommand)]
    role: Role,
}

#[derive(Subcommand)]
enum Role {
    /// Register and serve topics (comma-separated) as primary or backup.
    Broker {
        name: String,
        #[arg(long, value_delimiter = ',', required = true)]
        topics: Vec<String>,
    },
    /// Set the shutdown flag: every broker drains and exits.
    Shutdown,
}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    Zk(#[from] client::Error),
    #[error("another live broker is already called {0}")]
    NameTaken(String),
    #[error("{SHUTDOWN} is set: brokers may not start (delete it to allow them)")]
    ShuttingDown,
    /// Only a session's end removes our own replica znode.
    #[error("our replica znode {0} is gone: the session ended")]
    ReplicaGone(String),
    #[error("the session ended ({0:?})")]
    SessionEnded(KeeperState),
    #[error("a topic task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("topic-owner: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: &Args) -> Result<(), Error> {
    let config = ClientConfig::default()
        .with_session_timeout(Duration::from_millis(args.session_timeout_ms));
    let zk = Client::connect(&args.connect, config).await?;
    match &args.role {
        Role::Broker { name, topics } => {
            broker(&zk, name, topics).await?;
            // Closing ends the session now: nothing of ours lingers until a timeout.
            zk.close().await;
            println!("drained");
            Ok(())
        }
        Role::Shutdown => {
            create_if_missing(&zk, SHUTDOWN).await?;
            println!("shutdown flag set");
            Ok(())
        }
    }
}

/// Serves `topics` until the shutdown flag appears, then drains.
async fn broker(zk: &Client, name: &str, topics: &[String]) -> Result<(), Error> {
    // The flag's watch is set before registering, so a flag raised meanwhile is not missed.
    let (flag, mut shutdown) = zk.exists_w(SHUTDOWN).await?;
    if flag.is_some() {
        return Err(Error::ShuttingDown);
    }
    for path in [BROKERS, TOPICS] {
        create_if_missing(zk, path).await?;
    }
    let registration = format!("{BROKERS}/{name}");
    if let Err(e) = zk
        .create(
            &registration,
            b"",
            &acl::open_unsafe(),
            CreateMode::Ephemeral,
        )
        .await
    {
        return Err(match e.code() {
            ErrorCode::NodeExists => Error::NameTaken(name.to_string()),
            _ => e.into(),
        });
    }

    let mut replicas = Vec::new();
    let mut roles = JoinSet::new();
    for topic in topics {
        let dir = format!("{TOPICS}/{topic}");
        create_if_missing(zk, &dir).await?;
        let (replica, _) = zk
            .create(
                &format!("{dir}/replica-"),
                name.as_bytes(),
                &acl::open_unsafe(),
                CreateMode::EphemeralSequential,
            )
            .await?;
        replicas.push(replica.clone());
        roles.spawn(serve_topic(zk.clone(), topic.clone(), dir, replica));
    }

    // Topic tasks end once primary (or on an error); the flag ends everything.
    loop {
        tokio::select! {
            event = &mut shutdown => {
                if event.event_type == client::EventType::None {
                    return Err(Error::SessionEnded(event.state));
                }
                // Created or changed: it exists. Deleted: it was cleared; watch again.
                let (flag, watch) = zk.exists_w(SHUTDOWN).await?;
                if flag.is_some() {
                    break;
                }
                shutdown = watch;
            }
            Some(done) = roles.join_next() => done??,
        }
    }

    // Drain: stop serving, give up every topic (backups are promoted as we go), unregister.
    roles.abort_all();
    for replica in replicas.iter().chain([&registration]) {
        match zk.delete(replica, -1).await {
            Err(e) if e.code() != ErrorCode::NoNode => return Err(e.into()),
            _ => {}
        }
    }
    Ok(())
}

/// Waits until our replica is the lowest of the topic: then we are its primary.
async fn serve_topic(zk: Client, topic: String, dir: String, replica: String) -> Result<(), Error> {
    let ours = replica.rsplit('/').next().unwrap_or_default().to_string();
    loop {
        let (mut replicas, _) = zk.get_children(&dir).await?;
        // `replica-` plus a 10-digit sequence: text order is sequence order.
        replicas.sort();
        let Some(position) = replicas.iter().position(|r| *r == ours) else {
            return Err(Error::ReplicaGone(replica));
        };
        let Some(before) = position.checked_sub(1).map(|p| &replicas[p]) else {
            // A real broker would start accepting this topic's messages here.
            println!("primary {topic}");
            return Ok(());
        };
        let (stat, watch) = zk.exists_w(&format!("{dir}/{before}")).await?;
        if stat.is_some() {
            println!("backup {topic} after {before}");
            fired(watch).await?;
        }
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
