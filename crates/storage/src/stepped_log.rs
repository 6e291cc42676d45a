//! Group commit without a thread, for [`crate::Execution::Stepped`]: appends queue until the
//! host flushes, which writes the whole group and covers it with one fsync, exactly as the
//! writer thread's loop does ([`crate::group_commit`]), then reports it durable.

use crate::error::{Result, StorageError};
use crate::group_commit::{write_group, GroupCommitOptions, WalStats};
use crate::wal_writer::WalWriter;
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub struct SteppedLog {
    writer: WalWriter,
    options: GroupCommitOptions,
    queued: Vec<(i64, Vec<u8>)>,
    on_durable: Box<dyn FnMut(i64) + Send>,
    on_failure: Option<Box<dyn FnOnce(StorageError) + Send>>,
    failed: bool,
    pub stats: Arc<WalStats>,
    #[cfg(feature = "planted-bugs")]
    pub planted_bug: Option<crate::planted::StorageBug>,
}

impl SteppedLog {
    pub fn new(
        writer: WalWriter,
        options: GroupCommitOptions,
        on_durable: Box<dyn FnMut(i64) + Send>,
        on_failure: Box<dyn FnOnce(StorageError) + Send>,
    ) -> SteppedLog {
        let stats = Arc::new(WalStats::default());
        stats.fsync_micros_min.store(u64::MAX, Ordering::Relaxed);
        stats
            .durable_zxid
            .store(writer.last_zxid() as u64, Ordering::Relaxed);
        SteppedLog {
            writer,
            options,
            queued: Vec::new(),
            on_durable,
            on_failure: Some(on_failure),
            failed: false,
            stats,
            #[cfg(feature = "planted-bugs")]
            planted_bug: None,
        }
    }

    pub fn append(&mut self, zxid: i64, payload: Vec<u8>) -> Result<()> {
        if self.failed {
            return Err(StorageError::Stopped);
        }
        self.queued.push((zxid, payload));
        #[cfg(feature = "planted-bugs")]
        if self.planted_bug == Some(crate::planted::StorageBug::DurableBeforeFsync) {
            (self.on_durable)(zxid);
        }
        Ok(())
    }

    /// Whether a flush has anything to write.
    pub fn has_queued(&self) -> bool {
        !self.queued.is_empty()
    }

    /// Writes and syncs every queued record as one group, then reports it durable. A failure
    /// stops the log for good (fail-stop), as the writer thread does.
    pub fn flush(&mut self) -> Result<()> {
        if self.failed {
            return Err(StorageError::Stopped);
        }
        if self.queued.is_empty() {
            return Ok(());
        }
        let group = std::mem::take(&mut self.queued);
        match write_group(&mut self.writer, &group, &self.options, &self.stats) {
            Ok(()) => {
                (self.on_durable)(self.writer.last_zxid());
                Ok(())
            }
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Writes what is queued, then durably drops every record after `zxid`.
    pub fn truncate_after(&mut self, zxid: i64) -> Result<()> {
        self.flush()?;
        let result = self.writer.truncate_after(zxid);
        self.after_control(result, zxid)
    }

    /// Writes what is queued, then durably drops the whole log (a snapshot at `zxid` of log
    /// generation `generation` has replaced it).
    pub fn reset(&mut self, zxid: i64, generation: u32) -> Result<()> {
        self.flush()?;
        let result = self.writer.reset(zxid, generation);
        self.after_control(result, zxid)
    }

    pub fn has_failed(&self) -> bool {
        self.failed
    }

    fn after_control(&mut self, result: Result<()>, zxid: i64) -> Result<()> {
        match result {
            Ok(()) => {
                self.stats
                    .durable_zxid
                    .store(zxid as u64, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => Err(self.fail(e)),
        }
    }

    fn fail(&mut self, e: StorageError) -> StorageError {
        self.failed = true;
        let reported = StorageError::Stopped;
        if let Some(on_failure) = self.on_failure.take() {
            on_failure(e);
        }
        reported
    }
}
