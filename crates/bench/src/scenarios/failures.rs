//! Servers dying under load: the ZooKeeper paper's Fig. 8 (throughput while a follower and
//! then the leader are SIGKILLed and started again) and the thesis's Fig. 5.4 (how long an
//! ensemble holding K znodes takes to serve writes again after its leader dies).

use super::ensemble::LEADER_WAIT;
use super::reads::{mix, mix_setup, saturating_clients};
use super::{durable_settings, launch, prepare, row, target_dir, Chart, Context, Outcome};
use crate::failover::{self, FailoverResult, FailoverSpec, Marks};
use crate::plot::{Mark, Series};
use crate::report::Row;
use crate::target::Launched;
use crate::wire::Session;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a restarted server may take to serve again (a JVM and a sync included).
const REJOIN_WAIT: Duration = Duration::from_secs(120);

/// How long an ensemble may take to serve a write after its leader dies before the scenario
/// gives up (far beyond both targets' election times).
const RESTORE_WAIT: Duration = Duration::from_secs(120);

/// Pause between failed probes: fine enough for the measurement, sparse enough not to slow
/// the election it waits for (ZooKeeper logs a stack trace for every refused session).
const PROBE_PAUSE: Duration = Duration::from_millis(10);

/// Bound on one probe's connect and on its write.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The failures' schedule: each event `step` after the previous one actually happened, and
/// the timeline ends `tail` after the last.
struct FailurePlan {
    step: Duration,
    tail: Duration,
}

impl FailurePlan {
    fn for_scale(ctx: &Context) -> FailurePlan {
        let (step, tail) = ctx.scale.pick((1, 1), (5, 8), (10, 20));
        FailurePlan {
            step: Duration::from_secs(step),
            tail: Duration::from_secs(tail),
        }
    }
}

/// Paper Fig. 8: saturated clients with 30 % writes (1 KB), spread over the servers. After a
/// warm-up, one step apart, a follower is SIGKILLed, started again, then the leader is
/// SIGKILLed (once the follower serves again, so that a quorum remains) and started again.
/// Clients whose server dies move to the next one.
pub async fn failures(ctx: &Context) -> anyhow::Result<Outcome> {
    let plan = FailurePlan::for_scale(ctx);
    let clients = saturating_clients(ctx);
    let setup = mix_setup(clients);
    let setup: Vec<(&str, usize)> = setup.iter().map(|(p, l)| (p.as_str(), *l)).collect();
    let mut tally = FailureTally::new("30% writes");
    for target in ctx.real_targets() {
        ctx.step(format!("failures on {}", target.name()));
        let dir = target_dir(ctx, "failures", target, "30");
        let mut server = launch(ctx, target, &dir, &durable_settings(&[])).await?;
        prepare(&server, &setup).await?;
        let spec = FailoverSpec {
            clients,
            window: 100,
            make: mix(70),
        };
        let warmup = ctx.scale.warmup();
        let (result, marks) = run_with_failures(&mut server, &plan, &spec, warmup).await?;
        server.stop();
        if result.leader_kill_to_write_ms.is_none() {
            tracing::warn!(
                target = target.name(),
                "no write succeeded after the leader's kill before the run ended"
            );
        }
        tally.add(target.name(), result, marks);
    }
    let path = ctx.plot_path("failures");
    let title = format!(
        "failures: 30% writes, 1 KB, {}, kills at the marks",
        ctx.topology_label()
    );
    let (x, y) = ("time (s)", "operations per second");
    crate::plot::line_chart_with_marks(&path, &title, x, y, &tally.series, &tally.marks)?;
    Ok(Outcome {
        rows: vec![
            tally.before,
            tally.follower_down,
            tally.to_write,
            tally.disconnects,
            tally.gap_kept,
            tally.gap_all,
            tally.whole,
        ],
        details: serde_json::Value::Object(tally.details),
        plots: vec![path],
    })
}

/// The failures scenario's rows, chart and details, one target at a time.
struct FailureTally {
    before: Row,
    follower_down: Row,
    whole: Row,
    to_write: Row,
    disconnects: Row,
    gap_kept: Row,
    gap_all: Row,
    series: Vec<Series>,
    marks: Vec<Mark>,
    details: serde_json::Map<String, serde_json::Value>,
}

impl FailureTally {
    fn new(case: &str) -> FailureTally {
        FailureTally {
            before: row(case, "ops/s, no failure", true),
            follower_down: row(case, "ops/s, follower down", true),
            whole: row(case, "ops/s, whole run", true),
            to_write: row(case, "leader kill→write ms", false),
            disconnects: row(case, "disconnects after leader kill", false),
            gap_kept: row(case, "longest write gap ms, clients kept", false),
            gap_all: row(case, "longest write gap ms, all clients", false),
            series: Vec::new(),
            marks: Vec::new(),
            details: serde_json::Map::new(),
        }
    }

    /// `marks` are the events in the order [`run_with_failures`] makes them happen.
    fn add(&mut self, name: &str, result: FailoverResult, marks: Vec<(f64, &'static str)>) {
        let (follower_killed, follower_started) = (marks[0].0, marks[1].0);
        let name = name.to_string();
        let before = result.mean_ops_per_sec(0.0, follower_killed);
        self.before.values.insert(name.clone(), before);
        let down = result.mean_ops_per_sec(follower_killed + 0.5, follower_started);
        self.follower_down.values.insert(name.clone(), down);
        let whole = result.completed as f64 / result.seconds;
        self.whole.values.insert(name.clone(), whole);
        if let Some(ms) = result.leader_kill_to_write_ms {
            self.to_write.values.insert(name.clone(), ms);
        }
        let disconnects = result.disconnects_after_leader_kill as f64;
        self.disconnects.values.insert(name.clone(), disconnects);
        if let Some(ms) = result.longest_write_gap_kept_ms {
            self.gap_kept.values.insert(name.clone(), ms);
        }
        if let Some(ms) = result.longest_write_gap_ms {
            self.gap_all.values.insert(name.clone(), ms);
        }
        for (x, label) in &marks {
            self.marks.push(Mark {
                x: *x,
                label: format!("{name}: {label}"),
                series: self.series.len(),
            });
        }
        self.series.push(timeline_series(&name, &result));
        let details = serde_json::json!({ "result": result, "marks": marks });
        self.details.insert(name, details);
    }
}

fn timeline_series(name: &str, result: &FailoverResult) -> Series {
    let bin = result.bin_ms as f64 / 1000.0;
    Series {
        name: name.to_string(),
        points: result
            .ops_per_sec
            .iter()
            .enumerate()
            .map(|(i, &v)| ((i as f64 + 0.5) * bin, v))
            .collect(),
    }
}

/// Runs the load while the plan's failures happen; returns what the clients measured and
/// when (seconds from the start) each failure actually happened.
async fn run_with_failures(
    server: &mut Launched,
    plan: &FailurePlan,
    spec: &FailoverSpec,
    warmup: Duration,
) -> anyhow::Result<(FailoverResult, Vec<(f64, &'static str)>)> {
    let marks = Arc::new(Marks::after(warmup));
    let load = {
        let (addrs, spec, marks) = (server.addrs.clone(), spec.clone(), marks.clone());
        tokio::spawn(async move { failover::run(&addrs, &spec, marks).await })
    };
    let mut happened = Vec::new();
    let mut mark = |what: &'static str| {
        let now = Instant::now();
        happened.push((marks.seconds(now), what));
        now
    };
    tokio::time::sleep_until((marks.start + plan.step).into()).await;
    let leader = server.leader(LEADER_WAIT).await?;
    let follower = usize::from(leader == 0);
    server.kill(follower);
    let last = mark("follower killed");
    tokio::time::sleep_until((last + plan.step).into()).await;
    server.restart(follower)?;
    let last = mark("follower started");
    tokio::time::sleep_until((last + plan.step).into()).await;
    // Killing the leader before the follower is back would leave no quorum.
    wait_srvr(server.addrs[follower], REJOIN_WAIT).await?;
    let leader = server.leader(LEADER_WAIT).await?;
    let _ = marks.leader_killed.set(Instant::now());
    server.kill(leader);
    let last = mark("leader killed");
    tokio::time::sleep_until((last + plan.step).into()).await;
    server.restart(leader)?;
    let last = mark("leader started");
    tokio::time::sleep_until((last + plan.tail).into()).await;
    marks.stop();
    let result = load.await??;
    Ok((result, happened))
}

/// Waits until the server at `addr` answers `srvr` as serving.
pub(crate) async fn wait_srvr(addr: SocketAddr, limit: Duration) -> anyhow::Result<Duration> {
    let started = Instant::now();
    while crate::ensemble::srvr_async(addr).await.is_none() {
        anyhow::ensure!(
            started.elapsed() < limit,
            "{addr} did not serve again within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(started.elapsed())
}

/// Thesis Fig. 5.4: an ensemble holding K znodes of 300 bytes loses its leader (SIGKILL);
/// measured is the time until a new session on a surviving server completes a create. One
/// ensemble per target is filled in steps; at each size the leader is killed a few times (the
/// median is reported), and each time the old leader is started again and must serve before
/// the next kill.
pub async fn restore(ctx: &Context) -> anyhow::Result<Outcome> {
    let sizes: &[usize] = ctx
        .scale
        .pick(&[500], &[10_000, 100_000], &[10_000, 100_000, 1_000_000]);
    let kills = ctx.scale.pick(1, 3, 5);
    let mut median = Vec::new();
    let mut worst = Vec::new();
    for n in sizes {
        let case = format!("{n} znodes x 300 B");
        median.push(row(&case, "kill→write ms, median", false));
        worst.push(row(&case, "kill→write ms, max", false));
    }
    let mut series = Vec::new();
    let mut details = serde_json::Map::new();
    for target in ctx.real_targets() {
        let dir = target_dir(ctx, "restore", target, "all");
        let mut server = launch(ctx, target, &dir, &durable_settings(&[])).await?;
        prepare(&server, &[("/fill", 0), ("/restore", 0)]).await?;
        let mut filled = 0;
        for (k, &n) in sizes.iter().enumerate() {
            ctx.step(format!("restore with {n} znodes on {}", target.name()));
            let fill_started = Instant::now();
            super::persistence::fill(&server.addrs, n - filled, &format!("r{k}")).await?;
            filled = n;
            let fill_seconds = fill_started.elapsed().as_secs_f64();
            let mut measured = Vec::new();
            for kill in 0..kills {
                prepare(&server, &[]).await?;
                measured.push(restore_once(&mut server, &format!("r{k}-{kill}")).await?);
            }
            let mut ms: Vec<f64> = measured.iter().map(|m| m.kill_to_write_ms).collect();
            ms.sort_by(f64::total_cmp);
            let name = target.name().to_string();
            median[k].values.insert(name.clone(), ms[ms.len() / 2]);
            worst[k].values.insert(name.clone(), ms[ms.len() - 1]);
            crate::plot::add_point(&mut series, &name, (n as f64, ms[ms.len() / 2]));
            details.insert(
                format!("{n}/{name}"),
                serde_json::json!({ "fill_seconds": fill_seconds, "kills": measured }),
            );
        }
        server.stop();
    }
    let rows = median
        .into_iter()
        .zip(worst)
        .flat_map(|(m, w)| [m, w])
        .collect();
    let title = format!(
        "restore: leader killed, time until a write succeeds (median), {}",
        ctx.topology_label()
    );
    let chart = Chart {
        title: &title,
        x: "znodes",
        y: "milliseconds",
    };
    Outcome::charted(ctx, "restore", chart, &series, rows, details)
}

#[derive(Debug, serde::Serialize)]
struct Restored {
    kill_to_write_ms: f64,
    /// Failed probes before the write that succeeded.
    failed_probes: u64,
    /// Which server (1-based) accepted the first write, and which one had led.
    served_by: usize,
    killed_leader: usize,
    /// The old leader's time from its restart until it served again.
    rejoin_ms: f64,
    /// `mntr` of each running server after the new leader settled (zk_last_election_ms …).
    mntr: Vec<std::collections::BTreeMap<String, String>>,
}

/// Kills the leader, probes until a write succeeds, then starts the old leader again.
async fn restore_once(server: &mut Launched, tag: &str) -> anyhow::Result<Restored> {
    let leader = server.leader(LEADER_WAIT).await?;
    let killed = Instant::now();
    server.kill(leader);
    let mut failed_probes = 0u64;
    let mut next = (leader + 1) % server.servers();
    let served_by = loop {
        anyhow::ensure!(
            killed.elapsed() < RESTORE_WAIT,
            "{}: no write succeeded within {RESTORE_WAIT:?} of the leader's death",
            server.target.name()
        );
        if server.is_running(next) {
            let path = format!("/restore/{tag}-{failed_probes}");
            if probe_write(server.addrs[next], path).await {
                break next;
            }
            failed_probes += 1;
            tokio::time::sleep(PROBE_PAUSE).await;
        }
        next = (next + 1) % server.servers();
    };
    let kill_to_write_ms = killed.elapsed().as_secs_f64() * 1000.0;
    let restarted = Instant::now();
    server.restart(leader)?;
    wait_srvr(server.addrs[leader], REJOIN_WAIT).await?;
    let rejoin_ms = restarted.elapsed().as_secs_f64() * 1000.0;
    let mut mntr = Vec::new();
    for &addr in &server.addrs {
        let stats = tokio::task::spawn_blocking(move || crate::ensemble::mntr(addr)).await?;
        mntr.push(stats);
    }
    Ok(Restored {
        kill_to_write_ms,
        failed_probes,
        served_by: served_by + 1,
        killed_leader: leader + 1,
        rejoin_ms,
        mntr,
    })
}

/// Whether a new session on `addr` completes a create of `path`, each step bounded.
async fn probe_write(addr: SocketAddr, path: String) -> bool {
    let Ok(Ok(mut session)) =
        tokio::time::timeout(PROBE_TIMEOUT, Session::open(addr, 10_000)).await
    else {
        return false;
    };
    let create = super::create_request(path, 0, 0);
    let reply = tokio::time::timeout(PROBE_TIMEOUT, session.call(1, &create)).await;
    let ok = matches!(reply, Ok(Ok((header, _))) if header.err == 0);
    if ok {
        let _ = tokio::time::timeout(PROBE_TIMEOUT, session.close()).await;
    }
    ok
}
