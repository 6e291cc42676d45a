//! Leadership hand-over: a leader that is about to stop (SIGTERM, an operator's command) makes
//! its most up-to-date follower the next leader without an election timeout.
//!
//! 1. The leader stops proposing (new work waits in the host's backlog) and picks the
//!    up-to-date voter that has acknowledged the most.
//! 2. When everything it proposed is committed and the successor has acknowledged all of it,
//!    it sends ABDICATE, with the successor's vote, to every learner, and goes LOOKING itself.
//! 3. Every server that receives ABDICATE from its leader goes LOOKING at once, voting for the
//!    successor instead of itself; the successor votes for itself. A round in which a quorum
//!    agrees on the designated successor ends at once, without the finalize wait.
//!
//! Safety is Zab's own: a server adopts the successor's vote only if it is not behind its own
//! state (epoch, last zxid), exactly the condition under which FLE lets a vote win; the
//! successor holds every proposal of the ending epoch, so it holds every committed one; and it
//! still runs discovery and synchronisation with a quorum before it serves. What the hand-over
//! saves is time: no server waits for the old leader's silence to be noticed, and no round
//! waits out `finalize_wait_ms`. If the successor fails to take over, the servers that decided
//! for it give up after `initLimit` and elect as usual. A hand-over that cannot complete within
//! its bound is abandoned and the leader proposes again.

use crate::action::Action;
use crate::config::{Millis, Sid};
use crate::error::TransferError;
use crate::message::{Message, Vote};
use crate::zab::{RoleState, Zab};

/// A hand-over under way.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Transfer {
    pub successor: Sid,
    pub deadline: Millis,
}

impl Zab {
    /// Starts handing leadership over; returns the successor. Ends when ABDICATE is sent
    /// ([`Action::Abdicated`]) or, at `now + within`, is abandoned.
    pub fn transfer_leadership(
        &mut self,
        now: Millis,
        within: Millis,
    ) -> Result<Sid, TransferError> {
        let RoleState::Leading(l) = &self.role else {
            return Err(TransferError::NotLeader);
        };
        if l.established_at.is_none() {
            return Err(TransferError::NotLeader);
        }
        if let Some(t) = l.transfer {
            return Err(TransferError::Underway(t.successor));
        }
        // The voter that acknowledged the most; on a tie the lower id, so the choice is
        // deterministic.
        let successor = l
            .up_to_date_learners()
            .filter(|(sid, info, _)| !info.observer && self.config.is_voter(*sid))
            .max_by(|a, b| a.2.cmp(&b.2).then(b.0.cmp(&a.0)))
            .map(|(sid, _, _)| sid)
            .ok_or(TransferError::NoSuccessor)?;
        tracing::info!(
            leader = self.config.my_id,
            successor,
            "handing leadership over: no new proposals until the successor holds them all"
        );
        if let RoleState::Leading(l) = &mut self.role {
            l.transfer = Some(Transfer {
                successor,
                deadline: now + within,
            });
        }
        self.leader_check_transfer(now);
        Ok(successor)
    }

    /// The successor of a hand-over under way, if any.
    pub fn transfer_underway(&self) -> Option<Sid> {
        match &self.role {
            RoleState::Leading(l) => l.transfer.map(|t| t.successor),
            _ => None,
        }
    }

    /// Leader, after every input: abdicate once the successor holds everything proposed, or
    /// give the hand-over up when it cannot complete.
    pub(crate) fn leader_check_transfer(&mut self, now: Millis) {
        let RoleState::Leading(l) = &self.role else {
            return;
        };
        let Some(transfer) = l.transfer else {
            return;
        };
        let (proposed, committed) = l.proposed_and_committed();
        let successor_acked = l
            .up_to_date_learners()
            .find(|(sid, _, _)| *sid == transfer.successor)
            .map(|(_, _, acked)| acked);
        let Some(acked) = successor_acked else {
            tracing::warn!(
                successor = transfer.successor,
                "hand-over abandoned: the successor is no longer connected"
            );
            self.leader_end_transfer();
            return;
        };
        #[allow(unused_mut)]
        let mut caught_up = committed == proposed && acked >= proposed;
        #[cfg(feature = "planted-bugs")]
        if self
            .config
            .bug(crate::config::PlantedBug::AbdicateBeforeCaughtUp)
        {
            caught_up = true;
        }
        if !caught_up {
            if now >= transfer.deadline {
                tracing::warn!(
                    successor = transfer.successor,
                    %acked,
                    %proposed,
                    "hand-over abandoned: the successor did not catch up in time"
                );
                self.leader_end_transfer();
            }
            return;
        }
        let vote = Vote {
            leader: transfer.successor,
            zxid: proposed,
            epoch: self.current_epoch,
        };
        let learners: Vec<Sid> = l.learners.keys().copied().collect();
        for sid in learners {
            self.send(sid, Message::Abdicate { successor: vote });
        }
        tracing::info!(
            leader = self.config.my_id,
            successor = transfer.successor,
            zxid = %proposed,
            successor_acked = %acked,
            "abdicated"
        );
        self.actions.push(Action::Abdicated {
            successor: transfer.successor,
        });
        self.successor = Some(vote);
        self.start_looking(now, "handed leadership over");
    }

    fn leader_end_transfer(&mut self) {
        if let RoleState::Leading(l) = &mut self.role {
            l.transfer = None;
        }
    }

    /// Learner: our leader abdicated in favour of `successor`. Go LOOKING now, voting for it
    /// when it is not behind us (otherwise the election runs as usual).
    pub(crate) fn learner_on_abdicate(&mut self, now: Millis, successor: Vote) {
        let own = (self.current_epoch, self.history.last());
        let designated = if successor.leader == self.config.my_id {
            self.counts_as_voter()
        } else {
            (successor.epoch, successor.zxid) >= own
        };
        if designated {
            self.successor = Some(Vote {
                leader: successor.leader,
                // Our own state when we are the successor: that is what we can lead with.
                zxid: if successor.leader == self.config.my_id {
                    self.history.last()
                } else {
                    successor.zxid
                },
                epoch: if successor.leader == self.config.my_id {
                    self.current_epoch
                } else {
                    successor.epoch
                },
            });
        }
        // The link to the old leader stays: it carries nothing but election notifications
        // now, and a host may take a while to connect again after a break.
        self.start_looking(now, "the leader handed leadership over");
    }
}
