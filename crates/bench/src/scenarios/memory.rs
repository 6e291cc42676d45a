//! Memory (DESIGN.md §9: a standalone server holding 1,000,000 znodes of 100 bytes stays
//! within 200 MB of RSS): the server process's resident set after a load of `n` znodes through
//! real clients, and its peak while a snapshot of them is written with writes still flowing.
//!
//! Per target, one fresh standalone server:
//! 1. `n` creates of 100 bytes under `/mem` (8 pipelined clients); the peak so far is the
//!    load's, which includes whatever snapshots ran during it.
//! 2. Wait until no snapshot file changes for [`SETTLED`]: the RSS then is the steady figure.
//! 3. Reset the peak (`clear_refs`), then setData on random znodes of the load until a snapshot
//!    newer than step 2's has been written completely; the peak since the reset is the
//!    snapshot's (with the writes that overlapped it, each on a random node, which is the worst
//!    case for a copy-on-write tree).
//!
//! snapCount is 2n + 100 for every target, so the first log-triggered snapshot is drawn
//! between n and 2n transactions (ZooKeeper's rule, meerkat's too): after the load, not during
//! it. The diskless target writes busy snapshots whenever there is something new: deltas, and
//! a full snapshot (the one measured) once enough of what they hold is stale, after about
//! 5.5n of these writes.

use super::persistence::{fill_under, FILL_CLIENTS};
use super::{durable_settings, ensure_node, launch, row, target_dir, Context, Outcome};
use crate::rss::{reset_peak, resident, Resident};
use proto::request::Request;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

/// Bytes of data per znode (DESIGN.md §9's row).
const PAYLOAD: usize = 100;
/// Snapshot files unchanged this long: no snapshot is being written.
const SETTLED: Duration = Duration::from_secs(2);
/// Longest wait for the files to settle, or for a snapshot to be triggered and written.
const PHASE_LIMIT: Duration = Duration::from_secs(600);
/// How often the snapshot files are looked at while writes flow.
const POLL: Duration = Duration::from_millis(50);
/// A new snapshot file is complete when its size has not changed for this long (ZooKeeper
/// writes its snapshot under the final name).
const STABLE: Duration = Duration::from_millis(500);
/// setData requests in flight on the writing session.
const WINDOW: usize = 64;

/// What one target's server held at each point, in KiB.
#[derive(Debug, Clone, serde::Serialize)]
struct Measured {
    idle: Resident,
    after_load: Resident,
    steady: Resident,
    during_snapshot: Resident,
    writes_until_snapshot: usize,
    load_seconds: f64,
}

pub async fn memory(ctx: &Context) -> anyhow::Result<Outcome> {
    let n: usize = ctx.scale.pick(20_000, 200_000, 1_000_000);
    let n = n.div_ceil(FILL_CLIENTS) * FILL_CLIENTS;
    let case = format!("{n} znodes x {PAYLOAD} B");
    let mut rows = [
        row(&case, "RSS MB, empty", false),
        row(&case, "RSS MB, loaded", false),
        row(&case, "peak MB, load", false),
        row(&case, "peak MB, snapshot", false),
        row(&case, "snapshot peak/loaded", false),
        row(&case, "B/znode over empty", false),
    ];
    let mut details = serde_json::Map::new();
    for target in ctx.real_targets() {
        ctx.step(format!("memory: {n} znodes on {}", target.name()));
        let m = measure(ctx, target, n).await?;
        let mb = |kib: u64| kib as f64 * 1024.0 / 1e6;
        let values = [
            mb(m.idle.rss_kib),
            mb(m.steady.rss_kib),
            mb(m.after_load.peak_kib),
            mb(m.during_snapshot.peak_kib),
            m.during_snapshot.peak_kib as f64 / m.steady.rss_kib as f64,
            (m.steady.rss_kib.saturating_sub(m.idle.rss_kib) * 1024) as f64 / n as f64,
        ];
        for (row, value) in rows.iter_mut().zip(values) {
            row.values.insert(target.name().into(), value);
        }
        details.insert(target.name().into(), serde_json::to_value(&m)?);
    }
    // Paths `/mem/cC-I` plus data: what ZooKeeper's approximateDataSize would count.
    let path_bytes: usize = (0..n)
        .map(|k| format!("/mem/c{}-{}", k % FILL_CLIENTS, k / FILL_CLIENTS).len())
        .sum();
    details.insert(
        "data_and_path_bytes".into(),
        serde_json::json!(path_bytes + n * PAYLOAD),
    );
    Ok(Outcome {
        rows: rows.into(),
        details: serde_json::Value::Object(details),
        plots: Vec::new(),
    })
}

async fn measure(
    ctx: &Context,
    target: crate::target::Target,
    n: usize,
) -> anyhow::Result<Measured> {
    let dir = target_dir(ctx, "memory", target, &n.to_string());
    let snap_count = (2 * n + 100).to_string();
    let settings = durable_settings(&[("snapCount", &snap_count)]);
    let server = launch(ctx, target, &dir, &settings).await?;
    let pid = server
        .pid()
        .ok_or_else(|| anyhow::anyhow!("{}: no server process", target.name()))?;
    let read = || resident(pid).ok_or_else(|| anyhow::anyhow!("/proc/{pid}/status: not readable"));
    let idle = read()?;
    ensure_node(server.addr, "/mem", 0).await?;
    let started = Instant::now();
    fill_under(&server.addrs, "/mem", "", n, PAYLOAD).await?;
    let load_seconds = started.elapsed().as_secs_f64();
    let after_load = read()?;
    let settled = settle(&dir).await?;
    let steady = read()?;
    reset_peak(pid)?;
    let writes_until_snapshot = write_until_snapshot(server.addr, &dir, &settled, n).await?;
    let during_snapshot = read()?;
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Measured {
        idle,
        after_load,
        steady,
        during_snapshot,
        writes_until_snapshot,
        load_seconds,
    })
}

/// Snapshot files under `dir` (meerkat's `snap-*.snap` and their `.tmp`, ZooKeeper's
/// `snapshot.*`), by path, with their sizes.
fn snapshot_files(dir: &Path) -> BTreeMap<String, u64> {
    let mut found = BTreeMap::new();
    let mut pending = vec![(dir.to_path_buf(), 0)];
    // The data dirs are at most three levels deep (DIR/data/version-2 or meerkat-1).
    while let Some((d, depth)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() && depth < 3 {
                pending.push((path, depth + 1));
            } else if entry.file_name().to_string_lossy().starts_with("snap") {
                found.insert(path.display().to_string(), meta.len());
            }
        }
    }
    found
}

/// Waits until the snapshot files stay the same for [`SETTLED`]; returns them.
async fn settle(dir: &Path) -> anyhow::Result<BTreeMap<String, u64>> {
    let started = Instant::now();
    let mut last = snapshot_files(dir);
    let mut unchanged_since = Instant::now();
    while unchanged_since.elapsed() < SETTLED {
        anyhow::ensure!(
            started.elapsed() < PHASE_LIMIT,
            "snapshot files under {} kept changing for {PHASE_LIMIT:?}",
            dir.display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = snapshot_files(dir);
        if now != last {
            last = now;
            unchanged_since = Instant::now();
        }
    }
    Ok(last)
}

/// Watches the snapshot files for one not in `before` to be written completely: no temporary
/// file beside it, and the same size for [`STABLE`].
struct SnapshotWatch {
    before: BTreeMap<String, u64>,
    /// New files: size and since when it has been that size.
    seen: BTreeMap<String, (u64, Instant)>,
}

impl SnapshotWatch {
    fn new(before: &BTreeMap<String, u64>) -> SnapshotWatch {
        SnapshotWatch {
            before: before.clone(),
            seen: BTreeMap::new(),
        }
    }

    /// Takes one look at `now`; true once a new snapshot is finished.
    fn finished(&mut self, now: &BTreeMap<String, u64>, at: Instant) -> bool {
        for (path, &size) in now.iter().filter(|(p, _)| !self.before.contains_key(*p)) {
            match self.seen.get(path) {
                Some(&(seen_size, _)) if seen_size == size => {}
                _ => {
                    self.seen.insert(path.clone(), (size, at));
                }
            }
        }
        let writing = now.keys().any(|p| p.ends_with(".tmp"));
        let stable = self.seen.iter().any(|(p, &(_, since))| {
            !p.ends_with(".tmp") && now.contains_key(p) && at.duration_since(since) >= STABLE
        });
        stable && !writing
    }

    /// Whether any new snapshot file (finished or not) has appeared.
    fn started(&self) -> bool {
        !self.seen.is_empty()
    }
}

/// setData of 100 bytes on pseudo-random znodes of the load, pipelined, until a new snapshot
/// is written completely. Returns how many writes that took.
async fn write_until_snapshot(
    addr: SocketAddr,
    dir: &Path,
    before: &BTreeMap<String, u64>,
    n: usize,
) -> anyhow::Result<usize> {
    use tokio::io::AsyncWriteExt;
    let mut session = crate::wire::Session::open(addr, 30_000).await?;
    let per_client = n / FILL_CLIENTS;
    // Up to 2n + 100 transactions may pass before a log-triggered snapshot; a few more for
    // the sessions. Diskless: a full snapshot comes once the files hold four times the tree's
    // bytes of stale ones (storage's GARBAGE_FACTOR); each of these writes makes about its own
    // 160 bytes stale against about 190 live per znode: about 4.8n writes (5.5n measured).
    let writes_max = 8 * n + 10_000;
    let started = Instant::now();
    let mut random: u64 = 0x9e37_79b9_7f4a_7c15;
    let (mut sent, mut done) = (0usize, 0usize);
    let mut out = Vec::new();
    let mut watch = SnapshotWatch::new(before);
    let mut looked = Instant::now();
    loop {
        if looked.elapsed() >= POLL {
            looked = Instant::now();
            if watch.finished(&snapshot_files(dir), looked) {
                break;
            }
        }
        anyhow::ensure!(
            (watch.started() || done < writes_max) && started.elapsed() < PHASE_LIMIT,
            "no new snapshot under {} after {done} writes",
            dir.display()
        );
        while sent - done < WINDOW {
            random ^= random << 13;
            random ^= random >> 7;
            random ^= random << 17;
            let k = (random % n as u64) as usize;
            let path = format!("/mem/c{}-{}", k / per_client, k % per_client);
            let set = Request::SetData(proto::SetDataRequest {
                path,
                data: Some(vec![b'w'; PAYLOAD]),
                version: -1,
            });
            crate::wire::encode_request(&mut out, (sent % i32::MAX as usize) as i32 + 1, &set);
            sent += 1;
        }
        session.stream.write_all(&out).await?;
        out.clear();
        let reply = session.read_reply().await?;
        anyhow::ensure!(reply.err == 0, "setData failed with {}", reply.err);
        done += 1;
    }
    for _ in done..sent {
        session.read_reply().await?;
    }
    session.close().await?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &[(&str, u64)]) -> BTreeMap<String, u64> {
        list.iter().map(|(p, s)| (p.to_string(), *s)).collect()
    }

    #[test]
    fn a_snapshot_counts_once_new_and_no_longer_growing() {
        let before = files(&[("d/snap-1.snap", 10)]);
        let mut watch = SnapshotWatch::new(&before);
        let t0 = Instant::now();
        let later = |ms| t0 + Duration::from_millis(ms);
        assert!(!watch.finished(&before, t0));
        assert!(!watch.started());
        let growing = files(&[("d/snap-1.snap", 10), ("d/snap-2.snap", 5)]);
        assert!(!watch.finished(&growing, later(100)));
        assert!(watch.started());
        let grown = files(&[("d/snap-1.snap", 10), ("d/snap-2.snap", 9)]);
        assert!(!watch.finished(&grown, later(200)));
        assert!(!watch.finished(&grown, later(200 + STABLE.as_millis() as u64 - 1)));
        let temp = files(&[("d/snap-2.snap", 9), ("d/snap-3.snap.tmp", 1)]);
        assert!(!watch.finished(&temp, later(5_000)));
        assert!(watch.finished(&grown, later(5_000)));
    }
}
