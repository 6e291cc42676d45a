//! Diskless durability, checked (DESIGN.md §5: "an acknowledged write survives as long as at
//! least one server that had it stays up through the failure; if the whole ensemble crashes at
//! once, writes after the last completed snapshot can be lost").
//!
//! * **Holders.** A voter *holds* a committed write w from the moment it has w in memory while
//!   its currentEpoch is at least the epoch of the leader that committed w (recorded when that
//!   leader commits w: its own acknowledgement, the counted acknowledgements, learners already
//!   synced with it) or from the moment it applies w. A holder is *protected* while it neither
//!   crashes nor loses its disk. Observers never count: they carry no durability.
//! * **Losses.** When a leader is established, every committed write missing from its history
//!   is lost. That is allowed only if no protected holder of it exists; lost writes then leave
//!   the committed order (the client checker judges them on their own branch), and a lost write
//!   that a later leader delivers again is *revived*.
//! * **Power loss.** At the first establishment after a whole-ensemble power loss, the writes
//!   lost must be exactly those no voter still holds (durably: newest completed snapshot or
//!   whole checkpoint; or in memory after booting from it). The window (lost transactions and
//!   the time from the commit of the oldest of them to the power loss) is reported.
//! * **Quorum durability, diskless.** When a leader commits w, a quorum of voters holds it in
//!   memory or on disk, or crashed since w was proposed (what it held then is the amnesia
//!   rule's business).

use crate::world::World;
use std::collections::{BTreeMap, BTreeSet};
use zab::{Millis, Sid, Zxid};

#[derive(Debug)]
struct CommitRecord {
    epoch: u32,
    at: Millis,
    /// (voter, its crash count when it became a holder).
    holders: Vec<(Sid, u64)>,
}

/// Committed writes lost at one establishment.
#[derive(Debug, Clone)]
pub struct LossEvent {
    pub at: Millis,
    pub leader: Sid,
    pub epoch: u32,
    pub zxids: Vec<Zxid>,
    /// From the commit of the oldest lost write to the failure (the power loss, if any).
    pub span_ms: Millis,
    pub after_power_loss: bool,
}

#[derive(Debug, Default)]
pub struct DurabilityChecker {
    commits: BTreeMap<Zxid, CommitRecord>,
    /// The world's crash sequence number when each proposal was made.
    proposed_at: BTreeMap<Zxid, u64>,
    /// Set by a whole-ensemble power loss, cleared by the next establishment.
    pub power_loss_at: Option<Millis>,
    pub losses: Vec<LossEvent>,
    pub revived: usize,
}

impl World {
    pub(crate) fn durability_on_propose(&mut self, zxid: Zxid) {
        let seq = self.crash_seq;
        self.durability.proposed_at.entry(zxid).or_insert(seq);
    }

    /// `leader` commits `zxid` (it is about to apply it as leader).
    pub(crate) fn durability_on_commit(&mut self, leader: Sid, zxid: Zxid) {
        let epoch = self.current_epoch_of(leader);
        let voters: Vec<Sid> = self.voters.iter().copied().collect();
        let mut holders = Vec::new();
        let mut holding = 0;
        let proposed = self.durability.proposed_at.get(&zxid).copied().unwrap_or(0);
        for &v in &voters {
            let s = self.server(v);
            if s.is_up() && s.holds_in_memory(zxid) && self.current_epoch_of(v) >= epoch {
                holders.push((v, s.crash_count));
            }
            if self.holds(v, zxid) || s.last_crash_seq > proposed {
                holding += 1;
            }
        }
        let now = self.now;
        let record = self.durability.commits.entry(zxid).or_insert(CommitRecord {
            epoch,
            at: now,
            holders: Vec::new(),
        });
        record.holders.extend(holders);
        let quorum = voters.len() / 2 + 1;
        if self.opts.check_quorum_durability && holding < quorum {
            self.fail(format!(
                "durability: leader {leader} committed {zxid} while only {holding} of {} voters hold it (memory or disk)",
                voters.len()
            ));
        }
    }

    /// Voter `sid` applied `zxid`: it holds it from now on.
    pub(crate) fn durability_on_deliver(&mut self, sid: Sid, zxid: Zxid) {
        if !self.voters.contains(&sid) {
            return;
        }
        let count = self.server(sid).crash_count;
        if let Some(r) = self.durability.commits.get_mut(&zxid) {
            if !r.holders.contains(&(sid, count)) {
                r.holders.push((sid, count));
            }
        }
    }

    /// A protected holder of `zxid`: one that held it and has not crashed since.
    fn protected_holder(&self, zxid: Zxid) -> Option<(Sid, u32)> {
        let r = self.durability.commits.get(&zxid)?;
        r.holders
            .iter()
            .find(|(v, count)| self.server(*v).crash_count == *count)
            .map(|(v, _)| (*v, r.epoch))
    }

    /// `leader` was established: judge every committed write missing from its history.
    pub(crate) fn durability_on_established(&mut self, leader: Sid, epoch: u32) {
        let power_loss = self.durability.power_loss_at.take();
        let has: BTreeSet<Zxid> = self
            .server(leader)
            .applied
            .iter()
            .map(|t| Zxid::from_i64(t.header.zxid))
            .collect();
        let lost: Vec<Zxid> = self
            .checker
            .committed
            .keys()
            .filter(|z| !has.contains(z))
            .copied()
            .collect();
        if lost.is_empty() {
            if power_loss.is_some() {
                // A power loss that lost nothing is a window of size zero.
                self.record_loss(leader, epoch, lost, power_loss);
            }
            return;
        }
        let mut legitimate = true;
        for &z in &lost {
            if let Some((v, committed_in)) = self.protected_holder(z) {
                legitimate = false;
                self.fail(format!(
                    "lost write: leader {leader} established epoch {epoch} without {z} (committed in epoch {committed_in}), which server {v} held and never crashed since"
                ));
            }
            if power_loss.is_some() {
                let still = self.voters.iter().copied().find(|&v| self.holds(v, z));
                if let Some(v) = still {
                    legitimate = false;
                    self.fail(format!(
                        "power loss: leader {leader} established epoch {epoch} without {z}, which server {v} still holds"
                    ));
                }
            }
        }
        if legitimate {
            self.record_loss(leader, epoch, lost, power_loss);
        }
    }

    fn record_loss(
        &mut self,
        leader: Sid,
        epoch: u32,
        lost: Vec<Zxid>,
        power_loss: Option<Millis>,
    ) {
        let oldest = lost
            .iter()
            .filter_map(|z| self.durability.commits.get(z).map(|r| r.at))
            .min()
            .unwrap_or(self.now);
        let failure_at = power_loss.unwrap_or(self.now);
        self.trace.event(
            self.now,
            leader,
            "LOST",
            lost.len() as u64,
            u64::from(epoch),
        );
        for &z in &lost {
            self.checker.prune(z);
        }
        self.durability.losses.push(LossEvent {
            at: self.now,
            leader,
            epoch,
            zxids: lost,
            span_ms: failure_at.saturating_sub(oldest),
            after_power_loss: power_loss.is_some(),
        });
    }
}
