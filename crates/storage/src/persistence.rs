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

use crate::delta::Journal;
use crate::error::{Result, StorageError};
use crate::execution::{Clock, Execution};
use crate::fs::FileSystem;
use crate::group_commit::{GroupCommit, GroupCommitOptions, WalStats};
use crate::layout::Layout;
use crate::recovery::{self, Recovered};
use crate::snapshot_job::{lock_spare, Chain, SnapshotJob, Work};
use crate::stepped_log::SteppedLog;
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
    /// Diskless: the least rest after a delta batch, in ms, unless the rest percent is 0
    /// (`busySnapshotMinRestMs`, server default [`crate::snapshot_job::DELTA_REST_MIN_MS`]).
    /// It bounds the fsyncs busy snapshots make (at most 1000 / this a second) and adds at most
    /// this much to what a whole-ensemble power loss can take.
    pub delta_rest_min_ms: u64,
    /// Threads in production; stepped by the host in the deterministic simulator.
    pub execution: Execution,
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
    /// The latest snapshots' durations in ms (for `snapshottime`'s quantile).
    pub recent_millis: crate::recent_samples::RecentSamples,
}

/// Diskless: transactions waiting for the next delta beyond this many bytes are dropped, and the
/// next busy snapshot is a full one (the disk is behind; the journal must not grow unbounded).
const JOURNAL_BYTES_MAX: usize = 64 << 20;

/// Diskless: deltas are compacted into a full snapshot once the files on disk hold
/// [`GARBAGE_FACTOR`] times as many bytes that no longer describe the tree (overwritten data,
/// deleted znodes, closed sessions) as the tree's own snapshot would take, or this many,
/// whichever is more.
const COMPACT_BYTES_MIN: u64 = 4 << 20;

/// A compaction rewrites the whole tree to drop what is stale. Compacting when the stale bytes
/// reach four times the live ones costs a quarter byte of snapshot per byte of transactions
/// that made them stale, and bounds what recovery reads to five times the tree's snapshot.
/// Transactions that only add to the tree (creates) leave nothing stale: their deltas are as
/// compact as a snapshot of what they built, so a growing tree is not rewritten again and
/// again. (First choice, compacting at one full snapshot's worth of deltas, then at four:
/// with a growing tree each costs about one byte of snapshot per byte of creates, the whole
/// tree rewritten every time it grew fivefold; a leader under 60 creating clients spent a
/// third of its CPU in compactions while one ran; docs/perf.md.)
const GARBAGE_FACTOR: u64 = 4;

/// A leader's snapshot saved but not yet standing in for the log it replaces.
#[derive(Debug, Clone, Copy)]
struct Replacing {
    /// The snapshot's zxid.
    zxid: i64,
    /// It commits once the log is durable up to here: the end of the leader's stream.
    commit_at: i64,
}

/// The log writer: a thread, or stepped by the host.
enum Log {
    Thread(GroupCommit),
    Stepped(Box<SteppedLog>),
}

impl Log {
    fn append(&mut self, zxid: i64, payload: Vec<u8>) -> Result<()> {
        match self {
            Log::Thread(wal) => wal.append(zxid, payload),
            Log::Stepped(log) => log.append(zxid, payload),
        }
    }

    fn truncate_after(&mut self, zxid: i64) -> Result<()> {
        match self {
            Log::Thread(wal) => wal.truncate_after(zxid),
            Log::Stepped(log) => log.truncate_after(zxid),
        }
    }

    fn reset(&mut self, zxid: i64, generation: u32) -> Result<()> {
        match self {
            Log::Thread(wal) => wal.reset(zxid, generation),
            Log::Stepped(log) => log.reset(zxid, generation),
        }
    }

    fn has_failed(&self) -> bool {
        match self {
            Log::Thread(wal) => wal.has_failed(),
            Log::Stepped(log) => log.has_failed(),
        }
    }

    fn stats(&self) -> Arc<WalStats> {
        match self {
            Log::Thread(wal) => wal.stats.clone(),
            Log::Stepped(log) => log.stats.clone(),
        }
    }
}

pub struct Persistence {
    fs: Arc<dyn FileSystem>,
    options: PersistenceOptions,
    /// The log writer; none in diskless mode.
    wal: Option<Log>,
    wal_stats: Arc<WalStats>,
    /// Diskless: reports durability as transactions are handed over.
    durable_now: Option<Box<dyn FnMut(i64) + Send>>,
    /// Diskless: a whole checkpoint is on disk and must go before anything new is acknowledged.
    checkpoint_on_disk: bool,
    since_snapshot: u64,
    next_snapshot_at: u64,
    snapshot_running: Arc<AtomicBool>,
    pub snapshot_stats: Arc<SnapshotStats>,
    /// When the next purge is due, on `clock`.
    next_purge: Option<u64>,
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
    clock: Clock,
    /// Stepped: the snapshot started and not yet written (see [`Persistence::run_snapshot`]).
    pending_snapshot: Option<SnapshotJob>,
    /// Told when the log is cut back (see [`Persistence::on_log_cut`]).
    log_cut: Option<Box<dyn FnMut(i64) + Send>>,
    /// Durable mode: a leader's snapshot waiting for its stream (see
    /// [`Persistence::replace_with_snapshot`]).
    replacing: Option<Replacing>,
    /// Hands snapshots to the snapshot thread (see [`Persistence::snapshot_worker`]).
    worker: Option<std::sync::mpsc::Sender<SnapshotJob>>,
    /// Diskless: the transactions applied since the state on disk began to be written, for the
    /// next delta ([`crate::delta`]); `journal_broken` when some were dropped.
    journal: Journal,
    journal_broken: bool,
    /// Diskless: the buffer of the last delta batch written, for the next journal.
    spare_frames: Arc<std::sync::Mutex<Vec<u8>>>,
    delta_file: Arc<std::sync::Mutex<Option<crate::delta::OpenDelta>>>,
    /// Diskless: what the disk holds as a full snapshot plus deltas (None: the next busy
    /// snapshot must be a full one).
    chain: Arc<std::sync::Mutex<Option<Chain>>>,
    #[cfg(feature = "planted-bugs")]
    planted_bug: Option<crate::planted::StorageBug>,
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
            let group_options = GroupCommitOptions {
                force_sync: options.force_sync,
                fsync_warn: options.fsync_warn,
            };
            let wal = if options.execution.is_stepped() {
                let log = SteppedLog::new(writer, group_options, on_durable, on_failure);
                Log::Stepped(Box::new(log))
            } else {
                Log::Thread(
                    GroupCommit::start(writer, group_options, on_durable, on_failure).map_err(
                        StorageError::io("start log writer thread", &options.layout.wal_dir),
                    )?,
                )
            };
            (Some(wal), None)
        };
        let wal_stats = wal.as_ref().map_or_else(Arc::default, Log::stats);
        let checkpoint_on_disk = options.diskless
            && fs
                .list(&options.layout.snap_dir)
                .is_ok_and(|names| names.iter().any(|n| n == crate::checkpoint::FILE_NAME));
        let random = match options.execution {
            Execution::Threads => seed(),
            Execution::Stepped { seed } => seed | 1,
        };
        let clock = Clock::for_execution(options.execution);
        let mut persistence = Persistence {
            fs,
            next_purge: (!options.purge_interval.is_zero())
                .then(|| clock.now_ms() + options.purge_interval.as_millis() as u64),
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
            clock,
            pending_snapshot: None,
            log_cut: None,
            replacing: None,
            worker: None,
            journal: Journal::starting_at(recovered.tree.last_processed_zxid()),
            journal_broken: false,
            spare_frames: Arc::default(),
            delta_file: Arc::default(),
            chain: Arc::new(std::sync::Mutex::new(None)),
            #[cfg(feature = "planted-bugs")]
            planted_bug: None,
        };
        persistence.next_snapshot_at = persistence.draw_snapshot_interval();
        if persistence.wal.is_none() {
            *crate::snapshot_job::lock(&persistence.chain) = recovered_chain(
                persistence.fs.as_ref(),
                &persistence.options.layout,
                &recovered,
            );
        }
        Ok((persistence, recovered))
    }

    /// Queues a transaction for the log. Its durability is reported through `on_durable`.
    pub fn append(&mut self, txn: &Txn) -> Result<()> {
        if let Some(wal) = &mut self.wal {
            return wal.append(txn.header.zxid, encode_txn(txn));
        }
        // Diskless: the proposal lives in memory only, so a checkpoint that claims this
        // server's disk holds everything it acknowledged must go before it is acknowledged.
        #[allow(unused_mut)]
        let mut keep = false;
        #[cfg(feature = "planted-bugs")]
        if self.planted_bug == Some(crate::planted::StorageBug::KeepCheckpointAfterAck) {
            keep = true;
        }
        if self.checkpoint_on_disk && !keep {
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
        let layout = &self.options.layout;
        let chain = *crate::snapshot_job::lock(&self.chain);
        let snapshot_present = on_disk >= 0
            && (self.fs.len(&layout.snap_path(on_disk)).is_ok()
                || chain.is_some_and(|c| {
                    c.end_zxid == on_disk
                        && self
                            .fs
                            .len(&crate::delta::path(layout, c.base_zxid))
                            .is_ok()
                }));
        let (base, proposals, wrote_snapshot) = match since(on_disk) {
            Some(proposals) if snapshot_present => (on_disk, proposals, false),
            _ => {
                let frozen = tree.freeze();
                let reused = on_disk == zxid && snapshot_present;
                if !reused {
                    let written = snapshot_file::write(
                        self.fs.as_ref(),
                        &self.options.layout,
                        &frozen,
                        self.stamp(),
                    )?;
                    self.snapshot_on_disk.store(zxid, Ordering::Release);
                    self.full_snapshot_on_disk(zxid, written.bytes);
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
    /// (and none is running), and purges when its interval has passed. Diskless: `txn` joins
    /// the journal of the next delta.
    pub fn applied(&mut self, tree: &DataTree, txn: &Txn) {
        self.since_snapshot += 1;
        if self.wal.is_none() && !self.journal_broken {
            self.journal.push(txn);
            if self.journal.bytes() > JOURNAL_BYTES_MAX {
                tracing::warn!(
                    bytes = self.journal.bytes(),
                    "diskless: the disk is far behind the writes; the next busy snapshot writes the whole tree"
                );
                self.journal_broken = true;
                self.journal.drop_transactions();
            }
        }
        // Diskless: busy snapshots (thesis Alg. 4.1), so their frequency falls as the tree grows.
        let due = match self.wal {
            None => self.rested(),
            Some(_) => self.since_snapshot >= self.next_snapshot_at,
        };
        if due && !self.snapshot_running() {
            self.snapshot(tree);
        }
        let now = self.clock.now_ms();
        if self.next_purge.is_some_and(|at| now >= at) && self.replacing.is_none() {
            self.next_purge = Some(now + self.options.purge_interval.as_millis() as u64);
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
        self.clock.now_ms() >= self.rest_until_ms.load(Ordering::Acquire)
    }

    fn seal(&self, journal: &mut Journal, label: u32) {
        #[cfg(feature = "planted-bugs")]
        if self.planted_bug == Some(crate::planted::StorageBug::LabelOpensBatch) {
            journal.seal_opening(label);
            return;
        }
        journal.seal(label);
    }

    /// Starts a consistent snapshot of `tree` as it is now, on its own thread (stepped: when
    /// the host runs it). Returns false if one is already running.
    pub fn snapshot(&mut self, tree: &DataTree) -> bool {
        // Of a generation recovery may still throw away: it waits for the commit.
        if self.replacing.is_some() {
            return false;
        }
        if self.snapshot_running.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.since_snapshot = 0;
        self.next_snapshot_at = self.draw_snapshot_interval();
        let zxid = tree.last_processed_zxid();
        self.running_zxid = zxid;
        let stamp = self.stamp();
        let work = match self.take_delta(tree) {
            Some(mut journal) => {
                self.seal(&mut journal, stamp.label);
                Work::Delta(journal)
            }
            None => {
                // The full snapshot holds everything applied so far.
                self.journal = Journal::starting_at(zxid);
                self.journal_broken = false;
                Work::Full(tree.freeze())
            }
        };
        let job = SnapshotJob {
            fs: self.fs.clone(),
            layout: self.options.layout.clone(),
            work,
            chain: self.chain.clone(),
            spare_frames: self.spare_frames.clone(),
            delta_file: self.delta_file.clone(),
            delta_step: crate::delta::preallocate_step(self.options.segment_bytes),
            stamp,
            cancel: self.cancel_snapshot.clone(),
            running: self.snapshot_running.clone(),
            stats: self.snapshot_stats.clone(),
            on_disk: self.snapshot_on_disk.clone(),
            clock: self.clock.clone(),
            rest_until_ms: self.rest_until_ms.clone(),
            rest_percent: u64::from(self.options.busy_snapshot_rest_percent),
            delta_rest_min_ms: self.options.delta_rest_min_ms,
            // Diskless snapshots come back to back: purge after each, or they fill the disk.
            purge_after: self
                .wal
                .is_none()
                .then_some(self.options.snap_retain_count.max(1)),
        };
        if self.options.execution.is_stepped() {
            self.pending_snapshot = Some(job);
            return true;
        }
        match self.snapshot_worker() {
            // The worker is alive while its sender is: a send fails only if it panicked.
            Some(worker) => match worker.send(job) {
                Ok(()) => true,
                Err(_) => {
                    tracing::error!("the snapshot thread has stopped");
                    self.worker = None;
                    self.snapshot_running.store(false, Ordering::Release);
                    false
                }
            },
            None => {
                self.snapshot_running.store(false, Ordering::Release);
                false
            }
        }
    }

    /// The thread that writes snapshots, started at the first one. One thread for the server's
    /// life: diskless delta batches come as often as writes do, and a thread started for each
    /// cost more than the batch.
    fn snapshot_worker(&mut self) -> Option<&std::sync::mpsc::Sender<SnapshotJob>> {
        if self.worker.is_none() {
            let (tx, rx) = std::sync::mpsc::channel::<SnapshotJob>();
            let spawned = std::thread::Builder::new()
                .name("meerkat-snapshot".into())
                .spawn(move || {
                    // At most one job is ever queued: the next starts only when the
                    // running flag the last one clears is down.
                    for job in rx {
                        job.run(None);
                    }
                });
            match spawned {
                Ok(_) => self.worker = Some(tx),
                Err(e) => {
                    tracing::error!(error = %e, "could not start the snapshot thread");
                    return None;
                }
            }
        }
        self.worker.as_ref()
    }

    /// Diskless: the journal, to be written as a delta, if that is what the next busy snapshot
    /// should be: it continues the state on disk exactly, reaches the tree's state, and the
    /// files on disk do not hold too much that is stale (see [`GARBAGE_FACTOR`]).
    fn take_delta(&mut self, tree: &DataTree) -> Option<Journal> {
        let zxid = tree.last_processed_zxid();
        if self.wal.is_some() || self.journal_broken || self.journal.is_empty() {
            return None;
        }
        let chain = (*crate::snapshot_job::lock(&self.chain))?;
        let continues = chain.generation == self.generation
            && chain.end_zxid == self.journal.prev_zxid
            && self.journal.last_zxid == zxid;
        if !continues || too_stale(&chain, self.journal.bytes() as u64, tree) {
            return None;
        }
        let spare = std::mem::take(&mut *lock_spare(&self.spare_frames));
        let next = self.journal.next(zxid, spare);
        Some(std::mem::replace(&mut self.journal, next))
    }

    /// Diskless: the disk now holds exactly a full snapshot of `zxid` of `bytes`.
    fn full_snapshot_on_disk(&mut self, zxid: i64, bytes: u64) {
        *crate::snapshot_job::lock(&self.chain) = Some(Chain {
            generation: self.generation,
            base_zxid: zxid,
            end_zxid: zxid,
            base_bytes: bytes,
            delta: Default::default(),
        });
        self.journal = Journal::starting_at(zxid);
        self.journal_broken = false;
    }

    /// Stepped: writes the snapshot started last, as if writing it took `duration_ms` (the
    /// busy snapshot's rest follows from it). Returns whether there was one.
    pub fn run_snapshot(&mut self, duration_ms: u64) -> bool {
        match self.pending_snapshot.take() {
            Some(job) => {
                job.run(Some(duration_ms));
                true
            }
            None => false,
        }
    }

    /// Stepped: writes and syncs the queued log records as one group and reports them
    /// durable (the writer thread's work, when the host says it is done).
    pub fn flush_log(&mut self) -> Result<()> {
        match &mut self.wal {
            Some(Log::Stepped(log)) => log.flush(),
            _ => Ok(()),
        }
    }

    /// Stepped: switches on a deliberately wrong variant of the log (the simulator's proof
    /// that it catches it).
    #[cfg(feature = "planted-bugs")]
    pub fn plant(&mut self, bug: crate::planted::StorageBug) {
        self.planted_bug = Some(bug);
        if let Some(Log::Stepped(log)) = &mut self.wal {
            log.planted_bug = Some(bug);
        }
    }

    /// `hook(zxid)` runs whenever the log is cut back to `zxid` (TRUNC, or a leader's
    /// snapshot replacing it), right after the cut and before anything is appended again: a
    /// durability report from before it that names a later zxid no longer holds, and the
    /// owner of the reports must lower it (`on_durable` only ever raises).
    pub fn on_log_cut(&mut self, hook: Box<dyn FnMut(i64) + Send>) {
        self.log_cut = Some(hook);
    }

    fn log_was_cut(&mut self, zxid: i64) {
        #[cfg(feature = "planted-bugs")]
        if self.planted_bug == Some(crate::planted::StorageBug::StaleDurableAfterTruncate) {
            return;
        }
        if let Some(hook) = self.log_cut.as_mut() {
            hook(zxid);
        }
    }

    /// Stepped: whether log records wait for [`Persistence::flush_log`].
    pub fn log_queued(&self) -> bool {
        matches!(&self.wal, Some(Log::Stepped(log)) if log.has_queued())
    }

    /// Stepped: the time is now `now_ms` (ms since the host started; never goes back).
    pub fn set_clock(&self, now_ms: u64) {
        self.clock.set(now_ms);
    }

    /// Diskless: the epoch label snapshots started now carry.
    pub fn epoch_label(&self) -> u32 {
        self.epoch_label
    }

    pub fn snapshot_running(&self) -> bool {
        self.snapshot_running.load(Ordering::Acquire)
    }

    fn stamp(&self) -> snapshot_file::Stamp {
        snapshot_file::Stamp {
            created_ms: self.clock.wall_ms(),
            generation: self.generation,
            label: self.epoch_label,
        }
    }

    /// Waits until no snapshot thread runs (one told to cancel stops at its next chunk), then
    /// clears the cancel request. Stepped: the pending snapshot runs now (or, cancelled, gives
    /// up at once).
    fn wait_for_snapshot(&mut self) {
        if let Some(job) = self.pending_snapshot.take() {
            job.run(Some(0));
        }
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
        if self.options.execution.is_stepped() {
            if let Err(e) = purge::purge(fs.as_ref(), &layout, retain) {
                tracing::error!(error = %e, "purge failed");
            }
            return;
        }
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
        self.wal.as_ref().is_some_and(Log::has_failed)
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
    ///
    /// A leader's snapshot still pending commits here if the cut leaves its log whole: the
    /// cut made everything up to `zxid` durable, and the leader that asked for it holds
    /// nothing after `zxid` that this log does.
    pub fn truncate_log_after(&mut self, zxid: i64) -> Result<()> {
        self.cut_log_after(zxid)?;
        if let Some(pending) = &mut self.replacing {
            pending.commit_at = pending.commit_at.min(zxid).max(pending.zxid);
        }
        self.log_was_cut(zxid);
        self.log_durable(zxid)
    }

    fn cut_log_after(&mut self, zxid: i64) -> Result<()> {
        match &mut self.wal {
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
    /// durably, and returns the tree they hold. `stream_end` is the last zxid the leader
    /// streams after the snapshot in the same sync.
    ///
    /// Durable mode: the snapshot replaces the log only once the log holds the stream up to
    /// `stream_end` durably ([`Persistence::log_durable`]); until then a crash recovers the
    /// state from before the SNAP, whose log may hold transactions this server acknowledged
    /// ([`crate::replacement`]). No snapshot or purge runs meanwhile: it would be of a
    /// generation recovery may still throw away.
    ///
    /// Diskless: there is no log to keep, so the snapshot stands at once and the failure
    /// checkpoint, which described the replaced state, goes.
    pub fn replace_with_snapshot(&mut self, bytes: &[u8], stream_end: i64) -> Result<DataTree> {
        // A snapshot still being written is of the state being replaced: abandon it.
        self.cancel_snapshot.store(true, Ordering::Release);
        self.wait_for_snapshot();
        if self.wal.is_none() {
            return self.replace_diskless(bytes);
        }
        let earlier_pending = self.replacing.is_some();
        let generation = if earlier_pending {
            self.generation
        } else {
            self.generation + 1
        };
        #[allow(unused_mut)]
        let mut keep_newer_snapshots = false;
        #[cfg(feature = "planted-bugs")]
        if self.planted_bug == Some(crate::planted::StorageBug::KeepSupersededSnapshots) {
            keep_newer_snapshots = true;
        }
        let how = crate::replacement::Begin {
            generation,
            earlier_pending,
            keep_newer_snapshots,
        };
        let loaded = crate::replacement::begin(self.fs.as_ref(), &self.options.layout, bytes, how)?;
        let zxid = loaded.header.zxid;
        if let Some(wal) = &mut self.wal {
            wal.reset(zxid, generation)?;
        }
        self.generation = generation;
        self.epoch_label = loaded.header.epoch_label();
        self.since_snapshot = 0;
        self.replacing = Some(Replacing {
            zxid,
            commit_at: stream_end.max(zxid),
        });
        #[cfg(feature = "planted-bugs")]
        if self.planted_bug == Some(crate::planted::StorageBug::DropLogAtSnap) {
            self.commit_replacement()?;
        }
        self.log_was_cut(zxid);
        // Nothing streamed after the snapshot: the log it replaces is already not needed.
        self.log_durable(zxid)?;
        Ok(loaded.tree)
    }

    fn replace_diskless(&mut self, bytes: &[u8]) -> Result<DataTree> {
        let generation = self.generation + 1;
        let loaded =
            snapshot_file::save_bytes(self.fs.as_ref(), &self.options.layout, bytes, generation)?;
        self.remove_snapshots_after(loaded.header.zxid)?;
        // The leader's state replaces ours; an older checkpoint no longer describes what this
        // server holds.
        crate::checkpoint::remove(self.fs.as_ref(), &self.options.layout)?;
        self.checkpoint_on_disk = false;
        self.generation = generation;
        self.epoch_label = loaded.header.epoch_label();
        self.snapshot_on_disk
            .store(loaded.header.zxid, Ordering::Release);
        self.full_snapshot_on_disk(loaded.header.zxid, bytes.len() as u64);
        self.since_snapshot = 0;
        self.log_was_cut(loaded.header.zxid);
        Ok(loaded.tree)
    }

    /// The host's durability report: the log holds every transaction up to `zxid` durably.
    /// Commits a pending replacement whose stream that covers (see
    /// [`Persistence::replace_with_snapshot`]); call it before acknowledging anything.
    pub fn log_durable(&mut self, zxid: i64) -> Result<()> {
        match self.replacing {
            Some(pending) if zxid >= pending.commit_at => self.commit_replacement(),
            _ => Ok(()),
        }
    }

    /// Whether a leader's snapshot waits for its stream to be durable.
    pub fn replacement_pending(&self) -> bool {
        self.replacing.is_some()
    }

    fn commit_replacement(&mut self) -> Result<()> {
        let Some(pending) = self.replacing.take() else {
            return Ok(());
        };
        crate::replacement::commit(self.fs.as_ref(), &self.options.layout, pending.zxid)?;
        self.snapshot_on_disk.store(pending.zxid, Ordering::Release);
        tracing::info!(
            zxid = format!("{:#x}", pending.zxid),
            "the leader's snapshot and the stream after it are durable: the log they replace is deleted"
        );
        Ok(())
    }

    /// Diskless: removes (durably) every snapshot of a later zxid than `zxid`. A leader may
    /// sync a learner with a snapshot older than one the learner took itself (then streams the
    /// rest): recovery, which loads the newest snapshot, must not find the learner's own.
    fn remove_snapshots_after(&mut self, zxid: i64) -> Result<()> {
        #[cfg(feature = "planted-bugs")]
        if self.planted_bug == Some(crate::planted::StorageBug::KeepSupersededSnapshots) {
            return Ok(());
        }
        let dir = &self.options.layout.snap_dir;
        let names = self
            .fs
            .list(dir)
            .map_err(StorageError::io("list snapshots", dir))?;
        let mut removed = false;
        for name in names {
            let Some(at) = crate::layout::parse_snap_name(&name) else {
                continue;
            };
            if at > zxid {
                let path = self.options.layout.snap_path(at);
                tracing::info!(path = %path.display(), "removing a snapshot the leader's snapshot supersedes");
                self.fs
                    .remove(&path)
                    .map_err(StorageError::io("remove superseded snapshot", &path))?;
                removed = true;
            }
        }
        if removed {
            self.fs
                .sync_dir(dir)
                .map_err(StorageError::io("sync snapshot directory", dir))?;
        }
        Ok(())
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
        match self.wal.take() {
            Some(Log::Thread(wal)) => wal.close(),
            Some(Log::Stepped(mut log)) => {
                let _ = log.flush();
            }
            None => {}
        }
    }
}

impl Drop for Persistence {
    /// A snapshot still being written would otherwise outlive the server that took it and race
    /// the next one on the same data dir. Bounded: a snapshot of a huge tree is abandoned as a
    /// temp file, which recovery removes.
    fn drop(&mut self) {
        // Stepped: a snapshot the host never ran was never written.
        if self.pending_snapshot.take().is_some() {
            self.snapshot_running.store(false, Ordering::Release);
        }
        self.cancel_snapshot.store(true, Ordering::Release);
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.snapshot_running.load(Ordering::Acquire) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Diskless: whether the chain on disk, grown by `pending` more bytes of deltas, holds so much
/// that no longer describes `tree` that it should be compacted into a full snapshot. What is
/// stale is estimated as what the files hold beyond what a snapshot of the tree would.
fn too_stale(chain: &Chain, pending: u64, tree: &DataTree) -> bool {
    let live = snapshot_file::estimated_bytes(tree.node_count(), tree.approximate_data_size());
    let on_disk = chain
        .base_bytes
        .saturating_add(chain.delta.written)
        .saturating_add(pending);
    let stale = on_disk.saturating_sub(live);
    stale >= live.saturating_mul(GARBAGE_FACTOR).max(COMPACT_BYTES_MIN)
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

/// Diskless, at start-up: the chain recovery loaded. None when a delta file was replayed: it
/// may end in a torn batch that nothing must follow, so the first busy snapshot is a full one.
fn recovered_chain(fs: &dyn FileSystem, layout: &Layout, recovered: &Recovered) -> Option<Chain> {
    let (path, zxid) = recovered.snapshot.as_ref()?;
    if recovered.deltas > 0 || fs.len(&crate::delta::path(layout, *zxid)).is_ok() {
        return None;
    }
    Some(Chain {
        generation: recovered.generation,
        base_zxid: *zxid,
        end_zxid: *zxid,
        base_bytes: fs.len(path).unwrap_or(0),
        delta: Default::default(),
    })
}
