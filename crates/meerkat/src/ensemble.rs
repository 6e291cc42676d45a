//! `meerkat ensemble`: a replicated ensemble on this machine in one command, for trying
//! meerkat out, for tests and for demos.
//!
//! `up` writes one data dir per server (`DIR/server-N` with `myid` and `zoo.cfg`), starts each
//! server as a detached `meerkat server DIR/server-N/zoo.cfg` process (its own process group,
//! so a Ctrl-C in the shell that ran `up` does not reach it), records the pids in
//! `DIR/ensemble.json` and waits until every server serves. `status` asks each server `srvr`
//! and `mntr`. `down` signals only the recorded pids, and only those whose command line is
//! still the one `up` started, so a pid the kernel handed to another program is never
//! signalled. Data dirs are kept: `up` on the same DIR starts the same ensemble again.
//!
//! Ports and config files come from `bench::ensemble`, the same code that starts the
//! ensembles `meerkat bench` measures.

use bench::ensemble::{self as local, Record, RecordedServer, Srvr, Topology};
use clap::Subcommand;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long `up` waits for every server to serve.
const UP_WAIT: Duration = Duration::from_secs(60);

/// How long `down` waits after SIGTERM before SIGKILL, and after SIGKILL before giving up.
const DOWN_WAIT: Duration = Duration::from_secs(10);

const POLL: Duration = Duration::from_millis(50);

#[derive(Subcommand)]
pub enum EnsembleCommand {
    /// Start N servers on 127.0.0.1 as one ensemble and wait until every one serves.
    Up {
        /// Servers (the last --observers of them are observers).
        #[arg(short = 'n', long = "servers", default_value_t = 3)]
        servers: usize,
        /// Where the data dirs, logs and ensemble.json go.
        #[arg(long, default_value = "meerkat-ensemble")]
        dir: PathBuf,
        /// First client port: clients use P.., quorum P+707.., election P+1707.. (2181, 2888
        /// and 3888 by default, as in ZooKeeper's documentation).
        #[arg(long, default_value_t = 2181)]
        base_port: u16,
        /// How many of the servers are observers (they do not vote).
        #[arg(long, default_value_t = 0)]
        observers: usize,
        /// Run every server in diskless mode (`diskless=true`: no transaction log; see
        /// docs/durability.md for what that promises).
        #[arg(long)]
        diskless: bool,
    },
    /// Each server's pid, address, role, zxid, connections and znodes, and the leader.
    Status {
        #[arg(long, default_value = "meerkat-ensemble")]
        dir: PathBuf,
    },
    /// Stop the servers `up` started (SIGTERM, then SIGKILL); their data stays.
    Down {
        #[arg(long, default_value = "meerkat-ensemble")]
        dir: PathBuf,
    },
}

/// Runs `command`; errors are printed as one message (no backtrace) and exit with 1.
pub fn run(command: EnsembleCommand) -> anyhow::Result<()> {
    let result = match command {
        EnsembleCommand::Up {
            servers,
            dir,
            base_port,
            observers,
            diskless,
        } => up(servers, &dir, base_port, observers, diskless),
        EnsembleCommand::Status { dir } => status(&dir),
        EnsembleCommand::Down { dir } => down(&dir),
    };
    if let Err(e) = result {
        eprintln!("meerkat ensemble: {e:#}");
        std::process::exit(1);
    }
    Ok(())
}

fn record_path(dir: &Path) -> PathBuf {
    dir.join("ensemble.json")
}

fn read_record(dir: &Path) -> anyhow::Result<Record> {
    let path = record_path(dir);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        anyhow::anyhow!(
            "no ensemble recorded in {} ({e}); start one with `meerkat ensemble up --dir {}`",
            path.display(),
            dir.display()
        )
    })?;
    Record::from_json(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

fn up(
    servers: usize,
    dir: &Path,
    base_port: u16,
    observers: usize,
    diskless: bool,
) -> anyhow::Result<()> {
    if let Ok(record) = read_record(dir) {
        let running = record.servers.iter().filter(|s| runs(s)).count();
        anyhow::ensure!(
            running == 0,
            "{running} server(s) recorded in {} still run; `meerkat ensemble down --dir {}` first",
            record_path(dir).display(),
            dir.display()
        );
    }
    let topology = Topology::from_base(servers, observers, base_port)?;
    let busy = topology.ports_in_use();
    anyhow::ensure!(
        busy.is_empty(),
        "ports in use: {}; pick another --base-port (the ensemble needs client ports {}.., \
         quorum ports {}.. and election ports {}..)",
        busy.join(", "),
        topology.members[0].client_port,
        topology.members[0].quorum_port,
        topology.members[0].election_port,
    );
    std::fs::create_dir_all(dir)?;
    let dir = std::path::absolute(dir)?;
    let program = std::env::current_exe()?;
    let mut record = Record {
        program: program.clone(),
        servers: Vec::new(),
    };
    // `up` is the servers' parent until it exits: it judges them by these handles, not by
    // /proc (see `wait_serving`).
    let mut children = Vec::new();
    for member in &topology.members {
        let home = dir.join(format!("server-{}", member.id));
        let mut extra = if diskless {
            vec![("diskless".to_string(), "true".to_string())]
        } else {
            Vec::new()
        };
        // The members share this machine: each gets its share of the cores.
        if let Some(threads) = bench::target::threads_per_server(servers) {
            extra.push(("serverThreads".to_string(), threads.to_string()));
        }
        let config = topology.write_member(member, &home, &home, &extra)?;
        let log = home.join("server.log");
        let child = spawn_detached(&program, &config, &log)?;
        record.servers.push(RecordedServer {
            member: member.clone(),
            pid: child.id(),
            config,
            log,
        });
        children.push(child);
        // Written after every start, so `down` finds whatever did start if a later one fails.
        std::fs::write(record_path(&dir), record.to_json()?)?;
    }
    let states = match wait_serving(&record, &mut children) {
        Ok(states) => states,
        Err(e) => {
            stop_children(&mut children);
            let _ = std::fs::remove_file(record_path(&dir));
            return Err(e.context("stopped the servers it started (their logs are kept)"));
        }
    };
    for (server, state) in record.servers.iter().zip(&states) {
        println!(
            "server {:<3} {:<21} {:<10} pid {}",
            server.member.id,
            server.member.client_addr(),
            state.mode,
            server.pid
        );
    }
    println!("connect string: {}", topology.connect_string());
    Ok(())
}

/// Starts `meerkat server CONFIG` in its own process group with stdout and stderr in `log`,
/// and returns its handle without waiting for it.
fn spawn_detached(program: &Path, config: &Path, log: &Path) -> anyhow::Result<Child> {
    use std::os::unix::process::CommandExt;
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?;
    let child = Command::new(program)
        .arg("server")
        .arg(config)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .process_group(0)
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot start {}: {e}", program.display()))?;
    // Dropping the handle neither waits nor kills; init reaps the server once `up` exits.
    Ok(child)
}

/// Waits until every recorded server answers `srvr` as serving; fails at once if one exits.
///
/// Whether a server still runs comes from its parent's view (`try_wait`), not from
/// `/proc/PID/cmdline` as for `down`: right after `spawn` returns, a child can still be inside
/// `execve` with an empty command line, which once made `up` take a starting server for a dead
/// one (seen in CI).
fn wait_serving(record: &Record, children: &mut [Child]) -> anyhow::Result<Vec<Srvr>> {
    let started = Instant::now();
    loop {
        let mut states = Vec::new();
        for (server, child) in record.servers.iter().zip(children.iter_mut()) {
            if let Some(status) = child.try_wait()? {
                anyhow::bail!(
                    "server {} (pid {}) exited ({status}); its log {} ends with:\n{}",
                    server.member.id,
                    server.pid,
                    server.log.display(),
                    log_tail(&server.log)
                );
            }
            states.extend(local::srvr(server.member.client_addr()));
        }
        if states.len() == record.servers.len() {
            return Ok(states);
        }
        anyhow::ensure!(
            started.elapsed() < UP_WAIT,
            "{} of {} servers serve after {UP_WAIT:?}",
            states.len(),
            record.servers.len()
        );
        std::thread::sleep(POLL);
    }
}

/// The last lines of a log, indented, for an error message.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = &lines[lines.len().saturating_sub(10)..];
    tail.iter().map(|l| format!("    {l}\n")).collect()
}

/// Whether `server.pid` is still the process `up` started: alive (not a zombie) and running
/// `… server <its config>`. A recycled pid fails the command-line check.
fn runs(server: &RecordedServer) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{}/cmdline", server.pid)) else {
        return false;
    };
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    let config = server.config.as_os_str().as_encoded_bytes();
    let program_is_meerkat = args
        .first()
        .and_then(|a| std::str::from_utf8(a).ok())
        .is_some_and(|a| a.contains("meerkat"));
    program_is_meerkat
        && args.get(1) == Some(&&b"server"[..])
        && args.get(2) == Some(&config)
        && !is_zombie(server.pid)
}

fn is_zombie(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The state follows the command name, which ends at the last ')'.
    stat.rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next())
        .is_none_or(|state| state == "Z")
}

fn status(dir: &Path) -> anyhow::Result<()> {
    let record = read_record(dir)?;
    println!(
        "{:<6} {:<8} {:<6} {:<21} {:<10} {:<14} {:>5} {:>8}",
        "server", "pid", "alive", "client address", "role", "zxid", "conns", "znodes"
    );
    let mut leaders = Vec::new();
    for server in &record.servers {
        let alive = runs(server);
        let addr = server.member.client_addr();
        let state = if alive { local::srvr(addr) } else { None };
        let (role, zxid, conns, znodes) = match &state {
            Some(s) => (
                s.mode.clone(),
                format!("0x{:x}", s.zxid),
                s.connections.to_string(),
                local::mntr(addr)
                    .get("zk_znode_count")
                    .cloned()
                    .unwrap_or_else(|| s.node_count.to_string()),
            ),
            None if alive => ("not serving".into(), "-".into(), "-".into(), "-".into()),
            None => ("down".into(), "-".into(), "-".into(), "-".into()),
        };
        if state.as_ref().is_some_and(Srvr::is_leader) {
            leaders.push(format!("server {} ({addr})", server.member.id));
        }
        println!(
            "{:<6} {:<8} {:<6} {:<21} {:<10} {:<14} {:>5} {:>8}",
            server.member.id,
            server.pid,
            if alive { "yes" } else { "no" },
            addr.to_string(),
            role,
            zxid,
            conns,
            znodes
        );
    }
    match leaders.as_slice() {
        [] => println!("leader: none (an election may be running)"),
        [one] => println!("leader: {one}"),
        many => println!("leaders: {} (more than one says it leads)", many.join(", ")),
    }
    println!("connect string: {}", record.topology().connect_string());
    Ok(())
}

fn down(dir: &Path) -> anyhow::Result<()> {
    let record = read_record(dir)?;
    let running = record.servers.iter().filter(|s| runs(s)).count();
    let left = stop(&record);
    anyhow::ensure!(
        left.is_empty(),
        "pids {left:?} still run after SIGKILL; ensemble.json is kept"
    );
    std::fs::remove_file(record_path(dir))?;
    println!(
        "stopped {running} of {} server(s); data kept in {}",
        record.servers.len(),
        dir.display()
    );
    Ok(())
}

/// What `up` does when a server fails to start: SIGTERM to every server it started that still
/// runs, SIGKILL to those left after [`DOWN_WAIT`]; every one is reaped.
fn stop_children(children: &mut [Child]) {
    // A child whose state cannot be read is treated as gone: nothing more can be done with it.
    let running = |children: &mut [Child]| -> Vec<usize> {
        (0..children.len())
            .filter(|&i| matches!(children[i].try_wait(), Ok(None)))
            .collect()
    };
    for i in running(children) {
        signal(children[i].id(), "TERM");
    }
    let started = Instant::now();
    while !running(children).is_empty() && started.elapsed() < DOWN_WAIT {
        std::thread::sleep(POLL);
    }
    for i in running(children) {
        // SIGKILL through the handle, then reap: the child is ours, its pid cannot be reused.
        let _ = children[i].kill();
        let _ = children[i].wait();
    }
}

/// SIGTERM to every recorded server that still runs, SIGKILL to those left after
/// [`DOWN_WAIT`]; returns the pids still running after that.
fn stop(record: &Record) -> Vec<u32> {
    let running = || -> Vec<u32> {
        let servers = record.servers.iter().filter(|s| runs(s));
        servers.map(|s| s.pid).collect()
    };
    for sig in ["TERM", "KILL"] {
        let targets = running();
        if targets.is_empty() {
            return targets;
        }
        for pid in &targets {
            signal(*pid, sig);
        }
        let started = Instant::now();
        while !running().is_empty() && started.elapsed() < DOWN_WAIT {
            std::thread::sleep(POLL);
        }
    }
    running()
}

/// Sends SIG`sig` to `pid` with kill(1) (the caller has just checked what `pid` runs).
fn signal(pid: u32, sig: &str) {
    let sent = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status();
    if !sent.is_ok_and(|s| s.success()) {
        eprintln!("meerkat ensemble: could not send SIG{sig} to pid {pid}");
    }
}
