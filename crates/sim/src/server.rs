//! One simulated server: the real Zab core and the real data tree, plus the part of the
//! server's request path that runs without sockets (prep, per-session FIFO queues, forwarding
//! writes to the leader, replies after local apply).

use crate::disk::SimDisk;
use crate::ops::{ClientId, ClientOp, NodeValue, OpResult, KEYS};
use proto::request::Request;
use proto::txn::{ErrorTxn, Txn, TxnBody, TxnHeader};
use proto::{
    Acl, CreateRequest, Id, OpCode, PathAndVersion, Reader, Record, SetDataRequest, Writer,
};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use tree::{DataTree, Prep, PrepContext, TxnOutcome};
use zab::{Image, Millis, Sid, Zab, Zxid};

/// A client request waiting in its session's queue on this server.
#[derive(Debug, Clone)]
pub struct Pending {
    pub cxid: i32,
    pub op: ClientOp,
    pub record: usize,
    pub result: Option<OpResult>,
}

#[derive(Debug, Default)]
pub struct SessionQueue {
    /// The client connection these requests came on.
    pub conn: u64,
    pub queue: VecDeque<Pending>,
}

/// Requests queued per session on one server; beyond this the server refuses.
pub const SESSION_QUEUE_MAX: usize = 16;

pub struct SimServer {
    pub sid: Sid,
    pub zab: Option<Zab>,
    pub disk: SimDisk,
    pub tree: DataTree,
    /// Every transaction applied, from the empty tree: the simulator's snapshot image.
    pub applied: Vec<Txn>,
    pub prep: Prep,
    /// The leader's tree after every proposal, for the per-proposal digest.
    pub speculative: Option<DataTree>,
    pub sessions: BTreeMap<ClientId, SessionQueue>,
    pub serving: bool,
    pub incarnation: u64,
    /// Diskless: the epoch label of the applied state (the currentEpoch when it was applied,
    /// or the zxid's epoch for a leader's SNAP); a snapshot of it carries this label.
    pub applied_label: u32,
    /// When this server last booted.
    pub booted_at: Millis,
    /// Set by a delivery, cleared when the host finishes the batch of actions.
    pub delivered_in_batch: bool,
    /// Diskless: state was applied that no busy snapshot has started on yet.
    pub snapshot_pending: bool,
    /// Diskless: no busy snapshot starts before this (the rest after the last one).
    pub snapshot_rest_until: Millis,
    /// Crashes and wipes so far; a holder of a write is protected while this is unchanged.
    pub crash_count: u64,
    /// The world's crash sequence number at this server's last crash (0: never).
    pub last_crash_seq: u64,
    /// Local clock = (global * (1e6 + drift_ppm) / 1e6) + offset.
    pub clock_offset_ms: u64,
    pub clock_drift_ppm: i64,
    pub paused_until: Millis,
}

impl SimServer {
    pub fn new(sid: Sid, clock_offset_ms: u64, clock_drift_ppm: i64) -> SimServer {
        SimServer {
            sid,
            zab: None,
            disk: SimDisk::new(),
            tree: DataTree::new(),
            applied: Vec::new(),
            prep: Prep::default(),
            speculative: None,
            sessions: BTreeMap::new(),
            serving: false,
            incarnation: 0,
            applied_label: 0,
            crash_count: 0,
            last_crash_seq: 0,
            delivered_in_batch: false,
            snapshot_pending: false,
            snapshot_rest_until: 0,
            booted_at: 0,
            clock_offset_ms,
            clock_drift_ppm,
            paused_until: 0,
        }
    }

    pub fn local_time(&self, global: Millis) -> Millis {
        let scaled =
            (i128::from(global) * (1_000_000 + i128::from(self.clock_drift_ppm))) / 1_000_000;
        scaled.max(0) as u64 + self.clock_offset_ms
    }

    pub fn is_up(&self) -> bool {
        self.zab.is_some()
    }

    /// The zxid the applied state is at.
    pub fn applied_zxid(&self) -> Zxid {
        self.applied
            .last()
            .map_or(Zxid::ZERO, |t| Zxid::from_i64(t.header.zxid))
    }

    /// Whether the applied state holds `zxid` (applied txns are in zxid order).
    pub fn has_applied(&self, zxid: Zxid) -> bool {
        self.applied
            .binary_search_by(|t| Zxid::from_i64(t.header.zxid).cmp(&zxid))
            .is_ok()
    }

    /// Whether this live server holds `zxid` in memory: applied, or in Zab's undelivered log.
    pub fn holds_in_memory(&self, zxid: Zxid) -> bool {
        self.has_applied(zxid)
            || self
                .zab
                .as_ref()
                .is_some_and(|z| z.undelivered().iter().any(|e| e.zxid == zxid))
    }
}

// ----- snapshot images -----

pub fn encode_image(txns: &[Txn]) -> Image {
    let mut w = Writer::new();
    w.write_i32(txns.len() as i32);
    for t in txns {
        t.encode(&mut w);
    }
    Arc::new(w.into_inner())
}

pub fn decode_image(image: &[u8]) -> Result<Vec<Txn>, proto::DecodeError> {
    if image.is_empty() {
        return Ok(Vec::new());
    }
    let mut r = Reader::new(image);
    let n = r.read_i32()?;
    let mut out = Vec::new();
    for _ in 0..n.max(0) {
        out.push(Txn::decode(&mut r)?);
    }
    Ok(out)
}

/// A tree rebuilt by applying `txns` in order.
pub fn replay(txns: &[Txn]) -> DataTree {
    let mut tree = DataTree::new();
    let mut triggers = Vec::new();
    for t in txns {
        tree.apply(t, &mut triggers);
        triggers.clear();
    }
    tree
}

// ----- requests -----

fn open_acl() -> Vec<Acl> {
    vec![Acl {
        perms: proto::watch::perms::ALL,
        id: Id {
            scheme: "world".into(),
            id: "anyone".into(),
        },
    }]
}

/// The ZooKeeper request for a client write.
pub fn to_request(op: &ClientOp) -> Option<Request> {
    Some(match op {
        ClientOp::CreateSequential { value } => Request::Create {
            op: OpCode::Create,
            req: CreateRequest {
                path: "/n".into(),
                data: Some(value.clone()),
                acl: open_acl(),
                flags: 2,
            },
        },
        ClientOp::Create { key, value } | ClientOp::CreateEphemeral { key, value } => {
            Request::Create {
                op: OpCode::Create,
                req: CreateRequest {
                    path: KEYS[*key].into(),
                    data: Some(value.clone()),
                    acl: open_acl(),
                    flags: 0,
                },
            }
        }
        ClientOp::Set {
            key,
            value,
            version,
        } => Request::SetData(SetDataRequest {
            path: KEYS[*key].into(),
            data: Some(value.clone()),
            version: *version,
        }),
        ClientOp::Delete { key } => Request::Delete(PathAndVersion {
            path: KEYS[*key].into(),
            version: -1,
        }),
        ClientOp::CloseSession => Request::CloseSession,
        ClientOp::Multi {
            key,
            version,
            value,
            other,
        } => Request::Multi(vec![
            proto::multi::MultiOp::Check(PathAndVersion {
                path: KEYS[*key].into(),
                version: *version,
            }),
            proto::multi::MultiOp::SetData(SetDataRequest {
                path: KEYS[*key].into(),
                data: Some(value.clone()),
                version: -1,
            }),
            proto::multi::MultiOp::Delete(PathAndVersion {
                path: KEYS[*other].into(),
                version: -1,
            }),
        ]),
        // The model simulator's ensembles never reconfigure.
        ClientOp::Get { .. }
        | ClientOp::Sync
        | ClientOp::AddWatch { .. }
        | ClientOp::Reconfig { .. } => return None,
    })
}

/// Prepares a client write (or sync, as a no-op transaction) at `zxid`.
pub fn prepare(
    server: &mut SimServer,
    client: ClientId,
    cxid: i32,
    op: &ClientOp,
    zxid: Zxid,
    time_ms: i64,
) -> Txn {
    let ctx = PrepContext {
        session_id: client,
        cxid,
        zxid: zxid.as_i64(),
        time_ms,
        auth_ids: &[],
        extended_types_enabled: false,
        sasl_provider: false,
    };
    match to_request(op) {
        Some(req) => server.prep.prepare(&server.tree, &ctx, &req),
        None => Txn {
            header: TxnHeader {
                client_id: client,
                cxid,
                zxid: zxid.as_i64(),
                time: time_ms,
                op_type: OpCode::Error.code(),
            },
            body: TxnBody::Error(ErrorTxn { err: 0 }),
        },
    }
}

/// What a client is told about its write, from the outcome of applying it.
pub fn write_result(zxid: Zxid, outcome: &TxnOutcome) -> OpResult {
    let (code, version, path) = match outcome {
        TxnOutcome::Updated(stat) => (0, Some(stat.version), None),
        TxnOutcome::Error(code) => (code.code(), None, None),
        TxnOutcome::Created { path, .. } => (0, None, Some(path.clone())),
        _ => (0, None, None),
    };
    OpResult::Written {
        zxid,
        code,
        version,
        path,
    }
}

pub fn read_value(tree: &DataTree, key: usize) -> NodeValue {
    tree.get(KEYS[key]).map(|node| {
        (
            node.data.map(<[u8]>::to_vec).unwrap_or_default(),
            node.stat.version,
        )
    })
}
