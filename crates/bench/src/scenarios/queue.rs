//! Thesis Fig. 5.6: a message queue made of sequential znodes. Producers create
//! `/queue/msg-<seq>` with 281 bytes; consumers list `/queue`, then take the lowest message
//! they can by reading and deleting it (a delete that finds nothing means another consumer
//! won). Measured: messages consumed per second, and the time from listing to taking one.

use super::{
    create_request, durable_settings, launch, row, target_dir, Chart, Context, Outcome, PAYLOAD_281,
};
use crate::load::{self, ClientResult};
use crate::wire::Session;
use proto::request::Request;
use proto::response::Response;
use proto::{OpCode, PathAndVersion, PathAndWatch};
use std::time::{Duration, Instant};

pub async fn queue(ctx: &Context) -> anyhow::Result<Outcome> {
    let cases: &[(usize, usize)] = ctx.scale.pick(
        &[(1, 1), (2, 2)],
        &[(1, 1), (4, 4)],
        &[(1, 1), (4, 4), (16, 16)],
    );
    let mut rows = Vec::new();
    let mut details = serde_json::Map::new();
    let mut series: Vec<crate::plot::Series> = Vec::new();
    for &(producers, consumers) in cases {
        let case = format!("{producers} producers, {consumers} consumers");
        let mut consumed = row(&case, "msgs/s consumed", true);
        let mut p99 = row(&case, "take p99 ms", false);
        for target in ctx.real_targets() {
            ctx.step(format!("queue {case} on {}", target.name()));
            let dir = target_dir(ctx, "queue", target, &case);
            let server = launch(ctx, target, &dir, &durable_settings(&[])).await?;
            super::prepare(&server, &[("/queue", 0)]).await?;
            let result = load::run_clients(
                &server.addrs,
                producers + consumers,
                ctx.scale.warmup(),
                ctx.scale.duration(),
                move |session, c, window| async move {
                    if c < producers {
                        produce(session, window).await
                    } else {
                        consume(session, c, window).await
                    }
                },
            )
            .await?;
            server.stop();
            // Only consumers record operations; producers return empty results.
            consumed
                .values
                .insert(target.name().into(), result.ops_per_sec);
            p99.values
                .insert(target.name().into(), result.p99_us as f64 / 1000.0);
            crate::plot::add_point(
                &mut series,
                target.name(),
                ((producers + consumers) as f64, result.ops_per_sec),
            );
            details.insert(
                format!("{case}/{}", target.name()),
                serde_json::to_value(&result)?,
            );
        }
        rows.extend([consumed, p99]);
    }
    let chart = Chart {
        title: "queue: sequential-znode message queue",
        x: "producers + consumers",
        y: "messages consumed per second",
    };
    Outcome::charted(ctx, "queue", chart, &series, rows, details)
}

async fn produce(mut session: Session, window: (Instant, Instant)) -> anyhow::Result<ClientResult> {
    let mut xid = 1;
    while Instant::now() < window.1 {
        let (reply, _) = session
            .call(xid, &create_request("/queue/msg-".into(), PAYLOAD_281, 2))
            .await?;
        anyhow::ensure!(reply.err == 0, "enqueue failed with {}", reply.err);
        xid += 1;
    }
    ClientResult::new(window.1.duration_since(window.0))
}

async fn consume(
    mut session: Session,
    c: usize,
    window: (Instant, Instant),
) -> anyhow::Result<ClientResult> {
    let mut result = ClientResult::new(window.1.duration_since(window.0))?;
    let mut xid = 1;
    let mut next_xid = || {
        xid += 1;
        xid
    };
    while Instant::now() < window.1 {
        let listed_at = Instant::now();
        let (reply, body) = session
            .call(
                next_xid(),
                &Request::GetChildren(PathAndWatch {
                    path: "/queue".into(),
                    watch: false,
                }),
            )
            .await?;
        anyhow::ensure!(reply.err == 0, "list failed with {}", reply.err);
        let mut names = match Response::decode(OpCode::GetChildren, &body)? {
            Response::GetChildren(r) => r.children,
            other => anyhow::bail!("unexpected list reply {other:?}"),
        };
        if names.is_empty() {
            tokio::time::sleep(Duration::from_millis(1)).await;
            continue;
        }
        names.sort();
        // Consumers start at different messages so they do not all race for the first one.
        let start = c % names.len().min(8);
        for name in names.iter().skip(start).take(8) {
            let path = format!("/queue/{name}");
            let (read, _) = session
                .call(
                    next_xid(),
                    &Request::GetData(PathAndWatch {
                        path: path.clone(),
                        watch: false,
                    }),
                )
                .await?;
            if read.err != 0 {
                continue;
            }
            let (taken, _) = session
                .call(
                    next_xid(),
                    &Request::Delete(PathAndVersion { path, version: -1 }),
                )
                .await?;
            if taken.err == 0 {
                result.record(listed_at, window, true)?;
                break;
            }
        }
    }
    Ok(result)
}
