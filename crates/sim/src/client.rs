//! A simulated client session: connects to one server at a time, pipelines a few requests,
//! gives up on a silent connection after a timeout and moves to another server, and checks
//! FIFO order of its replies as they arrive.

use crate::ops::{ClientId, ClientOp, OpResult};
use std::collections::VecDeque;
use zab::{Millis, Sid, Zxid};

/// Requests a client keeps in flight.
pub const CLIENT_OUTSTANDING_MAX: usize = 3;
/// Silence after which a client abandons its connection.
pub const CLIENT_TIMEOUT_MS: Millis = 1500;

#[derive(Debug)]
pub struct SimClient {
    pub id: ClientId,
    pub server: Option<Sid>,
    /// Connection number; replies on an older one are ignored.
    pub conn: u64,
    pub next_cxid: i32,
    /// (cxid, history index) in send order.
    pub outstanding: VecDeque<(i32, usize)>,
    pub last_zxid: Zxid,
    pub values_written: u64,
    /// The version last read per key, for conditional setData.
    pub known_version: Vec<i32>,
    pub stopped: bool,
    /// Latest scheduled arrival on each direction of the connection, to keep it FIFO.
    pub last_request_at: Millis,
    pub last_reply_at: Millis,
}

/// What a server sends back on a client connection.
#[derive(Debug, Clone)]
pub enum Reply {
    Result {
        cxid: i32,
        result: OpResult,
    },
    /// The server closed the connection (or refused it).
    Closed,
    /// Diskless: the history this session saw was lost; it must start a new session.
    Expired,
}

/// A request on the wire from a client to a server.
#[derive(Debug, Clone)]
pub struct ClientRequest {
    pub client: ClientId,
    pub conn: u64,
    pub cxid: i32,
    pub op: ClientOp,
    pub record: usize,
    /// The client's last seen zxid: a server behind it refuses the connection.
    pub last_zxid: Zxid,
}

impl SimClient {
    pub fn new(id: ClientId, keys: usize) -> SimClient {
        SimClient {
            id,
            server: None,
            conn: 0,
            next_cxid: 1,
            outstanding: VecDeque::new(),
            last_zxid: Zxid::ZERO,
            values_written: 0,
            known_version: vec![-1; keys],
            stopped: false,
            last_request_at: 0,
            last_reply_at: 0,
        }
    }

    pub fn unique_value(&mut self) -> Vec<u8> {
        self.values_written += 1;
        format!("c{}-{}", self.id, self.values_written).into_bytes()
    }
}
