//! A simulated disk for one server: the epoch files (tiny, written atomically and fsynced),
//! the newest snapshot, and a log that behaves like a page cache: appends are lost on a crash
//! unless an fsync covering them completed. Group commit: one fsync covers every record
//! appended before it started.
//!
//! In diskless mode (DESIGN.md §5) the "log" is the server's memory and never survives a crash;
//! what survives is the newest *completed* snapshot (a busy snapshot still being written is
//! lost), possibly marked *whole* (a failure checkpoint, with the acknowledged entries it
//! saved), and the epoch files.

use crate::rng::SimRng;
use std::sync::Arc;
use zab::{Image, Millis, SharedEntry, Zxid};

/// A diskless busy snapshot being written in the background (thesis Alg. 4.1).
#[derive(Debug, Clone)]
pub struct BusySnapshot {
    pub zxid: Zxid,
    /// The snapshot's epoch label (see `zab::Boot`).
    pub epoch: u32,
    pub image: Image,
    pub zxids: Arc<Vec<Zxid>>,
    pub done_at: Millis,
    /// How long it takes (its rest is as long, scaled by the rest percentage).
    pub duration: Millis,
}

#[derive(Debug, Clone, Default)]
pub struct SimDisk {
    pub accepted_epoch: u32,
    pub current_epoch: u32,
    pub snapshot_zxid: Zxid,
    pub snapshot_image: Image,
    /// Diskless: the snapshot's epoch label and the zxids its image holds.
    pub snapshot_epoch: u32,
    pub snapshot_zxids: Arc<Vec<Zxid>>,
    /// Diskless: the stored snapshot is a whole failure checkpoint with these entries after it.
    /// Removed (durably) before the first proposal is acknowledged after it.
    pub whole: Option<Vec<SharedEntry>>,
    /// Diskless: a busy snapshot in progress.
    pub busy: Option<BusySnapshot>,
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

    /// Synchronous truncation: the file is cut and the cut is durable. A whole checkpoint's
    /// entries are cut the same way, so it never resurrects what the leader truncated.
    pub fn truncate(&mut self, zxid: Zxid) {
        let keep = self.log.partition_point(|e| e.zxid <= zxid);
        self.log.truncate(keep);
        self.durable_len = self.durable_len.min(keep);
        self.fsync_covers = self.fsync_covers.map(|c| c.min(keep));
        if let Some(entries) = self.whole.as_mut() {
            entries.retain(|e| e.zxid <= zxid);
        }
    }

    /// Synchronous: the snapshot is written and fsynced, and the old log is dropped.
    pub fn save_snapshot(&mut self, zxid: Zxid, image: Image) {
        self.snapshot_zxid = zxid;
        self.snapshot_image = image;
        self.log.clear();
        self.durable_len = 0;
        self.fsync_covers = None;
    }

    /// Diskless: store a completed snapshot (a leader's SNAP, a finished busy snapshot or a
    /// checkpoint) with its label; it replaces the stored one and is never whole by itself.
    pub fn store_snapshot(&mut self, zxid: Zxid, epoch: u32, image: Image, zxids: Arc<Vec<Zxid>>) {
        self.snapshot_zxid = zxid;
        self.snapshot_image = image;
        self.snapshot_epoch = epoch;
        self.snapshot_zxids = zxids;
        self.whole = None;
    }

    /// Diskless: a busy snapshot finished. It becomes the stored snapshot if it is newer; a
    /// whole checkpoint stays whole (its entries after the new snapshot still complete it).
    pub fn finish_busy(&mut self) {
        let Some(b) = self.busy.take() else { return };
        if b.zxid <= self.snapshot_zxid {
            return;
        }
        let whole = self.whole.take().map(|mut entries| {
            entries.retain(|e| e.zxid > b.zxid);
            entries
        });
        self.store_snapshot(b.zxid, b.epoch, b.image, b.zxids);
        self.whole = whole;
    }

    /// Diskless: whether what survives a crash holds `zxid` (a snapshot or checkpoint).
    pub fn holds_durably(&self, zxid: Zxid) -> bool {
        self.snapshot_zxids.binary_search(&zxid).is_ok()
            || self
                .whole
                .as_ref()
                .is_some_and(|w| w.iter().any(|e| e.zxid == zxid))
    }

    /// Diskless power loss: memory is gone, and with it a busy snapshot still being written.
    pub fn crash_diskless(&mut self) {
        self.log.clear();
        self.durable_len = 0;
        self.fsync_covers = None;
        self.busy = None;
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
        self.snapshot_epoch = 0;
        self.snapshot_zxids = Arc::new(Vec::new());
        self.whole = None;
        self.busy = None;
        self.wiped = true;
    }
}
