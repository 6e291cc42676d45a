//! The ensemble request path (the paper's Fig. 1): reads answered locally in session order,
//! writes and syncs forwarded to the leader, which prepares and proposes them; every member
//! answers its own clients when it applies their transactions.
//!
//! Sessions belong to the ensemble: a learner picks a new session's id (its server id in the
//! top byte) and the leader proposes it; a reconnecting client is revalidated by the leader,
//! which records the server as the session's owner, so a write still arriving through the old
//! server fails with SessionMoved as in ZooKeeper. The leader owns expiry; learners report
//! which sessions their clients touched.

use super::actions::send;
use super::codec::{self, PeerMessage};
use super::host_message::{Forwarded, HostMessage};
use super::state::{PendingConnect, Waiting, Work};
use crate::replica::{Replica, ReplyTo};
use crate::store::Store;
use crate::watch_manager::ConnId;
use crate::{Now, Output};
use proto::request::Request;
use proto::txn::{ErrorTxn, Txn, TxnBody, TxnHeader};
use proto::{ErrorCode, OpCode};
use std::sync::Arc;
use tree::PrepContext;
use zab::Sid;

impl<S: Store> Replica<S> {
    // ---- clients ---------------------------------------------------------------------------

    /// A client write (or sync) on an ensemble member: queue its reply, then propose it here
    /// or forward it to the leader; while this member has no leader, it waits in the queue
    /// (see [`super::hold`]).
    pub(crate) fn ensemble_write(
        &mut self,
        conn: ConnId,
        session_id: i64,
        xid: i32,
        request: Request,
        received_ms: u64,
    ) {
        let reply = ReplyTo::new(conn, xid, &request, received_ms);
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        let sent = ensemble.serving;
        let request = Arc::new(request);
        let to_send = sent.then(|| request.clone());
        ensemble.queue_of(conn).push_back(Waiting::Write {
            reply,
            request,
            sent,
        });
        if let Some(request) = to_send {
            self.send_write(conn, session_id, xid, request);
        }
    }

    /// Proposes a local client's write here, or forwards it to the leader.
    pub(crate) fn send_write(
        &mut self,
        conn: ConnId,
        session_id: i64,
        xid: i32,
        request: Arc<Request>,
    ) {
        // A local session's ephemeral: its upgrade goes first, on the same link.
        self.upgrade_if_needed(session_id, &request);
        let auth_ids = self.auth_ids(conn);
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        match ensemble.remote_leader() {
            Some(leader) => {
                ensemble.stats.forwarded += 1;
                let mut body = proto::Writer::new();
                request.encode_body(&mut body);
                let msg = HostMessage::Forward(Forwarded {
                    session_id,
                    xid,
                    op_type: request.op_code().code(),
                    body: body.into_inner(),
                    auth_ids: auth_ids.to_vec(),
                });
                send(ensemble, leader, &PeerMessage::Host(msg));
            }
            None => {
                let origin = ensemble.me();
                self.submit_work(Work::Client {
                    origin,
                    session_id,
                    xid,
                    request,
                    auth_ids,
                });
            }
        }
    }

    /// A read on an ensemble member: answered now unless a write of its connection is still
    /// unanswered, then in turn behind it.
    pub(crate) fn ensemble_read(
        &mut self,
        conn: ConnId,
        xid: i32,
        request: Request,
        received_ms: u64,
    ) {
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        // Without a leader this member may be cut off from the quorum: its reads wait, as
        // its writes do, except pings, which keep the client's connection alive through the
        // hold (clients match ping replies by their xid, never by order).
        let held = !ensemble.serving;
        if held && matches!(request, Request::Ping) {
            self.handle_read(conn, xid, request, received_ms);
            return;
        }
        if held || ensemble.queues.contains_key(&conn) {
            ensemble.queue_of(conn).push_back(Waiting::Read {
                xid,
                request,
                received_ms,
                held,
            });
            return;
        }
        self.handle_read(conn, xid, request, received_ms);
    }

    /// A learner remembers which sessions it served, for the leader's expiry.
    pub(crate) fn note_session_activity(&mut self, session_id: i64) {
        if let Some(ensemble) = self.ensemble() {
            if !ensemble.is_leader() {
                ensemble.touched.insert(session_id);
            }
        }
    }

    pub(crate) fn ensemble_create_session(
        &mut self,
        conn: ConnId,
        timeout_ms: u32,
        read_only: Option<bool>,
    ) {
        let session_id = self.sessions.next_session_id();
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        ensemble.connecting.insert(
            session_id,
            PendingConnect {
                conn,
                timeout_ms,
                read_only,
            },
        );
        self.send_create_session(session_id, timeout_ms);
    }

    /// Asks the leader (or, leading, proposes) to create a session of a local client.
    pub(crate) fn send_create_session(&mut self, session_id: i64, timeout_ms: u32) {
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        let timeout_ms = timeout_ms as i32;
        match ensemble.remote_leader() {
            Some(leader) => send(
                ensemble,
                leader,
                &PeerMessage::Host(HostMessage::CreateSession {
                    session_id,
                    timeout_ms,
                }),
            ),
            None => {
                let origin = ensemble.me();
                self.submit_work(Work::CreateSession {
                    origin,
                    session_id,
                    timeout_ms,
                });
            }
        }
    }

    /// A client reconnects with a session: the leader decides whether it lives.
    pub(crate) fn ensemble_reattach(
        &mut self,
        conn: ConnId,
        session_id: i64,
        timeout_ms: u32,
        read_only: Option<bool>,
    ) {
        let pending = PendingConnect {
            conn,
            timeout_ms,
            read_only,
        };
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        match ensemble.remote_leader() {
            Some(leader) => {
                if let Some(old) = ensemble.revalidating.insert(session_id, pending) {
                    // The client gave up on the earlier attempt and tried again.
                    self.close_conn(old.conn);
                }
                if let Some(ensemble) = self.ensemble() {
                    send(
                        ensemble,
                        leader,
                        &PeerMessage::Host(HostMessage::Revalidate {
                            session_id,
                            timeout_ms: timeout_ms as i32,
                        }),
                    );
                }
            }
            None => {
                let me = ensemble.me();
                let valid = self.revalidate(me, session_id, timeout_ms as i32);
                self.finish_reattach(pending, session_id, valid);
            }
        }
    }

    /// The leader's side of revalidation: alive sessions get a new owner and a touch.
    fn revalidate(&mut self, origin: Sid, session_id: i64, timeout_ms: i32) -> i32 {
        if !self.tree.sessions().contains_key(&session_id) {
            return 0;
        }
        let now = self.now_ms();
        self.sessions
            .set_timeout(session_id, timeout_ms.max(0) as u32);
        self.sessions.touch(session_id, now);
        if let Some(ensemble) = self.ensemble() {
            ensemble.owners.insert(session_id, origin);
        }
        timeout_ms.max(1)
    }

    fn finish_reattach(&mut self, pending: PendingConnect, session_id: i64, valid: i32) {
        if !self.conns.contains_key(&pending.conn) {
            return;
        }
        if valid > 0 {
            self.attach_moved(
                pending.conn,
                session_id,
                pending.timeout_ms,
                pending.read_only,
            );
        } else {
            tracing::info!(
                conn = pending.conn,
                session = format!("0x{session_id:x}"),
                "the leader does not know the session: replying expired"
            );
            self.reply_expired(pending.conn, pending.read_only);
        }
    }

    // ---- the leader --------------------------------------------------------------------------

    /// Proposes `work` now, or queues it behind earlier work while Zab's pipeline is full.
    /// When the backlog is full too, the work is refused, never dropped: whoever asked for it
    /// hears so ([`Replica::refuse_work`]).
    pub(crate) fn submit_work(&mut self, work: Work) {
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        if !ensemble.backlog.is_empty() || ensemble.zab.next_zxid().is_none() {
            if ensemble.backlog.len() >= ensemble.backlog_max {
                self.refuse_work(work);
                return;
            }
            ensemble.backlog.push_back(work);
            // Room may have opened since the backlog last drained.
            if !self.stall_planted() {
                self.drain_backlog();
            }
            return;
        }
        self.propose_work(work);
    }

    /// Work the leader's backlog has room for (the leader's own work waits for room rather
    /// than being refused).
    pub(crate) fn backlog_room(&self) -> usize {
        self.ensemble
            .as_deref()
            .map_or(0, |e| e.backlog_max.saturating_sub(e.backlog.len()))
    }

    /// The backlog is full: the request's client is told it was not executed (ZooKeeper's
    /// THROTTLEDOP; a connect is closed, and the client tries again), through its learner if
    /// it came from one. Later requests of the same client are still answered in order.
    fn refuse_work(&mut self, work: Work) {
        #[cfg(feature = "planted-bugs")]
        if self
            .settings
            .bug(crate::planted::HostBug::DropWhenBacklogFull)
        {
            return;
        }
        let backlog = self.ensemble.as_deref().map_or(0, |e| e.backlog.len());
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        let me = ensemble.me;
        let (origin, session_id, xid) = match work {
            Work::Client {
                origin,
                session_id,
                xid,
                ..
            } => (origin, session_id, xid),
            Work::CreateSession {
                origin, session_id, ..
            } => (origin, session_id, 0),
            Work::Expire { session_id } => {
                tracing::warn!(
                    session = format!("0x{session_id:x}"),
                    backlog,
                    "leader backlog full: the session's end waits for the next expiry check"
                );
                #[cfg(feature = "planted-bugs")]
                if self
                    .settings
                    .bug(crate::planted::HostBug::ForgetRefusedExpiry)
                {
                    return;
                }
                // Due again at once: the next check that finds room ends it.
                if let Some(&timeout) = self.tree.sessions().get(&session_id) {
                    let timeout_ms = timeout.max(0) as u32;
                    let due = self.now_ms().saturating_sub(u64::from(timeout_ms));
                    self.sessions.add(session_id, timeout_ms, due);
                }
                return;
            }
            Work::InitialConfig => {
                // The next leader (or this one, next establishment) writes it.
                tracing::warn!(
                    backlog,
                    "leader backlog full: the initial configuration waits"
                );
                return;
            }
            Work::DeleteContainer { path } => {
                tracing::debug!(%path, backlog, "leader backlog full: the container waits for the next check");
                return;
            }
        };
        tracing::warn!(
            session = format!("0x{session_id:x}"),
            xid,
            from = origin,
            backlog,
            "leader backlog full: refusing a request (THROTTLEDOP)"
        );

        if origin == me {
            self.on_throttled(session_id, xid);
        } else {
            let msg = HostMessage::Throttled { session_id, xid };
            send(ensemble, origin, &PeerMessage::Host(msg));
        }
    }

    /// The leader did not take a request of a local client: a connect is closed, a write
    /// answered THROTTLEDOP in its turn.
    fn on_throttled(&mut self, session_id: i64, xid: i32) {
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        if let Some(pending) = ensemble.connecting.remove(&session_id) {
            tracing::info!(
                conn = pending.conn,
                "closing a new connection: the leader is too busy to create its session"
            );
            self.close_conn(pending.conn);
            return;
        }
        let Some(conn) = self.session_conn.get(&session_id).copied() else {
            return;
        };
        let Some(queue) = self
            .ensemble
            .as_deref_mut()
            .and_then(|e| e.queues.get_mut(&conn))
        else {
            return;
        };
        let at = queue.iter().position(
            |w| matches!(w, Waiting::Write { reply, sent: true, .. } if reply.xid == xid),
        );
        if let Some(Waiting::Write { reply, .. }) = at.and_then(|i| queue.remove(i)) {
            queue.insert(at.unwrap_or(0), Waiting::Throttled(reply));
        }
        self.answer_waiting_reads(conn);
    }

    /// Planted bug `stall-after-abandoned-hand-over`: the drains that fixed it are skipped.
    fn stall_planted(&self) -> bool {
        #[cfg(feature = "planted-bugs")]
        if self
            .settings
            .bug(crate::planted::HostBug::StallAfterAbandonedHandOver)
        {
            return true;
        }
        false
    }

    /// Proposes waiting work while the pipeline has room.
    pub(crate) fn drain_backlog(&mut self) {
        loop {
            let Some(ensemble) = self.ensemble() else {
                return;
            };
            if ensemble.backlog.is_empty() || ensemble.zab.next_zxid().is_none() {
                return;
            }
            let Some(work) = ensemble.backlog.pop_front() else {
                return;
            };
            self.propose_work(work);
        }
    }

    fn propose_work(&mut self, work: Work) {
        let (now_ms, time_ms) = (self.now_ms(), self.wall_ms());
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        let Some(zxid) = ensemble.zab.next_zxid() else {
            ensemble.backlog.push_front(work);
            return;
        };
        let zxid = zxid.as_i64();
        let txn = match work {
            Work::Client {
                origin,
                session_id,
                xid,
                request,
                auth_ids,
            } => {
                let owner = *ensemble.owners.entry(session_id).or_insert(origin);
                if owner != origin {
                    tracing::info!(
                        session = format!("0x{session_id:x}"),
                        from = origin,
                        owner,
                        "write through a server the session has moved away from: SessionMoved"
                    );
                    error_txn(session_id, xid, zxid, time_ms, ErrorCode::SessionMoved)
                } else if matches!(*request, Request::Sync(_)) {
                    // sync is a no-op transaction through Zab: once this server applies it,
                    // it has applied every write committed before the sync was proposed.
                    error_txn(session_id, xid, zxid, time_ms, ErrorCode::Ok)
                } else if let Some(txn) = self.refuse_session_write(session_id, xid, zxid, &request)
                {
                    txn
                } else if let Request::Reconfig(request) = &*request {
                    self.prepare_reconfig(super::reconfig::ReconfigCall {
                        session_id,
                        xid,
                        zxid,
                        time_ms,
                        auth_ids: &auth_ids,
                        request,
                    })
                } else {
                    let ctx = PrepContext {
                        session_id,
                        cxid: xid,
                        zxid,
                        time_ms: self.wall_ms(),
                        auth_ids: &auth_ids,
                        extended_types_enabled: self.settings.extended_types_enabled,
                        sasl_provider: self.settings.sasl_provider,
                    };
                    self.prep.prepare(&self.tree, &ctx, &request)
                }
            }
            Work::CreateSession {
                origin,
                session_id,
                timeout_ms,
            } => {
                ensemble.owners.insert(session_id, origin);
                let ctx = self.system_context(session_id, zxid);
                self.prep.prepare_create_session(&ctx, timeout_ms)
            }
            Work::Expire { session_id } => {
                if !self.tree.sessions().contains_key(&session_id) {
                    return;
                }
                let ctx = self.system_context(session_id, zxid);
                self.prep.prepare(&self.tree, &ctx, &Request::CloseSession)
            }
            Work::DeleteContainer { path } => {
                let ctx = self.system_context(0, zxid);
                self.prep.prepare_delete_container(&self.tree, &ctx, &path)
            }
            Work::InitialConfig => self.prepare_initial_config(zxid, time_ms),
        };
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        if let Err(e) = ensemble.zab.propose(now_ms, txn, None) {
            // next_zxid said yes, so Zab disagreeing means this server is no longer leading.
            tracing::warn!(error = %e, "proposal refused");
            self.prep.reset();
        }
        self.run_zab();
    }

    /// The leader expires sessions; learners only report activity.
    /// Diskless: ends a session whose client saw lost writes (see `Replica<S>::saw_lost_writes`), on
    /// the leader, which proposes its close; a learner asks its leader to.
    pub(crate) fn end_session(&mut self, session_id: i64) {
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        if !ensemble.serving || !self.tree.sessions().contains_key(&session_id) {
            return;
        }
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        match ensemble.remote_leader() {
            Some(leader) => send(
                ensemble,
                leader,
                &PeerMessage::Host(HostMessage::EndSession { session_id }),
            ),
            None => {
                tracing::info!(
                    session = format!("0x{session_id:x}"),
                    "ending a session whose client saw lost writes"
                );
                self.submit_work(Work::Expire { session_id });
            }
        }
    }

    /// The leader's expiry: `expired` came off the tracker within the backlog's room.
    pub(crate) fn ensemble_expire(&mut self, expired: Vec<i64>) {
        for session_id in expired {
            tracing::info!(session = format!("0x{session_id:x}"), "expiring session");
            self.submit_work(Work::Expire { session_id });
        }
    }

    // ---- peers -------------------------------------------------------------------------------

    /// A connection to `peer` is up (nothing to do until it speaks).
    pub fn on_peer_up(&mut self, now: Now, peer: Sid) {
        self.now = now;
        tracing::debug!(peer, "peer connected");
    }

    /// The connection to `peer` broke; nothing more comes from it.
    pub fn on_peer_down(&mut self, now: Now, peer: Sid) {
        self.now = now;
        if self.ensemble.is_none() {
            return;
        }
        tracing::debug!(peer, "peer disconnected");
        self.forget_work_of(peer);
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        ensemble.zab.handle_peer_disconnected(now.mono_ms, peer);
        self.run_zab();
    }

    /// One frame from `peer`, in the order the peer sent it.
    pub fn on_peer_frame(&mut self, now: Now, peer: Sid, frame: &[u8]) {
        self.now = now;
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        let refused = match codec::decode(frame) {
            Ok(PeerMessage::Zab(zab::Message::Snap { zxid, image })) => {
                match check_snapshot(zxid, &image) {
                    Ok(()) => {
                        let msg = zab::Message::Snap { zxid, image };
                        ensemble.zab.handle_message(now.mono_ms, peer, msg);
                        None
                    }
                    Err(why) => Some(why),
                }
            }
            Ok(PeerMessage::Zab(msg)) => {
                ensemble.zab.handle_message(now.mono_ms, peer, msg);
                None
            }
            Ok(PeerMessage::Host(msg)) => {
                self.on_host_message(peer, msg);
                None
            }
            Err(e) => Some(format!("an undecodable frame: {e}")),
        };
        if let Some(why) = refused {
            tracing::warn!(peer, %why, "breaking the connection to a peer that sent a bad frame; it syncs again");
            if let Some(ensemble) = self.ensemble() {
                ensemble.outbox.push(Output::DisconnectPeer { peer });
                ensemble.zab.handle_peer_disconnected(now.mono_ms, peer);
            }
        }
        self.run_zab();
    }

    fn on_host_message(&mut self, peer: Sid, msg: HostMessage) {
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        let leading = ensemble.is_leader() && ensemble.serving;
        let from_leader = ensemble.zab.leader() == Some(peer);
        match msg {
            HostMessage::Forward(f) if leading => match Request::decode(f.op_type, &f.body) {
                Ok(request) if request.is_write() || matches!(request, Request::Sync(_)) => self
                    .submit_work(Work::Client {
                        origin: peer,
                        session_id: f.session_id,
                        xid: f.xid,
                        request: Arc::new(request),
                        auth_ids: crate::replica::AuthIds::new(f.auth_ids),
                    }),
                Ok(_) => {
                    tracing::warn!(peer, op = f.op_type, "a peer forwarded a read; ignoring it")
                }
                Err(e) => {
                    tracing::warn!(peer, error = %e, "a peer forwarded an undecodable request; ignoring it")
                }
            },
            HostMessage::CreateSession {
                session_id,
                timeout_ms,
            } if leading => self.submit_work(Work::CreateSession {
                origin: peer,
                session_id,
                timeout_ms,
            }),
            HostMessage::Touch { sessions } if leading => {
                let now = self.now_ms();
                for s in sessions {
                    self.sessions.touch(s, now);
                }
            }
            HostMessage::Revalidate {
                session_id,
                timeout_ms,
            } if leading => {
                let timeout_ms = self.revalidate(peer, session_id, timeout_ms);
                if let Some(ensemble) = self.ensemble() {
                    let reply = HostMessage::Revalidated {
                        session_id,
                        timeout_ms,
                    };
                    send(ensemble, peer, &PeerMessage::Host(reply));
                }
            }
            HostMessage::Revalidated {
                session_id,
                timeout_ms,
            } if from_leader => {
                if let Some(pending) = ensemble.revalidating.remove(&session_id) {
                    self.finish_reattach(pending, session_id, timeout_ms);
                }
            }
            HostMessage::DigestAt { zxid, digest } if from_leader => {
                self.on_digest_at(zxid, digest)
            }
            HostMessage::EndSession { session_id } if leading => self.end_session(session_id),
            HostMessage::Throttled { session_id, xid } if from_leader => {
                self.on_throttled(session_id, xid)
            }
            other => tracing::debug!(
                peer,
                kind = other.kind(),
                role = ensemble.role_name(),
                "ignoring a peer message this server's role does not take"
            ),
        }
    }

    /// Zab's timers (election re-sends, pings, limits): the host calls this every few
    /// milliseconds on an ensemble member.
    pub fn zab_tick(&mut self, now: Now) {
        self.now = now;
        // Diskless: what the newest snapshot lacks stays in memory for the failure checkpoint.
        let on_disk = self
            .store
            .is_diskless()
            .then(|| self.store.newest_snapshot_zxid().max(0));
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        if let Some(zxid) = on_disk {
            ensemble.zab.retain_after(zab::Zxid::from_i64(zxid));
        }
        ensemble.zab.handle_tick(now.mono_ms);
        self.run_zab();
        // Work held back during a hand-over that was then abandoned (at its bound, or when the
        // successor left) proposes again: no commit may come to drain it (sim seed 9036872).
        if !self.stall_planted() {
            self.drain_backlog();
        }
        self.check_hold_bound();
        // Diskless: the writes a resting or running busy snapshot missed get theirs now.
        self.store.idle(&self.tree);
    }

    /// Every half tick, a learner reports the sessions its clients touched, as ZooKeeper's
    /// followers do with their pings: the leader expires only sessions nobody heard from.
    pub(crate) fn report_session_activity(&mut self) {
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        if let Some(leader) = ensemble.remote_leader().filter(|_| ensemble.serving) {
            if !ensemble.touched.is_empty() {
                let mut sessions: Vec<i64> = ensemble.touched.drain().collect();
                sessions.sort_unstable();
                send(
                    ensemble,
                    leader,
                    &PeerMessage::Host(HostMessage::Touch { sessions }),
                );
            }
        }
    }

    /// An ensemble member's log holds every proposal up to `zxid` durably.
    pub fn on_log_durable(&mut self, now: Now, zxid: i64) {
        self.now = now;
        if self.ensemble.is_none() {
            return;
        }
        // Before Zab hears of it: its acknowledgements may count on a leader's snapshot that
        // commits on this report.
        if let Err(e) = self.store.log_durable(zxid) {
            self.fail(format!("cannot commit the leader's snapshot: {e}"));
            return;
        }
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        ensemble
            .zab
            .handle_log_durable(now.mono_ms, zab::Zxid::from_i64(zxid));
        self.run_zab();
    }
}

/// A leader's snapshot must decode, and hold the state at the zxid it claims, before Zab takes
/// it: once Zab has, its history stands on that snapshot, and one that then fails to load
/// could only stop the server. Refused, it costs the learner a new sync instead.
fn check_snapshot(zxid: zab::Zxid, image: &[u8]) -> Result<(), String> {
    let loaded = storage::snapshot_file::decode_bytes(image)
        .map_err(|e| format!("a snapshot (SNAP) that does not decode: {e}"))?;
    let holds = loaded.tree.last_processed_zxid();
    if holds != zxid.as_i64() {
        return Err(format!(
            "a snapshot (SNAP) for {zxid} that holds {holds:#x}"
        ));
    }
    Ok(())
}

/// A transaction that changes nothing and answers `code` (ZooKeeper's error transaction).
pub(crate) fn error_txn(
    session_id: i64,
    cxid: i32,
    zxid: i64,
    time_ms: i64,
    code: ErrorCode,
) -> Txn {
    Txn {
        header: TxnHeader {
            client_id: session_id,
            cxid,
            zxid,
            time: time_ms,
            op_type: OpCode::Error.code(),
        },
        body: TxnBody::Error(ErrorTxn { err: code.code() }),
    }
}
