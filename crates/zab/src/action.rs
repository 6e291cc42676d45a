//! The outputs of the Zab core: what the host must do, in order.
//!
//! The host executes actions strictly in the order given. Epoch writes, truncation and
//! snapshot saves are *synchronous*: they must be durable before the host executes the next
//! action (a following `Send` may depend on them). `Append` is asynchronous: the host reports
//! durability later with [`crate::Zab::handle_log_durable`].

use crate::config::Sid;
use crate::entry::{Image, SharedEntry};
use crate::membership::Membership;
use crate::message::Message;
use crate::zxid::Zxid;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Looking,
    Leading,
    Following,
    Observing,
    /// Fail-stopped (digest mismatch or an impossible state); needs an operator.
    Halted,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Send {
        to: Sid,
        msg: Message,
    },
    /// Break the connection to a peer (the peer will see a disconnect).
    Disconnect {
        peer: Sid,
    },
    /// Synchronous: persist acceptedEpoch.
    SaveAcceptedEpoch(u32),
    /// Synchronous: persist currentEpoch.
    SaveCurrentEpoch(u32),
    /// Asynchronous: append to the log; report durability later.
    Append(SharedEntry),
    /// Synchronous: drop every log record after this zxid.
    Truncate(Zxid),
    /// Synchronous: durably store this snapshot; it replaces the whole log once the log
    /// holds the entries streamed after it, up to `stream_end`, durably. Until then a crash
    /// must recover the state from before it: the old log may hold proposals this server
    /// acknowledged, and the leader's stream restores them only once it is durable.
    SaveSnapshot {
        zxid: Zxid,
        image: Image,
        stream_end: Zxid,
    },
    /// Send `Message::Snap` to `to` with an image of the host's applied state, which is
    /// exactly at `zxid` when the host reaches this action.
    SendSnapshot {
        to: Sid,
        zxid: Zxid,
    },
    /// Replace the host's applied state with this image.
    InstallSnapshot {
        zxid: Zxid,
        image: Image,
    },
    /// Apply this committed transaction (strictly increasing zxids).
    Deliver(SharedEntry),
    RoleChanged {
        role: Role,
        epoch: u32,
    },
    /// The amnesia rule is lifted: the host may record that its state is whole again.
    RecoveryComplete,
    /// This leader handed leadership over to `successor` (ABDICATE sent) and is LOOKING.
    Abdicated {
        successor: Sid,
    },
    /// The active or the pending configuration changed (dynamic reconfiguration): the host
    /// reaches every member of both.
    MembershipChanged {
        active: Membership,
        pending: Option<Membership>,
    },
}
