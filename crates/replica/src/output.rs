//! What the replica asks its host to do, in the order it must happen.

use crate::watch_manager::ConnId;
use zab::{Role, SharedEntry, Sid, Zxid};

#[derive(Debug)]
pub enum Output {
    /// An encoded frame for a client connection. A frame with `is_reply` answers one request,
    /// whose slot of `globalOutstandingLimit` is then free again.
    ToClient {
        conn: ConnId,
        frame: Vec<u8>,
        is_reply: bool,
    },
    /// A request of `conn` that will never be answered because its session ended and the
    /// connection is closing: its slot is free again.
    Unanswered { conn: ConnId },
    /// Flush what is queued for the connection, then close it.
    CloseClient { conn: ConnId },
    /// An encoded frame for a peer, in order behind every earlier one to that peer.
    ToPeer { to: Sid, frame: Vec<u8> },
    /// Break the connection to a peer (it reconnects and resynchronises).
    DisconnectPeer { peer: Sid },
    /// Encode `tree` as a SNAP frame for `to` off the request path (a million znodes take about
    /// a second), keeping the frame's place in the peer's queue meanwhile.
    SendSnapshot {
        to: Sid,
        zxid: Zxid,
        tree: tree::TreeSnapshot,
    },
    /// The members to stay connected to changed (dynamic reconfiguration): every member of
    /// the active and the pending configuration but this server, with its address.
    Members {
        peers: std::collections::BTreeMap<Sid, crate::ensemble::server_spec::ServerSpec>,
        /// The active configuration with its addresses, once this server's tree holds it (for
        /// the `zoo.cfg.dynamic.<version>` file operators read).
        active: Option<crate::ensemble::server_spec::ConfigText>,
    },
    /// What the replica did, for a checker watching it ([`crate::Settings::observe`]; never
    /// in production).
    Observed(Observation),
}

/// The steps of Zab a checker judges (the simulator's Zab and client checkers).
#[derive(Debug, Clone)]
pub enum Observation {
    /// The leader appended its own proposal.
    Proposed(SharedEntry),
    /// A committed transaction is about to be applied here.
    Delivered(SharedEntry),
    /// The role changed; `delivered` is the last transaction applied before.
    RoleChanged {
        role: Role,
        epoch: u32,
        delivered: Zxid,
    },
    /// A leader's snapshot replaced the tree.
    Installed { zxid: Zxid, digest: u64 },
}
