//! What the replica's hand-driven tests share: the time, a store over the fault-injecting file
//! system, and client requests as a client would send them.
#![allow(dead_code, clippy::unwrap_used)]

use proto::request::Request;
use proto::{ConnectRequest, CreateRequest, OpCode, Reader, Record, ReplyHeader};
use replica::{ClientInput, ConnId, Now};
use std::path::Path;
use std::sync::{Arc, Mutex};
use storage::faulty_fs::FaultyFs;

pub fn at(ms: u64) -> Now {
    Now {
        mono_ms: ms,
        wall_ms: 1_700_000_000_000 + ms as i64,
    }
}

/// Durability reports of the store, for the test to hand to the replica.
pub type Reports = Arc<Mutex<Vec<i64>>>;

/// A store on `fs`: durable (a log with its writer thread) or diskless (appends are durable
/// at once, reported into the returned list).
pub fn store(fs: &FaultyFs, diskless: bool) -> (storage::Persistence, storage::Recovered, Reports) {
    let reports: Reports = Arc::default();
    let durable = reports.clone();
    let options = storage::PersistenceOptions {
        layout: storage::Layout::new(Path::new("/d"), Path::new("/d")),
        force_sync: true,
        segment_bytes: 4096,
        snap_count: 1_000_000,
        snap_retain_count: 3,
        purge_interval: std::time::Duration::ZERO,
        fsync_warn: std::time::Duration::from_secs(1),
        replay: storage::Replay::Collect,
        diskless,
        // Busy snapshots out of the way: these tests are about the request path.
        busy_snapshot_rest_percent: 1_000_000,
        delta_rest_min_ms: storage::DELTA_REST_MIN_MS,
        execution: Default::default(),
    };
    let (store, recovered) = storage::Persistence::open(
        Arc::new(fs.clone()),
        options,
        Box::new(move |zxid| durable.lock().unwrap().push(zxid)),
        Box::new(|_| {}),
    )
    .unwrap();
    (store, recovered, reports)
}

pub fn open_acl() -> Vec<proto::Acl> {
    vec![proto::Acl {
        perms: proto::watch::perms::ALL,
        id: proto::Id {
            scheme: "world".into(),
            id: "anyone".into(),
        },
    }]
}

pub fn create(path: &str) -> Request {
    Request::Create {
        op: OpCode::Create,
        req: CreateRequest {
            path: path.into(),
            data: Some(b"x".to_vec()),
            acl: open_acl(),
            flags: 0,
        },
    }
}

/// A new session's connect from 127.0.0.1.
pub fn connect(conn: ConnId) -> ClientInput {
    ClientInput::Connect {
        conn,
        peer: "127.0.0.1:5000".parse().unwrap(),
        request: ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout_ms: 30_000,
            session_id: 0,
            passwd: vec![0; 16],
            read_only: None,
        },
        tls_ids: Vec::new(),
    }
}

pub fn request(conn: ConnId, xid: i32, request: Request, received_ms: u64) -> ClientInput {
    ClientInput::Request {
        conn,
        xid,
        op_type: request.op_code().code(),
        request: Ok(request),
        received_ms,
    }
}

/// The (xid, err) of a reply frame.
pub fn reply_of(frame: &[u8]) -> (i32, i32) {
    let header = ReplyHeader::decode(&mut Reader::new(&frame[4..])).unwrap();
    (header.xid, header.err)
}
