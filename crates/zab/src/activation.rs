//! How a server's configuration follows its log (see `membership.rs` for the rules).
//!
//! * A reconfiguration entry that joins the history becomes the *pending* configuration.
//! * When it is delivered (committed), it becomes the *active* one.
//! * A cut of the history (TRUNC, a snapshot) recomputes what is pending from what is left.
//! * A learner adopts the leader's active configuration with the sync stream (it may stand on
//!   a snapshot, whose configuration no entry carries).
//! * Servers tell each other their configurations as ZooKeeper's election notifications do: a
//!   notification names the newest version its sender holds, and a server holding a newer
//!   one answers with it (CONFIG). A server that missed a reconfiguration while it was down
//!   or cut off could otherwise never count a quorum of the ensemble's real voters (or know
//!   that it is one). Adopting is safe: a committed configuration is what every later leader
//!   has; a pending one only adds a quorum to satisfy; and a pending one newer than ours means
//!   ours was committed (one change at a time).
//! * After an activation, a role that no longer fits changes: a leader that no longer votes
//!   hands leadership over (or, without a successor, steps down); a learner whose role changed
//!   between participant and observer reconnects as the other. A server outside the active
//!   configuration stays a non-voting learner (so it can be added again) but serves no clients.

use crate::action::Action;
use crate::config::{Millis, Sid};
use crate::entry::Entry;
use crate::membership::Membership;
use crate::message::Message;
use crate::zab::{RoleState, Zab};
use crate::zxid::Zxid;
use std::collections::BTreeSet;

impl Zab {
    /// An entry joined the history.
    pub(crate) fn note_appended(&mut self, entry: &Entry) {
        if let Some(m) = Membership::of_txn(&entry.txn) {
            if m.version > self.config.version {
                tracing::info!(sid = self.config.my_id, version = %m.version, "configuration pending");
                self.config.pending = Some(m);
                self.announce_membership();
            }
        }
    }

    /// The history was cut or replaced: what is pending is the last reconfiguration left
    /// beyond the delivered mark.
    pub(crate) fn rescan_pending(&mut self) {
        let from = self.history.delivered().max(self.history.base());
        let last = self
            .history
            .entries_after(from)
            .filter_map(|e| Membership::of_txn(&e.txn))
            .filter(|m| m.version > self.config.version)
            .last();
        if last != self.config.pending {
            self.config.pending = last;
            self.announce_membership();
        }
    }

    /// A delivered entry: a reconfiguration in it is now the active configuration.
    pub(crate) fn note_delivered(&mut self, entry: &Entry) {
        if let Some(m) = Membership::of_txn(&entry.txn) {
            self.activate(m);
        }
    }

    /// Makes `m` the active configuration (it is committed, or a leader's active one).
    pub(crate) fn activate(&mut self, m: Membership) {
        if m.version <= self.config.version {
            return;
        }
        tracing::info!(
            sid = self.config.my_id,
            version = %m.version,
            voters = ?m.voters,
            observers = ?m.observers,
            "configuration active"
        );
        if self
            .config
            .pending
            .as_ref()
            .is_some_and(|p| p.version <= m.version)
        {
            self.config.pending = None;
        }
        self.config.version = m.version;
        self.config.voters = m.voters;
        self.config.observers = m.observers;
        if !self.config.is_member(self.config.my_id) {
            tracing::warn!(
                sid = self.config.my_id,
                version = %self.config.version,
                "this server is not in the configuration: it follows the leader without serving \
                 clients until a reconfiguration adds it again"
            );
        }
        self.role_check = true;
        self.announce_membership();
    }

    /// A configuration a peer holds (see the module docs).
    pub(crate) fn adopt_config(&mut self, m: Membership, committed: bool) {
        if committed {
            self.activate(m);
            return;
        }
        if m.version <= self.last_seen_version() {
            return;
        }
        if let Some(older) = self.config.pending.take() {
            self.activate(older);
        }
        if m.version > self.config.version {
            tracing::info!(sid = self.config.my_id, version = %m.version, "configuration pending (from a peer)");
            self.config.pending = Some(m);
            self.announce_membership();
        }
    }

    /// A peer's notification named older configurations than ours: tell it ours.
    pub(crate) fn answer_older_config(&mut self, to: Sid, active: Zxid, pending: Zxid) {
        if self.config.version > active {
            let membership = self.config.active();
            self.send(
                to,
                Message::Config {
                    membership,
                    committed: true,
                },
            );
        }
        let newest = active.max(pending);
        if let Some(mine) = self.config.pending.clone().filter(|p| p.version > newest) {
            self.send(
                to,
                Message::Config {
                    membership: mine,
                    committed: false,
                },
            );
        }
    }

    /// Tells the host the active and pending configurations (it connects to new members).
    fn announce_membership(&mut self) {
        self.role_check = true;
        self.actions.push(Action::MembershipChanged {
            active: self.config.active(),
            pending: self.config.pending.clone(),
        });
    }

    /// After an input that activated a configuration: make the role fit it.
    pub(crate) fn fit_role_to_membership(&mut self, now: Millis) {
        if !std::mem::take(&mut self.role_check) {
            return;
        }
        let me = self.config.my_id;
        match &self.role {
            RoleState::Leading(_) => self.leader_step_aside_if_not_voting(now),
            RoleState::Learning(l) => {
                let observer = self.config.is_observer(me);
                if self.config.is_member(me) && l.observer != observer {
                    self.become_looking(now, "reconfiguration changed this server's role");
                }
            }
            RoleState::Looking(e) => {
                if e.is_voter() != self.counts_as_voter() {
                    self.become_looking(now, "reconfiguration changed whether this server votes");
                }
            }
            RoleState::Halted => {}
        }
    }

    /// A leader that no longer votes hands leadership over to a voter of the configuration,
    /// or steps down when none can take it.
    pub(crate) fn leader_step_aside_if_not_voting(&mut self, now: Millis) {
        if self.config.is_voter(self.config.my_id) || self.transfer_underway().is_some() {
            return;
        }
        let within = self.config.sync_limit_ms();
        match self.transfer_leadership(now, within) {
            Ok(successor) => {
                tracing::info!(successor, "no longer a voter: handing leadership over")
            }
            Err(e) => {
                tracing::info!(reason = %e, "no longer a voter: stepping down");
                self.become_looking(now, "leader removed from the voters");
            }
        }
    }

    /// True when the voters of `voters` that are synced with this leader (and the leader, if
    /// it is one) are a majority of them: ZooKeeper's check before it proposes a
    /// reconfiguration (`NewConfigNoQuorum` otherwise).
    pub fn is_quorum_synced(&self, voters: &BTreeSet<Sid>) -> bool {
        let RoleState::Leading(_) = &self.role else {
            return false;
        };
        let me = self.config.my_id;
        let synced: BTreeSet<Sid> = self
            .learners()
            .into_iter()
            .filter(|l| l.synced && !l.observer)
            .map(|l| l.sid)
            .chain(std::iter::once(me))
            .collect();
        voters.iter().filter(|s| synced.contains(s)).count() > voters.len() / 2
    }

    /// The version of the configuration a reconfiguration must start from: the pending one's,
    /// else the active one's.
    pub fn last_seen_version(&self) -> Zxid {
        self.config
            .pending
            .as_ref()
            .map_or(self.config.version, |p| p.version)
    }
}
