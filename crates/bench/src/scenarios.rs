//! The scenarios. Each starts its servers, runs the same workload against every target in one
//! invocation, and returns a [`Report`].

use crate::load::{self, LoadSpec, MakeRequest};
use crate::report::Row;
use crate::target::{self, Launched, Programs, ServerSettings, Target};
use proto::request::Request;
use proto::{CreateRequest, OpCode};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Sizes and durations: `--quick` fits a 2-core machine in minutes, `--full` uses the papers'.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    pub full: bool,
    /// Tiny sizes for the self-test of the bench (seconds, not minutes).
    pub tiny: bool,
}

impl Scale {
    fn duration(&self) -> Duration {
        if self.tiny {
            Duration::from_millis(300)
        } else if self.full {
            Duration::from_secs(30)
        } else {
            Duration::from_secs(8)
        }
    }

    fn warmup(&self) -> Duration {
        if self.tiny {
            Duration::from_millis(100)
        } else {
            Duration::from_secs(2)
        }
    }
}

pub struct Context {
    pub programs: Programs,
    pub targets: Vec<Target>,
    pub work_dir: PathBuf,
    pub scale: Scale,
}

/// The thesis's payload for create benchmarks (Fig. 5.1: 281-byte znodes).
const PAYLOAD_281: usize = 281;

fn create_request(path: String, len: usize, flags: i32) -> Request {
    Request::Create {
        op: OpCode::Create,
        req: CreateRequest {
            path,
            data: Some(vec![b'm'; len]),
            acl: vec![proto::Acl {
                perms: 31,
                id: proto::Id {
                    scheme: "world".into(),
                    id: "anyone".into(),
                },
            }],
            flags,
        },
    }
}

fn durable_settings(extra: &[(&str, &str)]) -> ServerSettings {
    let mut settings = ServerSettings::default();
    settings.extra.push(("forceSync".into(), "yes".into()));
    for (k, v) in extra {
        settings.extra.push((k.to_string(), v.to_string()));
    }
    settings
}

fn target_dir(ctx: &Context, scenario: &str, target: Target, case: &str) -> PathBuf {
    let dir = ctx.work_dir.join(scenario).join(case).join(target.name());
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

async fn launch(
    ctx: &Context,
    target: Target,
    dir: &Path,
    settings: &ServerSettings,
) -> anyhow::Result<Launched> {
    target::launch(target, &ctx.programs, dir, settings).await
}

fn row(case: &str, metric: &str, higher_is_better: bool) -> Row {
    Row {
        case: case.into(),
        metric: metric.into(),
        higher_is_better,
        values: BTreeMap::new(),
    }
}

/// Creates under `/bench` must have a parent.
async fn make_parent(addr: std::net::SocketAddr, path: &str) -> anyhow::Result<()> {
    let mut session = crate::wire::Session::open(addr, 30_000).await?;
    let mut out = Vec::new();
    crate::wire::encode_request(&mut out, 1, &create_request(path.into(), 0, 0));
    use tokio::io::AsyncWriteExt;
    session.stream.write_all(&out).await?;
    let reply = session.read_reply().await?;
    anyhow::ensure!(
        reply.err == 0 || reply.err == proto::ErrorCode::NodeExists.code(),
        "create {path}: error {}",
        reply.err
    );
    Ok(())
}

/// Synchronous (window 1) or pipelined clients creating sequential znodes of `len` bytes.
pub async fn creates(
    ctx: &Context,
    scenario: &str,
    cases: &[(&str, usize, usize)],
    flags: i32,
    len: usize,
) -> anyhow::Result<(Vec<Row>, serde_json::Value)> {
    let mut rows = Vec::new();
    let mut details = serde_json::Map::new();
    for &(case, clients, window) in cases {
        let mut throughput = row(case, "ops/s", true);
        let mut p50 = row(case, "p50 ms", false);
        let mut p99 = row(case, "p99 ms", false);
        for &target in &ctx.targets {
            let dir = target_dir(ctx, scenario, target, case);
            let server = launch(ctx, target, &dir, &durable_settings(&[])).await?;
            if target != Target::Null {
                make_parent(server.addr, "/bench").await?;
            }
            let make: MakeRequest =
                Arc::new(move |c, i| create_request(format!("/bench/c{c}-{i}-"), len, flags));
            let spec = LoadSpec {
                clients,
                window,
                duration: ctx.scale.duration(),
                warmup: ctx.scale.warmup(),
                make,
            };
            let result = load::run(server.addr, &spec).await?;
            anyhow::ensure!(
                result.errors == 0,
                "{} answered {} creates with errors",
                target.name(),
                result.errors
            );
            server.stop();
            throughput
                .values
                .insert(target.name().into(), result.ops_per_sec);
            p50.values
                .insert(target.name().into(), result.p50_us as f64 / 1000.0);
            p99.values
                .insert(target.name().into(), result.p99_us as f64 / 1000.0);
            details.insert(
                format!("{case}/{}", target.name()),
                serde_json::to_value(&result)?,
            );
        }
        rows.extend([throughput, p50, p99]);
    }
    Ok((rows, serde_json::Value::Object(details)))
}

/// Snapshot write and load time against znode count, in process (meerkat's own snapshot code
/// on a real file system with fsync). Thesis Table A.4 reports ZooKeeper: 1M znodes, 2,067 ms.
pub fn snapshot_times(
    ctx: &Context,
    sizes: &[usize],
) -> anyhow::Result<(Vec<Row>, serde_json::Value)> {
    use proto::txn::{CreateTxn, Txn, TxnBody, TxnHeader};
    let mut rows = Vec::new();
    let mut details = serde_json::Map::new();
    for &n in sizes {
        let case = format!("{n} znodes x 300 B");
        let mut tree = tree::DataTree::new();
        let acl = tree::acl::open_acl_unsafe();
        let mut triggers = Vec::new();
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
            triggers.clear();
            tree.apply(&txn, &mut triggers);
        }
        let dir = ctx.work_dir.join("snapshot").join(n.to_string());
        let _ = std::fs::remove_dir_all(&dir);
        let layout = storage::Layout::new(&dir, &dir);
        std::fs::create_dir_all(&layout.snap_dir)?;
        let started = Instant::now();
        let frozen = tree.freeze();
        let freeze_us = started.elapsed().as_micros() as u64;
        let written = storage::snapshot_file::write(&storage::RealFs, &layout, &frozen, 0)?;
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
        details.insert(case, serde_json::json!({
            "znodes": n, "bytes": written.bytes, "write_ms": write_ms, "load_ms": load_ms, "freeze_us": freeze_us,
        }));
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok((rows, serde_json::Value::Object(details)))
}

/// Per target: fill the server with `n` znodes of 300 bytes, measure a synchronous client's
/// create latency with no snapshot running, kill the server, time the restart until it serves,
/// and measure the same client again while snapshots of the whole tree run (snapCount=10000).
pub async fn restart(
    ctx: &Context,
    sizes: &[usize],
) -> anyhow::Result<(Vec<Row>, serde_json::Value)> {
    let mut rows = Vec::new();
    let mut details = serde_json::Map::new();
    for &n in sizes {
        let (r, d) = restart_one(ctx, n).await?;
        rows.extend(r);
        details.insert(n.to_string(), d);
    }
    Ok((rows, serde_json::Value::Object(details)))
}

async fn restart_one(ctx: &Context, n: usize) -> anyhow::Result<(Vec<Row>, serde_json::Value)> {
    let case = format!("{n} znodes x 300 B");
    let mut restart_ms = row(&case, "restart ms", false);
    let mut p99_quiet = row(&case, "p99 ms, no snap", false);
    let mut p99_snap = row(&case, "p99 ms, snapshots", false);
    let mut details = serde_json::Map::new();
    for &target in ctx.targets.iter().filter(|t| **t != Target::Null) {
        let dir = target_dir(ctx, "restart", target, &n.to_string());
        let server = launch(
            ctx,
            target,
            &dir,
            &durable_settings(&[("snapCount", "100000000")]),
        )
        .await?;
        make_parent(server.addr, "/fill").await?;
        let fill_started = Instant::now();
        fill(server.addr, n).await?;
        let fill_secs = fill_started.elapsed().as_secs_f64();
        let one_client = |tag: &'static str| LoadSpec {
            clients: 1,
            window: 1,
            duration: ctx.scale.duration(),
            warmup: ctx.scale.warmup(),
            make: Arc::new(move |_, i| create_request(format!("/fill/{tag}-{i}"), PAYLOAD_281, 0)),
        };
        let quiet = load::run(server.addr, &one_client("quiet")).await?;
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
        let busy = load::run(server.addr, &one_client("busy")).await?;
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

/// Creates `n` znodes of 300 bytes under /fill with pipelined clients.
async fn fill(addr: std::net::SocketAddr, n: usize) -> anyhow::Result<()> {
    let clients = 8;
    let per_client = n.div_ceil(clients);
    let mut tasks = Vec::new();
    for c in 0..clients {
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
                        &create_request(format!("/fill/c{c}-{sent}"), 300, 0),
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
