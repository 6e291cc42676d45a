//! One snapshot being written: the work a snapshot thread does (or, stepped, the host when it
//! says so), from a frozen copy of the tree, so the tree goes on changing meanwhile.

use crate::error::StorageError;
use crate::execution::Clock;
use crate::fs::FileSystem;
use crate::layout::Layout;
use crate::persistence::SnapshotStats;
use crate::{purge, snapshot_file};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

pub struct SnapshotJob {
    pub fs: Arc<dyn FileSystem>,
    pub layout: Layout,
    pub frozen: tree::TreeSnapshot,
    pub stamp: snapshot_file::Stamp,
    /// Set to make the job give up at its next chunk.
    pub cancel: Arc<AtomicBool>,
    /// Cleared when the job ends, whatever its outcome.
    pub running: Arc<AtomicBool>,
    pub stats: Arc<SnapshotStats>,
    /// The newest complete snapshot's zxid, raised when this one is in place.
    pub on_disk: Arc<AtomicI64>,
    pub clock: Clock,
    /// Diskless: the next busy snapshot waits until this time on `clock`.
    pub rest_until_ms: Arc<AtomicU64>,
    pub rest_percent: u64,
    /// Diskless: purge to this many snapshots afterwards.
    pub purge_after: Option<usize>,
}

impl SnapshotJob {
    /// Writes the snapshot; `took_ms` says how long it took when the host steps it (None:
    /// measured).
    pub fn run(self, took_ms: Option<u64>) {
        let started = Instant::now();
        let written = snapshot_file::write_unless_cancelled(
            self.fs.as_ref(),
            &self.layout,
            &self.frozen,
            self.stamp,
            &self.cancel,
        );
        match written {
            Ok(written) => {
                let ms = took_ms.unwrap_or_else(|| started.elapsed().as_millis() as u64);
                let ended = self.clock.now_ms();
                self.rest_until_ms
                    .store(ended + ms * self.rest_percent / 100, Ordering::Release);
                let zxid = self.frozen.zxid();
                self.on_disk.fetch_max(zxid, Ordering::AcqRel);
                let stats = &self.stats;
                stats.taken.fetch_add(1, Ordering::Relaxed);
                stats.last_zxid.store(zxid, Ordering::Relaxed);
                stats.last_millis.store(ms, Ordering::Relaxed);
                stats.last_bytes.store(written.bytes, Ordering::Relaxed);
                stats.total_millis.fetch_add(ms, Ordering::Relaxed);
                stats.max_millis.fetch_max(ms, Ordering::Relaxed);
                stats.recent_millis.record(ms);
                log_snapshot_written(
                    self.purge_after.is_some(),
                    &written.path,
                    zxid,
                    self.frozen.node_count(),
                    written.bytes,
                    ms,
                );
            }
            Err(StorageError::Cancelled) => {
                tracing::debug!(
                    zxid = format!("{:#x}", self.frozen.zxid()),
                    "snapshot cancelled"
                )
            }
            // A failed snapshot loses nothing the previous one had: say so and try again at
            // the next interval (diskless: at the next write).
            Err(e) => {
                tracing::error!(error = %e, diskless = self.purge_after.is_some(), "snapshot failed; the previous snapshot (and the log, when there is one) still stands")
            }
        }
        if let Some(retain) = self.purge_after {
            if let Err(e) = purge::purge_keeping(self.fs.as_ref(), &self.layout, retain) {
                tracing::error!(error = %e, "purge of old snapshots failed");
            }
        }
        self.running.store(false, Ordering::Release);
    }
}

/// Busy snapshots (diskless) run back to back: only the periodic ones are news at info level.
fn log_snapshot_written(
    busy: bool,
    path: &std::path::Path,
    zxid: i64,
    nodes: usize,
    bytes: u64,
    ms: u64,
) {
    let zxid = format!("{zxid:#x}");
    if busy {
        tracing::debug!(path = %path.display(), zxid, nodes, bytes, ms, "snapshot written");
    } else {
        tracing::info!(path = %path.display(), zxid, nodes, bytes, ms, "snapshot written");
    }
}
