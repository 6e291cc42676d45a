//! A simulated ZooKeeper client that speaks the real wire format to the replica: it connects
//! (a new session, or its old one with the password and the last zxid it saw), pipelines a
//! few requests as length-prefixed frames, reads replies and watch events from frames, gives
//! up on a silent connection, and moves to another server. What it is told is recorded as the
//! history the client checker judges.

use crate::ops::{ClientOp, NodeValue, OpResult, KEYS};
use proto::request::Request;
use proto::{
    Acl, ConnectRequest, ConnectResponse, CreateRequest, GetDataResponse, Id, OpCode,
    PathAndVersion, PathAndWatch, Reader, Record, ReplyHeader, RequestHeader, SetDataRequest, Stat,
    Writer,
};
use std::collections::VecDeque;
use zab::{Millis, Sid, Zxid};

/// Requests a client keeps in flight.
pub const OUTSTANDING_MAX: usize = 3;
/// Silence after which a client abandons its connection.
pub const TIMEOUT_MS: Millis = 1500;
/// The session timeout clients ask for.
pub const SESSION_TIMEOUT_MS: i32 = 2000;

/// Where a client is with its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Disconnected,
    /// The connect request is on its way; since when.
    Connecting {
        since: Millis,
    },
    Connected,
}

#[derive(Debug)]
pub struct Client {
    pub index: usize,
    pub server: Option<Sid>,
    /// The connection in use (unique in the whole run).
    pub conn: Option<u64>,
    pub phase: Phase,
    /// The session and its password, once the ensemble created one.
    pub session: Option<(i64, Vec<u8>)>,
    pub next_xid: i32,
    /// (xid, history index) in send order.
    pub outstanding: VecDeque<(i32, usize)>,
    pub last_zxid: i64,
    pub values_written: u64,
    /// The version last read per key, for conditional setData.
    pub known_version: Vec<i32>,
    /// Latest scheduled arrival on each direction of the connection, to keep it FIFO.
    pub last_request_at: Millis,
    pub last_reply_at: Millis,
    /// The client stays away until then (long enough for its session to expire).
    pub quiet_until: Millis,
    /// It went away on purpose: its session may have expired meanwhile.
    pub may_have_expired: bool,
    /// Data watches this connection set (a getData with watch), by key: the zxid the read
    /// saw. Each fires at the first change to its key after that.
    pub watches: std::collections::BTreeMap<usize, Zxid>,
    /// Persistent watches (addWatch), by key: the zxid of the last change heard of (or of the
    /// state they were set at). Each fires at every change.
    pub persistent: std::collections::BTreeMap<usize, Zxid>,
}

impl Client {
    pub fn new(index: usize) -> Client {
        Client {
            index,
            server: None,
            conn: None,
            phase: Phase::Disconnected,
            session: None,
            next_xid: 1,
            outstanding: VecDeque::new(),
            last_zxid: 0,
            values_written: 0,
            known_version: vec![-1; KEYS.len()],
            last_request_at: 0,
            last_reply_at: 0,
            watches: Default::default(),
            persistent: Default::default(),
            quiet_until: 0,
            may_have_expired: false,
        }
    }

    pub fn unique_value(&mut self) -> Vec<u8> {
        self.values_written += 1;
        format!("c{}-{}", self.index, self.values_written).into_bytes()
    }

    /// The connect request for a new connection.
    pub fn connect_request(&self) -> ConnectRequest {
        let (session_id, passwd) = self.session.clone().unwrap_or((0, vec![0; 16]));
        ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: self.last_zxid,
            timeout_ms: SESSION_TIMEOUT_MS,
            session_id,
            passwd,
            read_only: None,
        }
    }

    /// Forgets the connection; what is outstanding has an unknown outcome.
    pub fn disconnect(&mut self) {
        // This client does not re-register watches on a new connection (setWatches).
        self.watches.clear();
        self.persistent.clear();
        self.outstanding.clear();
        self.server = None;
        self.conn = None;
        self.phase = Phase::Disconnected;
    }
}

fn open_acl() -> Vec<Acl> {
    vec![Acl {
        perms: proto::watch::perms::ALL,
        id: Id {
            scheme: "world".into(),
            id: "anyone".into(),
        },
    }]
}

/// The ZooKeeper request for an operation of the workload.
pub fn request_of(op: &ClientOp) -> Request {
    match op {
        ClientOp::Create { key, value } => Request::Create {
            op: OpCode::Create,
            req: CreateRequest {
                path: KEYS[*key].into(),
                data: Some(value.clone()),
                acl: open_acl(),
                flags: 0,
            },
        },
        ClientOp::CreateSequential { value } => Request::Create {
            op: OpCode::Create,
            req: CreateRequest {
                path: "/n".into(),
                data: Some(value.clone()),
                acl: open_acl(),
                flags: 2,
            },
        },
        ClientOp::CreateEphemeral { key, value } => Request::Create {
            op: OpCode::Create,
            req: CreateRequest {
                path: KEYS[*key].into(),
                data: Some(value.clone()),
                acl: open_acl(),
                flags: 1,
            },
        },
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
        ClientOp::Get { key } => Request::GetData(PathAndWatch {
            path: KEYS[*key].into(),
            watch: true,
        }),
        ClientOp::Sync => Request::Sync(proto::PathRecord { path: "/".into() }),
        ClientOp::CloseSession => Request::CloseSession,
        ClientOp::AddWatch { key } => Request::AddWatch(proto::AddWatchRequest {
            path: KEYS[*key].into(),
            // PERSISTENT (0); recursive is 1.
            mode: 0,
        }),
        ClientOp::Reconfig { voters, observers } => {
            let mut members = Vec::new();
            for (sids, role) in [(voters, "participant"), (observers, "observer")] {
                for sid in sids {
                    members.push(format!("server.{sid}={}", sim_server_spec(*sid, role)));
                }
            }
            Request::Reconfig(proto::records::ReconfigRequest {
                joining_servers: None,
                leaving_servers: None,
                new_members: Some(members.join(",")),
                cur_config_id: -1,
            })
        }
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
    }
}

/// A request as the client sends it: a length-prefixed frame of header and body.
/// A simulated server's member text in `/zookeeper/config` (the simulated network ignores
/// addresses).
pub fn sim_server_spec(sid: Sid, role: &str) -> String {
    format!("sim-{sid}:2888:3888:{role}")
}

/// The xid of ZooKeeper's auth packet.
pub const AUTH_XID: i32 = -4;

/// Authenticates the connection as ZooKeeper's super user (digest `super:test`, whose
/// digest the simulated servers have as their superDigest): only it may reconfigure.
pub fn super_auth_frame() -> Vec<u8> {
    let mut w = Writer::new();
    RequestHeader {
        xid: AUTH_XID,
        op_type: OpCode::Auth.code(),
    }
    .encode(&mut w);
    proto::records::AuthPacket {
        auth_type: 0,
        scheme: "digest".into(),
        auth: Some(b"super:test".to_vec()),
    }
    .encode(&mut w);
    framed(w.into_inner())
}

/// `super:test` as DigestAuthenticationProvider prints it.
pub const SUPER_DIGEST: &str = "super:D/InIHSb7yEEbrWz8b9l71RjZJU=";

pub fn request_frame(xid: i32, request: &Request) -> Vec<u8> {
    let mut w = Writer::new();
    RequestHeader {
        xid,
        op_type: request.op_code().code(),
    }
    .encode(&mut w);
    request.encode_body(&mut w);
    framed(w.into_inner())
}

pub fn connect_frame(request: &ConnectRequest) -> Vec<u8> {
    let mut w = Writer::new();
    request.encode(&mut w);
    framed(w.into_inner())
}

fn framed(body: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 4);
    out.extend_from_slice(&(body.len() as i32).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// The payload of a length-prefixed frame, checked.
pub fn unframe(frame: &[u8]) -> Result<&[u8], String> {
    let len = frame
        .get(..4)
        .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or("a frame shorter than its length")?;
    let body = &frame[4..];
    if usize::try_from(len).ok() != Some(body.len()) {
        return Err(format!("a frame of {} bytes says {len}", body.len()));
    }
    Ok(body)
}

pub fn decode_connect_response(frame: &[u8]) -> Result<ConnectResponse, String> {
    let body = unframe(frame)?;
    ConnectResponse::decode(&mut Reader::new(body)).map_err(|e| e.to_string())
}

/// What a frame after the handshake is.
pub enum Incoming {
    /// A watch event (xid -1) on `path` for the change at `zxid`.
    Event {
        zxid: i64,
        path: String,
    },
    Reply {
        header: ReplyHeader,
        body: Vec<u8>,
    },
}

pub fn decode_incoming(frame: &[u8]) -> Result<Incoming, String> {
    let body = unframe(frame)?;
    let mut r = Reader::new(body);
    let header = ReplyHeader::decode(&mut r).map_err(|e| e.to_string())?;
    if header.xid == -1 {
        let event = proto::WatcherEvent::decode(&mut r).map_err(|e| e.to_string())?;
        return Ok(Incoming::Event {
            zxid: header.zxid,
            path: event.path,
        });
    }
    Ok(Incoming::Reply {
        header,
        body: r.rest().to_vec(),
    })
}

/// What the client learns from the reply to `op`.
pub fn result_of(op: &ClientOp, header: &ReplyHeader, body: &[u8]) -> Result<OpResult, String> {
    let zxid = Zxid::from_i64(header.zxid);
    if header.err == proto::ErrorCode::ThrottledOp.code() {
        return Ok(OpResult::Refused);
    }
    Ok(match op {
        ClientOp::AddWatch { .. } if header.err == 0 => OpResult::Watched { zxid },
        ClientOp::Get { .. } => {
            let value: NodeValue = if header.err == 0 {
                let data = GetDataResponse::decode(&mut Reader::new(body))
                    .map_err(|e| format!("getData reply: {e}"))?;
                Some((data.data.unwrap_or_default(), data.stat.version))
            } else if header.err == proto::ErrorCode::NoNode.code() {
                None
            } else {
                return Err(format!("getData answered {}", header.err));
            };
            OpResult::Read { zxid, value }
        }
        ClientOp::Reconfig { .. } if header.err == 0 => {
            let data = GetDataResponse::decode(&mut Reader::new(body))
                .map_err(|e| format!("reconfig reply: {e}"))?;
            OpResult::Written {
                zxid,
                code: 0,
                version: Some(data.stat.version),
                path: None,
            }
        }
        ClientOp::Set { .. } if header.err == 0 => {
            let stat =
                Stat::decode(&mut Reader::new(body)).map_err(|e| format!("setData reply: {e}"))?;
            OpResult::Written {
                zxid,
                code: 0,
                version: Some(stat.version),
                path: None,
            }
        }
        ClientOp::Create { .. }
        | ClientOp::CreateEphemeral { .. }
        | ClientOp::CreateSequential { .. }
            if header.err == 0 =>
        {
            // A create answers with the path it made.
            let path = Reader::new(body)
                .read_ustring()
                .map_err(|e| format!("create reply: {e}"))?;
            OpResult::Written {
                zxid,
                code: 0,
                version: None,
                path,
            }
        }
        _ => OpResult::Written {
            zxid,
            code: header.err,
            version: None,
            path: None,
        },
    })
}

/// The paths a committed transaction changes (for watches).
pub fn changed_paths(body: &proto::txn::TxnBody) -> Vec<&str> {
    use proto::txn::TxnBody;
    match body {
        TxnBody::Create(t) | TxnBody::Create2(t) => vec![t.path.as_str()],
        TxnBody::Delete(t) | TxnBody::DeleteContainer(t) => vec![t.path.as_str()],
        TxnBody::SetData(t) => vec![t.path.as_str()],
        // A multi with an error part applied nothing (the tree's all-or-nothing rule).
        TxnBody::Multi(bodies) if bodies.iter().any(|b| matches!(b, TxnBody::Error(_))) => {
            Vec::new()
        }
        TxnBody::Multi(bodies) => bodies.iter().flat_map(changed_paths).collect(),
        _ => Vec::new(),
    }
}
