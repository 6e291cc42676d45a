//! One proposal of Zab: a transaction at a zxid, with the leader's tree digest after it.

use crate::zxid::Zxid;
use proto::txn::Txn;
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub zxid: Zxid,
    pub txn: Txn,
    /// The leader's tree digest after applying this transaction (DESIGN.md §4), if the host
    /// computed one. A replica whose own digest differs after applying must stop serving.
    pub digest: Option<u64>,
}

/// Entries are shared between the log, the sync streams of several learners and the outputs,
/// so they are reference counted rather than copied.
pub type SharedEntry = Arc<Entry>;

/// A snapshot image: opaque to Zab, produced and installed by the host.
pub type Image = Arc<Vec<u8>>;

/// A placeholder entry at `zxid` (an error transaction), for unit tests of log bookkeeping.
#[cfg(test)]
pub(crate) fn placeholder(zxid: Zxid) -> SharedEntry {
    use proto::txn::{ErrorTxn, TxnBody, TxnHeader};
    Arc::new(Entry {
        zxid,
        txn: Txn {
            header: TxnHeader {
                client_id: 0,
                cxid: 0,
                zxid: zxid.as_i64(),
                time: 0,
                op_type: -1,
            },
            body: TxnBody::Error(ErrorTxn { err: 0 }),
        },
        digest: None,
    })
}
