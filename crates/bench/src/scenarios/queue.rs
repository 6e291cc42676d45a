//! Thesis Fig. 5.6: a message queue made of sequential znodes. Producers create
//! `/queue/msg-<seq>` with 281 bytes; consumers list `/queue`, then take the lowest message
//! they can by reading and deleting it (a delete that finds nothing means another consumer
//! won). Measured: messages consumed per second, and the time from listing to taking one.
//!
//! Producers stop while [`BACKLOG_MAX`] messages wait, so every target is measured on a queue
//! of the same length. Without the cap a target with faster creates grows a longer queue in
//! the same time, and each take then lists more children: the faster server measured slower
//! (meerkat-diskless standalone grew about 40,000 waiting messages in one run, ZooKeeper
//! about 6,000).

use super::{
    create_request, durable_settings, launch, row, target_dir, Chart, Context, Outcome, PAYLOAD_281,
};
use crate::load::{self, ClientResult};
use crate::wire::Session;
use proto::request::Request;
use proto::response::Response;
use proto::{OpCode, PathAndVersion, PathAndWatch};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Most messages waiting in the queue: producers pause while this many do.
pub const BACKLOG_MAX: i64 = 100;

/// How long a producer pauses when the backlog is full.
const PRODUCER_PAUSE: Duration = Duration::from_millis(1);

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
            // Messages produced and not yet taken, as the clients count them.
            let backlog = Arc::new(AtomicI64::new(0));
            let counted = backlog.clone();
            let result = load::run_clients(
                &server.addrs,
                producers + consumers,
                ctx.scale.warmup(),
                ctx.scale.duration(),
                move |session, c, window| {
                    let backlog = counted.clone();
                    async move {
                        if c < producers {
                            produce(session, window, &backlog).await
                        } else {
                            consume(session, c, window, &backlog).await
                        }
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
                serde_json::json!({
                    "consumers": serde_json::to_value(&result)?,
                    "backlog_at_end": backlog.load(Ordering::Relaxed),
                }),
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

async fn produce(
    mut session: Session,
    window: (Instant, Instant),
    backlog: &AtomicI64,
) -> anyhow::Result<ClientResult> {
    let mut xid = 1;
    while Instant::now() < window.1 {
        if backlog.load(Ordering::Relaxed) >= BACKLOG_MAX {
            tokio::time::sleep(PRODUCER_PAUSE).await;
            continue;
        }
        let (reply, _) = session
            .call(xid, &create_request("/queue/msg-".into(), PAYLOAD_281, 2))
            .await?;
        anyhow::ensure!(reply.err == 0, "enqueue failed with {}", reply.err);
        backlog.fetch_add(1, Ordering::Relaxed);
        xid += 1;
    }
    ClientResult::new(window.1.duration_since(window.0))
}

async fn consume(
    mut session: Session,
    c: usize,
    window: (Instant, Instant),
    backlog: &AtomicI64,
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
                backlog.fetch_sub(1, Ordering::Relaxed);
                result.record(listed_at, window, true)?;
                break;
            }
        }
    }
    Ok(result)
}
