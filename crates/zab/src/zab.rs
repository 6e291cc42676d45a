//! The Zab state machine: one value per server, driven by the host.
//!
//! Inputs are the `handle_*` methods and [`Zab::propose`]; each takes the host's current time.
//! Outputs accumulate as [`Action`]s that the host drains with [`Zab::poll_actions`] after every
//! input and executes in order (see [`crate::action`] for which actions are synchronous).

use crate::action::{Action, Role};
use crate::config::{Config, Millis, Sid, SERVERS_MAX};
use crate::election::{Decision, Election, ElectionStep};
use crate::entry::SharedEntry;
use crate::error::{DigestMismatch, ZabError};
use crate::history::History;
use crate::leader::LeaderState;
use crate::learner::LearnerState;
use crate::message::{Message, Notification, PeerState, Vote};
use crate::zxid::Zxid;
use std::collections::BTreeMap;

/// What the host loaded from disk at boot.
///
/// In diskless mode (DESIGN.md §5) the host has no log: it boots from its newest snapshot. If
/// that is a *whole* failure checkpoint (the applied state plus every acknowledged entry, taken
/// when the server lost its leader or quorum, with no proposal acknowledged since), `log` holds
/// the checkpoint's entries and `amnesia` is false. Otherwise `log` is empty, `amnesia` is true,
/// and `current_epoch` must be the snapshot's *epoch label*: the currentEpoch the server had
/// when the state in the snapshot was applied (never above the epoch file). A snapshot at zxid
/// z labelled e holds every transaction committed up to z, including epoch e's initial history,
/// so in a full-house election it weighs exactly as a whole server of epoch e with log end z
/// (see `election.rs`). When in doubt, `snapshot_zxid.epoch()` is a safe, lower label.
#[derive(Debug, Clone, Default)]
pub struct Boot {
    pub accepted_epoch: u32,
    /// currentEpoch (for an amnesiac diskless boot: the snapshot's epoch label, see above).
    pub current_epoch: u32,
    /// The zxid of the snapshot the host loaded into its applied state.
    pub snapshot_zxid: Zxid,
    /// The durable log records after the snapshot, in order.
    pub log: Vec<SharedEntry>,
    /// The server may have lost state it acknowledged (a wiped disk, or any diskless boot).
    pub amnesia: bool,
    /// A number unique to this boot.
    pub incarnation: u64,
}

/// A FOLLOWERINFO that arrived while we were still deciding the election.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LearnerInfo {
    pub accepted_epoch: u32,
    pub last_zxid: Zxid,
    pub observer: bool,
    pub recovering: bool,
    /// Kept for tracing; a new FOLLOWERINFO already resets the learner's acks.
    #[allow(dead_code)]
    pub incarnation: u64,
}

#[derive(Debug)]
pub(crate) enum RoleState {
    Looking(Election),
    Leading(Box<LeaderState>),
    Learning(Box<LearnerState>),
    Halted,
}

#[derive(Debug)]
pub struct Zab {
    pub(crate) config: Config,
    pub(crate) accepted_epoch: u32,
    pub(crate) current_epoch: u32,
    pub(crate) history: History,
    pub(crate) role: RoleState,
    /// The last election round we took part in (FLE `logicalclock`).
    pub(crate) round: u64,
    /// Amnesia rule: true until we have synced with an established leader.
    pub(crate) recovering: bool,
    pub(crate) incarnation: u64,
    pub(crate) actions: Vec<Action>,
    pub(crate) early_learners: BTreeMap<Sid, LearnerInfo>,
    /// Delivered entries after this zxid stay in memory (see [`Zab::retain_after`]).
    pub(crate) retain_after: Option<Zxid>,
    /// The vote a leader's hand-over designated for our next election (`transfer.rs`), until
    /// that election decides.
    pub(crate) successor: Option<Vote>,
    /// A configuration was activated: the role must be checked against it after this input.
    pub(crate) role_check: bool,
}

/// The most delivered entries [`Zab::retain_after`] keeps; beyond it the oldest go as usual
/// (and a diskless failure checkpoint writes a whole snapshot instead).
pub const RETAINED_ENTRIES_MAX: usize = 50_000;
/// ... and while the whole history takes at most this many bytes (by `Entry::approx_bytes`).
pub const RETAINED_BYTES_MAX: usize = 128 << 20;

impl Zab {
    pub fn new(config: Config, boot: Boot, now: Millis) -> Result<Zab, ZabError> {
        if boot.accepted_epoch < boot.current_epoch {
            return Err(ZabError::EpochsInverted {
                accepted: boot.accepted_epoch,
                current: boot.current_epoch,
            });
        }
        assert!(config.voters.len() + config.observers.len() <= SERVERS_MAX);
        let mut prev = boot.snapshot_zxid;
        for e in &boot.log {
            if e.zxid <= prev {
                return Err(ZabError::LogNotIncreasing { prev, at: e.zxid });
            }
            prev = e.zxid;
        }
        #[allow(unused_mut)]
        let mut recovering = boot.amnesia;
        #[cfg(feature = "planted-bugs")]
        if config.bug(crate::config::PlantedBug::VoteAfterAmnesia) {
            recovering = false;
        }
        let mut zab = Zab {
            accepted_epoch: boot.accepted_epoch,
            current_epoch: boot.current_epoch,
            history: History::new(boot.snapshot_zxid, boot.log),
            role: RoleState::Halted,
            round: 0,
            recovering,
            incarnation: boot.incarnation,
            actions: Vec::new(),
            early_learners: BTreeMap::new(),
            retain_after: None,
            successor: None,
            role_check: false,
            config,
        };
        // Reconfigurations in the log after the snapshot: all but the last are committed (a
        // leader proposes one only after the one before it committed), and so is the last if
        // an entry of a later epoch follows it (that epoch's leader committed its whole
        // initial history when it established); otherwise the last is pending.
        let booted: Vec<SharedEntry> = zab
            .history
            .entries_after(zab.history.base())
            .cloned()
            .collect();
        for entry in booted {
            let later_epoch = zab
                .config
                .pending
                .as_ref()
                .is_some_and(|p| entry.zxid.epoch() > p.version.epoch());
            if later_epoch {
                if let Some(committed) = zab.config.pending.take() {
                    zab.activate(committed);
                }
            }
            if let Some(m) = crate::membership::Membership::of_txn(&entry.txn) {
                if let Some(earlier) = zab.config.pending.take() {
                    zab.activate(earlier);
                }
                if m.version > zab.config.version {
                    zab.config.pending = Some(m);
                }
            }
        }
        zab.role_check = false;
        zab.become_looking(now, "boot");
        Ok(zab)
    }

    // ----- getters -----

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn role(&self) -> Role {
        match &self.role {
            RoleState::Looking(_) => Role::Looking,
            RoleState::Leading(_) => Role::Leading,
            RoleState::Learning(l) if l.observer => Role::Observing,
            RoleState::Learning(_) => Role::Following,
            RoleState::Halted => Role::Halted,
        }
    }

    /// True when this server may answer clients: an established leader, or a learner past
    /// UPTODATE.
    /// A server outside the configuration serves nobody (`activation.rs`).
    pub fn is_serving(&self) -> bool {
        let in_step = match &self.role {
            RoleState::Leading(l) => l.established_at.is_some(),
            RoleState::Learning(l) => l.serving(),
            _ => false,
        };
        in_step && self.config.is_member(self.config.my_id)
    }

    /// In step with an established leader (leading it, or a learner past UPTODATE) but outside
    /// the configuration: such a server serves no clients (`activation.rs`).
    pub fn is_excluded(&self) -> bool {
        let in_step = match &self.role {
            RoleState::Leading(l) => l.established_at.is_some(),
            RoleState::Learning(l) => l.serving(),
            _ => false,
        };
        in_step && !self.config.is_member(self.config.my_id)
    }

    /// The leader we follow (or ourselves when leading), once known.
    pub fn leader(&self) -> Option<Sid> {
        match &self.role {
            RoleState::Leading(_) => Some(self.config.my_id),
            RoleState::Learning(l) => Some(l.leader),
            _ => None,
        }
    }

    pub fn accepted_epoch(&self) -> u32 {
        self.accepted_epoch
    }

    pub fn current_epoch(&self) -> u32 {
        self.current_epoch
    }

    pub fn last_logged(&self) -> Zxid {
        self.history.last()
    }

    pub fn durable(&self) -> Zxid {
        self.history.durable()
    }

    pub fn delivered(&self) -> Zxid {
        self.history.delivered()
    }

    /// The entries after the delivered mark: acknowledged (or staged) proposals not yet known
    /// committed. A diskless host saves them with its failure checkpoint (DESIGN.md §5).
    pub fn undelivered(&self) -> Vec<SharedEntry> {
        let from = self.history.delivered().max(self.history.base());
        self.history.entries_after(from).cloned().collect()
    }

    /// Every entry after `zxid`, if this server's history reaches back to it (`zxid` is its
    /// base or one of its entries); `None` otherwise. A diskless host whose newest snapshot is
    /// at `zxid` saves these with its failure checkpoint instead of a new snapshot of the
    /// whole tree: the snapshot plus them is everything it holds, as a durable log would be.
    pub fn entries_since(&self, zxid: Zxid) -> Option<Vec<SharedEntry>> {
        match self.history.position(zxid) {
            crate::history::Position::Found => {
                Some(self.history.entries_after(zxid).cloned().collect())
            }
            _ => None,
        }
    }

    /// A diskless host names its newest snapshot on disk: delivered entries after it stay in
    /// memory (up to [`RETAINED_ENTRIES_MAX`], beyond the usual `committed_log_max`), so that
    /// [`Zab::entries_since`] can give a failure checkpoint everything the snapshot lacks.
    pub fn retain_after(&mut self, zxid: Zxid) {
        self.retain_after = Some(zxid);
    }

    pub fn is_recovering(&self) -> bool {
        self.recovering
    }

    pub fn round(&self) -> u64 {
        match &self.role {
            RoleState::Looking(e) => e.round(),
            _ => self.round,
        }
    }

    /// Drains the actions produced so far.
    pub fn poll_actions(&mut self) -> Vec<Action> {
        std::mem::take(&mut self.actions)
    }

    // ----- inputs -----

    pub fn handle_message(&mut self, now: Millis, from: Sid, msg: Message) {
        if from == self.config.my_id || matches!(self.role, RoleState::Halted) {
            return;
        }
        if let Message::Notification(n) = msg {
            self.answer_older_config(from, n.config, n.config_pending);
            self.on_notification(now, from, &n);
            self.fit_role_to_membership(now);
            return;
        }
        if let Message::Config {
            membership,
            committed,
        } = msg
        {
            self.adopt_config(membership, committed);
            self.fit_role_to_membership(now);
            return;
        }
        if let Message::FollowerInfo {
            accepted_epoch,
            last_zxid,
            observer,
            recovering,
            incarnation,
        } = msg
        {
            let info = LearnerInfo {
                accepted_epoch,
                last_zxid,
                observer: observer || self.config.is_observer(from),
                recovering,
                incarnation,
            };
            self.on_follower_info(now, from, info);
            return;
        }
        match &self.role {
            RoleState::Leading(_) => {
                self.leader_on_message(now, from, msg);
                self.leader_check_transfer(now);
            }
            RoleState::Learning(l) if l.leader == from => self.learner_on_message(now, msg),
            _ => {}
        }
        self.fit_role_to_membership(now);
    }

    pub fn handle_tick(&mut self, now: Millis) {
        match &mut self.role {
            RoleState::Looking(e) => {
                let step = e.on_tick(&self.config, now);
                self.apply_election_step(now, None, step);
            }
            RoleState::Leading(_) => {
                self.leader_on_tick(now);
                self.leader_check_transfer(now);
            }
            RoleState::Learning(_) => self.learner_on_tick(now),
            RoleState::Halted => {}
        }
        self.fit_role_to_membership(now);
        if let RoleState::Leading(_) = &self.role {
            // A hand-over that was abandoned is tried again while we do not vote.
            self.leader_step_aside_if_not_voting(now);
        }
    }

    /// The host's log is durable (fsynced) up to `zxid`.
    pub fn handle_log_durable(&mut self, now: Millis, zxid: Zxid) {
        self.history.set_durable(zxid);
        match &self.role {
            RoleState::Leading(_) => {
                self.leader_check_established(now);
                self.leader_try_commit(now);
                self.leader_check_transfer(now);
            }
            RoleState::Learning(_) => self.learner_on_durable(),
            _ => {}
        }
        self.fit_role_to_membership(now);
    }

    /// The connection to `peer` broke.
    pub fn handle_peer_disconnected(&mut self, now: Millis, peer: Sid) {
        match &self.role {
            RoleState::Leading(_) => self.leader_on_disconnect(peer),
            RoleState::Learning(l) if l.leader == peer => {
                self.become_looking(now, "lost connection to leader")
            }
            RoleState::Looking(_) => {
                self.early_learners.remove(&peer);
            }
            _ => {}
        }
    }

    /// The host applied `entry` and its tree digest is now `local`. A mismatch with the
    /// leader's digest fail-stops this server: serving diverged state is worse than stopping.
    pub fn check_applied_digest(
        &mut self,
        entry: &SharedEntry,
        local: u64,
    ) -> Result<(), DigestMismatch> {
        match entry.digest {
            Some(leader) if leader != local => {
                self.halt("digest mismatch");
                Err(DigestMismatch {
                    zxid: entry.zxid,
                    leader,
                    local,
                })
            }
            _ => Ok(()),
        }
    }

    /// Stops this server for good (fail-stop).
    pub fn halt(&mut self, reason: &str) {
        tracing::error!(sid = self.config.my_id, reason, "halting");
        self.disconnect_role_peers();
        self.role = RoleState::Halted;
        self.actions.push(Action::RoleChanged {
            role: Role::Halted,
            epoch: self.current_epoch,
        });
    }

    // ----- election -----

    /// Our vote at the start of a round: for ourselves, or for the successor a leader's
    /// hand-over designated (never behind our own state; see `transfer.rs`).
    fn initial_vote(&self) -> Vote {
        if let Some(successor) = self.successor {
            return successor;
        }
        Vote {
            leader: self.config.my_id,
            zxid: self.history.last(),
            epoch: self.current_epoch,
        }
    }

    pub(crate) fn counts_as_voter(&self) -> bool {
        self.config.is_voter(self.config.my_id) && !self.recovering
    }

    pub(crate) fn become_looking(&mut self, now: Millis, reason: &str) {
        self.disconnect_role_peers();
        self.start_looking(now, reason);
    }

    /// LOOKING without breaking our role's links: an abdicating leader leaves them to its
    /// learners, which close them once they have read its ABDICATE (a break now could lose it).
    pub(crate) fn start_looking(&mut self, now: Millis, reason: &str) {
        tracing::debug!(sid = self.config.my_id, reason, "looking");
        let previous = self.round();
        self.round = previous;
        let election = Election::start(
            &self.config,
            previous,
            self.initial_vote(),
            self.counts_as_voter(),
            now,
        )
        .designated(self.successor.map(|v| v.leader));
        self.role = RoleState::Looking(election);
        self.early_learners.clear();
        self.actions.push(Action::RoleChanged {
            role: Role::Looking,
            epoch: self.current_epoch,
        });
        self.broadcast_notification();
    }

    fn disconnect_role_peers(&mut self) {
        match &self.role {
            RoleState::Leading(l) => {
                let peers: Vec<Sid> = l.learners.keys().copied().collect();
                for peer in peers {
                    self.actions.push(Action::Disconnect { peer });
                }
            }
            RoleState::Learning(l) => {
                let peer = l.leader;
                self.actions.push(Action::Disconnect { peer });
            }
            _ => {}
        }
    }

    /// What we tell others about ourselves.
    fn own_notification(&self) -> Option<Notification> {
        let voter = self.counts_as_voter();
        match &self.role {
            RoleState::Looking(e) => Some(e.notification()),
            RoleState::Leading(l) => Some(Notification {
                vote: Vote {
                    leader: self.config.my_id,
                    zxid: self.history.last(),
                    epoch: l.advertised_epoch(self.current_epoch),
                },
                round: l.round,
                state: PeerState::Leading,
                voter,
                config: Zxid::ZERO,
                config_pending: Zxid::ZERO,
            }),
            RoleState::Learning(l) => Some(Notification {
                vote: l.advertised_vote(),
                round: self.round,
                state: if l.observer {
                    PeerState::Observing
                } else {
                    PeerState::Following
                },
                voter,
                config: Zxid::ZERO,
                config_pending: Zxid::ZERO,
            }),
            RoleState::Halted => None,
        }
    }

    fn broadcast_notification(&mut self) {
        let Some(n) = self.own_notification() else {
            return;
        };
        let peers: Vec<Sid> = self.config.peers().collect();
        for to in peers {
            self.send(to, Message::Notification(n));
        }
    }

    fn on_notification(&mut self, now: Millis, from: Sid, n: &Notification) {
        let initial = self.initial_vote();
        match &mut self.role {
            RoleState::Looking(e) => {
                let step = e.on_notification(&self.config, from, n, initial, now);
                self.apply_election_step(now, Some(from), step);
            }
            RoleState::Halted => {}
            _ => {
                // An established server answers a LOOKING one at once with its vote, which is
                // how late joiners learn the leader.
                if n.state == PeerState::Looking {
                    if let Some(own) = self.own_notification() {
                        self.send(from, Message::Notification(own));
                    }
                }
            }
        }
    }

    fn apply_election_step(&mut self, now: Millis, _from: Option<Sid>, step: ElectionStep) {
        let RoleState::Looking(e) = &self.role else {
            return;
        };
        let n = e.notification();
        let round = e.round();
        let started_at = e.started_at;
        let full_house = e.decided_by_full_house();
        let designated = e.designated_successor();
        if step.broadcast {
            let peers: Vec<Sid> = self.config.peers().collect();
            for to in peers {
                self.send(to, Message::Notification(n));
            }
        }
        if let Some(to) = step.reply_to {
            self.send(to, Message::Notification(n));
        }
        if let Some(decision) = step.decision {
            self.round = round;
            self.successor = None;
            let elected_after = now.saturating_sub(started_at);
            tracing::debug!(
                sid = self.config.my_id,
                ?decision,
                elected_after,
                full_house,
                "decided"
            );
            match decision {
                Decision::Lead => {
                    self.become_leader(now, full_house);
                    if designated == Some(self.config.my_id) {
                        // A hand-over's voters that missed our LOOKING vote follow at once when
                        // they hear that we lead (`Election::designated_leading`).
                        self.broadcast_notification();
                    }
                }
                Decision::Follow { leader } => {
                    if designated == Some(leader) {
                        // A hand-over's successor may have missed our vote while it still
                        // followed the old leader; it decides as soon as it has a quorum's.
                        self.send(leader, Message::Notification(n));
                    }
                    let vote_epoch = if n.vote.leader == leader {
                        n.vote.epoch
                    } else {
                        0
                    };
                    self.become_learner(now, leader, vote_epoch)
                }
            }
        }
    }

    fn on_follower_info(&mut self, now: Millis, from: Sid, info: LearnerInfo) {
        match &self.role {
            RoleState::Leading(_) => self.leader_on_follower_info(now, from, info),
            RoleState::Looking(_) => {
                // We may be about to lead; keep it (one per server, so bounded).
                self.early_learners.insert(from, info);
            }
            _ => self.actions.push(Action::Disconnect { peer: from }),
        }
    }

    // ----- shared helpers -----

    pub(crate) fn send(&mut self, to: Sid, mut msg: Message) {
        debug_assert_ne!(to, self.config.my_id);
        if let Message::Notification(n) = &mut msg {
            n.config = self.config.version;
            n.config_pending = self
                .config
                .pending
                .as_ref()
                .map_or(Zxid::ZERO, |p| p.version);
        }
        self.actions.push(Action::Send { to, msg });
    }

    /// Hands the host every entry up to `zxid` it has not applied.
    pub(crate) fn deliver_to(&mut self, zxid: Zxid) {
        if self.history.delivered() < self.history.base() {
            // Entries standing on a snapshot the host does not hold: never deliver across it.
            self.halt("entries stand on a snapshot this server has not applied");
            return;
        }
        let before = self.history.delivered();
        for entry in self.history.take_deliverable(zxid) {
            self.actions.push(Action::Deliver(entry.clone()));
            self.note_delivered(&entry);
        }
        assert!(self.history.delivered() >= before);
        let keep = match self.retain_after {
            Some(zxid) if self.history.bytes() <= RETAINED_BYTES_MAX => self
                .history
                .count_after(zxid)
                .min(RETAINED_ENTRIES_MAX)
                .max(self.config.committed_log_max),
            _ => self.config.committed_log_max,
        };
        self.history.trim(keep);
    }
}
