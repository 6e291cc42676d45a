//! The world of the replica simulator: nodes running the server's own replica and storage,
//! clients speaking the wire format, a network, one clock and one event queue. Nothing reads
//! real time or OS randomness; a seed determines every event.
//!
//! The host part of each node is what `crates/server` does with sockets and threads, done
//! with events: it hands the replica its inputs (peer frames, client frames decoded as the
//! server's connection does, ticks, durability reports) and executes its outputs in order.

use super::client::{self, Client, Incoming, Phase};
use super::node::{Node, NodeConfig, SimReplica};
use crate::network::{Network, Receive, Transit};
use crate::ops::{ClientOp, OpRecord, OpResult, KEYS};
use crate::rng::SimRng;
use crate::zab_checker::ZabChecker;
use proto::request::Request;
use proto::{ConnectRequest, Reader, Record, RequestHeader};
use replica::ensemble::codec::{self, PeerMessage};
use replica::{ClientInput, Now, Observation, Output};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap};
use storage::faulty_fs::Tear;
use zab::{Millis, Role, Sid, Zxid};

/// How often a node's Zab timers run (the server's `ZAB_TICK`).
pub const ZAB_TICK_MS: Millis = 10;
/// Events one run may process at most.
pub const EVENTS_MAX: u64 = 5_000_000;

#[derive(Debug, Clone)]
pub struct ClusterOptions {
    pub seed: u64,
    pub servers: usize,
    pub clients: usize,
    pub diskless: bool,
    pub net_delay_min_ms: Millis,
    pub net_delay_max_ms: Millis,
    pub fsync_min_ms: Millis,
    pub fsync_max_ms: Millis,
    pub snapshot_min_ms: Millis,
    pub snapshot_max_ms: Millis,
    pub fault_phase_ms: Millis,
    pub fault_interval_min_ms: Millis,
    pub fault_interval_max_ms: Millis,
    pub node: NodeConfig,
}

impl ClusterOptions {
    /// Everything a run does, drawn from its seed.
    pub fn from_seed(seed: u64, servers: Option<usize>, diskless: bool) -> ClusterOptions {
        let mut rng = SimRng::new(seed ^ 0x5eed_c1a5_7e55);
        let servers = servers.unwrap_or(if rng.chance(0.7) { 3 } else { 5 });
        let tight = rng.chance(0.3);
        let mut options = ClusterOptions {
            seed,
            servers,
            clients: rng.range(2, 6) as usize,
            diskless,
            net_delay_min_ms: 1,
            net_delay_max_ms: rng.range(2, 12),
            fsync_min_ms: 1,
            fsync_max_ms: rng.range(2, 15),
            snapshot_min_ms: 1,
            snapshot_max_ms: rng.range(5, 60),
            fault_phase_ms: 6_000,
            fault_interval_min_ms: 200,
            fault_interval_max_ms: rng.range(600, 2_000),
            node: NodeConfig {
                voters: (1..=servers as Sid).collect(),
                diskless,
                snap_count: rng.range(20, 200),
                committed_log_max: rng.range(5, 100) as usize,
                // Drawn below, after the draws older seeds were made of.
                force_snapshot_sync: false,
                tick_time_ms: 100,
                // A tight pipeline and backlog make the leader refuse work (THROTTLEDOP); a
                // tight pipeline before a roomier backlog keeps work waiting without refusing
                // what a member sends again after its link broke.
                in_flight_max: if tight { 2 } else { 1000 },
                backlog_max: if tight {
                    if rng.chance(0.5) {
                        2
                    } else {
                        rng.range(3, 16) as usize
                    }
                } else {
                    4096
                },
                bug: None,
                reconfig: false,
                read_only: false,
                local_sessions: false,
            },
        };
        // A quarter of the runs sync every learner by SNAP: otherwise a learner gets one only
        // when the leader's log is too short, and the snapshot below a learner's own log
        // (the case that lost acknowledged writes, docs/verification.md) comes about once in
        // 100,000 seeds.
        options.node.force_snapshot_sync = rng.chance(0.25);
        // A quarter of the durable runs change the membership under the faults (the diskless
        // durability checker judges holders against a fixed set of voters).
        options.node.reconfig = !diskless && rng.chance(0.25);
        options
    }
}

/// A message on a client connection, client → server.
#[derive(Debug, Clone)]
pub enum ToServer {
    Connect(Vec<u8>),
    Request(Vec<u8>),
    Closed,
}

/// A message on a client connection, server → client.
#[derive(Debug, Clone)]
pub enum ToClient {
    Frame(Vec<u8>),
    Closed,
}

#[derive(Debug, Clone)]
pub enum Event {
    PeerFrame {
        from: Sid,
        to: Sid,
        generation: u64,
        frame: Vec<u8>,
    },
    PeerDown {
        node: Sid,
        peer: Sid,
        incarnation: u64,
    },
    ZabTick {
        node: Sid,
        incarnation: u64,
    },
    SessionTick {
        node: Sid,
        incarnation: u64,
    },
    FsyncDone {
        node: Sid,
        incarnation: u64,
    },
    /// The replica reads the store's progress channel (the server's task hop).
    ProgressRead {
        node: Sid,
        incarnation: u64,
    },
    SnapshotDone {
        node: Sid,
        incarnation: u64,
        took_ms: Millis,
    },
    ToServer {
        node: Sid,
        conn: u64,
        msg: ToServer,
    },
    ToClient {
        client: usize,
        conn: u64,
        msg: ToClient,
    },
    ClientWake {
        client: usize,
    },
    Fault,
    Restart {
        node: Sid,
    },
    /// A paused node (a long GC) runs again.
    Resume {
        node: Sid,
    },
    Heal,
    /// The leader–follower connection reset of the nemesis, waiting (`tries` more looks, a
    /// millisecond or two apart) for a moment when the leader's backlog holds work the follower
    /// forwarded: the window in which a reset tests what becomes of that work.
    ResetLink {
        tries: u32,
    },
    /// A crash soon after a learner installed its leader's snapshot: recovery must work from
    /// whatever that install left on disk (the snapshot, the log generation it starts, and
    /// any older files of this server's own).
    CrashAfterInstall {
        node: Sid,
        incarnation: u64,
    },
    /// Diskless: the power fails while the snapshot thread writes the first busy snapshot
    /// that carries a new epoch label: a tear must not leave the label claiming more of the
    /// epoch's initial history than the state recovered holds.
    CrashInLabelChange {
        node: Sid,
        incarnation: u64,
    },
}

struct Scheduled {
    at: Millis,
    seq: u64,
    event: Event,
}

impl PartialEq for Scheduled {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scheduled {
    /// Reversed: the heap pops the earliest event first, ties in scheduling order.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// A client connection: whose, to which node, opened in which of its boots.
#[derive(Debug, Clone, Copy)]
struct Conn {
    client: usize,
    node: Sid,
    incarnation: u64,
    /// When the last message towards the server is due, to keep the stream FIFO.
    last_to_server: Millis,
}

pub struct ClusterWorld {
    pub opts: ClusterOptions,
    pub now: Millis,
    seq: u64,
    queue: BinaryHeap<Scheduled>,
    pub rng: SimRng,
    /// Draws for the faults inside a crash (how far a running snapshot got), apart from
    /// `rng` so that adding them left every other draw of a seed where it was: seeds that
    /// found bugs still replay them.
    crash_rng: SimRng,
    pub net: Network,
    pub nodes: Vec<Node>,
    pub clients: Vec<Client>,
    conns: BTreeMap<u64, Conn>,
    next_conn: u64,
    pub history: Vec<OpRecord>,
    pub checker: ZabChecker,
    pub durability: super::durability::Durability,
    pub failures: Vec<String>,
    pub workload_on: bool,
    pub nemesis_on: bool,
    pub events: u64,
    pub sessions_expired: usize,
    /// Times a server started serving read-only (`NodeConfig::read_only`).
    pub read_only_starts: usize,
    /// History records of closes sent for a session local to the server they went to.
    pub local_closes: std::collections::HashSet<usize>,
    pub throttled: usize,
    /// Durability reports that named a zxid past the end of the reader's log (only a
    /// report from before a cut can).
    pub stale_reports: usize,
    /// The zxids each client request (session, cxid) was committed at by a leader.
    executed: BTreeMap<(i64, i32), Vec<Zxid>>,
    pub crashes: usize,
    /// When clients gave up on a silent connection, and on which request.
    pub hang_ups: Vec<(Millis, usize)>,
    /// When clients were told their session had expired.
    pub expiries: Vec<Millis>,
    /// Per node: paused until this time, and what arrived meanwhile (handed over in order).
    paused_until: Vec<Millis>,
    held: Vec<std::collections::VecDeque<Event>>,
}

impl ClusterWorld {
    pub fn new(opts: ClusterOptions) -> ClusterWorld {
        let rng = SimRng::new(opts.seed);
        let crash_rng = SimRng::new(opts.seed ^ 0xc4a5_4ed5_a9e7);
        let net = Network::new(opts.net_delay_min_ms, opts.net_delay_max_ms);
        let nodes = (1..=opts.servers as Sid).map(Node::new).collect();
        let clients = (0..opts.clients).map(Client::new).collect();
        let servers = opts.servers;
        ClusterWorld {
            checker: ZabChecker::new(opts.diskless),
            durability: Default::default(),
            opts,
            now: 0,
            seq: 0,
            queue: BinaryHeap::new(),
            rng,
            crash_rng,
            net,
            nodes,
            clients,
            conns: BTreeMap::new(),
            next_conn: 1,
            history: Vec::new(),
            failures: Vec::new(),
            workload_on: true,
            nemesis_on: false,
            events: 0,
            sessions_expired: 0,
            read_only_starts: 0,
            local_closes: Default::default(),
            throttled: 0,
            stale_reports: 0,
            executed: BTreeMap::new(),
            crashes: 0,
            hang_ups: Vec::new(),
            expiries: Vec::new(),
            paused_until: vec![0; servers],
            held: (0..servers).map(|_| Default::default()).collect(),
        }
    }

    pub fn fail(&mut self, what: String) {
        if self.failures.len() < 20 {
            self.failures.push(format!("t={} {what}", self.now));
        }
    }

    pub fn schedule(&mut self, at: Millis, event: Event) {
        self.seq += 1;
        self.queue.push(Scheduled {
            at,
            seq: self.seq,
            event,
        });
    }

    fn idx(sid: Sid) -> usize {
        (sid - 1) as usize
    }

    pub fn node(&self, sid: Sid) -> &Node {
        &self.nodes[Self::idx(sid)]
    }

    fn node_mut(&mut self, sid: Sid) -> &mut Node {
        &mut self.nodes[Self::idx(sid)]
    }

    pub fn sids(&self) -> Vec<Sid> {
        self.nodes.iter().map(|n| n.sid).collect()
    }

    fn time(&self) -> Now {
        Now {
            mono_ms: self.now,
            wall_ms: 1_700_000_000_000 + self.now as i64,
        }
    }

    pub fn run_until(&mut self, until: Millis) {
        while let Some(top) = self.queue.peek() {
            if top.at > until {
                break;
            }
            let Some(Scheduled { at, event, .. }) = self.queue.pop() else {
                break;
            };
            self.now = at;
            self.events += 1;
            if self.events > EVENTS_MAX {
                self.fail("event budget exhausted".into());
                self.queue.clear();
                break;
            }
            self.dispatch(event);
        }
        self.now = self.now.max(until);
    }

    /// The node an event is handled by, if it is one node's.
    fn target(event: &Event) -> Option<Sid> {
        match event {
            Event::PeerFrame { to, .. } => Some(*to),
            Event::PeerDown { node, .. }
            | Event::ZabTick { node, .. }
            | Event::SessionTick { node, .. }
            | Event::FsyncDone { node, .. }
            | Event::ProgressRead { node, .. }
            | Event::SnapshotDone { node, .. }
            | Event::ToServer { node, .. } => Some(*node),
            _ => None,
        }
    }

    fn dispatch(&mut self, event: Event) {
        // The replicas' log lines (`sim --log`) say when and on which server.
        let _span =
            tracing::info_span!("sim", t = self.now, server = Self::target(&event)).entered();
        // A paused process handles nothing until it resumes; what arrives waits in order.
        if let Some(sid) = Self::target(&event) {
            let i = Self::idx(sid);
            if self.paused_until[i] > self.now {
                if self.held[i].len() >= 100_000 {
                    self.fail(format!("server {sid}: too many events held during a pause"));
                    return;
                }
                self.held[i].push_back(event);
                return;
            }
        }
        self.handle(event);
    }

    /// Ends every pause now.
    pub fn resume_all(&mut self) {
        for sid in self.sids() {
            self.resume(sid);
        }
    }

    fn resume(&mut self, sid: Sid) {
        let i = Self::idx(sid);
        self.paused_until[i] = self.now;
        while let Some(event) = self.held[i].pop_front() {
            self.handle(event);
        }
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::PeerFrame {
                from,
                to,
                generation,
                frame,
            } => self.on_peer_frame(from, to, generation, frame),
            Event::PeerDown {
                node,
                peer,
                incarnation,
            } => {
                if self.node(node).incarnation == incarnation {
                    self.with_replica(node, |r, now| r.on_peer_down(now, peer));
                }
            }
            Event::ZabTick { node, incarnation } => {
                if self.node(node).incarnation == incarnation && self.node(node).is_up() {
                    self.with_replica(node, |r, now| r.zab_tick(now));
                    let next = Event::ZabTick { node, incarnation };
                    self.schedule(self.now + ZAB_TICK_MS, next);
                }
            }
            Event::SessionTick { node, incarnation } => {
                if self.node(node).incarnation == incarnation && self.node(node).is_up() {
                    self.with_replica(node, |r, now| r.tick(now));
                    self.check_hold_released(node);
                    let half_tick = u64::from(self.opts.node.tick_time_ms / 2).max(1);
                    let next = Event::SessionTick { node, incarnation };
                    self.schedule(self.now + half_tick, next);
                }
            }
            Event::FsyncDone { node, incarnation } => {
                if self.node(node).incarnation == incarnation {
                    self.node_mut(node).fsync_in_flight = false;
                    let flushed = match self.node_mut(node).replica.as_mut() {
                        Some(r) => r.store.flush_log(),
                        None => Ok(()),
                    };
                    if let Err(e) = flushed {
                        self.fail(format!("server {node}: the log cannot be written: {e}"));
                    }
                    self.after_input(node);
                }
            }
            Event::ProgressRead { node, incarnation } => {
                if self.node(node).incarnation == incarnation {
                    self.node_mut(node).report_in_flight = false;
                    if let Some(zxid) = self.node(node).take_report() {
                        self.count_stale_report(node, zxid);
                        self.with_replica(node, |r, now| r.on_log_durable(now, zxid));
                    }
                }
            }
            Event::SnapshotDone {
                node,
                incarnation,
                took_ms,
            } => {
                if self.node(node).incarnation == incarnation {
                    self.node_mut(node).snapshot_in_flight = false;
                    let now = self.now;
                    if let Some(r) = self.node_mut(node).replica.as_mut() {
                        r.store.set_clock(now);
                        r.store.run_snapshot(took_ms);
                    }
                    self.after_input(node);
                }
            }
            Event::ToServer { node, conn, msg } => self.on_to_server(node, conn, msg),
            Event::ToClient { client, conn, msg } => self.on_to_client(client, conn, msg),
            Event::ClientWake { client } => self.on_client_wake(client),
            Event::Fault => self.on_fault(),
            Event::Restart { node } => {
                if self.nemesis_on {
                    self.restart(node);
                }
            }
            Event::Resume { node } => self.resume(node),
            Event::Heal => self.net.heal(),
            Event::ResetLink { tries } => self.on_reset_link(tries),
            Event::CrashAfterInstall { node, incarnation } => {
                if self.nemesis_on && self.node(node).incarnation == incarnation {
                    self.crash(node);
                    let at = self.now + self.rng.range(20, 1_500);
                    self.schedule(at, Event::Restart { node });
                }
            }
            Event::CrashInLabelChange { node, incarnation } => {
                if self.nemesis_on && self.node(node).incarnation == incarnation {
                    // Its writes done, its fsync not: the tear cuts into the batch.
                    self.crash_with(node, 1.0, (1, 3));
                    let at = self.now + self.rng.range(20, 1_500);
                    self.schedule(at, Event::Restart { node });
                }
            }
        }
    }

    // ----- the host: inputs in, outputs executed -----

    /// Runs `f` on a live node's replica at the current time, then executes what it output.
    fn with_replica(&mut self, sid: Sid, f: impl FnOnce(&mut SimReplica, Now)) {
        let now = self.time();
        let Some(replica) = self.node_mut(sid).replica.as_mut() else {
            return;
        };
        replica.store.set_clock(now.mono_ms);
        let read_only = replica.serving_read_only();
        f(replica, now);
        if !read_only && replica.serving_read_only() {
            self.read_only_starts += 1;
        }
        self.after_input(sid);
    }

    /// Executes the replica's outputs until it produces no more; then schedules the disk
    /// work the store waits for and the replica's reading of the store's reports.
    fn after_input(&mut self, sid: Sid) {
        for _ in 0..10_000 {
            let Some(replica) = self.node_mut(sid).replica.as_mut() else {
                return;
            };
            let outputs = replica.take_outputs();
            if outputs.is_empty() {
                break;
            }
            for output in outputs {
                self.execute(sid, output);
            }
        }
        let fatal = self
            .node_mut(sid)
            .replica
            .as_mut()
            .and_then(|r| r.fatal.take());
        if let Some(fatal) = fatal {
            self.fail(format!("server {sid} stopped: {fatal}"));
            self.crash(sid);
            return;
        }
        if let Some(failure) = self.node(sid).store_failure() {
            self.fail(format!("server {sid}: storage failed: {failure}"));
        }
        let read_progress = self.node(sid).report_waiting() && !self.node(sid).report_in_flight;
        let node = self.node_mut(sid);
        let Some(replica) = node.replica.as_mut() else {
            return;
        };
        let incarnation = node.incarnation;
        let fsync = replica.store.log_queued() && !node.fsync_in_flight;
        let snapshot = replica.store.snapshot_running() && !node.snapshot_in_flight;
        let label = replica.store.epoch_label();
        // A batch that brings the label to a new epoch, or carries it over transactions of an
        // earlier one (the epoch's initial history, applied as a learner syncs).
        let new_label = snapshot
            && (std::mem::replace(&mut node.snapshot_label, label) != label
                || node.applied.epoch() < label);
        if fsync {
            node.fsync_in_flight = true;
            let at = self.now
                + self
                    .rng
                    .range(self.opts.fsync_min_ms, self.opts.fsync_max_ms);
            self.schedule(
                at,
                Event::FsyncDone {
                    node: sid,
                    incarnation,
                },
            );
        }
        if read_progress {
            // The report crosses a thread and a task queue: other events may come first, and
            // now and then a busy server reads it late.
            self.node_mut(sid).report_in_flight = true;
            let late = self.rng.chance(0.1);
            let at = self.now + self.rng.range(0, if late { 40 } else { 2 });
            self.schedule(
                at,
                Event::ProgressRead {
                    node: sid,
                    incarnation,
                },
            );
        }
        if snapshot {
            self.node_mut(sid).snapshot_in_flight = true;
            let took_ms = self
                .rng
                .range(self.opts.snapshot_min_ms, self.opts.snapshot_max_ms);
            if self.opts.diskless && new_label && self.nemesis_on && self.crash_rng.chance(0.2) {
                // Before SnapshotDone (scheduled next, so an equal time comes after).
                let at = self.now + self.crash_rng.range(0, took_ms);
                self.schedule(
                    at,
                    Event::CrashInLabelChange {
                        node: sid,
                        incarnation,
                    },
                );
            }
            self.schedule(
                self.now + took_ms,
                Event::SnapshotDone {
                    node: sid,
                    incarnation,
                    took_ms,
                },
            );
        }
    }

    fn execute(&mut self, sid: Sid, output: Output) {
        match output {
            Output::ToClient { conn, frame, .. } => {
                self.send_to_client(conn, ToClient::Frame(frame))
            }
            Output::Unanswered { .. } => {}
            // The simulated network links every pair of servers already.
            Output::Members { .. } => {}
            Output::CloseClient { conn } => {
                self.send_to_client(conn, ToClient::Closed);
                // The server's connection task ends and tells the core, as on a real socket.
                if self.conns.remove(&conn).is_some() {
                    let msg = ToServer::Closed;
                    self.schedule(
                        self.now,
                        Event::ToServer {
                            node: sid,
                            conn,
                            msg,
                        },
                    );
                }
            }
            Output::ToPeer { to, frame } => self.send_peer(sid, to, frame),
            Output::DisconnectPeer { peer } => {
                self.net.break_connection(sid, peer);
                let incarnation = self.node(peer).incarnation;
                self.schedule(
                    self.now,
                    Event::PeerDown {
                        node: peer,
                        peer: sid,
                        incarnation,
                    },
                );
            }
            Output::SendSnapshot { to, zxid, tree } => {
                let image = std::sync::Arc::new(storage::Persistence::snapshot_bytes_of(&tree));
                let msg = PeerMessage::Zab(zab::Message::Snap { zxid, image });
                self.send_peer(sid, to, codec::encode(&msg));
            }
            Output::Observed(seen) => self.observe(sid, seen),
        }
    }

    fn observe(&mut self, sid: Sid, seen: Observation) {
        match seen {
            Observation::Proposed(entry) => {
                self.checker.on_propose(sid, &entry);
                if self.opts.diskless {
                    self.durability_on_propose(entry.zxid);
                }
            }
            Observation::Delivered(entry) => {
                let leading = self.is_leader(sid);
                if leading {
                    self.note_executed(&entry);
                }
                if !self.opts.diskless && leading {
                    self.check_quorum_holds(sid, entry.zxid);
                }
                let parent = self.node(sid).applied;
                self.checker.on_deliver(sid, &entry, parent);
                let node = self.node_mut(sid);
                node.applied = entry.zxid;
                node.applied_set.insert(entry.zxid);
                if self.opts.diskless {
                    if leading {
                        self.durability_on_commit(sid, entry.zxid);
                    }
                    self.durability_on_deliver(sid, entry.zxid);
                }
            }
            Observation::RoleChanged {
                role,
                epoch,
                delivered,
            } => match role {
                Role::Leading => {
                    self.checker.on_established(sid, epoch, delivered, self.now);
                    if self.opts.diskless {
                        self.durability_on_established(sid, epoch);
                    }
                }
                Role::Halted => self.fail(format!("server {sid} halted")),
                _ => {}
            },
            Observation::Installed { zxid, digest } => {
                if self.nemesis_on && self.rng.chance(0.25) {
                    let incarnation = self.node(sid).incarnation;
                    let at = self.now + self.rng.range(1, 60);
                    self.schedule(
                        at,
                        Event::CrashAfterInstall {
                            node: sid,
                            incarnation,
                        },
                    );
                }
                self.checker.start_window(sid, zxid);
                let prefix = self
                    .checker
                    .committed
                    .range(..=zxid)
                    .map(|(z, _)| *z)
                    .collect();
                let node = self.node_mut(sid);
                node.applied = zxid;
                node.applied_set = prefix;
                let mut tree = tree::DataTree::new();
                for entry in self.checker.committed.range(..=zxid).map(|(_, e)| e) {
                    tree.apply(&entry.txn, &mut Vec::new());
                }
                if tree.digest() != digest {
                    self.fail(format!(
                        "server {sid} installed a snapshot at {zxid} that is not the committed prefix"
                    ));
                }
            }
        }
    }

    /// A member without a leader may hold its clients only up to its bound: past it, no
    /// client connection it knows of may remain open (they must move to the majority side).
    fn check_hold_released(&mut self, sid: Sid) {
        let hold_ms = self.opts.node.tick_time_ms as u64;
        let node = self.node(sid);
        let Some(replica) = node.replica.as_ref() else {
            return;
        };
        let Some(ensemble) = replica.ensemble.as_ref() else {
            return;
        };
        let overdue = !ensemble.serving
            && ensemble
                .not_serving_since
                .is_some_and(|since| self.now.saturating_sub(since) >= hold_ms);
        if !overdue {
            return;
        }
        let held = self
            .conns
            .iter()
            .filter(|(id, c)| {
                c.node == sid && c.incarnation == node.incarnation && replica.conns.contains_key(id)
            })
            .count();
        if held > 0 {
            self.fail(format!(
                "server {sid} has had no leader for {hold_ms} ms or more and still holds {held} client connections"
            ));
        }
    }

    /// Records a leader's commit of a client request, for [`Self::check_executed_once`].
    fn note_executed(&mut self, entry: &zab::SharedEntry) {
        let header = &entry.txn.header;
        if header.client_id == 0 || header.cxid <= 0 {
            return;
        }
        let zxids = self
            .executed
            .entry((header.client_id, header.cxid))
            .or_default();
        if !zxids.contains(&entry.zxid) {
            zxids.push(entry.zxid);
        }
    }

    /// Every client request is executed at most once: no (session, cxid) is committed under
    /// two zxids that both stay in the history (a write sent again after a failover must not
    /// run twice). Judged at the end of the run, because in diskless mode a commit can be lost
    /// later (every holder crashed) and only then may the request have run again; the loss is
    /// known only when the next leader is established, which can come after the second commit.
    pub(crate) fn check_executed_once(&mut self) {
        let mut twice = Vec::new();
        for ((session, cxid), zxids) in &self.executed {
            let kept: Vec<&Zxid> = zxids
                .iter()
                .filter(|z| !self.checker.lost.contains_key(z))
                .collect();
            if kept.len() > 1 {
                twice.push(format!(
                    "session 0x{session:x} request {cxid} committed more than once, at {}",
                    kept.iter()
                        .map(|z| z.to_string())
                        .collect::<Vec<_>>()
                        .join(" and at ")
                ));
            }
        }
        for what in twice {
            self.fail(what);
        }
    }

    fn count_stale_report(&mut self, sid: Sid, zxid: i64) {
        let logged = self
            .node(sid)
            .replica
            .as_ref()
            .and_then(|r| r.ensemble.as_ref())
            .map(|e| e.zab.last_logged());
        if logged.is_some_and(|last| zxid > last.as_i64()) {
            self.stale_reports += 1;
        }
    }

    fn is_leader(&self, sid: Sid) -> bool {
        self.node(sid)
            .replica
            .as_ref()
            .and_then(|r| r.ensemble.as_ref())
            .is_some_and(|e| e.zab.role() == Role::Leading)
    }

    /// ZAB.md §9 invariant 6: when a leader commits, a quorum of voters holds the transaction
    /// on disk, so no later quorum can come up without it.
    fn check_quorum_holds(&mut self, leader: Sid, zxid: Zxid) {
        for node in &mut self.nodes {
            node.note_durable();
        }
        let holds = |sid: Sid| {
            self.nodes
                .iter()
                .find(|n| n.sid == sid)
                .is_some_and(|n| n.wiped || n.durable >= zxid)
        };
        let holding: Vec<Sid> = self
            .nodes
            .iter()
            .map(|n| n.sid)
            .filter(|&s| holds(s))
            .collect();
        // The leader's configuration after the commit: a reconfiguration is active once
        // committed, and its voters must hold everything up to it.
        let config = self
            .node(leader)
            .replica
            .as_ref()
            .and_then(|r| r.ensemble.as_ref())
            .map(|e| e.zab.config().clone());
        let Some(mut config) = config else {
            return;
        };
        // A configuration proposed after this transaction (in the same step, before this
        // check runs) does not bind it.
        if config.pending.as_ref().is_some_and(|p| p.version > zxid) {
            config.pending = None;
        }
        if !config.is_quorum(holds) {
            self.fail(format!(
                "durability: leader {leader} committed {zxid} while only {holding:?} hold it, no quorum of voters {:?} (pending {:?})",
                config.voters,
                config.pending.as_ref().map(|p| &p.voters)
            ));
        }
    }

    fn send_peer(&mut self, from: Sid, to: Sid, frame: Vec<u8>) {
        match self.net.send(&mut self.rng, self.now, from, to) {
            Transit::Deliver { at, generation } => self.schedule(
                at,
                Event::PeerFrame {
                    from,
                    to,
                    generation,
                    frame,
                },
            ),
            Transit::Lost => {}
        }
    }

    fn on_peer_frame(&mut self, from: Sid, to: Sid, generation: u64, frame: Vec<u8>) {
        if !self.node(to).is_up() {
            return;
        }
        match self.net.receive(from, to, generation) {
            Receive::Stale => return,
            Receive::AfterBreak => self.with_replica(to, |r, now| r.on_peer_down(now, from)),
            Receive::Fresh => {}
        }
        self.with_replica(to, |r, now| r.on_peer_frame(now, from, &frame));
    }

    /// Queues `msg` on a client connection, behind what is already on its way.
    fn send_to_client(&mut self, conn: u64, msg: ToClient) {
        let Some(info) = self.conns.get(&conn).copied() else {
            return;
        };
        let client = info.client;
        let at = (self.now + self.rng.range(0, 2)).max(self.clients[client].last_reply_at);
        self.clients[client].last_reply_at = at;
        self.schedule(at, Event::ToClient { client, conn, msg });
    }

    fn send_to_server(&mut self, conn: u64, msg: ToServer) {
        let Some(info) = self.conns.get_mut(&conn) else {
            return;
        };
        let at = (self.now + self.rng.range(0, 2)).max(info.last_to_server);
        info.last_to_server = at;
        let node = info.node;
        self.schedule(at, Event::ToServer { node, conn, msg });
    }

    /// A client frame reaches its server, which decodes it as the server's connection does.
    fn on_to_server(&mut self, sid: Sid, conn: u64, msg: ToServer) {
        let live = self
            .conns
            .get(&conn)
            .is_some_and(|c| c.incarnation == self.node(sid).incarnation);
        if !self.node(sid).is_up() || (!live && !matches!(msg, ToServer::Closed)) {
            // The socket died with the server it was open to.
            self.send_to_client(conn, ToClient::Closed);
            self.conns.remove(&conn);
            return;
        }
        let input = match msg {
            ToServer::Connect(frame) => {
                let request = client::unframe(&frame).and_then(|b| {
                    ConnectRequest::decode(&mut Reader::new(b)).map_err(|e| e.to_string())
                });
                match request {
                    Ok(request) => ClientInput::Connect {
                        conn,
                        peer: std::net::SocketAddr::from(([127, 0, 0, 1], 40_000)),
                        request,
                        tls_ids: Vec::new(),
                    },
                    Err(e) => return self.fail(format!("undecodable connect request: {e}")),
                }
            }
            ToServer::Request(frame) => {
                let decoded = client::unframe(&frame).and_then(|body| {
                    let mut r = Reader::new(body);
                    let header = RequestHeader::decode(&mut r).map_err(|e| e.to_string())?;
                    let request = Request::decode(header.op_type, r.rest());
                    Ok((header, request))
                });
                match decoded {
                    Ok((header, request)) => ClientInput::Request {
                        conn,
                        xid: header.xid,
                        op_type: header.op_type,
                        request,
                        received_ms: self.now,
                    },
                    Err(e) => return self.fail(format!("undecodable request: {e}")),
                }
            }
            ToServer::Closed => ClientInput::Closed { conn },
        };
        self.with_replica(sid, |r, now| r.on_client(now, input));
    }

    // ----- clients -----

    pub fn start_clients(&mut self) {
        for i in 0..self.clients.len() {
            let at = self.now + self.rng.range(0, 20);
            self.schedule(at, Event::ClientWake { client: i });
        }
    }

    /// The client hangs up (a timeout): the server hears of it too.
    fn client_hang_up(&mut self, ci: usize) {
        if let Some(conn) = self.clients[ci].conn {
            self.send_to_server(conn, ToServer::Closed);
        }
        self.clients[ci].disconnect();
    }

    fn on_client_wake(&mut self, ci: usize) {
        let next = self.now + self.rng.range(5, 40);
        self.schedule(next, Event::ClientWake { client: ci });
        let c = &self.clients[ci];
        let silent_since = match c.phase {
            Phase::Connecting { since } => Some(since),
            _ => c
                .outstanding
                .front()
                .map(|&(_, record)| self.history[record].invoked_at),
        };
        if silent_since.is_some_and(|t| self.now > t + client::TIMEOUT_MS) {
            let waiting = self.clients[ci].outstanding.front().map(|&(_, r)| r);
            self.hang_ups
                .push((self.now, waiting.unwrap_or(usize::MAX)));
            self.client_hang_up(ci);
        }
        if !self.workload_on || self.now < self.clients[ci].quiet_until {
            return;
        }
        if self.nemesis_on && self.rng.below(1000) < 2 {
            // The client goes away without a word for longer than its session lives: the
            // leader must expire the session and remove its ephemerals.
            self.client_hang_up(ci);
            let away = client::SESSION_TIMEOUT_MS as Millis * 3 / 2;
            self.clients[ci].quiet_until = self.now + away;
            self.clients[ci].may_have_expired = true;
            return;
        }
        match self.clients[ci].phase {
            Phase::Disconnected => self.client_connect(ci),
            Phase::Connecting { .. } => {}
            Phase::Connected => self.client_issue(ci),
        }
    }

    fn client_connect(&mut self, ci: usize) {
        let sid = self.rng.range(1, self.nodes.len() as u64);
        let conn = self.next_conn;
        self.next_conn += 1;
        self.conns.insert(
            conn,
            Conn {
                client: ci,
                node: sid,
                incarnation: self.node(sid).incarnation,
                last_to_server: self.now,
            },
        );
        let c = &mut self.clients[ci];
        c.server = Some(sid);
        c.conn = Some(conn);
        c.phase = Phase::Connecting { since: self.now };
        let frame = client::connect_frame(&c.connect_request());
        self.send_to_server(conn, ToServer::Connect(frame));
    }

    fn client_issue(&mut self, ci: usize) {
        if self.clients[ci].outstanding.len() + 2 > client::OUTSTANDING_MAX {
            return;
        }
        let key = self.rng.below(KEYS.len() as u64) as usize;
        let roll = self.rng.below(100);
        // With local sessions, membership changes come with the faults only: in the healthy
        // phase that follows, a server left out would end its local sessions, which the checks
        // there forbid.
        let in_phase = self.nemesis_on || !self.opts.node.local_sessions;
        let mut reconfig =
            (roll == 59 && self.opts.node.reconfig && in_phase && self.rng.chance(0.3))
                .then(|| self.random_membership());
        let c = &mut self.clients[ci];
        let op = match roll {
            0..=9 => ClientOp::Create {
                key,
                value: c.unique_value(),
            },
            10..=12 => ClientOp::CreateEphemeral {
                key,
                value: c.unique_value(),
            },
            13..=14 => ClientOp::CreateSequential {
                value: c.unique_value(),
            },
            15..=39 => ClientOp::Set {
                key,
                value: c.unique_value(),
                version: -1,
            },
            40..=49 => ClientOp::Set {
                key,
                value: c.unique_value(),
                version: c.known_version[key],
            },
            50..=54 => ClientOp::Delete { key },
            55..=58 => ClientOp::Multi {
                key,
                version: c.known_version[key],
                value: c.unique_value(),
                other: (key + 1) % KEYS.len(),
            },
            59 if reconfig.is_some() => reconfig.take().unwrap_or(ClientOp::Sync),
            59 if self.nemesis_on => ClientOp::CloseSession,
            59 => ClientOp::Delete { key },
            60..=76 => ClientOp::Get { key },
            77..=79 => ClientOp::AddWatch { key },
            _ => ClientOp::Sync,
        };
        let sync = matches!(op, ClientOp::Sync);
        let sync_record = self.client_send(ci, op);
        if sync {
            let get = self.client_send(ci, ClientOp::Get { key });
            self.history[get].after_sync = Some(sync_record);
        }
    }

    /// A new membership for a reconfiguration: two or more voters, some of the rest observers,
    /// the others out of the configuration.
    fn random_membership(&mut self) -> ClientOp {
        let servers = self.nodes.len() as u64;
        let mut sids: Vec<Sid> = (1..=servers).collect();
        for i in (1..sids.len()).rev() {
            let j = self.rng.below(i as u64 + 1) as usize;
            sids.swap(i, j);
        }
        let voters_n = self.rng.range(2, servers.max(2)) as usize;
        let rest = sids.split_off(voters_n.min(sids.len()));
        let mut observers: Vec<Sid> = rest.into_iter().filter(|_| self.rng.chance(0.5)).collect();
        sids.sort_unstable();
        observers.sort_unstable();
        ClientOp::Reconfig {
            voters: sids,
            observers,
        }
    }

    fn client_send(&mut self, ci: usize, op: ClientOp) -> usize {
        let c = &mut self.clients[ci];
        let xid = c.next_xid;
        c.next_xid += 1;
        let record = self.history.len();
        c.outstanding.push_back((xid, record));
        let session = c.session.as_ref().map_or(0, |s| s.0);
        let server = c.server.unwrap_or(0);
        let frame = client::request_frame(xid, &client::request_of(&op));
        let conn = c.conn;
        // A local session's close is answered by its server alone (see `OpResult::ClosedLocally`).
        let local_close = matches!(op, ClientOp::CloseSession)
            && self
                .nodes
                .iter()
                .filter(|n| n.sid == server)
                .filter_map(|n| n.replica.as_ref())
                .any(|r| r.is_local_session(session));
        if local_close {
            self.local_closes.insert(record);
        }
        self.history.push(OpRecord {
            client: session,
            cxid: xid,
            op,
            server,
            invoked_at: self.now,
            completed_at: None,
            result: None,
            after_sync: None,
        });
        if let Some(conn) = conn {
            self.send_to_server(conn, ToServer::Request(frame));
        }
        record
    }

    fn on_to_client(&mut self, ci: usize, conn: u64, msg: ToClient) {
        if self.clients[ci].conn != Some(conn) {
            return;
        }
        let frame = match msg {
            ToClient::Closed => {
                self.conns.remove(&conn);
                self.clients[ci].disconnect();
                return;
            }
            ToClient::Frame(frame) => frame,
        };
        if let Phase::Connecting { .. } = self.clients[ci].phase {
            match client::decode_connect_response(&frame) {
                Ok(response) if response.session_id == 0 => {
                    // Expired (or lost with a diskless ensemble): start over with a new one.
                    if !std::mem::take(&mut self.clients[ci].may_have_expired) {
                        self.expiries.push(self.now);
                    }
                    let c = &mut self.clients[ci];
                    c.session = None;
                    c.last_zxid = 0;
                    self.sessions_expired += 1;
                }
                Ok(response) => {
                    let c = &mut self.clients[ci];
                    c.may_have_expired = false;
                    c.session = Some((response.session_id, response.passwd));
                    c.phase = Phase::Connected;
                    if self.opts.node.reconfig {
                        self.send_to_server(conn, ToServer::Request(client::super_auth_frame()));
                    }
                }
                Err(e) => self.fail(format!("client {ci}: undecodable connect response: {e}")),
            }
            return;
        }
        let (header, body) = match client::decode_incoming(&frame) {
            Ok(Incoming::Event { path, zxid }) => {
                if let Some(key) = KEYS.iter().position(|k| *k == path) {
                    let c = &mut self.clients[ci];
                    c.watches.remove(&key);
                    if let Some(since) = c.persistent.get_mut(&key) {
                        *since = (*since).max(Zxid::from_i64(zxid));
                    }
                }
                return;
            }
            Ok(Incoming::Reply { header, body }) => (header, body),
            Err(e) => return self.fail(format!("client {ci}: undecodable reply: {e}")),
        };
        if header.xid == client::AUTH_XID {
            if header.err != 0 {
                self.fail(format!("client {ci}: super auth refused ({})", header.err));
            }
            return;
        }
        self.check_events_came_first(ci, Zxid::from_i64(header.zxid));
        let Some((expected, record)) = self.clients[ci].outstanding.pop_front() else {
            return self.fail(format!(
                "client {ci}: reply {} with nothing outstanding",
                header.xid
            ));
        };
        if expected != header.xid {
            self.fail(format!(
                "FIFO: client {ci} expected reply {expected}, got {}",
                header.xid
            ));
            return;
        }
        let result = match client::result_of(&self.history[record].op, &header, &body) {
            Ok(_) if header.err == 0 && self.local_closes.contains(&record) => {
                OpResult::ClosedLocally
            }
            Ok(result) => result,
            Err(e) => return self.fail(format!("client {ci}: {e}")),
        };
        if result == OpResult::Refused {
            self.throttled += 1;
        }
        let c = &mut self.clients[ci];
        c.last_zxid = c.last_zxid.max(header.zxid);
        if let (ClientOp::Get { key }, OpResult::Read { value, zxid }) =
            (&self.history[record].op, &result)
        {
            self.clients[ci].known_version[*key] = value.as_ref().map_or(-1, |v| v.1);
            // getData with a watch leaves one when the node exists.
            if value.is_some() {
                self.clients[ci].watches.insert(*key, *zxid);
            }
        }
        if let (ClientOp::AddWatch { key }, OpResult::Watched { zxid }) =
            (&self.history[record].op, &result)
        {
            self.clients[ci].persistent.entry(*key).or_insert(*zxid);
        }
        let closed = matches!(self.history[record].op, ClientOp::CloseSession) && header.err == 0;
        let rec = &mut self.history[record];
        rec.completed_at = Some(self.now);
        rec.result = Some(result);
        if closed {
            // The session is over; the next connection starts a new one.
            let c = &mut self.clients[ci];
            c.session = None;
            c.last_zxid = 0;
            self.client_hang_up(ci);
        }
    }

    /// DESIGN.md §1 guarantee 3: a client sees a watch event before any reply that reflects
    /// the change. A reply at `zxid` must find no watch of this connection whose key changed
    /// at or before `zxid` without its event having arrived.
    fn check_events_came_first(&mut self, ci: usize, zxid: Zxid) {
        let mut missed = None;
        let c = &self.clients[ci];
        for (&key, &since) in c.watches.iter().chain(c.persistent.iter()) {
            if zxid <= since {
                continue;
            }
            let changed = self
                .checker
                .committed
                .range(Zxid(since.0 + 1)..=zxid)
                .find(|(_, e)| client::changed_paths(&e.txn.body).contains(&KEYS[key]));
            if let Some((&at, _)) = changed {
                missed = Some((key, at));
                break;
            }
        }
        if let Some((key, at)) = missed {
            self.fail(format!(
                "watch order: client {ci} got a reply at {zxid} before the event of {} changed at {at}",
                KEYS[key]
            ));
            self.clients[ci].watches.remove(&key);
            self.clients[ci].persistent.remove(&key);
        }
    }

    // ----- faults, crashes and restarts -----

    pub fn boot(&mut self, sid: Sid) {
        if self.node(sid).is_up() {
            return;
        }
        let now = self.time();
        let seed = self.rng.next_u64();
        let config = self.opts.node.clone();
        if let Err(e) = self.node_mut(sid).boot(&config, now, seed) {
            self.fail(e);
            return;
        }
        let applied = self.node(sid).applied;
        self.check_label(sid, applied);
        self.checker.start_window(sid, applied);
        let prefix = self
            .checker
            .committed
            .range(..=applied)
            .map(|(z, _)| *z)
            .collect();
        self.node_mut(sid).applied_set = prefix;
        let incarnation = self.node(sid).incarnation;
        self.after_input(sid);
        let phase = self.rng.range(0, ZAB_TICK_MS - 1);
        self.schedule(
            self.now + phase,
            Event::ZabTick {
                node: sid,
                incarnation,
            },
        );
        self.schedule(
            self.now + phase,
            Event::SessionTick {
                node: sid,
                incarnation,
            },
        );
    }

    /// Diskless (DESIGN.md §5): an amnesiac server votes with the epoch label its disk
    /// recovered, which claims the state holds that epoch's whole initial history: every
    /// committed transaction of an earlier epoch. A label above what the state holds could
    /// elect a leader that lacks committed writes.
    fn check_label(&mut self, sid: Sid, applied: Zxid) {
        let label = self.node(sid).label;
        if !self.opts.diskless || label == 0 {
            return;
        }
        let initial_history_end = self
            .checker
            .committed
            .range(..Zxid::new(label, 0))
            .next_back()
            .map(|(z, _)| *z);
        if let Some(end) = initial_history_end.filter(|&end| end > applied) {
            self.fail(format!(
                "server {sid} recovered epoch label {label} with its state at {applied}, which lacks {end} of that epoch's initial history"
            ));
        }
    }

    pub fn restart(&mut self, sid: Sid) {
        self.boot(sid);
    }

    pub fn crash(&mut self, sid: Sid) {
        self.crash_with(sid, 0.5, (0, 8));
    }

    /// A crash that comes while the snapshot thread writes (if it is at work) with
    /// probability `mid_snapshot`, after a number of its writes drawn from `ops`.
    fn crash_with(&mut self, sid: Sid, mid_snapshot: f64, ops: (u64, u64)) {
        if !self.node(sid).is_up() {
            return;
        }
        self.crashes += 1;
        if self.crash_rng.chance(mid_snapshot) {
            // The power fails while the snapshot thread writes (if it is at work).
            let ops = self.crash_rng.range(ops.0, ops.1);
            self.node_mut(sid).fail_mid_snapshot(ops);
        }
        self.node_mut(sid).note_durable();
        let crashes = self.crashes as u64;
        self.node_mut(sid).last_crash_at = crashes;
        let tear = Tear::Prefix(self.rng.next_u64());
        self.node_mut(sid).crash(tear);
        // The process is gone, so are its client sockets.
        let gone: Vec<u64> = self
            .conns
            .iter()
            .filter(|(_, c)| c.node == sid)
            .map(|(&conn, _)| conn)
            .collect();
        for conn in gone {
            self.send_to_client(conn, ToClient::Closed);
            self.conns.remove(&conn);
        }
        for peer in self.sids() {
            if peer != sid {
                self.net.break_connection(sid, peer);
                let incarnation = self.node(peer).incarnation;
                self.schedule(
                    self.now,
                    Event::PeerDown {
                        node: peer,
                        peer: sid,
                        incarnation,
                    },
                );
            }
        }
    }

    pub fn leader(&self) -> Option<Sid> {
        self.nodes
            .iter()
            .find(|n| {
                n.replica
                    .as_ref()
                    .and_then(|r| r.ensemble.as_ref())
                    .is_some_and(|e| e.zab.role() == Role::Leading)
            })
            .map(|n| n.sid)
    }

    pub fn schedule_fault(&mut self) {
        let at = self.now
            + self.rng.range(
                self.opts.fault_interval_min_ms,
                self.opts.fault_interval_max_ms,
            );
        self.schedule(at, Event::Fault);
    }

    fn on_fault(&mut self) {
        if !self.nemesis_on {
            return;
        }
        self.schedule_fault();
        if !self.opts.diskless && self.rng.chance(0.05) {
            // Every server loses power at once: fsynced state survives, and each boots with
            // what it knew was committed, behind what its log holds.
            for sid in self.sids() {
                self.crash(sid);
                let at = self.now + self.rng.range(20, 1_500);
                self.schedule(at, Event::Restart { node: sid });
            }
            return;
        }
        if self.opts.diskless && self.rng.chance(0.1) {
            // Every server loses power at once: what came after the last snapshots may go.
            self.durability.power_loss_at.get_or_insert(self.now);
            for sid in self.sids() {
                self.crash(sid);
                let at = self.now + self.rng.range(20, 1_500);
                self.schedule(at, Event::Restart { node: sid });
            }
            return;
        }
        match self.rng.below(7) {
            6 => {
                // A planned hand-over (SIGTERM on the leader, or an operator's command), under
                // whatever else is going on.
                if let Some(leader) = self.leader() {
                    let within = u64::from(self.opts.node.tick_time_ms) * 2;
                    self.with_replica(leader, |r, now| {
                        let _ = r.transfer_leadership(now, within);
                    });
                }
            }
            5 => {
                // A connection reset between the leader and a follower: no partition, so the
                // follower rejoins the same leader at once, its forwarded writes perhaps still
                // in that leader's pipeline.
                self.on_reset_link(40);
            }
            4 => {
                // A pause longer than syncLimit: the others must move on, and the paused one
                // must not act on what it believed before.
                let sids = self.sids();
                if let Some(&sid) = self.rng.pick(&sids) {
                    let until = self.now + self.rng.range(300, 2_500);
                    let i = Self::idx(sid);
                    self.paused_until[i] = self.paused_until[i].max(until);
                    self.schedule(until, Event::Resume { node: sid });
                }
            }
            0 => {
                let up: Vec<Sid> = self
                    .sids()
                    .into_iter()
                    .filter(|&s| self.node(s).is_up())
                    .collect();
                if let Some(&sid) = self.rng.pick(&up) {
                    self.crash(sid);
                    let at = self.now + self.rng.range(20, 1_500);
                    self.schedule(at, Event::Restart { node: sid });
                }
            }
            1 => {
                if let Some(sid) = self.leader() {
                    self.crash(sid);
                    let at = self.now + self.rng.range(20, 1_500);
                    self.schedule(at, Event::Restart { node: sid });
                }
            }
            2 => {
                let sids = self.sids();
                let (a, b): (Vec<Sid>, Vec<Sid>) = sids.iter().partition(|_| self.rng.chance(0.5));
                for &x in &a {
                    for &y in &b {
                        self.net.block(x, y);
                        self.net.block(y, x);
                    }
                }
                let at = self.now + self.rng.range(100, 2_000);
                self.schedule(at, Event::Heal);
            }
            _ => {
                let sids = self.sids();
                if let (Some(&x), Some(&y)) = (self.rng.pick(&sids), self.rng.pick(&sids)) {
                    if x != y {
                        self.net.block(x, y);
                        let at = self.now + self.rng.range(100, 2_000);
                        self.schedule(at, Event::Heal);
                    }
                }
            }
        }
    }

    /// Resets the link between the leader and a follower whose forwarded work waits in the
    /// leader's backlog; with no such follower, looks again shortly, and after the last look
    /// resets the link of any follower. Half the time the leader's links to the other members
    /// are congested at the same moment, both ways, for tens of ms (a clog ends by itself): its
    /// pipeline then stalls, and the follower's work still waits when the follower has synced
    /// again and sends it once more.
    fn on_reset_link(&mut self, tries: u32) {
        let Some(leader) = self.leader() else {
            return;
        };
        let followers: Vec<Sid> = self.sids().into_iter().filter(|&s| s != leader).collect();
        // Only while the leader keeps a quorum without that follower: a leader that loses its
        // quorum drops its whole backlog anyway.
        let serving = |s: Sid| {
            self.paused_until[Self::idx(s)] <= self.now
                && self
                    .node(s)
                    .replica
                    .as_ref()
                    .and_then(|r| r.ensemble.as_ref())
                    .is_some_and(|e| e.serving)
        };
        let majority = self.opts.servers / 2 + 1;
        let waiting: Vec<Sid> = {
            let ensemble = self
                .node(leader)
                .replica
                .as_ref()
                .and_then(|r| r.ensemble.as_ref());
            followers
                .iter()
                .copied()
                .filter(|&f| ensemble.is_some_and(|e| e.backlog_holds_work_of(f)))
                .filter(|&f| {
                    let others = followers.iter().filter(|&&o| o != f && serving(o)).count();
                    others + 1 >= majority
                })
                .collect()
        };
        if let Some(&follower) = self.rng.pick(&waiting) {
            self.reset_link(leader, follower);
            if self.rng.chance(0.5) {
                let until = self.now + self.rng.range(20, 150);
                for &other in followers.iter().filter(|&&o| o != follower) {
                    self.net.clog(leader, other, until);
                    self.net.clog(other, leader, until);
                }
            }
        } else if tries > 0 {
            let at = self.now + self.rng.range(1, 3);
            self.schedule(at, Event::ResetLink { tries: tries - 1 });
        } else if let Some(&follower) = self.rng.pick(&followers) {
            self.reset_link(leader, follower);
        }
    }

    /// Breaks the connection between `a` and `b`; both ends hear of it now.
    fn reset_link(&mut self, a: Sid, b: Sid) {
        self.net.break_connection(a, b);
        for (node, peer) in [(a, b), (b, a)] {
            let incarnation = self.node(node).incarnation;
            self.schedule(
                self.now,
                Event::PeerDown {
                    node,
                    peer,
                    incarnation,
                },
            );
        }
    }

    /// The leader every live node follows, once every live member of its configuration
    /// serves it (a server a reconfiguration left out follows it without serving).
    pub fn settled_leader(&self) -> Option<Sid> {
        let ensembles: Vec<&replica::ensemble::Ensemble> = self
            .nodes
            .iter()
            .filter_map(|n| n.replica.as_ref().and_then(|r| r.ensemble.as_deref()))
            .collect();
        let leading = ensembles
            .iter()
            .find(|e| e.zab.role() == Role::Leading && e.serving)?;
        let leader = leading.me();
        let config = leading.zab.config();
        let settled = ensembles
            .iter()
            .all(|e| e.zab.leader() == Some(leader) && (e.serving || !config.is_member(e.me())));
        settled.then_some(leader)
    }

    /// One line per node, for failure messages.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for n in &self.nodes {
            match n.replica.as_ref().and_then(|r| r.ensemble.as_ref()) {
                Some(e) => out.push_str(&format!(
                    "[s{} {:?} leader={:?} epoch={} last={} delivered={} serving={} config={} voters={:?} pending={:?}] ",
                    n.sid,
                    e.zab.role(),
                    e.zab.leader(),
                    e.zab.current_epoch(),
                    e.zab.last_logged(),
                    e.zab.delivered(),
                    e.serving,
                    e.zab.config().version,
                    e.zab.config().voters,
                    e.zab.config().pending.as_ref().map(|p| (p.version, &p.voters)),
                )),
                None => out.push_str(&format!("[s{} down] ", n.sid)),
            }
        }
        out
    }

    /// The tree digest and applied zxid of every live node.
    pub fn applied_states(&self) -> Vec<(Sid, Zxid, u64)> {
        self.nodes
            .iter()
            .filter_map(|n| {
                let r = n.replica.as_ref()?;
                Some((
                    n.sid,
                    Zxid::from_i64(r.tree.last_processed_zxid()),
                    r.tree.digest(),
                ))
            })
            .collect()
    }
}
