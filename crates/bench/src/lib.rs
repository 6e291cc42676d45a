//! `meerkat bench`: the papers' experiments against meerkat (durable and diskless), Apache
//! ZooKeeper 3.9.3 and a `null` server, in one invocation, reported side by side with ratios
//! (DESIGN.md §9).
//!
//! # Layout
//! * [`target`], [`null_server`]: starting and stopping the servers under test;
//!   [`brokers`]: the message brokers queue-vs-brokers compares with (Kafka);
//!   [`ensemble`]: ports, configs and four-letter words of a local ensemble (shared with
//!   `meerkat ensemble`).
//! * [`wire`], [`load`]: a pipelined load generator that speaks the protocol itself;
//!   [`failover`]: the same, surviving servers that die.
//! * [`scenarios`]: the experiments; [`report`], [`plot`]: table, JSON and PNG charts;
//!   [`cpu`], [`rss`]: /proc accounting.

pub mod brokers;
pub mod cpu;
pub mod ensemble;
pub mod failover;
pub mod load;
pub mod null_server;
pub mod plot;
pub mod report;
pub mod rss;
pub mod scenarios;
pub mod target;
pub mod wire;

use report::Report;
use scenarios::{Context, Scale};
use std::path::PathBuf;
use target::{Programs, Target};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    /// Thesis Fig. 5.1: 1 and 60 synchronous clients creating 281-byte ephemeral-sequential
    /// znodes, forceSync=yes on every server (meerkat-diskless has no log to sync);
    /// throughput over time.
    SyncCreate,
    /// Thesis Fig. 5.2: 1 and 60 synchronous clients reading a 281-byte znode.
    SyncGet,
    /// Paper Fig. 5: saturated asynchronous clients, 1 KB, read share from 0 to 100 %.
    ReadRatio,
    /// Paper Table 2: workers doing a synchronous create then an asynchronous delete.
    CreateLatency,
    /// Group commit: 8 clients with 32 creates each in flight, forceSync=yes.
    GroupCommit,
    /// Thesis Fig. 5.5: server CPU under 60 synchronous creating clients, saturating and at a
    /// fixed rate of creates (--rate).
    Cpu,
    /// Thesis Fig. 5.6: a sequential-znode message queue.
    Queue,
    /// Thesis Fig. 5.7: the queue as a synchronous producer/consumer job (100,000 messages
    /// with --full), on 3 servers by default.
    QueueVsBrokers,
    /// Paper Table 3: double barriers, scaled down (10 and 20 clients; --full: 50 to 200).
    Barrier,
    /// Thesis Table A.4: snapshot write and load time for 10k, 100k, 1M znodes of 300 bytes.
    Snapshot,
    /// Restart time with 10k and 100k (--full: also 1M) znodes, and a synchronous client's p99
    /// while snapshots run.
    Restart,
    /// Paper Fig. 6: read-ratio's workload with every client on the leader, against clients
    /// spread over the servers (an ensemble: --servers 3 or more, the default).
    LeaderOnly,
    /// Paper Fig. 7, approximated: clients on the leader writing only, for 1 server and odd
    /// ensemble sizes up to --servers.
    Broadcast,
    /// Paper Fig. 8: throughput over time with 30 % writes while a follower and then the leader
    /// are SIGKILLed and restarted; the time from the leader's kill to the next write.
    Failures,
    /// Thesis Fig. 5.4: time from the leader's kill until a write succeeds, against the number
    /// of znodes.
    Restore,
    /// A rolling restart under load: each member SIGTERMed, restarted and waited for, the
    /// leader last; the other members' clients' broken connections, failed writes and longest
    /// write gap.
    RollingRestart,
    /// DESIGN.md §9: a standalone server's RSS after 200,000 (--full: 1,000,000) znodes of
    /// 100 bytes, and its peak while a snapshot of them is written.
    Memory,
}

impl Scenario {
    pub fn name(self) -> &'static str {
        match self {
            Scenario::SyncCreate => "sync-create",
            Scenario::SyncGet => "sync-get",
            Scenario::ReadRatio => "read-ratio",
            Scenario::CreateLatency => "create-latency",
            Scenario::GroupCommit => "group-commit",
            Scenario::Cpu => "cpu",
            Scenario::Queue => "queue",
            Scenario::QueueVsBrokers => "queue-vs-brokers",
            Scenario::Barrier => "barrier",
            Scenario::Snapshot => "snapshot",
            Scenario::Restart => "restart",
            Scenario::LeaderOnly => "leader-only",
            Scenario::Broadcast => "broadcast",
            Scenario::Failures => "failures",
            Scenario::Restore => "restore",
            Scenario::RollingRestart => "rolling-restart",
            Scenario::Memory => "memory",
        }
    }

    /// Servers per target unless --servers says otherwise.
    pub fn default_servers(self) -> usize {
        match self {
            Scenario::LeaderOnly
            | Scenario::Failures
            | Scenario::Restore
            | Scenario::RollingRestart
            | Scenario::QueueVsBrokers => 3,
            _ => 1,
        }
    }

    /// Why the scenario cannot run with `servers` servers per target, if it cannot.
    pub fn refuses(self, servers: usize) -> Option<String> {
        if !(1..=ensemble::SERVERS_MAX).contains(&servers) {
            return Some(format!(
                "--servers {servers}: from 1 to {}",
                ensemble::SERVERS_MAX
            ));
        }
        match self {
            Scenario::Snapshot if servers != 1 => Some(
                "snapshot runs meerkat's snapshot code in process: --servers does not apply".into(),
            ),
            Scenario::Memory if servers != 1 => {
                Some("memory measures one standalone server's process".into())
            }
            Scenario::Restart if servers != 1 => Some(
                "restart measures a standalone server; `restore` is its ensemble counterpart"
                    .into(),
            ),
            Scenario::LeaderOnly
            | Scenario::Failures
            | Scenario::Restore
            | Scenario::RollingRestart
                if servers < 3 =>
            {
                Some(format!(
                    "{} needs an ensemble that survives a failure: --servers 3 or more",
                    self.name()
                ))
            }
            _ => None,
        }
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    #[arg(value_enum)]
    pub scenario: Scenario,
    /// Which servers to run against, comma-separated: meerkat, meerkat-diskless (the same
    /// binary with diskless=true), zookeeper, baseline (the `--baseline` binary),
    /// baseline-diskless (the same, diskless=true), null; "all" is every one of them but the
    /// baselines, of which baseline is added when `--baseline` or `--baseline-config` is given.
    #[arg(long, default_value = "all")]
    pub target: String,
    /// Another meerkat binary, run as the `baseline` target: a build of an earlier commit, to
    /// see a change's effect in one run (ratio column mk/base).
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// A zoo.cfg KEY=VALUE for the baseline targets only, written after every other key
    /// (repeatable); without `--baseline` the baseline is this meerkat, so one run shows what
    /// a setting changes (e.g. `--target meerkat-diskless,baseline-diskless --baseline-config
    /// busySnapshotMinRestMs=20`).
    #[arg(long = "baseline-config", value_name = "KEY=VALUE")]
    pub baseline_config: Vec<String>,
    /// The papers' sizes and durations.
    #[arg(long, conflicts_with = "quick")]
    pub full: bool,
    /// Sizes that fit about two minutes per scenario on a 2-core machine (the default).
    #[arg(long)]
    pub quick: bool,
    /// Seconds-long sizes, to check the bench itself works.
    #[arg(long, hide = true)]
    pub tiny: bool,
    /// Where JSON results go.
    #[arg(long, default_value = "bench-results")]
    pub out: PathBuf,
    /// Servers per target (1 = standalone; default 3 for leader-only, failures and restore, 1
    /// otherwise). Clients spread over the servers round-robin, starting at the leader; `null` stays standalone.
    #[arg(long)]
    pub servers: Option<usize>,
    /// queue-vs-brokers: the message brokers to run the job against as well, comma-separated
    /// (kafka, artemis), or none. Started from Maven Central artifacts (scripts/brokers.sh).
    #[arg(long, default_value = "kafka,artemis")]
    pub brokers: String,
    /// Scratch space for the servers' data dirs.
    #[arg(long, default_value = "target/bench-work")]
    pub work_dir: PathBuf,
    /// cpu: creates per second (all clients together) of the fixed-rate case, so that every
    /// target does the same work (default: 1000; 100 with --tiny).
    #[arg(long)]
    pub rate: Option<u32>,
    /// cpu: runs each case this many times, the targets taking turns at going first, and
    /// reports each figure's median over the rounds (on a shared 2-core machine one run's
    /// CPU per create moves by ±10 %, and the target that runs second gains a few percent).
    #[arg(long, default_value_t = 1)]
    pub rounds: usize,
}

fn targets(spec: &str) -> anyhow::Result<Vec<Target>> {
    use clap::ValueEnum;
    if spec == "all" {
        let all = Target::value_variants().iter().copied();
        return Ok(all
            .filter(|t| !matches!(t, Target::Baseline | Target::BaselineDiskless))
            .collect());
    }
    let mut targets: Vec<Target> = Vec::new();
    for t in spec.split(',') {
        let target =
            Target::from_str(t.trim(), true).map_err(|e| anyhow::anyhow!("--target {t}: {e}"))?;
        anyhow::ensure!(!targets.contains(&target), "--target {t}: named twice");
        targets.push(target);
    }
    Ok(targets)
}

fn brokers(spec: &str) -> anyhow::Result<Vec<brokers::Broker>> {
    use clap::ValueEnum;
    if spec == "none" {
        return Ok(Vec::new());
    }
    let mut brokers = Vec::new();
    for b in spec.split(',') {
        let broker = brokers::Broker::from_str(b.trim(), true)
            .map_err(|e| anyhow::anyhow!("--brokers {b}: {e}"))?;
        anyhow::ensure!(!brokers.contains(&broker), "--brokers {b}: named twice");
        brokers.push(broker);
    }
    Ok(brokers)
}

/// Runs one scenario and prints its table; returns the report (also written as JSON, with
/// PNG plots beside it).
pub async fn run(
    args: &BenchArgs,
    programs: Programs,
    command_line: String,
) -> anyhow::Result<Report> {
    let servers = args
        .servers
        .unwrap_or_else(|| args.scenario.default_servers());
    if let Some(reason) = args.scenario.refuses(servers) {
        anyhow::bail!("{reason}");
    }
    let scale = Scale {
        full: args.full,
        tiny: args.tiny,
    };
    anyhow::ensure!(
        args.rate != Some(0),
        "--rate 0: at least one create per second"
    );
    anyhow::ensure!(args.rounds >= 1, "--rounds 0: at least one round");
    anyhow::ensure!(
        args.rounds == 1 || args.scenario == Scenario::Cpu,
        "--rounds: only the cpu scenario repeats its cases"
    );
    let mut targets = targets(&args.target)?;
    let mut programs = programs;
    if args.baseline.is_some() || !args.baseline_config.is_empty() {
        let binary = match &args.baseline {
            Some(binary) => {
                anyhow::ensure!(
                    binary.is_file(),
                    "--baseline {}: no such file",
                    binary.display()
                );
                binary.clone()
            }
            None => programs.meerkat.clone(),
        };
        let settings = args
            .baseline_config
            .iter()
            .map(|arg| target::Baseline::parse_setting(arg))
            .collect::<anyhow::Result<Vec<_>>>()?;
        programs.baseline = Some(target::Baseline { binary, settings });
        if !targets.iter().any(|t| t.is_baseline()) {
            targets.push(Target::Baseline);
        }
    }
    let wants_baseline = targets.iter().any(|t| t.is_baseline());
    anyhow::ensure!(
        !wants_baseline || programs.baseline.is_some(),
        "--target baseline needs --baseline PATH (a meerkat binary) or --baseline-config KEY=VALUE"
    );
    let progress = indicatif::ProgressBar::new(
        scenarios::steps(
            args.scenario,
            targets.len() + brokers(&args.brokers).map_or(0, |b| b.len()),
            scale,
            servers,
        ) * args.rounds as u64,
    );
    progress.set_style(
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    std::fs::create_dir_all(&args.out)?;
    let brokers = match args.scenario {
        Scenario::QueueVsBrokers => brokers(&args.brokers)?,
        _ => Vec::new(),
    };
    let ctx = Context {
        programs,
        targets,
        brokers,
        work_dir: args.work_dir.clone(),
        out_dir: args.out.clone(),
        scale,
        servers,
        rate: args.rate,
        rounds: args.rounds,
        progress,
    };
    let outcome = match args.scenario {
        Scenario::SyncCreate => scenarios::writes::sync_create(&ctx).await?,
        Scenario::SyncGet => scenarios::reads::sync_get(&ctx).await?,
        Scenario::ReadRatio => scenarios::reads::read_ratio(&ctx).await?,
        Scenario::CreateLatency => scenarios::writes::create_latency(&ctx).await?,
        Scenario::GroupCommit => scenarios::writes::group_commit(&ctx).await?,
        Scenario::Cpu => scenarios::writes::cpu(&ctx).await?,
        Scenario::Queue => scenarios::queue::queue(&ctx).await?,
        Scenario::QueueVsBrokers => scenarios::queue_vs_brokers::queue_vs_brokers(&ctx).await?,
        Scenario::Barrier => scenarios::barrier::barrier(&ctx).await?,
        Scenario::Snapshot => scenarios::persistence::snapshot(&ctx)?,
        Scenario::Restart => scenarios::persistence::restart(&ctx).await?,
        Scenario::LeaderOnly => scenarios::ensemble::leader_only(&ctx).await?,
        Scenario::Broadcast => scenarios::ensemble::broadcast(&ctx).await?,
        Scenario::Failures => scenarios::failures::failures(&ctx).await?,
        Scenario::Restore => scenarios::failures::restore(&ctx).await?,
        Scenario::RollingRestart => scenarios::rolling::rolling_restart(&ctx).await?,
        Scenario::Memory => scenarios::memory::memory(&ctx).await?,
    };
    ctx.progress.finish_and_clear();
    let report = Report {
        scenario: args.scenario.name().into(),
        command: command_line,
        date: report::today(),
        machine: report::machine(),
        servers,
        rows: outcome.rows,
        details: outcome.details,
        plots: outcome
            .plots
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
    };
    if let Some(baseline) = &ctx.programs.baseline {
        let keys: Vec<String> = baseline
            .settings
            .iter()
            .map(|(k, v)| format!(" {k}={v}"))
            .collect();
        println!("baseline: {}{}", baseline.binary.display(), keys.concat());
    }
    print!("{}", report.table());
    let path = report.write_json(&args.out)?;
    println!("results: {}", path.display());
    for plot in &report.plots {
        println!("plot: {plot}");
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_targets_include_diskless_and_lists_keep_their_order() {
        let all = targets("all").expect("all");
        assert_eq!(
            all,
            vec![
                Target::Meerkat,
                Target::MeerkatDiskless,
                Target::ZooKeeper,
                Target::Null
            ]
        );
        let some = targets("zookeeper, meerkat-diskless").expect("list");
        assert_eq!(some, vec![Target::ZooKeeper, Target::MeerkatDiskless]);
        assert!(targets("meerkat,meerkat").is_err());
        assert!(targets("etcd").is_err());
    }

    #[test]
    fn brokers_are_a_list_or_none() {
        assert_eq!(
            brokers("kafka").expect("kafka"),
            vec![brokers::Broker::Kafka]
        );
        assert!(brokers("none").expect("none").is_empty());
        assert_eq!(
            brokers("artemis, kafka").expect("both"),
            vec![brokers::Broker::Artemis, brokers::Broker::Kafka]
        );
        assert!(brokers("kafka,kafka").is_err());
        assert!(brokers("rabbitmq").is_err());
    }
}
