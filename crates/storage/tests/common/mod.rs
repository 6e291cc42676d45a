//! Shared by the storage tests: a deterministic workload prepared like the server prepares
//! requests, reference states, and options for small segments.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use proto::request::Request;
use proto::txn::Txn;
use proto::{CreateRequest, OpCode, PathAndVersion, SetDataRequest};
use std::path::Path;
use std::time::Duration;
use storage::{Layout, PersistenceOptions};
use tree::{DataTree, Prep, PrepContext};

const SESSION: i64 = 0x0100_0000_0000_0001;

pub fn layout() -> Layout {
    Layout::new(Path::new("/data"), Path::new("/log"))
}

pub fn options(snap_count: u64) -> PersistenceOptions {
    PersistenceOptions {
        layout: layout(),
        force_sync: true,
        // Small segments so the workload rolls several times.
        segment_bytes: 4096,
        snap_count,
        snap_retain_count: 3,
        purge_interval: Duration::ZERO,
        fsync_warn: Duration::from_secs(10),
        replay: storage::Replay::ApplyAll,
        diskless: false,
        // Back to back, so the tests see a snapshot after each write they wait for.
        busy_snapshot_rest_percent: 0,
        delta_rest_min_ms: storage::DELTA_REST_MIN_MS,
        execution: Default::default(),
    }
}

/// A deterministic workload: sessions, creates (persistent, ephemeral, sequential), data
/// changes, deletes, multis and a session close, prepared like the server prepares them.
pub fn workload(n: usize, seed: u64) -> Vec<Txn> {
    let mut tree = DataTree::new();
    let mut prep = Prep::default();
    let mut txns: Vec<Txn> = Vec::new();
    let mut rng = seed | 1;
    let mut next = |bound: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % bound
    };
    let mut session = SESSION;
    let mut live: Vec<String> = Vec::new();
    let acl = tree::acl::open_acl_unsafe();
    while txns.len() < n {
        let zxid = txns.len() as i64 + 1;
        let ctx = PrepContext {
            session_id: session,
            cxid: zxid as i32,
            zxid,
            time_ms: 1_700_000_000_000 + zxid,
            auth_ids: &[],
            extended_types_enabled: true,
            sasl_provider: false,
        };
        let i = txns.len();
        let create = |path: String, flags: i32, len: usize| Request::Create {
            op: OpCode::Create2,
            req: CreateRequest {
                path,
                data: Some(vec![(i % 251) as u8; len]),
                acl: acl.clone(),
                flags,
            },
        };
        let txn = if zxid == 1 {
            prep.prepare_create_session(&ctx, 30_000)
        } else {
            let request = match next(10) {
                0..=2 => create(format!("/n{i}"), 0, 50 + next(250) as usize),
                3 => create(format!("/e{i}"), 1, 20),
                4 => create("/q-".to_string(), 2, 10),
                5 | 6 if !live.is_empty() => Request::SetData(SetDataRequest {
                    path: live[next(live.len() as u64) as usize].clone(),
                    data: Some(vec![7; next(300) as usize]),
                    version: -1,
                }),
                7 if !live.is_empty() => {
                    let path = live.swap_remove(next(live.len() as u64) as usize);
                    Request::Delete(PathAndVersion { path, version: -1 })
                }
                8 => Request::Multi(vec![
                    proto::multi::MultiOp::Create {
                        op: OpCode::Create,
                        req: CreateRequest {
                            path: format!("/m{i}"),
                            data: None,
                            acl: acl.clone(),
                            flags: 0,
                        },
                    },
                    proto::multi::MultiOp::SetData(SetDataRequest {
                        path: format!("/m{i}"),
                        data: Some(b"in a multi".to_vec()),
                        version: 0,
                    }),
                ]),
                _ if next(4) == 0 => Request::CloseSession,
                _ => create(format!("/n{i}"), 0, 10),
            };
            prep.prepare(&tree, &ctx, &request)
        };
        let outcome = tree.apply(&txn, &mut Vec::new());
        prep.applied(zxid);
        if let tree::TxnOutcome::Created { path, .. } = &outcome {
            if path.starts_with("/n") {
                live.push(path.clone());
            }
        }
        if matches!(outcome, tree::TxnOutcome::SessionClosed) {
            txns.push(txn);
            // A new session for what follows.
            session += 1;
            let zxid = txns.len() as i64 + 1;
            let ctx = PrepContext {
                session_id: session,
                zxid,
                cxid: 0,
                ..ctx
            };
            let open = prep.prepare_create_session(&ctx, 30_000);
            tree.apply(&open, &mut Vec::new());
            prep.applied(zxid);
            txns.push(open);
            continue;
        }
        txns.push(txn);
    }
    txns.truncate(n);
    txns
}

/// A session, one znode, then `n - 2` changes of its data to `len` bytes each: a workload
/// whose transactions are large and whose tree stays small.
pub fn big_workload(n: usize, len: usize) -> Vec<Txn> {
    one_session_workload(n, |i| match i {
        1 => create_request("/big".into(), None),
        _ => Request::SetData(SetDataRequest {
            path: "/big".into(),
            data: Some(vec![(i % 251) as u8; len]),
            version: -1,
        }),
    })
}

/// A session, then `n - 1` znodes of `len` bytes each: a tree that only grows.
pub fn growing_workload(n: usize, len: usize) -> Vec<Txn> {
    one_session_workload(n, |i| {
        create_request(format!("/g{i}"), Some(vec![(i % 251) as u8; len]))
    })
}

fn create_request(path: String, data: Option<Vec<u8>>) -> Request {
    Request::Create {
        op: OpCode::Create2,
        req: CreateRequest {
            path,
            data,
            acl: tree::acl::open_acl_unsafe(),
            flags: 0,
        },
    }
}

/// A session opened by the first of `n` transactions, then the request `nth(i)` for each `i`
/// from 1, prepared and applied as the server would.
fn one_session_workload(n: usize, nth: impl Fn(usize) -> Request) -> Vec<Txn> {
    let mut tree = DataTree::new();
    let mut prep = Prep::default();
    let mut txns = Vec::with_capacity(n);
    for i in 0..n {
        let zxid = i as i64 + 1;
        let ctx = PrepContext {
            session_id: SESSION,
            cxid: zxid as i32,
            zxid,
            time_ms: 1_700_000_000_000 + zxid,
            auth_ids: &[],
            extended_types_enabled: true,
            sasl_provider: false,
        };
        let txn = match i {
            0 => prep.prepare_create_session(&ctx, 30_000),
            _ => prep.prepare(&tree, &ctx, &nth(i)),
        };
        tree.apply(&txn, &mut Vec::new());
        prep.applied(zxid);
        txns.push(txn);
    }
    txns
}

pub type Dump = (
    Vec<(String, Option<Vec<u8>>, proto::StatPersisted)>,
    Vec<(i64, i32)>,
);

pub fn dump(tree: &DataTree) -> Dump {
    let mut nodes = Vec::new();
    tree.for_each(|p, n| nodes.push((p.to_string(), n.data_vec(), n.stat.clone())));
    let mut sessions: Vec<(i64, i32)> = tree.sessions().iter().map(|(&k, &v)| (k, v)).collect();
    sessions.sort_unstable();
    (nodes, sessions)
}

pub fn reference(txns: &[Txn], n: usize) -> DataTree {
    let mut tree = DataTree::new();
    for t in &txns[..n] {
        tree.apply(t, &mut Vec::new());
    }
    tree
}
