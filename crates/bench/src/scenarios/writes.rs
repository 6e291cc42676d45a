//! Write scenarios, all with forceSync=yes: every acknowledged write is on disk.

use super::{create_request, row, timeline_cases, Chart, Context, Outcome, PAYLOAD_281};
use crate::load::{self, MakeRequest};
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

/// Thesis Fig. 5.5: the servers' CPU use under 60 synchronous creating clients, and writes per
/// CPU-second (the load generator's own CPU is reported too).
pub async fn cpu(ctx: &Context) -> anyhow::Result<Outcome> {
    let clients = ctx.scale.pick(4, 60, 60);
    let mut cores = row("60 sync clients", "server CPU cores", false);
    let mut per_cpu = row("60 sync clients", "creates/CPU-s", true);
    let mut rate = row("60 sync clients", "creates/s", true);
    let mut generator = row("60 sync clients", "generator cores", false);
    let mut details = serde_json::Map::new();
    let mut series = Vec::new();
    for target in ctx.real_targets() {
        ctx.step(format!("cpu on {}", target.name()));
        let dir = super::target_dir(ctx, "cpu", target, "60");
        let server = super::launch(ctx, target, &dir, &super::durable_settings(&[])).await?;
        super::prepare(&server, &[("/bench", 0)]).await?;
        let pids = server.pids();
        anyhow::ensure!(!pids.is_empty(), "no server process");
        let total = ctx.scale.warmup() + ctx.scale.duration();
        let sampler = tokio::spawn(sample_cpu(pids.clone(), total));
        let before = pids_cpu_seconds(&pids, 0.0);
        let started = std::time::Instant::now();
        let make: MakeRequest =
            Arc::new(|c, i| create_request(format!("/bench/c{c}-{i}-"), PAYLOAD_281, 3));
        let spec = load::LoadSpec {
            clients,
            window: 1,
            duration: ctx.scale.duration(),
            warmup: ctx.scale.warmup(),
            make,
        };
        let result = load::run(&server.addrs, &spec).await?;
        let used = pids_cpu_seconds(&pids, before) - before;
        let wall = started.elapsed().as_secs_f64();
        let samples = sampler.await?;
        server.stop();
        let server_cores = used / wall;
        cores.values.insert(target.name().into(), server_cores);
        rate.values.insert(target.name().into(), result.ops_per_sec);
        per_cpu.values.insert(
            target.name().into(),
            if used > 0.0 {
                result.ops as f64 / (used * result.seconds / wall)
            } else {
                0.0
            },
        );
        generator
            .values
            .insert(target.name().into(), result.generator_cpu);
        series.push(crate::plot::Series {
            name: target.name().into(),
            points: samples.clone(),
        });
        details.insert(target.name().into(), serde_json::json!({ "load": result, "server_cpu_seconds": used, "wall_seconds": wall, "cpu_timeline": samples }));
    }
    let chart = Chart {
        title: "cpu: server CPU under 60 synchronous clients",
        x: "time (s)",
        y: "CPU cores used",
    };
    let rows = vec![rate, cores, per_cpu, generator];
    Outcome::charted(ctx, "cpu", chart, &series, rows, details)
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
