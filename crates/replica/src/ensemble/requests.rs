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
use super::replica::{PendingConnect, Waiting, Work};
use crate::core::{Core, ReplyTo};
use crate::peers::{PeerEvent, Sid};
use crate::watch_manager::ConnId;
use proto::request::Request;
use proto::txn::{ErrorTxn, Txn, TxnBody, TxnHeader};
use proto::{ErrorCode, OpCode};
use std::time::Instant;
use tree::PrepContext;

impl Core {
    // ---- clients ---------------------------------------------------------------------------

    /// A client write (or sync) on an ensemble member: queue its reply, then propose it here
    /// or forward it to the leader.
    pub(crate) fn ensemble_write(
        &mut self,
        conn: ConnId,
        session_id: i64,
        xid: i32,
        request: Request,
        received: Instant,
    ) {
        let auth_ids = self.auth_ids(conn);
        let reply = ReplyTo::new(conn, xid, &request, received);
        let Some(replica) = self.replica() else {
            return;
        };
        replica
            .queues
            .entry(conn)
            .or_default()
            .push_back(Waiting::Write(reply));
        match replica.remote_leader() {
            Some(leader) => {
                replica.stats.forwarded += 1;
                let mut body = proto::Writer::new();
                request.encode_body(&mut body);
                let msg = HostMessage::Forward(Forwarded {
                    session_id,
                    xid,
                    op_type: request.op_code().code(),
                    body: body.into_inner(),
                    auth_ids,
                });
                send(replica, leader, &PeerMessage::Host(msg));
            }
            None => {
                let origin = replica.me();
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
        received: Instant,
    ) {
        if let Some(queue) = self.replica().and_then(|r| r.queues.get_mut(&conn)) {
            queue.push_back(Waiting::Read {
                xid,
                request,
                received,
            });
            return;
        }
        self.handle_read(conn, xid, request, received);
    }

    /// A learner remembers which sessions it served, for the leader's expiry.
    pub(crate) fn note_session_activity(&mut self, session_id: i64) {
        if let Some(replica) = self.replica() {
            if !replica.is_leader() {
                replica.touched.insert(session_id);
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
        let Some(replica) = self.replica() else {
            return;
        };
        replica.connecting.insert(
            session_id,
            PendingConnect {
                conn,
                timeout_ms,
                read_only,
            },
        );
        let timeout_ms = timeout_ms as i32;
        match replica.remote_leader() {
            Some(leader) => send(
                replica,
                leader,
                &PeerMessage::Host(HostMessage::CreateSession {
                    session_id,
                    timeout_ms,
                }),
            ),
            None => {
                let origin = replica.me();
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
        let Some(replica) = self.replica() else {
            return;
        };
        match replica.remote_leader() {
            Some(leader) => {
                if let Some(old) = replica.revalidating.insert(session_id, pending) {
                    // The client gave up on the earlier attempt and tried again.
                    self.close_conn(old.conn);
                }
                if let Some(replica) = self.replica() {
                    send(
                        replica,
                        leader,
                        &PeerMessage::Host(HostMessage::Revalidate {
                            session_id,
                            timeout_ms: timeout_ms as i32,
                        }),
                    );
                }
            }
            None => {
                let me = replica.me();
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
        if let Some(replica) = self.replica() {
            replica.owners.insert(session_id, origin);
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
    pub(crate) fn submit_work(&mut self, work: Work) {
        let Some(replica) = self.replica() else {
            return;
        };
        if !replica.backlog.is_empty() || replica.zab.next_zxid().is_none() {
            if replica.backlog.len() >= replica.backlog_max {
                tracing::error!(
                    backlog = replica.backlog.len(),
                    "leader backlog full: dropping a request (its client will time out and retry)"
                );
                return;
            }
            replica.backlog.push_back(work);
            return;
        }
        self.propose_work(work);
    }

    /// Proposes waiting work while the pipeline has room.
    pub(crate) fn drain_backlog(&mut self) {
        loop {
            let Some(replica) = self.replica() else {
                return;
            };
            if replica.backlog.is_empty() || replica.zab.next_zxid().is_none() {
                return;
            }
            let Some(work) = replica.backlog.pop_front() else {
                return;
            };
            self.propose_work(work);
        }
    }

    fn propose_work(&mut self, work: Work) {
        let Some(replica) = self.replica() else {
            return;
        };
        let Some(zxid) = replica.zab.next_zxid() else {
            replica.backlog.push_front(work);
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
                let owner = *replica.owners.entry(session_id).or_insert(origin);
                if owner != origin {
                    tracing::info!(
                        session = format!("0x{session_id:x}"),
                        from = origin,
                        owner,
                        "write through a server the session has moved away from: SessionMoved"
                    );
                    error_txn(session_id, xid, zxid, ErrorCode::SessionMoved)
                } else if matches!(request, Request::Sync(_)) {
                    // sync is a no-op transaction through Zab: once this server applies it,
                    // it has applied every write committed before the sync was proposed.
                    error_txn(session_id, xid, zxid, ErrorCode::Ok)
                } else if !self.tree.sessions().contains_key(&session_id) {
                    error_txn(session_id, xid, zxid, ErrorCode::SessionExpired)
                } else {
                    let ctx = PrepContext {
                        session_id,
                        cxid: xid,
                        zxid,
                        time_ms: crate::core::wall_ms(),
                        auth_ids: &auth_ids,
                        extended_types_enabled: self.config.extended_types_enabled,
                    };
                    self.prep.prepare(&self.tree, &ctx, &request)
                }
            }
            Work::CreateSession {
                origin,
                session_id,
                timeout_ms,
            } => {
                replica.owners.insert(session_id, origin);
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
        };
        let Some(replica) = self.replica() else {
            return;
        };
        let now = replica.now();
        if let Err(e) = replica.zab.propose(now, txn, None) {
            // next_zxid said yes, so Zab disagreeing means this server is no longer leading.
            tracing::warn!(error = %e, "proposal refused");
            self.prep = tree::Prep::default();
        }
        self.run_zab();
    }

    /// The leader expires sessions; learners only report activity.
    /// Diskless: ends a session whose client saw lost writes (see `Core::saw_lost_writes`), on
    /// the leader, which proposes its close; a learner asks its leader to.
    pub(crate) fn end_session(&mut self, session_id: i64) {
        let Some(replica) = self.replica() else {
            return;
        };
        if !replica.serving || !self.tree.sessions().contains_key(&session_id) {
            return;
        }
        let Some(replica) = self.replica() else {
            return;
        };
        match replica.remote_leader() {
            Some(leader) => send(
                replica,
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

    pub(crate) fn ensemble_expire(&mut self, expired: Vec<i64>) {
        for session_id in expired {
            tracing::info!(session = format!("0x{session_id:x}"), "expiring session");
            self.submit_work(Work::Expire { session_id });
        }
    }

    // ---- peers -------------------------------------------------------------------------------

    pub(crate) fn on_peer_event(&mut self, event: PeerEvent) {
        let Some(replica) = self.replica() else {
            return;
        };
        let now = replica.now();
        match event {
            PeerEvent::Up(peer) => tracing::debug!(peer, "peer connected"),
            PeerEvent::Down(peer) => {
                tracing::debug!(peer, "peer disconnected");
                replica.zab.handle_peer_disconnected(now, peer);
            }
            PeerEvent::Frame(peer, frame) => match codec::decode(&frame) {
                Ok(PeerMessage::Zab(msg)) => replica.zab.handle_message(now, peer, msg),
                Ok(PeerMessage::Host(msg)) => self.on_host_message(peer, msg),
                Err(e) => {
                    tracing::warn!(peer, error = %e, "breaking the connection to a peer that sent an undecodable frame");
                    replica.transport.disconnect(peer);
                    replica.zab.handle_peer_disconnected(now, peer);
                }
            },
        }
        self.run_zab();
    }

    fn on_host_message(&mut self, peer: Sid, msg: HostMessage) {
        let Some(replica) = self.replica() else {
            return;
        };
        let leading = replica.is_leader() && replica.serving;
        let from_leader = replica.zab.leader() == Some(peer);
        match msg {
            HostMessage::Forward(f) if leading => match Request::decode(f.op_type, &f.body) {
                Ok(request) if request.is_write() || matches!(request, Request::Sync(_)) => self
                    .submit_work(Work::Client {
                        origin: peer,
                        session_id: f.session_id,
                        xid: f.xid,
                        request,
                        auth_ids: f.auth_ids,
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
                if let Some(replica) = self.replica() {
                    let reply = HostMessage::Revalidated {
                        session_id,
                        timeout_ms,
                    };
                    send(replica, peer, &PeerMessage::Host(reply));
                }
            }
            HostMessage::Revalidated {
                session_id,
                timeout_ms,
            } if from_leader => {
                if let Some(pending) = replica.revalidating.remove(&session_id) {
                    self.finish_reattach(pending, session_id, timeout_ms);
                }
            }
            HostMessage::DigestAt { zxid, digest } if from_leader => {
                self.on_digest_at(zxid, digest)
            }
            HostMessage::EndSession { session_id } if leading => self.end_session(session_id),
            other => tracing::debug!(
                peer,
                kind = other.kind(),
                role = replica.role_name(),
                "ignoring a peer message this server's role does not take"
            ),
        }
    }

    /// Zab's timers (election re-sends, pings, limits).
    pub(crate) fn replica_tick(&mut self) {
        // Diskless: what the newest snapshot lacks stays in memory for the failure checkpoint.
        let on_disk = self
            .persistence
            .is_diskless()
            .then(|| self.persistence.newest_snapshot_zxid().max(0));
        let Some(replica) = self.replica() else {
            return;
        };
        let now = replica.now();
        if let Some(zxid) = on_disk {
            replica.zab.retain_after(zab::Zxid::from_i64(zxid));
        }
        replica.zab.handle_tick(now);
        self.run_zab();
        // Diskless: the writes a resting or running busy snapshot missed get theirs now.
        self.persistence.idle(&self.tree);
    }

    /// Every half tick, a learner reports the sessions its clients touched, as ZooKeeper's
    /// followers do with their pings: the leader expires only sessions nobody heard from.
    pub(crate) fn report_session_activity(&mut self) {
        let Some(replica) = self.replica() else {
            return;
        };
        if let Some(leader) = replica.remote_leader().filter(|_| replica.serving) {
            if !replica.touched.is_empty() {
                let sessions: Vec<i64> = replica.touched.drain().collect();
                send(
                    replica,
                    leader,
                    &PeerMessage::Host(HostMessage::Touch { sessions }),
                );
            }
        }
    }

    pub(crate) fn on_log_durable(&mut self, zxid: i64) {
        let Some(replica) = self.replica() else {
            return;
        };
        let now = replica.now();
        replica
            .zab
            .handle_log_durable(now, zab::Zxid::from_i64(zxid));
        self.run_zab();
    }
}

/// A transaction that changes nothing and answers `code` (ZooKeeper's error transaction).
fn error_txn(session_id: i64, cxid: i32, zxid: i64, code: ErrorCode) -> Txn {
    Txn {
        header: TxnHeader {
            client_id: session_id,
            cxid,
            zxid,
            time: crate::core::wall_ms(),
            op_type: OpCode::Error.code(),
        },
        body: TxnBody::Error(ErrorTxn { err: code.code() }),
    }
}
