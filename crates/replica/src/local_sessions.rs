//! Local sessions (ZooKeeper's `localSessionsEnabled`: `LocalSessionTracker`,
//! `UpgradeableSessionTracker`, `QuorumZooKeeperServer.checkUpgradeSession`).
//!
//! With `localSessionsEnabled=true` an ensemble member creates a new session on its own,
//! without a Zab round: the session lives in this server's memory only, expires here, and its
//! close is not replicated. Such a session may read, watch and write persistent znodes (its
//! writes go through the leader as anyone's; the leader takes a session it does not know from
//! another member, as ZooKeeper's `LeaderSessionTracker.checkSession` does). It cannot own an
//! ephemeral: a create of one (create, create2, or a multi holding one) first *upgrades* the
//! session, a createSession through Zab in front of the create on the same link, when
//! `localSessionsUpgradingEnabled=true` (sent with the create, so also when a create held
//! through a leader change is sent again); without it the leader answers the create
//! EphemeralOnLocalSession (-120) and a multi holding one SessionExpired at that op, both in a
//! transaction, as ZooKeeper does. Once the createSession is applied the session is an
//! ordinary global one. A local session is known nowhere else, so reconnecting to another server finds
//! it expired; reconnecting to its own server works. A standalone server ignores the keys, as
//! ZooKeeper's `ZooKeeperServer` does.
//!
//! A read-only server's sessions ([`crate::read_only`]) are local sessions too, kept apart in
//! [`LocalSessions`] of their own that end with read-only mode.

use crate::ensemble::Waiting;
use crate::replica::{Replica, ReplyTo};
use crate::session_tracker::SessionTracker;
use crate::store::Store;
use crate::watch_manager::ConnId;
use proto::multi::MultiOp;
use proto::request::Request;
use proto::txn::{ErrorTxn, Txn, TxnBody, TxnHeader};
use proto::{ErrorCode, OpCode};

/// Sessions that live on this server only, with their expiry.
#[derive(Debug)]
pub struct LocalSessions {
    tracker: SessionTracker,
}

impl LocalSessions {
    pub fn new(tick_ms: u32) -> LocalSessions {
        // Ids come from the replica's own tracker, so local and global ids never collide.
        LocalSessions {
            tracker: SessionTracker::new(tick_ms, 0, 0),
        }
    }

    pub fn contains(&self, session_id: i64) -> bool {
        self.tracker.timeout_ms(session_id).is_some()
    }

    pub fn timeout_ms(&self, session_id: i64) -> Option<u32> {
        self.tracker.timeout_ms(session_id)
    }

    pub fn add(&mut self, session_id: i64, timeout_ms: u32, now_ms: u64) {
        self.tracker.add(session_id, timeout_ms, now_ms);
    }

    /// Pushes the session's expiry out; false when it is not a local session here.
    pub fn touch(&mut self, session_id: i64, now_ms: u64) -> bool {
        self.tracker.touch(session_id, now_ms)
    }

    pub fn set_timeout(&mut self, session_id: i64, timeout_ms: u32) {
        self.tracker.set_timeout(session_id, timeout_ms);
    }

    pub fn remove(&mut self, session_id: i64) {
        self.tracker.remove(session_id);
    }

    /// Removes and returns up to `max` sessions past their expiry.
    pub fn take_expired(&mut self, now_ms: u64, max: usize) -> Vec<i64> {
        self.tracker.take_expired(now_ms, max)
    }

    pub fn len(&self) -> usize {
        self.tracker.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tracker.is_empty()
    }
}

fn error_body(code: ErrorCode) -> TxnBody {
    TxnBody::Error(ErrorTxn { err: code.code() })
}

/// A multi that fails at its first ephemeral create with `code`: the ops before it are
/// rolled back (0), the ones after it RuntimeInconsistency, as ZooKeeper's multi answers.
fn failed_multi(ops: &[MultiOp], code: ErrorCode) -> TxnBody {
    let at = ops.iter().position(is_ephemeral_create).unwrap_or(0);
    let parts = (0..ops.len())
        .map(|i| match i.cmp(&at) {
            std::cmp::Ordering::Less => error_body(ErrorCode::Ok),
            std::cmp::Ordering::Equal => error_body(code),
            std::cmp::Ordering::Greater => error_body(ErrorCode::RuntimeInconsistency),
        })
        .collect();
    TxnBody::Multi(parts)
}

fn is_ephemeral_flags(flags: i32) -> bool {
    matches!(flags, 1 | 3)
}

fn is_ephemeral_create(op: &MultiOp) -> bool {
    matches!(op, MultiOp::Create { req, .. } if is_ephemeral_flags(req.flags))
}

/// Whether `request` creates an ephemeral znode (`checkUpgradeSession`: create, create2 and
/// multi; containers and TTL nodes are never ephemeral).
pub(crate) fn creates_ephemeral(request: &Request) -> bool {
    match request {
        Request::Create { req, .. } => is_ephemeral_flags(req.flags),
        Request::Multi(ops) => ops.iter().any(is_ephemeral_create),
        _ => false,
    }
}

impl<S: Store> Replica<S> {
    /// Whether new sessions on this server are local (an ensemble member with the key on).
    pub(crate) fn local_sessions_on(&self) -> bool {
        self.settings.local_sessions_enabled && self.ensemble.is_some()
    }

    /// A session that lives on this server only: local, or a read-only server's.
    pub fn is_local_session(&self, session_id: i64) -> bool {
        self.local_sessions.contains(session_id) || self.read_only.has_session(session_id)
    }

    /// Local sessions on this server (read-only ones included), for `mntr` and the tests.
    pub fn local_session_count(&self) -> usize {
        self.local_sessions.len() + self.read_only.session_count()
    }

    /// A new local session for `conn`, answered at once: nothing to replicate.
    pub(crate) fn create_local_session(
        &mut self,
        conn: ConnId,
        timeout_ms: u32,
        read_only: Option<bool>,
    ) {
        let session_id = self.sessions.next_session_id();
        let now = self.now_ms();
        self.local_sessions.add(session_id, timeout_ms, now);
        tracing::debug!(
            conn,
            session = format!("0x{session_id:x}"),
            timeout_ms,
            "established new local session"
        );
        self.attach(conn, session_id, timeout_ms, read_only);
    }

    /// A client reconnecting with one of this server's local sessions; false when the session
    /// is not local here (then it is the ensemble's to judge).
    pub(crate) fn reattach_local(
        &mut self,
        conn: ConnId,
        req: &proto::records::ConnectRequest,
        timeout_ms: u32,
    ) -> bool {
        let session_id = req.session_id;
        if !self.local_sessions.contains(session_id) {
            return false;
        }
        if req.passwd != crate::java_random::session_password(session_id) {
            tracing::info!(
                conn,
                session = format!("0x{session_id:x}"),
                "wrong password for a local session: replying expired"
            );
            self.reply_expired(conn, req.read_only);
            return true;
        }
        let now = self.now_ms();
        self.local_sessions.set_timeout(session_id, timeout_ms);
        self.local_sessions.touch(session_id, now);
        self.attach_moved(conn, session_id, timeout_ms, req.read_only);
        true
    }

    /// Keeps a local session alive on client activity.
    pub(crate) fn touch_local(&mut self, session_id: i64) {
        let now = self.now_ms();
        if !self.local_sessions.touch(session_id, now) {
            self.read_only.touch(session_id, now);
        }
    }

    /// Asks the leader to make a local session global (ZooKeeper's `makeUpgradeRequest`) when
    /// `request`, about to be sent to the leader, creates an ephemeral and upgrading is on.
    /// Sent before every such create while the session is still local, including one sent
    /// again after a leader change: a second createSession of a session changes nothing, and
    /// one lost with a leader is made up for.
    pub(crate) fn upgrade_if_needed(&mut self, session_id: i64, request: &Request) {
        if !self.settings.local_sessions_upgrading_enabled || !creates_ephemeral(request) {
            return;
        }
        let Some(timeout_ms) = self.local_sessions.timeout_ms(session_id) else {
            return;
        };
        tracing::info!(
            session = format!("0x{session_id:x}"),
            "upgrading a local session to a global one: it creates an ephemeral"
        );
        self.send_create_session(session_id, timeout_ms);
    }

    /// A createSession was applied: a local session of that id is global from now on.
    pub(crate) fn session_committed(&mut self, session_id: i64) {
        if self.local_sessions.contains(session_id) {
            self.local_sessions.remove(session_id);
            tracing::debug!(
                session = format!("0x{session_id:x}"),
                "local session upgraded"
            );
        }
    }

    /// A write of a local session (or of any session on a read-only server) answered here in
    /// its connection's turn, not through Zab: a local close, or NotReadOnly on a read-only
    /// server.
    pub(crate) fn answer_write_here(
        &mut self,
        conn: ConnId,
        xid: i32,
        request: &Request,
        received_ms: u64,
    ) {
        let zxid = self.last_zxid();
        let session_id = self.session_of(conn);
        if matches!(request, Request::CloseSession) && self.is_local_session(session_id) {
            // Not replicated: nobody else knows the session. No ephemerals to delete either.
            self.local_sessions.remove(session_id);
            self.read_only.remove(session_id);
            tracing::debug!(
                session = format!("0x{session_id:x}"),
                "closed a local session"
            );
            self.finish_reply(conn, xid, zxid, 0, None, received_ms);
            self.on_session_closed(session_id);
            return;
        }
        if matches!(request, Request::CloseSession) && !self.serving_read_only() {
            // Upgraded while its close waited behind the ephemeral create that upgraded it: a
            // global session's close goes through Zab (its ephemerals go with it), in its turn.
            self.close_through_zab(conn, session_id, xid, received_ms);
            return;
        }
        let code = if self.serving_read_only() {
            ErrorCode::NotReadOnly
        } else {
            // Not reached: every other write goes through Zab.
            tracing::warn!(
                session = format!("0x{session_id:x}"),
                op = ?request.op_code(),
                "a write reached the local answer it has none for: SystemError"
            );
            ErrorCode::SystemError
        };
        self.finish_reply(conn, xid, zxid, code.code(), None, received_ms);
    }

    /// A close taken off the head of its connection's queue as a local one, for a session that
    /// has since become global: back at the head as a write, sent to the leader (or held, while
    /// this member has none), so that what the connection sent after it stays behind it.
    fn close_through_zab(&mut self, conn: ConnId, session_id: i64, xid: i32, received_ms: u64) {
        let request = std::sync::Arc::new(Request::CloseSession);
        let reply = ReplyTo::new(conn, xid, &request, received_ms);
        let Some(ensemble) = self.ensemble.as_deref_mut() else {
            return;
        };
        let sent = ensemble.serving;
        ensemble.queue_of(conn).push_front(Waiting::Write {
            reply,
            request: request.clone(),
            sent,
        });
        if sent {
            self.send_write(conn, session_id, xid, request);
        }
    }

    /// The leader's check of a client write's session: None to go ahead, or the transaction
    /// that answers it instead. A session the leader does not know may be a local session of
    /// another member (`LeaderSessionTracker.checkSession` lets those through when local
    /// sessions are on), but never for an ephemeral, which needs a global session
    /// (`checkGlobalSession`): a create answers EphemeralOnLocalSession (ZooKeeper's learner
    /// answers so in place of the leader's SessionExpired), a multi fails at its ephemeral
    /// create with SessionExpired, as ZooKeeper's does.
    pub(crate) fn refuse_session_write(
        &self,
        session_id: i64,
        xid: i32,
        zxid: i64,
        request: &Request,
    ) -> Option<Txn> {
        if self.tree.sessions().contains_key(&session_id) {
            return None;
        }
        let me = self.ensemble.as_deref().map_or(0, |e| e.me());
        let ours = (session_id >> 56) as u64 & 0xff == me;
        let known_here = !ours || self.local_sessions.contains(session_id);
        let body = if !self.settings.local_sessions_enabled || !known_here {
            error_body(ErrorCode::SessionExpired)
        } else if !creates_ephemeral(request) || self.creating_session(session_id) {
            return None;
        } else if let Request::Multi(ops) = request {
            failed_multi(ops, ErrorCode::SessionExpired)
        } else {
            error_body(ErrorCode::EphemeralOnLocalSession)
        };
        let op_type = match body {
            TxnBody::Multi(_) => OpCode::Multi,
            _ => OpCode::Error,
        };
        Some(Txn {
            header: TxnHeader {
                client_id: session_id,
                cxid: xid,
                zxid,
                time: self.wall_ms(),
                op_type: op_type.code(),
            },
            body,
        })
    }

    /// Leader: whether a createSession of `session_id` is proposed and not yet applied (an
    /// upgrade ahead of the ephemeral create that follows it).
    fn creating_session(&self, session_id: i64) -> bool {
        self.ensemble.as_deref().is_some_and(|e| {
            e.zab.undelivered().iter().any(|entry| {
                entry.txn.header.client_id == session_id
                    && matches!(entry.txn.body, proto::txn::TxnBody::CreateSession(_))
            })
        })
    }

    /// Leader: forgets the owners (for SessionMoved) of sessions the tree no longer holds, or
    /// never held: local sessions of other members, which cannot move, and closed sessions.
    /// Done when there are many more owners than sessions, so it costs nothing per write.
    pub(crate) fn forget_owners_of_ended_sessions(&mut self) {
        let sessions = self.tree.sessions().len();
        let Some(ensemble) = self.ensemble.as_deref_mut() else {
            return;
        };
        if ensemble.owners.len() <= 2 * sessions + crate::limits::OWNERS_SLACK_MAX {
            return;
        }
        let tree = &self.tree;
        ensemble
            .owners
            .retain(|session_id, _| tree.sessions().contains_key(session_id));
    }

    /// Ends the local sessions (and the read-only server's) that timed out.
    pub(crate) fn expire_local_sessions(&mut self) {
        let now = self.now_ms();
        let max = crate::limits::EXPIRIES_PER_TICK_MAX;
        let mut expired = self.local_sessions.take_expired(now, max);
        expired.extend(self.read_only.take_expired(now, max));
        for session_id in expired {
            tracing::info!(
                session = format!("0x{session_id:x}"),
                "expiring local session"
            );
            self.on_session_closed(session_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::multi::MultiOp;
    use proto::records::CreateRequest;
    use proto::OpCode;

    fn create(flags: i32) -> CreateRequest {
        CreateRequest {
            path: "/a".into(),
            data: Default::default(),
            acl: Vec::new(),
            flags,
        }
    }

    #[test]
    fn ephemeral_creates_are_found_in_creates_and_multis() {
        for (flags, ephemeral) in [(0, false), (1, true), (2, false), (3, true), (4, false)] {
            let req = Request::Create {
                op: OpCode::Create2,
                req: create(flags),
            };
            assert_eq!(creates_ephemeral(&req), ephemeral, "flags {flags}");
        }
        let multi = Request::Multi(vec![
            MultiOp::Create {
                op: OpCode::Create,
                req: create(0),
            },
            MultiOp::Create {
                op: OpCode::Create,
                req: create(1),
            },
        ]);
        assert!(creates_ephemeral(&multi));
        let persistent = Request::Multi(vec![MultiOp::Create {
            op: OpCode::Create,
            req: create(2),
        }]);
        assert!(!creates_ephemeral(&persistent));
        assert!(!creates_ephemeral(&Request::CloseSession));
    }

    #[test]
    fn local_sessions_expire_and_touch_extends() {
        let mut local = LocalSessions::new(100);
        local.add(7, 300, 0);
        assert!(local.contains(7));
        assert!(local.take_expired(299, 10).is_empty());
        assert!(local.touch(7, 200));
        assert!(local.take_expired(400, 10).is_empty());
        assert_eq!(local.take_expired(500, 10), vec![7]);
        assert!(!local.contains(7));
        assert!(!local.touch(7, 600));
    }
}
