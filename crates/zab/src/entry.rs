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

impl Entry {
    /// About how many bytes this entry holds in memory: what bounds the entries a server
    /// retains for a failure checkpoint ([`crate::Zab::retain_after`]).
    pub fn approx_bytes(&self) -> usize {
        64 + body_bytes(&self.txn.body)
    }
}

fn body_bytes(body: &proto::txn::TxnBody) -> usize {
    use proto::txn::TxnBody as B;
    let data = |d: &proto::Data| d.as_ref().map_or(0, Vec::len);
    let acl = |a: &[proto::Acl]| {
        a.iter()
            .map(|x| 32 + x.id.scheme.len() + x.id.id.len())
            .sum::<usize>()
    };
    match body {
        B::Create(t) | B::Create2(t) => t.path.len() + data(&t.data) + acl(&t.acl),
        B::CreateContainer(t) => t.path.len() + data(&t.data) + acl(&t.acl),
        B::CreateTtl(t) => t.path.len() + data(&t.data) + acl(&t.acl),
        B::Delete(t) | B::DeleteContainer(t) => t.path.len(),
        B::SetData(t) => t.path.len() + data(&t.data),
        B::SetAcl(t) => t.path.len() + acl(&t.acl),
        B::Check(t) => t.path.len(),
        B::Multi(ops) => ops.iter().map(|op| 16 + body_bytes(op)).sum(),
        B::CloseSession(t) => t.paths_to_delete.iter().map(|p| 24 + p.len()).sum(),
        B::CreateSession(_) | B::Error(_) => 0,
    }
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
