//! One client connection: a reader that frames and decodes requests and hands them to the core,
//! and a writer that batches the core's replies into few socket writes.
//!
//! Flow control: a request is read only when the connection has fewer than
//! [`CONNECTION_REQUESTS_IN_FLIGHT_MAX`] requests whose replies are not yet written, and the
//! server fewer than `globalOutstandingLimit` requests the core has not yet answered; otherwise
//! the reader stops reading the socket and TCP pushes back on the client. The global slot is
//! freed when the core produces the reply (as ZooKeeper counts requests in processing), so
//! clients that do not read their replies hold only their own connection's slots and cannot
//! starve everyone else. Nothing is dropped silently.
//!
//! Closing: the core queues [`Outbound::Close`] after a last reply (the writer flushes, then
//! ends the connection) or calls [`ConnHandle::abort`] for a client that does not read.
//!
//! Replies of one turn of the core go out together when the turn ends ([`ConnHandle::flush`]):
//! on a plaintext connection whose writer has nothing unwritten the core writes them itself
//! ([`crate::shared_socket`]), otherwise they are queued for the writer as one item.

use crate::core::CoreMsg;
use crate::four_letter;
use crate::limits::*;
use crate::shared_socket::{DirectPath, SharedTcp};
use proto::frame::{parse_frame, FrameError};
use proto::jute::{Reader, Record};
use proto::op_code::OpCode;
use proto::request::Request;
use proto::{ConnectRequest, RequestHeader};
use replica::sasl::SaslOutcome;
use replica::ConnId;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, Semaphore};
use tokio_util::sync::CancellationToken;

/// What the core sends a connection's writer.
#[derive(Debug)]
pub enum Outbound {
    /// Encoded frames, of which `replies` answer requests and free in-flight slots once written.
    Frames { bytes: Vec<u8>, replies: usize },
    /// Flush what is queued, then close.
    Close,
}

/// The core's handle on a connection: its frames of the current turn, its writer's queue, and
/// the socket itself when it is plaintext.
pub struct ConnHandle {
    tx: mpsc::UnboundedSender<Outbound>,
    queued_bytes: Arc<AtomicUsize>,
    cancel: CancellationToken,
    /// Requests forwarded to the core and not yet answered; each holds a global slot.
    unanswered: Arc<AtomicUsize>,
    /// This connection's slots for requests whose replies are not yet written.
    inflight: Arc<Semaphore>,
    /// The core's direct way onto a plaintext socket.
    direct: Option<DirectPath>,
    /// Items queued for the writer and not yet written (the direct path's order guard).
    backlog: Arc<AtomicUsize>,
    /// Frames of the core's current turn, and how many of them are replies.
    turn: Vec<u8>,
    turn_replies: usize,
}

impl std::fmt::Debug for ConnHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnHandle")
            .field("direct", &self.direct.is_some())
            .field("turn_bytes", &self.turn.len())
            .finish_non_exhaustive()
    }
}

impl ConnHandle {
    /// Adds a frame to this turn; returns whether it is the turn's first (the caller then
    /// flushes this connection when the turn ends).
    pub fn push(&mut self, frame: &[u8], is_reply: bool) -> bool {
        let first = self.turn.is_empty();
        self.turn.extend_from_slice(frame);
        self.turn_replies += usize::from(is_reply);
        first
    }

    /// Sends this turn's frames: written now when the socket is plaintext and the writer has
    /// nothing unwritten, queued for the writer otherwise (or what the socket did not take).
    /// False when the client already has too many bytes waiting: the connection is then
    /// aborted. The queue is bounded in bytes, not in messages.
    pub fn flush(&mut self) -> bool {
        if self.turn.is_empty() {
            return true;
        }
        let replies = std::mem::take(&mut self.turn_replies);
        let written = match &self.direct {
            Some(direct) if direct.is_clear() => direct.write_now(&self.turn),
            _ => 0,
        };
        if written == self.turn.len() {
            self.turn.clear();
            self.inflight.add_permits(replies);
            return true;
        }
        let bytes = if written == 0 {
            std::mem::take(&mut self.turn)
        } else {
            let rest = self.turn[written..].to_vec();
            self.turn.clear();
            rest
        };
        let queued = self.queued_bytes.fetch_add(bytes.len(), Ordering::Relaxed) + bytes.len();
        if queued > CONNECTION_OUTBOUND_BYTES_MAX {
            self.abort();
            return false;
        }
        // A writer already gone means the connection is closing anyway.
        self.queue(Outbound::Frames { bytes, replies });
        true
    }

    /// Sends what this turn holds, then closes the connection once it is written.
    pub fn close(&mut self) {
        if self.flush() {
            self.queue(Outbound::Close);
        }
    }

    fn queue(&self, item: Outbound) {
        // Counted before the writer can see it, so the core never writes past it.
        self.backlog.fetch_add(1, Ordering::AcqRel);
        if self.tx.send(item).is_err() {
            self.backlog.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Records that the core answered (or dropped) one request of this connection; returns
    /// whether one was outstanding, i.e. whether a global slot is to be given back.
    pub fn answered(&self) -> bool {
        self.unanswered
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }

    /// Every request still unanswered when the connection goes away.
    pub fn take_unanswered(&self) -> usize {
        self.unanswered.swap(0, Ordering::AcqRel)
    }

    /// Closes the connection at once, without flushing.
    pub fn abort(&self) {
        self.cancel.cancel();
    }
}

/// What every connection shares.
pub struct Shared {
    pub core_tx: mpsc::Sender<CoreMsg>,
    pub global_permits: Arc<Semaphore>,
    pub jute_max_buffer: usize,
    pub four_letter_words: crate::config::FourLetterWhitelist,
    /// The next connection id, shared by every listener (plaintext and TLS).
    pub next_conn: std::sync::atomic::AtomicU64,
    /// Plaintext connections and TLS handshakes, for `mntr` and the metrics.
    pub connection_metrics: crate::metrics::connections::ConnectionMetrics,
    /// The server's SASL login (its DIGEST-MD5 users), if it has one.
    pub sasl: Option<Arc<crate::sasl::SaslLogin>>,
}

/// The reading side of a client connection: a plain socket or a TLS stream.
pub type ReadHalf = Box<dyn AsyncRead + Send + Unpin>;
/// The writing side of a client connection.
pub type WriteHalf = Box<dyn AsyncWrite + Send + Unpin>;

/// A connection's halves, and the socket itself when the core may write to it directly.
pub type Halves = (ReadHalf, WriteHalf, Option<Arc<TcpStream>>);

/// A plaintext socket, shared without a lock.
pub fn plain(stream: TcpStream) -> Halves {
    let _ = stream.set_nodelay(true);
    let stream = Arc::new(stream);
    (
        Box::new(SharedTcp(stream.clone())),
        Box::new(SharedTcp(stream.clone())),
        Some(stream),
    )
}

/// A TLS stream (its socket already has TCP_NODELAY set); only its writer writes.
pub fn tls(stream: tokio_rustls::server::TlsStream<TcpStream>) -> Halves {
    let (rd, wr) = tokio::io::split(stream);
    (Box::new(rd), Box::new(wr), None)
}

/// Serves one accepted connection until it closes. `tls_ids` are the identities its TLS
/// client certificate proved (`x509`, maybe `super`), added to the session's auth info.
pub async fn serve(
    (mut rd, wr, socket): Halves,
    peer: SocketAddr,
    conn: ConnId,
    tls_ids: Vec<proto::Id>,
    shared: Arc<Shared>,
) {
    let mut buf = Vec::with_capacity(4096);
    if read_at_least(&mut rd, &mut buf, 4).await.is_err() {
        return;
    }
    if let Some(cmd) = four_letter::command_in(&buf[..4]) {
        four_letter::serve(cmd, peer, wr, &shared).await;
        return;
    }
    let cancel = CancellationToken::new();
    let unanswered = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::unbounded_channel();
    let queued_bytes = Arc::new(AtomicUsize::new(0));
    let inflight = Arc::new(Semaphore::new(CONNECTION_REQUESTS_IN_FLIGHT_MAX));
    let backlog = Arc::new(AtomicUsize::new(0));
    let handle = ConnHandle {
        tx,
        queued_bytes: queued_bytes.clone(),
        cancel: cancel.clone(),
        unanswered: unanswered.clone(),
        inflight: inflight.clone(),
        direct: socket.map(|socket| DirectPath::new(socket, backlog.clone())),
        backlog: backlog.clone(),
        turn: Vec::new(),
        turn_replies: 0,
    };
    let writer = tokio::spawn(write_loop(
        wr,
        rx,
        Written {
            queued_bytes,
            inflight: inflight.clone(),
            backlog,
        },
        cancel.clone(),
    ));
    let reading = ReadLoop {
        rd,
        buf,
        conn,
        peer,
        tls_ids,
        shared: shared.clone(),
        inflight,
        unanswered,
        cancel: cancel.clone(),
        sasl_exchange: None,
    };
    match reading.run(handle).await {
        Ok(()) => tracing::debug!(conn, %peer, "connection closed"),
        Err(reason) => tracing::info!(conn, %peer, %reason, "closing connection"),
    }
    // The core gives back the global slots of requests it never answered when it sees this.
    let _ = shared.core_tx.send(CoreMsg::Closed { conn }).await;
    cancel.cancel();
    let _ = writer.await;
}

async fn read_at_least(rd: &mut ReadHalf, buf: &mut Vec<u8>, n: usize) -> std::io::Result<()> {
    while buf.len() < n {
        if rd.read_buf(buf).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
    }
    Ok(())
}

struct ReadLoop {
    rd: ReadHalf,
    buf: Vec<u8>,
    conn: ConnId,
    peer: SocketAddr,
    tls_ids: Vec<proto::Id>,
    shared: Arc<Shared>,
    inflight: Arc<Semaphore>,
    unanswered: Arc<AtomicUsize>,
    cancel: CancellationToken,
    /// This connection's SASL exchange, from its first SASL request on.
    sasl_exchange: Option<sasl::digest_md5::DigestMd5Server>,
}

/// Why a connection ended, for the log line.
#[derive(Debug, thiserror::Error)]
enum CloseReason {
    #[error("client closed the connection")]
    Eof,
    #[error("server closed the connection")]
    Cancelled,
    #[error("socket error: {0}")]
    Io(#[from] std::io::Error),
    #[error("Len error: {0}")]
    Frame(#[from] FrameError),
    #[error("malformed {what}: {detail}")]
    Malformed { what: &'static str, detail: String },
    #[error("server is shutting down")]
    CoreGone,
}

impl ReadLoop {
    async fn run(mut self, handle: ConnHandle) -> Result<(), CloseReason> {
        let connect = self.next_frame().await?;
        let request = ConnectRequest::decode(&mut Reader::new(&connect)).map_err(|e| {
            CloseReason::Malformed {
                what: "connect request",
                detail: e.to_string(),
            }
        })?;
        let msg = CoreMsg::Connect {
            conn: self.conn,
            handle,
            peer: self.peer,
            request,
            tls_ids: std::mem::take(&mut self.tls_ids),
        };
        self.shared
            .core_tx
            .send(msg)
            .await
            .map_err(|_| CloseReason::CoreGone)?;
        loop {
            let frame = match self.next_frame().await {
                Err(CloseReason::Eof | CloseReason::Cancelled) => return Ok(()),
                other => other?,
            };
            self.forward(&frame).await?;
        }
    }

    /// Reads until a whole frame is buffered, then removes and returns its payload.
    async fn next_frame(&mut self) -> Result<Vec<u8>, CloseReason> {
        loop {
            if let Some(range) = parse_frame(&self.buf, self.shared.jute_max_buffer)? {
                let payload = self.buf[range.clone()].to_vec();
                self.buf.drain(..range.end);
                return Ok(payload);
            }
            if self.buf.capacity() - self.buf.len() < 4096 {
                self.buf
                    .reserve(READ_CHUNK_BYTES.min(self.shared.jute_max_buffer + 4));
            }
            let n = tokio::select! {
                n = self.rd.read_buf(&mut self.buf) => n?,
                _ = self.cancel.cancelled() => return Err(CloseReason::Cancelled),
            };
            if n == 0 {
                return Err(CloseReason::Eof);
            }
        }
    }

    /// Decodes one request and hands it to the core once flow control allows.
    async fn forward(&mut self, frame: &[u8]) -> Result<(), CloseReason> {
        let mut r = Reader::new(frame);
        let header = RequestHeader::decode(&mut r).map_err(|e| CloseReason::Malformed {
            what: "request header",
            detail: e.to_string(),
        })?;
        let received = Instant::now();
        let msg = if header.op_type == OpCode::Sasl as i32 {
            let outcome = self.sasl_step(r.rest())?;
            CoreMsg::Sasl {
                conn: self.conn,
                xid: header.xid,
                outcome,
                received,
            }
        } else {
            CoreMsg::Request {
                conn: self.conn,
                xid: header.xid,
                op_type: header.op_type,
                request: Request::decode(header.op_type, r.rest()),
                received,
            }
        };
        tokio::select! {
            permits = acquire_both(&self.inflight, &self.shared.global_permits) => permits?,
            _ = self.cancel.cancelled() => return Err(CloseReason::Cancelled),
        }
        self.unanswered.fetch_add(1, Ordering::AcqRel);
        self.shared
            .core_tx
            .send(msg)
            .await
            .map_err(|_| CloseReason::CoreGone)
    }
}

impl ReadLoop {
    /// One step of this connection's SASL exchange from a `GetSASLRequest` body. A body that is
    /// not one (or a null token, on which ZooKeeper fails) closes the connection.
    fn sasl_step(&mut self, body: &[u8]) -> Result<SaslOutcome, CloseReason> {
        let malformed = |detail: String| CloseReason::Malformed {
            what: "SASL request",
            detail,
        };
        let token = match Reader::new(body).read_buffer() {
            Ok(Some(token)) => token,
            Ok(None) => return Err(malformed("null token".into())),
            Err(e) => return Err(malformed(e.to_string())),
        };
        Ok(match &self.shared.sasl {
            Some(login) => login.step(&mut self.sasl_exchange, token, self.peer),
            None => SaslOutcome::NotConfigured,
        })
    }
}

async fn acquire_both(conn: &Semaphore, global: &Semaphore) -> Result<(), CloseReason> {
    conn.acquire()
        .await
        .map_err(|_| CloseReason::CoreGone)?
        .forget();
    global
        .acquire()
        .await
        .map_err(|_| CloseReason::CoreGone)?
        .forget();
    Ok(())
}

/// What the writer reports as it writes: bytes no longer queued, in-flight slots freed, items
/// no longer unwritten.
struct Written {
    queued_bytes: Arc<AtomicUsize>,
    inflight: Arc<Semaphore>,
    backlog: Arc<AtomicUsize>,
}

/// Writes queued frames in batches: everything already queued (up to a batch limit) goes out
/// in one `write_all`.
async fn write_loop(
    mut wr: WriteHalf,
    mut rx: mpsc::UnboundedReceiver<Outbound>,
    written: Written,
    cancel: CancellationToken,
) {
    let mut batch: Vec<u8> = Vec::with_capacity(WRITE_BATCH_BYTES_MAX);
    loop {
        let first = tokio::select! {
            item = rx.recv() => item,
            _ = cancel.cancelled() => None,
        };
        let Some(mut item) = first else { break };
        let (mut replies, mut close, mut taken) = (0usize, false, 0usize);
        loop {
            taken += 1;
            match item {
                Outbound::Frames {
                    bytes,
                    replies: answered,
                } => {
                    batch.extend_from_slice(&bytes);
                    replies += answered;
                }
                Outbound::Close => close = true,
            }
            if close || batch.len() >= WRITE_BATCH_BYTES_MAX {
                break;
            }
            match rx.try_recv() {
                Ok(next) => item = next,
                Err(_) => break,
            }
        }
        let ok = tokio::select! {
            r = wr.write_all(&batch) => r.is_ok(),
            _ = cancel.cancelled() => false,
        };
        written
            .queued_bytes
            .fetch_sub(batch.len(), Ordering::Relaxed);
        batch.clear();
        written.inflight.add_permits(replies);
        written.backlog.fetch_sub(taken, Ordering::AcqRel);
        if !ok || close {
            break;
        }
    }
    let _ = wr.shutdown().await;
    cancel.cancel();
}
