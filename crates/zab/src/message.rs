//! The messages Zab servers exchange: FLE notifications and the quorum packets of discovery,
//! synchronisation and broadcast (ZAB.md §3, §4.2). Connections are assumed FIFO (TCP); the
//! host tells Zab when one breaks.

use crate::config::Sid;
use crate::entry::{Image, SharedEntry};
use crate::membership::Membership;
use crate::zxid::Zxid;

/// What a server says it is doing, in its election notifications.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerState {
    Looking,
    Following,
    Leading,
    Observing,
}

/// A proposed leader: ordered by (epoch, zxid, sid), epoch first (FLE `totalOrderPredicate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vote {
    pub leader: Sid,
    /// The candidate's last logged zxid.
    pub zxid: Zxid,
    /// The candidate's currentEpoch (FLE `peerEpoch`).
    pub epoch: u32,
}

impl Vote {
    pub fn beats(&self, other: &Vote) -> bool {
        (self.epoch, self.zxid, self.leader) > (other.epoch, other.zxid, other.leader)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Notification {
    pub vote: Vote,
    /// The sender's election round (FLE `electionEpoch` / `logicalclock`).
    pub round: u64,
    pub state: PeerState,
    /// False for observers and for servers recovering from amnesia: never counted.
    pub voter: bool,
    /// The versions of the sender's active configuration and of its pending one (zero if
    /// none): a server that holds newer ones answers with them (`activation.rs`).
    pub config: Zxid,
    pub config_pending: Zxid,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    Notification(Notification),
    /// FOLLOWERINFO / OBSERVERINFO: the first packet of a learner to its leader.
    FollowerInfo {
        accepted_epoch: u32,
        last_zxid: Zxid,
        observer: bool,
        /// Set while the learner may have lost acknowledged state (DESIGN.md §5).
        recovering: bool,
        /// Per boot, so the leader can tell a restarted learner from the one that acked before.
        incarnation: u64,
    },
    LeaderInfo {
        epoch: u32,
    },
    /// `current_epoch` None is ZooKeeper's -1: "not a vote, just sync me".
    AckEpoch {
        current_epoch: Option<u32>,
        last_zxid: Zxid,
    },
    /// Sync from the learner's last zxid: no truncation, no snapshot.
    Diff {
        zxid: Zxid,
    },
    /// Drop the learner's log after `zxid`, then the stream follows.
    Trunc {
        zxid: Zxid,
    },
    /// Replace the learner's state with this image, labelled with the last zxid it contains.
    Snap {
        zxid: Zxid,
        image: Image,
    },
    Proposal(SharedEntry),
    /// Everything up to `zxid` is committed (cumulative, strictly in zxid order).
    Commit {
        zxid: Zxid,
    },
    /// A committed entry for an observer.
    Inform(SharedEntry),
    NewLeader {
        epoch: u32,
    },
    /// Everything up to `zxid` is durable at the sender; `(e, 0)` acknowledges NEWLEADER.
    Ack {
        zxid: Zxid,
    },
    /// The leader is serving; `committed` is its lastCommitted (P-spec ambiguity 3).
    UpToDate {
        committed: Zxid,
    },
    Ping,
    /// A configuration the sender holds: its active one (`committed`), sent with the sync
    /// stream before NEWLEADER (a learner synced from a snapshot has no entry that carries
    /// it) and to any server whose notification shows an older one; or its pending one.
    Config {
        membership: Membership,
        committed: bool,
    },
    /// A leader hands over (see `transfer.rs`): it stopped proposing, everything it proposed
    /// is committed and `successor` (whose vote this is) holds all of it. Go LOOKING at once
    /// with this vote.
    Abdicate {
        successor: Vote,
    },
}

impl Message {
    /// A short name for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Message::Notification(_) => "NOTIFICATION",
            Message::FollowerInfo { .. } => "FOLLOWERINFO",
            Message::LeaderInfo { .. } => "LEADERINFO",
            Message::AckEpoch { .. } => "ACKEPOCH",
            Message::Diff { .. } => "DIFF",
            Message::Trunc { .. } => "TRUNC",
            Message::Snap { .. } => "SNAP",
            Message::Proposal(_) => "PROPOSAL",
            Message::Commit { .. } => "COMMIT",
            Message::Inform(_) => "INFORM",
            Message::NewLeader { .. } => "NEWLEADER",
            Message::Ack { .. } => "ACK",
            Message::UpToDate { .. } => "UPTODATE",
            Message::Ping => "PING",
            Message::Config { .. } => "CONFIG",
            Message::Abdicate { .. } => "ABDICATE",
        }
    }
}
