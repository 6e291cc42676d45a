//! Diskless durability, judged on the server's own code (DESIGN.md §5: "an acknowledged write
//! survives as long as at least one server that had it stays up through the failure; if the
//! whole ensemble crashes at once, writes after the last completed snapshot can be lost").
//! The rules are the model simulator's (`crate::durability`), applied to real nodes:
//!
//! * **Holders.** A voter holds a committed write from the moment it has it in memory while
//!   its currentEpoch is at least the epoch of the leader that committed it, or from the moment
//!   it applies it. A holder is protected while it does not crash.
//! * **Losses.** When a leader is established, every committed write it did not apply is lost;
//!   that is allowed only if no protected holder of it exists. Lost writes leave the committed
//!   order (the client checker judges them on their own branch).
//! * **Power loss.** At the first establishment after the whole ensemble lost power, no voter's
//!   disk (its newest snapshot, or its failure checkpoint) may still hold a lost write.
//! * **Quorum.** When a leader commits, a quorum of voters holds the write in memory or on
//!   disk, or crashed since it was proposed (what it held then is the amnesia rule's business).

use super::world::ClusterWorld;
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
pub struct Loss {
    pub zxids: Vec<Zxid>,
    /// From the commit of the oldest lost write to the failure (the power loss, if any).
    pub span_ms: Millis,
    pub after_power_loss: bool,
}

#[derive(Debug, Default)]
pub struct Durability {
    commits: BTreeMap<Zxid, CommitRecord>,
    /// The crash count of the whole world when each proposal was made.
    proposed_at: BTreeMap<Zxid, u64>,
    /// Set by a whole-ensemble power loss, cleared by the next establishment.
    pub power_loss_at: Option<Millis>,
    pub losses: Vec<Loss>,
}

impl ClusterWorld {
    pub(crate) fn durability_on_propose(&mut self, zxid: Zxid) {
        let crashes = self.crashes as u64;
        self.durability.proposed_at.entry(zxid).or_insert(crashes);
    }

    fn epoch_of(&self, sid: Sid) -> u32 {
        self.node(sid)
            .replica
            .as_ref()
            .and_then(|r| r.ensemble.as_ref())
            .map_or(0, |e| e.zab.current_epoch())
    }

    /// Whether live `sid` has `zxid` in memory: applied, or in Zab's undelivered log.
    fn holds_in_memory(&self, sid: Sid, zxid: Zxid) -> bool {
        let node = self.node(sid);
        let Some(e) = node.replica.as_ref().and_then(|r| r.ensemble.as_ref()) else {
            return false;
        };
        node.applied_set.contains(&zxid) || e.zab.undelivered().iter().any(|x| x.zxid == zxid)
    }

    /// Whether `sid` holds `zxid` at all: in memory when up, on its disk when down.
    fn holds(&self, sid: Sid, zxid: Zxid) -> bool {
        let node = self.node(sid);
        if node.is_up() {
            return self.holds_in_memory(sid, zxid);
        }
        node.disk_holds(zxid)
    }

    /// `leader` commits `zxid` (it is about to apply it as leader).
    pub(crate) fn durability_on_commit(&mut self, leader: Sid, zxid: Zxid) {
        let epoch = self.epoch_of(leader);
        let proposed = self.durability.proposed_at.get(&zxid).copied().unwrap_or(0);
        let mut holders = Vec::new();
        let mut holding = 0;
        for sid in self.sids() {
            let node = self.node(sid);
            if node.is_up() && self.holds_in_memory(sid, zxid) && self.epoch_of(sid) >= epoch {
                holders.push((sid, node.crash_count));
            }
            if self.holds(sid, zxid) || node.last_crash_at > proposed {
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
        let voters = self.nodes.len();
        if holding < voters / 2 + 1 {
            self.fail(format!(
                "durability: leader {leader} committed {zxid} while only {holding} of {voters} voters hold it (memory or disk)"
            ));
        }
    }

    /// Voter `sid` applied `zxid`: it holds it from now on.
    pub(crate) fn durability_on_deliver(&mut self, sid: Sid, zxid: Zxid) {
        let count = self.node(sid).crash_count;
        if let Some(r) = self.durability.commits.get_mut(&zxid) {
            if !r.holders.contains(&(sid, count)) {
                r.holders.push((sid, count));
            }
        }
    }

    /// A holder of `zxid` that has not crashed since.
    fn protected_holder(&self, zxid: Zxid) -> Option<(Sid, u32)> {
        let r = self.durability.commits.get(&zxid)?;
        r.holders
            .iter()
            .find(|(sid, count)| self.node(*sid).crash_count == *count)
            .map(|(sid, _)| (*sid, r.epoch))
    }

    /// `leader` was established: judge every committed write it does not have.
    pub(crate) fn durability_on_established(&mut self, leader: Sid, epoch: u32) {
        let power_loss = self.durability.power_loss_at.take();
        let has: BTreeSet<Zxid> = self.node(leader).applied_set.clone();
        let lost: Vec<Zxid> = self
            .checker
            .committed
            .keys()
            .filter(|z| !has.contains(z))
            .copied()
            .collect();
        if lost.is_empty() {
            return;
        }
        let mut legitimate = true;
        for &z in &lost {
            if let Some((sid, committed_in)) = self.protected_holder(z) {
                legitimate = false;
                self.fail(format!(
                    "lost write: leader {leader} established epoch {epoch} without {z} (committed in epoch {committed_in}), which server {sid} held and never crashed since"
                ));
            }
            if power_loss.is_some() {
                if let Some(sid) = self.sids().into_iter().find(|&s| self.holds(s, z)) {
                    legitimate = false;
                    self.fail(format!(
                        "power loss: leader {leader} established epoch {epoch} without {z}, which server {sid} still holds"
                    ));
                }
            }
        }
        if !legitimate {
            return;
        }
        let oldest = lost
            .iter()
            .filter_map(|z| self.durability.commits.get(z).map(|r| r.at))
            .min()
            .unwrap_or(self.now);
        for &z in &lost {
            self.checker.prune(z);
        }
        let failure_at = power_loss.unwrap_or(self.now);
        self.durability.losses.push(Loss {
            zxids: lost,
            span_ms: failure_at.saturating_sub(oldest),
            after_power_loss: power_loss.is_some(),
        });
    }
}
