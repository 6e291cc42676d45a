//! A simulated disk for one server: the epoch files (tiny, written atomically and fsynced),
//! the newest snapshot, and a log that behaves like a page cache: appends are lost on a crash
//! unless an fsync covering them completed. Group commit: one fsync covers every record
//! appended before it started.

use crate::rng::SimRng;
use std::sync::Arc;
use zab::{Image, SharedEntry, Zxid};

#[derive(Debug, Clone, Default)]
pub struct SimDisk {
    pub accepted_epoch: u32,
    pub current_epoch: u32,
    pub snapshot_zxid: Zxid,
    pub snapshot_image: Image,
    pub log: Vec<SharedEntry>,
    /// Records `log[..durable_len]` survive a crash.
    pub durable_len: usize,
    /// An fsync in flight covers `log[..len]`.
    pub fsync_covers: Option<usize>,
    /// Set when the disk was wiped; cleared when Zab says recovery completed. Stands for the
    /// absence of a clean-state marker on a real disk.
    pub wiped: bool,
}

/// Invariants of what is on disk, checked after every operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiskError {
    #[error("acceptedEpoch {accepted} < currentEpoch {current}")]
    EpochsInverted { accepted: u32, current: u32 },
    #[error("{which} went backwards: {from} -> {to}")]
    EpochDecreased {
        which: &'static str,
        from: u32,
        to: u32,
    },
    #[error("log not strictly increasing: {prev} then {next}")]
    LogNotIncreasing { prev: Zxid, next: Zxid },
}

impl SimDisk {
    pub fn new() -> SimDisk {
        SimDisk {
            snapshot_image: Arc::new(Vec::new()),
            ..SimDisk::default()
        }
    }

    pub fn save_accepted_epoch(&mut self, epoch: u32) -> Result<(), DiskError> {
        if epoch < self.accepted_epoch {
            return Err(DiskError::EpochDecreased {
                which: "acceptedEpoch",
                from: self.accepted_epoch,
                to: epoch,
            });
        }
        self.accepted_epoch = epoch;
        self.check_epochs()
    }

    pub fn save_current_epoch(&mut self, epoch: u32) -> Result<(), DiskError> {
        if epoch < self.current_epoch {
            return Err(DiskError::EpochDecreased {
                which: "currentEpoch",
                from: self.current_epoch,
                to: epoch,
            });
        }
        self.current_epoch = epoch;
        self.check_epochs()
    }

    fn check_epochs(&self) -> Result<(), DiskError> {
        if self.accepted_epoch < self.current_epoch {
            return Err(DiskError::EpochsInverted {
                accepted: self.accepted_epoch,
                current: self.current_epoch,
            });
        }
        Ok(())
    }

    pub fn last_zxid(&self) -> Zxid {
        self.log.last().map_or(self.snapshot_zxid, |e| e.zxid)
    }

    pub fn append(&mut self, entry: SharedEntry) -> Result<(), DiskError> {
        let prev = self.last_zxid();
        if entry.zxid <= prev {
            return Err(DiskError::LogNotIncreasing {
                prev,
                next: entry.zxid,
            });
        }
        self.log.push(entry);
        Ok(())
    }

    /// Synchronous truncation: the file is cut and the cut is durable.
    pub fn truncate(&mut self, zxid: Zxid) {
        let keep = self.log.partition_point(|e| e.zxid <= zxid);
        self.log.truncate(keep);
        self.durable_len = self.durable_len.min(keep);
        self.fsync_covers = self.fsync_covers.map(|c| c.min(keep));
    }

    /// Synchronous: the snapshot is written and fsynced, and the old log is dropped.
    pub fn save_snapshot(&mut self, zxid: Zxid, image: Image) {
        self.snapshot_zxid = zxid;
        self.snapshot_image = image;
        self.log.clear();
        self.durable_len = 0;
        self.fsync_covers = None;
    }

    /// Starts an fsync if none runs and something is not durable; returns true if started.
    pub fn start_fsync(&mut self) -> bool {
        if self.fsync_covers.is_some() || self.durable_len >= self.log.len() {
            return false;
        }
        self.fsync_covers = Some(self.log.len());
        true
    }

    /// The running fsync finished: returns the zxid now durable, if any.
    pub fn finish_fsync(&mut self) -> Option<Zxid> {
        let covers = self.fsync_covers.take()?;
        let covers = covers.min(self.log.len());
        self.durable_len = self.durable_len.max(covers);
        Some(
            self.log[..self.durable_len]
                .last()
                .map_or(self.snapshot_zxid, |e| e.zxid),
        )
    }

    /// Power loss: unsynced appends vanish, except for a random prefix of them that the page
    /// cache happened to write back.
    pub fn crash(&mut self, rng: &mut SimRng) {
        let unsynced = self.log.len() - self.durable_len;
        let kept = if unsynced > 0 && rng.chance(0.3) {
            rng.below(unsynced as u64 + 1) as usize
        } else {
            0
        };
        self.log.truncate(self.durable_len + kept);
        self.durable_len = self.log.len();
        self.fsync_covers = None;
    }

    /// Power loss where exactly the fsynced records survive.
    pub fn crash_clean(&mut self) {
        self.log.truncate(self.durable_len);
        self.fsync_covers = None;
    }

    /// The log and snapshot are gone (a replaced disk). The epoch files are kept: they are
    /// tiny and written rarely, and DESIGN.md §5 keeps them even in diskless mode.
    pub fn wipe(&mut self) {
        self.log.clear();
        self.durable_len = 0;
        self.fsync_covers = None;
        self.snapshot_zxid = Zxid::ZERO;
        self.snapshot_image = Arc::new(Vec::new());
        self.wiped = true;
    }
}
