//! The scenarios. Each starts its servers with the same settings for every target, runs the
//! same workload against each in one invocation, and returns rows for the table, raw results
//! for the JSON, and plots.
//!
//! * [`writes`]: sync-create (thesis Fig. 5.1), group-commit, create-latency (paper Table 2),
//!   cpu (thesis Fig. 5.5).
//! * [`reads`]: sync-get (thesis Fig. 5.2), read-ratio (paper Fig. 5).
//! * [`queue`]: the sequential-znode message queue (thesis Fig. 5.6).
//! * [`queue_vs_brokers`]: that queue as a producer/consumer job, beside message brokers
//!   (thesis Fig. 5.7).
//! * [`barrier`]: double barriers (paper Table 3).
//! * [`persistence`]: snapshot (thesis Table A.4) and restart.
//! * [`ensemble`]: leader-only (paper Fig. 6) and broadcast (paper Fig. 7).
//! * [`failures`]: failures (paper Fig. 8) and restore (thesis Fig. 5.4); [`rolling`]: a
//!   rolling restart (SIGTERM each member in turn, the leader last).
//! * [`memory`]: RSS with a million znodes, and its peak during a snapshot (DESIGN.md §9).
//!
//! With `--servers N` every target but `null` runs as an ensemble of N servers and clients
//! spread over them round-robin; `null` stays one in-process server. `meerkat-diskless` gets
//! the same settings as every target plus `diskless=true` ([`crate::target::Target`]).

pub mod barrier;
pub mod ensemble;
pub mod failures;
pub mod memory;
pub mod persistence;
pub mod queue;
pub mod queue_vs_brokers;
pub mod reads;
pub mod rolling;
pub mod writes;

use crate::load::{LoadResult, MakeRequest};
use crate::plot::Series;
use crate::report::Row;
use crate::target::{self, Launched, Programs, ServerSettings, Target};
use proto::request::Request;
use proto::{CreateRequest, OpCode};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Sizes and durations: `--quick` fits a 2-core machine in minutes, `--full` uses the papers'.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    pub full: bool,
    /// Tiny sizes for the self-test of the bench (seconds, not minutes).
    pub tiny: bool,
}

impl Scale {
    pub fn duration(&self) -> Duration {
        if self.tiny {
            Duration::from_secs(1)
        } else if self.full {
            Duration::from_secs(30)
        } else {
            Duration::from_secs(8)
        }
    }

    pub fn warmup(&self) -> Duration {
        if self.tiny {
            Duration::from_millis(100)
        } else {
            Duration::from_secs(2)
        }
    }

    /// Picks the tiny, quick or full variant.
    pub fn pick<T>(&self, tiny: T, quick: T, full: T) -> T {
        if self.tiny {
            tiny
        } else if self.full {
            full
        } else {
            quick
        }
    }
}

pub struct Context {
    pub programs: Programs,
    pub targets: Vec<Target>,
    /// queue-vs-brokers: the message brokers run beside the targets.
    pub brokers: Vec<crate::brokers::Broker>,
    pub work_dir: PathBuf,
    pub out_dir: PathBuf,
    pub scale: Scale,
    /// Servers per target (1 = standalone); `null` is always standalone.
    pub servers: usize,
    /// --rate: creates per second of cpu's fixed-rate case (None: the scale's default).
    pub rate: Option<u32>,
    /// --rounds: how many times cpu runs each case (medians reported).
    pub rounds: usize,
    pub progress: indicatif::ProgressBar,
}

impl Context {
    /// Moves the progress bar on, saying what runs now.
    pub fn step(&self, what: String) {
        self.progress.inc(1);
        self.progress.set_message(what);
    }

    /// `<out>/<name>.png`, or `<name>-<N>servers.png` for ensembles, so the charts of one
    /// scenario at different sizes can sit side by side.
    pub fn plot_path(&self, name: &str) -> PathBuf {
        if self.servers > 1 {
            self.out_dir
                .join(format!("{name}-{}servers.png", self.servers))
        } else {
            self.out_dir.join(format!("{name}.png"))
        }
    }

    /// Servers `target` runs with.
    pub fn servers_for(&self, target: Target) -> usize {
        if target == Target::Null {
            1
        } else {
            self.servers
        }
    }

    /// "standalone" or "3 servers", for chart titles.
    pub fn topology_label(&self) -> String {
        if self.servers > 1 {
            format!("{} servers", self.servers)
        } else {
            "standalone".into()
        }
    }

    /// Targets that run servers (everything but `null`).
    pub fn real_targets(&self) -> Vec<Target> {
        self.targets
            .iter()
            .copied()
            .filter(|t| *t != Target::Null)
            .collect()
    }
}

/// What a scenario produced.
pub struct Outcome {
    pub rows: Vec<Row>,
    pub details: serde_json::Value,
    pub plots: Vec<PathBuf>,
}

/// Title and axis labels of a scenario's chart.
pub struct Chart<'a> {
    pub title: &'a str,
    pub x: &'a str,
    pub y: &'a str,
}

impl Outcome {
    /// The outcome of a scenario with one chart, drawn from `series` as `<name>.png`.
    pub fn charted(
        ctx: &Context,
        name: &str,
        chart: Chart<'_>,
        series: &[Series],
        rows: Vec<Row>,
        details: serde_json::Map<String, serde_json::Value>,
    ) -> anyhow::Result<Outcome> {
        let path = ctx.plot_path(name);
        crate::plot::line_chart(&path, chart.title, chart.x, chart.y, series)?;
        Ok(Outcome {
            rows,
            details: serde_json::Value::Object(details),
            plots: vec![path],
        })
    }
}

/// The thesis's payload for create benchmarks (Fig. 5.1: 281-byte znodes).
pub const PAYLOAD_281: usize = 281;

pub fn open_acl() -> Vec<proto::Acl> {
    vec![proto::Acl {
        perms: 31,
        id: proto::Id {
            scheme: "world".into(),
            id: "anyone".into(),
        },
    }]
}

pub fn create_request(path: String, len: usize, flags: i32) -> Request {
    Request::Create {
        op: OpCode::Create,
        req: CreateRequest {
            path,
            data: Some(vec![b'm'; len]),
            acl: open_acl(),
            flags,
        },
    }
}

pub fn durable_settings(extra: &[(&str, &str)]) -> ServerSettings {
    let mut settings = ServerSettings::default();
    settings.extra.push(("forceSync".into(), "yes".into()));
    for (k, v) in extra {
        settings.extra.push((k.to_string(), v.to_string()));
    }
    settings
}

pub fn target_dir(ctx: &Context, scenario: &str, target: Target, case: &str) -> PathBuf {
    let case: String = case
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let dir = ctx.work_dir.join(scenario).join(case).join(target.name());
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

pub async fn launch(
    ctx: &Context,
    target: Target,
    dir: &Path,
    settings: &ServerSettings,
) -> anyhow::Result<Launched> {
    let servers = ctx.servers_for(target);
    target::launch(target, &ctx.programs, dir, settings, servers).await
}

/// Creates the `setup` znodes through the first server, then syncs every server so that a
/// client on any of them finds them (a follower may apply a commit a moment after the leader).
pub async fn prepare(server: &Launched, setup: &[(&str, usize)]) -> anyhow::Result<()> {
    if server.target == Target::Null {
        return Ok(());
    }
    for (path, len) in setup {
        ensure_node(server.addr, path, *len).await?;
    }
    for &addr in server.addrs.iter().skip(1) {
        let mut session = crate::wire::Session::open(addr, 30_000).await?;
        let sync = Request::Sync(proto::PathRecord { path: "/".into() });
        let (reply, _) = session.call(1, &sync).await?;
        anyhow::ensure!(reply.err == 0, "sync on {addr}: error {}", reply.err);
        session.close().await?;
    }
    Ok(())
}

pub fn row(case: &str, metric: &str, higher_is_better: bool) -> Row {
    Row {
        case: case.into(),
        metric: metric.into(),
        higher_is_better,
        values: BTreeMap::new(),
    }
}

/// Creates `path` (with `len` bytes) if it does not exist yet.
pub async fn ensure_node(addr: SocketAddr, path: &str, len: usize) -> anyhow::Result<()> {
    let mut session = crate::wire::Session::open(addr, 30_000).await?;
    let (reply, _) = session
        .call(1, &create_request(path.into(), len, 0))
        .await?;
    anyhow::ensure!(
        reply.err == 0 || reply.err == proto::ErrorCode::NodeExists.code(),
        "create {path}: error {}",
        reply.err
    );
    session.close().await
}

/// Throughput and latency rows of one load result per target, under `case`.
pub fn load_rows(case: &str, results: &[(Target, LoadResult)]) -> Vec<Row> {
    let mut throughput = row(case, "ops/s", true);
    let mut p50 = row(case, "p50 ms", false);
    let mut p99 = row(case, "p99 ms", false);
    for (target, r) in results {
        throughput
            .values
            .insert(target.name().into(), r.ops_per_sec);
        p50.values
            .insert(target.name().into(), r.p50_us as f64 / 1000.0);
        p99.values
            .insert(target.name().into(), r.p99_us as f64 / 1000.0);
    }
    vec![throughput, p50, p99]
}

/// Throughput per second over the run, one line per target (the thesis's Fig. 5.1/5.2 shape).
pub fn timeline_plot(
    ctx: &Context,
    name: &str,
    title: &str,
    results: &[(Target, LoadResult)],
) -> anyhow::Result<PathBuf> {
    let series: Vec<Series> = results
        .iter()
        .map(|(t, r)| Series {
            name: t.name().into(),
            points: r
                .timeline
                .iter()
                .enumerate()
                .map(|(s, &n)| (s as f64 + 1.0, n as f64))
                .collect(),
        })
        .collect();
    let path = ctx.plot_path(name);
    crate::plot::line_chart(&path, title, "time (s)", "operations per second", &series)?;
    Ok(path)
}

/// Runs `spec`-style load built by `make` against every target, each on a fresh server.
pub async fn each_target(
    ctx: &Context,
    scenario: &str,
    case: &str,
    setup: &[(&str, usize)],
    clients: usize,
    window: usize,
    make: MakeRequest,
) -> anyhow::Result<Vec<(Target, LoadResult)>> {
    let mut results = Vec::new();
    for &target in &ctx.targets {
        ctx.step(format!("{scenario} {case} on {}", target.name()));
        let dir = target_dir(ctx, scenario, target, case);
        let server = launch(ctx, target, &dir, &durable_settings(&[])).await?;
        prepare(&server, setup).await?;
        let spec = crate::load::LoadSpec {
            clients,
            window,
            duration: ctx.scale.duration(),
            warmup: ctx.scale.warmup(),
            make: make.clone(),
        };
        // Round-robin from the leader: one client goes through the leader (no forwarding
        // hop), as the papers' single-client figures do.
        let mut addrs = server.addrs.clone();
        if server.servers() > 1 {
            let leader = server.leader(std::time::Duration::from_secs(10)).await?;
            addrs.rotate_left(leader);
        }
        let result = crate::load::run(&addrs, &spec).await?;
        no_errors(target, &result)?;
        server.stop();
        results.push((target, result));
    }
    Ok(results)
}

/// Fails when any request of `result` was answered with an error.
pub fn no_errors(target: Target, result: &LoadResult) -> anyhow::Result<()> {
    anyhow::ensure!(
        result.errors == 0,
        "{} answered {} requests with errors",
        target.name(),
        result.errors
    );
    Ok(())
}

/// Runs each case (name, clients with `window` in flight) against every target and returns
/// the rows, the raw results and one throughput-over-time chart per case.
pub async fn timeline_cases(
    ctx: &Context,
    scenario: &str,
    label: &str,
    cases: &[(&str, usize)],
    setup: &[(&str, usize)],
    window: usize,
    make: MakeRequest,
) -> anyhow::Result<Outcome> {
    let (mut rows, mut plots) = (Vec::new(), Vec::new());
    let mut details = serde_json::Map::new();
    for &(case, clients) in cases {
        let results =
            each_target(ctx, scenario, case, setup, clients, window, make.clone()).await?;
        rows.extend(load_rows(case, &results));
        let first_word = case.split_whitespace().next().unwrap_or("case");
        let title = format!("{scenario}: {case}, {label}, {}", ctx.topology_label());
        plots.push(timeline_plot(
            ctx,
            &format!("{scenario}-{first_word}"),
            &title,
            &results,
        )?);
        for (t, r) in results {
            details.insert(format!("{case}/{}", t.name()), serde_json::to_value(&r)?);
        }
    }
    Ok(Outcome {
        rows,
        details: serde_json::Value::Object(details),
        plots,
    })
}

/// Steps a scenario will take, for the progress bar.
pub fn steps(scenario: crate::Scenario, ctx_targets: usize, scale: Scale, servers: usize) -> u64 {
    use crate::Scenario as S;
    let t = ctx_targets as u64;
    match scenario {
        S::SyncCreate | S::SyncGet => 2 * t,
        S::GroupCommit | S::Failures | S::RollingRestart | S::Memory => t,
        S::Cpu => 2 * t,
        S::CreateLatency => 3 * t,
        S::ReadRatio => scale.pick(3, 6, 11) * t,
        S::Queue => 2 * t,
        S::QueueVsBrokers => scale.pick(1, 2, 2) * t,
        S::Barrier => scale.pick(1, 2, 3) * t,
        S::Snapshot => 3,
        S::Restart | S::Restore => scale.pick(1, 2, 3) * t,
        S::LeaderOnly => 2 * scale.pick(2, 3, 6) * t,
        S::Broadcast => ensemble::broadcast_sizes(servers).len() as u64 * t,
    }
}
