//! A learner (follower or observer): FOLLOWERINFO, LEADERINFO/ACKEPOCH, then the sync stream,
//! which is staged in memory and made durable only at NEWLEADER, in the order of ZAB.md §2:
//! truncate or save the snapshot, append the entries, wait for the fsync, persist currentEpoch,
//! and only then ACK NEWLEADER (ZOOKEEPER-3642, -3911, -4643, -4785).

use crate::action::{Action, Role};
use crate::config::{sync_entries_max, Durability, Millis, Sid};
use crate::entry::{Image, SharedEntry};
use crate::message::{Message, Vote};
use crate::zab::{RoleState, Zab};
use crate::zxid::Zxid;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum LearnerPhase {
    InfoSent,
    EpochAcked,
    Syncing,
    /// NEWLEADER received and staged; waiting for the fsync before acknowledging it.
    NewLeaderPending,
    NewLeaderAcked,
    Serving,
}

#[derive(Debug)]
enum SyncMode {
    Diff,
    Trunc(Zxid),
    Snap(Zxid, Image),
}

#[derive(Debug)]
struct SyncBuffer {
    mode: SyncMode,
    /// The zxid the stream continues from.
    after: Zxid,
    entries: Vec<SharedEntry>,
}

#[derive(Debug)]
pub(crate) struct LearnerState {
    pub leader: Sid,
    pub observer: bool,
    /// The leader's epoch as the election told us, until LEADERINFO gives the new one.
    vote_epoch: u32,
    epoch: Option<u32>,
    phase: LearnerPhase,
    last_heard: Millis,
    sync: Option<SyncBuffer>,
    /// (epoch, last staged zxid) of a NEWLEADER waiting for durability.
    newleader: Option<(u32, Zxid)>,
    acked: Zxid,
    commit_seen: Zxid,
}

impl LearnerState {
    pub fn serving(&self) -> bool {
        self.phase == LearnerPhase::Serving
    }

    pub fn advertised_vote(&self) -> Vote {
        Vote {
            leader: self.leader,
            zxid: Zxid::ZERO,
            epoch: self.epoch.unwrap_or(self.vote_epoch),
        }
    }
}

impl Zab {
    fn learner_mut(&mut self) -> &mut LearnerState {
        match &mut self.role {
            RoleState::Learning(l) => l,
            _ => unreachable!("learner method called while not learning"),
        }
    }

    fn learner(&self) -> &LearnerState {
        match &self.role {
            RoleState::Learning(l) => l,
            _ => unreachable!("learner method called while not learning"),
        }
    }

    pub(crate) fn become_learner(&mut self, now: Millis, leader: Sid, vote_epoch: u32) {
        assert_ne!(leader, self.config.my_id);
        let observer = self.config.is_observer(self.config.my_id);
        self.role = RoleState::Learning(Box::new(LearnerState {
            leader,
            observer,
            vote_epoch,
            epoch: None,
            phase: LearnerPhase::InfoSent,
            last_heard: now,
            sync: None,
            newleader: None,
            acked: Zxid::ZERO,
            commit_seen: Zxid::ZERO,
        }));
        self.early_learners.clear();
        let info = Message::FollowerInfo {
            accepted_epoch: self.accepted_epoch,
            last_zxid: self.history.last(),
            observer,
            recovering: self.recovering,
            incarnation: self.incarnation,
        };
        self.send(leader, info);
    }

    /// A protocol violation by the leader: leave it and elect again.
    fn learner_abort(&mut self, now: Millis, why: &str) {
        tracing::warn!(sid = self.config.my_id, why, "leaving leader");
        self.become_looking(now, why);
    }

    pub(crate) fn learner_on_message(&mut self, now: Millis, msg: Message) {
        self.learner_mut().last_heard = now;
        let phase = self.learner().phase;
        match msg {
            Message::LeaderInfo { epoch } if phase == LearnerPhase::InfoSent => {
                self.learner_on_leader_info(now, epoch)
            }
            Message::Diff { zxid } if phase == LearnerPhase::EpochAcked => {
                self.learner_start_sync(now, SyncMode::Diff, zxid)
            }
            Message::Trunc { zxid } if phase == LearnerPhase::EpochAcked => {
                self.learner_start_sync(now, SyncMode::Trunc(zxid), zxid)
            }
            Message::Snap { zxid, image } if phase == LearnerPhase::EpochAcked => {
                self.learner_start_sync(now, SyncMode::Snap(zxid, image), zxid)
            }
            Message::Proposal(entry) if phase == LearnerPhase::Syncing => {
                self.learner_stage(now, entry)
            }
            Message::Proposal(entry) if phase >= LearnerPhase::NewLeaderPending => {
                self.learner_append(now, entry)
            }
            Message::Inform(entry) if phase >= LearnerPhase::NewLeaderPending => {
                let zxid = entry.zxid;
                self.learner_append(now, entry);
                self.learner_on_commit(now, zxid);
            }
            Message::Commit { zxid } if phase >= LearnerPhase::NewLeaderPending => {
                self.learner_on_commit(now, zxid)
            }
            Message::NewLeader { epoch } if phase == LearnerPhase::Syncing => {
                self.learner_on_new_leader(now, epoch)
            }
            Message::UpToDate { committed } if phase == LearnerPhase::NewLeaderAcked => {
                self.learner_on_up_to_date(committed)
            }
            Message::Ping => {
                let leader = self.learner().leader;
                self.send(leader, Message::Ping);
            }
            Message::Abdicate { successor } if phase >= LearnerPhase::NewLeaderAcked => {
                self.learner_on_abdicate(now, successor)
            }
            other => {
                let why = format!("unexpected {} in {:?}", other.kind(), phase);
                self.learner_abort(now, &why);
            }
        }
    }

    fn learner_on_leader_info(&mut self, now: Millis, epoch: u32) {
        let current_epoch = if epoch > self.accepted_epoch {
            // Durable before ACKEPOCH: we never accept two leaders for one epoch.
            self.actions.push(Action::SaveAcceptedEpoch(epoch));
            self.accepted_epoch = epoch;
            Some(self.current_epoch)
        } else if epoch == self.accepted_epoch {
            None
        } else {
            self.learner_abort(now, "LEADERINFO below acceptedEpoch");
            return;
        };
        let last_zxid = self.history.last();
        let l = self.learner_mut();
        l.epoch = Some(epoch);
        l.phase = LearnerPhase::EpochAcked;
        let leader = l.leader;
        self.send(
            leader,
            Message::AckEpoch {
                current_epoch,
                last_zxid,
            },
        );
    }

    fn learner_start_sync(&mut self, now: Millis, mode: SyncMode, after: Zxid) {
        // A DIFF streams what follows the learner's last zxid; from any other point the
        // stream would leave a hole or overlap (a peer's bug or a damaged frame, not ours to
        // die of): leave the leader and sync again.
        if matches!(mode, SyncMode::Diff) && after != self.history.last() {
            self.learner_abort(now, "DIFF from another point than this server's last zxid");
            return;
        }
        if let SyncMode::Trunc(to) = mode {
            // Committed state is never truncated; a leader asking for it is broken.
            if to < self.history.delivered() || to < self.history.base() {
                self.learner_abort(now, "TRUNC below committed state");
                return;
            }
        }
        let l = self.learner_mut();
        l.phase = LearnerPhase::Syncing;
        l.sync = Some(SyncBuffer {
            mode,
            after,
            entries: Vec::new(),
        });
    }

    fn learner_stage(&mut self, now: Millis, entry: SharedEntry) {
        let max = sync_entries_max(&self.config);
        let l = self.learner_mut();
        let Some(buf) = l.sync.as_mut() else {
            self.learner_abort(now, "no sync buffer");
            return;
        };
        let prev = buf.entries.last().map_or(buf.after, |e| e.zxid);
        // A hole in the stream would silently lose transactions (ZOOKEEPER-2846, -4925).
        if !prev.is_followed_by(entry.zxid) {
            self.learner_abort(now, "gap in sync stream");
            return;
        }
        if buf.entries.len() >= max {
            self.learner_abort(now, "sync stream too long");
            return;
        }
        buf.entries.push(entry);
    }

    fn learner_on_new_leader(&mut self, now: Millis, epoch: u32) {
        let l = self.learner_mut();
        if l.epoch != Some(epoch) {
            self.learner_abort(now, "NEWLEADER for another epoch");
            return;
        }
        let Some(buf) = l.sync.take() else {
            self.learner_abort(now, "NEWLEADER without sync");
            return;
        };
        match buf.mode {
            SyncMode::Diff => {
                if buf.after != self.history.last() {
                    self.learner_abort(now, "DIFF from another point than this server's last zxid");
                    return;
                }
            }
            SyncMode::Trunc(to) => {
                #[allow(unused_mut)]
                let mut on_disk = true;
                #[cfg(feature = "planted-bugs")]
                if self.config.bug(crate::config::PlantedBug::SkipTruncate) {
                    on_disk = false;
                }
                if on_disk {
                    self.actions.push(Action::Truncate(to));
                }
                self.history.truncate(to);
                self.rescan_pending();
            }
            SyncMode::Snap(zxid, image) => {
                // Durable first, then applied: the image is the leader's applied (committed)
                // state, so the host may take it at once. Keeping it aside until UPTODATE would
                // leave a server whose log stands on a snapshot its tree does not have, and
                // such a server could later lead and stream from the wrong point.
                let stream_end = buf.entries.last().map_or(zxid, |e| e.zxid);
                self.actions.push(Action::SaveSnapshot {
                    zxid,
                    image: image.clone(),
                    stream_end,
                });
                self.history.reset_to_snapshot(zxid);
                self.actions.push(Action::InstallSnapshot { zxid, image });
                self.history.set_delivered_snapshot(zxid);
                self.rescan_pending();
            }
        }
        for entry in buf.entries {
            self.history.append(entry.clone());
            self.note_appended(&entry);
            self.actions.push(Action::Append(entry));
        }
        let mark = self.history.last();
        let l = self.learner_mut();
        l.newleader = Some((epoch, mark));
        l.phase = LearnerPhase::NewLeaderPending;
        self.learner_try_ack_new_leader();
    }

    fn durable_for_ack(&self) -> Zxid {
        match self.config.durability {
            Durability::Durable => self.history.durable(),
            Durability::Diskless => self.history.last(),
        }
    }

    /// ACK NEWLEADER once everything staged is as durable as the mode promises; currentEpoch
    /// is persisted after the transactions and before the ACK.
    fn learner_try_ack_new_leader(&mut self) {
        let durable = self.durable_for_ack();
        #[allow(unused_mut)]
        let mut premature = false;
        #[cfg(feature = "planted-bugs")]
        if self
            .config
            .bug(crate::config::PlantedBug::NewleaderBeforeDurable)
        {
            premature = true;
        }
        let l = self.learner_mut();
        let Some((epoch, mark)) = l.newleader else {
            return;
        };
        let ready = durable >= mark || premature;
        if !ready {
            return;
        }
        l.newleader = None;
        l.phase = LearnerPhase::NewLeaderAcked;
        let leader = l.leader;
        self.actions.push(Action::SaveCurrentEpoch(epoch));
        self.current_epoch = epoch;
        self.send(
            leader,
            Message::Ack {
                zxid: Zxid::new(epoch, 0),
            },
        );
        self.learner_send_ack();
    }

    /// Cumulative ACK of everything durable, sent only after NEWLEADER's (ZOOKEEPER-4685).
    fn learner_send_ack(&mut self) {
        let durable = self.durable_for_ack();
        let l = self.learner_mut();
        if l.observer || l.phase < LearnerPhase::NewLeaderAcked || durable <= l.acked {
            return;
        }
        l.acked = durable;
        let leader = l.leader;
        self.send(leader, Message::Ack { zxid: durable });
    }

    pub(crate) fn learner_on_durable(&mut self) {
        self.learner_try_ack_new_leader();
        self.learner_send_ack();
    }

    fn learner_append(&mut self, now: Millis, entry: SharedEntry) {
        let last = self.history.last();
        if entry.zxid <= last {
            return; // already have it (P-spec ambiguity 2)
        }
        if !last.is_followed_by(entry.zxid) {
            self.learner_abort(now, "gap in proposals");
            return;
        }
        let zxid = entry.zxid;
        self.history.append(entry.clone());
        self.note_appended(&entry);
        self.actions.push(Action::Append(entry));
        #[cfg(feature = "planted-bugs")]
        if self.config.bug(crate::config::PlantedBug::AckBeforePersist)
            && self.learner().phase >= LearnerPhase::NewLeaderAcked
            && !self.learner().observer
        {
            let l = self.learner_mut();
            l.acked = l.acked.max(zxid);
            let leader = l.leader;
            self.send(leader, Message::Ack { zxid });
        }
        let _ = zxid;
        if self.config.durability == Durability::Diskless {
            self.learner_send_ack();
        }
    }

    fn learner_on_commit(&mut self, now: Millis, zxid: Zxid) {
        if zxid > self.history.last() {
            self.learner_abort(now, "COMMIT of an unknown proposal");
            return;
        }
        let l = self.learner_mut();
        l.commit_seen = l.commit_seen.max(zxid);
        if l.phase == LearnerPhase::Serving {
            self.deliver_to(zxid);
        }
    }

    fn learner_on_up_to_date(&mut self, committed: Zxid) {
        let l = self.learner_mut();
        l.phase = LearnerPhase::Serving;
        l.commit_seen = l.commit_seen.max(committed);
        let upto = l.commit_seen;
        let role = if l.observer {
            Role::Observing
        } else {
            Role::Following
        };
        let epoch = l.epoch.unwrap_or(self.current_epoch);
        self.deliver_to(upto.min(self.history.last()));
        if self.recovering {
            self.recovering = false;
            self.actions.push(Action::RecoveryComplete);
        }
        self.actions.push(Action::RoleChanged { role, epoch });
    }

    pub(crate) fn learner_on_tick(&mut self, now: Millis) {
        let l = self.learner();
        let limit = if l.phase >= LearnerPhase::NewLeaderPending {
            self.config.sync_limit_ms()
        } else {
            self.config.init_limit_ms()
        };
        if now > l.last_heard + limit {
            self.become_looking(now, "leader silent");
        }
    }
}
