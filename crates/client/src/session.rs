//! The session driver: one task per client that owns the connection, the queue of requests in
//! flight and the watch registry (paper §4.4, `ClientCnxn`).
//!
//! * Requests are written in the order they were submitted and answered in that order; the
//!   driver completes each caller's future as its reply arrives, so results are delivered in
//!   request order. A reply whose xid is not the oldest in flight is a protocol violation and
//!   drops the connection, as in ZooKeeper ("Xid out of order").
//! * Heartbeats: a ping after s/3 without sending (s = negotiated session timeout); a server
//!   silent for 2s/3 is given up and the next server in the connect string is tried.
//! * Reconnection sends the session id, password and the last zxid seen, then the credentials
//!   and every armed watch (setWatches, or setWatches2 for persistent ones) in batches of at
//!   most 128 KiB of paths, each with the next ordinary xid as the Java client sends them. Requests accepted when a connection drops (written or still
//!   queued) fail with ConnectionLoss, in order, each exactly once, as in ZooKeeper's client;
//!   calls made while disconnected wait for the next connection.
//! * Terminal states (expired, auth failed, closed) fail everything outstanding and end the task.

use crate::connection::{self, FrameReader, FrameWriter};
use crate::error::{error_code_from_wire, Error, Result};
use crate::event::{event_type_from_wire, keeper_state_from_wire, SessionState, WatchedEvent};
use crate::limits::{
    IN_FLIGHT_MAX, RECONNECT_PAUSE_MAX_MS, RECONNECT_PAUSE_MIN_MS, SET_WATCHES_BATCH_BYTES_MAX,
};
use crate::path::Chroot;
use crate::submit_queue::SubmitQueue;
use crate::watch::{WatchKind, WatchPaths, WatchRegistration, WatchRegistry};
use proto::jute::{Reader, Record, Writer};
use proto::op_code::xid;
use proto::request::Request;
use proto::response::Response;
use proto::watch::{KeeperState, WatcherType};
use proto::{
    AuthPacket, ConnectRequest, ConnectResponse, ErrorCode, OpCode, ReplyHeader, RequestHeader,
    SetWatches, SetWatches2, WatcherEvent,
};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::time::{sleep_until, timeout, Instant};
use tracing::Instrument;

/// What a request does to the local watch registry once it succeeds.
#[derive(Debug)]
pub(crate) enum LocalEffect {
    RemoveWatches(String, WatcherType),
}

/// A request handed to the driver.
#[derive(Debug)]
pub(crate) struct Submission {
    /// Paths inside are server paths (chroot applied).
    pub request: Request,
    /// The client path, for error messages.
    pub path: String,
    pub watch: Option<WatchRegistration>,
    pub effect: Option<LocalEffect>,
    pub reply: oneshot::Sender<Result<Response>>,
}

#[derive(Debug)]
pub(crate) enum Command {
    Submit(Submission),
    /// Sends credentials now and on every reconnection.
    AddAuth {
        scheme: String,
        auth: Vec<u8>,
        reply: oneshot::Sender<Result<()>>,
    },
}

/// What the application may read about the session at any time.
#[derive(Debug, Clone, Default)]
pub struct SessionInfo {
    pub session_id: i64,
    pub password: Vec<u8>,
    /// The negotiated timeout in milliseconds.
    pub timeout_ms: i32,
    /// The server of the current (or last) connection.
    pub server: String,
    pub last_zxid: i64,
}

/// The channels and settings the driver starts with.
pub(crate) struct DriverParts {
    pub hosts: Vec<String>,
    pub chroot: Chroot,
    pub requested_timeout_ms: i32,
    pub auth: Vec<(String, Vec<u8>)>,
    pub commands: Arc<SubmitQueue>,
    pub close: mpsc::Receiver<oneshot::Sender<()>>,
    pub state: watch::Sender<SessionState>,
    pub events: broadcast::Sender<SessionState>,
    pub info: Arc<Mutex<SessionInfo>>,
    pub tls: Option<crate::tls::TlsClient>,
    pub can_be_read_only: bool,
}

/// A request written to the server and not yet answered.
struct InFlight {
    xid: i32,
    op: OpCode,
    path: String,
    watch: Option<WatchRegistration>,
    effect: Option<LocalEffect>,
    /// `None` for the driver's own requests (setWatches, closeSession).
    reply: Option<oneshot::Sender<Result<Response>>>,
}

/// How a connection ended.
enum Ended {
    /// Lost or given up: try another server.
    Lost(String),
    /// The session is over.
    Terminal(SessionState),
}

struct Driver {
    hosts: Vec<String>,
    next_host: usize,
    chroot: Chroot,
    requested_timeout_ms: i32,
    session_id: i64,
    password: Vec<u8>,
    timeout_ms: i32,
    last_zxid: i64,
    next_xid: i32,
    auth: Vec<(String, Vec<u8>)>,
    watches: WatchRegistry,
    commands: Arc<SubmitQueue>,
    close: mpsc::Receiver<oneshot::Sender<()>>,
    /// Who asked to close, answered once the session is closed.
    closer: Option<oneshot::Sender<()>>,
    state: watch::Sender<SessionState>,
    events: broadcast::Sender<SessionState>,
    info: Arc<Mutex<SessionInfo>>,
    tls: Option<crate::tls::TlsClient>,
    in_flight: VecDeque<InFlight>,
    /// Auth replies expected, in order; `None` for credentials replayed on reconnection.
    auth_waiters: VecDeque<Option<oneshot::Sender<Result<()>>>>,
    /// Accept read-only servers (`canBeReadOnly`).
    can_be_read_only: bool,
    /// The current connection is to a read-only server.
    read_only: bool,
    /// A read-write server has accepted this session (`seenRwServerBefore`): until then a
    /// reconnection starts a new session, since a read-only server's sessions are its own.
    seen_read_write: bool,
}

/// Runs a session until it ends. Spawned by [`crate::Client::connect`].
pub(crate) async fn run(parts: DriverParts) {
    let span = tracing::info_span!("session", id = tracing::field::Empty);
    let driver = Driver {
        hosts: parts.hosts,
        next_host: 0,
        chroot: parts.chroot,
        requested_timeout_ms: parts.requested_timeout_ms,
        session_id: 0,
        password: vec![0; proto::limits::SESSION_PASSWORD_LEN],
        timeout_ms: parts.requested_timeout_ms,
        last_zxid: 0,
        next_xid: 1,
        auth: parts.auth,
        watches: WatchRegistry::default(),
        commands: parts.commands,
        close: parts.close,
        closer: None,
        state: parts.state,
        events: parts.events,
        info: parts.info,
        tls: parts.tls,
        in_flight: VecDeque::new(),
        auth_waiters: VecDeque::new(),
        can_be_read_only: parts.can_be_read_only,
        read_only: false,
        seen_read_write: false,
    };
    driver.run().instrument(span).await
}

impl Driver {
    async fn run(mut self) {
        loop {
            let ended = match self.connect().await {
                Ok((reader, writer)) => self.serve(reader, writer).await,
                Err(ended) => ended,
            };
            match ended {
                Ended::Lost(reason) => {
                    tracing::debug!(%reason, "connection lost; trying the next server");
                    self.fail_in_flight(ErrorCode::ConnectionLoss);
                    self.fail_queued(ErrorCode::ConnectionLoss);
                    self.set_state(SessionState::Disconnected);
                    self.watches.deliver_state(KeeperState::Disconnected);
                }
                Ended::Terminal(state) => {
                    self.finish(state);
                    return;
                }
            }
        }
    }

    /// Tries the servers in turn until one accepts the session (or says it expired).
    async fn connect(&mut self) -> std::result::Result<(FrameReader, FrameWriter), Ended> {
        let mut pause_ms = RECONNECT_PAUSE_MIN_MS;
        loop {
            for _ in 0..self.hosts.len() {
                let index = self.next_host % self.hosts.len();
                self.next_host = index + 1;
                let host = self.hosts[index].clone();
                let per_host = Duration::from_millis(
                    (self.timeout_ms.max(1000) / self.hosts.len() as i32) as u64,
                );
                // `ClientCnxn.primeConnection`: a session only a read-only server has seen
                // is not renewed elsewhere.
                let renew = self.seen_read_write || !self.can_be_read_only;
                let request = ConnectRequest {
                    protocol_version: 0,
                    last_zxid_seen: self.last_zxid,
                    timeout_ms: self.requested_timeout_ms,
                    session_id: if renew { self.session_id } else { 0 },
                    passwd: if renew {
                        self.password.clone()
                    } else {
                        vec![0; proto::limits::SESSION_PASSWORD_LEN]
                    },
                    read_only: Some(self.can_be_read_only),
                };
                let attempt = tokio::select! {
                    closer = self.close.recv() => {
                        self.closer = closer;
                        return Err(Ended::Terminal(SessionState::Closed));
                    }
                    attempt = timeout(per_host, handshake(&host, request, self.tls.as_ref())) => attempt,
                };
                match attempt {
                    Ok(Ok(Some((reader, writer, response)))) => {
                        self.accept(&host, response);
                        return Ok((reader, writer));
                    }
                    Ok(Ok(None)) => return Err(Ended::Terminal(SessionState::Expired)),
                    Ok(Err(e)) => tracing::debug!(%host, error = %e, "connect failed"),
                    Err(_) => tracing::debug!(%host, "connect timed out"),
                }
            }
            tokio::select! {
                closer = self.close.recv() => {
                    self.closer = closer;
                    return Err(Ended::Terminal(SessionState::Closed));
                }
                _ = tokio::time::sleep(Duration::from_millis(jittered(pause_ms))) => {}
            }
            pause_ms = (pause_ms * 2).min(RECONNECT_PAUSE_MAX_MS);
        }
    }

    fn accept(&mut self, host: &str, response: ConnectResponse) {
        let asked = self.seen_read_write || !self.can_be_read_only;
        let renewed = asked && self.session_id != 0 && self.session_id != response.session_id;
        self.read_only = response.read_only == Some(true);
        if self.read_only && !self.can_be_read_only {
            tracing::error!(%host, "a read-write client got connected to a read-only server");
        }
        self.seen_read_write |= !self.read_only;
        if renewed {
            // A server must not hand us a different session for our id; treat it as expiry of ours.
            tracing::warn!("server answered with a different session id");
        }
        self.session_id = response.session_id;
        self.password = response.passwd;
        self.timeout_ms = response.timeout_ms;
        tracing::Span::current().record("id", format_args!("0x{:x}", self.session_id));
        tracing::debug!(%host, timeout_ms = self.timeout_ms, "session connected");
        if let Ok(mut info) = self.info.lock() {
            info.session_id = self.session_id;
            info.password = self.password.clone();
            info.timeout_ms = self.timeout_ms;
            info.server = host.to_string();
            info.last_zxid = self.last_zxid;
        }
    }

    /// Serves one connection until it is lost or the session ends.
    async fn serve(&mut self, mut reader: FrameReader, writer: FrameWriter) -> Ended {
        let read_timeout = Duration::from_millis((self.timeout_ms as u64) * 2 / 3);
        let ping_interval = Duration::from_millis(self.timeout_ms as u64 / 3);
        if let Err(e) = self.prime(&writer).await {
            return Ended::Lost(format!("priming the connection: {e}"));
        }
        if self.read_only {
            self.set_state(SessionState::ConnectedReadOnly);
            self.watches.deliver_state(KeeperState::ConnectedReadOnly);
        } else {
            self.set_state(SessionState::Connected);
            self.watches.deliver_state(KeeperState::SyncConnected);
        }
        let mut probe = ReadWriteProbe::new(self.read_only, self.hosts.len(), self.next_host);
        let mut last_recv = Instant::now();
        let mut last_send = Instant::now();
        let mut closing: Option<(i32, Instant)> = None;
        loop {
            let accepting =
                closing.is_none() && self.in_flight.len() + self.auth_waiters.len() < IN_FLIGHT_MAX;
            let commands = self.commands.clone();
            let close_deadline = closing.map(|(_, deadline)| deadline);
            tokio::select! {
                frame = reader.next_frame() => {
                    last_recv = Instant::now();
                    match frame {
                        Ok(Some(frame)) => {
                            if let Some(ended) = self.on_frame(&frame, closing.map(|(x, _)| x)) {
                                return ended;
                            }
                        }
                        Ok(None) => return Ended::Lost("server closed the connection".into()),
                        Err(e) => return Ended::Lost(format!("read failed: {e}")),
                    }
                }
                _ = sleep_until(last_recv + read_timeout) => {
                    return Ended::Lost(format!("no answer for {read_timeout:?}"));
                }
                _ = sleep_until(last_send + ping_interval) => {
                    let ping = frame_of(|w| RequestHeader { xid: xid::PING, op_type: OpCode::Ping.code() }.encode(w));
                    if writer.send(ping).await.is_err() {
                        return Ended::Lost("write failed".into());
                    }
                    last_send = Instant::now();
                }
                command = commands.recv(), if accepting => {
                    match command {
                        Some(command) => {
                            if let Err(e) = self.submit(command, &writer).await {
                                return Ended::Lost(format!("write failed: {e}"));
                            }
                            last_send = Instant::now();
                        }
                        // Every client handle is gone: close the session as if asked to.
                        None => match self.send_close(&writer).await {
                            Some(x) => closing = Some((x, Instant::now() + read_timeout)),
                            None => return Ended::Terminal(SessionState::Closed),
                        },
                    }
                }
                closer = self.close.recv(), if closing.is_none() => {
                    self.closer = closer;
                    match self.send_close(&writer).await {
                        Some(x) => closing = Some((x, Instant::now() + read_timeout)),
                        None => return Ended::Terminal(SessionState::Closed),
                    }
                }
                // Read-only: is another server read-write again? Then go there.
                found = probe.next(&self.hosts, self.tls.is_some()), if probe.active() => {
                    if let Some(index) = found {
                        self.next_host = index;
                        return Ended::Lost(format!("{} serves read-write", self.hosts[index]));
                    }
                }
                // closeSession unanswered in time: the session is closed as far as we care.
                _ = sleep_until(close_deadline.unwrap_or(last_recv)), if close_deadline.is_some() => {
                    return Ended::Terminal(SessionState::Closed);
                }
            }
        }
    }

    /// Sends credentials and re-registers watches on a fresh connection, before any request.
    async fn prime(&mut self, writer: &FrameWriter) -> std::io::Result<()> {
        for (scheme, auth) in &self.auth {
            writer.send(auth_frame(scheme, auth)).await?;
            self.auth_waiters.push_back(None);
        }
        let paths = self.watches.paths();
        let chroot = self.chroot.clone();
        let last_zxid = self.last_zxid;
        let batches = set_watches_batches(&paths, &chroot, last_zxid, || self.take_xid());
        for (xid, op, frame) in batches {
            writer.send(frame).await?;
            self.in_flight.push_back(InFlight {
                xid,
                op,
                path: String::new(),
                watch: None,
                effect: None,
                reply: None,
            });
        }
        Ok(())
    }

    async fn submit(&mut self, command: Command, writer: &FrameWriter) -> std::io::Result<()> {
        match command {
            Command::Submit(submission) => {
                let xid = self.take_xid();
                let op = submission.request.op_code();
                let frame = frame_of(|w| {
                    RequestHeader {
                        xid,
                        op_type: op.code(),
                    }
                    .encode(w);
                    submission.request.encode_body(w);
                });
                self.in_flight.push_back(InFlight {
                    xid,
                    op,
                    path: submission.path,
                    watch: submission.watch,
                    effect: submission.effect,
                    reply: Some(submission.reply),
                });
                writer.send(frame).await
            }
            Command::AddAuth {
                scheme,
                auth,
                reply,
            } => {
                let frame = auth_frame(&scheme, &auth);
                // A set, as ClientCnxn's authInfo: adding the same credentials twice sends them
                // once per reconnection.
                if !self.auth.iter().any(|(s, a)| *s == scheme && *a == auth) {
                    self.auth.push((scheme, auth));
                }
                self.auth_waiters.push_back(Some(reply));
                writer.send(frame).await
            }
        }
    }

    /// Sends closeSession; returns its xid, or `None` if the connection is already gone.
    async fn send_close(&mut self, writer: &FrameWriter) -> Option<i32> {
        let xid = self.take_xid();
        let frame = frame_of(|w| {
            RequestHeader {
                xid,
                op_type: OpCode::CloseSession.code(),
            }
            .encode(w)
        });
        self.in_flight.push_back(InFlight {
            xid,
            op: OpCode::CloseSession,
            path: String::new(),
            watch: None,
            effect: None,
            reply: None,
        });
        writer.send(frame).await.ok().map(|_| xid)
    }

    fn take_xid(&mut self) -> i32 {
        let xid = self.next_xid;
        self.next_xid = if xid == i32::MAX { 1 } else { xid + 1 };
        xid
    }

    /// Handles one frame from the server; `Some` ends the connection.
    fn on_frame(&mut self, frame: &[u8], close_xid: Option<i32>) -> Option<Ended> {
        let mut r = Reader::new(frame);
        let header = match ReplyHeader::decode(&mut r) {
            Ok(h) => h,
            Err(e) => return Some(Ended::Lost(format!("undecodable reply header: {e}"))),
        };
        let body = r.rest();
        match header.xid {
            xid::NOTIFICATION => {
                match WatcherEvent::from_bytes(body) {
                    Ok(event) => self.on_notification(event, header.zxid),
                    Err(e) => return Some(Ended::Lost(format!("undecodable notification: {e}"))),
                }
                None
            }
            xid::PING => None,
            xid::AUTH => {
                let failed = header.err == ErrorCode::AuthFailed.code();
                let result = match header.err {
                    0 => Ok(()),
                    err => Err(Error::keeper(error_code_from_wire(err), "")),
                };
                if let Some(Some(waiter)) = self.auth_waiters.pop_front() {
                    let _ = waiter.send(result);
                }
                failed.then_some(Ended::Terminal(SessionState::AuthFailed))
            }
            reply_xid => {
                let Some(entry) = self.in_flight.pop_front() else {
                    return Some(Ended::Lost(format!(
                        "reply {reply_xid} with nothing in flight"
                    )));
                };
                if entry.xid != reply_xid {
                    let lost = format!("xid out of order: got {reply_xid}, expected {}", entry.xid);
                    self.in_flight.push_front(entry);
                    return Some(Ended::Lost(lost));
                }
                if header.zxid > 0 {
                    self.last_zxid = header.zxid;
                    if let Ok(mut info) = self.info.lock() {
                        info.last_zxid = header.zxid;
                    }
                }
                self.complete(entry, header.err, body);
                (close_xid == Some(reply_xid)).then_some(Ended::Terminal(SessionState::Closed))
            }
        }
    }

    fn on_notification(&mut self, event: WatcherEvent, zxid: i64) {
        let (Some(event_type), Some(state)) = (
            event_type_from_wire(event.event_type),
            keeper_state_from_wire(event.state),
        ) else {
            tracing::warn!(?event, "notification with an unknown type or state ignored");
            return;
        };
        let event = WatchedEvent {
            event_type,
            state,
            path: self.chroot.to_client(&event.path),
            zxid,
        };
        tracing::debug!(?event, "watch event");
        self.watches.deliver(&event);
    }

    /// Completes a request with its reply, registering its watch if it succeeded.
    fn complete(&mut self, entry: InFlight, err: i32, body: &[u8]) {
        let result = if err != 0 {
            Err(Error::keeper(error_code_from_wire(err), entry.path.clone()))
        } else {
            Response::decode(entry.op, body)
                .map_err(|_| Error::keeper(ErrorCode::MarshallingError, entry.path.clone()))
        };
        if err != 0 && entry.reply.is_none() {
            tracing::warn!(op = ?entry.op, err, "driver request failed");
        }
        if let Some(mut registration) = entry.watch {
            let register = match (&result, entry.op) {
                (Ok(_), OpCode::Exists) => {
                    registration.kind = WatchKind::Data;
                    true
                }
                (Err(e), OpCode::Exists) if e.code() == ErrorCode::NoNode => {
                    registration.kind = WatchKind::Exist;
                    true
                }
                (Ok(_), _) => true,
                (Err(_), _) => false,
            };
            if register {
                self.watches.register(registration);
            }
        }
        if let (Ok(_), Some(LocalEffect::RemoveWatches(path, watcher_type))) =
            (&result, entry.effect)
        {
            self.watches.remove(&path, watcher_type);
        }
        if let Some(reply) = entry.reply {
            let _ = reply.send(result);
        }
    }

    /// Fails every request in flight with `code`, oldest first.
    fn fail_in_flight(&mut self, code: ErrorCode) {
        for entry in self.in_flight.drain(..) {
            if let Some(reply) = entry.reply {
                let _ = reply.send(Err(Error::keeper(code, entry.path)));
            }
        }
        for waiter in self.auth_waiters.drain(..).flatten() {
            let _ = waiter.send(Err(Error::keeper(code, "")));
        }
    }

    /// Fails the requests accepted but not yet written, in order, as ZooKeeper's client fails
    /// its outgoing queue when a connection drops. Credentials among them are kept and sent on
    /// the next connection (as `ClientCnxn` keeps `authInfo`).
    fn fail_queued(&mut self, code: ErrorCode) {
        let queued = self.commands.take_queued();
        for command in &queued {
            if let Command::AddAuth { scheme, auth, .. } = command {
                if !self.auth.iter().any(|(s, a)| s == scheme && a == auth) {
                    self.auth.push((scheme.clone(), auth.clone()));
                }
            }
        }
        self.fail_commands(queued, code);
    }

    fn fail_commands(&mut self, commands: Vec<Command>, code: ErrorCode) {
        for command in commands {
            match command {
                Command::Submit(s) => {
                    let _ = s.reply.send(Err(Error::keeper(code, s.path)));
                }
                Command::AddAuth { reply, .. } => {
                    let _ = reply.send(Err(Error::keeper(code, "")));
                }
            }
        }
    }

    /// Ends the session: fails everything outstanding, tells every watch, publishes the state.
    fn finish(&mut self, state: SessionState) {
        let code = match state {
            SessionState::AuthFailed => ErrorCode::AuthFailed,
            _ => ErrorCode::SessionExpired,
        };
        tracing::debug!(?state, "session ended");
        self.fail_in_flight(code);
        // Refuse new requests, then fail those already queued.
        let queued = self.commands.close();
        self.fail_commands(queued, code);
        self.watches.end(state.keeper_state());
        self.set_state(state);
        if let Some(closer) = self.closer.take() {
            let _ = closer.send(());
        }
    }

    fn set_state(&self, state: SessionState) {
        if *self.state.borrow() != state {
            self.state.send_replace(state);
            let _ = self.events.send(state);
        }
    }
}

/// TCP connect and the ConnectRequest/ConnectResponse exchange. `Ok(None)` means the server
/// declared the session expired.
async fn handshake(
    host: &str,
    request: ConnectRequest,
    tls: Option<&crate::tls::TlsClient>,
) -> std::io::Result<Option<(FrameReader, FrameWriter, ConnectResponse)>> {
    let stream = TcpStream::connect(host).await?;
    let (mut reader, writer) = match tls {
        None => connection::split(stream),
        Some(tls) => {
            let _ = stream.set_nodelay(true);
            connection::split_tls(tls.connect(host, stream).await?)
        }
    };
    writer.send(frame_of(|w| request.encode(w))).await?;
    let frame = reader.next_frame().await?.ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "closed during handshake")
    })?;
    let response = ConnectResponse::from_bytes(&frame)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    if response.timeout_ms <= 0 {
        return Ok(None);
    }
    Ok(Some((reader, writer, response)))
}

/// While connected to a read-only server: asks the other servers in turn whether they serve
/// read-write (`isro`), waiting longer after each miss (ZooKeeper's `pingRwServer`). Over TLS
/// it stays quiet (the four-letter word would need a TLS handshake the Java client does not
/// make either); the client then finds a read-write server when the read-only one lets it go.
struct ReadWriteProbe {
    active: bool,
    wait_ms: u64,
    next_at: Instant,
    /// The next server to ask, as an index into the host list.
    cursor: usize,
    /// The server this connection is to.
    current: usize,
}

impl ReadWriteProbe {
    fn new(read_only: bool, hosts: usize, next_host: usize) -> ReadWriteProbe {
        let hosts = hosts.max(1);
        ReadWriteProbe {
            active: read_only && hosts > 1,
            wait_ms: crate::limits::READ_WRITE_PROBE_MIN_MS,
            next_at: Instant::now() + Duration::from_millis(crate::limits::READ_WRITE_PROBE_MIN_MS),
            cursor: next_host % hosts,
            current: (next_host + hosts - 1) % hosts,
        }
    }

    fn active(&self) -> bool {
        self.active
    }

    /// Waits for the next question, asks it; the index of a read-write server, if found.
    async fn next(&mut self, hosts: &[String], tls: bool) -> Option<usize> {
        if tls || hosts.len() < 2 {
            self.active = false;
            return None;
        }
        sleep_until(self.next_at).await;
        if self.cursor % hosts.len() == self.current {
            self.cursor += 1;
        }
        let index = self.cursor % hosts.len();
        self.cursor = index + 1;
        let limit = Duration::from_millis(crate::limits::READ_WRITE_PROBE_TIMEOUT_MS);
        let answer = timeout(limit, ask_isro(&hosts[index])).await;
        if matches!(&answer, Ok(Ok(word)) if word == "rw") {
            tracing::info!(host = %hosts[index], "found a read-write server");
            return Some(index);
        }
        self.wait_ms = (self.wait_ms * 2).min(crate::limits::READ_WRITE_PROBE_MAX_MS);
        self.next_at = Instant::now() + Duration::from_millis(self.wait_ms);
        None
    }
}

/// The answer of `host` to the four-letter word `isro` (`ro`, `rw` or `null`).
async fn ask_isro(host: &str) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = TcpStream::connect(host).await?;
    stream.write_all(b"isro").await?;
    let mut answer = [0u8; 16];
    let mut len = 0;
    while len < answer.len() {
        let n = stream.read(&mut answer[len..]).await?;
        if n == 0 {
            break;
        }
        len += n;
    }
    Ok(String::from_utf8_lossy(&answer[..len]).trim().to_string())
}

/// Encodes one frame: the length prefix, then whatever `body` writes.
fn frame_of(body: impl FnOnce(&mut Writer)) -> Vec<u8> {
    let mut w = Writer::new();
    w.write_i32(0);
    body(&mut w);
    let len = (w.len() - 4) as i32;
    w.patch_i32(0, len);
    w.into_inner()
}

fn auth_frame(scheme: &str, auth: &[u8]) -> Vec<u8> {
    frame_of(|w| {
        RequestHeader {
            xid: xid::AUTH,
            op_type: OpCode::Auth.code(),
        }
        .encode(w);
        AuthPacket {
            auth_type: 0,
            scheme: scheme.to_string(),
            auth: Some(auth.to_vec()),
        }
        .encode(w);
    })
}

/// Splits the armed watches into setWatches frames of at most
/// [`SET_WATCHES_BATCH_BYTES_MAX`] bytes of paths each (`ClientCnxn.primeConnection`: the
/// last path may overshoot a little). A batch with persistent watches uses setWatches2.
///
/// Each batch takes an ordinary xid from `next_xid`: the Java client builds the packet with
/// xid −8 but `ClientCnxnSocket` renumbers every packet but ping and auth as it sends it, so
/// on the wire (and in the captured vectors) setWatches carries the next ordinary xid.
pub(crate) fn set_watches_batches(
    paths: &WatchPaths,
    chroot: &Chroot,
    relative_zxid: i64,
    mut next_xid: impl FnMut() -> i32,
) -> Vec<(i32, OpCode, Vec<u8>)> {
    let mut queue: VecDeque<(usize, String)> = VecDeque::new();
    for (kind, list) in [
        (0, &paths.data),
        (1, &paths.exist),
        (2, &paths.child),
        (3, &paths.persistent),
        (4, &paths.recursive),
    ] {
        queue.extend(list.iter().map(|p| (kind, chroot.to_server(p))));
    }
    let mut frames = Vec::new();
    while !queue.is_empty() {
        let mut lists: [Vec<String>; 5] = Default::default();
        let mut bytes = 0;
        while bytes < SET_WATCHES_BATCH_BYTES_MAX {
            let Some((kind, path)) = queue.pop_front() else {
                break;
            };
            bytes += path.len();
            lists[kind].push(path);
        }
        let [data, exist, child, persistent, recursive] = lists;
        let op = if persistent.is_empty() && recursive.is_empty() {
            OpCode::SetWatches
        } else {
            OpCode::SetWatches2
        };
        let xid = next_xid();
        let frame = frame_of(|w| {
            RequestHeader {
                xid,
                op_type: op.code(),
            }
            .encode(w);
            if op == OpCode::SetWatches {
                SetWatches {
                    relative_zxid,
                    data_watches: data,
                    exist_watches: exist,
                    child_watches: child,
                }
                .encode(w)
            } else {
                SetWatches2 {
                    relative_zxid,
                    data_watches: data,
                    exist_watches: exist,
                    child_watches: child,
                    persistent_watches: persistent,
                    persistent_recursive_watches: recursive,
                }
                .encode(w)
            }
        });
        frames.push((xid, op, frame));
    }
    frames
}

/// `ms` plus up to half of it again, so clients that lost the same server do not all come back
/// in the same millisecond.
fn jittered(ms: u64) -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()));
    ms + nanos % (ms / 2 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_watches_batches_stay_under_128_kib_of_paths() {
        let long = |i: usize| format!("/{}{i:06}", "x".repeat(993));
        let paths = WatchPaths {
            data: (0..200).map(long).collect(),
            exist: vec!["/e".into()],
            child: vec![],
            persistent: vec![],
            recursive: vec!["/r".into()],
        };
        let mut xid = 10;
        let batches = set_watches_batches(&paths, &Chroot::default(), 42, || {
            xid += 1;
            xid
        });
        assert_eq!(batches.len(), 2, "200 KB of paths need two batches");
        let mut seen = 0;
        for (i, (xid, op, frame)) in batches.iter().enumerate() {
            let mut r = Reader::new(&frame[4..]);
            let header = RequestHeader::decode(&mut r).expect("header");
            assert_eq!(header.xid, *xid);
            assert_eq!(*xid, 11 + i as i32, "ordinary xids, in order");
            assert_eq!(header.op_type, op.code());
            let sw = SetWatches2::decode(&mut r).or_else(|_| {
                let mut r = Reader::new(&frame[12..]);
                SetWatches::decode(&mut r).map(|s| SetWatches2 {
                    relative_zxid: s.relative_zxid,
                    data_watches: s.data_watches,
                    exist_watches: s.exist_watches,
                    child_watches: s.child_watches,
                    ..Default::default()
                })
            });
            let sw = sw.expect("body");
            assert_eq!(sw.relative_zxid, 42);
            let bytes: usize = sw.data_watches.iter().map(String::len).sum();
            assert!(bytes < SET_WATCHES_BATCH_BYTES_MAX + 1000);
            seen += sw.data_watches.len()
                + sw.exist_watches.len()
                + sw.persistent_recursive_watches.len();
        }
        assert_eq!(seen, 202, "every watch sent exactly once");
        assert_eq!(batches[0].1, OpCode::SetWatches);
        assert_eq!(
            batches[1].1,
            OpCode::SetWatches2,
            "the batch with /r is setWatches2"
        );
    }
}
