//! Persistence scenarios: snapshot cost (thesis Table A.4) and restart.

use super::{
    create_request, durable_settings, ensure_node, launch, row, target_dir, Chart, Context,
    Outcome, PAYLOAD_281,
};
use crate::load::{self, LoadSpec};
use crate::report::Row;
use proto::OpCode;
use std::sync::Arc;
use std::time::Instant;

/// Snapshot write and load time against znode count, in process (meerkat's own snapshot code
/// on a real file system with fsync). Thesis Table A.4 reports ZooKeeper: 1M znodes, 2,067 ms.
pub fn snapshot(ctx: &Context) -> anyhow::Result<Outcome> {
    let sizes: &[usize] = ctx.scale.pick(
        &[1_000, 10_000, 20_000],
        &[10_000, 100_000, 1_000_000],
        &[10_000, 100_000, 1_000_000],
    );
    use proto::txn::{CreateTxn, Txn, TxnBody, TxnHeader};
    let mut rows = Vec::new();
    let mut details = serde_json::Map::new();
    let (mut write_points, mut load_points) = (Vec::new(), Vec::new());
    for &n in sizes {
        let case = format!("{n} znodes x 300 B");
        ctx.step(format!("snapshot of {n} znodes"));
        let mut tree = tree::DataTree::new();
        let acl = proto::AclList::new(tree::acl::open_acl_unsafe());
        let parents = 100.max(n / 10_000);
        for i in 0..(n + parents) {
            let path = if i < parents {
                format!("/p{i}")
            } else {
                format!("/p{}/n{i}", i % parents)
            };
            let zxid = i as i64 + 1;
            let txn = Txn {
                header: TxnHeader {
                    client_id: 0,
                    cxid: 0,
                    zxid,
                    time: 0,
                    op_type: OpCode::Create as i32,
                },
                body: TxnBody::Create(CreateTxn {
                    path,
                    data: Some(vec![b's'; if i < parents { 0 } else { 300 }]),
                    acl: acl.clone(),
                    ephemeral: false,
                    parent_cversion: -1,
                }),
            };
            tree.apply(&txn, &mut Vec::new());
        }
        let dir = ctx.work_dir.join("snapshot").join(n.to_string());
        let _ = std::fs::remove_dir_all(&dir);
        let layout = storage::Layout::new(&dir, &dir);
        std::fs::create_dir_all(&layout.snap_dir)?;
        let started = Instant::now();
        let frozen = tree.freeze();
        let freeze_us = started.elapsed().as_micros() as u64;
        let written =
            storage::snapshot_file::write(&storage::RealFs, &layout, &frozen, Default::default())?;
        let write_ms = started.elapsed().as_secs_f64() * 1000.0;
        let started = Instant::now();
        let loaded = storage::snapshot_file::read(&storage::RealFs, &written.path)?;
        let load_ms = started.elapsed().as_secs_f64() * 1000.0;
        anyhow::ensure!(
            loaded.tree.digest() == tree.digest(),
            "snapshot of {n} znodes did not load back equal"
        );
        let mut write = row(&case, "write ms", false);
        write.values.insert("meerkat".into(), write_ms);
        let mut load = row(&case, "load ms", false);
        load.values.insert("meerkat".into(), load_ms);
        let mut freeze = row(&case, "freeze us", false);
        freeze.values.insert("meerkat".into(), freeze_us as f64);
        rows.extend([write, load, freeze]);
        write_points.push((n as f64, write_ms));
        load_points.push((n as f64, load_ms));
        details.insert(case, serde_json::json!({
            "znodes": n, "bytes": written.bytes, "write_ms": write_ms, "load_ms": load_ms, "freeze_us": freeze_us,
        }));
        let _ = std::fs::remove_dir_all(&dir);
    }
    let series = [
        crate::plot::Series {
            name: "meerkat: write".into(),
            points: write_points,
        },
        crate::plot::Series {
            name: "meerkat: load".into(),
            points: load_points,
        },
    ];
    let chart = Chart {
        title: "snapshot: time against znode count (300-byte znodes)",
        x: "znodes",
        y: "milliseconds",
    };
    Outcome::charted(ctx, "snapshot", chart, &series, rows, details)
}

/// Per target: fill the server with `n` znodes of 300 bytes, measure a synchronous client's
/// create latency with no snapshot running, kill the server, time the restart until it serves,
/// and measure the same client again while snapshots of the whole tree run (snapCount=10000).
pub async fn restart(ctx: &Context) -> anyhow::Result<Outcome> {
    let sizes: &[usize] =
        ctx.scale
            .pick(&[2_000], &[10_000, 100_000], &[10_000, 100_000, 1_000_000]);
    let mut rows = Vec::new();
    let mut details = serde_json::Map::new();
    let mut series: Vec<crate::plot::Series> = Vec::new();
    for &n in sizes {
        let (r, d) = restart_one(ctx, n).await?;
        for (target, ms) in &r[0].values {
            crate::plot::add_point(&mut series, target, (n as f64, *ms));
        }
        rows.extend(r);
        details.insert(n.to_string(), d);
    }
    let chart = Chart {
        title: "restart: time until serving again",
        x: "znodes",
        y: "milliseconds",
    };
    Outcome::charted(ctx, "restart", chart, &series, rows, details)
}

async fn restart_one(ctx: &Context, n: usize) -> anyhow::Result<(Vec<Row>, serde_json::Value)> {
    let case = format!("{n} znodes x 300 B");
    let mut restart_ms = row(&case, "restart ms", false);
    let mut p99_quiet = row(&case, "p99 ms, no snap", false);
    let mut p99_snap = row(&case, "p99 ms, snapshots", false);
    let mut details = serde_json::Map::new();
    for target in ctx.real_targets() {
        ctx.step(format!("restart with {n} znodes on {}", target.name()));
        let dir = target_dir(ctx, "restart", target, &n.to_string());
        let server = launch(
            ctx,
            target,
            &dir,
            &durable_settings(&[("snapCount", "100000000")]),
        )
        .await?;
        ensure_node(server.addr, "/fill", 0).await?;
        let fill_started = Instant::now();
        fill(&server.addrs, n, "").await?;
        let fill_secs = fill_started.elapsed().as_secs_f64();
        let one_client = |tag: &'static str| LoadSpec {
            clients: 1,
            window: 1,
            duration: ctx.scale.duration(),
            warmup: ctx.scale.warmup(),
            make: Arc::new(move |_, i| create_request(format!("/fill/{tag}-{i}"), PAYLOAD_281, 0)),
        };
        let quiet = load::run(&server.addrs, &one_client("quiet")).await?;
        server.stop();
        let started = Instant::now();
        let server = launch(
            ctx,
            target,
            &dir,
            &durable_settings(&[("snapCount", "10000")]),
        )
        .await?;
        let restart = started.elapsed().as_secs_f64() * 1000.0;
        let busy = load::run(&server.addrs, &one_client("busy")).await?;
        server.stop();
        restart_ms.values.insert(target.name().into(), restart);
        p99_quiet
            .values
            .insert(target.name().into(), quiet.p99_us as f64 / 1000.0);
        p99_snap
            .values
            .insert(target.name().into(), busy.p99_us as f64 / 1000.0);
        details.insert(target.name().into(), serde_json::json!({
            "fill_seconds": fill_secs, "restart_ms": restart, "quiet": quiet, "with_snapshots": busy,
        }));
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok((
        vec![restart_ms, p99_quiet, p99_snap],
        serde_json::Value::Object(details),
    ))
}

/// Creates `n` znodes of 300 bytes, `/fill/<tag>c<c>-<i>`, with 8 pipelined clients spread
/// over `addrs`.
pub async fn fill(addrs: &[std::net::SocketAddr], n: usize, tag: &str) -> anyhow::Result<()> {
    fill_under(addrs, "/fill", tag, n, 300).await
}

/// Clients [`fill_under`] spreads its creates over.
pub const FILL_CLIENTS: usize = 8;

/// Creates `n` znodes of `len` bytes, `<parent>/<tag>c<c>-<i>` for client `c` and its `i`-th
/// create, with [`FILL_CLIENTS`] pipelined clients spread over `addrs`.
pub async fn fill_under(
    addrs: &[std::net::SocketAddr],
    parent: &str,
    tag: &str,
    n: usize,
    len: usize,
) -> anyhow::Result<()> {
    let clients = FILL_CLIENTS;
    let per_client = n.div_ceil(clients);
    let mut tasks = Vec::new();
    for c in 0..clients {
        let addr = addrs[c % addrs.len()];
        let prefix = format!("{parent}/{tag}c{c}-");
        tasks.push(tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let mut session = crate::wire::Session::open(addr, 30_000).await?;
            let window = 64;
            let mut sent = 0;
            let mut done = 0;
            let mut out = Vec::new();
            while done < per_client {
                while sent < per_client && sent - done < window {
                    crate::wire::encode_request(
                        &mut out,
                        sent as i32 + 1,
                        &create_request(format!("{prefix}{sent}"), len, 0),
                    );
                    sent += 1;
                }
                session.stream.write_all(&out).await?;
                out.clear();
                let reply = session.read_reply().await?;
                anyhow::ensure!(reply.err == 0, "fill create failed with {}", reply.err);
                done += 1;
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}
