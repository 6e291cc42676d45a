//! The servers a scenario runs against, started and stopped by the bench itself with the same
//! topology and the same zoo.cfg keys: meerkat (this binary), the same binary in its diskless
//! mode (`meerkat-diskless`: the same zoo.cfg plus `diskless=true`), Apache ZooKeeper 3.9.3
//! (`scripts/zookeeper.sh`, fetched from Maven Central on first use), and `null`.

use crate::null_server;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// meerkat in its default, durable mode (a log fsynced before each acknowledgement).
    Meerkat,
    /// meerkat in diskless mode (DESIGN.md §5): no transaction log, busy snapshots, failure
    /// checkpoints. Meant for ensembles; standalone it loses what came after its last snapshot
    /// when it dies, and says so in its log.
    #[value(name = "meerkat-diskless")]
    #[serde(rename = "meerkat-diskless")]
    MeerkatDiskless,
    #[value(name = "zookeeper")]
    ZooKeeper,
    /// Another meerkat binary (`--baseline PATH`, e.g. a build of an earlier commit) in the
    /// default mode: before and after a change, side by side in one run.
    Baseline,
    /// The `--baseline` binary in diskless mode, beside `meerkat-diskless`.
    #[value(name = "baseline-diskless")]
    #[serde(rename = "baseline-diskless")]
    BaselineDiskless,
    /// Answers every request at once without doing any work: the ceiling of the generator and
    /// the kernel on this machine.
    Null,
}

impl Target {
    pub fn name(self) -> &'static str {
        match self {
            Target::Meerkat => "meerkat",
            Target::MeerkatDiskless => "meerkat-diskless",
            Target::ZooKeeper => "zookeeper",
            Target::Baseline => "baseline",
            Target::BaselineDiskless => "baseline-diskless",
            Target::Null => "null",
        }
    }

    /// Whether this target is a meerkat binary (and reads meerkat's own keys).
    pub fn is_meerkat(self) -> bool {
        match self {
            Target::Meerkat
            | Target::MeerkatDiskless
            | Target::Baseline
            | Target::BaselineDiskless => true,
            Target::ZooKeeper | Target::Null => false,
        }
    }

    /// Whether this target runs the `--baseline` meerkat.
    pub fn is_baseline(self) -> bool {
        matches!(self, Target::Baseline | Target::BaselineDiskless)
    }

    /// zoo.cfg keys this target adds after the scenario's own (which every target shares).
    pub fn own_settings(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Target::MeerkatDiskless | Target::BaselineDiskless => &[("diskless", "true")],
            Target::Meerkat | Target::ZooKeeper | Target::Baseline | Target::Null => &[],
        }
    }
}

/// Where the programs are.
#[derive(Debug, Clone)]
pub struct Programs {
    pub meerkat: PathBuf,
    pub zookeeper_script: PathBuf,
    /// The `baseline` targets' meerkat binary (`--baseline`) and the zoo.cfg keys they get
    /// last (`--baseline-config`).
    pub baseline: Option<Baseline>,
}

/// The meerkat the `baseline` targets run: another build, or this one with other settings
/// (the same build with one key changed shows that key's effect in one run).
#[derive(Debug, Clone)]
pub struct Baseline {
    pub binary: PathBuf,
    /// zoo.cfg keys written after every other, so they override the scenario's, the target's
    /// and the bench's sizing (meerkat's config takes the last of duplicate keys).
    pub settings: Vec<(String, String)>,
}

impl Baseline {
    /// Parses one `--baseline-config KEY=VALUE`.
    pub fn parse_setting(arg: &str) -> anyhow::Result<(String, String)> {
        let (key, value) = arg
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("--baseline-config {arg:?}: expected KEY=VALUE"))?;
        let key = key.trim();
        anyhow::ensure!(
            !key.is_empty() && !key.contains(char::is_whitespace),
            "--baseline-config {arg:?}: the key must be one word"
        );
        anyhow::ensure!(
            !value.contains('\n'),
            "--baseline-config {arg:?}: the value must be one line"
        );
        Ok((key.to_string(), value.trim().to_string()))
    }
}

impl Programs {
    /// meerkat is this executable; the ZooKeeper script is found from the working directory
    /// or the executable's location (target/<profile>/meerkat inside the repository).
    pub fn locate() -> anyhow::Result<Programs> {
        let meerkat = std::env::current_exe()?;
        let mut candidates = vec![std::env::current_dir()?];
        candidates.extend(meerkat.ancestors().map(Path::to_path_buf));
        let script = candidates
            .iter()
            .flat_map(|d| {
                d.ancestors()
                    .map(|a| a.join("scripts/zookeeper.sh"))
                    .collect::<Vec<_>>()
            })
            .find(|p| p.is_file())
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "scripts/zookeeper.sh not found: run meerkat bench from the repository"
                )
            })?;
        Ok(Programs {
            meerkat,
            zookeeper_script: script,
            baseline: None,
        })
    }

    /// `scripts/brokers.sh`, beside the ZooKeeper script: the brokers of queue-vs-brokers.
    pub fn brokers_script(&self) -> PathBuf {
        self.zookeeper_script.with_file_name("brokers.sh")
    }
}

/// zoo.cfg settings a scenario chooses (the same for every target).
#[derive(Debug, Clone, Default)]
pub struct ServerSettings {
    pub extra: Vec<(String, String)>,
}

/// One server process and the files it was started with (kept to start it again).
struct Process {
    config: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

impl Process {
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The servers of one target: a standalone server, an ensemble of quorum peers, or the
/// in-process `null` server. Every process is SIGKILLed when this is dropped.
pub struct Launched {
    pub target: Target,
    /// The first server's client address (the only one when standalone).
    pub addr: SocketAddr,
    /// Every server's client address, in server id order.
    pub addrs: Vec<SocketAddr>,
    pub dir: PathBuf,
    programs: Programs,
    processes: Vec<Process>,
    null: Option<null_server::NullServer>,
}

impl Launched {
    /// The first running server's pid (none for `null`).
    pub fn pid(&self) -> Option<u32> {
        self.pids().first().copied()
    }

    /// The pids of the servers running now.
    pub fn pids(&self) -> Vec<u32> {
        let children = self.processes.iter().filter_map(|p| p.child.as_ref());
        children.map(Child::id).collect()
    }

    /// How many servers the topology has (running or not).
    pub fn servers(&self) -> usize {
        self.addrs.len()
    }

    /// Whether server `index` runs (it was not killed, or was started again).
    pub fn is_running(&self, index: usize) -> bool {
        self.processes.get(index).is_some_and(|p| p.child.is_some())
    }

    /// The index of the server that leads now (a standalone server leads itself), asking each
    /// running server `srvr` until one says leader, for at most `limit`.
    pub async fn leader(&self, limit: Duration) -> anyhow::Result<usize> {
        if self.servers() == 1 {
            return Ok(0);
        }
        let started = Instant::now();
        loop {
            for (i, addr) in self.addrs.iter().enumerate() {
                if !self.is_running(i) {
                    continue;
                }
                let srvr = crate::ensemble::srvr_async(*addr).await;
                if srvr.is_some_and(|s| s.is_leader()) {
                    return Ok(i);
                }
            }
            anyhow::ensure!(
                started.elapsed() < limit,
                "{}: no server said it leads within {limit:?}",
                self.target.name()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// SIGKILLs server `index` (its data stays for [`Launched::restart`]).
    pub fn kill(&mut self, index: usize) {
        if let Some(p) = self.processes.get_mut(index) {
            p.kill();
        }
    }

    /// SIGTERMs server `index` (a planned stop) and waits up to `limit` for it to exit; past
    /// that it is SIGKILLed and the error says so.
    pub async fn terminate(&mut self, index: usize, limit: Duration) -> anyhow::Result<()> {
        let Some(p) = self.processes.get_mut(index) else {
            anyhow::bail!("no server {index}");
        };
        let Some(child) = p.child.as_mut() else {
            anyhow::bail!("server {index} is not running");
        };
        let pid = libc::pid_t::try_from(child.id())?;
        // SAFETY: kill(2) on a child this process spawned and has not reaped (it holds the
        // Child), so the pid cannot belong to another process.
        if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
            anyhow::bail!(
                "SIGTERM to server {index}: {}",
                std::io::Error::last_os_error()
            );
        }
        let started = Instant::now();
        while child.try_wait()?.is_none() {
            if started.elapsed() >= limit {
                p.kill();
                anyhow::bail!("server {index} did not exit within {limit:?} of SIGTERM");
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        p.child = None;
        Ok(())
    }

    /// Starts server `index` again on its config and data, without waiting for it to serve.
    pub fn restart(&mut self, index: usize) -> anyhow::Result<()> {
        let target = self.target;
        let programs = self.programs.clone();
        let threads = threads_per_server(self.processes.len());
        let p = self
            .processes
            .get_mut(index)
            .ok_or_else(|| anyhow::anyhow!("no server {index}"))?;
        p.kill();
        p.child = Some(spawn(target, &programs, &p.config, &p.log, threads)?);
        Ok(())
    }

    /// Stops the servers (SIGKILL for processes: the bench does not measure shutdown).
    pub fn stop(mut self) {
        self.stop_inner();
    }

    fn stop_inner(&mut self) {
        for p in &mut self.processes {
            p.kill();
        }
        if let Some(null) = self.null.take() {
            null.stop();
        }
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        self.stop_inner();
    }
}

/// Starts `target` with `servers` servers (1 = standalone; `null` is always standalone), their
/// data under `dir` (kept if it exists: restarts reuse it), and waits until every one serves.
pub async fn launch(
    target: Target,
    programs: &Programs,
    dir: &Path,
    settings: &ServerSettings,
    servers: usize,
) -> anyhow::Result<Launched> {
    std::fs::create_dir_all(dir)?;
    if target == Target::Null {
        let null = null_server::NullServer::start().await?;
        return Ok(Launched {
            target,
            addr: null.addr,
            addrs: vec![null.addr],
            dir: dir.to_path_buf(),
            programs: programs.clone(),
            processes: Vec::new(),
            null: Some(null),
        });
    }
    let topology = crate::ensemble::Topology::on_free_ports(servers)?;
    let threads = threads_per_server(servers);
    let extra = config_keys(target, settings, threads, programs.baseline.as_ref());
    let mut launched = Launched {
        target,
        addr: topology.members[0].client_addr(),
        addrs: topology.client_addrs(),
        dir: dir.to_path_buf(),
        programs: programs.clone(),
        processes: Vec::new(),
        null: None,
    };
    for member in &topology.members {
        // A standalone server keeps the layout it always had: DIR/zoo.cfg, DIR/data.
        let home = if topology.is_ensemble() {
            dir.join(format!("server-{}", member.id))
        } else {
            dir.to_path_buf()
        };
        let config = topology.write_member(member, &home, &home.join("data"), &extra)?;
        let log = home.join("server.log");
        let child = spawn(target, programs, &config, &log, threads)?;
        launched.processes.push(Process {
            config,
            log,
            child: Some(child),
        });
    }
    for addr in &launched.addrs {
        wait_serving(*addr, Duration::from_secs(300)).await?;
    }
    Ok(launched)
}

/// Every zoo.cfg key a server of `target` is started with: the scenario's, the target's own,
/// meerkat's sizing for `threads` cores, and last a baseline's own (`--baseline-config`).
fn config_keys(
    target: Target,
    settings: &ServerSettings,
    threads: Option<usize>,
    baseline: Option<&Baseline>,
) -> Vec<(String, String)> {
    let mut keys = settings_for(target, settings);
    if let (Some(threads), true) = (threads, target.is_meerkat()) {
        keys.push(("serverThreads".to_string(), threads.to_string()));
    }
    if let (Some(baseline), true) = (baseline, target.is_baseline()) {
        keys.extend(baseline.settings.iter().cloned());
    }
    keys
}

/// The zoo.cfg keys `target` is started with: the scenario's, then the target's own.
fn settings_for(target: Target, settings: &ServerSettings) -> Vec<(String, String)> {
    let own = target.own_settings().iter();
    let own = own.map(|(k, v)| (k.to_string(), v.to_string()));
    settings.extra.iter().cloned().chain(own).collect()
}

/// The threads each of `servers` servers sharing this machine is sized for: its share of the
/// cores, at least one (`None` for a standalone server, which has the machine to itself).
/// Sized for every core, co-located servers wake each other's idle threads on every request
/// (docs/perf.md, "seventh pass"); each target gets the same rule, in its own terms.
pub fn threads_per_server(servers: usize) -> Option<usize> {
    if servers <= 1 {
        return None;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    Some((cores / servers).max(1))
}

/// Starts one server process on `config`, its stderr appended to `log`, sized for `threads`
/// cores if given (meerkat: `serverThreads` in its config; ZooKeeper: the JVM's
/// `-XX:ActiveProcessorCount`, which its thread pools and garbage collector size by).
fn spawn(
    target: Target,
    programs: &Programs,
    config: &Path,
    log: &Path,
    threads: Option<usize>,
) -> anyhow::Result<Child> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?;
    let mut command = match target {
        Target::Meerkat | Target::MeerkatDiskless | Target::Baseline | Target::BaselineDiskless => {
            let binary = if target.is_baseline() {
                let baseline = programs.baseline.as_ref().ok_or_else(|| {
                    anyhow::anyhow!(
                        "the baseline target needs --baseline PATH (a meerkat binary) or --baseline-config"
                    )
                })?;
                &baseline.binary
            } else {
                &programs.meerkat
            };
            let mut c = Command::new(binary);
            c.arg("server").arg(config).env("MEERKAT_LOG", "info");
            c
        }
        Target::ZooKeeper => {
            let mut c = Command::new("bash");
            c.arg(&programs.zookeeper_script)
                .arg("run")
                .arg(config)
                .env(
                    "ZK_LOG_LEVEL",
                    std::env::var("ZK_LOG_LEVEL").unwrap_or_else(|_| "warn".into()),
                );
            if let Some(threads) = threads {
                let flags = std::env::var("SERVER_JVMFLAGS").unwrap_or_default();
                c.env(
                    "SERVER_JVMFLAGS",
                    format!("{flags} -XX:ActiveProcessorCount={threads}").trim_start(),
                );
            }
            c
        }
        Target::Null => anyhow::bail!("the null server runs in process"),
    };
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()?;
    Ok(child)
}

/// Waits until a session can be established (not just a TCP accept).
pub async fn wait_serving(addr: SocketAddr, limit: Duration) -> anyhow::Result<Duration> {
    let started = Instant::now();
    loop {
        if let Ok(Ok(_)) = tokio::time::timeout(
            Duration::from_secs(2),
            crate::wire::Session::open(addr, 30_000),
        )
        .await
        {
            return Ok(started.elapsed());
        }
        anyhow::ensure!(
            started.elapsed() < limit,
            "server at {addr} did not start serving within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diskless_target_adds_diskless_true_after_the_scenarios_keys() {
        let settings = ServerSettings {
            extra: vec![("forceSync".into(), "yes".into())],
        };
        let keys = |t: Target| -> Vec<String> {
            let pairs = settings_for(t, &settings);
            pairs.iter().map(|(k, v)| format!("{k}={v}")).collect()
        };
        assert_eq!(keys(Target::Meerkat), vec!["forceSync=yes"]);
        assert_eq!(keys(Target::ZooKeeper), vec!["forceSync=yes"]);
        assert_eq!(
            keys(Target::MeerkatDiskless),
            vec!["forceSync=yes", "diskless=true"]
        );
    }

    #[test]
    fn baseline_settings_come_last_and_only_for_the_baseline_targets() {
        let settings = ServerSettings {
            extra: vec![("forceSync".into(), "yes".into())],
        };
        let baseline = Baseline {
            binary: PathBuf::from("meerkat"),
            settings: vec![
                Baseline::parse_setting("busySnapshotMinRestMs=20").expect("valid"),
                Baseline::parse_setting("serverThreads = 2").expect("valid"),
            ],
        };
        let keys = |t: Target| -> Vec<String> {
            let pairs = config_keys(t, &settings, Some(1), Some(&baseline));
            pairs.iter().map(|(k, v)| format!("{k}={v}")).collect()
        };
        assert_eq!(
            keys(Target::BaselineDiskless),
            vec![
                "forceSync=yes",
                "diskless=true",
                "serverThreads=1",
                "busySnapshotMinRestMs=20",
                "serverThreads=2",
            ],
            "after the sizing, so a baseline key overrides it (the last duplicate wins)"
        );
        assert_eq!(
            keys(Target::MeerkatDiskless),
            vec!["forceSync=yes", "diskless=true", "serverThreads=1"]
        );
        assert_eq!(keys(Target::ZooKeeper), vec!["forceSync=yes"]);
    }

    #[test]
    fn a_baseline_setting_is_one_key_and_one_line() {
        for bad in ["noequals", "=5", "two words=1", "key=a\nb"] {
            assert!(Baseline::parse_setting(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(
            Baseline::parse_setting("4lw.commands.whitelist=*,srvr").expect("valid"),
            ("4lw.commands.whitelist".to_string(), "*,srvr".to_string())
        );
    }

    #[test]
    fn co_located_servers_share_the_cores() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(
            threads_per_server(1),
            None,
            "a standalone server has every core"
        );
        for servers in 2..=7 {
            let threads = threads_per_server(servers).expect("sized");
            assert!(threads >= 1);
            assert!(
                threads * servers <= cores.max(servers),
                "{servers} × {threads} > {cores}"
            );
        }
        assert!(!Target::ZooKeeper.is_meerkat() && Target::BaselineDiskless.is_meerkat());
    }

    #[test]
    fn names_round_trip_through_the_command_line() {
        use clap::ValueEnum;
        for t in Target::value_variants() {
            assert_eq!(Target::from_str(t.name(), true), Ok(*t));
        }
    }
}
