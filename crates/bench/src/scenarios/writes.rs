//! Write scenarios, all with forceSync=yes: every acknowledged write is on disk (for
//! `meerkat-diskless`, which has no log: in the memory of a quorum).

use super::{create_request, row, timeline_cases, Chart, Context, Outcome, PAYLOAD_281};
use crate::load::{self, LoadResult, MakeRequest};
use crate::report::Row;
use crate::target::Target;
use std::sync::Arc;

/// Thesis Fig. 5.1: 1 and 60 synchronous clients creating 281-byte ephemeral-sequential znodes.
pub async fn sync_create(ctx: &Context) -> anyhow::Result<Outcome> {
    let cases: &[(&str, usize)] = ctx.scale.pick(
        &[("1 client", 1), ("4 clients", 4)],
        &[("1 client", 1), ("60 clients", 60)],
        &[("1 client", 1), ("60 clients", 60)],
    );
    creates(ctx, "sync-create", cases, 1, 3).await
}

/// Group commit: 8 clients with 32 creates each in flight.
pub async fn group_commit(ctx: &Context) -> anyhow::Result<Outcome> {
    creates(
        ctx,
        "group-commit",
        &[("8 clients x 32 in flight", 8)],
        32,
        2,
    )
    .await
}

async fn creates(
    ctx: &Context,
    scenario: &str,
    cases: &[(&str, usize)],
    window: usize,
    flags: i32,
) -> anyhow::Result<Outcome> {
    let make: MakeRequest =
        Arc::new(move |c, i| create_request(format!("/bench/c{c}-{i}-"), PAYLOAD_281, flags));
    let setup = [("/bench", 0)];
    timeline_cases(
        ctx,
        scenario,
        "281-byte creates",
        cases,
        &setup,
        window,
        make,
    )
    .await
}

/// Paper Table 2: workers each doing a synchronous create then an asynchronous delete;
/// average create latency for 1, 10 and 20 workers.
pub async fn create_latency(ctx: &Context) -> anyhow::Result<Outcome> {
    let workers: &[usize] = ctx.scale.pick(&[1, 2, 4], &[1, 10, 20], &[1, 10, 20]);
    let mut rows = Vec::new();
    let mut details = serde_json::Map::new();
    let mut series: Vec<crate::plot::Series> = Vec::new();
    for &n in workers {
        let case = format!("{n} workers");
        let mut mean = row(&case, "create mean ms", false);
        let mut rate = row(&case, "creates/s", true);
        for &target in &ctx.targets {
            ctx.step(format!("create-latency {case} on {}", target.name()));
            let dir = super::target_dir(ctx, "create-latency", target, &case);
            let server = super::launch(ctx, target, &dir, &super::durable_settings(&[])).await?;
            super::prepare(&server, &[("/bench", 0)]).await?;
            let result = load::run_clients(
                &server.addrs,
                n,
                ctx.scale.warmup(),
                ctx.scale.duration(),
                |session, c, window| load::create_then_delete(session, c, PAYLOAD_281, window),
            )
            .await?;
            server.stop();
            mean.values
                .insert(target.name().into(), result.mean_us / 1000.0);
            rate.values.insert(target.name().into(), result.ops_per_sec);
            crate::plot::add_point(
                &mut series,
                target.name(),
                (n as f64, result.mean_us / 1000.0),
            );
            details.insert(
                format!("{case}/{}", target.name()),
                serde_json::to_value(&result)?,
            );
        }
        rows.extend([mean, rate]);
    }
    let chart = Chart {
        title: "create-latency: synchronous create, asynchronous delete",
        x: "workers",
        y: "mean create latency (ms)",
    };
    Outcome::charted(ctx, "create-latency", chart, &series, rows, details)
}

/// Creates per second of cpu's fixed-rate case unless --rate says otherwise.
pub fn default_rate(ctx: &Context) -> u32 {
    ctx.scale.pick(100, 1_000, 1_000)
}

/// Thesis Fig. 5.5: the servers' CPU use (every server of an ensemble together) under
/// synchronous creating clients, first saturating the target, then at a fixed rate of creates
/// so that every target does the same work; writes per CPU-second for both, and the load
/// generator's own CPU.
pub async fn cpu(ctx: &Context) -> anyhow::Result<Outcome> {
    let clients = ctx.scale.pick(4, 60, 60);
    let rate = ctx.rate.unwrap_or_else(|| default_rate(ctx));
    let cases = [
        (format!("{clients} sync clients"), None, "cpu"),
        (format!("{clients} sync, {rate}/s"), Some(rate), "cpu-rate"),
    ];
    let (mut rows, mut plots) = (Vec::new(), Vec::new());
    let mut details = serde_json::Map::new();
    let targets = ctx.real_targets();
    for (case, rate, plot) in &cases {
        let mut rounds = Vec::new();
        let mut series = Vec::new();
        for round in 0..ctx.rounds {
            let mut tally = CpuTally::new(case);
            // Each round another target goes first (see `--rounds`).
            for i in 0..targets.len() {
                let target = targets[(i + round) % targets.len()];
                ctx.step(format!("cpu {case} on {}", target.name()));
                let measured = measure_cpu(ctx, target, clients, *rate).await?;
                tally.add(target, &measured);
                let key = match round {
                    0 => format!("{case}/{}", target.name()),
                    r => format!("{case}/{}/round {}", target.name(), r + 1),
                };
                if round == 0 {
                    series.push(crate::plot::Series {
                        name: target.name().into(),
                        points: measured.samples.clone(),
                    });
                }
                details.insert(key, measured.to_json()?);
            }
            rounds.push(tally.rows(rate.is_some()));
        }
        rows.extend(medians(rounds));
        let title = match rate {
            None => format!(
                "cpu: server CPU under {clients} synchronous clients, {}",
                ctx.topology_label()
            ),
            Some(r) => format!(
                "cpu: server CPU at {r} creates/s ({clients} clients), {}",
                ctx.topology_label()
            ),
        };
        let path = ctx.plot_path(plot);
        crate::plot::line_chart(&path, &title, "time (s)", "CPU cores used", &series)?;
        plots.push(path);
    }
    Ok(Outcome {
        rows,
        details: serde_json::Value::Object(details),
        plots,
    })
}

/// What one cpu measurement found.
struct CpuMeasured {
    load: LoadResult,
    /// CPU seconds every server process used from the first request to the last reply.
    server_cpu_seconds: f64,
    wall_seconds: f64,
    /// (seconds, cores) every half second.
    samples: Vec<(f64, f64)>,
    /// Snapshots the servers finished during the run, and the milliseconds they took, all
    /// servers together (from `mntr`: zk_cnt_snapshottime, zk_sum_snapshottime).
    snapshots: SnapshotWork,
    /// Each server's CPU µs per create over the measured window (after the warm-up), in
    /// server order, and which of them led.
    per_server_us: Vec<f64>,
    leader: usize,
}

/// Snapshot counters summed over every server's `mntr`.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
struct SnapshotWork {
    taken: f64,
    millis: f64,
}

impl SnapshotWork {
    async fn of(server: &crate::target::Launched) -> anyhow::Result<SnapshotWork> {
        let mut work = SnapshotWork::default();
        for &addr in &server.addrs {
            let mntr = tokio::task::spawn_blocking(move || crate::ensemble::mntr(addr)).await?;
            let number = |key: &str| mntr.get(key).and_then(|v| v.parse::<f64>().ok());
            work.taken += number("zk_cnt_snapshottime").unwrap_or(0.0);
            work.millis += number("zk_sum_snapshottime").unwrap_or(0.0);
        }
        Ok(work)
    }

    fn since(self, before: SnapshotWork) -> SnapshotWork {
        SnapshotWork {
            taken: self.taken - before.taken,
            millis: self.millis - before.millis,
        }
    }
}

impl CpuMeasured {
    fn to_json(&self) -> anyhow::Result<serde_json::Value> {
        Ok(serde_json::json!({
            "load": serde_json::to_value(&self.load)?,
            "server_cpu_seconds": self.server_cpu_seconds,
            "wall_seconds": self.wall_seconds,
            "cpu_timeline": self.samples,
            "snapshots": self.snapshots,
            "per_server_cpu_us_per_op": self.per_server_us,
            "leader": self.leader,
        }))
    }

    fn leader_us(&self) -> Option<f64> {
        self.per_server_us.get(self.leader).copied()
    }

    /// The followers' mean CPU µs per create (none standalone).
    fn follower_us(&self) -> Option<f64> {
        let followers: Vec<f64> = (self.per_server_us.iter().enumerate())
            .filter(|(i, _)| *i != self.leader)
            .map(|(_, us)| *us)
            .collect();
        (!followers.is_empty()).then(|| followers.iter().sum::<f64>() / followers.len() as f64)
    }

    /// The creates/s this target would reach with a core per server process, if CPU were
    /// all that limited it: the busiest server's CPU per create sets the pace.
    fn projected_per_core(&self) -> Option<f64> {
        let busiest = self.per_server_us.iter().copied().fold(0.0, f64::max);
        (busiest > 0.0).then(|| 1e6 / busiest)
    }

    /// Creates per CPU-second of the servers, over the measured part of the run.
    fn per_cpu_second(&self) -> f64 {
        let measured_share = self.load.seconds / self.wall_seconds;
        let used = self.server_cpu_seconds * measured_share;
        if used > 0.0 {
            self.load.ops as f64 / used
        } else {
            0.0
        }
    }
}

/// The cpu scenario's rows for one case, a target at a time.
struct CpuTally {
    rate: Row,
    cores: Row,
    per_cpu: Row,
    p99: Row,
    generator: Row,
    snapshots: Row,
    snapshot_share: Row,
    leader_us: Row,
    follower_us: Row,
    projected: Row,
}

impl CpuTally {
    fn new(case: &str) -> CpuTally {
        CpuTally {
            rate: row(case, "creates/s", true),
            cores: row(case, "server CPU cores", false),
            per_cpu: row(case, "creates/CPU-s", true),
            p99: row(case, "p99 ms", false),
            generator: row(case, "generator cores", false),
            snapshots: row(case, "snapshots taken", false),
            snapshot_share: row(case, "snapshot busy, cores", false),
            leader_us: row(case, "leader CPU µs/create", false),
            follower_us: row(case, "follower CPU µs/create", false),
            projected: row(case, "creates/s, a core per server (projected)", true),
        }
    }

    fn add(&mut self, target: Target, m: &CpuMeasured) {
        let name = target.name().to_string();
        let cores = m.server_cpu_seconds / m.wall_seconds;
        self.rate.values.insert(name.clone(), m.load.ops_per_sec);
        self.cores.values.insert(name.clone(), cores);
        self.per_cpu.values.insert(name.clone(), m.per_cpu_second());
        let p99_ms = m.load.p99_us as f64 / 1000.0;
        self.p99.values.insert(name.clone(), p99_ms);
        self.generator
            .values
            .insert(name.clone(), m.load.generator_cpu);
        self.snapshots
            .values
            .insert(name.clone(), m.snapshots.taken);
        let busy = m.snapshots.millis / 1000.0 / m.wall_seconds;
        self.snapshot_share.values.insert(name.clone(), busy);
        if let Some(us) = m.leader_us() {
            self.leader_us.values.insert(name.clone(), us);
        }
        if let Some(us) = m.follower_us() {
            self.follower_us.values.insert(name.clone(), us);
        }
        if let Some(projected) = m.projected_per_core() {
            self.projected.values.insert(name, projected);
        }
    }

    /// At a fixed rate the latency says whether the target kept up easily; saturated, the
    /// generator's share says whether the generator was the limit. The snapshot rows show
    /// what diskless mode's busy snapshots cost (snapshot threads busy, in cores: time spent
    /// writing snapshots per second of the run, which includes waiting for the disk).
    fn rows(self, fixed_rate: bool) -> Vec<Row> {
        let last = if fixed_rate { self.p99 } else { self.generator };
        let mut rows = vec![self.rate, self.cores, self.per_cpu, self.leader_us];
        if !self.follower_us.values.is_empty() {
            rows.push(self.follower_us);
        }
        rows.extend([self.projected, last, self.snapshots, self.snapshot_share]);
        rows
    }
}

/// Each figure's median over rounds of the same rows (the upper middle of an even count).
fn medians(rounds: Vec<Vec<Row>>) -> Vec<Row> {
    let mut rounds = rounds.into_iter();
    let Some(mut rows) = rounds.next() else {
        return Vec::new();
    };
    let rest: Vec<Vec<Row>> = rounds.collect();
    for (i, row) in rows.iter_mut().enumerate() {
        for (target, value) in row.values.iter_mut() {
            let mut all: Vec<f64> = std::iter::once(*value)
                .chain(
                    rest.iter()
                        .filter_map(|r| r.get(i)?.values.get(target).copied()),
                )
                .collect();
            all.sort_by(f64::total_cmp);
            *value = all[all.len() / 2];
        }
    }
    rows
}

/// Starts `target`, runs `clients` synchronous creating clients (at `rate` creates/s together,
/// or as fast as they can), and measures every server process's CPU meanwhile.
async fn measure_cpu(
    ctx: &Context,
    target: Target,
    clients: usize,
    rate: Option<u32>,
) -> anyhow::Result<CpuMeasured> {
    let case = rate.map_or("saturated".to_string(), |r| format!("rate-{r}"));
    let dir = super::target_dir(ctx, "cpu", target, &case);
    let server = super::launch(ctx, target, &dir, &super::durable_settings(&[])).await?;
    super::prepare(&server, &[("/bench", 0)]).await?;
    let pids = server.pids();
    anyhow::ensure!(!pids.is_empty(), "no server process");
    anyhow::ensure!(
        pids.len() == server.servers(),
        "a server of {} is not running",
        target.name()
    );
    let leader = server.leader(std::time::Duration::from_secs(10)).await?;
    // ZooKeeper's JIT compiles its hot paths only after thousands of requests: measure after
    // a warm-up long enough for it.
    let warmup = if ctx.scale.tiny {
        ctx.scale.warmup()
    } else {
        ctx.scale.warmup().max(std::time::Duration::from_secs(5))
    };
    let total = warmup + ctx.scale.duration();
    let snapshots_before = SnapshotWork::of(&server).await?;
    let sampler = tokio::spawn(sample_cpu(pids.clone(), total));
    let before = pids_cpu_seconds(&pids, 0.0);
    let started = std::time::Instant::now();
    let warm_pids = pids.clone();
    let at_warm = tokio::spawn(async move {
        tokio::time::sleep(warmup).await;
        each_pid_cpu_seconds(&warm_pids)
    });
    let make: MakeRequest =
        Arc::new(|c, i| create_request(format!("/bench/c{c}-{i}-"), PAYLOAD_281, 3));
    let spec = load::LoadSpec {
        clients,
        window: 1,
        duration: ctx.scale.duration(),
        warmup,
        make,
    };
    let load = match rate {
        None => load::run(&server.addrs, &spec).await?,
        Some(rate) => load::run_paced(&server.addrs, &spec, rate).await?,
    };
    let used = pids_cpu_seconds(&pids, before) - before;
    let per_server_us = each_pid_cpu_seconds(&pids)
        .iter()
        .zip(at_warm.await?)
        .map(|(after, warm)| (after - warm) * 1e6 / load.ops.max(1) as f64)
        .collect();
    let wall_seconds = started.elapsed().as_secs_f64();
    let samples = sampler.await?;
    let snapshots = SnapshotWork::of(&server).await?.since(snapshots_before);
    server.stop();
    super::no_errors(target, &load)?;
    Ok(CpuMeasured {
        load,
        server_cpu_seconds: used,
        wall_seconds,
        samples,
        snapshots,
        per_server_us,
        leader,
    })
}

/// CPU seconds each of `pids` has used (0 for one that cannot be read).
fn each_pid_cpu_seconds(pids: &[u32]) -> Vec<f64> {
    pids.iter()
        .map(|&pid| crate::cpu::pid_cpu_seconds(pid).unwrap_or(0.0))
        .collect()
}

/// CPU seconds all of `pids` have used (`fallback` if any cannot be read).
fn pids_cpu_seconds(pids: &[u32], fallback: f64) -> f64 {
    pids.iter()
        .map(|&pid| crate::cpu::pid_cpu_seconds(pid))
        .sum::<Option<f64>>()
        .unwrap_or(fallback)
}

/// CPU cores used by `pids` together (every server of an ensemble), sampled each half second.
async fn sample_cpu(pids: Vec<u32>, total: std::time::Duration) -> Vec<(f64, f64)> {
    let step = std::time::Duration::from_millis(500);
    let started = std::time::Instant::now();
    let mut last = pids_cpu_seconds(&pids, 0.0);
    let mut points = Vec::new();
    while started.elapsed() < total {
        tokio::time::sleep(step).await;
        let now = pids_cpu_seconds(&pids, last);
        points.push((
            started.elapsed().as_secs_f64(),
            (now - last) / step.as_secs_f64(),
        ));
        last = now;
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(values: &[(&str, f64)]) -> Vec<Row> {
        let mut r = row("case", "metric", false);
        for (target, v) in values {
            r.values.insert((*target).into(), *v);
        }
        vec![r]
    }

    #[test]
    fn a_figure_over_rounds_is_its_median() {
        let rounds = vec![
            rows(&[("a", 10.0), ("b", 5.0)]),
            rows(&[("a", 30.0), ("b", 7.0)]),
            rows(&[("a", 20.0)]),
        ];
        let m = medians(rounds);
        assert_eq!(m[0].values["a"], 20.0);
        // b was measured twice: the upper middle of two.
        assert_eq!(m[0].values["b"], 7.0);
        assert!(medians(Vec::new()).is_empty());
    }
}
