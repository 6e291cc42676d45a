//! The leader's backlog, driven by hand without any I/O: when Zab's pipeline and the backlog
//! behind it are full, a request is refused with ZooKeeper's THROTTLEDOP, in its turn, and
//! every later request of the same client is still answered. Nothing is dropped silently.
#![allow(clippy::unwrap_used)]

mod common;

use common::{at, reply_of, Reports};
use proto::request::Request;
use proto::{ErrorCode, OpCode};
use replica::ensemble::codec::{decode, encode, PeerMessage};
use replica::ensemble::host_message::HostMessage;
use replica::ensemble::Ensemble;
use replica::{ClientInput, Now, Output, Replica, Settings};
use storage::faulty_fs::FaultyFs;
use zab::{Boot, Config, Durability, Message, Notification, PeerState, Vote, Zab, Zxid};

const LEADER: u64 = 3;
const CONN: u64 = 1;

/// Server 3 of {1, 2, 3}, diskless (appends are durable at once), with room for one
/// proposal in flight and one more in the backlog; 1 and 2 are played by the test.
struct Fixture {
    replica: Replica<storage::Persistence>,
    durable: Reports,
    t: u64,
    /// Proposals the followers have not acknowledged yet.
    unacked: Vec<Zxid>,
    /// The followers acknowledge proposals as soon as they see them.
    auto_ack: bool,
    /// (xid, err) of every reply to the test's client, in order.
    replies: Vec<(i32, i32)>,
    /// Messages the leader sent the followers' learner side (THROTTLED and friends).
    host_messages: Vec<(u64, HostMessage)>,
    _fs: FaultyFs,
}

impl Fixture {
    fn new() -> Fixture {
        let fs = FaultyFs::new();
        let (store, recovered, durable) = common::store(&fs, true);
        let mut replica = Replica::new(Settings::default(), store, recovered, 0, at(0));
        let mut config = Config::new(LEADER, [1, 2, 3].into(), Default::default());
        config.proposals_in_flight_max = 1;
        config.durability = Durability::Diskless;
        let zab = Zab::new(config, Boot::default(), 0).unwrap();
        replica.join_ensemble(at(0), Ensemble::new(zab, LEADER, vec![1, 2], 1, 0));
        let mut f = Fixture {
            replica,
            durable,
            t: 0,
            unacked: Vec::new(),
            auto_ack: true,
            replies: Vec::new(),
            host_messages: Vec::new(),
            _fs: fs,
        };
        f.elect();
        f
    }

    fn now(&mut self) -> Now {
        self.t += 1;
        at(self.t)
    }

    /// Feeds `msg` from follower `from`, then plays the followers' part.
    fn hear_follower(&mut self, from: u64, msg: Message) {
        let now = self.now();
        self.replica
            .on_peer_frame(now, from, &encode(&PeerMessage::Zab(msg)));
        self.settle();
    }

    /// Reports durability, collects the client's replies and answers what the followers
    /// would, until nothing more happens.
    fn settle(&mut self) {
        for _ in 0..100 {
            let reports: Vec<i64> = self.durable.lock().unwrap().drain(..).collect();
            for zxid in reports {
                let now = self.now();
                self.replica.on_log_durable(now, zxid);
            }
            let outputs = self.replica.take_outputs();
            if outputs.is_empty() && self.durable.lock().unwrap().is_empty() {
                return;
            }
            let mut answers = Vec::new();
            for output in outputs {
                match output {
                    Output::ToClient {
                        conn,
                        frame,
                        is_reply: true,
                    } if conn == CONN => {
                        self.replies.push(reply_of(&frame));
                    }
                    Output::ToPeer { to, frame } => match decode(&frame).unwrap() {
                        PeerMessage::Zab(Message::LeaderInfo { epoch }) => answers.push((
                            to,
                            Message::AckEpoch {
                                current_epoch: Some(epoch - 1),
                                last_zxid: Zxid::ZERO,
                            },
                        )),
                        PeerMessage::Zab(Message::NewLeader { epoch }) => answers.push((
                            to,
                            Message::Ack {
                                zxid: Zxid::new(epoch, 0),
                            },
                        )),
                        PeerMessage::Zab(Message::Proposal(entry)) if to == 1 => {
                            if self.auto_ack {
                                for f in [1, 2] {
                                    answers.push((f, Message::Ack { zxid: entry.zxid }));
                                }
                            } else {
                                self.unacked.push(entry.zxid);
                            }
                        }
                        PeerMessage::Host(msg) => self.host_messages.push((to, msg)),
                        _ => {}
                    },
                    _ => {}
                }
            }
            for (from, msg) in answers {
                let now = self.now();
                self.replica
                    .on_peer_frame(now, from, &encode(&PeerMessage::Zab(msg)));
            }
        }
        panic!("the exchange does not settle");
    }

    fn elect(&mut self) {
        for from in [1, 2] {
            let n = Notification {
                vote: Vote {
                    leader: LEADER,
                    zxid: Zxid::ZERO,
                    epoch: 0,
                },
                round: 1,
                state: PeerState::Looking,
                voter: true,
                config: Zxid::ZERO,
                config_pending: Zxid::ZERO,
            };
            self.hear_follower(from, Message::Notification(n));
        }
        // The election ends after its finalize wait.
        for _ in 0..20 {
            self.t += 10;
            self.replica.zab_tick(at(self.t));
            self.settle();
        }
        for from in [1, 2] {
            let info = Message::FollowerInfo {
                accepted_epoch: 0,
                last_zxid: Zxid::ZERO,
                observer: false,
                recovering: false,
                incarnation: from,
            };
            self.hear_follower(from, info);
        }
        let ensemble = self.replica.ensemble.as_ref().unwrap();
        assert!(ensemble.serving, "the leader is established");
    }

    fn ack_all(&mut self) {
        for zxid in std::mem::take(&mut self.unacked) {
            for f in [1, 2] {
                self.hear_follower(f, Message::Ack { zxid });
            }
        }
    }

    fn client(&mut self, input: ClientInput) {
        let now = self.now();
        self.replica.on_client(now, input);
        self.settle();
    }

    fn create(&mut self, xid: i32, path: &str) {
        let received_ms = self.t;
        self.client(common::request(
            CONN,
            xid,
            common::create(path),
            received_ms,
        ));
    }
}

fn connect(f: &mut Fixture) {
    f.client(common::connect(CONN));
    assert!(
        f.replica.conns[&CONN].session_id.is_some(),
        "the session is established"
    );
}

#[test]
fn a_full_backlog_refuses_in_turn_and_later_requests_are_still_answered() {
    let mut f = Fixture::new();
    connect(&mut f);
    f.auto_ack = false;
    f.create(1, "/a"); // proposed: the pipeline (1) is full
    f.create(2, "/b"); // waits in the backlog (1), which is now full
    f.create(3, "/c"); // refused
    assert!(
        f.replies.is_empty(),
        "nothing is answered out of turn: {:?}",
        f.replies
    );
    f.auto_ack = true;
    f.ack_all();
    f.create(4, "/d");
    let throttled = ErrorCode::ThrottledOp.code();
    assert_eq!(
        f.replies,
        vec![(1, 0), (2, 0), (3, throttled), (4, 0)],
        "every request answered, in order, the refused one with THROTTLEDOP"
    );
    let tree = &f.replica.tree;
    assert!(tree.get("/a").is_some() && tree.get("/b").is_some() && tree.get("/d").is_some());
    assert!(
        tree.get("/c").is_none(),
        "the refused request was not executed"
    );
}

#[test]
fn a_forwarded_request_the_backlog_cannot_take_is_refused_to_its_learner() {
    let mut f = Fixture::new();
    connect(&mut f); // fills nothing: the session's creation is committed
    f.auto_ack = false;
    f.create(1, "/a"); // the pipeline is full
    f.create(2, "/b"); // the backlog is full
    let mut body = proto::Writer::new();
    Request::Delete(proto::PathAndVersion {
        path: "/x".into(),
        version: -1,
    })
    .encode_body(&mut body);
    let forward = HostMessage::Forward(replica::ensemble::host_message::Forwarded {
        session_id: 0x77,
        xid: 9,
        op_type: OpCode::Delete.code(),
        body: body.into_inner(),
        auth_ids: Vec::new(),
    });
    let now = f.now();
    f.replica
        .on_peer_frame(now, 2, &encode(&PeerMessage::Host(forward)));
    f.settle();
    assert!(
        f.host_messages.contains(&(
            2,
            HostMessage::Throttled {
                session_id: 0x77,
                xid: 9
            }
        )),
        "{:?}",
        f.host_messages
    );
}

/// Server 1 following 3 (played by the test, with a tree of its own to prepare on).
struct Learner {
    replica: Replica<storage::Persistence>,
    durable: Reports,
    t: u64,
    outputs: Vec<Output>,
    leader_tree: tree::DataTree,
    prep: tree::Prep,
    counter: u32,
    _fs: FaultyFs,
}

impl Learner {
    fn serving() -> Learner {
        let fs = FaultyFs::new();
        let (store, recovered, durable) = common::store(&fs, true);
        let mut replica = Replica::new(Settings::default(), store, recovered, 0, at(0));
        let mut config = Config::new(1, [1, 2, 3].into(), Default::default());
        config.durability = Durability::Diskless;
        let zab = Zab::new(config, Boot::default(), 0).unwrap();
        replica.join_ensemble(at(0), Ensemble::new(zab, 1, vec![2, 3], 100, 0));
        for (from, state) in [(LEADER, PeerState::Leading), (2, PeerState::Following)] {
            let n = Notification {
                vote: Vote {
                    leader: LEADER,
                    zxid: Zxid::ZERO,
                    epoch: 0,
                },
                round: 1,
                state,
                voter: true,
                config: Zxid::ZERO,
                config_pending: Zxid::ZERO,
            };
            let frame = encode(&PeerMessage::Zab(Message::Notification(n)));
            replica.on_peer_frame(at(0), from, &frame);
        }
        let mut learner = Learner {
            replica,
            durable,
            t: 0,
            outputs: Vec::new(),
            leader_tree: tree::DataTree::new(),
            prep: tree::Prep::default(),
            counter: 0,
            _fs: fs,
        };
        for msg in [
            Message::LeaderInfo { epoch: 1 },
            Message::Diff { zxid: Zxid::ZERO },
            Message::NewLeader { epoch: 1 },
            Message::UpToDate {
                committed: Zxid::ZERO,
            },
        ] {
            learner.hear_leader(PeerMessage::Zab(msg));
        }
        assert!(learner.replica.ensemble.as_ref().unwrap().serving);
        learner
    }

    fn hear_leader(&mut self, msg: PeerMessage) {
        self.t += 1;
        self.replica
            .on_peer_frame(at(self.t), LEADER, &encode(&msg));
        let reports: Vec<i64> = self.durable.lock().unwrap().drain(..).collect();
        for zxid in reports {
            self.replica.on_log_durable(at(self.t), zxid);
        }
        self.replica.drain_outputs(&mut self.outputs);
    }

    fn client(&mut self, input: ClientInput) {
        self.t += 1;
        self.replica.on_client(at(self.t), input);
        self.replica.drain_outputs(&mut self.outputs);
    }

    /// The leader proposes and commits what `request` becomes for `session_id`.
    fn commit(&mut self, session_id: i64, cxid: i32, request: Option<Request>) {
        self.counter += 1;
        let zxid = Zxid::new(1, self.counter);
        let ctx = tree::PrepContext {
            session_id,
            cxid,
            zxid: zxid.as_i64(),
            time_ms: 0,
            auth_ids: &[],
            extended_types_enabled: false,
            sasl_provider: false,
        };
        let txn = match request {
            Some(request) => self.prep.prepare(&self.leader_tree, &ctx, &request),
            None => self.prep.prepare_create_session(&ctx, 30_000),
        };
        self.leader_tree.apply(&txn, &mut Vec::new());
        self.prep.applied(zxid.as_i64());
        let entry = std::sync::Arc::new(zab::Entry {
            zxid,
            txn,
            digest: None,
        });
        self.hear_leader(PeerMessage::Zab(Message::Proposal(entry)));
        self.hear_leader(PeerMessage::Zab(Message::Commit { zxid }));
    }

    /// The id of the session the learner asked the leader to create.
    fn requested_session(&self) -> i64 {
        self.outputs
            .iter()
            .find_map(|o| match o {
                Output::ToPeer { to: LEADER, frame } => match decode(frame).unwrap() {
                    PeerMessage::Host(HostMessage::CreateSession { session_id, .. }) => {
                        Some(session_id)
                    }
                    _ => None,
                },
                _ => None,
            })
            .expect("the learner asks the leader for the session")
    }

    fn replies(&self) -> Vec<(i32, i32)> {
        self.outputs
            .iter()
            .filter_map(|o| match o {
                Output::ToClient {
                    conn: CONN,
                    frame,
                    is_reply: true,
                } => Some(reply_of(frame)),
                _ => None,
            })
            .collect()
    }
}

#[test]
fn a_learner_answers_a_refused_write_in_turn_and_the_writes_after_it() {
    let mut l = Learner::serving();
    l.client(common::connect(CONN));
    let session_id = l.requested_session();
    l.commit(session_id, 0, None);
    assert_eq!(l.replica.conns[&CONN].session_id, Some(session_id));

    // Three writes, forwarded; the leader refuses the second and commits the others.
    for (xid, path) in [(1, "/a"), (2, "/b"), (3, "/c")] {
        l.client(common::request(CONN, xid, common::create(path), l.t));
    }
    l.hear_leader(PeerMessage::Host(HostMessage::Throttled {
        session_id,
        xid: 2,
    }));
    assert!(
        l.replies().is_empty(),
        "the refusal waits for the write before it"
    );
    l.commit(session_id, 1, Some(common::create("/a")));
    l.commit(session_id, 3, Some(common::create("/c")));
    assert_eq!(
        l.replies(),
        vec![(1, 0), (2, ErrorCode::ThrottledOp.code()), (3, 0)]
    );
}

#[test]
fn a_learner_closes_a_new_connection_whose_session_the_leader_refused() {
    let mut l = Learner::serving();
    l.client(common::connect(CONN));
    let session_id = l.requested_session();
    l.hear_leader(PeerMessage::Host(HostMessage::Throttled {
        session_id,
        xid: 0,
    }));
    assert!(
        l.outputs
            .iter()
            .any(|o| matches!(o, Output::CloseClient { conn: CONN })),
        "{:?}",
        l.outputs
    );
}
