//! What simulated clients do and what they observe: the recorded history that the checkers
//! judge.

use zab::{Millis, Sid, Zxid};

pub type ClientId = i64;

/// The keys clients contend on; few, so that operations conflict often.
pub const KEYS: [&str; 3] = ["/k0", "/k1", "/k2"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientOp {
    Create {
        key: usize,
        value: Vec<u8>,
    },
    /// An ephemeral znode: it goes when the creating session ends (closed or expired).
    CreateEphemeral {
        key: usize,
        value: Vec<u8>,
    },
    /// A persistent sequential znode under `/` (`/n` and ten digits of the root's counter).
    CreateSequential {
        value: Vec<u8>,
    },
    /// setData; `version` -1 is unconditional.
    Set {
        key: usize,
        value: Vec<u8>,
        version: i32,
    },
    Delete {
        key: usize,
    },
    Get {
        key: usize,
    },
    /// meerkat's sync: a no-op through Zab, so a read after it is linearizable.
    Sync,
    /// The client ends its session (its ephemerals go with it).
    CloseSession,
    /// addWatch: a persistent watch on `key` (every later change fires it).
    AddWatch {
        key: usize,
    },
    /// reconfig (non-incremental): the ensemble's new voters and observers; the others become
    /// non-voting followers.
    Reconfig {
        voters: Vec<Sid>,
        observers: Vec<Sid>,
    },
    /// multi: check `key` is at `version`, then set it and delete `other`, all or nothing.
    Multi {
        key: usize,
        version: i32,
        value: Vec<u8>,
        other: usize,
    },
}

impl ClientOp {
    pub fn is_write(&self) -> bool {
        !matches!(self, ClientOp::Get { .. } | ClientOp::AddWatch { .. })
    }
}

/// A znode's data and version as a read returned it.
pub type NodeValue = Option<(Vec<u8>, i32)>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpResult {
    /// A write (or sync) committed at `zxid`; `code` 0 is success, else a ZooKeeper error
    /// code; `version` is setData's new version.
    Written {
        zxid: Zxid,
        code: i32,
        version: Option<i32>,
        /// A create's path as the server named it (a sequential create's number included).
        path: Option<String>,
    },
    /// A read of the server's state after `zxid`.
    Read { zxid: Zxid, value: NodeValue },
    /// The request was certainly not executed (the server refused it).
    Refused,
    /// A watch was set at the server's state after `zxid`.
    Watched { zxid: Zxid },
    /// A local session (`localSessionsEnabled`) was closed on its server: not replicated, so
    /// not in the committed order.
    ClosedLocally,
}

/// One operation in the history. `result` None means the outcome is unknown (connection lost
/// or timed out): it may or may not have taken effect.
#[derive(Debug, Clone)]
pub struct OpRecord {
    pub client: ClientId,
    pub cxid: i32,
    pub op: ClientOp,
    pub server: Sid,
    pub invoked_at: Millis,
    pub completed_at: Option<Millis>,
    pub result: Option<OpResult>,
    /// For a read sent right after a sync on the same connection: that sync's record.
    pub after_sync: Option<usize>,
}
