//! Read-only mode (`readonlymode.enabled`; ZooKeeper's `ReadOnlyZooKeeperServer`,
//! `ReadOnlyRequestProcessor` and the read-only branch of `QuorumPeer.run`).
//!
//! A participant that has been looking for a leader for `max(2000 ms, tickTime)` starts
//! serving read-only, as ZooKeeper's does:
//! * every client connection it still held is closed (they belong to global sessions, which
//!   a read-only server refuses) and the hold is over;
//! * a handshake with `readOnly=false` is refused (the connection closed), as is one that
//!   renews a global session; a new session is a local session of this server
//!   ([`crate::local_sessions`]; ZooKeeper's read-only server takes new sessions only with
//!   `localSessionsEnabled=true`, and meerkat closes the connection without it, where
//!   ZooKeeper answers with a frame the client cannot read); the ConnectResponse says
//!   `readOnly=true`;
//! * reads, watches and pings are served from this server's tree; writes and `sync` are
//!   answered NotReadOnly (-119) with the last applied zxid; closing a session is local.
//!
//! As soon as the election ends (the role is no longer LOOKING) the read-only server stops:
//! every connection is closed and its sessions are forgotten, so clients reconnect and find a
//! read-write server (the Java client then starts a new session, having seen no read-write
//! server with this one). Decided here from the replica's own clock and role, so the
//! simulator could run it; the shell only reports it (`isro`, `srvr`).

use crate::local_sessions::LocalSessions;
use crate::replica::Replica;
use crate::replies::connect_frame;
use crate::store::Store;
use crate::watch_manager::ConnId;
use proto::records::{ConnectRequest, ConnectResponse};
use std::net::SocketAddr;

/// The read-only server's shortest wait, from `QuorumPeer` ("lower-bound grace period to
/// 2 secs").
pub const READ_ONLY_DELAY_MIN_MS: u64 = 2000;

/// Read-only mode's state.
#[derive(Debug, Default)]
pub struct ReadOnly {
    /// Since when this member has been looking for a leader without serving.
    looking_since: Option<u64>,
    /// The read-only server's sessions; Some exactly while serving read-only.
    sessions: Option<LocalSessions>,
}

impl ReadOnly {
    pub fn is_active(&self) -> bool {
        self.sessions.is_some()
    }

    pub(crate) fn has_session(&self, session_id: i64) -> bool {
        self.sessions
            .as_ref()
            .is_some_and(|s| s.contains(session_id))
    }

    pub(crate) fn session_count(&self) -> usize {
        self.sessions.as_ref().map_or(0, LocalSessions::len)
    }

    pub(crate) fn touch(&mut self, session_id: i64, now_ms: u64) {
        if let Some(s) = self.sessions.as_mut() {
            s.touch(session_id, now_ms);
        }
    }

    pub(crate) fn remove(&mut self, session_id: i64) {
        if let Some(s) = self.sessions.as_mut() {
            s.remove(session_id);
        }
    }

    pub(crate) fn take_expired(&mut self, now_ms: u64, max: usize) -> Vec<i64> {
        self.sessions
            .as_mut()
            .map(|s| s.take_expired(now_ms, max))
            .unwrap_or_default()
    }
}

impl<S: Store> Replica<S> {
    /// Whether this server serves read-only now (`isro` answers `ro`).
    pub fn serving_read_only(&self) -> bool {
        self.read_only.is_active()
    }

    /// How long a member looks for a leader before it serves read-only.
    pub fn read_only_delay_ms(&self) -> u64 {
        READ_ONLY_DELAY_MIN_MS.max(u64::from(self.settings.tick_time_ms))
    }

    /// Starts or stops read-only mode from the role and the time; called after every change
    /// Zab reports and every tick.
    pub(crate) fn check_read_only(&mut self) {
        if !self.settings.read_only_mode_enabled {
            return;
        }
        let now = self.now_ms();
        let Some(ensemble) = self.ensemble.as_deref() else {
            return;
        };
        // Zab's own role: it leaves LOOKING the moment the election decides, as ZooKeeper's
        // `lookForLeader` returns. Only participants: ZooKeeper's observers never look.
        let participant = !ensemble.zab.config().is_observer(ensemble.me());
        let looking = participant && ensemble.zab.role() == zab::Role::Looking && !ensemble.serving;
        if !looking {
            self.read_only.looking_since = None;
            if self.read_only.is_active() {
                self.stop_read_only();
            }
            return;
        }
        let since = *self.read_only.looking_since.get_or_insert(now);
        if !self.read_only.is_active() && now.saturating_sub(since) >= self.read_only_delay_ms() {
            self.start_read_only();
        }
    }

    fn start_read_only(&mut self) {
        tracing::warn!(
            looking_ms = self.read_only_delay_ms(),
            connections = self.conns.len(),
            "no leader: serving read-only (reads for clients that allow a read-only server; \
             writes answer NotReadOnly)"
        );
        self.close_held_connections();
        if let Some(ensemble) = self.ensemble() {
            // The hold is over: its bound must not close the read-only server's clients.
            ensemble.released = true;
        }
        self.read_only.sessions = Some(LocalSessions::new(self.settings.tick_time_ms));
    }

    fn stop_read_only(&mut self) {
        let sessions = self.read_only.session_count();
        tracing::info!(
            connections = self.conns.len(),
            sessions,
            "election over: leaving read-only mode; closing its client connections so they \
             find a read-write server"
        );
        self.read_only.sessions = None;
        let mut conns: Vec<ConnId> = self.conns.keys().copied().collect();
        conns.sort_unstable();
        for conn in conns {
            if let Some(session_id) = self.conns.get(&conn).and_then(|c| c.session_id) {
                if self.session_conn.get(&session_id) == Some(&conn) {
                    self.session_conn.remove(&session_id);
                }
            }
            self.watches.remove_connection(conn);
            if let Some(c) = self.conns.get_mut(&conn) {
                c.session_id = None;
            }
            self.close_conn(conn);
        }
    }

    /// A handshake while serving read-only (see the module doc).
    pub(crate) fn read_only_connect(
        &mut self,
        conn: ConnId,
        peer: SocketAddr,
        req: ConnectRequest,
    ) {
        if req.read_only != Some(true) {
            tracing::info!(conn, %peer, "refusing session request for not-read-only client");
            self.close_conn(conn);
            return;
        }
        if self.refuse_client_ahead(conn, peer, &req) {
            return;
        }
        let timeout_ms = self.negotiate_timeout(req.timeout_ms);
        let session_id = req.session_id;
        if session_id == 0 {
            if !self.settings.local_sessions_enabled {
                tracing::info!(conn, %peer, "refusing a new session in read-only mode: it needs localSessionsEnabled=true");
                self.close_conn(conn);
                return;
            }
            let session_id = self.sessions.next_session_id();
            let now = self.now_ms();
            if let Some(sessions) = self.read_only.sessions.as_mut() {
                sessions.add(session_id, timeout_ms, now);
            }
            tracing::debug!(conn, %peer, session = format!("0x{session_id:x}"), "established new read-only session");
            self.attach(conn, session_id, timeout_ms, req.read_only);
            return;
        }
        let password_ok = req.passwd == crate::java_random::session_password(session_id);
        if self.read_only.has_session(session_id) && password_ok {
            let now = self.now_ms();
            if let Some(sessions) = self.read_only.sessions.as_mut() {
                sessions.set_timeout(session_id, timeout_ms);
                sessions.touch(session_id, now);
            }
            self.attach_moved(conn, session_id, timeout_ms, req.read_only);
        } else if self.tree.sessions().contains_key(&session_id) {
            tracing::info!(conn, %peer, session = format!("0x{session_id:x}"), "refusing global session reconnection in read-only mode");
            self.close_conn(conn);
        } else {
            tracing::info!(conn, %peer, session = format!("0x{session_id:x}"), "invalid session or password in read-only mode: replying expired");
            let expired = ConnectResponse {
                protocol_version: 0,
                timeout_ms: 0,
                session_id: 0,
                passwd: vec![0; 16],
                read_only: req.read_only,
            };
            self.send(conn, connect_frame(&expired), false);
            self.close_conn(conn);
        }
    }
}
