//! The log's writer thread and its group commit (DESIGN.md §5): while one fsync runs, new
//! records queue; the next write takes all of them and one fsync covers the whole group. The
//! caller learns "durable up to zxid" through a callback and only then applies and answers.

use crate::error::{Result, StorageError};
use crate::wal_writer::WalWriter;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Records queued for the writer at most; beyond it the appender waits (backpressure).
pub const QUEUE_LEN_MAX: usize = 16_384;
/// Bytes one group may hold before it is written, so a burst does not build one huge buffer.
const GROUP_BYTES_MAX: usize = 8 << 20;

#[derive(Debug, Clone)]
pub struct GroupCommitOptions {
    /// `forceSync`: when false, records are written but never fsynced.
    pub force_sync: bool,
    /// `fsync.warningthresholdms`: a slower fsync is logged with its duration.
    pub fsync_warn: Duration,
}

/// Counters for operators (mntr, stat).
#[derive(Debug, Default)]
pub struct WalStats {
    pub records: AtomicU64,
    pub groups: AtomicU64,
    pub fsyncs: AtomicU64,
    pub fsync_micros_total: AtomicU64,
    pub fsync_micros_max: AtomicU64,
    /// u64::MAX until the first fsync.
    pub fsync_micros_min: AtomicU64,
    /// The latest fsyncs' durations in µs (for `fsynctime`'s quantile).
    pub fsync_recent_micros: crate::recent_samples::RecentSamples,
    pub durable_zxid: AtomicU64,
}

/// What the writer thread is asked to do, in order.
enum Command {
    Append(i64, Vec<u8>),
    /// Drop records after the zxid; reply when durable.
    Truncate(i64, SyncSender<Result<()>>),
    /// Drop the whole log; the next record follows the zxid in the new generation. Reply when
    /// durable.
    Reset(i64, u32, SyncSender<Result<()>>),
}

/// The appending side of the writer thread.
pub struct GroupCommit {
    tx: Option<SyncSender<Command>>,
    failed: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    pub stats: Arc<WalStats>,
}

impl GroupCommit {
    /// Starts the writer thread. `on_durable(zxid)` runs on that thread after each group is
    /// durable; `on_failure` runs once if a write or fsync fails, after which nothing more is
    /// written (fail-stop: a log we cannot trust must not be acknowledged).
    pub fn start(
        writer: WalWriter,
        options: GroupCommitOptions,
        on_durable: Box<dyn FnMut(i64) + Send>,
        on_failure: Box<dyn FnOnce(StorageError) + Send>,
    ) -> std::io::Result<GroupCommit> {
        let (tx, rx) = mpsc::sync_channel(QUEUE_LEN_MAX);
        let failed = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(WalStats::default());
        stats.fsync_micros_min.store(u64::MAX, Ordering::Relaxed);
        stats
            .durable_zxid
            .store(writer.last_zxid() as u64, Ordering::Relaxed);
        let thread = {
            let (failed, stats) = (failed.clone(), stats.clone());
            std::thread::Builder::new()
                .name("meerkat-wal".into())
                .spawn(move || {
                    let mut on_durable = on_durable;
                    if let Err(e) = run(writer, rx, &options, &mut *on_durable, &stats) {
                        failed.store(true, Ordering::SeqCst);
                        on_failure(e);
                    }
                })?
        };
        Ok(GroupCommit {
            tx: Some(tx),
            failed,
            thread: Some(thread),
            stats,
        })
    }

    /// Queues an encoded transaction. Blocks only while the queue is full.
    pub fn append(&self, zxid: i64, payload: Vec<u8>) -> Result<()> {
        if self.failed.load(Ordering::SeqCst) {
            return Err(StorageError::Stopped);
        }
        let tx = self.tx.as_ref().ok_or(StorageError::Stopped)?;
        match tx.try_send(Command::Append(zxid, payload)) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(record)) => tx.send(record).map_err(|_| StorageError::Stopped),
            Err(TrySendError::Disconnected(_)) => Err(StorageError::Stopped),
        }
    }

    /// Synchronous: writes what is queued, then durably drops every record after `zxid`.
    pub fn truncate_after(&self, zxid: i64) -> Result<()> {
        self.round_trip(|reply| Command::Truncate(zxid, reply))
    }

    /// Synchronous: writes what is queued, then durably drops the whole log (a snapshot at
    /// `zxid` of log generation `generation` has replaced it).
    pub fn reset(&self, zxid: i64, generation: u32) -> Result<()> {
        self.round_trip(|reply| Command::Reset(zxid, generation, reply))
    }

    fn round_trip(&self, command: impl FnOnce(SyncSender<Result<()>>) -> Command) -> Result<()> {
        if self.failed.load(Ordering::SeqCst) {
            return Err(StorageError::Stopped);
        }
        let tx = self.tx.as_ref().ok_or(StorageError::Stopped)?;
        let (reply_tx, reply_rx) = mpsc::sync_channel(1);
        tx.send(command(reply_tx))
            .map_err(|_| StorageError::Stopped)?;
        reply_rx.recv().map_err(|_| StorageError::Stopped)?
    }

    pub fn has_failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    /// Writes and syncs what is queued, then stops the thread.
    pub fn close(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.tx.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for GroupCommit {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn run(
    mut writer: WalWriter,
    rx: Receiver<Command>,
    options: &GroupCommitOptions,
    on_durable: &mut dyn FnMut(i64),
    stats: &WalStats,
) -> Result<()> {
    let mut group: Vec<(i64, Vec<u8>)> = Vec::new();
    // Blocks until the first command; ends when every sender is gone.
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        let mut bytes = 0;
        // Gather appends until the queue is empty, the group is full, or another command.
        let mut control = None;
        while let Some(command) = next.take() {
            match command {
                Command::Append(zxid, payload) => {
                    bytes += payload.len();
                    group.push((zxid, payload));
                    if bytes < GROUP_BYTES_MAX {
                        next = rx.try_recv().ok();
                    }
                }
                other => control = Some(other),
            }
        }
        if !group.is_empty() {
            write_group(&mut writer, &group, options, stats)?;
            group.clear();
            on_durable(writer.last_zxid());
        }
        match control {
            Some(Command::Truncate(zxid, reply)) => {
                let result = writer.truncate_after(zxid);
                let failed = result.is_err();
                let _ = reply.send(result);
                if failed {
                    return Err(StorageError::Stopped);
                }
                stats.durable_zxid.store(zxid as u64, Ordering::Relaxed);
            }
            Some(Command::Reset(zxid, generation, reply)) => {
                let result = writer.reset(zxid, generation);
                let failed = result.is_err();
                let _ = reply.send(result);
                if failed {
                    return Err(StorageError::Stopped);
                }
                stats.durable_zxid.store(zxid as u64, Ordering::Relaxed);
            }
            Some(Command::Append(..)) | None => {}
        }
    }
    Ok(())
}

/// Writes one group and (with forceSync) covers it with one fsync.
pub(crate) fn write_group(
    writer: &mut WalWriter,
    group: &[(i64, Vec<u8>)],
    options: &GroupCommitOptions,
    stats: &WalStats,
) -> Result<()> {
    writer.write(group)?;
    if options.force_sync {
        let started = Instant::now();
        writer.sync()?;
        let took = started.elapsed();
        let micros = took.as_micros() as u64;
        stats.fsyncs.fetch_add(1, Ordering::Relaxed);
        stats
            .fsync_micros_total
            .fetch_add(micros, Ordering::Relaxed);
        stats.fsync_micros_max.fetch_max(micros, Ordering::Relaxed);
        stats.fsync_micros_min.fetch_min(micros, Ordering::Relaxed);
        stats.fsync_recent_micros.record(micros);
        if took >= options.fsync_warn {
            tracing::warn!(
                fsync_ms = took.as_millis() as u64,
                records = group.len(),
                "fsync of the transaction log was slow; writes waited for it"
            );
        }
    }
    stats
        .records
        .fetch_add(group.len() as u64, Ordering::Relaxed);
    stats.groups.fetch_add(1, Ordering::Relaxed);
    stats
        .durable_zxid
        .store(writer.last_zxid() as u64, Ordering::Relaxed);
    Ok(())
}
