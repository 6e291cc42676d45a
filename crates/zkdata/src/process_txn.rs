//! Applying a logged transaction to the tree as ZooKeeper does on restart
//! (`FileTxnSnapLog.processTransaction` and `DataTree.processTxn`): errors such as NODEEXISTS
//! or NONODE are expected while replaying over a fuzzy snapshot and are not failures.

use crate::txn::{LogEntry, ZkTxn};
use crate::zk_tree::ZkTree;
use proto::txn::TxnHeader;
use proto::ErrorCode;
use std::collections::BTreeMap;

/// Applies `entry`, updating `sessions` for createSession and closeSession.
pub fn process(tree: &mut ZkTree, sessions: &mut BTreeMap<i64, i32>, entry: &LogEntry) {
    let h = &entry.header;
    match &entry.txn {
        ZkTxn::CreateSession(t) => {
            sessions.insert(h.client_id, t.timeout_ms);
        }
        ZkTxn::CloseSession(_) => {
            sessions.remove(&h.client_id);
        }
        _ => {}
    }
    let _ = process_one(tree, h, &entry.txn);
    if h.zxid > tree.last_processed_zxid {
        tree.last_processed_zxid = h.zxid;
    }
}

fn process_one(tree: &mut ZkTree, h: &TxnHeader, txn: &ZkTxn) -> Result<(), ErrorCode> {
    match txn {
        ZkTxn::Create { txn: t, create2 } => {
            let owner = if t.ephemeral { h.client_id } else { 0 };
            let result = tree.create_node(
                &t.path,
                t.data.as_deref(),
                &t.acl,
                owner,
                t.parent_cversion,
                h.zxid,
                h.time,
            );
            // ZooKeeper's fix-up for a create the fuzzy snapshot already holds: the parent's
            // cversion and pzxid still move forward. Only for create (1), not create2.
            if !create2 && result == Err(ErrorCode::NodeExists) {
                let parent = t.path.rfind('/').map_or("", |i| &t.path[..i]);
                return tree
                    .set_cversion_pzxid(parent, t.parent_cversion, h.zxid)
                    .and(result);
            }
            result
        }
        ZkTxn::CreateContainer(t) => tree.create_node(
            &t.path,
            t.data.as_deref(),
            &t.acl,
            i64::MIN,
            t.parent_cversion,
            h.zxid,
            h.time,
        ),
        ZkTxn::CreateTtl(t) => tree.create_node(
            &t.path,
            t.data.as_deref(),
            &t.acl,
            tree::node::NodeKind::ttl_owner(t.ttl),
            t.parent_cversion,
            h.zxid,
            h.time,
        ),
        ZkTxn::Delete(t) => tree.delete_node(&t.path, h.zxid),
        ZkTxn::SetData(t) => tree.set_data(&t.path, t.data.as_deref(), t.version, h.zxid, h.time),
        ZkTxn::SetAcl(t) => tree.set_acl(&t.path, &t.acl, t.version),
        ZkTxn::CloseSession(listed) => {
            tree.kill_session(h.client_id, h.zxid, listed.as_deref());
            Ok(())
        }
        ZkTxn::Check(_) | ZkTxn::CreateSession(_) => Ok(()),
        ZkTxn::Error(e) => Err(ErrorCode::from_i32(e.err).unwrap_or(ErrorCode::SystemError)),
        ZkTxn::Multi(parts) => {
            // A multi whose prep failed holds error parts: nothing of it is applied.
            if parts.iter().any(|p| matches!(p, ZkTxn::Error(_))) {
                return Ok(());
            }
            let mut first = Ok(());
            for part in parts {
                let r = process_one(tree, h, part);
                if first.is_ok() {
                    first = r;
                }
            }
            first
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl_cache::open_acl_unsafe;
    use crate::zk_tree::ZkNode;
    use proto::txn::{CreateTxn, DeleteTxn};
    use proto::OpCode;

    fn entry(zxid: i64, op: OpCode, txn: ZkTxn) -> LogEntry {
        LogEntry {
            header: TxnHeader {
                client_id: 3,
                cxid: 0,
                zxid,
                time: zxid * 10,
                op_type: op.code(),
            },
            txn,
            digest: None,
        }
    }

    fn create(path: &str, parent_cversion: i32, create2: bool) -> ZkTxn {
        ZkTxn::Create {
            txn: CreateTxn {
                path: path.into(),
                data: None,
                acl: open_acl_unsafe().into(),
                ephemeral: false,
                parent_cversion,
            },
            create2,
        }
    }

    #[test]
    fn replaying_a_create_the_snapshot_holds_moves_the_parent_forward() {
        let mut tree = ZkTree::with_root(ZkNode {
            acl: -1,
            ..ZkNode::default()
        });
        let mut sessions = BTreeMap::new();
        process(
            &mut tree,
            &mut sessions,
            &entry(1, OpCode::Create, create("/a", 1, false)),
        );
        process(
            &mut tree,
            &mut sessions,
            &entry(2, OpCode::Create, create("/a/x", 1, false)),
        );
        // The fuzzy snapshot had /a/y already but /a's stat from before it.
        process(
            &mut tree,
            &mut sessions,
            &entry(3, OpCode::Create, create("/a/y", 2, false)),
        );
        process(
            &mut tree,
            &mut sessions,
            &entry(4, OpCode::Create, create("/a/y", 5, false)),
        );
        let a = tree
            .find("/a")
            .and_then(|id| tree.node(id))
            .map(|n| n.stat.clone());
        assert_eq!(a.map(|s| (s.cversion, s.pzxid)), Some((5, 4)));
        // create2 gets no such fix-up.
        process(
            &mut tree,
            &mut sessions,
            &entry(5, OpCode::Create2, create("/a/y", 9, true)),
        );
        let a = tree
            .find("/a")
            .and_then(|id| tree.node(id))
            .map(|n| n.stat.clone());
        assert_eq!(a.map(|s| s.cversion), Some(5));
        let delete = ZkTxn::Delete(DeleteTxn {
            path: "/a/x".into(),
        });
        process(&mut tree, &mut sessions, &entry(6, OpCode::Delete, delete));
        assert_eq!(tree.last_processed_zxid, 6);
        assert_eq!(tree.node_count(), 3);
    }
}
