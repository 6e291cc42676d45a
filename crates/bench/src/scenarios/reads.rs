//! Read scenarios.

use super::{
    durable_settings, launch, load_rows, no_errors, prepare, target_dir, timeline_cases, Chart,
    Context, Outcome, PAYLOAD_281,
};
use crate::load::{self, LoadResult, LoadSpec, MakeRequest};
use crate::target::Target;
use proto::request::Request;
use proto::{PathAndWatch, SetDataRequest};
use std::sync::Arc;

/// Thesis Fig. 5.2: 1 and 60 synchronous clients reading a 281-byte znode.
pub async fn sync_get(ctx: &Context) -> anyhow::Result<Outcome> {
    let cases: &[(&str, usize)] = ctx.scale.pick(
        &[("1 client", 1), ("4 clients", 4)],
        &[("1 client", 1), ("60 clients", 60)],
        &[("1 client", 1), ("60 clients", 60)],
    );
    let make: MakeRequest = Arc::new(|_, _| {
        Request::GetData(PathAndWatch {
            path: "/bench".into(),
            watch: false,
        })
    });
    let setup = [("/bench", PAYLOAD_281)];
    timeline_cases(ctx, "sync-get", "281-byte reads", cases, &setup, 1, make).await
}

/// Paper Fig. 5: saturated asynchronous clients (100 requests in flight each), 1 KB reads
/// (getData) and writes (setData) of the client's own znode, the read share from 0 to 100 %.
/// One server (or ensemble) per target runs every share in turn.
pub async fn read_ratio(ctx: &Context) -> anyhow::Result<Outcome> {
    let shares: &[u32] = ctx.scale.pick(
        &[0, 50, 100],
        &[0, 20, 40, 60, 80, 100],
        &[0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100],
    );
    let clients = saturating_clients(ctx);
    let setup = mix_setup(clients);
    let setup: Vec<(&str, usize)> = setup.iter().map(|(p, l)| (p.as_str(), *l)).collect();
    let mut results: Vec<Vec<(Target, LoadResult)>> = vec![Vec::new(); shares.len()];
    for &target in &ctx.targets {
        let dir = target_dir(ctx, "read-ratio", target, "all");
        let server = launch(ctx, target, &dir, &durable_settings(&[])).await?;
        prepare(&server, &setup).await?;
        for (k, &share) in shares.iter().enumerate() {
            ctx.step(format!("read-ratio {share}% reads on {}", target.name()));
            let spec = saturated(ctx, clients, mix(share));
            let result = load::run(&server.addrs, &spec).await?;
            no_errors(target, &result)?;
            results[k].push((target, result));
        }
        server.stop();
    }
    let (mut rows, mut series) = (Vec::new(), Vec::new());
    let mut details = serde_json::Map::new();
    for (&share, results) in shares.iter().zip(&results) {
        let case = format!("{share}% reads");
        for (t, r) in results {
            crate::plot::add_point(&mut series, t.name(), (f64::from(share), r.ops_per_sec));
            details.insert(format!("{case}/{}", t.name()), serde_json::to_value(r)?);
        }
        rows.extend(load_rows(&case, results).into_iter().take(1));
    }
    let title = format!(
        "read-ratio: saturated clients, 1 KB, {}",
        ctx.topology_label()
    );
    let chart = Chart {
        title: &title,
        x: "percentage of reads",
        y: "operations per second",
    };
    Outcome::charted(ctx, "read-ratio", chart, &series, rows, details)
}

/// Saturating clients for the paper's Fig. 5–7 workloads: 2, 8 or 16 (tiny, quick, full),
/// rounded up to a multiple of the servers so each server gets as many.
pub fn saturating_clients(ctx: &Context) -> usize {
    let clients: usize = ctx.scale.pick(2, 8, 16);
    clients.div_ceil(ctx.servers) * ctx.servers
}

/// `/bench` and one 1 KB znode per client, `/bench/c<c>`.
pub fn mix_setup(clients: usize) -> Vec<(String, usize)> {
    std::iter::once(("/bench".to_string(), 0))
        .chain((0..clients).map(|c| (format!("/bench/c{c}"), 1024)))
        .collect()
}

/// Requests on the client's own 1 KB znode, `share` getData in every hundred, the rest
/// setData, in a fixed interleaving.
pub fn mix(share: u32) -> MakeRequest {
    Arc::new(move |c, i| {
        let path = format!("/bench/c{c}");
        if (i % 100) < u64::from(share) {
            Request::GetData(PathAndWatch { path, watch: false })
        } else {
            Request::SetData(SetDataRequest {
                path,
                data: Some(vec![b'r'; 1024]),
                version: -1,
            })
        }
    })
}

/// `clients` sessions with 100 requests each in flight for the scale's duration.
pub fn saturated(ctx: &Context, clients: usize, make: MakeRequest) -> LoadSpec {
    LoadSpec {
        clients,
        window: 100,
        duration: ctx.scale.duration(),
        warmup: ctx.scale.warmup(),
        make,
    }
}
