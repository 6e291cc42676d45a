//! Static configuration of one Zab server, and the limits that bound every queue.

use crate::membership::{nth_highest, Membership};
use crate::zxid::Zxid;
use std::collections::BTreeSet;

/// A server id (`myid`).
pub type Sid = u64;

/// Milliseconds of the host's clock. Zab never reads a clock; time only comes in as this.
pub type Millis = u64;

/// How durable a proposal must be before it is acknowledged (DESIGN.md §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// ACK only after the log record is fsynced.
    Durable,
    /// ACK from memory; durability comes from the other replicas (and the amnesia rule).
    Diskless,
}

/// Protocol variants that are deliberately wrong, so the simulator can prove it catches them.
#[cfg(feature = "planted-bugs")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlantedBug {
    /// A follower ACKs a proposal as soon as it is appended, before the fsync.
    AckBeforePersist,
    /// The leader commits when one server fewer than a quorum has acknowledged.
    CommitWithoutQuorum,
    /// A follower ignores TRUNC: its disk keeps the uncommitted tail.
    SkipTruncate,
    /// A follower persists currentEpoch and ACKs NEWLEADER before the sync txns are durable
    /// (ZOOKEEPER-3911 / -4643).
    NewleaderBeforeDurable,
    /// A server that lost its acknowledged state votes and counts as if it had not.
    VoteAfterAmnesia,
    /// A leader handing over names its successor before the successor holds everything it
    /// proposed.
    AbdicateBeforeCaughtUp,
    /// While a reconfiguration is pending, the leader commits with a quorum of the old
    /// configuration alone.
    CommitWithOldQuorum,
}

#[cfg(feature = "planted-bugs")]
impl PlantedBug {
    pub const ALL: [PlantedBug; 7] = [
        PlantedBug::AckBeforePersist,
        PlantedBug::CommitWithoutQuorum,
        PlantedBug::SkipTruncate,
        PlantedBug::NewleaderBeforeDurable,
        PlantedBug::VoteAfterAmnesia,
        PlantedBug::AbdicateBeforeCaughtUp,
        PlantedBug::CommitWithOldQuorum,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PlantedBug::AckBeforePersist => "ack-before-persist",
            PlantedBug::CommitWithoutQuorum => "commit-without-quorum",
            PlantedBug::SkipTruncate => "skip-truncate",
            PlantedBug::NewleaderBeforeDurable => "newleader-before-durable",
            PlantedBug::VoteAfterAmnesia => "vote-after-amnesia",
            PlantedBug::AbdicateBeforeCaughtUp => "abdicate-before-caught-up",
            PlantedBug::CommitWithOldQuorum => "commit-with-old-quorum",
        }
    }

    pub fn from_name(name: &str) -> Option<PlantedBug> {
        Self::ALL.into_iter().find(|b| b.name() == name)
    }

    /// A bug whose damage other rules of the protocol prevent by design: the simulator must
    /// find nothing, which proves those rules hold. `abdicate-before-caught-up`: links are
    /// FIFO, so every proposal reaches the successor before ABDICATE does; the successor
    /// establishes only once its own log is durable; discovery drops a learner ahead of it.
    pub fn must_stay_harmless(self) -> bool {
        matches!(self, PlantedBug::AbdicateBeforeCaughtUp)
    }

    /// A bug only membership changes reach: the model simulator's ensembles never reconfigure
    /// (the cluster simulator's do, and catch it there).
    pub fn needs_membership_changes(self) -> bool {
        matches!(self, PlantedBug::CommitWithOldQuorum)
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub my_id: Sid,
    /// Servers that vote and count toward quorums (ZooKeeper's participants).
    pub voters: BTreeSet<Sid>,
    /// Servers that receive commits and never vote.
    pub observers: BTreeSet<Sid>,
    /// The version of the active configuration (`voters`, `observers`): the zxid of the
    /// reconfiguration that made it, zero for a configuration from a file.
    pub version: Zxid,
    /// A configuration proposed and not yet committed (see `membership.rs`): while there is
    /// one, every quorum must also be a quorum of it.
    pub pending: Option<Membership>,
    pub tick_ms: Millis,
    /// Ticks a learner may take to connect and sync (ZooKeeper `initLimit`).
    pub init_limit_ticks: u64,
    /// Ticks of silence after which a peer is considered gone (ZooKeeper `syncLimit`).
    pub sync_limit_ticks: u64,
    /// Quiet time after a quorum agrees before an election is decided (FLE `finalizeWait`).
    pub finalize_wait_ms: Millis,
    /// First and largest interval between re-broadcasts of an unanswered vote.
    pub notification_interval_min_ms: Millis,
    pub notification_interval_max_ms: Millis,
    /// Committed entries kept in memory for DIFF sync (ZooKeeper `commitLogCount`).
    pub committed_log_max: usize,
    /// Proposals a leader may have outstanding before `propose` answers Busy.
    pub proposals_in_flight_max: usize,
    /// Sync every learner by SNAP, even one a DIFF would bring up to date (ZooKeeper's
    /// `zookeeper.forceSnapshotSync`, a testing switch): the simulator turns it on in some
    /// runs so that snapshot installs, rare otherwise, happen in every state.
    pub force_snapshot_sync: bool,
    pub durability: Durability,
    #[cfg(feature = "planted-bugs")]
    pub planted_bug: Option<PlantedBug>,
}

/// A learner's sync stream can never exceed the leader's in-memory history.
pub fn sync_entries_max(config: &Config) -> usize {
    config.committed_log_max + config.proposals_in_flight_max + SYNC_ENTRIES_SLACK
}

/// Entries a server may hold beyond the committed window: undelivered entries loaded at boot
/// are bounded by the host's snapshot interval, not by Zab, so only a sanity bound applies.
pub const SYNC_ENTRIES_SLACK: usize = 1 << 20;

/// Servers in one ensemble (ZooKeeper supports 255 ids in practice).
pub const SERVERS_MAX: usize = 255;

impl Config {
    /// A configuration with meerkat's defaults for `voters`, as `my_id`.
    pub fn new(my_id: Sid, voters: BTreeSet<Sid>, observers: BTreeSet<Sid>) -> Config {
        Config {
            my_id,
            voters,
            observers,
            version: Zxid::ZERO,
            pending: None,
            tick_ms: 50,
            init_limit_ticks: 10,
            sync_limit_ticks: 5,
            finalize_wait_ms: 20,
            notification_interval_min_ms: 50,
            notification_interval_max_ms: 1600,
            committed_log_max: 500,
            proposals_in_flight_max: 1000,
            force_snapshot_sync: false,
            durability: Durability::Durable,
            #[cfg(feature = "planted-bugs")]
            planted_bug: None,
        }
    }

    /// A majority of the active configuration's voters (what `mntr` reports).
    pub fn quorum_size(&self) -> usize {
        self.voters.len() / 2 + 1
    }

    /// The active configuration as a value.
    pub fn active(&self) -> Membership {
        Membership {
            version: self.version,
            voters: self.voters.clone(),
            observers: self.observers.clone(),
        }
    }

    /// Votes, in the active or the pending configuration.
    pub fn is_voter(&self, sid: Sid) -> bool {
        self.voters.contains(&sid) || self.pending.as_ref().is_some_and(|p| p.is_voter(sid))
    }

    /// Observes, and votes in neither configuration.
    pub fn is_observer(&self, sid: Sid) -> bool {
        !self.is_voter(sid)
            && (self.observers.contains(&sid)
                || self
                    .pending
                    .as_ref()
                    .is_some_and(|p| p.observers.contains(&sid)))
    }

    /// A member of the active or the pending configuration.
    pub fn is_member(&self, sid: Sid) -> bool {
        self.is_voter(sid) || self.is_observer(sid)
    }

    /// True when the servers `has` says yes to are a majority of the active configuration's
    /// voters and, while one is pending, of the pending one's too.
    pub fn is_quorum(&self, has: impl Fn(Sid) -> bool) -> bool {
        let majority =
            |voters: &BTreeSet<Sid>| voters.iter().filter(|&&s| has(s)).count() > voters.len() / 2;
        majority(&self.voters) && self.pending.as_ref().is_none_or(|p| majority(&p.voters))
    }

    /// The highest zxid held by a quorum (in the sense of [`Config::is_quorum`]), given what
    /// each server holds; `short` counts that many servers fewer (planted bugs only).
    pub fn quorum_point(&self, holds: impl Fn(Sid) -> Option<Zxid>, short: usize) -> Option<Zxid> {
        // The highest zxid at least `needed` voters hold: the needed-th highest of what they
        // hold. Runs on every acknowledgement: `holds` is asked once per voter (it looks the
        // learner up), and ensembles have a handful of voters, sorted on the stack.
        let point = |voters: &BTreeSet<Sid>| {
            let needed = (voters.len() / 2 + 1).saturating_sub(short).max(1);
            nth_highest(voters.iter().filter_map(|&s| holds(s)), needed)
        };
        let active = point(&self.voters)?;
        #[cfg(feature = "planted-bugs")]
        if self.bug(PlantedBug::CommitWithOldQuorum) {
            return Some(active);
        }
        match &self.pending {
            Some(p) => Some(active.min(point(&p.voters)?)),
            None => Some(active),
        }
    }

    /// The voters of the active and the pending configuration.
    pub fn all_voters(&self) -> BTreeSet<Sid> {
        let pending = self.pending.iter().flat_map(|p| p.voters.iter());
        self.voters.iter().chain(pending).copied().collect()
    }

    /// Every server but this one, in the active and the pending configuration.
    pub fn peers(&self) -> impl Iterator<Item = Sid> + '_ {
        let me = self.my_id;
        let pending = self
            .pending
            .iter()
            .flat_map(|p| p.voters.iter().chain(p.observers.iter()));
        let all: BTreeSet<Sid> = self
            .voters
            .iter()
            .chain(self.observers.iter())
            .chain(pending)
            .copied()
            .filter(move |&s| s != me)
            .collect();
        all.into_iter()
    }

    pub fn init_limit_ms(&self) -> Millis {
        self.tick_ms * self.init_limit_ticks
    }

    pub fn sync_limit_ms(&self) -> Millis {
        self.tick_ms * self.sync_limit_ticks
    }

    /// True when the given planted bug is switched on. Always false without the feature.
    #[cfg(feature = "planted-bugs")]
    pub fn bug(&self, bug: PlantedBug) -> bool {
        self.planted_bug == Some(bug)
    }
}
