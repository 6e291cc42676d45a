//! Hold, don't close: a member that loses its leader keeps its clients' connections and their
//! requests until a leader of the new epoch is established, then serves them in order, so a
//! failover looks to clients like a slow request rather than a disconnect.
//!
//! * While holding, writes wait in their connection's queue unsent, reads wait too (this
//!   member may be on the minority side), handshakes wait, and pings are answered so that
//!   clients' read timeouts do not fire.
//! * When this member serves again, its log holds every proposal its leader made before the
//!   sync (a new leader's whole initial history, or everything the same leader proposed
//!   meanwhile), committed or about to be. A waiting write found there is left to be answered
//!   when it is delivered; every other one was never proposed and never will be, and is sent
//!   again, in its connection's order. That holds because a leader drops the requests of a
//!   member whose link broke from its backlog ([`Replica::forget_work_of`]): none of them can
//!   be proposed after that member's sync. A request sent again therefore runs once.
//! * The hold is bounded (`Settings::failover_hold_ms`, a tick by default, checked every Zab
//!   tick; 0 closes at once, as ZooKeeper does): a member
//!   that cannot join a quorum in time closes its connections, so its clients move to the
//!   majority side while even the shortest sessions (two ticks) are alive.
//! * A leader's snapshot (SNAP) replaces the state wholesale: changes inside it fire no watch
//!   and answer no write, so installing one closes the held connections, as before the hold.

use super::state::{HeldConnect, Waiting, Work};
use crate::replica::Replica;
use crate::store::Store;
use crate::watch_manager::ConnId;
use proto::request::Request;
use std::collections::HashSet;

fn ensemble_queues<S: Store>(replica: &Replica<S>) -> Vec<ConnId> {
    replica
        .ensemble
        .as_deref()
        .map(|e| e.queues.keys().copied().collect())
        .unwrap_or_default()
}

impl<S: Store> Replica<S> {
    /// Zab stopped serving: keep the connections, drop what only the lost leadership needed.
    pub(crate) fn start_hold(&mut self, now_ms: u64) {
        let hold_ms = self.settings.failover_hold_ms;
        let connections = self.conns.len();
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        ensemble.not_serving_since = Some(now_ms);
        ensemble.released = false;
        ensemble.backlog.clear();
        ensemble.touched.clear();
        ensemble.digest_checks.clear();
        if hold_ms == 0 {
            tracing::warn!(
                role = ensemble.role_name(),
                connections,
                "no leader: closing client connections (failoverHoldMs=0)"
            );
            self.close_held_connections();
            if let Some(ensemble) = self.ensemble() {
                ensemble.released = true;
            }
            return;
        }
        tracing::warn!(
            role = ensemble.role_name(),
            connections,
            hold_ms,
            "no leader: holding client connections and their requests until one is established"
        );
    }

    /// A reconfiguration left this server out while it stays in step with its leader: no
    /// failover to wait for, so its clients are let go at once (to the members their connect
    /// strings name) and new ones are refused until it is a member again. What they had
    /// forwarded is already with the leader, which still answers it here or not at all; none
    /// of it is ever sent again, so nothing runs twice.
    pub(crate) fn exclude_clients(&mut self, now_ms: u64) {
        let connections = self.conns.len();
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        ensemble.not_serving_since = Some(now_ms);
        tracing::warn!(
            connections,
            version = %ensemble.zab.config().version,
            "not a member of the configuration: closing client connections; new ones are \
             refused until a reconfiguration adds this server again"
        );
        self.close_held_connections();
        if let Some(ensemble) = self.ensemble() {
            ensemble.released = true;
        }
    }

    /// Called every tick while not serving: past the bound, the held connections are closed.
    pub(crate) fn check_hold_bound(&mut self) {
        let now_ms = self.now_ms();
        let hold_ms = self.settings.failover_hold_ms;
        let Some(ensemble) = self.ensemble.as_deref() else {
            return;
        };
        let due = ensemble
            .not_serving_since
            .is_some_and(|since| now_ms.saturating_sub(since) >= hold_ms);
        if ensemble.serving || ensemble.released || !due {
            return;
        }
        #[cfg(feature = "planted-bugs")]
        if self.settings.bug(crate::planted::HostBug::HoldForever) {
            return;
        }
        tracing::warn!(
            hold_ms,
            connections = self.conns.len(),
            "no leader within the hold: closing client connections so clients move to a \
             server that has one"
        );
        self.close_held_connections();
        if let Some(ensemble) = self.ensemble() {
            ensemble.released = true;
        }
    }

    /// Closes every client connection and forgets what waited on them.
    pub(crate) fn close_held_connections(&mut self) {
        if let Some(ensemble) = self.ensemble() {
            ensemble.queues.clear();
            ensemble.connecting.clear();
            ensemble.revalidating.clear();
            ensemble.held_connects.clear();
        }
        let mut conns: Vec<ConnId> = self.conns.keys().copied().collect();
        // In one order every run: the simulator replays from a seed.
        conns.sort_unstable();
        for conn in conns {
            self.close_conn(conn);
        }
    }

    /// A handshake while not serving: held, or refused once the hold has been given up.
    /// Returns whether it was held.
    pub(crate) fn hold_connect(
        &mut self,
        conn: ConnId,
        peer: std::net::SocketAddr,
        request: proto::records::ConnectRequest,
    ) -> bool {
        let Some(ensemble) = self.ensemble() else {
            return false;
        };
        if ensemble.released || ensemble.held_connects.len() >= crate::limits::HELD_CONNECTS_MAX {
            return false;
        }
        ensemble.held_connects.push_back(HeldConnect {
            conn,
            peer,
            request,
        });
        true
    }

    /// Serving again: sends every waiting write to the leader in its connection's order,
    /// answers the reads that waited, and takes the held handshakes and session requests.
    pub(crate) fn end_hold(&mut self) {
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        ensemble.released = false;
        let logged = self.logged_requests();
        let mut conns: Vec<ConnId> = ensemble_queues(self);
        conns.sort_unstable();
        for conn in conns {
            self.resend_writes(conn, &logged);
            self.answer_waiting_reads(conn);
        }
        self.resend_session_requests(&logged);
        let held: Vec<HeldConnect> = self
            .ensemble()
            .map(|e| e.held_connects.drain(..).collect())
            .unwrap_or_default();
        for h in held {
            if self.conns.contains_key(&h.conn) {
                self.admit(h.conn, h.peer, h.request);
            }
        }
    }

    /// The (session, cxid) of every proposal in this member's log not delivered yet: they
    /// will be, so their writes must not be sent again.
    fn logged_requests(&self) -> HashSet<(i64, i32)> {
        #[cfg(feature = "planted-bugs")]
        if self.settings.bug(crate::planted::HostBug::ResendLogged) {
            return HashSet::new();
        }
        let Some(ensemble) = self.ensemble.as_deref() else {
            return HashSet::new();
        };
        ensemble
            .zab
            .undelivered()
            .iter()
            .map(|e| (e.txn.header.client_id, e.txn.header.cxid))
            .collect()
    }

    fn resend_writes(&mut self, conn: ConnId, logged: &HashSet<(i64, i32)>) {
        let session_id = self.conns.get(&conn).and_then(|c| c.session_id);
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        let Some(session_id) = session_id else {
            ensemble.remove_queue(conn);
            return;
        };
        let Some(queue) = ensemble.queues.get_mut(&conn) else {
            return;
        };
        let writes: Vec<(i32, std::sync::Arc<Request>)> = queue
            .iter_mut()
            .filter_map(|w| match w {
                Waiting::Write {
                    reply,
                    request,
                    sent,
                } => {
                    *sent = true;
                    let proposed = logged.contains(&(session_id, reply.xid));
                    (!proposed).then(|| (reply.xid, request.clone()))
                }
                _ => None,
            })
            .collect();
        for (xid, request) in writes {
            self.send_write(conn, session_id, xid, request);
        }
    }

    /// Session creations and revalidations the lost leader did not answer go to the new one.
    fn resend_session_requests(&mut self, logged: &HashSet<(i64, i32)>) {
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        // A session's creation is logged as its id with cxid 0.
        let mut creating: Vec<(i64, u32)> = ensemble
            .connecting
            .iter()
            .filter(|(s, _)| !logged.contains(&(**s, 0)))
            .map(|(&s, p)| (s, p.timeout_ms))
            .collect();
        creating.sort_unstable();
        let mut revalidating: Vec<i64> = ensemble.revalidating.keys().copied().collect();
        revalidating.sort_unstable();
        for (session_id, timeout_ms) in creating {
            self.send_create_session(session_id, timeout_ms);
        }
        for session_id in revalidating {
            let Some(pending) = self
                .ensemble()
                .and_then(|e| e.revalidating.remove(&session_id))
            else {
                continue;
            };
            self.ensemble_reattach(
                pending.conn,
                session_id,
                pending.timeout_ms,
                pending.read_only,
            );
        }
    }

    /// Leader: the link to `peer` broke. Its requests still in the backlog go: that member
    /// hears of everything proposed before its next sync and sends the rest again (see the
    /// module's notes); proposing one of them after that sync would run it twice.
    pub(crate) fn forget_work_of(&mut self, peer: zab::Sid) {
        #[cfg(feature = "planted-bugs")]
        if self
            .settings
            .bug(crate::planted::HostBug::KeepWorkOfLostMembers)
        {
            return;
        }
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        if !ensemble.is_leader() {
            return;
        }
        let before = ensemble.backlog.len();
        ensemble.backlog.retain(|work| match work {
            Work::Client { origin, .. } | Work::CreateSession { origin, .. } => *origin != peer,
            Work::Expire { .. } | Work::DeleteContainer { .. } | Work::InitialConfig => true,
        });
        let forgotten = before - ensemble.backlog.len();
        if forgotten > 0 {
            tracing::info!(
                peer,
                forgotten,
                "the link to a member broke: dropping its requests not yet proposed; it sends \
                 them again once it has synced"
            );
        }
    }

    /// SNAP: closes the connections held across it (see the module's notes).
    pub(crate) fn close_held_after_snapshot(&mut self) {
        if self.conns.is_empty() {
            return;
        }
        tracing::info!(
            connections = self.conns.len(),
            "installed the leader's snapshot: closing client connections (changes inside a \
             snapshot fire no watches and answer no writes); clients reconnect and re-register"
        );
        self.close_held_connections();
    }
}
