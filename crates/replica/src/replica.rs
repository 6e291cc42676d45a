//! The ensemble: the tree, sessions, watches and connections of one server, and every request
//! processed in arrival order (DESIGN.md §3: "applies and reads on one task").
//!
//! The host hands in what connections send ([`ClientInput`]) and executes the [`Output`]s this
//! produces, in order: encoded frames for each connection, closes. Watch notifications for a
//! change are output before the reply that carries the change's zxid, so a client always sees
//! the event first, and replies leave in request order because one ensemble produces them.
//!
//! Standalone, writes follow prep → log → apply. [`Replica::commit`] hands each transaction to
//! the store and parks it; when the host reports it durable ([`Replica::on_durable`]) it is
//! applied and answered, in zxid order. A read from a session with anything still parked waits
//! behind it (FIFO per session); other reads are answered at once. An ensemble member goes
//! through Zab instead ([`crate::ensemble`]).

use crate::ensemble::Ensemble;
use crate::java_random::session_password;
use crate::local_sessions::LocalSessions;
use crate::read_only::ReadOnly;
use crate::replies::{connect_frame, event_frame, reply_frame, reply_frame_with};
use crate::sasl::SaslOutcome;
use crate::session_tracker::SessionTracker;
use crate::settings::Settings;
use crate::stats::{ConnStats, ServerStats};
use crate::store::Store;
use crate::watch_manager::{ConnId, Notification, WatchManager};
use crate::{Now, Output};
use proto::multi::{MultiOp, MultiResult};
use proto::op_code::xid;
use proto::request::Request;
use proto::response::Response;
use proto::txn::Txn;
use proto::watch::{AddWatchMode, KeeperState, WatcherType};
use proto::*;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use storage::Recovered;
use tree::{DataTree, Prep, PrepContext, Trigger, TxnOutcome};

/// What client connections tell the ensemble.
#[derive(Debug)]
pub enum ClientInput {
    Connect {
        conn: ConnId,
        peer: SocketAddr,
        request: ConnectRequest,
        /// Identities the host proved for the connection (a TLS client certificate's `x509`
        /// identity, maybe `super`), besides its address.
        tls_ids: Vec<Id>,
    },
    Request {
        conn: ConnId,
        xid: i32,
        op_type: i32,
        request: Result<Request, request::RequestError>,
        /// When the host read it ([`Now::mono_ms`]), for latencies.
        received_ms: u64,
    },
    Closed {
        conn: ConnId,
    },
    /// A SASL request (op 102): the host ran the exchange ([`crate::sasl`] says why there);
    /// this is what it came to.
    Sasl {
        conn: ConnId,
        xid: i32,
        outcome: SaslOutcome,
        received_ms: u64,
    },
}

/// A client's identities (its ip, certificate names, added auth), shared by the connection and
/// every request of it in flight: cloned per request, so a reference count, not a copy.
pub type AuthIds = std::sync::Arc<Vec<Id>>;

/// A client connection the ensemble knows about.
pub struct Conn {
    pub peer: SocketAddr,
    pub session_id: Option<i64>,
    pub auth_ids: AuthIds,
    pub stats: ConnStats,
    pub timeout_ms: u32,
}

/// What to do once a parked transaction is applied.
enum AfterApply {
    Nothing,
    Reply(ReplyTo),
    /// A new session's connect response (sent only once the session is durable).
    Connect {
        conn: ConnId,
        session_id: i64,
        timeout_ms: u32,
        read_only: Option<bool>,
    },
}

/// Work waiting for the log, in arrival order.
enum Parked {
    Txn {
        txn: Txn,
        after: AfterApply,
    },
    /// A read from a connection whose earlier writes are parked ahead of it.
    Read {
        conn: ConnId,
        xid: i32,
        request: Request,
        received_ms: u64,
    },
}

/// Where a write's reply goes once its transaction is applied.
pub(crate) struct ReplyTo {
    pub conn: ConnId,
    pub xid: i32,
    op: OpCode,
    pub(crate) received_ms: u64,
    /// For multi: the op code of each sub-request, to encode create vs create2 results.
    multi_ops: Vec<OpCode>,
    /// For sync: the path the reply echoes.
    sync_path: String,
}

impl ReplyTo {
    pub(crate) fn is_sync(&self) -> bool {
        self.op == OpCode::Sync
    }

    pub(crate) fn new(conn: ConnId, xid: i32, request: &Request, received_ms: u64) -> ReplyTo {
        let multi_ops = match request {
            Request::Multi(ops) => ops.iter().map(MultiOp::op_code).collect(),
            _ => Vec::new(),
        };
        let sync_path = match request {
            Request::Sync(r) => r.path.clone(),
            _ => String::new(),
        };
        ReplyTo {
            conn,
            xid,
            op: request.op_code(),
            received_ms,
            multi_ops,
            sync_path,
        }
    }
}

/// One server's state and decisions; see the module doc. `S` is the disk.
pub struct Replica<S: Store> {
    pub settings: Settings,
    pub tree: DataTree,
    pub(crate) prep: Prep,
    pub sessions: SessionTracker,
    /// Session → the connection it is attached to.
    pub(crate) session_conn: HashMap<i64, ConnId, tree::keyed_hasher::KeyedHasher>,
    pub watches: WatchManager,
    pub conns: HashMap<ConnId, Conn, tree::keyed_hasher::KeyedHasher>,
    pub stats: ServerStats,
    last_zxid: i64,
    /// The time of the input being processed.
    pub(crate) now: Now,
    next_container_check_ms: u64,
    pub store: S,
    /// Transactions handed to the log and not yet durable, and reads waiting behind them.
    /// Bounded by `globalOutstandingLimit` plus the server's own transactions per tick.
    parked: VecDeque<Parked>,
    /// Parked entries (writes and reads) per connection: a read from a connection with any
    /// entry parked waits its turn behind them, or it could overtake its own earlier read.
    parked_per_conn: HashMap<ConnId, usize, tree::keyed_hasher::KeyedHasher>,
    /// Set when the log cannot be written: the server stops (fail-stop, as ZooKeeper exits).
    pub fatal: Option<String>,
    pub startup: Startup,
    /// Set when this server is an ensemble member (`server.N` lines); None when standalone.
    pub ensemble: Option<Box<Ensemble>>,
    /// What the host is to do, in order; see [`Replica::take_outputs`].
    pub(crate) outputs: Vec<Output>,
    /// Sessions created here without Zab (`localSessionsEnabled`; [`crate::local_sessions`]).
    pub(crate) local_sessions: LocalSessions,
    /// Read-only mode ([`crate::read_only`]).
    pub(crate) read_only: ReadOnly,
}

/// What recovery did at start-up, for mntr.
#[derive(Debug, Clone, Copy, Default)]
pub struct Startup {
    pub txns_loaded: u64,
    pub load_ms: u64,
}

impl<S: Store> Replica<S> {
    /// A standalone ensemble of the recovered state; [`Replica::join_ensemble`] makes it a
    /// member. `now.mono_ms` is the host's clock, which starts near 0 at boot.
    pub fn new(
        settings: Settings,
        store: S,
        recovered: Recovered,
        load_ms: u64,
        now: Now,
    ) -> Replica<S> {
        let mut sessions = SessionTracker::new(settings.tick_time_ms, 0, now.wall_ms);
        // Sessions are replicated state: after a restart each lives until its timeout unless
        // its client reconnects, as in ZooKeeper.
        for (&session_id, &timeout_ms) in recovered.tree.sessions() {
            sessions.add(session_id, timeout_ms.max(0) as u32, now.mono_ms);
        }
        let last_zxid = recovered
            .last_zxid
            .max(recovered.tree.last_processed_zxid());
        let startup = Startup {
            txns_loaded: recovered.replayed,
            load_ms,
        };
        Replica {
            local_sessions: LocalSessions::new(settings.tick_time_ms),
            read_only: ReadOnly::default(),
            next_container_check_ms: now.mono_ms + settings.container_check_interval_ms,
            prep: Prep::with_quota_enforced(settings.enforce_quota),
            settings,
            tree: recovered.tree,
            sessions,
            session_conn: HashMap::default(),
            watches: WatchManager::default(),
            conns: HashMap::default(),
            stats: ServerStats::default(),
            last_zxid,
            now,
            store,
            parked: VecDeque::new(),
            parked_per_conn: HashMap::default(),
            fatal: None,
            startup,
            ensemble: None,
            outputs: Vec::new(),
        }
    }

    /// Makes this server an ensemble member driven by `ensemble`'s Zab core.
    pub fn join_ensemble(&mut self, now: Now, ensemble: Ensemble) {
        self.now = now;
        let me = ensemble.me;
        self.sessions = SessionTracker::new(self.settings.tick_time_ms, me as u8, now.wall_ms);
        for (&session_id, &timeout_ms) in self.tree.sessions() {
            self.sessions
                .add(session_id, timeout_ms.max(0) as u32, now.mono_ms);
        }
        self.ensemble = Some(Box::new(ensemble));
        self.run_zab();
    }

    /// Everything the host is to do after the inputs so far, in order.
    pub fn take_outputs(&mut self) -> Vec<Output> {
        let mut outputs = std::mem::take(&mut self.outputs);
        if let Some(ensemble) = self.ensemble.as_deref_mut() {
            outputs.append(&mut ensemble.outbox);
        }
        outputs
    }

    /// As [`Replica::take_outputs`], into `into` (which the host reuses).
    pub fn drain_outputs(&mut self, into: &mut Vec<Output>) {
        into.append(&mut self.outputs);
        if let Some(ensemble) = self.ensemble.as_deref_mut() {
            into.append(&mut ensemble.outbox);
        }
    }

    /// Replaces the whole tree (a snapshot from the leader); sessions follow the new tree.
    pub(crate) fn replace_tree(&mut self, tree: DataTree) {
        self.tree = tree;
        self.prep.reset();
        self.last_zxid = self.tree.last_processed_zxid();
        self.reset_session_expiry();
    }

    /// Every session of the tree, each with a full timeout from now.
    pub(crate) fn reset_session_expiry(&mut self) {
        let now = self.now_ms();
        let known: Vec<(i64, i32)> = self.tree.sessions().iter().map(|(&s, &t)| (s, t)).collect();
        let tracked: Vec<i64> = self
            .sessions
            .buckets()
            .flat_map(|(_, set)| set.iter().copied())
            .collect();
        for s in tracked {
            self.sessions.remove(s);
        }
        for (s, t) in known {
            self.sessions.add(s, t.max(0) as u32, now);
        }
    }

    pub(crate) fn now_ms(&self) -> u64 {
        self.now.mono_ms
    }

    pub(crate) fn wall_ms(&self) -> i64 {
        self.now.wall_ms
    }

    pub fn last_zxid(&self) -> i64 {
        self.tree.last_processed_zxid()
    }

    /// One input from a client connection, at `now`.
    pub fn on_client(&mut self, now: Now, input: ClientInput) {
        self.now = now;
        match input {
            ClientInput::Connect {
                conn,
                peer,
                request,
                tls_ids,
            } => self.on_connect(conn, peer, request, tls_ids),
            ClientInput::Request {
                conn,
                xid,
                op_type,
                request,
                received_ms,
            } => self.on_request(conn, xid, op_type, request, received_ms),
            ClientInput::Closed { conn } => self.on_closed(conn),
            ClientInput::Sasl {
                conn,
                xid,
                outcome,
                received_ms,
            } => self.on_sasl(conn, xid, outcome, received_ms),
        }
    }

    pub(crate) fn send(&mut self, conn: ConnId, frame: Vec<u8>, is_reply: bool) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        self.outputs.push(Output::ToClient {
            conn,
            frame,
            is_reply,
        });
        if is_reply {
            c.stats.packets_sent += 1;
            self.stats.packets_sent += 1;
        }
    }

    pub(crate) fn close_conn(&mut self, conn: ConnId) {
        if self.conns.contains_key(&conn) {
            self.outputs.push(Output::CloseClient { conn });
        }
    }

    // ---- handshake ------------------------------------------------------------------------

    fn on_connect(
        &mut self,
        conn: ConnId,
        peer: SocketAddr,
        req: ConnectRequest,
        tls_ids: Vec<Id>,
    ) {
        let ip_id = Id {
            scheme: "ip".into(),
            id: peer.ip().to_string().into(),
        };
        let c = Conn {
            peer,
            session_id: None,
            auth_ids: AuthIds::new(std::iter::once(ip_id).chain(tls_ids).collect()),
            stats: ConnStats::new(self.now.mono_ms, self.now.wall_ms),
            timeout_ms: 0,
        };
        self.conns.insert(conn, c);
        if self.read_only.is_active() {
            self.read_only_connect(conn, peer, req);
            return;
        }
        if let Some(ensemble) = self.ensemble.as_deref() {
            if !ensemble.serving {
                let role = ensemble.role_name();
                if self.hold_connect(conn, peer, req) {
                    tracing::debug!(conn, %peer, role, "holding a handshake until a leader is established");
                } else {
                    tracing::info!(conn, %peer, role, "refusing a client: this server has had no leader for longer than the hold");
                    self.close_conn(conn);
                }
                return;
            }
        }
        self.admit(conn, peer, req);
    }

    /// Answers a handshake on a serving server (or a standalone one).
    pub(crate) fn admit(&mut self, conn: ConnId, peer: SocketAddr, req: ConnectRequest) {
        if req.last_zxid_seen > self.last_zxid() && self.saw_lost_writes(req.last_zxid_seen) {
            tracing::warn!(conn, %peer, session = format!("0x{:x}", req.session_id), client_zxid = format!("0x{:x}", req.last_zxid_seen), our_zxid = format!("0x{:x}", self.last_zxid()),
                "diskless: the client saw writes of an earlier epoch that this established ensemble does not hold (lost when every server that had them crashed); its session is expired");
            self.reply_expired(conn, req.read_only);
            // Only the session's own client (it knows the password) may end it this way.
            if req.session_id != 0 && req.passwd == session_password(req.session_id) {
                self.end_session(req.session_id);
            }
            return;
        }
        if self.refuse_client_ahead(conn, peer, &req) {
            return;
        }
        let timeout_ms = self.negotiate_timeout(req.timeout_ms);
        if req.session_id == 0 {
            if self.local_sessions_on() {
                self.create_local_session(conn, timeout_ms, req.read_only);
            } else if self.ensemble.is_some() {
                self.ensemble_create_session(conn, timeout_ms, req.read_only);
            } else {
                self.create_session(conn, timeout_ms, req.read_only);
            }
        } else {
            self.reattach_session(conn, req, timeout_ms);
        }
    }

    /// The session timeout a client asking for `requested_ms` gets: clamped to
    /// [minSessionTimeout, maxSessionTimeout].
    /// A client that has seen a newer zxid than this server is refused (ZooKeeper closes the
    /// connection; the client tries another server). Returns whether it was.
    pub(crate) fn refuse_client_ahead(
        &mut self,
        conn: ConnId,
        peer: std::net::SocketAddr,
        req: &ConnectRequest,
    ) -> bool {
        if req.last_zxid_seen <= self.last_zxid() {
            return false;
        }
        tracing::info!(conn, %peer, client_zxid = format!("0x{:x}", req.last_zxid_seen), our_zxid = format!("0x{:x}", self.last_zxid()),
            "refusing session: client has seen a newer zxid than this server");
        self.close_conn(conn);
        true
    }

    pub(crate) fn negotiate_timeout(&self, requested_ms: i32) -> u32 {
        let (min, max) = (
            self.settings.min_session_timeout_ms,
            self.settings.max_session_timeout_ms,
        );
        (requested_ms.max(0) as u32).clamp(min, max.max(min))
    }

    /// Diskless (DESIGN.md §5): a serving member of epoch e holds every write of earlier epochs
    /// that survived. A client that saw a newer zxid of an earlier epoch saw writes that were
    /// lost with every server that held them; no server will ever catch up to it, so refusing
    /// it (as for a lagging server) would lock it out for good. Its session ends instead, so the
    /// application sees SessionExpired and starts over.
    fn saw_lost_writes(&self, client_zxid: i64) -> bool {
        let Some(ensemble) = self.ensemble.as_deref() else {
            return false;
        };
        self.store.is_diskless()
            && ensemble.zab.is_serving()
            && zab::Zxid::from_i64(client_zxid).epoch() < ensemble.zab.current_epoch()
    }

    fn create_session(&mut self, conn: ConnId, timeout_ms: u32, read_only: Option<bool>) {
        let session_id = self.sessions.next_session_id();
        let zxid = self.next_zxid();
        let ctx = self.system_context(session_id, zxid);
        let txn = self.prep.prepare_create_session(&ctx, timeout_ms as i32);
        self.sessions.add(session_id, timeout_ms, self.now_ms());
        self.commit(
            txn,
            AfterApply::Connect {
                conn,
                session_id,
                timeout_ms,
                read_only,
            },
        );
        tracing::debug!(
            conn,
            session = format!("0x{session_id:x}"),
            timeout_ms,
            "established new session"
        );
    }

    fn reattach_session(&mut self, conn: ConnId, req: ConnectRequest, timeout_ms: u32) {
        let session_id = req.session_id;
        // A local session is this server's to judge, not the leader's.
        if self.ensemble.is_some() && self.reattach_local(conn, &req, timeout_ms) {
            return;
        }
        // In an ensemble the leader decides whether the session lives (this server may not
        // have applied its creation yet).
        let known = self.ensemble.is_some() || self.tree.sessions().contains_key(&session_id);
        if !known || req.passwd != session_password(session_id) {
            tracing::info!(
                conn,
                session = format!("0x{session_id:x}"),
                known,
                "invalid session or password: replying expired"
            );
            self.reply_expired(conn, req.read_only);
            return;
        }
        if self.ensemble.is_some() {
            self.ensemble_reattach(conn, session_id, timeout_ms, req.read_only);
            return;
        }
        self.sessions.set_timeout(session_id, timeout_ms);
        self.sessions.touch(session_id, self.now_ms());
        self.attach_moved(conn, session_id, timeout_ms, req.read_only);
    }

    /// The connect response for a session that does not exist (any more), then close.
    pub(crate) fn reply_expired(&mut self, conn: ConnId, read_only: Option<bool>) {
        let expired = ConnectResponse {
            protocol_version: 0,
            timeout_ms: 0,
            session_id: 0,
            passwd: vec![0; 16],
            read_only: read_only.map(|_| self.serving_read_only()),
        };
        self.send(conn, connect_frame(&expired), false);
        self.close_conn(conn);
    }

    /// Attaches an existing session to `conn`, closing the connection it was attached to.
    pub(crate) fn attach_moved(
        &mut self,
        conn: ConnId,
        session_id: i64,
        timeout_ms: u32,
        read_only: Option<bool>,
    ) {
        if let Some(old) = self.session_conn.get(&session_id).copied() {
            if old != conn {
                tracing::info!(
                    old,
                    new = conn,
                    session = format!("0x{session_id:x}"),
                    "session moved to a new connection; closing the old one"
                );
                self.detach(old);
                self.close_conn(old);
            }
        }
        self.attach(conn, session_id, timeout_ms, read_only);
    }

    pub(crate) fn attach(
        &mut self,
        conn: ConnId,
        session_id: i64,
        timeout_ms: u32,
        read_only: Option<bool>,
    ) {
        self.session_conn.insert(session_id, conn);
        if let Some(c) = self.conns.get_mut(&conn) {
            c.session_id = Some(session_id);
            c.timeout_ms = timeout_ms;
        }
        let response = ConnectResponse {
            protocol_version: 0,
            timeout_ms: timeout_ms as i32,
            session_id,
            passwd: session_password(session_id).to_vec(),
            read_only: read_only.map(|_| self.serving_read_only()),
        };
        self.send(conn, connect_frame(&response), false);
    }

    /// Forgets a connection's link to its session and its watches (the session lives on).
    fn detach(&mut self, conn: ConnId) {
        self.watches.remove_connection(conn);
        if let Some(c) = self.conns.get_mut(&conn) {
            if let Some(session_id) = c.session_id.take() {
                if self.session_conn.get(&session_id) == Some(&conn) {
                    self.session_conn.remove(&session_id);
                }
            }
        }
    }

    fn on_closed(&mut self, conn: ConnId) {
        self.detach(conn);
        self.conns.remove(&conn);
        if let Some(ensemble) = self.ensemble.as_deref_mut() {
            ensemble.remove_queue(conn);
        }
    }

    // ---- requests -------------------------------------------------------------------------

    fn on_request(
        &mut self,
        conn: ConnId,
        xid: i32,
        op_type: i32,
        request: Result<Request, request::RequestError>,
        received_ms: u64,
    ) {
        let Some(session_id) = self.note_packet(conn, xid, op_type) else {
            return;
        };
        // `enforce.auth.*`: before anything but auth is looked at, as in ZooKeeper's
        // `processPacket` (an unknown or malformed request is refused the same way).
        if op_type != OpCode::Auth.code() && !self.enforce_auth(conn, xid, received_ms) {
            return;
        }
        let zxid = self.last_zxid();
        let request = match request {
            Ok(r) => r,
            Err(request::RequestError::UnknownOpCode(code)) => {
                tracing::warn!(conn, code, "unknown op code: replying Unimplemented");
                self.finish_reply(
                    conn,
                    xid,
                    zxid,
                    ErrorCode::Unimplemented.code(),
                    None,
                    received_ms,
                );
                return;
            }
            Err(e) => {
                tracing::warn!(conn, error = %e, "malformed request: closing connection");
                self.close_conn(conn);
                return;
            }
        };
        if !self.tree.sessions().contains_key(&session_id) && !self.is_local_session(session_id) {
            self.finish_reply(
                conn,
                xid,
                zxid,
                ErrorCode::SessionExpired.code(),
                None,
                received_ms,
            );
            return;
        }
        if self.read_only.is_active() {
            // Nothing waits on a read-only server: reads now, writes refused in handle_read.
            self.handle_read(conn, xid, request, received_ms);
            return;
        }
        if self.ensemble.is_some()
            && matches!(request, Request::CloseSession)
            && self.is_local_session(session_id)
        {
            // A local session's close is not replicated: answered here, in the connection's
            // turn behind its earlier writes (see `answer_write_here`).
            return self.ensemble_read(conn, xid, request, received_ms);
        }
        if self.ensemble.is_some() {
            if request.is_write() || matches!(request, Request::Sync(_)) {
                self.ensemble_write(conn, session_id, xid, request, received_ms);
            } else {
                self.ensemble_read(conn, xid, request, received_ms);
            }
        } else if request.is_write() {
            self.submit_write(conn, session_id, xid, request, received_ms);
        } else if self.parked_per_conn.contains_key(&conn) {
            *self.parked_per_conn.entry(conn).or_default() += 1;
            self.parked.push_back(Parked::Read {
                conn,
                xid,
                request,
                received_ms,
            });
        } else {
            self.handle_read(conn, xid, request, received_ms);
        }
    }

    /// Counts a request of `conn` and keeps its session alive; None (and the request's slot
    /// given back) when the connection has no session any more.
    pub(crate) fn note_packet(&mut self, conn: ConnId, xid: i32, op_type: i32) -> Option<i64> {
        let Some(session_id) = self.conns.get(&conn).and_then(|c| c.session_id) else {
            // The session ended and the connection is closing: nothing to answer.
            if self.conns.contains_key(&conn) {
                self.outputs.push(Output::Unanswered { conn });
            }
            return None;
        };
        self.stats.packets_received += 1;
        if self.is_local_session(session_id) {
            // Nobody else knows it: the leader is not told.
            self.touch_local(session_id);
        } else {
            self.sessions.touch(session_id, self.now_ms());
            self.note_session_activity(session_id);
        }
        if let Some(c) = self.conns.get_mut(&conn) {
            c.stats.packets_received += 1;
            c.stats.last_cxid = xid;
            c.stats.last_op = OpCode::from_i32(op_type).map_or("UNKN", OpCode::short_name);
        }
        Some(session_id)
    }

    pub(crate) fn finish_reply(
        &mut self,
        conn: ConnId,
        xid: i32,
        zxid: i64,
        err: i32,
        body: Option<&Response>,
        received_ms: u64,
    ) {
        self.send(conn, reply_frame(xid, zxid, err, body), true);
        self.record_latency(conn, xid, zxid, received_ms);
    }

    pub(crate) fn record_latency(&mut self, conn: ConnId, xid: i32, zxid: i64, received_ms: u64) {
        let ms = self.now.mono_ms.saturating_sub(received_ms);
        if xid != xid::PING && xid != xid::AUTH && xid != xid::SET_WATCHES {
            self.stats.latency.record(ms);
        }
        if let Some(c) = self.conns.get_mut(&conn) {
            c.stats.last_zxid = zxid;
            c.stats.last_latency_ms = ms;
            c.stats.last_response_wall_ms = self.now.wall_ms;
            c.stats.latency.record(ms);
        }
    }

    fn next_zxid(&mut self) -> i64 {
        self.last_zxid += 1;
        self.last_zxid
    }

    pub(crate) fn system_context(&self, session_id: i64, zxid: i64) -> PrepContext<'static> {
        PrepContext {
            session_id,
            cxid: 0,
            zxid,
            time_ms: self.wall_ms(),
            auth_ids: &[],
            extended_types_enabled: self.settings.extended_types_enabled,
            sasl_provider: self.settings.sasl_provider,
        }
    }

    fn submit_write(
        &mut self,
        conn: ConnId,
        session_id: i64,
        xid: i32,
        request: Request,
        received_ms: u64,
    ) {
        let zxid = self.next_zxid();
        let auth_ids = self.auth_ids(conn);
        let ctx = PrepContext {
            session_id,
            cxid: xid,
            zxid,
            time_ms: self.wall_ms(),
            auth_ids: &auth_ids,
            extended_types_enabled: self.settings.extended_types_enabled,
            sasl_provider: self.settings.sasl_provider,
        };
        let txn = self.prep.prepare(&self.tree, &ctx, &request);
        let reply = ReplyTo::new(conn, xid, &request, received_ms);
        self.commit(txn, AfterApply::Reply(reply));
    }

    /// The point where a prepared transaction becomes part of the history: it goes to the log
    /// and waits there until [`Replica<S>::on_durable`] says it is safe to apply and answer.
    fn commit(&mut self, txn: Txn, after: AfterApply) {
        if self.fatal.is_some() {
            return;
        }
        if let Err(e) = self.store.append(&txn) {
            self.fail(format!("cannot append to the transaction log: {e}"));
            return;
        }
        if let AfterApply::Reply(r) = &after {
            *self.parked_per_conn.entry(r.conn).or_default() += 1;
        }
        self.parked.push_back(Parked::Txn { txn, after });
    }

    /// Stops serving: the log is the promise, and it can no longer be kept.
    pub fn fail(&mut self, why: String) {
        if self.fatal.is_none() {
            tracing::error!(reason = %why, "fatal storage error: this server stops now; restart it once the disk is fixed (recovery keeps every acknowledged write)");
            self.fatal = Some(why);
        }
    }

    /// Persistence says every transaction up to `zxid` is durable: apply and answer them, and
    /// the reads that waited behind them, in order.
    pub fn on_durable(&mut self, now: Now, zxid: i64) {
        self.now = now;
        while let Some(front) = self.parked.front() {
            match front {
                Parked::Txn { txn, .. } if txn.header.zxid > zxid => break,
                _ => {}
            }
            match self.parked.pop_front() {
                Some(Parked::Txn { txn, after }) => self.apply_committed(txn, after),
                Some(Parked::Read {
                    conn,
                    xid,
                    request,
                    received_ms,
                }) => {
                    self.unpark(conn);
                    // A read of a connection that closed meanwhile is dropped: running it
                    // could register a watch for a connection that no longer exists.
                    if self.conns.contains_key(&conn) {
                        self.handle_read(conn, xid, request, received_ms);
                    }
                }
                None => break,
            }
        }
    }

    fn apply_committed(&mut self, txn: Txn, after: AfterApply) {
        let reply = match after {
            AfterApply::Nothing => None,
            AfterApply::Reply(reply) => {
                self.unpark(reply.conn);
                Some(reply)
            }
            AfterApply::Connect {
                conn,
                session_id,
                timeout_ms,
                read_only,
            } => {
                self.apply(txn, None);
                if self.conns.contains_key(&conn) {
                    self.attach(conn, session_id, timeout_ms, read_only);
                }
                return;
            }
        };
        self.apply(txn, reply);
    }

    /// One parked entry of `conn` left the queue.
    fn unpark(&mut self, conn: ConnId) {
        if let Some(n) = self.parked_per_conn.get_mut(&conn) {
            *n -= 1;
            if *n == 0 {
                self.parked_per_conn.remove(&conn);
            }
        }
    }

    pub(crate) fn apply(&mut self, txn: Txn, reply: Option<ReplyTo>) {
        let zxid = txn.header.zxid;
        let mut triggers = Vec::new();
        let outcome = self.tree.apply(&txn, &mut triggers);
        if matches!(outcome, TxnOutcome::SessionCreated) {
            self.session_committed(txn.header.client_id);
        }
        self.prep.applied(zxid);
        self.store.applied(&self.tree, &txn);
        #[allow(unused_mut)]
        let mut reply_first = false;
        #[cfg(feature = "planted-bugs")]
        if self.settings.bug(crate::planted::HostBug::ReplyBeforeEvent) {
            reply_first = true;
        }
        // Events first: a client must see the event before any reply that reflects the change.
        if !reply_first {
            self.notify(&triggers, zxid);
        }
        let session_closed = matches!(outcome, TxnOutcome::SessionClosed);
        if let Some(reply) = reply {
            self.reply_write(reply, zxid, outcome);
        }
        if reply_first {
            self.notify(&triggers, zxid);
        }
        // After the reply: closing queues the connection's end behind it.
        if session_closed {
            self.on_session_closed(txn.header.client_id);
        }
    }

    /// Queues the watch events of applied changes. A connection hears of a change only if it
    /// may read the node concerned (ZooKeeper's `ServerCnxn.process` checks READ).
    fn notify(&mut self, triggers: &[Trigger], zxid: i64) {
        let mut notifications: Vec<Notification> = Vec::new();
        for t in triggers {
            let mut fired = Vec::new();
            self.watches.trigger(t, &mut fired);
            let may_read = |n: &Notification| {
                self.conns.get(&n.conn).is_some_and(|c| {
                    tree::acl::check_acl(t.acl(), proto::watch::perms::READ, &c.auth_ids).is_ok()
                })
            };
            notifications.extend(fired.into_iter().filter(may_read));
        }
        // By connection, in one order every run (each connection's own events keep theirs):
        // the watch tables are hash maps, and the simulator replays from a seed.
        notifications.sort_by_key(|n| n.conn);
        for n in notifications {
            let event = WatcherEvent {
                event_type: n.event as i32,
                state: KeeperState::SyncConnected as i32,
                path: n.path,
            };
            self.send(n.conn, event_frame(zxid, &event), false);
        }
    }

    fn reply_write(&mut self, reply: ReplyTo, zxid: i64, outcome: TxnOutcome) {
        let (err, body) = match outcome {
            // An ensemble's sync is a no-op transaction; its answer echoes the path.
            TxnOutcome::Error(ErrorCode::Ok) if reply.op == OpCode::Sync => {
                (0, Some(Response::Sync(reply.sync_path.clone())))
            }
            TxnOutcome::Error(code) => (code.code(), None),
            TxnOutcome::Created { path, stat } => match reply.op {
                OpCode::Create => (0, Some(Response::Create(path))),
                _ => (0, Some(Response::Create2(Create2Response { path, stat }))),
            },
            // A reconfiguration answers with the new configuration, as getData would.
            TxnOutcome::Updated(stat) if reply.op == OpCode::Reconfig => {
                let data = self
                    .tree
                    .get(zab::membership::CONFIG_NODE)
                    .and_then(|n| n.data_vec());
                (
                    0,
                    Some(Response::GetData(proto::records::GetDataResponse {
                        data,
                        stat,
                    })),
                )
            }
            TxnOutcome::Updated(stat) => (0, Some(Response::Stat(stat))),
            TxnOutcome::Multi(results) => (
                0,
                Some(Response::Multi(multi_results(results, &reply.multi_ops))),
            ),
            TxnOutcome::Deleted
            | TxnOutcome::Checked
            | TxnOutcome::SessionCreated
            | TxnOutcome::SessionClosed => (0, None),
        };
        self.finish_reply(
            reply.conn,
            reply.xid,
            zxid,
            err,
            body.as_ref(),
            reply.received_ms,
        );
        if reply.op == OpCode::CloseSession {
            self.close_conn(reply.conn);
        }
    }

    pub(crate) fn on_session_closed(&mut self, session_id: i64) {
        self.sessions.remove(session_id);
        if let Some(conn) = self.session_conn.remove(&session_id) {
            if let Some(c) = self.conns.get_mut(&conn) {
                c.session_id = None;
            }
            self.watches.remove_connection(conn);
            self.close_conn(conn);
        }
    }

    // ---- reads ----------------------------------------------------------------------------

    pub(crate) fn handle_read(
        &mut self,
        conn: ConnId,
        xid: i32,
        request: Request,
        received_ms: u64,
    ) {
        let refused_sync = matches!(request, Request::Sync(_)) && self.serving_read_only();
        if request.is_write() || refused_sync {
            // Only writes this server answers itself come here (see `answer_write_here`); a
            // standalone server answers sync as a read.
            return self.answer_write_here(conn, xid, &request, received_ms);
        }
        let zxid = self.last_zxid();
        if let Request::Auth(packet) = &request {
            return self.handle_auth(conn, xid, packet, received_ms);
        }
        let frame = match crate::reads::execute(self, conn, xid, zxid, &request) {
            Ok(frame) => frame,
            Err(code) => reply_frame(xid, zxid, code.code(), None),
        };
        self.send(conn, frame, true);
        self.record_latency(conn, xid, zxid, received_ms);
    }

    /// auth (xid −4): digest adds `digest:user:hash` (and `super` when it matches the configured
    /// super digest); an unknown scheme fails and the connection is closed, as in ZooKeeper.
    fn handle_auth(&mut self, conn: ConnId, xid: i32, packet: &AuthPacket, received_ms: u64) {
        // ZooKeeper answers auth with zxid 0 (captured from 3.9.3).
        let zxid = 0;
        let credentials = packet
            .auth
            .as_deref()
            .map(String::from_utf8_lossy)
            .unwrap_or_default();
        let new_ids = match packet.scheme.as_str() {
            "digest" => {
                let digest = tree::acl::digest_id(&credentials);
                let mut ids = Vec::with_capacity(2);
                // ZooKeeper adds `super` first, then the digest identity.
                if self.settings.super_digest.as_deref() == Some(digest.as_str()) {
                    ids.push(Id {
                        scheme: "super".into(),
                        id: "".into(),
                    });
                }
                ids.push(Id {
                    scheme: "digest".into(),
                    id: digest.into(),
                });
                Some(ids)
            }
            "ip" => self.conns.get(&conn).map(|c| {
                vec![Id {
                    scheme: "ip".into(),
                    id: c.peer.ip().to_string().into(),
                }]
            }),
            _ => None,
        };
        match new_ids {
            Some(ids) => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    for id in ids {
                        if !c.auth_ids.contains(&id) {
                            std::sync::Arc::make_mut(&mut c.auth_ids).push(id);
                        }
                    }
                }
                self.finish_reply(conn, xid, zxid, 0, None, received_ms);
            }
            None => {
                tracing::warn!(conn, scheme = %packet.scheme, "authentication failed: unsupported scheme; closing connection");
                self.finish_reply(
                    conn,
                    xid,
                    zxid,
                    ErrorCode::AuthFailed.code(),
                    None,
                    received_ms,
                );
                self.close_conn(conn);
            }
        }
    }

    // ---- time -----------------------------------------------------------------------------

    /// Called every tick: expires sessions and, at the configured interval, removes empty
    /// containers and expired TTL nodes.
    pub fn tick(&mut self, now: Now) {
        self.now = now;
        let now = self.now_ms();
        if self.ensemble.is_none() {
            // Diskless standalone (an ensemble member does this every Zab tick).
            self.store.idle(&self.tree);
        }
        self.report_session_activity();
        self.expire_local_sessions();
        self.forget_owners_of_ended_sessions();
        self.check_read_only();
        self.check_hold_bound();
        if let Some(ensemble) = self.ensemble.as_deref() {
            #[cfg(feature = "planted-bugs")]
            if self
                .settings
                .bug(crate::planted::HostBug::LearnerExpiresSessions)
                && !ensemble.is_leader()
                && ensemble.serving
            {
                // It never hears from clients of other members, so their sessions look idle.
                for session_id in self.sessions.take_expired(now, 100) {
                    self.end_session(session_id);
                }
                return;
            }
            // Only an established leader expires sessions and removes containers.
            if ensemble.is_leader() && ensemble.serving {
                // Expiries wait on the tracker while the backlog is full: the leader's own
                // work is delayed, never refused.
                #[allow(unused_mut)]
                let mut room = self.backlog_room();
                #[cfg(feature = "planted-bugs")]
                if self
                    .settings
                    .bug(crate::planted::HostBug::ForgetRefusedExpiry)
                {
                    room = usize::MAX;
                }
                let expired = self
                    .sessions
                    .take_expired(now, crate::limits::EXPIRIES_PER_TICK_MAX.min(room));
                self.ensemble_expire(expired);
                if now >= self.next_container_check_ms {
                    self.next_container_check_ms =
                        now + self.settings.container_check_interval_ms.max(1);
                    self.check_containers();
                }
            }
            return;
        }
        for session_id in self
            .sessions
            .take_expired(now, crate::limits::EXPIRIES_PER_TICK_MAX)
        {
            tracing::info!(session = format!("0x{session_id:x}"), "expiring session");
            self.close_session(session_id);
        }
        if now >= self.next_container_check_ms {
            self.next_container_check_ms = now + self.settings.container_check_interval_ms.max(1);
            self.check_containers();
        }
    }

    fn close_session(&mut self, session_id: i64) {
        let zxid = self.next_zxid();
        let ctx = self.system_context(session_id, zxid);
        let txn = self.prep.prepare(&self.tree, &ctx, &Request::CloseSession);
        self.commit(txn, AfterApply::Nothing);
    }

    /// ZooKeeper's `ContainerManager`: empty containers that once had children, and empty TTL
    /// nodes unchanged for longer than their ttl, are deleted (at most maxPerMinute a minute).
    fn check_containers(&mut self) {
        let now_wall = self.wall_ms();
        let never_used_ms = self.settings.container_max_never_used_ms;
        let mut candidates = Vec::new();
        for p in self.tree.containers() {
            let Some(node) = self.tree.get(p) else {
                continue;
            };
            let idle = now_wall - node.stat.mtime;
            if node.children.is_empty()
                && (node.stat.cversion > 0 || (never_used_ms > 0 && idle > never_used_ms))
            {
                candidates.push(p.clone());
            }
        }
        for p in self.tree.ttls() {
            let Some(node) = self.tree.get(p) else {
                continue;
            };
            if let tree::node::NodeKind::Ttl(ttl) =
                tree::node::NodeKind::of_owner(node.stat.ephemeral_owner)
            {
                if node.children.is_empty() && ttl != 0 && now_wall - node.stat.mtime > ttl {
                    candidates.push(p.clone());
                }
            }
        }
        let per_check = (u64::from(self.settings.container_max_per_minute)
            * self.settings.container_check_interval_ms
            / 60_000)
            .max(1);
        for p in candidates.into_iter().take(per_check as usize) {
            if self.ensemble.is_some() {
                if self.backlog_room() > 0 {
                    self.submit_work(crate::ensemble::Work::DeleteContainer { path: p });
                }
                continue;
            }
            let zxid = self.next_zxid();
            let ctx = self.system_context(0, zxid);
            let txn = self.prep.prepare_delete_container(&self.tree, &ctx, &p);
            tracing::debug!(path = %p, "deleting empty container or expired TTL node");
            self.commit(txn, AfterApply::Nothing);
        }
    }

    // ---- helpers for reads and four-letter words -------------------------------------------

    pub(crate) fn register_watch(&mut self, conn: ConnId, path: &str, kind: WatchKind) {
        if self.watches.watches_of(conn) >= crate::limits::WATCHES_PER_CONNECTION_MAX {
            tracing::warn!(
                conn,
                "watch limit reached for connection; not registering more"
            );
            return;
        }
        match kind {
            WatchKind::Data => self.watches.add_data_watch(path, conn),
            WatchKind::Child => self.watches.add_child_watch(path, conn),
            WatchKind::Persistent(mode) => {
                self.watches
                    .add_persistent(path, conn, mode == AddWatchMode::PersistentRecursive)
            }
        }
    }

    /// The identities of `conn`'s client, shared: asked for on every request.
    pub(crate) fn auth_ids(&self, conn: ConnId) -> AuthIds {
        self.conns
            .get(&conn)
            .map(|c| c.auth_ids.clone())
            .unwrap_or_default()
    }

    pub(crate) fn session_of(&self, conn: ConnId) -> i64 {
        self.conns
            .get(&conn)
            .and_then(|c| c.session_id)
            .unwrap_or(0)
    }

    pub(crate) fn remove_watch(
        &mut self,
        conn: ConnId,
        path: &str,
        kind: WatcherType,
        remove: bool,
    ) -> bool {
        if remove {
            self.watches.remove(path, conn, kind)
        } else {
            self.watches.contains(path, conn, kind)
        }
    }

    pub(crate) fn queue_event(
        &mut self,
        conn: ConnId,
        zxid: i64,
        event: proto::watch::EventType,
        path: &str,
    ) {
        let event = WatcherEvent {
            event_type: event as i32,
            state: KeeperState::SyncConnected as i32,
            path: path.to_string(),
        };
        self.send(conn, event_frame(zxid, &event), false);
    }

    pub(crate) fn reply_with(
        &self,
        xid: i32,
        zxid: i64,
        body: impl FnOnce(&mut proto::jute::Writer),
    ) -> Vec<u8> {
        reply_frame_with(xid, zxid, 0, body)
    }

    pub fn uptime_ms(&self) -> u64 {
        self.now_ms()
    }

    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// Writes refused with QuotaExceeded by this server's prep, by top namespace
    /// (`quota_exceeded_error_per_namespace`).
    pub fn quota_exceeded_counts(&self) -> &std::collections::BTreeMap<String, u64> {
        self.prep.quota_exceeded_counts()
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum WatchKind {
    Data,
    Child,
    Persistent(AddWatchMode),
}

/// Converts a multi's outcomes to wire results: create answers with a path, create2 and its
/// kin with path and Stat.
fn multi_results(outcomes: Vec<TxnOutcome>, ops: &[OpCode]) -> Vec<MultiResult> {
    outcomes
        .into_iter()
        .enumerate()
        .map(|(i, outcome)| match outcome {
            TxnOutcome::Created { path, stat } => match ops.get(i) {
                Some(OpCode::Create) => MultiResult::Create(path),
                _ => MultiResult::Create2(path, stat),
            },
            TxnOutcome::Deleted => MultiResult::Delete,
            TxnOutcome::Updated(stat) => MultiResult::SetData(stat),
            TxnOutcome::Checked => MultiResult::Check,
            TxnOutcome::Error(code) => MultiResult::Error(code.code()),
            _ => MultiResult::Error(ErrorCode::SystemError.code()),
        })
        .collect()
}
