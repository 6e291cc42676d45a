//! One snapshot being written: the work a snapshot thread does (or, stepped, the host when it
//! says so), from a frozen copy of the tree, so the tree goes on changing meanwhile; or, in
//! diskless mode, a delta of the transactions applied since the state on disk.

use crate::error::StorageError;
use crate::execution::Clock;
use crate::fs::FileSystem;
use crate::layout::Layout;
use crate::persistence::SnapshotStats;
use crate::{purge, snapshot_file};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// What a busy snapshot writes.
pub enum Work {
    Full(tree::TreeSnapshot),
    Delta(crate::delta::Journal),
}

/// Diskless: what the disk holds, as full snapshot plus deltas, and how far the deltas have
/// grown since that snapshot (they are compacted into a full one once they hold too much
/// that is stale: `persistence::GARBAGE_FACTOR`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chain {
    pub generation: u32,
    /// The newest full snapshot's zxid (its delta file is named after it).
    pub base_zxid: i64,
    /// The zxid of the state the disk holds: the full snapshot's, or its delta file's last.
    pub end_zxid: i64,
    pub base_bytes: u64,
    /// Where the delta file's records end, and its preallocated length.
    pub delta: crate::delta::Extent,
}

/// Diskless: the default least rest after a delta batch (unless the rest is 0, the thesis's
/// back to back). It bounds the fsyncs a server makes for its busy snapshots to 200 a second,
/// and adds at most this much to what a whole-ensemble power loss can take
/// (docs/durability.md).
pub const DELTA_REST_MIN_MS: u64 = 5;

pub struct SnapshotJob {
    pub fs: Arc<dyn FileSystem>,
    pub layout: Layout,
    pub work: Work,
    /// Diskless: raised as this job's work lands on disk.
    pub chain: Arc<std::sync::Mutex<Option<Chain>>>,
    /// Diskless: how much the delta file grows at a time ([`crate::delta::preallocate_step`]).
    pub delta_step: u64,
    /// Diskless: where a delta's buffer goes once written, for a later journal.
    pub spare_frames: Arc<std::sync::Mutex<Vec<u8>>>,
    /// Diskless: the delta file the last batch went to, still open.
    pub delta_file: Arc<std::sync::Mutex<Option<crate::delta::OpenDelta>>>,
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
    /// [`crate::persistence::PersistenceOptions::delta_rest_min_ms`].
    pub delta_rest_min_ms: u64,
    /// Diskless: purge to this many snapshots afterwards.
    pub purge_after: Option<usize>,
}

impl SnapshotJob {
    /// Writes the snapshot; `took_ms` says how long it took when the host steps it (None:
    /// measured).
    pub fn run(self, took_ms: Option<u64>) {
        match &self.work {
            Work::Full(frozen) => self.run_full(frozen, took_ms),
            Work::Delta(journal) => self.run_delta(journal, took_ms),
        }
        // Only a new full snapshot makes older files unnecessary; a delta batch only grows
        // the newest delta file.
        let full = matches!(self.work, Work::Full(_));
        if let Some(retain) = self.purge_after.filter(|_| full) {
            if let Err(e) = purge::purge_keeping(self.fs.as_ref(), &self.layout, retain) {
                tracing::error!(error = %e, "purge of old snapshots failed");
            }
        }
        if let Work::Delta(journal) = self.work {
            *lock_spare(&self.spare_frames) = journal.into_buffer();
        }
        self.running.store(false, Ordering::Release);
    }

    /// A batch is not cancelled: it is small, and what waits for it wants it on disk.
    fn run_delta(&self, journal: &crate::delta::Journal, took_ms: Option<u64>) {
        let started = Instant::now();
        let Some(chain) = *lock(&self.chain) else {
            unreachable!("a delta is started only on a chain");
        };
        assert!(
            chain.generation == self.stamp.generation && chain.end_zxid == journal.prev_zxid,
            "a delta was started that does not continue the disk's state: {chain:?}, from {:#x}",
            journal.prev_zxid
        );
        let appended = crate::delta::append(
            self.fs.as_ref(),
            &self.layout,
            (chain.generation, chain.base_zxid),
            chain.delta,
            journal,
            self.delta_step,
            &mut lock_open_delta(&self.delta_file),
        );
        match appended {
            Ok(delta) => {
                let ms = took_ms.unwrap_or_else(|| started.elapsed().as_millis() as u64);
                // A batch takes about one fsync; resting a few times that would mean an fsync
                // per write at low rates. A floor gathers a few writes per batch.
                let floor = if self.rest_percent > 0 {
                    self.delta_rest_min_ms
                } else {
                    0
                };
                self.rest_until_ms.store(
                    self.clock.now_ms() + (ms * self.rest_percent / 100).max(floor),
                    Ordering::Release,
                );
                *lock(&self.chain) = Some(Chain {
                    end_zxid: journal.last_zxid,
                    delta,
                    ..chain
                });
                self.on_disk.fetch_max(journal.last_zxid, Ordering::AcqRel);
                self.record(journal.last_zxid, ms, None);
                let bytes = delta.written - chain.delta.written;
                tracing::trace!(txns = journal.count, bytes, ms, "delta batch written");
            }
            // The next busy snapshot is a full one: this batch's transactions are in no other
            // file, and the delta file may end in a torn batch nothing must follow.
            Err(e) => {
                *lock(&self.chain) = None;
                tracing::error!(error = %e, "diskless delta batch failed; the next busy snapshot writes the whole tree")
            }
        }
    }

    fn rested_after(&self, ms: u64) {
        let ended = self.clock.now_ms();
        self.rest_until_ms
            .store(ended + ms * self.rest_percent / 100, Ordering::Release);
    }

    fn record(&self, zxid: i64, ms: u64, bytes: Option<u64>) {
        let stats = &self.stats;
        stats.taken.fetch_add(1, Ordering::Relaxed);
        stats.last_zxid.store(zxid, Ordering::Relaxed);
        stats.last_millis.store(ms, Ordering::Relaxed);
        if let Some(bytes) = bytes {
            stats.last_bytes.store(bytes, Ordering::Relaxed);
        }
        stats.total_millis.fetch_add(ms, Ordering::Relaxed);
        stats.max_millis.fetch_max(ms, Ordering::Relaxed);
        stats.recent_millis.record(ms);
    }

    fn run_full(&self, frozen: &tree::TreeSnapshot, took_ms: Option<u64>) {
        let started = Instant::now();
        let written = snapshot_file::write_unless_cancelled(
            self.fs.as_ref(),
            &self.layout,
            frozen,
            self.stamp,
            &self.cancel,
        );
        match written {
            Ok(written) => {
                let ms = took_ms.unwrap_or_else(|| started.elapsed().as_millis() as u64);
                self.rested_after(ms);
                let zxid = frozen.zxid();
                if self.purge_after.is_some() {
                    *lock(&self.chain) = Some(Chain {
                        generation: self.stamp.generation,
                        base_zxid: zxid,
                        end_zxid: zxid,
                        base_bytes: written.bytes,
                        delta: Default::default(),
                    });
                }
                self.on_disk.fetch_max(zxid, Ordering::AcqRel);
                self.record(zxid, ms, Some(written.bytes));
                log_snapshot_written(
                    self.purge_after.is_some(),
                    &written.path,
                    zxid,
                    frozen.node_count(),
                    written.bytes,
                    ms,
                );
            }
            Err(StorageError::Cancelled) => {
                tracing::debug!(zxid = format!("{:#x}", frozen.zxid()), "snapshot cancelled")
            }
            // A failed snapshot loses nothing the previous one had: say so and try again at
            // the next interval (diskless: at the next write).
            Err(e) => {
                tracing::error!(error = %e, diskless = self.purge_after.is_some(), "snapshot failed; the previous snapshot (and the log, when there is one) still stands")
            }
        }
    }
}

/// A poisoned lock only means another snapshot thread panicked; the chain it guards is
/// updated in one assignment, so it is whole.
pub fn lock(chain: &std::sync::Mutex<Option<Chain>>) -> std::sync::MutexGuard<'_, Option<Chain>> {
    chain
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The spare buffer holds no state that a panic could leave half made.
pub fn lock_spare(spare: &std::sync::Mutex<Vec<u8>>) -> std::sync::MutexGuard<'_, Vec<u8>> {
    spare
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A delta file left open by a thread that panicked is dropped: the next batch opens it again.
fn lock_open_delta(
    open: &std::sync::Mutex<Option<crate::delta::OpenDelta>>,
) -> std::sync::MutexGuard<'_, Option<crate::delta::OpenDelta>> {
    open.lock().unwrap_or_else(|poisoned| {
        let mut open = poisoned.into_inner();
        *open = None;
        open
    })
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
