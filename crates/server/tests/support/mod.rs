//! Helpers for the socket-level tests: an in-process server on 127.0.0.1 with an ephemeral port,
//! and a raw client that builds frames by hand, so tests can send what no real client would.
//!
//! Every read has a timeout ([`IO_TIMEOUT`]); a server that stops answering fails the test with
//! a message instead of hanging it.

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use proto::jute::{Reader, Record, Writer};
use proto::request::Request;
use proto::response::Response;
use proto::{
    Acl, ConnectRequest, ConnectResponse, CreateRequest, Id, OpCode, PathAndWatch, ReplyHeader,
    RequestHeader, SetDataRequest, WatcherEvent,
};
use server::config::ServerConfig;
use server::RunningServer;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The longest any single read or connect may take before the test fails.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// Session timeout clients ask for (clamped by the server to [2, 20] ticks).
pub const SESSION_TIMEOUT_MS: i32 = 30_000;

/// The embedded default configuration, listening on 127.0.0.1 with a port the OS picks.
/// A loopback server on a free port with a data dir of its own.
pub fn test_config() -> ServerConfig {
    let mut config = ServerConfig::embedded_default();
    config.client_port = 0;
    config.client_port_address = IpAddr::V4(Ipv4Addr::LOCALHOST);
    config.data_dir = fresh_data_dir();
    config.data_log_dir = config.data_dir.clone();
    // 1 MiB log segments: tests write little, and 64 MiB preallocated per server adds up.
    config.pre_alloc_size_kb = 1024;
    config
}

/// A new empty directory under cargo's scratch space for integration tests.
pub fn fresh_data_dir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let root = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    if n == 0 {
        // Data dirs of earlier test runs (cargo runs one test binary at a time).
        let ours = format!("data-{}-", std::process::id());
        for entry in std::fs::read_dir(root).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with("data-") && !name.starts_with(&ours) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let dir = root.join(format!("data-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create test data dir");
    dir
}

/// Starts a server; its real address is `client_address`.
pub async fn start(config: ServerConfig) -> RunningServer {
    let server = server::start(config).await.expect("server starts");
    assert!(server.client_address.ip().is_loopback());
    assert_ne!(server.client_address.port(), 0);
    server
}

/// `world:anyone` with every permission.
pub fn open_acl() -> Vec<Acl> {
    vec![Acl {
        perms: 31,
        id: Id {
            scheme: "world".into(),
            id: "anyone".into(),
        },
    }]
}

pub fn create(path: &str, data: &[u8], flags: i32) -> Request {
    Request::Create {
        op: OpCode::Create,
        req: CreateRequest {
            path: path.into(),
            data: Some(data.to_vec()),
            acl: open_acl(),
            flags,
        },
    }
}

pub fn get_data(path: &str, watch: bool) -> Request {
    Request::GetData(PathAndWatch {
        path: path.into(),
        watch,
    })
}

pub fn set_data(path: &str, data: &[u8], version: i32) -> Request {
    Request::SetData(SetDataRequest {
        path: path.into(),
        data: Some(data.to_vec()),
        version,
    })
}

/// A ConnectRequest for a new session, with the readOnly byte as current clients send it.
pub fn new_session_request() -> ConnectRequest {
    ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: 0,
        timeout_ms: SESSION_TIMEOUT_MS,
        session_id: 0,
        passwd: vec![0; 16],
        read_only: Some(false),
    }
}

/// `[len][payload]`.
pub fn frame(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 4);
    out.extend_from_slice(&(payload.len() as i32).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// A whole request frame: header with `xid` and `op_type`, then `body` as given.
pub fn request_frame_raw(xid: i32, op_type: i32, body: &[u8]) -> Vec<u8> {
    let mut w = Writer::new();
    RequestHeader { xid, op_type }.encode(&mut w);
    w.write_raw(body);
    frame(w.as_slice())
}

/// A whole request frame for a well-formed request.
pub fn request_frame(xid: i32, request: &Request) -> Vec<u8> {
    let mut w = Writer::new();
    request.encode_body(&mut w);
    request_frame_raw(xid, request.op_code().code(), w.as_slice())
}

/// One reply frame: header and the undecoded body.
#[derive(Debug, Clone)]
pub struct Reply {
    pub header: ReplyHeader,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn parse(payload: &[u8]) -> Reply {
        let mut r = Reader::new(payload);
        let header = ReplyHeader::decode(&mut r).expect("reply header");
        Reply {
            header,
            body: r.rest().to_vec(),
        }
    }

    pub fn is_event(&self) -> bool {
        self.header.xid == -1
    }

    pub fn event(&self) -> WatcherEvent {
        assert!(self.is_event(), "not a watch event: {:?}", self.header);
        WatcherEvent::decode(&mut Reader::new(&self.body)).expect("watcher event")
    }

    /// The decoded body of a successful reply to `op`.
    pub fn response(&self, op: OpCode) -> Response {
        assert_eq!(self.header.err, 0, "reply to {op:?} is an error");
        Response::decode(op, &self.body).expect("reply body decodes")
    }
}

/// How a read ended when it did not produce a frame.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadEnd {
    /// EOF or reset: the server closed the connection.
    Closed,
    /// Nothing arrived within the timeout.
    TimedOut,
}

/// A raw client connection with a read buffer.
pub struct Conn {
    pub stream: TcpStream,
    buf: Vec<u8>,
    next_xid: i32,
    /// The handshake's answer, once there was one.
    pub session: Option<ConnectResponse>,
    /// Watch events read while waiting for replies, in arrival order.
    pub events: Vec<WatcherEvent>,
}

impl Conn {
    /// Opens a TCP connection (no handshake).
    pub async fn open(addr: SocketAddr) -> Conn {
        let stream = tokio::time::timeout(IO_TIMEOUT, TcpStream::connect(addr))
            .await
            .expect("connect in time")
            .expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        Conn {
            stream,
            buf: Vec::new(),
            next_xid: 1,
            session: None,
            events: Vec::new(),
        }
    }

    /// Opens a connection and establishes a new session.
    pub async fn session(addr: SocketAddr) -> Conn {
        let mut conn = Conn::open(addr).await;
        let response = conn
            .handshake(&new_session_request())
            .await
            .expect("ConnectResponse");
        assert_ne!(response.session_id, 0, "new session id");
        assert!(response.timeout_ms > 0, "negotiated timeout");
        conn
    }

    pub fn session_id(&self) -> i64 {
        self.session.as_ref().map_or(0, |s| s.session_id)
    }

    pub async fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        tokio::time::timeout(IO_TIMEOUT, self.stream.write_all(bytes))
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "write timed out"))?
    }

    /// Sends a ConnectRequest and reads the ConnectResponse; `Err` when the server closed (or
    /// said nothing) instead.
    pub async fn handshake(
        &mut self,
        request: &ConnectRequest,
    ) -> Result<ConnectResponse, ReadEnd> {
        self.handshake_raw(request).await.map(|(r, _)| r)
    }

    /// As [`Conn::handshake`], also returning the response payload's length.
    pub async fn handshake_raw(
        &mut self,
        request: &ConnectRequest,
    ) -> Result<(ConnectResponse, usize), ReadEnd> {
        let mut w = Writer::new();
        request.encode(&mut w);
        // A failed write means the server already closed; the read below reports it.
        let _ = self.write_all(&frame(w.as_slice())).await;
        let payload = self.read_frame().await?;
        let response =
            ConnectResponse::decode(&mut Reader::new(&payload)).expect("ConnectResponse decodes");
        self.session = Some(response.clone());
        Ok((response, payload.len()))
    }

    /// The next frame's payload.
    pub async fn read_frame(&mut self) -> Result<Vec<u8>, ReadEnd> {
        self.read_frame_within(IO_TIMEOUT).await
    }

    pub async fn read_frame_within(&mut self, limit: Duration) -> Result<Vec<u8>, ReadEnd> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if self.buf.len() >= 4 {
                let len = i32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
                assert!(len >= 0, "server sent a negative frame length");
                let end = 4 + len as usize;
                if self.buf.len() >= end {
                    let payload = self.buf[4..end].to_vec();
                    self.buf.drain(..end);
                    return Ok(payload);
                }
            }
            self.fill(deadline).await?;
        }
    }

    /// Reads more bytes into the buffer.
    async fn fill(&mut self, deadline: tokio::time::Instant) -> Result<usize, ReadEnd> {
        self.buf.reserve(64 << 10);
        match tokio::time::timeout_at(deadline, self.stream.read_buf(&mut self.buf)).await {
            Err(_) => Err(ReadEnd::TimedOut),
            Ok(Ok(0)) | Ok(Err(_)) => Err(ReadEnd::Closed),
            Ok(Ok(n)) => Ok(n),
        }
    }

    /// Reads until the server closes the connection; returns every byte that arrived before the
    /// close (including any already buffered). Panics if the connection stays open.
    pub async fn expect_closed(&mut self) -> Vec<u8> {
        let deadline = tokio::time::Instant::now() + IO_TIMEOUT;
        loop {
            match self.fill(deadline).await {
                Ok(_) => continue,
                Err(ReadEnd::Closed) => return std::mem::take(&mut self.buf),
                Err(ReadEnd::TimedOut) => panic!(
                    "the server did not close the connection within {IO_TIMEOUT:?} ({} bytes received)",
                    self.buf.len()
                ),
            }
        }
    }

    /// The next reply frame (events included).
    pub async fn read_reply(&mut self) -> Reply {
        let payload = self.read_frame().await.unwrap_or_else(|end| {
            panic!("expected a reply frame, got {end:?}");
        });
        Reply::parse(&payload)
    }

    /// Takes the next xid.
    pub fn xid(&mut self) -> i32 {
        let xid = self.next_xid;
        self.next_xid += 1;
        xid
    }

    /// Sends a request with the next xid; returns the xid.
    pub async fn send(&mut self, request: &Request) -> i32 {
        let xid = self.xid();
        self.write_all(&request_frame(xid, request))
            .await
            .expect("send request");
        xid
    }

    /// Sends a request and waits for its reply, collecting watch events met on the way.
    pub async fn call(&mut self, request: &Request) -> Reply {
        let xid = self.send(request).await;
        self.reply_to(xid).await
    }

    /// Reads frames until the reply with `xid`; events go to [`Conn::events`]. Any other xid is
    /// a FIFO violation.
    pub async fn reply_to(&mut self, xid: i32) -> Reply {
        loop {
            let reply = self.read_reply().await;
            if reply.is_event() {
                self.events.push(reply.event());
                continue;
            }
            assert_eq!(reply.header.xid, xid, "reply out of order");
            return reply;
        }
    }

    /// A create and getData round trip on a fresh path: proof the server serves this client.
    pub async fn round_trip(&mut self, path: &str) {
        let payload = path.as_bytes();
        let created = self.call(&create(path, payload, 0)).await;
        assert_eq!(created.header.err, 0, "create {path}");
        assert_eq!(
            created.response(OpCode::Create),
            Response::Create(path.into())
        );
        let read = self.call(&get_data(path, false)).await;
        match read.response(OpCode::GetData) {
            Response::GetData(r) => assert_eq!(r.data.as_deref(), Some(payload)),
            other => panic!("unexpected getData body {other:?}"),
        }
    }
}
