//! Read scenarios.

use super::{each_target, load_rows, timeline_cases, Chart, Context, Outcome, PAYLOAD_281};
use crate::load::MakeRequest;
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
pub async fn read_ratio(ctx: &Context) -> anyhow::Result<Outcome> {
    let shares: &[u32] = ctx.scale.pick(
        &[0, 50, 100],
        &[0, 20, 40, 60, 80, 100],
        &[0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100],
    );
    let clients = ctx.scale.pick(2, 8, 16);
    let setup: Vec<(String, usize)> = std::iter::once(("/bench".to_string(), 0))
        .chain((0..clients).map(|c| (format!("/bench/c{c}"), 1024)))
        .collect();
    let setup: Vec<(&str, usize)> = setup.iter().map(|(p, l)| (p.as_str(), *l)).collect();
    let mut rows = Vec::new();
    let mut details = serde_json::Map::new();
    let mut series: Vec<crate::plot::Series> = Vec::new();
    for &share in shares {
        let case = format!("{share}% reads");
        let make: MakeRequest = Arc::new(move |c, i| {
            // A fixed interleaving with exactly `share` reads in every hundred requests.
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
        });
        let results = each_target(ctx, "read-ratio", &case, &setup, clients, 100, make).await?;
        for (t, r) in &results {
            crate::plot::add_point(&mut series, t.name(), (f64::from(share), r.ops_per_sec));
            details.insert(format!("{case}/{}", t.name()), serde_json::to_value(r)?);
        }
        rows.extend(load_rows(&case, &results).into_iter().take(1));
    }
    let chart = Chart {
        title: "read-ratio: saturated clients, 1 KB, standalone",
        x: "percentage of reads",
        y: "operations per second",
    };
    Outcome::charted(ctx, "read-ratio", chart, &series, rows, details)
}
