//! The configuration and rendezvous patterns of the ZooKeeper paper (§2.4), as one small
//! service with three roles:
//!
//! * `worker NAME`: waits until the master has filled in the rendezvous znode, then follows the
//!   configuration znode: it reads it with a watch and reads it again each time the watch fires.
//!   It never polls, and it may skip intermediate versions, but never the newest one.
//! * `master ADDRESS`: fills in the rendezvous with the address it serves on.
//! * `set VALUE`: publishes a new configuration.
//!
//! Workers print `waiting for the master` while the rendezvous is empty, `master ADDRESS` once
//! it is filled in, and `config VALUE` for each configuration they read.

use clap::{Parser, Subcommand};
use client::{acl, Client, ClientConfig, CreateMode, ErrorCode, KeeperState, OneshotWatch};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(about = "Configuration and rendezvous with watches (ZooKeeper paper §2.4)")]
struct Args {
    /// Servers: host:port[,host:port...][/chroot], meerkat or Apache ZooKeeper.
    connect: String,
    /// The configuration znode.
    #[arg(long, default_value = "/app/config")]
    config: String,
    /// The rendezvous znode the master fills in.
    #[arg(long, default_value = "/app/master")]
    rendezvous: String,
    #[arg(long, default_value_t = 10_000)]
    session_timeout_ms: u64,
    #[command(subcommand)]
    role: Role,
}

#[derive(Subcommand)]
enum Role {
    /// Wait for the master, then follow the configuration.
    Worker { name: String },
    /// Fill in the rendezvous with this address.
    Master { address: String },
    /// Publish a new configuration.
    Set { value: String },
}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    Zk(#[from] client::Error),
    /// Watches resolve this way only when the session is over (expired or closed).
    #[error("the session ended ({0:?})")]
    SessionEnded(KeeperState),
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("config-service: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: &Args) -> Result<(), Error> {
    let config = ClientConfig::default()
        .with_session_timeout(Duration::from_millis(args.session_timeout_ms));
    let zk = Client::connect(&args.connect, config).await?;
    match &args.role {
        Role::Worker { name } => {
            let master = wait_for_rendezvous(&zk, &args.rendezvous).await?;
            println!("master {master}");
            eprintln!("worker {name} follows {}", args.config);
            follow_config(&zk, &args.config).await
        }
        Role::Master { address } => {
            publish(&zk, &args.rendezvous, address).await?;
            println!("published {address}");
            Ok(())
        }
        Role::Set { value } => {
            publish(&zk, &args.config, value).await?;
            println!("set {value}");
            Ok(())
        }
    }
}

/// The paper's rendezvous: the znode exists (empty) before the master is up; workers read it
/// with a watch and wait while it is empty.
async fn wait_for_rendezvous(zk: &Client, path: &str) -> Result<String, Error> {
    create_if_missing(zk, path).await?;
    let mut said_so = false;
    loop {
        let (data, _, watch) = zk.get_data_w(path).await?;
        if !data.is_empty() {
            return Ok(String::from_utf8_lossy(&data).into_owned());
        }
        if !said_so {
            println!("waiting for the master");
            said_so = true;
        }
        fired(watch).await?;
    }
}

/// The paper's configuration: read with a watch, act, wait for the watch, read again. The
/// watch is set by the same read that returns the data, so no change can slip in between.
async fn follow_config(zk: &Client, path: &str) -> Result<(), Error> {
    loop {
        match zk.get_data_w(path).await {
            Ok((data, _, watch)) => {
                println!("config {}", String::from_utf8_lossy(&data));
                fired(watch).await?;
            }
            // Not published yet: wait for its creation instead.
            Err(e) if e.code() == ErrorCode::NoNode => {
                let (stat, watch) = zk.exists_w(path).await?;
                if stat.is_none() {
                    fired(watch).await?;
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Waits for a one-shot watch. It says only that something changed; the caller reads again.
async fn fired(watch: OneshotWatch) -> Result<(), Error> {
    let event = watch.await;
    if event.event_type == client::EventType::None {
        return Err(Error::SessionEnded(event.state));
    }
    Ok(())
}

/// Writes `value` to `path`, creating it (and its parents) the first time.
async fn publish(zk: &Client, path: &str, value: &str) -> Result<(), Error> {
    create_ancestors(zk, path).await?;
    match zk
        .create(
            path,
            value.as_bytes(),
            &acl::open_unsafe(),
            CreateMode::Persistent,
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code() == ErrorCode::NodeExists => {
            zk.set_data(path, value.as_bytes(), -1).await?;
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// Creates `path` empty, with its missing ancestors, unless it exists.
async fn create_if_missing(zk: &Client, path: &str) -> Result<(), Error> {
    create_ancestors(zk, path).await?;
    create_empty(zk, path).await
}

/// Creates the missing ancestors of `path`, empty and persistent.
async fn create_ancestors(zk: &Client, path: &str) -> Result<(), Error> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let mut prefix = String::new();
    for part in parts.iter().take(parts.len().saturating_sub(1)) {
        prefix = format!("{prefix}/{part}");
        create_empty(zk, &prefix).await?;
    }
    Ok(())
}

/// Another process creating the same znode at the same time is fine.
async fn create_empty(zk: &Client, path: &str) -> Result<(), Error> {
    match zk
        .create(path, b"", &acl::open_unsafe(), CreateMode::Persistent)
        .await
    {
        Err(e) if e.code() != ErrorCode::NodeExists => Err(e.into()),
        _ => Ok(()),
    }
}
