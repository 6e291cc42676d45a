//! The leader: discovery (choose an epoch above every one a quorum accepted), synchronisation
//! (one handler per learner; DIFF/TRUNC/SNAP then NEWLEADER), and broadcast (pipelined
//! proposals, COMMIT strictly in zxid order once a quorum including ourselves has them durable).
//!
//! There is no global phase for learners: a late joiner runs discovery and sync while the
//! leader broadcasts, as in ZooKeeper's `LearnerHandler`.
//!
//! # Full house (diskless mode)
//! A leader elected by a full house (see `election.rs`) runs a stricter discovery: it waits for
//! FOLLOWERINFO from *every* voter, amnesiac ones included, and chooses an epoch above all of
//! their acceptedEpochs; it then needs an ACKEPOCH from every voter whose (epoch, last zxid) is
//! not ahead of its own (one ahead ends the attempt: the next round elects that one). Only then
//! does it count amnesiac voters toward the NEWLEADER quorum and the commit quorum. An amnesiac
//! leader becomes whole at establishment: its history is then the ensemble's.

use crate::action::{Action, Role};
use crate::config::{Millis, Sid};
use crate::entry::{Entry, SharedEntry};
use crate::error::ProposeError;
use crate::message::Message;
use crate::sync_plan::{plan_sync, snap_plan, SyncPlan};
use crate::zab::{LearnerInfo, RoleState, Zab};
use crate::zxid::Zxid;
use proto::txn::Txn;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum HandlerPhase {
    /// FOLLOWERINFO received; waiting for the epoch.
    Connected,
    LeaderInfoSent,
    EpochAcked,
    /// Sync stream and NEWLEADER queued; proposals are forwarded from here on.
    NewLeaderSent,
    NewLeaderAcked,
    UpToDate,
}

#[derive(Debug)]
pub(crate) struct LearnerHandler {
    info: LearnerInfo,
    phase: HandlerPhase,
    last_heard: Millis,
    /// The learner's log is durable up to here (cumulative ACKs).
    acked: Zxid,
    /// The last zxid of the sync stream sent before NEWLEADER.
    synced_upto: Zxid,
}

#[derive(Debug)]
pub(crate) struct LeaderState {
    pub round: u64,
    started_at: Millis,
    /// The epoch this leader proposes, once a quorum reported its acceptedEpoch.
    epoch: Option<u32>,
    epoch_reports: BTreeMap<Sid, u32>,
    ack_epochs: BTreeSet<Sid>,
    /// currentEpoch is persisted: learners may now be synced.
    epoch_settled: bool,
    newleader_acks: BTreeSet<Sid>,
    pub established_at: Option<Millis>,
    pub learners: BTreeMap<Sid, LearnerHandler>,
    last_proposed: Zxid,
    committed: Zxid,
    next_ping: Millis,
    /// Elected by a full house: discovery hears every voter and counts amnesiac ones.
    full_house: bool,
    /// A hand-over under way: no new proposals until it ends (see `transfer.rs`).
    pub(crate) transfer: Option<crate::transfer::Transfer>,
}

impl LeaderState {
    /// The last zxid proposed, and the last committed.
    pub(crate) fn proposed_and_committed(&self) -> (Zxid, Zxid) {
        (self.last_proposed, self.committed)
    }

    /// Learners told UPTODATE, with what each has acknowledged.
    pub(crate) fn up_to_date_learners(
        &self,
    ) -> impl Iterator<Item = (Sid, &LearnerInfo, Zxid)> + '_ {
        self.learners
            .iter()
            .filter(|(_, h)| h.phase == HandlerPhase::UpToDate)
            .map(|(sid, h)| (*sid, &h.info, h.acked))
    }

    /// Proposals of this epoch not yet committed.
    fn outstanding(&self, epoch: u32) -> usize {
        if self.last_proposed.epoch() != epoch {
            return 0;
        }
        let committed = if self.committed.epoch() == epoch {
            self.committed.counter()
        } else {
            0
        };
        (self.last_proposed.counter() - committed) as usize
    }

    pub fn advertised_epoch(&self, current_epoch: u32) -> u32 {
        self.epoch.unwrap_or(current_epoch)
    }
}

/// A leader's view of one learner, for operators (`mntr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LearnerStatus {
    pub sid: Sid,
    pub observer: bool,
    /// Past NEWLEADER: the learner has the leader's history.
    pub synced: bool,
    /// The learner's log is durable up to here.
    pub acked: Zxid,
}

impl Zab {
    /// The learners connected to this leader (empty unless leading).
    pub fn learners(&self) -> Vec<LearnerStatus> {
        let RoleState::Leading(l) = &self.role else {
            return Vec::new();
        };
        l.learners
            .iter()
            .map(|(&sid, h)| LearnerStatus {
                sid,
                observer: h.info.observer,
                synced: h.phase >= HandlerPhase::NewLeaderAcked,
                acked: h.acked,
            })
            .collect()
    }

    /// True while leading an epoch that a full house elected (diskless mode).
    pub fn elected_by_full_house(&self) -> bool {
        matches!(&self.role, RoleState::Leading(l) if l.full_house)
    }

    fn leading(&self) -> &LeaderState {
        match &self.role {
            RoleState::Leading(l) => l,
            _ => unreachable!("leader method called while not leading"),
        }
    }

    fn leader_mut(&mut self) -> &mut LeaderState {
        match &mut self.role {
            RoleState::Leading(l) => l,
            _ => unreachable!("leader method called while not leading"),
        }
    }

    /// A learner's acks count toward commit only once it is a synced voter; an amnesiac
    /// counts only after it has been brought up to date by this leader.
    fn counts_for_quorum(&self, sid: Sid, h: &LearnerHandler) -> bool {
        if h.info.observer || !self.config.is_voter(sid) {
            return false;
        }
        match h.phase {
            HandlerPhase::UpToDate => true,
            HandlerPhase::NewLeaderAcked => !h.info.recovering || self.leading().full_house,
            _ => false,
        }
    }

    /// Whether a learner's reports count in discovery: whole voters always, amnesiac voters
    /// only under a full house.
    fn counts_in_discovery(&self, sid: Sid, info: &LearnerInfo) -> bool {
        let full_house = matches!(&self.role, RoleState::Leading(l) if l.full_house);
        !info.observer && self.config.is_voter(sid) && (!info.recovering || full_house)
    }

    /// Whether discovery heard enough of the servers `reported` says yes to (ourselves
    /// included): a quorum, or every voter under a full house.
    fn discovery_heard_enough(&self, reported: impl Fn(Sid) -> bool) -> bool {
        if self.leading().full_house {
            self.config.all_voters().iter().all(|&s| reported(s))
        } else {
            self.config.is_quorum(reported)
        }
    }

    pub(crate) fn become_leader(&mut self, now: Millis, full_house: bool) {
        assert!(
            self.counts_as_voter() || (full_house && self.config.is_voter(self.config.my_id)),
            "only a whole voter may lead, or any voter a full house elected"
        );
        let mut state = LeaderState {
            round: self.round,
            started_at: now,
            epoch: None,
            epoch_reports: BTreeMap::new(),
            ack_epochs: BTreeSet::new(),
            epoch_settled: false,
            newleader_acks: BTreeSet::new(),
            established_at: None,
            learners: BTreeMap::new(),
            last_proposed: self.history.last(),
            committed: self.history.delivered(),
            next_ping: now,
            full_house,
            transfer: None,
        };
        state
            .epoch_reports
            .insert(self.config.my_id, self.accepted_epoch);
        self.role = RoleState::Leading(Box::new(state));
        let early = std::mem::take(&mut self.early_learners);
        for (sid, info) in early {
            self.leader_on_follower_info(now, sid, info);
        }
        self.leader_check_epoch_quorum();
    }

    pub(crate) fn leader_on_follower_info(&mut self, now: Millis, from: Sid, info: LearnerInfo) {
        let counted = self.counts_in_discovery(from, &info);
        if let Some(epoch) = self.leading().epoch {
            if counted && info.accepted_epoch > epoch {
                // The voter promised a later epoch and will refuse ours. ZooKeeper leaves it
                // outside until the next election; we start that election now, and its epoch
                // will be above the promise (every round raises ours by one).
                self.become_looking(now, "learner promised a later epoch");
                return;
            }
        }
        let l = self.leader_mut();
        // A new FOLLOWERINFO is a new connection: acks of the old one are forgotten, so an
        // ack from before a restart can never complete a commit (incarnation rule).
        l.learners.insert(
            from,
            LearnerHandler {
                info,
                phase: HandlerPhase::Connected,
                last_heard: now,
                acked: Zxid::ZERO,
                synced_upto: Zxid::ZERO,
            },
        );
        l.ack_epochs.remove(&from);
        match l.epoch {
            Some(epoch) => {
                if let Some(h) = l.learners.get_mut(&from) {
                    h.phase = HandlerPhase::LeaderInfoSent;
                }
                self.send(from, Message::LeaderInfo { epoch });
            }
            None => {
                if counted {
                    l.epoch_reports.insert(from, info.accepted_epoch);
                }
                self.leader_check_epoch_quorum();
            }
        }
    }

    fn leader_check_epoch_quorum(&mut self) {
        let l = self.leading();
        if l.epoch.is_some() || !self.discovery_heard_enough(|s| l.epoch_reports.contains_key(&s)) {
            return;
        }
        let highest = l.epoch_reports.values().copied().max().unwrap_or(0);
        let epoch = highest.max(self.accepted_epoch) + 1;
        assert!(epoch > self.current_epoch);
        // Durable before any LEADERINFO(epoch) leaves.
        self.actions.push(Action::SaveAcceptedEpoch(epoch));
        self.accepted_epoch = epoch;
        let l = self.leader_mut();
        l.epoch = Some(epoch);
        let mut to = Vec::new();
        for (sid, h) in l.learners.iter_mut() {
            h.phase = HandlerPhase::LeaderInfoSent;
            to.push(*sid);
        }
        for sid in to {
            self.send(sid, Message::LeaderInfo { epoch });
        }
        // A configuration of one voter needs no ACKEPOCH.
        self.leader_check_ack_epoch_quorum();
    }

    pub(crate) fn leader_on_message(&mut self, now: Millis, from: Sid, msg: Message) {
        let Some(h) = self.leader_mut().learners.get_mut(&from) else {
            return;
        };
        h.last_heard = now;
        match msg {
            Message::AckEpoch {
                current_epoch,
                last_zxid,
            } => self.leader_on_ack_epoch(now, from, current_epoch, last_zxid),
            Message::Ack { zxid } => self.leader_on_ack(now, from, zxid),
            Message::Ping => {}
            other => {
                tracing::warn!(from, kind = other.kind(), "unexpected packet from learner");
                self.leader_drop_learner(from);
            }
        }
    }

    fn leader_on_ack_epoch(
        &mut self,
        now: Millis,
        from: Sid,
        current_epoch: Option<u32>,
        last_zxid: Zxid,
    ) {
        let my_current = self.current_epoch;
        let my_last = self.history.last();
        let l = self.leader_mut();
        let settled = l.epoch_settled;
        let Some(h) = l.learners.get_mut(&from) else {
            return;
        };
        if h.phase != HandlerPhase::LeaderInfoSent {
            self.leader_drop_learner(from);
            return;
        }
        h.phase = HandlerPhase::EpochAcked;
        h.info.last_zxid = last_zxid;
        let info = h.info;
        let counted = self.counts_in_discovery(from, &info);
        let full_house = self.leading().full_house;
        if full_house && !settled && counted && current_epoch.is_none() {
            // Every voter promised an epoch below ours, so this is a stale connection: the
            // full house cannot complete without its report.
            self.leader_drop_learner(from);
            return;
        }
        if let (Some(ce), false, true) = (current_epoch, settled, counted) {
            if (ce, last_zxid) > (my_current, my_last) {
                // "Follower is ahead of the leader": this election was wrong.
                tracing::warn!(from, %last_zxid, "learner ahead of leader");
                if full_house {
                    // Without this voter no full house completes; elect again at once.
                    self.become_looking(now, "full house: a voter is ahead of the leader");
                } else {
                    self.leader_drop_learner(from);
                }
                return;
            }
            if self.config.is_voter(from) {
                self.leader_mut().ack_epochs.insert(from);
            }
        }
        if settled {
            self.leader_sync_learner(from);
        } else {
            self.leader_check_ack_epoch_quorum();
        }
    }

    fn leader_check_ack_epoch_quorum(&mut self) {
        let me = self.config.my_id;
        let l = self.leading();
        let Some(epoch) = l.epoch else { return };
        if l.epoch_settled || !self.discovery_heard_enough(|s| s == me || l.ack_epochs.contains(&s))
        {
            return;
        }
        // Durable before the first NEWLEADER (ZAB.md §2).
        assert!(epoch >= self.current_epoch);
        self.actions.push(Action::SaveCurrentEpoch(epoch));
        self.current_epoch = epoch;
        let l = self.leader_mut();
        l.epoch_settled = true;
        let ready: Vec<Sid> = l
            .learners
            .iter()
            .filter(|(_, h)| h.phase == HandlerPhase::EpochAcked)
            .map(|(s, _)| *s)
            .collect();
        for sid in ready {
            self.leader_sync_learner(sid);
        }
    }

    /// Queues DIFF/TRUNC/SNAP, the entries after the sync point, then NEWLEADER; from here on
    /// the learner is sent every new proposal (P-spec ambiguity 1).
    fn leader_sync_learner(&mut self, sid: Sid) {
        let Some(epoch) = self.leading().epoch else {
            return;
        };
        let Some(h) = self.leading().learners.get(&sid) else {
            return;
        };
        let plan = if self.config.force_snapshot_sync {
            snap_plan(&self.history)
        } else {
            plan_sync(&self.history, h.info.last_zxid)
        };
        tracing::debug!(leader = self.config.my_id, learner = sid, ?plan, "sync");
        match plan {
            SyncPlan::Diff { from } => self.send(sid, Message::Diff { zxid: from }),
            SyncPlan::Trunc { to } => self.send(sid, Message::Trunc { zxid: to }),
            SyncPlan::Snap { at } => self
                .actions
                .push(Action::SendSnapshot { to: sid, zxid: at }),
        }
        let stream: Vec<SharedEntry> = self
            .history
            .entries_after(plan.stream_after())
            .cloned()
            .collect();
        for entry in stream {
            self.send(sid, Message::Proposal(entry));
        }
        let synced_upto = self.history.last();
        self.send(
            sid,
            Message::Config {
                membership: self.config.active(),
                committed: true,
            },
        );
        self.send(sid, Message::NewLeader { epoch });
        if let Some(h) = self.leader_mut().learners.get_mut(&sid) {
            h.phase = HandlerPhase::NewLeaderSent;
            h.synced_upto = synced_upto;
        }
    }

    fn leader_on_ack(&mut self, now: Millis, from: Sid, zxid: Zxid) {
        let last = self.history.last();
        let is_voter = self.config.is_voter(from);
        let l = self.leader_mut();
        let Some(epoch) = l.epoch else { return };
        let established = l.established_at.is_some();
        let committed = l.committed;
        let Some(h) = l.learners.get_mut(&from) else {
            return;
        };
        if zxid.counter() == 0 {
            if zxid.epoch() != epoch || h.phase != HandlerPhase::NewLeaderSent {
                return;
            }
            h.phase = HandlerPhase::NewLeaderAcked;
            h.acked = h.synced_upto;
            let info = h.info;
            if is_voter && self.counts_in_discovery(from, &info) {
                self.leader_mut().newleader_acks.insert(from);
            }
            if established {
                self.leader_send_up_to_date(from, committed);
            }
            self.leader_check_established(now);
        } else if h.phase >= HandlerPhase::NewLeaderAcked {
            // An ACK that overtook NEWLEADER's is ignored above (ZOOKEEPER-4685).
            h.acked = h.acked.max(zxid.min(last));
        }
        self.leader_try_commit(now);
    }

    fn leader_send_up_to_date(&mut self, sid: Sid, committed: Zxid) {
        if let Some(h) = self.leader_mut().learners.get_mut(&sid) {
            h.phase = HandlerPhase::UpToDate;
        }
        self.send(sid, Message::UpToDate { committed });
    }

    pub(crate) fn leader_check_established(&mut self, now: Millis) {
        let me = self.config.my_id;
        let l = self.leading();
        if l.established_at.is_some()
            || !l.epoch_settled
            || !self
                .config
                .is_quorum(|s| s == me || l.newleader_acks.contains(&s))
        {
            return;
        }
        // We count ourselves only once our own log is on disk: a leader that came up from
        // follower may still have an unsynced tail, and committing it on one disk fewer than a
        // quorum would let a later quorum without that disk lose it.
        if self.history.durable() < self.history.last() {
            return;
        }
        let Some(epoch) = l.epoch else { return };
        // A quorum holds our whole history durably under epoch `epoch`: all of it is committed.
        let last = self.history.last();
        if self.recovering {
            // An amnesiac elected by a full house: its history is now the ensemble's.
            assert!(l.full_house, "an amnesiac leader without a full house");
            self.recovering = false;
            self.actions.push(Action::RecoveryComplete);
        }
        self.deliver_to(last);
        let l = self.leader_mut();
        l.established_at = Some(now);
        l.committed = last;
        l.last_proposed = last;
        let acked: Vec<Sid> = l
            .learners
            .iter()
            .filter(|(_, h)| h.phase == HandlerPhase::NewLeaderAcked)
            .map(|(s, _)| *s)
            .collect();
        for sid in acked {
            self.leader_send_up_to_date(sid, last);
        }
        tracing::info!(leader = self.config.my_id, epoch, "established");
        self.actions.push(Action::RoleChanged {
            role: Role::Leading,
            epoch,
        });
    }

    /// Commits the highest zxid that a quorum (ourselves included, after our own fsync) holds.
    pub(crate) fn leader_try_commit(&mut self, _now: Millis) {
        let l = self.leading();
        if l.established_at.is_none() {
            return;
        }
        let me = self.config.my_id;
        let durable = self.history.durable();
        let holds = |sid: Sid| {
            if sid == me {
                return Some(durable);
            }
            l.learners
                .get(&sid)
                .filter(|h| self.counts_for_quorum(sid, h))
                .map(|h| h.acked)
        };
        #[allow(unused_mut)]
        let mut short = 0;
        #[cfg(feature = "planted-bugs")]
        if self
            .config
            .bug(crate::config::PlantedBug::CommitWithoutQuorum)
        {
            short = 1;
        }
        let Some(candidate) = self.config.quorum_point(holds, short) else {
            return;
        };
        let committed = l.committed;
        if candidate <= committed {
            return;
        }
        assert!(candidate <= l.last_proposed, "commit beyond last proposal");
        self.leader_commit_to(candidate);
    }

    fn leader_commit_to(&mut self, zxid: Zxid) {
        let before = self.history.delivered();
        // Only observers are sent the entries themselves (INFORM); collected only for them.
        let informs = self
            .leading()
            .learners
            .values()
            .any(|h| h.info.observer && h.phase >= HandlerPhase::NewLeaderSent);
        let newly: Vec<SharedEntry> = if informs {
            self.history
                .entries_after(before)
                .take_while(|e| e.zxid <= zxid)
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
        self.deliver_to(zxid);
        assert_eq!(
            self.history.delivered(),
            zxid,
            "commit point is not an entry"
        );
        let l = self.leader_mut();
        assert!(zxid > l.committed);
        l.committed = zxid;
        let mut participants = Vec::new();
        let mut observers = Vec::new();
        for (sid, h) in &l.learners {
            if h.phase >= HandlerPhase::NewLeaderSent {
                if h.info.observer {
                    observers.push(*sid);
                } else {
                    participants.push(*sid);
                }
            }
        }
        for sid in participants {
            self.send(sid, Message::Commit { zxid });
        }
        for sid in observers {
            for entry in &newly {
                self.send(sid, Message::Inform(entry.clone()));
            }
        }
    }

    /// The zxid the next proposal must carry; None when not an established leader or when
    /// the pipeline is full (then `propose` would answer Busy).
    pub fn next_zxid(&self) -> Option<Zxid> {
        let RoleState::Leading(l) = &self.role else {
            return None;
        };
        l.established_at?;
        if l.transfer.is_some() {
            return None;
        }
        let epoch = l.epoch?;
        if l.outstanding(epoch) >= self.config.proposals_in_flight_max {
            return None;
        }
        Some(if l.last_proposed.epoch() == epoch {
            Zxid::new(epoch, l.last_proposed.counter().checked_add(1)?)
        } else {
            Zxid::new(epoch, 1)
        })
    }

    /// Proposes a transaction prepared for [`Zab::next_zxid`], with the host's tree digest
    /// after it.
    pub fn propose(
        &mut self,
        now: Millis,
        txn: Txn,
        digest: Option<u64>,
    ) -> Result<Zxid, ProposeError> {
        let RoleState::Leading(l) = &self.role else {
            return Err(ProposeError::NotLeader);
        };
        let epoch = l.epoch.ok_or(ProposeError::NotLeader)?;
        if l.established_at.is_none() {
            return Err(ProposeError::NotLeader);
        }
        if l.transfer.is_some() {
            return Err(ProposeError::Transferring);
        }
        let outstanding = l.outstanding(epoch);
        if outstanding >= self.config.proposals_in_flight_max {
            return Err(ProposeError::Busy(outstanding));
        }
        let Some(zxid) = self.next_zxid().filter(|z| z.counter() < u32::MAX) else {
            // ZOOKEEPER-1277: force a new epoch rather than wrap the counter.
            self.become_looking(now, "zxid counter exhausted");
            return Err(ProposeError::CounterExhausted(epoch));
        };
        if txn.header.zxid != zxid.as_i64() {
            return Err(ProposeError::WrongZxid {
                expected: zxid,
                got: Zxid::from_i64(txn.header.zxid),
            });
        }
        let entry = Arc::new(Entry { zxid, txn, digest });
        self.history.append(entry.clone());
        self.note_appended(&entry);
        self.actions.push(Action::Append(entry.clone()));
        let l = self.leader_mut();
        l.last_proposed = zxid;
        let to: Vec<Sid> = l
            .learners
            .iter()
            .filter(|(_, h)| h.phase >= HandlerPhase::NewLeaderSent && !h.info.observer)
            .map(|(s, _)| *s)
            .collect();
        for sid in to {
            self.send(sid, Message::Proposal(entry.clone()));
        }
        Ok(zxid)
    }

    pub(crate) fn leader_on_tick(&mut self, now: Millis) {
        let init_limit = self.config.init_limit_ms();
        let sync_limit = self.config.sync_limit_ms();
        if self.leading().established_at.is_none() {
            // A configuration of one voter needs no NEWLEADER ACK.
            self.leader_check_established(now);
        }
        let l = self.leading();
        if l.established_at.is_none() {
            if now > l.started_at + init_limit {
                self.become_looking(now, "no quorum synced within initLimit");
            }
            return;
        }
        // Learners silent too long are dropped; if the rest is no quorum, step down.
        let mut silent = Vec::new();
        let mut alive = BTreeSet::from([self.config.my_id]);
        for (sid, h) in &l.learners {
            let limit = if h.phase >= HandlerPhase::NewLeaderAcked {
                sync_limit
            } else {
                init_limit
            };
            if now > h.last_heard + limit {
                silent.push(*sid);
            } else if self.counts_for_quorum(*sid, h) {
                alive.insert(*sid);
            }
        }
        if !self.config.is_quorum(|s| alive.contains(&s)) {
            self.become_looking(now, "lost quorum (syncLimit)");
            return;
        }
        for sid in silent {
            self.leader_drop_learner(sid);
        }
        let ping_every = (self.config.tick_ms / 2).max(1);
        let l = self.leader_mut();
        if now >= l.next_ping {
            l.next_ping = now + ping_every;
            let to: Vec<Sid> = l.learners.keys().copied().collect();
            for sid in to {
                self.send(sid, Message::Ping);
            }
        }
    }

    fn leader_drop_learner(&mut self, sid: Sid) {
        let l = self.leader_mut();
        l.learners.remove(&sid);
        if l.epoch.is_none() {
            l.epoch_reports.remove(&sid);
        }
        self.actions.push(Action::Disconnect { peer: sid });
    }

    pub(crate) fn leader_on_disconnect(&mut self, sid: Sid) {
        let l = self.leader_mut();
        l.learners.remove(&sid);
        if l.epoch.is_none() {
            l.epoch_reports.remove(&sid);
        }
    }
}
