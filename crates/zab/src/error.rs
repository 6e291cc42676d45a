//! Typed errors of the Zab core.

use crate::zxid::Zxid;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZabError {
    #[error("boot refused: acceptedEpoch {accepted} < currentEpoch {current}")]
    EpochsInverted { accepted: u32, current: u32 },
    #[error("boot refused: log not strictly increasing at {at} (after {prev})")]
    LogNotIncreasing { prev: Zxid, at: Zxid },
}

/// Why a client proposal was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProposeError {
    #[error("not an established leader")]
    NotLeader,
    #[error("too many proposals in flight ({0})")]
    Busy(usize),
    #[error("transaction carries zxid {got}, expected {expected}")]
    WrongZxid { expected: Zxid, got: Zxid },
    #[error("zxid counter exhausted in epoch {0}; a new epoch is needed")]
    CounterExhausted(u32),
    #[error("handing leadership over: no new proposals")]
    Transferring,
}

/// Why a leadership hand-over could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransferError {
    #[error("this server is not an established leader")]
    NotLeader,
    #[error("a hand-over to server {0} is already under way")]
    Underway(u64),
    #[error("no synced voter to hand over to")]
    NoSuccessor,
}

/// A replica's tree differs from the leader's after applying a transaction.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("digest mismatch at {zxid}: leader {leader:#x}, local {local:#x}")]
pub struct DigestMismatch {
    pub zxid: Zxid,
    pub leader: u64,
    pub local: u64,
}
