//! The diskless host contract (DESIGN.md §5, thesis ch. 4), exactly as a real server must
//! implement it:
//!
//! 1. No transaction log: an `Append` is reported durable at once (Zab acknowledges from
//!    memory) and lives only in memory; a crash loses it. `Truncate` cuts memory (and a whole
//!    checkpoint's entries); `SaveSnapshot` (a leader's SNAP) is stored durably. Epoch files are
//!    written durably as in durable mode.
//! 2. Busy snapshots (Alg. 4.1): after applying delivered transactions, if no snapshot is being
//!    written, one of the applied state starts; it completes after a while (proportional to
//!    the history plus noise). Only completed snapshots survive a crash.
//! 3. Failure checkpoint (Alg. 4.2/4.3): when a serving server goes LOOKING, it synchronously
//!    saves a complete snapshot of its applied state plus Zab's undelivered entries and marks it
//!    *whole*. The mark is durably removed before the first proposal is acknowledged after the
//!    checkpoint (here: at the first `Append` after the checkpoint or after boot).
//! 4. Boot: from the newest snapshot; a whole checkpoint boots with its entries and no amnesia,
//!    anything else boots amnesiac with the snapshot's epoch label as currentEpoch, except a
//!    server whose acceptedEpoch is still 0: it never acknowledged anything (ACKEPOCH comes
//!    before any ACK, and the epoch file survives crashes and wipes), so it boots whole.
//!
//! Every snapshot carries an *epoch label*: the currentEpoch under which its state was applied
//! (the zxid's epoch for a leader's SNAP, which is a safe lower bound). See `zab::Boot`.

use crate::server::encode_image;
use crate::world::{Event, World};
use std::sync::Arc;
use zab::{Boot, Sid, Zab, Zxid};

impl World {
    /// The host finished executing one batch of Zab's actions. A serving server's applied state
    /// now holds its epoch's whole initial history (a leader applies all of it when it is
    /// established, a learner at UPTODATE), so only now may it carry that epoch as its label;
    /// in the middle of that first batch it may not. Then the busy snapshot (contract point 2).
    pub(crate) fn diskless_after_batch(&mut self, sid: Sid) {
        let s = self.server_mut(sid);
        if let Some(zab) = s.zab.as_ref() {
            if zab.is_serving() {
                s.applied_label = zab.current_epoch();
            }
        }
        if std::mem::take(&mut s.delivered_in_batch) {
            s.snapshot_pending = true;
            self.start_busy_snapshot(sid);
        }
    }

    /// Starts a busy snapshot of `sid`'s applied state unless one is being written or the last
    /// one is still resting (the server's `busySnapshotRest`); then it starts when the rest
    /// ends (`on_snapshot_rested`), as the server's idle tick does.
    pub(crate) fn start_busy_snapshot(&mut self, sid: Sid) {
        let s = self.server(sid);
        if s.disk.busy.is_some() || self.now < s.snapshot_rest_until {
            return;
        }
        let s = self.server(sid);
        let txns = s.applied.len() as u64;
        let base = self.opts.snapshot_base_ms;
        let duration =
            base + txns * self.opts.snapshot_ms_per_1000_txns / 1000 + self.rng.range(0, base / 2);
        let s = self.server(sid);
        let busy = crate::disk::BusySnapshot {
            zxid: s.applied_zxid(),
            epoch: s.applied_label,
            image: encode_image(&s.applied),
            zxids: Arc::new(applied_zxids(&s.applied)),
            done_at: self.now + duration,
            duration,
        };
        let incarnation = s.incarnation;
        let s = self.server_mut(sid);
        s.disk.busy = Some(busy);
        s.snapshot_pending = false;
        self.schedule(
            self.now + duration,
            Event::SnapshotDone {
                node: sid,
                incarnation,
            },
        );
    }

    pub(crate) fn on_snapshot_done(&mut self, sid: Sid, incarnation: u64) {
        let s = self.server(sid);
        if s.incarnation != incarnation || !s.is_up() {
            return;
        }
        let Some((zxid, duration)) = s.disk.busy.as_ref().map(|b| (b.zxid, b.duration)) else {
            return;
        };
        self.trace.event(self.now, sid, "snapshot-done", 0, zxid.0);
        let rest_until = self.now + duration * self.opts.snapshot_rest_percent / 100;
        let s = self.server_mut(sid);
        s.disk.finish_busy();
        s.snapshot_rest_until = rest_until;
        self.schedule(
            rest_until,
            Event::SnapshotRested {
                node: sid,
                incarnation,
            },
        );
    }

    /// The rest after a busy snapshot is over: state applied meanwhile gets its snapshot now.
    pub(crate) fn on_snapshot_rested(&mut self, sid: Sid, incarnation: u64) {
        let s = self.server(sid);
        if s.incarnation != incarnation || !s.is_up() || !s.snapshot_pending {
            return;
        }
        self.start_busy_snapshot(sid);
    }

    /// The failure checkpoint: the applied state plus every undelivered entry, marked whole.
    pub(crate) fn failure_checkpoint(&mut self, sid: Sid) {
        let s = self.server(sid);
        let Some(zab) = s.zab.as_ref() else { return };
        let entries = zab.undelivered();
        let zxid = s.applied_zxid();
        assert_eq!(
            zxid,
            zab.delivered(),
            "server {sid}: applied state is not Zab's"
        );
        let label = s.applied_label;
        let image = encode_image(&s.applied);
        let zxids = Arc::new(applied_zxids(&s.applied));
        self.trace
            .event(self.now, sid, "checkpoint", entries.len() as u64, zxid.0);
        let disk = &mut self.server_mut(sid).disk;
        disk.store_snapshot(zxid, label, image, zxids);
        disk.whole = Some(entries);
    }

    /// What a diskless server boots with (contract point 4).
    pub(crate) fn diskless_boot(&mut self, sid: Sid) -> Boot {
        let s = self.server(sid);
        let d = &s.disk;
        let (current_epoch, log, amnesia) = match &d.whole {
            Some(entries) => (d.current_epoch, entries.clone(), false),
            // Never promised an epoch, so never acknowledged anything: nothing to forget.
            None if d.accepted_epoch == 0 => (0, Vec::new(), false),
            None => (d.snapshot_epoch.min(d.current_epoch), Vec::new(), true),
        };
        let boot = Boot {
            accepted_epoch: d.accepted_epoch,
            current_epoch,
            snapshot_zxid: d.snapshot_zxid,
            log,
            amnesia,
            incarnation: s.incarnation,
        };
        let label = d.snapshot_epoch;
        let s = self.server_mut(sid);
        s.disk.log = boot.log.clone();
        s.applied_label = label;
        s.snapshot_pending = false;
        s.snapshot_rest_until = 0;
        boot
    }

    /// Whether a voter's state holds `zxid` now: in memory if it is up, durably if it is down.
    pub(crate) fn holds(&self, sid: Sid, zxid: Zxid) -> bool {
        let s = self.server(sid);
        if s.is_up() {
            s.holds_in_memory(zxid)
        } else {
            s.disk.holds_durably(zxid)
        }
    }

    /// A full house elected `sid`: how long after the last voter booted it was established.
    pub(crate) fn sample_full_house(&mut self, sid: Sid) {
        let full_house = self
            .server(sid)
            .zab
            .as_ref()
            .is_some_and(Zab::elected_by_full_house);
        if !full_house {
            return;
        }
        let last_boot = self
            .voters
            .iter()
            .map(|&v| self.server(v).booted_at)
            .max()
            .unwrap_or(0);
        self.trace.event(self.now, sid, "full-house", 0, 0);
        self.full_house_samples.push(self.now - last_boot);
    }

    /// `sid`'s currentEpoch (0 while it is down).
    pub(crate) fn current_epoch_of(&self, sid: Sid) -> u32 {
        self.server(sid).zab.as_ref().map_or(0, Zab::current_epoch)
    }
}

fn applied_zxids(applied: &[proto::txn::Txn]) -> Vec<Zxid> {
    applied
        .iter()
        .map(|t| Zxid::from_i64(t.header.zxid))
        .collect()
}
