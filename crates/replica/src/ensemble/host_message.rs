//! What ensemble members tell each other besides Zab: the request path of the paper's
//! Fig. 1 (writes forwarded to the leader), session bookkeeping owned by the leader, and the
//! leader's tree digest for replicas to compare.
//!
//! These ride the same FIFO peer connection as Zab's messages, so a `Forward` sent before a
//! learner loses its leader can never be applied by a later leader: the connection breaks,
//! the learner closes its clients, and the clients resend.

use proto::Id;

/// A client request a learner hands to its leader, with what the leader needs to prepare it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forwarded {
    pub session_id: i64,
    /// The client's xid, which becomes the transaction's cxid.
    pub xid: i32,
    pub op_type: i32,
    /// The request body exactly as the client encoded it (jute, without the request header).
    pub body: Vec<u8>,
    /// The connection's authenticated identities, for the leader's ACL checks.
    pub auth_ids: Vec<Id>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostMessage {
    /// A client write, or a sync, for the leader to prepare and propose (learner → leader).
    Forward(Forwarded),
    /// A client asks a learner for a new session; the learner chose its id (learner → leader).
    CreateSession { session_id: i64, timeout_ms: i32 },
    /// Sessions with client activity on the sender since its last report (learner → leader);
    /// the leader owns expiry.
    Touch { sessions: Vec<i64> },
    /// A client reconnects to a learner with an existing session (learner → leader).
    Revalidate { session_id: i64, timeout_ms: i32 },
    /// The leader's answer: `timeout_ms` is the session's timeout, or 0 if it is not alive
    /// (leader → learner). The leader now counts the learner as the session's owner.
    Revalidated { session_id: i64, timeout_ms: i32 },
    /// The leader's tree digest after applying everything up to `zxid` (leader → learner).
    DigestAt { zxid: i64, digest: u64 },
    /// Diskless: a client of the learner saw writes the ensemble lost and was told its session
    /// expired; the leader ends the session now, ephemerals included, rather than at its
    /// timeout (learner → leader).
    EndSession { session_id: i64 },
    /// The leader's backlog was full, so it did not take the sender's request: the write
    /// `xid` of `session_id` was never executed, or, for a session still being created, the
    /// session was not created (leader → learner). The learner tells its client so
    /// (ZooKeeper's THROTTLEDOP, or a closed connection for a connect) instead of leaving it
    /// waiting for an answer that never comes.
    Throttled { session_id: i64, xid: i32 },
}

impl HostMessage {
    /// A short name for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            HostMessage::Forward(_) => "FORWARD",
            HostMessage::CreateSession { .. } => "CREATESESSION",
            HostMessage::Touch { .. } => "TOUCH",
            HostMessage::Revalidate { .. } => "REVALIDATE",
            HostMessage::Revalidated { .. } => "REVALIDATED",
            HostMessage::DigestAt { .. } => "DIGESTAT",
            HostMessage::EndSession { .. } => "ENDSESSION",
            HostMessage::Throttled { .. } => "THROTTLED",
        }
    }
}
