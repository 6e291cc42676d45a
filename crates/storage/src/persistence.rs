//! The server's one handle on persistence: where committed transactions go before they are
//! applied, and when snapshots are taken. The durability mode is a policy of this type
//! (DESIGN.md §5), so the server's request path does not change between modes.
//!
//! * `Durable` (the default): every transaction is appended to the log and fsynced (group
//!   commit) before `on_durable` reports it; a snapshot every `snapCount` transactions,
//!   randomised per server so an ensemble does not snapshot in unison.
//! * `Diskless` (DESIGN.md §5, thesis ch. 4): no log; `on_durable` reports each transaction as
//!   soon as it is handed over. A snapshot starts after every applied write when none is
//!   running (busy snapshots), old snapshots are purged every `purge_interval` keeping
//!   `snap_retain_count`, and [`Persistence::checkpoint`] writes a complete snapshot plus the
//!   acknowledged-uncommitted proposals when the server loses its leader or quorum.

use crate::error::{Result, StorageError};
use crate::fs::FileSystem;
use crate::group_commit::{GroupCommit, GroupCommitOptions, WalStats};
use crate::layout::Layout;
use crate::recovery::{self, Recovered};
use crate::wal::encode_txn;
use crate::wal_writer::WalWriter;
use crate::{purge, snapshot_file};
use proto::txn::Txn;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tree::DataTree;

#[derive(Debug, Clone)]
pub struct PersistenceOptions {
    pub layout: Layout,
    pub force_sync: bool,
    /// `preAllocSize`, bytes reserved per log segment.
    pub segment_bytes: u64,
    /// `snapCount`: a snapshot after about this many transactions.
    pub snap_count: u64,
    /// `autopurge.snapRetainCount` and `autopurge.purgeInterval` (0: never purge).
    pub snap_retain_count: usize,
    pub purge_interval: Duration,
    pub fsync_warn: Duration,
    /// Standalone applies the whole log at start-up; an ensemble member hands it to Zab.
    pub replay: crate::recovery::Replay,
    /// No transaction log: busy snapshots and failure checkpoints instead.
    pub diskless: bool,
    /// Diskless: after a busy snapshot that took t ms, the next waits t × this / 100 ms
    /// (`busySnapshotRest`, server default 300). 0 is the thesis's back-to-back snapshots
    /// (Alg. 4.1), a core per server under steady writes; 300 caps snapshotting at a quarter of
    /// a core, and widens what a whole-ensemble power loss can lose (docs/durability.md).
    pub busy_snapshot_rest_percent: u32,
}

/// Numbers for operators.
#[derive(Debug, Default)]
pub struct SnapshotStats {
    pub taken: AtomicU64,
    pub last_zxid: AtomicI64,
    pub last_millis: AtomicU64,
    pub last_bytes: AtomicU64,
    pub total_millis: AtomicU64,
    pub max_millis: AtomicU64,
}

pub struct Persistence {
    fs: Arc<dyn FileSystem>,
    options: PersistenceOptions,
    /// The log writer; none in diskless mode.
    wal: Option<GroupCommit>,
    wal_stats: Arc<WalStats>,
    /// Diskless: reports durability as transactions are handed over.
    durable_now: Option<Box<dyn FnMut(i64) + Send>>,
    /// Diskless: a whole checkpoint is on disk and must go before anything new is acknowledged.
    checkpoint_on_disk: bool,
    since_snapshot: u64,
    next_snapshot_at: u64,
    snapshot_running: Arc<AtomicBool>,
    pub snapshot_stats: Arc<SnapshotStats>,
    next_purge: Option<Instant>,
    random: u64,
    /// The log generation: changes when a leader's snapshot replaces the whole log.
    generation: u32,
    /// Diskless: the label snapshots started now carry (see [`Persistence::set_epoch_label`]).
    epoch_label: u32,
    /// The zxid of the snapshot running (or last run).
    running_zxid: i64,
    /// The zxid of the newest complete snapshot in the data dir (-1: none).
    snapshot_on_disk: Arc<AtomicI64>,
    /// Set to make the running snapshot give up (see [`snapshot_file::write_unless_cancelled`]).
    cancel_snapshot: Arc<AtomicBool>,
    /// Diskless: no busy snapshot starts before this many ms after `clock`.
    rest_until_ms: Arc<AtomicU64>,
    clock: Instant,
}

impl Persistence {
    /// Recovers the state from disk and starts the log writer after it. `on_durable(zxid)`
    /// runs on the writer thread whenever transactions up to `zxid` are durable; `on_failure`
    /// runs once if the log cannot be written (the server must stop).
    pub fn open(
        fs: Arc<dyn FileSystem>,
        options: PersistenceOptions,
        on_durable: Box<dyn FnMut(i64) + Send>,
        on_failure: Box<dyn FnOnce(StorageError) + Send>,
    ) -> Result<(Persistence, Recovered)> {
        if !options.force_sync {
            tracing::warn!(
                "forceSync=no: the transaction log is never fsynced. Acknowledged writes can be \
                 LOST if the machine crashes or loses power. Use only for tests."
            );
        }
        let recovered = recovery::recover_with(fs.as_ref(), &options.layout, options.replay)?;
        let (wal, durable_now) = if options.diskless {
            // Epoch files and snapshots live in the snapshot dir; make sure it exists.
            fs.create_dir_all(&options.layout.snap_dir)
                .map_err(StorageError::io(
                    "create data directory",
                    &options.layout.snap_dir,
                ))?;
            (None, Some(on_durable))
        } else {
            let writer = WalWriter::new(
                fs.clone(),
                options.layout.clone(),
                recovered.last_zxid,
                options.segment_bytes,
                recovered.generation,
            );
            let wal = GroupCommit::start(
                writer,
                GroupCommitOptions {
                    force_sync: options.force_sync,
                    fsync_warn: options.fsync_warn,
                },
                on_durable,
                on_failure,
            )
            .map_err(StorageError::io(
                "start log writer thread",
                &options.layout.wal_dir,
            ))?;
            (Some(wal), None)
        };
        let wal_stats = wal.as_ref().map_or_else(Arc::default, |w| w.stats.clone());
        let checkpoint_on_disk = options.diskless
            && fs
                .list(&options.layout.snap_dir)
                .is_ok_and(|names| names.iter().any(|n| n == crate::checkpoint::FILE_NAME));
        let random = seed();
        let mut persistence = Persistence {
            fs,
            next_purge: (!options.purge_interval.is_zero())
                .then(|| Instant::now() + options.purge_interval),
            options,
            wal,
            wal_stats,
            durable_now,
            checkpoint_on_disk,
            since_snapshot: 0,
            next_snapshot_at: 0,
            snapshot_running: Arc::new(AtomicBool::new(false)),
            snapshot_stats: Arc::new(SnapshotStats::default()),
            random,
            generation: recovered.generation,
            epoch_label: recovered.epoch_label,
            running_zxid: -1,
            snapshot_on_disk: Arc::new(AtomicI64::new(
                recovered.snapshot.as_ref().map_or(-1, |(_, zxid)| *zxid),
            )),
            cancel_snapshot: Arc::new(AtomicBool::new(false)),
            rest_until_ms: Arc::new(AtomicU64::new(0)),
            clock: Instant::now(),
        };
        persistence.next_snapshot_at = persistence.draw_snapshot_interval();
        Ok((persistence, recovered))
    }

    /// Queues a transaction for the log. Its durability is reported through `on_durable`.
    pub fn append(&mut self, txn: &Txn) -> Result<()> {
        if let Some(wal) = &self.wal {
            return wal.append(txn.header.zxid, encode_txn(txn));
        }
        // Diskless: the proposal lives in memory only, so a checkpoint that claims this
        // server's disk holds everything it acknowledged must go before it is acknowledged.
        if self.checkpoint_on_disk {
            crate::checkpoint::remove(self.fs.as_ref(), &self.options.layout)?;
            self.checkpoint_on_disk = false;
        }
        if let Some(report) = self.durable_now.as_mut() {
            report(txn.header.zxid);
        }
        Ok(())
    }

    /// Diskless: the failure checkpoint. Afterwards this server's disk holds everything it
    /// acknowledged: its newest snapshot plus the checkpoint's proposals. Blocks the caller,
    /// which is the point: the server takes no requests until it is done (thesis Alg. 4.2).
    ///
    /// `since(z)` returns every proposal after zxid `z` (delivered or not) if the caller still
    /// holds them all in memory. When it does for the newest snapshot on disk, only those are
    /// written, as a durable log would hold them: milliseconds instead of a snapshot of the
    /// whole tree. Otherwise a complete snapshot of `tree` is written (or a busy one of the
    /// same state reused), then `undelivered`, the acknowledged proposals `tree` lacks.
    pub fn checkpoint(
        &mut self,
        tree: &DataTree,
        undelivered: &[Txn],
        since: impl Fn(i64) -> Option<Vec<Txn>>,
    ) -> Result<()> {
        let started = Instant::now();
        let zxid = tree.last_processed_zxid();
        // A busy snapshot of exactly this state is as good as a new one: let it finish.
        // One of an older state is abandoned, not waited for.
        if !(self.snapshot_running() && self.running_zxid == zxid) {
            self.cancel_snapshot.store(true, Ordering::Release);
        }
        self.wait_for_snapshot();
        let on_disk = self.snapshot_on_disk.load(Ordering::Acquire);
        let snapshot_present =
            on_disk >= 0 && self.fs.len(&self.options.layout.snap_path(on_disk)).is_ok();
        let (base, proposals, wrote_snapshot) = match since(on_disk) {
            Some(proposals) if snapshot_present => (on_disk, proposals, false),
            _ => {
                let frozen = tree.freeze();
                let reused = on_disk == zxid && snapshot_present;
                if !reused {
                    snapshot_file::write(
                        self.fs.as_ref(),
                        &self.options.layout,
                        &frozen,
                        self.stamp(),
                    )?;
                    self.snapshot_on_disk.store(zxid, Ordering::Release);
                }
                let after = undelivered
                    .iter()
                    .filter(|t| t.header.zxid > zxid)
                    .cloned()
                    .collect();
                (zxid, after, !reused)
            }
        };
        crate::checkpoint::write(self.fs.as_ref(), &self.options.layout, base, &proposals)?;
        self.checkpoint_on_disk = true;
        tracing::info!(
            snapshot_zxid = format!("{base:#x}"),
            applied_zxid = format!("{zxid:#x}"),
            nodes = tree.node_count(),
            proposals = proposals.len(),
            wrote_snapshot,
            ms = started.elapsed().as_millis() as u64,
            "failure checkpoint written: the newest snapshot and every proposal after it"
        );
        Ok(())
    }

    /// Diskless: the checkpoint left by the last failure, if it is whole.
    pub fn boot_checkpoint(&self) -> Result<Option<crate::checkpoint::Checkpoint>> {
        crate::checkpoint::read(self.fs.as_ref(), &self.options.layout)
    }

    /// Diskless mode (DESIGN.md §5): the host calls this when the applied state holds its
    /// epoch's whole initial history, i.e. when Zab is serving at the end of a batch of
    /// actions. Snapshots started afterwards carry `epoch` as their label; an amnesiac boot
    /// votes with it.
    pub fn set_epoch_label(&mut self, epoch: u32) {
        self.epoch_label = epoch;
    }

    /// The zxid of the newest complete snapshot in the data dir (-1: none yet).
    pub fn newest_snapshot_zxid(&self) -> i64 {
        self.snapshot_on_disk.load(Ordering::Acquire)
    }

    pub fn is_diskless(&self) -> bool {
        self.wal.is_none()
    }

    /// Call after applying each transaction: starts a snapshot when enough have accumulated
    /// (and none is running), and purges when its interval has passed.
    pub fn applied(&mut self, tree: &DataTree) {
        self.since_snapshot += 1;
        // Diskless: busy snapshots (thesis Alg. 4.1), so their frequency falls as the tree grows.
        let due = match self.wal {
            None => self.rested(),
            Some(_) => self.since_snapshot >= self.next_snapshot_at,
        };
        if due && !self.snapshot_running() {
            self.snapshot(tree);
        }
        if self.next_purge.is_some_and(|at| Instant::now() >= at) {
            self.next_purge = Some(Instant::now() + self.options.purge_interval);
            self.start_purge();
        }
    }

    /// Diskless: call now and then (the server does every few milliseconds). Writes applied
    /// while a busy snapshot ran or rested start the next one once it may, so the last writes
    /// before a quiet spell reach the disk without waiting for another write.
    pub fn idle(&mut self, tree: &DataTree) {
        if self.wal.is_none()
            && self.since_snapshot > 0
            && !self.snapshot_running()
            && self.rested()
        {
            self.snapshot(tree);
        }
    }

    /// Diskless: whether the rest after the last busy snapshot is over (see
    /// [`PersistenceOptions::busy_snapshot_rest_percent`]).
    fn rested(&self) -> bool {
        self.clock.elapsed().as_millis() as u64 >= self.rest_until_ms.load(Ordering::Acquire)
    }

    /// Starts a consistent snapshot of `tree` as it is now, on its own thread. Returns false
    /// if one is already running.
    pub fn snapshot(&mut self, tree: &DataTree) -> bool {
        if self.snapshot_running.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.since_snapshot = 0;
        self.next_snapshot_at = self.draw_snapshot_interval();
        self.running_zxid = tree.last_processed_zxid();
        let frozen = tree.freeze();
        let (fs, layout) = (self.fs.clone(), self.options.layout.clone());
        let (running, stats) = (self.snapshot_running.clone(), self.snapshot_stats.clone());
        let stamp = self.stamp();
        let cancel = self.cancel_snapshot.clone();
        let (clock, rest_until_ms) = (self.clock, self.rest_until_ms.clone());
        let on_disk = self.snapshot_on_disk.clone();
        let rest_percent = u64::from(self.options.busy_snapshot_rest_percent);
        // Diskless snapshots come back to back: purge after each, or they fill the disk.
        let purge_after = self
            .wal
            .is_none()
            .then_some(self.options.snap_retain_count.max(1));
        let spawned = std::thread::Builder::new()
            .name("meerkat-snapshot".into())
            .spawn(move || {
                let started = Instant::now();
                match snapshot_file::write_unless_cancelled(fs.as_ref(), &layout, &frozen, stamp, &cancel) {
                    Ok(written) => {
                        let ms = started.elapsed().as_millis() as u64;
                        let ended = clock.elapsed().as_millis() as u64;
                        rest_until_ms.store(ended + ms * rest_percent / 100, Ordering::Release);
                        on_disk.fetch_max(frozen.zxid(), Ordering::AcqRel);
                        stats.taken.fetch_add(1, Ordering::Relaxed);
                        stats.last_zxid.store(frozen.zxid(), Ordering::Relaxed);
                        stats.last_millis.store(ms, Ordering::Relaxed);
                        stats.last_bytes.store(written.bytes, Ordering::Relaxed);
                        stats.total_millis.fetch_add(ms, Ordering::Relaxed);
                        stats.max_millis.fetch_max(ms, Ordering::Relaxed);
                        log_snapshot_written(
                            purge_after.is_some(),
                            &written.path,
                            frozen.zxid(),
                            frozen.node_count(),
                            written.bytes,
                            ms,
                        );
                    }
                    Err(StorageError::Cancelled) => {
                        tracing::debug!(zxid = format!("{:#x}", frozen.zxid()), "snapshot cancelled")
                    }
                    // A failed snapshot loses nothing the previous one had: say so and try again
                    // at the next interval (diskless: at the next write).
                    Err(e) => tracing::error!(error = %e, diskless = purge_after.is_some(), "snapshot failed; the previous snapshot (and the log, when there is one) still stands"),
                }
                if let Some(retain) = purge_after {
                    if let Err(e) = purge::purge_keeping(fs.as_ref(), &layout, retain) {
                        tracing::error!(error = %e, "purge of old snapshots failed");
                    }
                }
                running.store(false, Ordering::Release);
            });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "could not start the snapshot thread");
            self.snapshot_running.store(false, Ordering::Release);
            return false;
        }
        true
    }

    pub fn snapshot_running(&self) -> bool {
        self.snapshot_running.load(Ordering::Acquire)
    }

    fn stamp(&self) -> snapshot_file::Stamp {
        snapshot_file::Stamp {
            created_ms: wall_ms(),
            generation: self.generation,
            label: self.epoch_label,
        }
    }

    /// Waits until no snapshot thread runs (one told to cancel stops at its next chunk), then
    /// clears the cancel request.
    fn wait_for_snapshot(&self) {
        while self.snapshot_running() {
            std::thread::sleep(Duration::from_micros(200));
        }
        self.cancel_snapshot.store(false, Ordering::Release);
    }

    fn start_purge(&self) {
        let (fs, layout, retain) = (
            self.fs.clone(),
            self.options.layout.clone(),
            self.options.snap_retain_count,
        );
        let _ = std::thread::Builder::new()
            .name("meerkat-purge".into())
            .spawn(move || {
                if let Err(e) = purge::purge(fs.as_ref(), &layout, retain) {
                    tracing::error!(error = %e, "purge failed");
                }
            });
    }

    pub fn wal_stats(&self) -> &Arc<WalStats> {
        &self.wal_stats
    }

    pub fn has_failed(&self) -> bool {
        self.wal.as_ref().is_some_and(GroupCommit::has_failed)
    }

    pub fn options(&self) -> &PersistenceOptions {
        &self.options
    }

    /// ZooKeeper's rule: between snapCount/2 and snapCount transactions, drawn afresh each time.
    fn draw_snapshot_interval(&mut self) -> u64 {
        let half = (self.options.snap_count / 2).max(1);
        // xorshift64: no need for a cryptographic generator to spread snapshot times.
        self.random ^= self.random << 13;
        self.random ^= self.random >> 7;
        self.random ^= self.random << 17;
        half + self.random % half
    }

    /// Synchronous (Zab's TRUNC): writes what is queued, then durably drops every log record
    /// after `zxid`.
    pub fn truncate_log_after(&mut self, zxid: i64) -> Result<()> {
        match &self.wal {
            Some(wal) => wal.truncate_after(zxid),
            // Diskless: the proposals were never on disk, except those a whole checkpoint
            // saved. Those after `zxid` are cut too, or a restart would vote with (and a
            // leader re-propose) proposals the leader has just discarded.
            None if self.checkpoint_on_disk => {
                crate::checkpoint::truncate_after(self.fs.as_ref(), &self.options.layout, zxid)
            }
            None => Ok(()),
        }
    }

    /// The tree as snapshot bytes, exactly at its last applied zxid (what a leader sends a
    /// learner that needs SNAP).
    pub fn snapshot_bytes(tree: &DataTree) -> Vec<u8> {
        Self::snapshot_bytes_of(&tree.freeze())
    }

    /// As [`Persistence::snapshot_bytes`], from a frozen copy (on any thread).
    pub fn snapshot_bytes_of(frozen: &tree::TreeSnapshot) -> Vec<u8> {
        snapshot_file::encode_to_vec(frozen, wall_ms())
    }

    /// Synchronous (Zab's SNAP): checks snapshot bytes received from the leader, stores them
    /// durably, drops the whole log they replace, and returns the tree they hold.
    ///
    /// Crash-safe in every order: the snapshot is saved as a new log generation before the old
    /// segments go, and recovery never replays segments of an older generation than the
    /// snapshot it loaded, so a divergent old history cannot leak onto the leader's state.
    pub fn replace_with_snapshot(&mut self, bytes: &[u8]) -> Result<DataTree> {
        // A snapshot still being written is of the state being replaced: abandon it.
        self.cancel_snapshot.store(true, Ordering::Release);
        self.wait_for_snapshot();
        let generation = self.generation + 1;
        let loaded =
            snapshot_file::save_bytes(self.fs.as_ref(), &self.options.layout, bytes, generation)?;
        match &self.wal {
            Some(wal) => wal.reset(loaded.header.zxid, generation)?,
            // Diskless: the leader's state replaces ours; an older checkpoint no longer
            // describes what this server holds.
            None => {
                crate::checkpoint::remove(self.fs.as_ref(), &self.options.layout)?;
                self.checkpoint_on_disk = false;
            }
        }
        self.generation = generation;
        self.epoch_label = loaded.header.epoch_label();
        self.snapshot_on_disk
            .store(loaded.header.zxid, Ordering::Release);
        self.since_snapshot = 0;
        Ok(loaded.tree)
    }

    pub fn epochs(&self) -> Result<crate::epoch::Epochs> {
        crate::epoch::read(self.fs.as_ref(), &self.options.layout)
    }

    /// Synchronous: durably records acceptedEpoch.
    pub fn save_accepted_epoch(&self, epoch: u32) -> Result<()> {
        crate::epoch::save(
            self.fs.as_ref(),
            &self.options.layout,
            crate::epoch::ACCEPTED,
            epoch,
        )
    }

    /// Synchronous: durably records currentEpoch.
    pub fn save_current_epoch(&self, epoch: u32) -> Result<()> {
        crate::epoch::save(
            self.fs.as_ref(),
            &self.options.layout,
            crate::epoch::CURRENT,
            epoch,
        )
    }

    /// Stops the log writer after it has written and synced everything queued.
    pub fn close(mut self) {
        if let Some(wal) = self.wal.take() {
            wal.close();
        }
    }
}

impl Drop for Persistence {
    /// A snapshot still being written would otherwise outlive the server that took it and race
    /// the next one on the same data dir. Bounded: a snapshot of a huge tree is abandoned as a
    /// temp file, which recovery removes.
    fn drop(&mut self) {
        self.cancel_snapshot.store(true, Ordering::Release);
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.snapshot_running.load(Ordering::Acquire) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

fn seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    (nanos ^ (u64::from(std::process::id()) << 32)) | 1
}

fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
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
