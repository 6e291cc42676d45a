//! The client guarantees of DESIGN.md §1, judged on the recorded history.
//!
//! The witness for linearizability is the commit order itself: every operation with a known
//! outcome must (1) sit in the surviving global order at the zxid it was told (an acknowledged
//! write is never lost), (2) have returned exactly what replaying that order on a fresh tree
//! yields at that point, and (3) respect real time: an operation that completed before a write
//! or sync was invoked is ordered before it. Reads are placed at the zxid their server had
//! applied; a read issued after a sync on the same connection must be at least at the sync's
//! zxid, which makes sync + read linearizable. Writes whose outcome is unknown may or may not be
//! in the order; both are allowed. Sessions see monotonic zxids.
//!
//! Diskless mode may lose committed writes legitimately (`durability.rs` judges each loss).
//! A lost write stays on its own branch: an operation answered there is judged against a replay
//! of that branch (its path of parents), and it constrains nothing in real time afterwards.

use crate::ops::{ClientOp, NodeValue, OpRecord, OpResult, KEYS};
use crate::server::write_result;
use std::collections::BTreeMap;
use tree::DataTree;
use zab::{SharedEntry, Zxid};

/// What applying one committed write produced: who sent it, the result, the keys after it.
struct Replayed {
    client: i64,
    cxid: i32,
    result: OpResult,
    values: Vec<NodeValue>,
}

/// The committed order (a line) and the lost branches hanging off it.
pub struct CommitTree<'a> {
    pub committed: &'a BTreeMap<Zxid, SharedEntry>,
    pub lost: &'a BTreeMap<Zxid, SharedEntry>,
    pub parents: &'a BTreeMap<Zxid, Zxid>,
}

impl CommitTree<'_> {
    /// A committed order without losses (durable mode, unit tests).
    pub fn line(committed: &BTreeMap<Zxid, SharedEntry>) -> CommitTree<'_> {
        static EMPTY_ENTRIES: BTreeMap<Zxid, SharedEntry> = BTreeMap::new();
        static EMPTY_PARENTS: BTreeMap<Zxid, Zxid> = BTreeMap::new();
        CommitTree {
            committed,
            lost: &EMPTY_ENTRIES,
            parents: &EMPTY_PARENTS,
        }
    }

    fn entry(&self, z: Zxid) -> Option<&SharedEntry> {
        self.committed.get(&z).or_else(|| self.lost.get(&z))
    }

    /// The write before `z` on its own branch.
    fn parent(&self, z: Zxid) -> Zxid {
        let line = || {
            self.committed
                .range(..z)
                .next_back()
                .map_or(Zxid::ZERO, |(k, _)| *k)
        };
        if self.committed.contains_key(&z) {
            line()
        } else {
            self.parents.get(&z).copied().unwrap_or_else(line)
        }
    }

    /// The writes from the empty tree up to and including `z`, on `z`'s branch.
    fn path(&self, z: Zxid) -> Vec<&SharedEntry> {
        let mut out = Vec::new();
        let mut cur = z;
        while cur != Zxid::ZERO {
            let Some(e) = self.entry(cur) else { break };
            out.push(e);
            let parent = self.parent(cur);
            assert!(parent < cur, "parent {parent} of {cur} is not before it");
            cur = parent;
        }
        out.reverse();
        out
    }

    /// Replays every lost write on its own branch.
    fn replay_lost(&self) -> BTreeMap<Zxid, Replayed> {
        let mut out = BTreeMap::new();
        let mut tree = DataTree::new();
        let mut tip = Zxid::ZERO;
        let mut triggers = Vec::new();
        for (&z, e) in self.lost {
            let parent = self.parent(z);
            if parent != tip {
                tree = DataTree::new();
                for p in self.path(parent) {
                    tree.apply(&p.txn, &mut triggers);
                }
            }
            let outcome = tree.apply(&e.txn, &mut triggers);
            triggers.clear();
            tip = z;
            let values = (0..KEYS.len())
                .map(|k| crate::server::read_value(&tree, k))
                .collect();
            out.insert(
                z,
                Replayed {
                    client: e.txn.header.client_id,
                    cxid: e.txn.header.cxid,
                    result: write_result(z, &outcome),
                    values,
                },
            );
        }
        out
    }
}

pub fn check_history(history: &[OpRecord], order: &CommitTree<'_>) -> Vec<String> {
    let committed = order.committed;
    let lost_replay = order.replay_lost();
    let mut failures = Vec::new();
    let mut fail = |s: String| {
        if failures.len() < 20 {
            failures.push(s);
        }
    };
    // Replay the global order once.
    let mut tree = DataTree::new();
    let mut triggers = Vec::new();
    let mut outcomes = BTreeMap::new();
    let mut timelines: Vec<Vec<(Zxid, NodeValue)>> = vec![vec![(Zxid::ZERO, None)]; KEYS.len()];
    for (z, e) in committed {
        let outcome = tree.apply(&e.txn, &mut triggers);
        triggers.clear();
        outcomes.insert(
            *z,
            (
                e.txn.header.client_id,
                e.txn.header.cxid,
                write_result(*z, &outcome),
            ),
        );
        for (k, timeline) in timelines.iter_mut().enumerate() {
            let now = crate::server::read_value(&tree, k);
            if timeline.last().is_some_and(|(_, v)| *v != now) {
                timeline.push((*z, now));
            }
        }
    }
    // Writes lost on an abandoned branch: judged against that branch.
    for (z, r) in &lost_replay {
        outcomes.insert(*z, (r.client, r.cxid, r.result.clone()));
    }
    let state_at = |key: usize, z: Zxid| -> &NodeValue {
        if let Some(r) = lost_replay.get(&z) {
            return &r.values[key];
        }
        let t = &timelines[key];
        let idx = t.partition_point(|(at, _)| *at <= z);
        &t[idx.saturating_sub(1)].1
    };

    for (i, op) in history.iter().enumerate() {
        let Some(result) = &op.result else { continue };
        match result {
            OpResult::Written { zxid, .. } => match outcomes.get(zxid) {
                Some((client, cxid, replayed)) if *client == op.client && *cxid == op.cxid => {
                    let sync_ok = matches!(op.op, ClientOp::Sync);
                    if !sync_ok && replayed != result {
                        fail(format!(
                            "op {i} ({:?}) was told {result:?}, the order says {replayed:?}",
                            op.op
                        ));
                    }
                }
                _ => fail(format!(
                    "lost write: op {i} ({:?}) by client {} acknowledged at {zxid}, not in the committed order",
                    op.op, op.client
                )),
            },
            OpResult::Read { zxid, value } => {
                let ClientOp::Get { key } = op.op else {
                    fail(format!("op {i}: read result for a write"));
                    continue;
                };
                if *zxid != Zxid::ZERO && order.entry(*zxid).is_none() {
                    fail(format!("op {i}: read at {zxid}, which is not committed"));
                }
                let expected = state_at(key, *zxid);
                if expected != value {
                    fail(format!(
                        "stale or phantom read: op {i} read {:?} at {zxid}, the order says {:?}",
                        value.as_ref().map(|v| String::from_utf8_lossy(&v.0).into_owned()),
                        expected.as_ref().map(|v| String::from_utf8_lossy(&v.0).into_owned())
                    ));
                }
                if let Some(s) = op.after_sync {
                    if let Some(OpResult::Written { zxid: sz, .. }) = &history[s].result {
                        if zxid < sz && !order.lost.contains_key(sz) && !order.lost.contains_key(zxid) {
                            fail(format!("sync+read: op {i} read at {zxid} before its sync at {sz}"));
                        }
                    }
                }
            }
            OpResult::Refused | OpResult::Watched { .. } | OpResult::ClosedLocally => {}
        }
    }

    // Real time: completed-before-invoked implies ordered-before, for writes and syncs.
    // A point on a lost branch constrains nothing (the branch is gone).
    let point = |op: &OpRecord| match &op.result {
        Some(OpResult::Written { zxid, .. }) | Some(OpResult::Read { zxid, .. })
            if !order.lost.contains_key(zxid) =>
        {
            Some(*zxid)
        }
        _ => None,
    };
    let mut done: Vec<(u64, Zxid, usize)> = history
        .iter()
        .enumerate()
        .filter_map(|(i, op)| Some((op.completed_at?, point(op)?, i)))
        .collect();
    done.sort();
    let mut prefix_max: Vec<(Zxid, usize)> = Vec::with_capacity(done.len());
    for &(_, z, i) in &done {
        let best = prefix_max
            .last()
            .copied()
            .filter(|(m, _)| *m >= z)
            .unwrap_or((z, i));
        prefix_max.push(best);
    }
    for (i, op) in history.iter().enumerate() {
        let Some(OpResult::Written { zxid, .. }) = &op.result else {
            continue;
        };
        if order.lost.contains_key(zxid) {
            continue;
        }
        let n = done.partition_point(|(t, _, _)| *t < op.invoked_at);
        if n == 0 {
            continue;
        }
        let (max, j) = prefix_max[n - 1];
        if max >= *zxid {
            fail(format!(
                "linearizability: op {i} invoked after op {j} completed at {max}, yet ordered at {zxid}"
            ));
        }
    }

    // Sessions never see time go backwards.
    let mut by_client: BTreeMap<i64, Vec<(u64, Zxid, usize)>> = BTreeMap::new();
    for (i, op) in history.iter().enumerate() {
        if let (Some(t), Some(z)) = (op.completed_at, point(op)) {
            by_client.entry(op.client).or_default().push((t, z, i));
        }
    }
    for (client, mut ops) in by_client {
        ops.sort_by_key(|(t, _, i)| (*t, *i));
        for w in ops.windows(2) {
            if w[1].1 < w[0].1 {
                fail(format!(
                    "session {client}: op {} saw {} after op {} saw {}",
                    w[1].2, w[1].1, w[0].2, w[0].1
                ));
            }
        }
    }
    failures
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::ops::ClientOp;
    use proto::txn::{SetDataTxn, Txn, TxnBody, TxnHeader};
    use std::sync::Arc;
    use zab::Entry;

    /// A committed order: create /k0 at (1,1) then setData "b" at (1,2), by client 7.
    fn committed() -> BTreeMap<Zxid, SharedEntry> {
        let mut prep = tree::Prep::default();
        let tree = DataTree::new();
        let ctx = |zxid: i64, cxid| tree::PrepContext {
            session_id: 7,
            cxid,
            zxid,
            time_ms: 0,
            auth_ids: &[],
            extended_types_enabled: false,
            sasl_provider: false,
        };
        let op = ClientOp::Create {
            key: 0,
            value: b"a".to_vec(),
        };
        let create = prep.prepare(
            &tree,
            &ctx(Zxid::new(1, 1).as_i64(), 1),
            &crate::server::to_request(&op).unwrap(),
        );
        let set = Txn {
            header: TxnHeader {
                client_id: 7,
                cxid: 2,
                zxid: Zxid::new(1, 2).as_i64(),
                time: 0,
                op_type: proto::OpCode::SetData.code(),
            },
            body: TxnBody::SetData(SetDataTxn {
                path: KEYS[0].into(),
                data: Some(b"b".to_vec()),
                version: 1,
            }),
        };
        let mut m = BTreeMap::new();
        for t in [create, set] {
            let zxid = Zxid::from_i64(t.header.zxid);
            m.insert(
                zxid,
                Arc::new(Entry {
                    zxid,
                    txn: t,
                    digest: None,
                }),
            );
        }
        m
    }

    fn record(cxid: i32, op: ClientOp, t: (u64, u64), result: OpResult) -> OpRecord {
        OpRecord {
            client: 7,
            cxid,
            op,
            server: 1,
            invoked_at: t.0,
            completed_at: Some(t.1),
            result: Some(result),
            after_sync: None,
        }
    }

    fn set_b() -> OpRecord {
        record(
            2,
            ClientOp::Set {
                key: 0,
                value: b"b".to_vec(),
                version: -1,
            },
            (10, 20),
            OpResult::Written {
                zxid: Zxid::new(1, 2),
                code: 0,
                version: Some(1),
                path: None,
            },
        )
    }

    #[test]
    fn a_consistent_history_passes() {
        let read = record(
            3,
            ClientOp::Get { key: 0 },
            (30, 31),
            OpResult::Read {
                zxid: Zxid::new(1, 2),
                value: Some((b"b".to_vec(), 1)),
            },
        );
        assert_eq!(
            check_history(&[set_b(), read], &CommitTree::line(&committed())),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_stale_read_is_caught() {
        let read = record(
            3,
            ClientOp::Get { key: 0 },
            (30, 31),
            OpResult::Read {
                zxid: Zxid::new(1, 2),
                value: Some((b"a".to_vec(), 0)),
            },
        );
        let f = check_history(&[set_b(), read], &CommitTree::line(&committed()));
        assert!(f.iter().any(|m| m.contains("stale")), "{f:?}");
    }

    #[test]
    fn a_lost_write_is_caught() {
        let mut lost = set_b();
        lost.result = Some(OpResult::Written {
            zxid: Zxid::new(1, 3),
            code: 0,
            version: Some(1),
            path: None,
        });
        let f = check_history(&[lost], &CommitTree::line(&committed()));
        assert!(f.iter().any(|m| m.contains("lost write")), "{f:?}");
    }

    #[test]
    fn a_real_time_inversion_is_caught() {
        // A read that completed at (1,2) before a write began; the write claims (1,2) too.
        let read = record(
            3,
            ClientOp::Get { key: 0 },
            (1, 2),
            OpResult::Read {
                zxid: Zxid::new(1, 2),
                value: Some((b"b".to_vec(), 1)),
            },
        );
        let f = check_history(&[read, set_b()], &CommitTree::line(&committed()));
        assert!(f.iter().any(|m| m.contains("linearizability")), "{f:?}");
    }
}
