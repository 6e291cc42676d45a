//! Paper Table 3: double barriers (§2.4). `n` clients enter a barrier together and leave it
//! together, round after round:
//!
//! * enter: create the ephemeral `/barrier/r<k>/c<i>`; whoever then counts all `n` creates
//!   `/barrier/r<k>/ready`, and everyone else waits for it with an exists watch (counting with
//!   a child watch instead would deadlock: an early leaver lowers the count a slow enterer sees);
//! * leave: delete it, then list with a watch until no client node is left.
//!
//! Measured: barrier rounds completed per second and the time of a round, for every client.

use super::{durable_settings, launch, open_acl, row, target_dir, Chart, Context, Outcome};
use crate::wire::Session;
use anyhow::Context as _;
use proto::jute::{Reader, Record};
use proto::request::Request;
use proto::response::Response;
use proto::{CreateRequest, OpCode, PathAndVersion, PathAndWatch, ReplyHeader};
use std::time::{Duration, Instant};

pub async fn barrier(ctx: &Context) -> anyhow::Result<Outcome> {
    let cases: &[usize] = ctx.scale.pick(&[3], &[10, 20], &[50, 100, 200]);
    let rounds = ctx.scale.pick(3, 20, 50);
    let mut rows = Vec::new();
    let mut details = serde_json::Map::new();
    let mut series: Vec<crate::plot::Series> = Vec::new();
    for &n in cases {
        let case = format!("{n} clients");
        let mut rate = row(&case, "barriers/s", true);
        let mut round_ms = row(&case, "round ms", false);
        for target in ctx.real_targets() {
            ctx.step(format!("barrier {case} on {}", target.name()));
            let dir = target_dir(ctx, "barrier", target, &case);
            let server = launch(ctx, target, &dir, &durable_settings(&[])).await?;
            let round_paths: Vec<String> = std::iter::once("/barrier".to_string())
                .chain((0..rounds).map(|k| format!("/barrier/r{k}")))
                .collect();
            let setup: Vec<(&str, usize)> = round_paths.iter().map(|p| (p.as_str(), 0)).collect();
            super::prepare(&server, &setup)
                .await
                .context("create the barriers")?;
            let mut sessions = Vec::with_capacity(n);
            for i in 0..n {
                let addr = server.addrs[i % server.addrs.len()];
                sessions.push(Session::open(addr, 30_000).await?);
            }
            let started = Instant::now();
            let tasks: Vec<_> = sessions
                .into_iter()
                .enumerate()
                .map(|(i, s)| tokio::spawn(client(s, i, n, rounds)))
                .collect();
            let mut failures = Vec::new();
            for t in tasks {
                if let Err(e) = t.await? {
                    failures.push(format!("{e:#}"));
                }
            }
            anyhow::ensure!(
                failures.is_empty(),
                "barrier clients of {} failed: {}",
                target.name(),
                failures.join("; ")
            );
            let secs = started.elapsed().as_secs_f64();
            server.stop();
            rate.values
                .insert(target.name().into(), rounds as f64 / secs);
            round_ms
                .values
                .insert(target.name().into(), secs * 1000.0 / rounds as f64);
            crate::plot::add_point(&mut series, target.name(), (n as f64, rounds as f64 / secs));
            details.insert(
                format!("{case}/{}", target.name()),
                serde_json::json!({ "clients": n, "rounds": rounds, "seconds": secs }),
            );
        }
        rows.extend([rate, round_ms]);
    }
    let chart = Chart {
        title: "barrier: double barriers, enter and leave together",
        x: "clients",
        y: "barriers per second",
    };
    Outcome::charted(ctx, "barrier", chart, &series, rows, details)
}

/// A limit on waiting for the others, so a lost notification fails the run instead of hanging.
const WAIT_MAX: Duration = Duration::from_secs(15);

async fn client(mut s: Session, i: usize, n: usize, rounds: usize) -> anyhow::Result<()> {
    let mut xid = 0;
    for k in 0..rounds {
        let barrier = format!("/barrier/r{k}");
        let me = format!("{barrier}/c{i}");
        xid += 1;
        let (reply, _) = s.call(xid, &create(&me, 1)).await?;
        anyhow::ensure!(reply.err == 0, "enter {me}: error {}", reply.err);
        enter(&mut s, &mut xid, &barrier, n)
            .await
            .with_context(|| format!("client {i} entering round {k}"))?;
        xid += 1;
        let (reply, _) = s
            .call(
                xid,
                &Request::Delete(PathAndVersion {
                    path: me.clone(),
                    version: -1,
                }),
            )
            .await?;
        anyhow::ensure!(reply.err == 0, "leave {me}: error {}", reply.err);
        leave(&mut s, &mut xid, &barrier)
            .await
            .with_context(|| format!("client {i} leaving round {k}"))?;
    }
    Ok(())
}

fn create(path: &str, flags: i32) -> Request {
    Request::Create {
        op: OpCode::Create,
        req: CreateRequest {
            path: path.into(),
            data: Some(Vec::new()),
            acl: open_acl(),
            flags,
        },
    }
}

/// Client znodes in `barrier` (the `ready` marker is not one).
async fn count(
    s: &mut Session,
    xid: &mut i32,
    barrier: &str,
    watch: bool,
) -> anyhow::Result<usize> {
    *xid += 1;
    let (reply, body) = s
        .call(
            *xid,
            &Request::GetChildren(PathAndWatch {
                path: barrier.into(),
                watch,
            }),
        )
        .await?;
    anyhow::ensure!(reply.err == 0, "list {barrier}: error {}", reply.err);
    match Response::decode(OpCode::GetChildren, &body)? {
        Response::GetChildren(r) => Ok(r.children.iter().filter(|c| *c != "ready").count()),
        other => anyhow::bail!("unexpected list reply {other:?}"),
    }
}

async fn enter(s: &mut Session, xid: &mut i32, barrier: &str, n: usize) -> anyhow::Result<()> {
    let ready = format!("{barrier}/ready");
    let deadline = Instant::now() + WAIT_MAX;
    loop {
        // An event that arrives while a call below waits for its reply is passed over; it
        // must still count, or a `ready` created meanwhile would be waited for forever (the
        // benchmark hung on ZooKeeper exactly so before this).
        s.skipped_events = 0;
        *xid += 1;
        let (reply, _) = s
            .call(
                *xid,
                &Request::Exists(PathAndWatch {
                    path: ready.clone(),
                    watch: true,
                }),
            )
            .await?;
        if reply.err == 0 {
            return Ok(());
        }
        if count(s, xid, barrier, false).await? >= n {
            *xid += 1;
            let (reply, _) = s.call(*xid, &create(&ready, 0)).await?;
            anyhow::ensure!(
                reply.err == 0 || reply.err == proto::ErrorCode::NodeExists.code(),
                "create {ready}: error {}",
                reply.err
            );
            return Ok(());
        }
        if s.skipped_events == 0 {
            wait_event(s, deadline, barrier).await?;
        }
    }
}

async fn leave(s: &mut Session, xid: &mut i32, barrier: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + WAIT_MAX;
    loop {
        s.skipped_events = 0;
        if count(s, xid, barrier, true).await? == 0 {
            return Ok(());
        }
        if s.skipped_events == 0 {
            if let Err(e) = wait_event(s, deadline, barrier).await {
                *xid += 1;
                let (_, body) = s
                    .call(
                        *xid,
                        &Request::GetChildren(PathAndWatch {
                            path: barrier.into(),
                            watch: false,
                        }),
                    )
                    .await?;
                anyhow::bail!(
                    "{e}; still there: {:?}",
                    Response::decode(OpCode::GetChildren, &body)?
                );
            }
        }
    }
}

/// The next frame must be a watch event (nothing else is outstanding on this session).
async fn wait_event(s: &mut Session, deadline: Instant, barrier: &str) -> anyhow::Result<()> {
    let remaining = deadline.saturating_duration_since(Instant::now());
    let frame = tokio::time::timeout(remaining, s.read_frame())
        .await
        .map_err(|_| anyhow::anyhow!("waited {WAIT_MAX:?} at {barrier} for the others; last frames (xid, zxid, err): {:?}", s.recent))??;
    let header = ReplyHeader::decode(&mut Reader::new(&frame))?;
    anyhow::ensure!(
        header.xid == -1,
        "expected a watch event, got reply {}",
        header.xid
    );
    Ok(())
}
