//! A Katta-like shard assigner (ZooKeeper paper §3: Katta uses ZooKeeper for group membership,
//! leader election and configuration). Two roles:
//!
//! * `worker NAME`: joins the group of workers (`<root>/workers/NAME`, ephemeral) and serves
//!   whatever shards the master assigns it: it follows `<root>/assignments/NAME` with a watch.
//! * `master NAME`: runs for master (`client::recipes::election`, the lowest ephemeral
//!   sequential znode leads, each candidate watches its predecessor). The elected master
//!   watches the group; on every change it computes the next assignment ([`plan::assign`]) and
//!   writes it in one `multi`, together with a check of its own election znode, so a master
//!   that has lost its session cannot overwrite its successor's plan (fencing).
//!
//! Shards are the children of `<root>/shards`; the master creates `shard-0` .. `shard-N-1`
//! when started with `--shards N`. Workers print `serving SHARD,...` (or `serving nothing`) on
//! every change; the master prints `leader NAME` when elected and `assigned W=S,...;...` after
//! each write.

mod plan;

use clap::{Parser, Subcommand};
use client::recipes::election::LeaderLatch;
use client::{acl, Client, ClientConfig, CreateMode, ErrorCode, KeeperState, OneshotWatch, Op};
use plan::Assignment;
use std::collections::BTreeSet;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(about = "A Katta-like shard assigner: workers, an elected master, reassignment")]
struct Args {
    /// Servers: host:port[,host:port...][/chroot], meerkat or Apache ZooKeeper.
    connect: String,
    #[arg(long, default_value = "/katta")]
    root: String,
    #[arg(long, default_value_t = 10_000)]
    session_timeout_ms: u64,
    #[command(subcommand)]
    role: Role,
}

#[derive(Subcommand)]
enum Role {
    /// Join the workers and serve the shards the master assigns.
    Worker { name: String },
    /// Run for master; once elected, assign the shards.
    Master {
        name: String,
        /// Create shards `shard-0` .. `shard-N-1` if missing.
        #[arg(long, default_value_t = 0)]
        shards: usize,
    },
}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    Zk(#[from] client::Error),
    #[error("another live worker is already called {0}")]
    NameTaken(String),
    #[error("this master's election znode is gone: it no longer leads")]
    LostLeadership,
    #[error("the session ended ({0:?})")]
    SessionEnded(KeeperState),
}

/// The znodes under the root.
struct Layout {
    workers: String,
    masters: String,
    shards: String,
    assignments: String,
}

impl Layout {
    fn new(root: &str) -> Layout {
        Layout {
            workers: format!("{root}/workers"),
            masters: format!("{root}/masters"),
            shards: format!("{root}/shards"),
            assignments: format!("{root}/assignments"),
        }
    }

    fn assignment(&self, worker: &str) -> String {
        format!("{}/{worker}", self.assignments)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shard-assigner: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: &Args) -> Result<(), Error> {
    let config = ClientConfig::default()
        .with_session_timeout(Duration::from_millis(args.session_timeout_ms));
    let zk = Client::connect(&args.connect, config).await?;
    let layout = Layout::new(&args.root);
    for path in [
        &args.root,
        &layout.workers,
        &layout.shards,
        &layout.assignments,
    ] {
        create_if_missing(&zk, path, b"").await?;
    }
    match &args.role {
        Role::Worker { name } => worker(&zk, &layout, name).await,
        Role::Master { name, shards } => {
            for i in 0..*shards {
                create_if_missing(&zk, &format!("{}/shard-{i}", layout.shards), b"").await?;
            }
            master(&zk, &layout, name).await
        }
    }
}

async fn worker(zk: &Client, layout: &Layout, name: &str) -> Result<(), Error> {
    let member = format!("{}/{name}", layout.workers);
    if let Err(e) = zk
        .create(&member, b"", &acl::open_unsafe(), CreateMode::Ephemeral)
        .await
    {
        return Err(match e.code() {
            ErrorCode::NodeExists => Error::NameTaken(name.to_string()),
            _ => e.into(),
        });
    }
    let path = layout.assignment(name);
    let mut serving = None;
    loop {
        // Read with a watch; a missing znode means nothing assigned yet (watch its creation).
        let (shards, watch) = match zk.get_data_w(&path).await {
            Ok((data, _, watch)) => (String::from_utf8_lossy(&data).into_owned(), watch),
            Err(e) if e.code() == ErrorCode::NoNode => match zk.exists_w(&path).await? {
                (None, watch) => (String::new(), watch),
                (Some(_), _) => continue, // created meanwhile: read it
            },
            Err(e) => return Err(e.into()),
        };
        if serving.as_ref() != Some(&shards) {
            // A real worker would load and unload shard data here.
            println!(
                "serving {}",
                if shards.is_empty() {
                    "nothing"
                } else {
                    &shards
                }
            );
            serving = Some(shards);
        }
        fired(watch).await?;
    }
}

async fn master(zk: &Client, layout: &Layout, name: &str) -> Result<(), Error> {
    let mut latch = LeaderLatch::new(zk, &layout.masters, name);
    latch.await_leadership().await?;
    let fence = latch.node().ok_or(Error::LostLeadership)?.to_string();
    println!("leader {name}");
    loop {
        // The group watch is set by the same read that lists it: no change goes unseen.
        let (live, _, group_changed) = zk.get_children_w(&layout.workers).await?;
        let live: BTreeSet<String> = live.into_iter().collect();
        let (shards, _) = zk.get_children(&layout.shards).await?;
        let now = read_assignment(zk, layout).await?;
        let next = plan::assign(&live, &shards.into_iter().collect(), &now);
        match write_assignment(zk, layout, &fence, &now, &next).await {
            Ok(true) => println!("assigned {}", describe(&next)),
            Ok(false) => {}
            // Unknown outcome: read everything again and recompute; the plan is idempotent.
            Err(Error::Zk(e)) if e.is_connection_loss() => continue,
            Err(e) => return Err(e),
        }
        fired(group_changed).await?;
    }
}

/// What the assignment znodes say now.
async fn read_assignment(zk: &Client, layout: &Layout) -> Result<Assignment, Error> {
    let (workers, _) = zk.get_children(&layout.assignments).await?;
    let mut now = Assignment::new();
    for worker in workers {
        let (data, _) = zk.get_data(&layout.assignment(&worker)).await?;
        let shards = String::from_utf8_lossy(&data);
        let served = shards.split(',').filter(|s| !s.is_empty());
        now.insert(worker, served.map(str::to_string).collect());
    }
    Ok(now)
}

/// Writes the changes from `now` to `next` atomically, fenced by our election znode. Returns
/// false if there was nothing to change.
async fn write_assignment(
    zk: &Client,
    layout: &Layout,
    fence: &str,
    now: &Assignment,
    next: &Assignment,
) -> Result<bool, Error> {
    let mut ops = vec![Op::check(fence, -1)];
    for gone in now.keys().filter(|w| !next.contains_key(*w)) {
        ops.push(Op::delete(&layout.assignment(gone), -1));
    }
    for (worker, shards) in next {
        let data = shards.iter().cloned().collect::<Vec<_>>().join(",");
        let path = layout.assignment(worker);
        match now.get(worker) {
            None => ops.push(Op::create(
                &path,
                data.as_bytes(),
                acl::open_unsafe(),
                CreateMode::Persistent,
            )),
            Some(old) if old != shards => ops.push(Op::set_data(&path, data.as_bytes(), -1)),
            Some(_) => {}
        }
    }
    if ops.len() == 1 {
        return Ok(false);
    }
    match zk.multi(&ops).await {
        Ok(_) => Ok(true),
        Err(e) if e.code() == ErrorCode::NoNode && e.path() == fence => Err(Error::LostLeadership),
        Err(e) => Err(e.into()),
    }
}

fn describe(assignment: &Assignment) -> String {
    let workers = assignment.iter().map(|(worker, shards)| {
        format!(
            "{worker}={}",
            shards.iter().cloned().collect::<Vec<_>>().join(",")
        )
    });
    workers.collect::<Vec<_>>().join(";")
}

/// Waits for a one-shot watch; it says only that something changed, the caller reads again.
async fn fired(watch: OneshotWatch) -> Result<(), Error> {
    let event = watch.await;
    if event.event_type == client::EventType::None {
        return Err(Error::SessionEnded(event.state));
    }
    Ok(())
}

/// Creates `path` (persistent) unless it exists; racing another creator is fine.
async fn create_if_missing(zk: &Client, path: &str, data: &[u8]) -> Result<(), Error> {
    match zk
        .create(path, data, &acl::open_unsafe(), CreateMode::Persistent)
        .await
    {
        Err(e) if e.code() != ErrorCode::NodeExists => Err(e.into()),
        _ => Ok(()),
    }
}
