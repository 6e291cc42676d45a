//! An ensemble of real server processes on loopback: meerkat or Apache ZooKeeper.
//!
//! [`Ensemble::start`] gives each member its own directory (`server-N/` with `zoo.cfg`,
//! `data/myid` and `server.log`, which collects stdout and stderr of every start), spawns the
//! processes and waits until all serve. The test then injects faults: signals to the pid it
//! started ([`Ensemble::signal`]: SIGKILL, SIGSTOP, SIGCONT; never a kill by name), restarts,
//! and, when [`Options::peer_proxies`] is set, partitions through one proxy per directed pair of
//! members ([`Ensemble::isolate`], [`Ensemble::partition`], [`Ensemble::heal`]). Roles come
//! from the `srvr` four-letter word. Every wait is bounded; a member that exits while waited
//! for fails the wait with the tail of its log. Dropping the ensemble SIGKILLs every process
//! it started; its directory is kept when the test panics, when [`Ensemble::keep_files`] was
//! called, or when `MEERKAT_TEST_KEEP` is set.

pub mod layout;

use anyhow::{bail, Result};
use layout::{Link, Links, Ports, Settings};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Members one ensemble may have.
pub const SERVERS_MAX: usize = 9;
/// Log lines quoted when a server fails.
pub const LOG_TAIL_LINES: usize = 40;
/// How often waits poll.
const POLL_INTERVAL: Duration = Duration::from_millis(100);
/// Marks each start in a member's log.
const START_MARKER: &str = "--- testkit: start #";

/// Which server runs.
#[derive(Debug, Clone)]
pub enum Flavor {
    /// `binary server zoo.cfg`.
    Meerkat { binary: PathBuf },
    /// `bash script run zoo.cfg` (scripts/zookeeper.sh: it execs java, so the pid is the JVM's).
    ZooKeeper { script: PathBuf },
}

impl Flavor {
    pub fn name(&self) -> &'static str {
        match self {
            Flavor::Meerkat { .. } => "meerkat",
            Flavor::ZooKeeper { .. } => "zookeeper",
        }
    }
}

/// The shape of an ensemble.
#[derive(Debug, Clone)]
pub struct Options {
    pub servers: usize,
    pub tick_ms: u64,
    pub init_limit: u32,
    pub sync_limit: u32,
    /// Route each member's peer connections through one [`crate::proxy::Proxy`] per directed
    /// pair, so that links can be cut.
    pub peer_proxies: bool,
    /// More `key=value` lines for every `zoo.cfg`.
    pub extra_config: Vec<String>,
    /// Bound on [`Ensemble::wait_serving`] (JVM start-up included).
    pub start_timeout: Duration,
    /// Bound on [`Ensemble::wait_leader`] and [`Ensemble::wait_converged`].
    pub leader_timeout: Duration,
}

impl Options {
    /// `servers` members, tickTime 200 ms, initLimit 10, syncLimit 5, no proxies.
    pub fn new(servers: usize) -> Options {
        Options {
            servers,
            tick_ms: 200,
            init_limit: 10,
            sync_limit: 5,
            peer_proxies: false,
            extra_config: Vec::new(),
            start_timeout: Duration::from_secs(60),
            leader_timeout: Duration::from_secs(30),
        }
    }

    pub fn with_peer_proxies(mut self) -> Options {
        self.peer_proxies = true;
        self
    }

    /// syncLimit × tickTime: how long a leader may go without hearing from a follower.
    pub fn sync_timeout(&self) -> Duration {
        Duration::from_millis(self.tick_ms * u64::from(self.sync_limit))
    }
}

/// How a link is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Connections are closed at once, new ones hang ([`crate::proxy::Proxy::block`]): both
    /// ends notice immediately.
    Close,
    /// Connections stay open but carry nothing, new ones hang
    /// ([`crate::proxy::Proxy::blackhole`]): the ends notice only by their timeouts.
    Silent,
}

/// The signals a test sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Kill,
    /// A planned stop: the process exits by itself (up to [`TERM_EXIT_WAIT`], then SIGKILL).
    Term,
    Stop,
    Cont,
}

/// How long a SIGTERMed server may take to exit before the test kills it.
pub const TERM_EXIT_WAIT: std::time::Duration = std::time::Duration::from_secs(15);

struct Member {
    sid: u32,
    ports: Ports,
    dir: PathBuf,
    config: PathBuf,
    child: Mutex<Option<Child>>,
    stopped: AtomicBool,
    start_count: Mutex<u32>,
}

/// What the members agree on once converged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Converged {
    pub leader: u32,
    pub zxid: i64,
    pub node_count: u64,
}

/// Running servers; see the module docs.
pub struct Ensemble {
    flavor: Flavor,
    options: Options,
    dir: Option<tempfile::TempDir>,
    members: Vec<Member>,
    links: Links,
    keep: AtomicBool,
}

impl Ensemble {
    /// Writes the members' files, starts every member and waits until all serve.
    pub async fn start(flavor: Flavor, options: Options) -> Result<Ensemble> {
        let ensemble = Ensemble::prepare(flavor, options).await?;
        for sid in ensemble.sids() {
            ensemble.spawn(sid)?;
        }
        for sid in ensemble.sids() {
            if let Err(error) = ensemble.wait_serving(sid).await {
                ensemble.keep_files();
                return Err(error);
            }
        }
        Ok(ensemble)
    }

    /// Everything but starting the processes.
    async fn prepare(flavor: Flavor, options: Options) -> Result<Ensemble> {
        if !(1..=SERVERS_MAX).contains(&options.servers) {
            bail!(
                "{} servers: the kit runs 1 to {SERVERS_MAX}",
                options.servers
            );
        }
        if let Flavor::ZooKeeper { script } = &flavor {
            fetch_zookeeper(script).await?;
        }
        let dir = tempfile::Builder::new()
            .prefix(&format!("meerkat-ensemble-{}-", flavor.name()))
            .tempdir()?;
        let (ports, hold) = layout::member_ports(options.servers)?;
        let links = if options.peer_proxies {
            layout::start_links(&ports).await?
        } else {
            Links::new()
        };
        drop(hold);
        let settings = Settings {
            tick_ms: options.tick_ms,
            init_limit: options.init_limit,
            sync_limit: options.sync_limit,
            extra_lines: &options.extra_config,
        };
        let mut members = Vec::with_capacity(options.servers);
        for sid in 1..=options.servers as u32 {
            let config = layout::write_member(dir.path(), sid, |data| {
                layout::config_text(sid, data, &ports, &links, &settings)
            })?;
            members.push(Member {
                sid,
                ports: ports[sid as usize - 1],
                dir: layout::member_dir(dir.path(), sid),
                config,
                child: Mutex::new(None),
                stopped: AtomicBool::new(false),
                start_count: Mutex::new(0),
            });
        }
        Ok(Ensemble {
            flavor,
            options,
            dir: Some(dir),
            members,
            links,
            keep: AtomicBool::new(std::env::var_os("MEERKAT_TEST_KEEP").is_some()),
        })
    }

    pub fn flavor(&self) -> &Flavor {
        &self.flavor
    }

    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The ensemble's directory (one `server-N/` per member).
    pub fn dir(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), |d| d.path())
    }

    /// Keeps the directory after the drop, and says where it is on stderr then.
    pub fn keep_files(&self) {
        self.keep.store(true, Ordering::SeqCst);
    }

    /// Server ids, 1..=N.
    pub fn sids(&self) -> Vec<u32> {
        self.members.iter().map(|m| m.sid).collect()
    }

    pub fn client_address(&self, sid: u32) -> SocketAddr {
        layout::loopback(self.member(sid).ports.client)
    }

    /// Every member's client address, in server id order.
    pub fn connect_string(&self) -> String {
        self.connect_string_from(1)
    }

    /// Every member's client address, starting with `sid`'s (the client tries them in order).
    pub fn connect_string_from(&self, sid: u32) -> String {
        let count = self.members.len();
        let first = self.index(sid);
        (0..count)
            .map(|i| self.members[(first + i) % count].ports.client)
            .map(|port| format!("127.0.0.1:{port}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// One connect string per member, each starting with that member.
    pub fn connect_strings(&self) -> Vec<String> {
        self.sids()
            .into_iter()
            .map(|sid| self.connect_string_from(sid))
            .collect()
    }

    /// True if the member's process is running (stopped ones included).
    pub fn is_running(&self, sid: u32) -> bool {
        self.exit_status(sid).is_none() && lock(&self.member(sid).child).is_some()
    }

    /// True if the member was SIGSTOPped and not continued.
    pub fn is_stopped(&self, sid: u32) -> bool {
        self.member(sid).stopped.load(Ordering::SeqCst)
    }

    /// Members running and not stopped.
    pub fn live_sids(&self) -> Vec<u32> {
        self.sids()
            .into_iter()
            .filter(|&sid| self.is_running(sid) && !self.is_stopped(sid))
            .collect()
    }

    fn member(&self, sid: u32) -> &Member {
        &self.members[self.index(sid)]
    }

    fn index(&self, sid: u32) -> usize {
        let index = (sid as usize).wrapping_sub(1);
        assert!(index < self.members.len(), "no server {sid}");
        index
    }
}

/// Runs `zookeeper.sh classpath` once, so that Maven's first download happens before (and
/// outside) the bounded waits, and never in a process the test may kill.
async fn fetch_zookeeper(script: &Path) -> Result<()> {
    let script = script.to_path_buf();
    let status = tokio::task::spawn_blocking(move || {
        Command::new("bash")
            .arg(&script)
            .arg("classpath")
            .stdout(Stdio::null())
            .status()
    })
    .await??;
    if !status.success() {
        bail!(
            "fetching Apache ZooKeeper's jars failed ({status}); \
             needs Maven and a network the first time"
        );
    }
    Ok(())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

mod control;
mod waits;
