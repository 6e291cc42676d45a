//! The ensemble side of a server's state: the Zab core, and the request bookkeeping an
//! ensemble member needs beyond a standalone server's.
//!
//! Requests wait per connection in arrival order ([`Waiting`]): a write until its transaction
//! is delivered here (whichever server proposed it), a read until every earlier write of its
//! connection is answered. That is FIFO client order (DESIGN.md §1) on any member.

use crate::replica::AuthIds;
use crate::replica::ReplyTo;
use crate::watch_manager::ConnId;
use crate::Output;
use proto::request::Request;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use zab::{Role, Sid, Zab};

/// Emptied connection queues kept for reuse, and the largest capacity worth keeping.
const SPARE_QUEUES_MAX: usize = 64;
const SPARE_QUEUE_CAPACITY_MAX: usize = 16;

/// A request of a local connection, waiting its turn.
pub(crate) enum Waiting {
    /// A write (or sync) for proposal; answered when its transaction is delivered here. Kept
    /// whole so that it can be sent again to the next leader if its own leader is lost
    /// before committing it (see [`super::hold`]).
    Write {
        reply: ReplyTo,
        /// Shared with the work that proposes it: a write is never copied whole.
        request: Arc<Request>,
        /// Sent to a leader (false: held while this member has none).
        sent: bool,
    },
    /// A write the leader refused (its backlog was full): answered THROTTLEDOP in its turn.
    Throttled(ReplyTo),
    /// A read behind an unanswered write of the same connection, or one that arrived while
    /// this member had no leader (`held`: answered only once it serves again).
    Read {
        xid: i32,
        request: Request,
        received_ms: u64,
        held: bool,
    },
}

/// A client handshake that arrived while this member had no leader, answered once it has.
pub(crate) struct HeldConnect {
    pub conn: ConnId,
    pub peer: std::net::SocketAddr,
    pub request: proto::records::ConnectRequest,
}

/// A connection waiting for its session: a new one being created, or an existing one being
/// revalidated by the leader.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PendingConnect {
    pub conn: ConnId,
    pub timeout_ms: u32,
    pub read_only: Option<bool>,
}

/// Something the leader turns into a proposal.
pub(crate) enum Work {
    Client {
        origin: Sid,
        session_id: i64,
        xid: i32,
        request: Arc<Request>,
        auth_ids: AuthIds,
    },
    CreateSession {
        origin: Sid,
        session_id: i64,
        timeout_ms: i32,
    },
    /// The leader expires a session.
    Expire { session_id: i64 },
    /// The leader removes an empty container or an expired TTL node.
    DeleteContainer { path: String },
    /// A new leader writes the configuration file's members to an empty `/zookeeper/config`.
    InitialConfig,
}

/// Numbers for `mntr` and the logs.
#[derive(Debug, Default, Clone)]
pub struct EnsembleStats {
    pub elections: u64,
    /// How long the last election took, from losing the leader to serving again.
    pub last_election_ms: u64,
    /// Diskless: elections this server won by a full house (too few whole voters for a quorum,
    /// every voter present). Each one means the ensemble restarted from the best state any of
    /// its servers still had; see docs/durability.md.
    pub full_house_elections: u64,
    pub digest_checks: u64,
    pub forwarded: u64,
    pub proposals: u64,
    pub last_proposal_bytes: usize,
    pub min_proposal_bytes: usize,
    pub max_proposal_bytes: usize,
}

pub struct Ensemble {
    pub zab: Zab,
    /// The leader's last proposal, encoded once for every follower it goes to.
    pub(crate) proposal_frame: Option<(zab::Zxid, Vec<u8>)>,
    /// This server's id (`myid`).
    pub me: Sid,
    /// Every other member, voter or observer.
    pub peers: Vec<Sid>,
    /// Whether clients are being served (an established leader, or a learner past UPTODATE).
    pub serving: bool,
    pub role: Role,
    /// When this server stopped serving ([`crate::Now::mono_ms`]), to time the election.
    pub not_serving_since: Option<u64>,
    /// Not serving for longer than the hold allows: client connections were closed, and new
    /// ones are refused until a leader is established (see [`super::hold`]).
    pub released: bool,
    /// Handshakes waiting for a leader, in arrival order.
    pub(crate) held_connects: VecDeque<HeldConnect>,
    /// Leader: which server each session is attached to (ZooKeeper's session owner), for
    /// SessionMoved.
    pub(crate) owners: HashMap<i64, Sid, tree::keyed_hasher::KeyedHasher>,
    /// Leader: work waiting for room in Zab's pipeline, in arrival order.
    pub(crate) backlog: VecDeque<Work>,
    pub backlog_max: usize,
    /// Learner: sessions with client activity since the last report to the leader.
    pub(crate) touched: HashSet<i64, tree::keyed_hasher::KeyedHasher>,
    /// Local connections' requests waiting their turn.
    pub(crate) queues: HashMap<ConnId, VecDeque<Waiting>, tree::keyed_hasher::KeyedHasher>,
    /// Emptied queues kept for reuse: a synchronous client's queue empties after every
    /// write, and allocating it anew each time was 2 % of a leader's time under such clients.
    spare_queues: Vec<VecDeque<Waiting>>,
    pub(crate) connecting: HashMap<i64, PendingConnect>,
    pub(crate) revalidating: HashMap<i64, PendingConnect>,
    /// A snapshot from the leader, saved and waiting for Zab's InstallSnapshot.
    pub(crate) installed: Option<(i64, tree::DataTree)>,
    /// Learner: the leader's digests for zxids not applied here yet.
    pub(crate) digest_checks: VecDeque<(i64, u64)>,
    pub stats: EnsembleStats,
    /// Messages for peers, in order, until the host takes them with the replica's outputs.
    pub(crate) outbox: Vec<Output>,
    /// The successor of this server's last completed leadership hand-over.
    pub(crate) handed_over_to: Option<Sid>,
    /// Every member's address this server has seen in a configuration.
    pub(crate) addresses: BTreeMap<Sid, super::server_spec::ServerSpec>,
}

impl Ensemble {
    /// A member of `peers` and itself, driven by `zab`; `now_ms` is the host's monotonic clock.
    pub fn new(zab: Zab, me: Sid, peers: Vec<Sid>, backlog_max: usize, now_ms: u64) -> Ensemble {
        Ensemble {
            role: zab.role(),
            zab,
            me,
            peers,
            serving: false,
            not_serving_since: Some(now_ms),
            released: false,
            held_connects: VecDeque::new(),
            owners: HashMap::default(),
            backlog: VecDeque::new(),
            backlog_max,
            touched: HashSet::default(),
            queues: HashMap::default(),
            spare_queues: Vec::new(),
            connecting: HashMap::new(),
            revalidating: HashMap::new(),
            installed: None,
            digest_checks: VecDeque::new(),
            stats: EnsembleStats::default(),
            outbox: Vec::new(),
            handed_over_to: None,
            proposal_frame: None,
            addresses: BTreeMap::new(),
        }
    }

    /// Leader: work waiting for room in Zab's pipeline.
    pub fn backlog_len(&self) -> usize {
        self.backlog.len()
    }

    /// Leader: whether work `peer` forwarded waits in the backlog (for the simulator, which
    /// breaks a member's link at exactly that moment).
    pub fn backlog_holds_work_of(&self, peer: Sid) -> bool {
        self.backlog.iter().any(|work| match work {
            Work::Client { origin, .. } | Work::CreateSession { origin, .. } => *origin == peer,
            Work::Expire { .. } | Work::DeleteContainer { .. } | Work::InitialConfig => false,
        })
    }

    pub fn me(&self) -> Sid {
        self.me
    }

    pub fn is_leader(&self) -> bool {
        self.role == Role::Leading
    }

    /// `conn`'s queue, made (from a spare if there is one) if it has none.
    pub(crate) fn queue_of(&mut self, conn: ConnId) -> &mut VecDeque<Waiting> {
        let spare = &mut self.spare_queues;
        self.queues
            .entry(conn)
            .or_insert_with(|| spare.pop().unwrap_or_default())
    }

    /// Removes `conn`'s queue (what waited in it is dropped) and keeps its allocation, if
    /// small, for another connection.
    pub(crate) fn remove_queue(&mut self, conn: ConnId) {
        let Some(mut queue) = self.queues.remove(&conn) else {
            return;
        };
        if self.spare_queues.len() < SPARE_QUEUES_MAX
            && queue.capacity() <= SPARE_QUEUE_CAPACITY_MAX
        {
            queue.clear();
            self.spare_queues.push(queue);
        }
    }

    /// The leader to forward to, when it is another server.
    pub fn remote_leader(&self) -> Option<Sid> {
        self.zab.leader().filter(|&l| l != self.me())
    }

    /// Syncs of local clients not answered yet.
    pub fn pending_syncs(&self) -> usize {
        self.queues
            .values()
            .flatten()
            .filter(|w| matches!(w, Waiting::Write { reply, .. } if reply.is_sync()))
            .count()
    }

    pub fn role_name(&self) -> &'static str {
        match self.role {
            Role::Leading => "leader",
            Role::Following => "follower",
            Role::Observing => "observer",
            Role::Looking => "looking",
            Role::Halted => "halted",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ensemble() -> Ensemble {
        let zab = Zab::new(
            zab::Config::new(1, [1, 2, 3].into(), Default::default()),
            zab::Boot::default(),
            0,
        )
        .expect("zab");
        Ensemble::new(zab, 1, vec![2, 3], 100, 0)
    }

    fn read(xid: i32) -> Waiting {
        Waiting::Read {
            xid,
            request: Request::Ping,
            received_ms: 0,
            held: false,
        }
    }

    #[test]
    fn a_removed_queue_is_reused_empty_by_the_next_connection() {
        let mut ensemble = ensemble();
        ensemble.queue_of(7).push_back(read(1));
        let capacity = ensemble.queues[&7].capacity();
        assert!(capacity > 0);
        ensemble.remove_queue(7);
        assert!(!ensemble.queues.contains_key(&7), "removed means gone");
        let reused = ensemble.queue_of(8);
        assert!(reused.is_empty(), "nothing of connection 7 waits for 8");
        assert_eq!(reused.capacity(), capacity, "the allocation came back");
    }

    #[test]
    fn a_large_queue_is_not_kept_and_spares_are_bounded() {
        let mut ensemble = ensemble();
        for xid in 0..100 {
            ensemble.queue_of(1).push_back(read(xid));
        }
        ensemble.remove_queue(1);
        assert_eq!(ensemble.queue_of(2).capacity(), 0, "a large queue is freed");
        for conn in 0..(SPARE_QUEUES_MAX as u64 * 2) {
            ensemble.queue_of(100 + conn).push_back(read(0));
        }
        for conn in 0..(SPARE_QUEUES_MAX as u64 * 2) {
            ensemble.remove_queue(100 + conn);
        }
        assert_eq!(ensemble.spare_queues.len(), SPARE_QUEUES_MAX);
    }
}
