//! Where clients connect, and what the leader alone can push: the ZooKeeper paper's Fig. 6
//! (clients on the leader only, against clients spread over every server) and Fig. 7 (the
//! throughput of writes that enter at the leader, against the ensemble's size).
//!
//! Fig. 7 measured Zab's atomic broadcast in isolation, inside the server. Neither meerkat nor
//! ZooKeeper exposes that from outside, so `broadcast` approximates it with clients connected
//! to the leader that only write: every request is proposed, logged and acknowledged by a
//! quorum, with the request path of one server on top.

use super::reads::{mix, mix_setup, saturated, saturating_clients};
use super::{durable_settings, no_errors, prepare, row, target_dir, Chart, Context, Outcome};
use crate::load::{self, LoadResult};
use crate::plot::Series;
use crate::target::{self, Target};
use std::time::Duration;

/// How long to wait for an ensemble to name its leader.
pub const LEADER_WAIT: Duration = Duration::from_secs(30);

/// Paper Fig. 6: saturated clients, 1 KB, the read share swept, with the clients spread over
/// every server and then all connected to the leader.
pub async fn leader_only(ctx: &Context) -> anyhow::Result<Outcome> {
    let shares: &[u32] = ctx
        .scale
        .pick(&[0, 100], &[0, 50, 100], &[0, 20, 40, 60, 80, 100]);
    let clients = saturating_clients(ctx);
    let setup = mix_setup(clients);
    let setup: Vec<(&str, usize)> = setup.iter().map(|(p, l)| (p.as_str(), *l)).collect();
    let mut measured: Vec<(u32, &str, Target, LoadResult)> = Vec::new();
    for target in ctx.real_targets() {
        let dir = target_dir(ctx, "leader-only", target, "all");
        let server = super::launch(ctx, target, &dir, &durable_settings(&[])).await?;
        prepare(&server, &setup).await?;
        let leader = server.leader(LEADER_WAIT).await?;
        for &share in shares {
            let placements = [
                ("spread", server.addrs.clone()),
                ("leader only", vec![server.addrs[leader]]),
            ];
            for (placement, addrs) in placements {
                ctx.step(format!(
                    "leader-only {share}% reads, {placement}, on {}",
                    target.name()
                ));
                let mut spec = saturated(ctx, clients, mix(share));
                spec.duration = sweep_duration(ctx);
                let result = load::run(&addrs, &spec).await?;
                no_errors(target, &result)?;
                measured.push((share, placement, target, result));
            }
        }
        server.stop();
    }
    let (mut rows, mut series) = (Vec::new(), Vec::new());
    let mut details = serde_json::Map::new();
    for &share in shares {
        for placement in ["spread", "leader only"] {
            let case = format!("{share}% reads, {placement}");
            let mut throughput = row(&case, "ops/s", true);
            for (_, _, target, r) in measured.iter().filter(|m| m.0 == share && m.1 == placement) {
                throughput
                    .values
                    .insert(target.name().into(), r.ops_per_sec);
                let name = format!("{}, {placement}", target.name());
                crate::plot::add_point(&mut series, &name, (f64::from(share), r.ops_per_sec));
                details.insert(
                    format!("{case}/{}", target.name()),
                    serde_json::to_value(r)?,
                );
            }
            rows.push(throughput);
        }
    }
    let title = format!(
        "leader-only: saturated clients, 1 KB, {}",
        ctx.topology_label()
    );
    let chart = Chart {
        title: &title,
        x: "percentage of reads",
        y: "operations per second",
    };
    Outcome::charted(ctx, "leader-only", chart, &series, rows, details)
}

/// Each point of a sweep that runs many points on one ensemble: shorter than a scenario's
/// single measurement, so the sweep stays within the scale's budget.
fn sweep_duration(ctx: &Context) -> Duration {
    ctx.scale.pick(
        Duration::from_secs(1),
        Duration::from_secs(5),
        Duration::from_secs(20),
    )
}

/// Ensemble sizes `broadcast` measures: 1 (standalone, the baseline), then odd sizes up to
/// `--servers`, and `--servers` itself.
pub fn broadcast_sizes(servers: usize) -> Vec<usize> {
    let mut sizes: Vec<usize> = (1..=servers).step_by(2).collect();
    if sizes.last() != Some(&servers) {
        sizes.push(servers);
    }
    sizes
}

/// Paper Fig. 7, approximated: saturated clients, all on the leader, only writing 1 KB
/// (setData), for each ensemble size up to `--servers`.
pub async fn broadcast(ctx: &Context) -> anyhow::Result<Outcome> {
    let clients = saturating_clients(ctx);
    let setup = mix_setup(clients);
    let setup: Vec<(&str, usize)> = setup.iter().map(|(p, l)| (p.as_str(), *l)).collect();
    let (mut rows, mut series): (Vec<_>, Vec<Series>) = (Vec::new(), Vec::new());
    let mut details = serde_json::Map::new();
    for size in broadcast_sizes(ctx.servers) {
        let case = if size == 1 {
            "1 server (standalone)".to_string()
        } else {
            format!("{size} servers")
        };
        let mut throughput = row(&case, "writes/s", true);
        let mut p99 = row(&case, "p99 ms", false);
        for target in ctx.real_targets() {
            ctx.step(format!("broadcast, {case}, on {}", target.name()));
            let dir = target_dir(ctx, "broadcast", target, &size.to_string());
            let settings = durable_settings(&[]);
            let server = target::launch(target, &ctx.programs, &dir, &settings, size).await?;
            prepare(&server, &setup).await?;
            let leader = server.leader(LEADER_WAIT).await?;
            let spec = saturated(ctx, clients, mix(0));
            let result = load::run(&[server.addrs[leader]], &spec).await?;
            no_errors(target, &result)?;
            server.stop();
            throughput
                .values
                .insert(target.name().into(), result.ops_per_sec);
            p99.values
                .insert(target.name().into(), result.p99_us as f64 / 1000.0);
            crate::plot::add_point(
                &mut series,
                target.name(),
                (size as f64, result.ops_per_sec),
            );
            details.insert(
                format!("{case}/{}", target.name()),
                serde_json::to_value(&result)?,
            );
        }
        rows.extend([throughput, p99]);
    }
    let chart = Chart {
        title: "broadcast: 1 KB writes entering at the leader",
        x: "servers",
        y: "writes per second",
    };
    Outcome::charted(ctx, "broadcast", chart, &series, rows, details)
}

#[cfg(test)]
mod tests {
    use super::broadcast_sizes;

    #[test]
    fn broadcast_sizes_are_odd_up_to_the_ensemble() {
        assert_eq!(broadcast_sizes(1), vec![1]);
        assert_eq!(broadcast_sizes(3), vec![1, 3]);
        assert_eq!(broadcast_sizes(4), vec![1, 3, 4]);
        assert_eq!(broadcast_sizes(5), vec![1, 3, 5]);
    }
}
