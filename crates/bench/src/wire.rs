//! The few requests the load generator sends, encoded once per call with the `proto` codecs.
//! The generator speaks the wire protocol itself (no client library) so that its own cost stays
//! small and visible next to the `null` target.

use proto::jute::{Reader, Record, Writer};
use proto::request::Request;
use proto::{ConnectRequest, ConnectResponse, ReplyHeader, RequestHeader};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Largest reply the generator accepts (it asks for nothing big).
const REPLY_MAX: usize = 1 << 20;

/// Appends `[len][header][body]` for `request` to `out`.
pub fn encode_request(out: &mut Vec<u8>, xid: i32, request: &Request) {
    let mut w = Writer::wrap(std::mem::take(out));
    let at = w.len();
    w.write_i32(0);
    RequestHeader {
        xid,
        op_type: request.op_code() as i32,
    }
    .encode(&mut w);
    request.encode_body(&mut w);
    let len = (w.len() - at - 4) as i32;
    w.patch_i32(at, len);
    *out = w.into_inner();
}

/// A connection with an established session.
pub struct Session {
    pub stream: TcpStream,
    buf: Vec<u8>,
    pub session_id: i64,
    /// Watch events passed over while waiting for replies (recipes that wait for an event
    /// must know one already came).
    pub skipped_events: u64,
    /// The last frames' headers (xid, zxid, err), for diagnosing a recipe that waits forever.
    pub recent: std::collections::VecDeque<(i32, i64, i32)>,
}

impl Session {
    pub async fn open(addr: SocketAddr, timeout_ms: i32) -> anyhow::Result<Session> {
        let mut stream =
            tokio::time::timeout(Duration::from_secs(10), TcpStream::connect(addr)).await??;
        stream.set_nodelay(true)?;
        let mut w = Writer::new();
        w.write_i32(0);
        ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout_ms,
            session_id: 0,
            passwd: vec![0; 16],
            read_only: Some(false),
        }
        .encode(&mut w);
        let len = (w.len() - 4) as i32;
        w.patch_i32(0, len);
        stream.write_all(w.as_slice()).await?;
        let mut session = Session {
            stream,
            buf: Vec::with_capacity(64 << 10),
            session_id: 0,
            skipped_events: 0,
            recent: std::collections::VecDeque::new(),
        };
        let payload = session.read_frame().await?;
        let response = ConnectResponse::decode(&mut Reader::new(&payload))?;
        anyhow::ensure!(response.session_id != 0, "the server refused the session");
        session.session_id = response.session_id;
        Ok(session)
    }

    /// The next frame's payload.
    pub async fn read_frame(&mut self) -> anyhow::Result<Vec<u8>> {
        loop {
            if self.buf.len() >= 4 {
                let len = i32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
                let len = usize::try_from(len).ok().filter(|&l| l <= REPLY_MAX);
                let len = len.ok_or_else(|| anyhow::anyhow!("bad reply length"))?;
                if self.buf.len() >= 4 + len {
                    let payload = self.buf[4..4 + len].to_vec();
                    self.buf.drain(..4 + len);
                    return Ok(payload);
                }
            }
            let mut chunk = [0u8; 16 << 10];
            let n = self.stream.read(&mut chunk).await?;
            anyhow::ensure!(n > 0, "the server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// The next reply header, skipping watch events.
    pub async fn read_reply(&mut self) -> anyhow::Result<ReplyHeader> {
        Ok(self.read_reply_body().await?.0)
    }

    /// The next reply header and its undecoded body, skipping watch events.
    pub async fn read_reply_body(&mut self) -> anyhow::Result<(ReplyHeader, Vec<u8>)> {
        loop {
            let payload = self.read_frame().await?;
            let mut r = Reader::new(&payload);
            let header = ReplyHeader::decode(&mut r)?;
            self.remember(&header);
            if header.xid != -1 {
                return Ok((header, r.rest().to_vec()));
            }
            self.skipped_events += 1;
        }
    }

    /// Keeps the last few frame headers.
    pub fn remember(&mut self, h: &ReplyHeader) {
        if self.recent.len() == 16 {
            self.recent.pop_front();
        }
        self.recent.push_back((h.xid, h.zxid, h.err));
    }

    /// Ends the session (closeSession), so the server need not wait for it to expire.
    pub async fn close(mut self) -> anyhow::Result<()> {
        self.call(i32::MAX, &Request::CloseSession).await?;
        Ok(())
    }

    /// Sends one request and waits for its reply (a synchronous call).
    pub async fn call(
        &mut self,
        xid: i32,
        request: &Request,
    ) -> anyhow::Result<(ReplyHeader, Vec<u8>)> {
        let mut out = Vec::new();
        encode_request(&mut out, xid, request);
        self.stream.write_all(&out).await?;
        let (header, body) = self.read_reply_body().await?;
        anyhow::ensure!(header.xid == xid, "reply {} to request {xid}", header.xid);
        Ok((header, body))
    }
}
