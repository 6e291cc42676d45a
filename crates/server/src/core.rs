//! The core task's state: the one [`Replica`] of this server and what executes its outputs
//! against the real world (DESIGN.md §2: the I/O shell).
//!
//! Connections hand their requests here through a bounded queue ([`CoreMsg`]); the replica
//! decides, and [`Core::execute`] carries out what it decided, in order: frames onto each
//! connection's outbound queue, frames onto each peer's, snapshots encoded on their own
//! thread. Nothing here decides anything a client or a peer could observe beyond when it
//! happens; that is the replica's, which the simulator runs too.

use crate::config::ServerConfig;
use crate::connection::ConnHandle;
use crate::limits;
use crate::peers::Transport;
use crate::LogProgress;
use proto::request::{self, Request};
use proto::ConnectRequest;
use replica::{ClientInput, ConnId, Now, Output, Replica};
use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Instant;

/// What connections tell the core.
#[derive(Debug)]
pub enum CoreMsg {
    Connect {
        conn: ConnId,
        handle: ConnHandle,
        peer: SocketAddr,
        request: ConnectRequest,
        /// Identities the client's TLS certificate proved (`x509`, maybe `super`).
        tls_ids: Vec<proto::Id>,
    },
    Request {
        conn: ConnId,
        xid: i32,
        op_type: i32,
        request: Result<Request, request::RequestError>,
        received: Instant,
    },
    Closed {
        conn: ConnId,
    },
    /// A SASL request, the connection's exchange already run ([`crate::sasl`]).
    Sasl {
        conn: ConnId,
        xid: i32,
        outcome: replica::sasl::SaslOutcome,
        received: Instant,
    },
    FourLetter {
        command: String,
        /// The asking connection, which ZooKeeper lists in `cons` and `stat` too.
        peer: SocketAddr,
        reply: tokio::sync::oneshot::Sender<String>,
    },
    /// Hand leadership over (SIGTERM on the leader, or the operator's command): answered with
    /// the successor once it is taking over, or with why not.
    HandOver {
        within_ms: u64,
        reply: tokio::sync::oneshot::Sender<Result<zab::Sid, String>>,
    },
    /// The peers' outbound queues (none for a standalone server), for a server about to exit.
    PeerQueues {
        reply: tokio::sync::oneshot::Sender<Option<crate::peers::PeerQueues>>,
    },
}

/// The replica as this server runs it: over the real data dir.
pub type ServerReplica = Replica<storage::Persistence>;

pub struct Core {
    pub(crate) replica: ServerReplica,
    pub(crate) config: Arc<ServerConfig>,
    /// Each connection's outbound queue, by the id the replica knows it by.
    handles: HashMap<ConnId, ConnHandle, tree::keyed_hasher::KeyedHasher>,
    /// Connections with frames in this turn, flushed when it ends.
    turn_conns: Vec<ConnId>,
    /// Slots of `globalOutstandingLimit`, freed as requests are answered.
    global_permits: Arc<tokio::sync::Semaphore>,
    pub(crate) outstanding: Arc<dyn Fn() -> usize + Send + Sync>,
    /// The peer connections of an ensemble member.
    transport: Option<Transport>,
    /// Monotonic time 0 for the replica.
    clock: Instant,
    /// Outputs being executed (kept to reuse the allocation).
    outputs: Vec<Output>,
    /// Who waits for the hand-over under way.
    hand_over_reply: Option<tokio::sync::oneshot::Sender<Result<zab::Sid, String>>>,
    /// The clocks as the current turn of the core's loop first read them; cleared by
    /// [`Core::flush`], which ends each turn. The inputs of one turn were all ready when it
    /// began, and reading both clocks for each of them was 1 % of a leader's time.
    turn_now: std::cell::Cell<Option<Now>>,
}

pub(crate) fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Core {
    pub(crate) fn new(
        replica: ServerReplica,
        config: Arc<ServerConfig>,
        global_permits: Arc<tokio::sync::Semaphore>,
        outstanding: Arc<dyn Fn() -> usize + Send + Sync>,
        clock: Instant,
    ) -> Core {
        Core {
            replica,
            config,
            handles: HashMap::default(),
            turn_conns: Vec::new(),
            global_permits,
            outstanding,
            transport: None,
            clock,
            outputs: Vec::new(),
            hand_over_reply: None,
            turn_now: std::cell::Cell::new(None),
        }
    }

    /// Both clocks, read once per turn of the core's loop.
    pub(crate) fn now(&self) -> Now {
        if let Some(now) = self.turn_now.get() {
            return now;
        }
        let now = Now {
            mono_ms: self.mono_ms(self.clock.elapsed()),
            wall_ms: wall_ms(),
        };
        self.turn_now.set(Some(now));
        now
    }

    fn mono_ms(&self, since_start: std::time::Duration) -> u64 {
        since_start.as_millis() as u64
    }

    pub(crate) fn uptime_ms(&self) -> u64 {
        self.now().mono_ms
    }

    /// Makes this server an ensemble member: the replica joins, and its peer messages go
    /// over `transport`.
    pub(crate) fn join_ensemble(
        &mut self,
        transport: Transport,
        ensemble: replica::ensemble::Ensemble,
    ) {
        self.transport = Some(transport);
        let now = self.now();
        self.replica.join_ensemble(now, ensemble);
        self.execute();
        self.flush();
    }

    pub fn handle(&mut self, msg: CoreMsg) {
        let now = self.now();
        match msg {
            CoreMsg::Connect {
                conn,
                handle,
                peer,
                request,
                tls_ids,
            } => {
                self.handles.insert(conn, handle);
                let input = ClientInput::Connect {
                    conn,
                    peer,
                    request,
                    tls_ids,
                };
                self.replica.on_client(now, input);
            }
            CoreMsg::Request {
                conn,
                xid,
                op_type,
                request,
                received,
            } => {
                let received_ms = self.mono_ms(received.saturating_duration_since(self.clock));
                let input = ClientInput::Request {
                    conn,
                    xid,
                    op_type,
                    request,
                    received_ms,
                };
                self.replica.on_client(now, input);
            }
            CoreMsg::Sasl {
                conn,
                xid,
                outcome,
                received,
            } => {
                let received_ms = self.mono_ms(received.saturating_duration_since(self.clock));
                let input = ClientInput::Sasl {
                    conn,
                    xid,
                    outcome,
                    received_ms,
                };
                self.replica.on_client(now, input);
            }
            CoreMsg::Closed { conn } => {
                if let Some(handle) = self.handles.remove(&conn) {
                    // Everything this connection sent came before this message: what is still
                    // unanswered will never be, so its global slots are free again.
                    self.global_permits.add_permits(handle.take_unanswered());
                }
                self.replica.on_client(now, ClientInput::Closed { conn });
            }
            CoreMsg::FourLetter {
                command,
                peer,
                reply,
            } => {
                let _ = reply.send(crate::four_letter::run(self, &command, peer));
            }
            CoreMsg::PeerQueues { reply } => {
                let _ = reply.send(self.transport.as_ref().map(Transport::queues));
            }
            CoreMsg::HandOver { within_ms, reply } => {
                if self.hand_over_reply.is_some() {
                    let _ = reply.send(Err("a hand-over is already under way".into()));
                } else {
                    match self.replica.transfer_leadership(now, within_ms) {
                        Ok(_) => self.hand_over_reply = Some(reply),
                        Err(e) => {
                            let _ = reply.send(Err(e.to_string()));
                        }
                    }
                }
            }
        }
        self.execute();
    }

    pub(crate) fn on_peer_event(&mut self, event: crate::peers::PeerEvent) {
        let now = self.now();
        match event {
            crate::peers::PeerEvent::Up(peer) => self.replica.on_peer_up(now, peer),
            crate::peers::PeerEvent::Down(peer) => self.replica.on_peer_down(now, peer),
            crate::peers::PeerEvent::Frame(peer, frame) => {
                self.replica.on_peer_frame(now, peer, &frame)
            }
        }
        self.execute();
    }

    /// A report of the log writer: standalone, durable transactions are applied and answered;
    /// an ensemble member tells Zab, which acknowledges them.
    pub(crate) fn on_progress(&mut self, report: LogProgress) {
        let now = self.now();
        if self.replica.ensemble.is_some() {
            self.replica.on_log_durable(now, report.durable_zxid);
        } else {
            self.replica.on_durable(now, report.durable_zxid);
        }
        if let Some(failure) = report.failure {
            self.replica.fail(failure);
        }
        self.execute();
    }

    pub(crate) fn tick(&mut self) {
        let now = self.now();
        self.replica.tick(now);
        self.execute();
    }

    pub(crate) fn zab_tick(&mut self) {
        let now = self.now();
        self.replica.zab_tick(now);
        self.execute();
    }

    /// Carries out what the replica decided, in order.
    fn execute(&mut self) {
        let mut outputs = std::mem::take(&mut self.outputs);
        self.replica.drain_outputs(&mut outputs);
        for output in outputs.drain(..) {
            self.execute_one(output);
        }
        self.outputs = outputs;
        self.answer_hand_over();
    }

    /// Sends the frames of this turn, to clients and peers: one write each (see
    /// [`ConnHandle::flush`] and [`Transport::flush`]). Called once per turn of the core's
    /// loop, after every input ready then was handled. A turn's only reply goes before the
    /// peers' frames (it ends a client's wait; a commit only starts a follower's work); with
    /// more, the peers' go first: the followers' clients are waiting too, and one commit
    /// frame answers many of them. (Measured both ways: replies first gained a fifth on one
    /// client through the leader and lost up to a tenth at 60 clients.)
    pub(crate) fn flush(&mut self) {
        self.turn_now.set(None);
        let replies_first = self.turn_conns.len() <= limits::REPLIES_BEFORE_PEERS_MAX;
        if replies_first {
            self.flush_clients();
        }
        if let Some(transport) = &mut self.transport {
            transport.flush();
        }
        if !replies_first {
            self.flush_clients();
        }
    }

    fn flush_clients(&mut self) {
        for conn in self.turn_conns.drain(..) {
            let Some(handle) = self.handles.get_mut(&conn) else {
                continue;
            };
            if !handle.flush() {
                tracing::warn!(
                    conn,
                    "closing connection: client is not reading its replies"
                );
            }
        }
    }

    /// Tells whoever asked for the hand-over under way how it ended, once it has.
    fn answer_hand_over(&mut self) {
        use replica::ensemble::hand_over::HandOver;
        if self.hand_over_reply.is_none() {
            return;
        }
        let outcome = match self.replica.hand_over() {
            HandOver::Underway { .. } => return,
            HandOver::Done { successor } => Ok(successor),
            HandOver::Idle => Err("the hand-over was abandoned (see the log)".to_string()),
        };
        if let Some(reply) = self.hand_over_reply.take() {
            let _ = reply.send(outcome);
        }
    }

    /// With `reconfigEnabled`, the active configuration goes to `zoo.cfg.dynamic.<version>`
    /// beside zoo.cfg, as ZooKeeper writes it, for operators and tools that read it (the
    /// server itself takes its members from `/zookeeper/config`; zoo.cfg is not rewritten).
    fn write_dynamic_config(&self, active: &replica::ensemble::server_spec::ConfigText) {
        let Some(dir) = self
            .config
            .file
            .as_deref()
            .and_then(std::path::Path::parent)
        else {
            return;
        };
        if !self.config.reconfig_enabled || active.version == zab::Zxid::ZERO {
            return;
        }
        let Some(name) = self.config.file.as_deref().and_then(|f| f.file_name()) else {
            return;
        };
        let version = active.version.as_i64() as u64;
        let path = dir.join(format!("{}.dynamic.{version:x}", name.to_string_lossy()));
        if path.exists() {
            return;
        }
        // The lines without `version=` (ZooKeeper keeps the version in the file's name).
        let text: String = active
            .render()
            .lines()
            .filter(|l| !l.starts_with("version="))
            .map(|l| format!("{l}\n"))
            .collect();
        let temp = path.with_extension("tmp");
        let written = std::fs::write(&temp, text)
            .and_then(|()| std::fs::File::open(&temp)?.sync_all())
            .and_then(|()| std::fs::rename(&temp, &path));
        match written {
            Ok(()) => {
                tracing::info!(path = %path.display(), "wrote the dynamic configuration file")
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot write the dynamic configuration file")
            }
        }
    }

    fn execute_one(&mut self, output: Output) {
        match output {
            Output::ToClient {
                conn,
                frame,
                is_reply,
            } => {
                let Some(handle) = self.handles.get_mut(&conn) else {
                    return;
                };
                if is_reply && handle.answered() {
                    self.global_permits.add_permits(1);
                }
                if handle.push(&frame, is_reply) {
                    self.turn_conns.push(conn);
                }
            }
            Output::Unanswered { conn } => {
                if self.handles.get(&conn).is_some_and(ConnHandle::answered) {
                    self.global_permits.add_permits(1);
                }
            }
            Output::CloseClient { conn } => {
                if let Some(handle) = self.handles.get_mut(&conn) {
                    handle.close();
                }
            }
            Output::ToPeer { to, frame } => {
                if let Some(transport) = &mut self.transport {
                    transport.send(to, frame);
                }
            }
            Output::DisconnectPeer { peer } => {
                if let Some(transport) = &mut self.transport {
                    transport.disconnect(peer);
                }
            }
            Output::SendSnapshot { to, zxid, tree } => self.send_snapshot(to, zxid, tree),
            // Only a checker asks for these; this server never does (Settings::observe).
            Output::Observed(_) => {}
            Output::Members { peers, active } => {
                if let Some(active) = active {
                    self.write_dynamic_config(&active);
                }
                let Some(transport) = &mut self.transport else {
                    return;
                };
                for (sid, spec) in peers {
                    match (spec.host.as_str(), spec.quorum_port).to_socket_addrs() {
                        Ok(mut addrs) => {
                            if let Some(addr) = addrs.next() {
                                transport.add_peer(sid, addr);
                            }
                        }
                        Err(e) => tracing::warn!(
                            peer = sid,
                            host = spec.host,
                            error = %e,
                            "cannot resolve a member of the configuration"
                        ),
                    }
                }
            }
        }
    }

    /// Encodes a SNAP from a frozen tree on its own thread: at a million znodes that takes
    /// about a second, which the core task (and every client) must not wait for. The frame
    /// keeps its place in the peer's queue meanwhile.
    fn send_snapshot(&mut self, to: zab::Sid, zxid: zab::Zxid, frozen: tree::TreeSnapshot) {
        let Some(transport) = &mut self.transport else {
            return;
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("meerkat-snap-send".into())
            .spawn(move || {
                let started = Instant::now();
                let image = Arc::new(storage::Persistence::snapshot_bytes_of(&frozen));
                let bytes = image.len();
                let msg = replica::ensemble::codec::PeerMessage::Zab(zab::Message::Snap {
                    zxid,
                    image,
                });
                let _ = tx.send(replica::ensemble::codec::encode(&msg));
                tracing::info!(peer = to, zxid = %zxid, bytes, ms = started.elapsed().as_millis() as u64, "sending a snapshot (SNAP)");
            });
        if let Err(e) = spawned {
            // The dropped sender breaks the connection; the learner syncs again.
            tracing::error!(peer = to, error = %e, "could not start encoding a snapshot");
        }
        transport.send_later(to, rx);
    }
}
