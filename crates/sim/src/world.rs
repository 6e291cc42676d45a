//! The simulated world: servers, clients, network, disks and one clock, driven by a single
//! event queue. Nothing here reads real time or OS randomness; a seed determines every event.

use crate::client::{ClientRequest, Reply, SimClient};
use crate::durability::DurabilityChecker;
use crate::network::Network;
use crate::ops::{ClientId, ClientOp, OpRecord, KEYS};
use crate::options::SimOptions;
use crate::rng::SimRng;
use crate::server::{decode_image, replay, SimServer};
use crate::trace::Trace;
use crate::zab_checker::ZabChecker;
use std::cmp::Ordering;
use std::collections::{BTreeSet, BinaryHeap};
use tree::Prep;
use zab::{Boot, Config, Durability, Message, Millis, Role, SharedEntry, Sid, Zab};

/// Places in a learner's NEWLEADER handling where a scenario can crash it (ZAB.md §9,
/// fault schedule 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashPoint {
    /// After the sync transactions were appended (and maybe fsynced), before currentEpoch.
    BeforeCurrentEpoch,
    /// After currentEpoch was written, before the ACK left.
    AfterCurrentEpoch,
    /// Just before the NEWLEADER ACK leaves.
    BeforeNewLeaderAck,
    /// Shortly after the NEWLEADER ACK left (it reaches the leader; the disk may lag).
    AfterNewLeaderAck,
}

/// What travels between servers.
#[derive(Debug, Clone)]
pub enum Wire {
    Zab(Message),
    /// A client write or sync forwarded by `origin` to its leader.
    Forward {
        origin: Sid,
        client: ClientId,
        cxid: i32,
        op: ClientOp,
    },
}

#[derive(Debug, Clone)]
pub enum Event {
    Deliver {
        from: Sid,
        to: Sid,
        generation: u64,
        wire: Wire,
    },
    PeerDown {
        node: Sid,
        peer: Sid,
        incarnation: u64,
    },
    Tick {
        node: Sid,
        incarnation: u64,
    },
    FsyncDone {
        node: Sid,
        incarnation: u64,
    },
    ToServer {
        server: Sid,
        req: ClientRequest,
    },
    ToClient {
        client: usize,
        conn: u64,
        reply: Reply,
    },
    ClientWake {
        client: usize,
    },
    Restart {
        node: Sid,
    },
    Crash {
        node: Sid,
        restart: bool,
    },
    /// A pause ends.
    Resume {
        node: Sid,
    },
    /// Diskless: a busy snapshot finished writing.
    SnapshotDone {
        node: Sid,
        incarnation: u64,
    },
    /// Diskless: the rest after a busy snapshot is over (the server's idle tick).
    SnapshotRested {
        node: Sid,
        incarnation: u64,
    },
    Heal,
}

struct Scheduled {
    at: Millis,
    pub(crate) seq: u64,
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

/// Events a run may process before it is declared stuck.
pub const EVENTS_MAX: u64 = 20_000_000;
/// Ticks are delivered to Zab this often.
pub const TICK_MS: Millis = 10;

pub struct World {
    pub opts: SimOptions,
    pub rng: SimRng,
    pub now: Millis,
    pub(crate) seq: u64,
    queue: BinaryHeap<Scheduled>,
    pub servers: Vec<SimServer>,
    pub net: Network,
    pub clients: Vec<SimClient>,
    pub history: Vec<OpRecord>,
    pub checker: ZabChecker,
    /// Diskless mode's durability checks.
    pub durability: DurabilityChecker,
    /// Crashes (and wipes) so far, over all servers.
    pub crash_seq: u64,
    pub trace: Trace,
    pub failures: Vec<String>,
    pub events: u64,
    pub(crate) voters: BTreeSet<Sid>,
    pub(crate) observers: BTreeSet<Sid>,
    /// (crash time, first detection, established) of the last measured leader loss.
    pub leader_loss: Option<(Millis, Option<Millis>)>,
    pub election_samples: Vec<Millis>,
    /// Diskless: client sessions expired because the history they saw was lost.
    pub sessions_expired: usize,
    /// Diskless: per full-house establishment, the time since the last voter booted.
    pub full_house_samples: Vec<Millis>,
    /// Diskless: the liveness phase's measured recovery from a power loss.
    pub recovery_samples: Vec<Millis>,
    /// Clients issue work only while this is set.
    pub workload_on: bool,
    /// While set, restarts and crashes scheduled by the nemesis take effect.
    pub nemesis_on: bool,
    /// Armed by the nemesis: crash the next server that acknowledges NEWLEADER.
    pub crash_after_sync_ack: bool,
    /// Armed by a scenario: crash the next learner reaching this point.
    pub crash_at: Option<CrashPoint>,
    /// Armed by a scenario: crash the leader right after a learner received its SNAP.
    pub crash_leader_after_snap: bool,
    /// Whether a crash may keep part of the unsynced log (page cache written back).
    pub torn_writes: bool,
    /// Per server: events that arrived while it was paused.
    pub(crate) deferred: Vec<std::collections::VecDeque<Event>>,
}

/// Events held for one paused server before the run is declared broken.
pub const DEFERRED_MAX: usize = 100_000;

impl World {
    pub fn new(opts: SimOptions) -> World {
        let mut rng = SimRng::new(opts.seed);
        let total = opts.servers + opts.observers;
        let voters: BTreeSet<Sid> = (1..=opts.servers as Sid).collect();
        let observers: BTreeSet<Sid> = (opts.servers as Sid + 1..=total as Sid).collect();
        let servers = (1..=total as Sid)
            .map(|sid| {
                let offset = rng.range(0, 10_000);
                let drift = rng.range(0, 40_000) as i64 - 20_000;
                SimServer::new(sid, offset, drift)
            })
            .collect();
        let clients = (0..opts.clients)
            .map(|i| SimClient::new(0x1000 + i as ClientId, KEYS.len()))
            .collect();
        let net = Network::new(opts.net_delay_min_ms, opts.net_delay_max_ms);
        let verbose = opts.verbose;
        let diskless = opts.diskless;
        World {
            opts,
            rng,
            now: 0,
            seq: 0,
            queue: BinaryHeap::new(),
            servers,
            net,
            clients,
            history: Vec::new(),
            checker: ZabChecker::new(diskless),
            durability: DurabilityChecker::default(),
            crash_seq: 0,
            trace: Trace::new(verbose),
            failures: Vec::new(),
            events: 0,
            voters,
            observers,
            leader_loss: None,
            election_samples: Vec::new(),
            sessions_expired: 0,
            full_house_samples: Vec::new(),
            recovery_samples: Vec::new(),
            workload_on: true,
            nemesis_on: true,
            crash_after_sync_ack: false,
            crash_at: None,
            crash_leader_after_snap: false,
            torn_writes: true,
            deferred: (0..total).map(|_| Default::default()).collect(),
        }
    }

    pub fn fail(&mut self, what: String) {
        self.trace.line(self.now, &format!("FAILURE {what}"));
        if self.failures.len() < 20 {
            self.failures.push(what);
        }
    }

    pub fn schedule(&mut self, at: Millis, event: Event) {
        self.seq += 1;
        self.queue.push(Scheduled {
            at: at.max(self.now),
            seq: self.seq,
            event,
        });
    }

    pub(crate) fn idx(sid: Sid) -> usize {
        (sid - 1) as usize
    }

    pub fn server(&self, sid: Sid) -> &SimServer {
        &self.servers[Self::idx(sid)]
    }

    pub(crate) fn server_mut(&mut self, sid: Sid) -> &mut SimServer {
        &mut self.servers[Self::idx(sid)]
    }

    pub fn all_sids(&self) -> Vec<Sid> {
        (1..=self.servers.len() as Sid).collect()
    }

    pub fn config_for(&self, sid: Sid) -> Config {
        #[allow(unused_mut)]
        let mut c = Config::new(sid, self.voters.clone(), self.observers.clone());
        c.committed_log_max = self.opts.committed_log_max;
        if self.opts.diskless {
            c.durability = Durability::Diskless;
        }
        #[cfg(feature = "planted-bugs")]
        {
            c.planted_bug = self
                .opts
                .bug
                .as_deref()
                .and_then(zab::PlantedBug::from_name);
        }
        c
    }

    // ----- the loop -----

    /// Processes events until simulated time `until` (or the event budget runs out).
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
            self.handle(event);
        }
        self.now = self.now.max(until);
    }

    pub(crate) fn paused(&self, sid: Sid) -> bool {
        self.server(sid).paused_until > self.now
    }

    pub(crate) fn handle(&mut self, event: Event) {
        // A paused server (a long GC) handles nothing until it resumes.
        let target = match &event {
            Event::Deliver { to, .. } => Some(*to),
            Event::PeerDown { node, .. }
            | Event::Tick { node, .. }
            | Event::FsyncDone { node, .. }
            | Event::SnapshotDone { node, .. }
            | Event::SnapshotRested { node, .. } => Some(*node),
            Event::ToServer { server, .. } => Some(*server),
            _ => None,
        };
        if let Some(sid) = target {
            if self.paused(sid) {
                // Held in arrival order, so the pause never reorders a connection.
                let i = Self::idx(sid);
                if self.deferred[i].len() >= DEFERRED_MAX {
                    self.fail(format!("server {sid}: too many events held during a pause"));
                    return;
                }
                self.deferred[i].push_back(event);
                return;
            }
            self.resume(sid);
        }
        self.dispatch(event);
    }

    /// Hands a resumed server everything that arrived while it was paused, in order.
    pub(crate) fn resume(&mut self, sid: Sid) {
        let i = Self::idx(sid);
        while let Some(held) = self.deferred[i].pop_front() {
            self.dispatch(held);
        }
    }

    pub(crate) fn dispatch(&mut self, event: Event) {
        match event {
            Event::Deliver {
                from,
                to,
                generation,
                wire,
            } => self.on_deliver(from, to, generation, wire),
            Event::PeerDown {
                node,
                peer,
                incarnation,
            } => {
                if self.server(node).incarnation == incarnation {
                    self.trace.event(self.now, node, "peer-down", peer, 0);
                    self.with_zab(node, |z, now| z.handle_peer_disconnected(now, peer));
                }
            }
            Event::Tick { node, incarnation } => {
                if self.server(node).incarnation == incarnation && self.server(node).is_up() {
                    self.with_zab(node, |z, now| z.handle_tick(now));
                    self.schedule(self.now + TICK_MS, Event::Tick { node, incarnation });
                }
            }
            Event::FsyncDone { node, incarnation } => self.on_fsync_done(node, incarnation),
            Event::SnapshotDone { node, incarnation } => self.on_snapshot_done(node, incarnation),
            Event::SnapshotRested { node, incarnation } => {
                self.on_snapshot_rested(node, incarnation)
            }
            Event::ToServer { server, req } => self.on_client_request(server, req),
            Event::ToClient {
                client,
                conn,
                reply,
            } => self.on_client_reply(client, conn, reply),
            Event::ClientWake { client } => self.on_client_wake(client),
            // Faults the nemesis scheduled stop when its phase ends; scenarios crash directly.
            Event::Restart { node } => {
                if self.nemesis_on {
                    self.restart(node)
                }
            }
            Event::Crash { node, restart } => {
                if restart && !self.nemesis_on {
                    return;
                }
                self.crash(node);
                if restart {
                    self.schedule_restart(node);
                }
            }
            Event::Resume { node } => {
                if !self.paused(node) {
                    self.resume(node);
                }
            }
            Event::Heal => {
                self.trace.line(self.now, "heal");
                self.net.heal();
            }
        }
    }

    /// Runs `f` on a live server's Zab with its local time, then executes the actions.
    pub(crate) fn with_zab(&mut self, sid: Sid, f: impl FnOnce(&mut Zab, Millis)) {
        let now = self.server(sid).local_time(self.now);
        let Some(zab) = self.server_mut(sid).zab.as_mut() else {
            return;
        };
        f(zab, now);
        self.run_actions(sid);
    }

    pub(crate) fn run_actions(&mut self, sid: Sid) {
        for _ in 0..1_000_000 {
            let actions = match self.server_mut(sid).zab.as_mut() {
                Some(z) => z.poll_actions(),
                None => return,
            };
            if actions.is_empty() {
                if self.opts.diskless {
                    self.diskless_after_batch(sid);
                }
                return;
            }
            let incarnation = self.server(sid).incarnation;
            for a in actions {
                if self.server(sid).incarnation != incarnation {
                    return; // crashed mid-batch: the rest never happened
                }
                self.execute(sid, a);
            }
        }
        self.fail(format!("server {sid}: actions never settle"));
    }

    // ----- crashes and restarts -----

    pub fn crash(&mut self, sid: Sid) {
        if !self.server(sid).is_up() {
            return;
        }
        self.trace.event(self.now, sid, "CRASH", 0, 0);
        self.close_client_sessions(sid);
        // The process is gone, so are its client sockets: every client connected here hears
        // of it, including those whose requests were still in flight.
        for ci in 0..self.clients.len() {
            if self.clients[ci].server == Some(sid) {
                let conn = self.clients[ci].conn;
                self.reply(ci, conn, Reply::Closed);
            }
        }
        let mut rng = self.rng.fork();
        let torn = self.torn_writes;
        let diskless = self.opts.diskless;
        self.crash_seq += 1;
        let seq = self.crash_seq;
        let s = self.server_mut(sid);
        s.zab = None;
        s.serving = false;
        if diskless {
            s.disk.crash_diskless();
        } else if torn {
            s.disk.crash(&mut rng);
        } else {
            s.disk.crash_clean();
        }
        s.crash_count += 1;
        s.last_crash_seq = seq;
        s.incarnation += 1;
        s.tree = tree::DataTree::new();
        s.applied.clear();
        s.speculative = None;
        s.paused_until = 0;
        self.deferred[Self::idx(sid)].clear();
        for peer in self.all_sids() {
            if peer != sid {
                self.net.break_connection(sid, peer);
                let incarnation = self.server(peer).incarnation;
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

    pub fn wipe(&mut self, sid: Sid) {
        self.crash(sid);
        self.trace.event(self.now, sid, "WIPE", 0, 0);
        let s = self.server_mut(sid);
        s.disk.wipe();
        // A server that was already down still loses what its disk held.
        s.crash_count += 1;
    }

    pub fn restart(&mut self, sid: Sid) {
        if self.server(sid).is_up() {
            return;
        }
        let config = self.config_for(sid);
        let diskless_boot = self.opts.diskless.then(|| self.diskless_boot(sid));
        let s = self.server(sid);
        let txns = match decode_image(&s.disk.snapshot_image) {
            Ok(t) => t,
            Err(e) => {
                self.fail(format!("server {sid}: undecodable snapshot on disk: {e}"));
                return;
            }
        };
        let boot = diskless_boot.unwrap_or_else(|| Boot {
            accepted_epoch: s.disk.accepted_epoch,
            current_epoch: s.disk.current_epoch,
            snapshot_zxid: s.disk.snapshot_zxid,
            log: s.disk.log.clone(),
            amnesia: s.disk.wiped,
            incarnation: s.incarnation,
        });
        let snapshot_zxid = boot.snapshot_zxid;
        let now = s.local_time(self.now);
        self.trace
            .event(self.now, sid, "RESTART", 0, snapshot_zxid.0);
        self.checker.on_image(sid, snapshot_zxid, &txns);
        match Zab::new(config, boot, now) {
            Ok(zab) => {
                let now = self.now;
                let s = self.server_mut(sid);
                s.tree = replay(&txns);
                s.applied = txns;
                s.prep = Prep::default();
                s.sessions.clear();
                s.zab = Some(zab);
                s.booted_at = now;
                let incarnation = s.incarnation;
                self.run_actions(sid);
                let phase = self.rng.range(0, TICK_MS - 1);
                self.schedule(
                    self.now + phase,
                    Event::Tick {
                        node: sid,
                        incarnation,
                    },
                );
            }
            Err(e) => self.fail(format!("server {sid} refused to boot: {e}")),
        }
    }

    /// Ends a pause now, handing over what arrived meanwhile.
    pub fn unpause(&mut self, sid: Sid) {
        if self.paused(sid) {
            self.server_mut(sid).paused_until = self.now;
            self.resume(sid);
        }
    }

    pub fn pause(&mut self, sid: Sid, until: Millis) {
        self.trace.event(self.now, sid, "PAUSE", 0, until);
        self.server_mut(sid).paused_until = until;
        self.schedule(until, Event::Resume { node: sid });
    }

    // ----- observation -----

    /// The established leader every live server agrees on, if the ensemble is settled.
    pub fn settled_leader(&self) -> Option<Sid> {
        let mut leader = None;
        for s in &self.servers {
            let zab = s.zab.as_ref()?;
            if !zab.is_serving() {
                return None;
            }
            let l = zab.leader()?;
            if *leader.get_or_insert(l) != l {
                return None;
            }
        }
        leader
    }

    pub fn final_disks(&self) -> Vec<(Sid, Vec<SharedEntry>)> {
        self.servers
            .iter()
            .map(|s| (s.sid, s.disk.log.clone()))
            .collect()
    }
}

pub(crate) fn role_name(role: Role) -> &'static str {
    match role {
        Role::Looking => "LOOKING",
        Role::Leading => "LEADING",
        Role::Following => "FOLLOWING",
        Role::Observing => "OBSERVING",
        Role::Halted => "HALTED",
    }
}
