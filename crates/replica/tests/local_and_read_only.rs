//! Local sessions (`localSessionsEnabled`) and read-only mode (`readonlymode.enabled`),
//! driven by hand without any I/O: what a member answers its clients, and when.
#![allow(clippy::unwrap_used)]

mod common;

use common::{at, reply_of, Reports};
use proto::multi::MultiOp;
use proto::request::Request;
use proto::txn::{ErrorTxn, TxnBody};
use proto::{ConnectRequest, ConnectResponse, CreateRequest, ErrorCode, OpCode, Reader, Record};
use replica::ensemble::codec::{decode, encode, PeerMessage};
use replica::ensemble::host_message::{Forwarded, HostMessage};
use replica::ensemble::Ensemble;
use replica::{ClientInput, ConnId, Now, Output, Replica, Settings};
use storage::faulty_fs::FaultyFs;
use zab::{Boot, Config, Durability, Message, Notification, PeerState, Vote, Zab, Zxid};

const TICK: u32 = 200;

fn settings(local: bool, upgrading: bool, read_only: bool) -> Settings {
    Settings {
        tick_time_ms: TICK,
        min_session_timeout_ms: 2 * TICK,
        max_session_timeout_ms: 20 * TICK,
        failover_hold_ms: u64::from(TICK),
        local_sessions_enabled: local,
        local_sessions_upgrading_enabled: upgrading,
        read_only_mode_enabled: read_only,
        ..Settings::default()
    }
}

/// What one client connection was sent.
#[derive(Debug, Default)]
struct Seen {
    connect: Option<ConnectResponse>,
    /// (xid, err) of every reply, in order.
    replies: Vec<(i32, i32)>,
    closed: bool,
}

/// Server `me` of {1, 2, 3}, diskless (appends durable at once); the others are played by
/// the test.
struct Member {
    replica: Replica<storage::Persistence>,
    durable: Reports,
    t: u64,
    seen: std::collections::HashMap<ConnId, Seen>,
    /// Proposals this server sent, in order.
    proposals: Vec<proto::txn::Txn>,
    /// The followers stop answering pings (the leader loses its quorum).
    silent: bool,
    _fs: FaultyFs,
}

impl Member {
    fn new(me: u64, settings: Settings) -> Member {
        Member::with_observers(me, settings, &[])
    }

    /// Server `me` of voters {1, 2, 3} and `observers`.
    fn with_observers(me: u64, settings: Settings, observers: &[u64]) -> Member {
        let fs = FaultyFs::new();
        let (store, recovered, durable) = common::store(&fs, true);
        let mut replica = Replica::new(settings, store, recovered, 0, at(0));
        let observer_set = observers.iter().copied().collect();
        let mut config = Config::new(me, [1, 2, 3].into(), observer_set);
        config.durability = Durability::Diskless;
        let zab = Zab::new(config, Boot::default(), 0).unwrap();
        let peers = [1, 2, 3]
            .into_iter()
            .chain(observers.iter().copied())
            .filter(|&p| p != me)
            .collect();
        replica.join_ensemble(at(0), Ensemble::new(zab, me, peers, 100, 0));
        Member {
            replica,
            durable,
            t: 0,
            seen: Default::default(),
            proposals: Vec::new(),
            silent: false,
            _fs: fs,
        }
    }

    fn now(&mut self) -> Now {
        self.t += 1;
        at(self.t)
    }

    /// Lets `ms` pass in Zab ticks and server ticks.
    fn wait(&mut self, ms: u64) {
        let end = self.t + ms;
        while self.t < end {
            self.t += 10;
            let now = at(self.t);
            self.replica.zab_tick(now);
            self.replica.tick(now);
            self.settle();
        }
    }

    /// Collects outputs; as the followers of a leader, acknowledges its proposals.
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
                    Output::ToClient { conn, frame, .. } => {
                        let seen = self.seen.entry(conn).or_default();
                        if seen.connect.is_none() {
                            let response = ConnectResponse::decode(&mut Reader::new(&frame[4..]));
                            seen.connect = Some(response.unwrap());
                        } else {
                            seen.replies.push(reply_of(&frame));
                        }
                    }
                    Output::CloseClient { conn } => {
                        self.seen.entry(conn).or_default().closed = true
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
                        // The followers stay in touch.
                        PeerMessage::Zab(Message::Ping) if !self.silent => {
                            answers.push((to, Message::Ping))
                        }
                        PeerMessage::Zab(Message::Proposal(entry)) if to == 1 => {
                            self.proposals.push(entry.txn.clone());
                            for f in [1, 2] {
                                answers.push((f, Message::Ack { zxid: entry.zxid }));
                            }
                        }
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

    fn hear(&mut self, from: u64, msg: PeerMessage) {
        let now = self.now();
        self.replica.on_peer_frame(now, from, &encode(&msg));
        self.settle();
    }

    /// Every peer votes for `leader`, in state `state`.
    fn votes_for(&mut self, leader: u64, state: PeerState) {
        self.votes_for_in(leader, state, 1);
    }

    /// As [`Member::votes_for`], in `round`, for a candidate as up to date as this server.
    fn votes_for_in(&mut self, leader: u64, state: PeerState, round: u64) {
        let zab = &self.replica.ensemble.as_ref().unwrap().zab;
        let (last_logged, epoch) = (zab.last_logged(), zab.current_epoch());
        for from in [1, 2, 3] {
            if Some(from) == self.replica.ensemble.as_ref().map(|e| e.me()) {
                continue;
            }
            let n = Notification {
                vote: Vote {
                    leader,
                    zxid: last_logged,
                    epoch,
                },
                round,
                state: if from == leader {
                    state
                } else {
                    PeerState::Looking
                },
                voter: true,
                config: Zxid::ZERO,
                config_pending: Zxid::ZERO,
            };
            self.hear(from, PeerMessage::Zab(Message::Notification(n)));
        }
    }

    /// Server 3 leading {1, 2, 3}, established.
    fn leader(settings: Settings) -> Member {
        let mut m = Member::new(3, settings);
        m.votes_for(3, PeerState::Looking);
        m.wait(200);
        m.followers_join(0);
        m
    }

    /// Followers 1 and 2 join the elected leader 3, having accepted `epoch`.
    fn followers_join(&mut self, epoch: u32) {
        let m = self;
        for from in [1, 2] {
            let info = Message::FollowerInfo {
                accepted_epoch: epoch,
                last_zxid: Zxid::ZERO,
                observer: false,
                recovering: false,
                incarnation: from,
            };
            m.hear(from, PeerMessage::Zab(info));
        }
        assert!(m.replica.ensemble.as_ref().unwrap().serving, "leading");
    }

    fn client(&mut self, input: ClientInput) {
        let now = self.now();
        self.replica.on_client(now, input);
        self.settle();
    }

    fn connect(&mut self, conn: ConnId, session_id: i64, read_only: Option<bool>) {
        let passwd = if session_id == 0 {
            vec![0; 16]
        } else {
            replica::java_random::session_password(session_id).to_vec()
        };
        let request = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout_ms: 4 * TICK as i32,
            session_id,
            passwd,
            read_only,
        };
        self.client(ClientInput::Connect {
            conn,
            peer: "127.0.0.1:5000".parse().unwrap(),
            request,
            tls_ids: Vec::new(),
        });
    }

    fn send(&mut self, conn: ConnId, xid: i32, request: Request) {
        let received_ms = self.t;
        self.client(common::request(conn, xid, request, received_ms));
    }

    fn session(&self, conn: ConnId) -> i64 {
        self.seen[&conn].connect.as_ref().unwrap().session_id
    }

    fn replies(&self, conn: ConnId) -> &[(i32, i32)] {
        &self.seen[&conn].replies
    }
}

fn create_request(path: &str, flags: i32) -> CreateRequest {
    CreateRequest {
        path: path.into(),
        data: Some(b"x".to_vec()),
        acl: common::open_acl(),
        flags,
    }
}

fn create(path: &str, flags: i32) -> Request {
    Request::Create {
        op: OpCode::Create,
        req: create_request(path, flags),
    }
}

fn get(path: &str) -> Request {
    Request::GetData(proto::PathAndWatch {
        path: path.into(),
        watch: false,
    })
}

const EPHEMERAL: i32 = 1;

// ---- local sessions ------------------------------------------------------------------------

#[test]
fn a_local_session_is_answered_at_once_and_never_proposed() {
    let mut m = Member::leader(settings(true, false, false));
    let before = m.proposals.len();
    m.connect(1, 0, None);
    let session = m.session(1);
    assert_ne!(session, 0);
    assert!(m.replica.is_local_session(session));
    assert!(!m.replica.tree.sessions().contains_key(&session));
    assert_eq!(m.proposals.len(), before, "no createSession was proposed");
    // It writes persistent znodes through Zab, though the tree does not know it.
    m.send(1, 1, create("/p", 0));
    assert_eq!(m.replies(1), &[(1, 0)]);
    assert!(m.replica.tree.get("/p").is_some());
    // Its close is local too.
    let proposed = m.proposals.len();
    m.send(1, 2, Request::CloseSession);
    assert_eq!(m.replies(1), &[(1, 0), (2, 0)]);
    assert!(m.seen[&1].closed);
    assert!(!m.replica.is_local_session(session));
    assert_eq!(
        m.proposals.len(),
        proposed,
        "closing a local session is not replicated"
    );
}

#[test]
fn an_ephemeral_on_a_local_session_fails_without_upgrading() {
    let mut m = Member::leader(settings(true, false, false));
    m.connect(1, 0, None);
    let before = m.proposals.len();
    m.send(1, 1, create("/e", EPHEMERAL));
    m.send(1, 2, get("/"));
    let multi = Request::Multi(vec![
        MultiOp::Create {
            op: OpCode::Create,
            req: create_request("/m1", 0),
        },
        MultiOp::Create {
            op: OpCode::Create,
            req: create_request("/m2", EPHEMERAL),
        },
        MultiOp::Create {
            op: OpCode::Create,
            req: create_request("/m3", 0),
        },
    ]);
    m.send(1, 3, multi);
    let code = ErrorCode::EphemeralOnLocalSession.code();
    // A failed multi answers with header 0 and its results per op.
    assert_eq!(m.replies(1), &[(1, code), (2, 0), (3, 0)], "in order");
    for path in ["/e", "/m1", "/m2", "/m3"] {
        assert!(m.replica.tree.get(path).is_none(), "{path} was not created");
    }
    assert!(m.replica.is_local_session(m.session(1)), "still local");
    // Both failures are transactions (each takes a zxid, as in ZooKeeper); the multi fails at
    // its ephemeral with SessionExpired (ZooKeeper's checkGlobalSession).
    let bodies: Vec<&TxnBody> = m.proposals[before..].iter().map(|t| &t.body).collect();
    let err = |code: ErrorCode| TxnBody::Error(ErrorTxn { err: code.code() });
    assert_eq!(
        bodies,
        vec![
            &err(ErrorCode::EphemeralOnLocalSession),
            &TxnBody::Multi(vec![
                err(ErrorCode::Ok),
                err(ErrorCode::SessionExpired),
                err(ErrorCode::RuntimeInconsistency)
            ])
        ]
    );
}

#[test]
fn an_ephemeral_upgrades_a_local_session_to_a_global_one_first() {
    let mut m = Member::leader(settings(true, true, false));
    m.connect(1, 0, None);
    let session = m.session(1);
    let before = m.proposals.len();
    m.send(1, 1, create("/e", EPHEMERAL));
    assert_eq!(m.replies(1), &[(1, 0)]);
    let proposed: Vec<i32> = m.proposals[before..]
        .iter()
        .map(|t| t.header.op_type)
        .collect();
    assert_eq!(
        proposed,
        vec![OpCode::CreateSession.code(), OpCode::Create.code()],
        "the createSession goes first"
    );
    assert!(
        m.replica.tree.sessions().contains_key(&session),
        "global now"
    );
    assert!(!m.replica.is_local_session(session));
    let owner = m.replica.tree.get("/e").unwrap().stat.ephemeral_owner;
    assert_eq!(owner, session);
}

#[test]
fn a_close_behind_the_upgrading_create_goes_through_zab_and_takes_the_ephemeral() {
    let mut m = Member::leader(settings(true, true, false));
    m.connect(1, 0, None);
    let session = m.session(1);
    let before = m.proposals.len();
    // Both arrive before anything commits: the close waits behind the create as a local one.
    let now = m.now();
    let received_ms = m.t;
    m.replica.on_client(
        now,
        common::request(1, 1, create("/e", EPHEMERAL), received_ms),
    );
    let now = m.now();
    m.replica.on_client(
        now,
        common::request(1, 2, Request::CloseSession, received_ms),
    );
    m.settle();
    assert_eq!(m.replies(1), &[(1, 0), (2, 0)]);
    assert!(m.seen[&1].closed);
    let proposed: Vec<i32> = m.proposals[before..]
        .iter()
        .map(|t| t.header.op_type)
        .collect();
    assert_eq!(
        proposed,
        vec![
            OpCode::CreateSession.code(),
            OpCode::Create.code(),
            OpCode::CloseSession.code()
        ]
    );
    assert!(
        m.replica.tree.get("/e").is_none(),
        "the ephemeral went with it"
    );
    assert!(!m.replica.tree.sessions().contains_key(&session));
    assert!(!m.replica.is_local_session(session));
}

#[test]
fn an_ephemeral_held_through_a_leader_change_is_upgraded_when_sent() {
    let mut m = Member::leader(Settings {
        failover_hold_ms: 60_000,
        ..settings(true, true, false)
    });
    m.connect(1, 0, None);
    let session = m.session(1);
    // The followers go silent: the leader steps down and holds its client.
    m.silent = true;
    for _ in 0..10 {
        m.wait(300);
        m.send(1, -2, Request::Ping); // pings are answered through the hold
    }
    assert!(
        !m.replica.ensemble.as_ref().unwrap().serving,
        "stepped down"
    );
    let pings = m.replies(1).len();
    assert_eq!(pings, 10);
    m.send(1, 1, create("/e", EPHEMERAL));
    assert_eq!(m.replies(1).len(), pings, "held");
    // They are back and elect it again: the held create goes out behind its upgrade.
    m.silent = false;
    let before = m.proposals.len();
    m.votes_for_in(3, PeerState::Looking, 100);
    m.wait(200);
    m.followers_join(1);
    m.wait(100);
    assert_eq!(m.replies(1)[pings..], [(1, 0)]);
    let proposed: Vec<i32> = m.proposals[before..]
        .iter()
        .filter(|t| t.header.client_id == session)
        .map(|t| t.header.op_type)
        .collect();
    assert_eq!(
        proposed,
        vec![OpCode::CreateSession.code(), OpCode::Create.code()]
    );
    assert_eq!(
        m.replica.tree.get("/e").unwrap().stat.ephemeral_owner,
        session
    );
}

#[test]
fn a_local_session_expires_on_its_server_and_is_unknown_elsewhere() {
    let mut m = Member::leader(settings(true, false, false));
    m.connect(1, 0, None);
    let session = m.session(1);
    // It reconnects to its own server.
    m.connect(2, session, None);
    assert_eq!(m.session(2), session);
    assert!(m.seen[&1].closed, "the old connection is closed");
    // Then it goes silent past its timeout (4 ticks).
    m.wait(u64::from(5 * TICK));
    assert!(m.seen[&2].closed, "expired and closed");
    assert!(!m.replica.is_local_session(session));
    m.connect(3, session, None);
    assert_eq!(m.session(3), 0, "expired: answered with session 0");
}

#[test]
fn the_leader_takes_writes_of_another_members_local_session_but_no_ephemeral() {
    let mut m = Member::leader(settings(true, true, false));
    let foreign: i64 = (2 << 56) | 0x42;
    let forward = |xid: i32, request: Request| {
        let mut body = proto::Writer::new();
        request.encode_body(&mut body);
        PeerMessage::Host(HostMessage::Forward(Forwarded {
            session_id: foreign,
            xid,
            op_type: request.op_code().code(),
            body: body.into_inner(),
            auth_ids: Vec::new(),
        }))
    };
    m.hear(2, forward(1, create("/from-2", 0)));
    m.hear(2, forward(2, create("/eph-2", EPHEMERAL)));
    assert!(m.replica.tree.get("/from-2").is_some());
    assert!(
        m.replica.tree.get("/eph-2").is_none(),
        "an ephemeral needs its session upgraded first"
    );
    let errors: Vec<i32> = m
        .proposals
        .iter()
        .filter(|t| t.header.client_id == foreign)
        .map(|t| match &t.body {
            proto::txn::TxnBody::Error(e) => e.err,
            _ => 0,
        })
        .collect();
    assert_eq!(errors, vec![0, ErrorCode::EphemeralOnLocalSession.code()]);
    // Without local sessions the same write is from an expired session.
    let mut m = Member::leader(settings(false, false, false));
    m.hear(2, forward(1, create("/from-2", 0)));
    assert!(m.replica.tree.get("/from-2").is_none());
}

// ---- read-only mode --------------------------------------------------------------------------

#[test]
fn a_member_without_a_quorum_serves_read_only_after_the_delay() {
    let mut m = Member::new(1, settings(true, false, true));
    let delay = m.replica.read_only_delay_ms();
    assert_eq!(delay, 2000, "max(2000, tickTime)");
    m.connect(1, 0, Some(true));
    assert!(
        m.seen.get(&1).and_then(|s| s.connect.as_ref()).is_none(),
        "held, not answered"
    );
    m.wait(delay - 100);
    assert!(!m.replica.serving_read_only());
    assert!(
        m.seen[&1].closed,
        "released after the hold, as without read-only mode"
    );
    m.wait(200);
    assert!(m.replica.serving_read_only());

    m.connect(2, 0, Some(true));
    let response = m.seen[&2].connect.clone().unwrap();
    assert_eq!(response.read_only, Some(true));
    let session = response.session_id;
    assert_eq!(session >> 56, 1, "the server's id in the top byte");
    assert!(m.replica.is_local_session(session));
    assert!(!m.replica.tree.sessions().contains_key(&session));

    m.send(2, 1, get("/"));
    m.send(2, 2, create("/w", 0));
    m.send(2, 3, Request::Sync(proto::PathRecord { path: "/".into() }));
    m.send(2, 4, Request::Ping);
    m.send(2, 5, get("/missing"));
    let not_ro = ErrorCode::NotReadOnly.code();
    let no_node = ErrorCode::NoNode.code();
    assert_eq!(
        m.replies(2),
        &[(1, 0), (2, not_ro), (3, not_ro), (4, 0), (5, no_node)]
    );
    assert!(m.replica.tree.get("/w").is_none());

    // A client that does not accept a read-only server is refused.
    m.connect(3, 0, Some(false));
    assert!(m.seen[&3].closed && m.seen[&3].connect.is_none());
    m.connect(4, 0, None);
    assert!(m.seen[&4].closed && m.seen[&4].connect.is_none());
    // An unknown session is expired, still with readOnly=true.
    m.connect(5, (1 << 56) | 0x99, Some(true));
    let expired = m.seen[&5].connect.clone().unwrap();
    assert_eq!((expired.session_id, expired.read_only), (0, Some(true)));
    // The read-only session reconnects.
    m.connect(6, session, Some(true));
    assert_eq!(m.session(6), session);
    // It expires when silent.
    m.wait(u64::from(5 * TICK));
    assert!(m.seen[&6].closed);
    assert!(!m.replica.is_local_session(session));
}

#[test]
fn read_only_mode_ends_with_the_election_and_closes_its_clients() {
    let mut m = Member::new(1, settings(true, false, true));
    m.wait(2100);
    assert!(m.replica.serving_read_only());
    m.connect(1, 0, Some(true));
    let session = m.session(1);
    assert!(!m.seen[&1].closed);
    // Servers 2 and 3 are back and elect 3: this one follows (not yet serving).
    m.votes_for(3, PeerState::Looking);
    m.wait(100);
    let zab = &m.replica.ensemble.as_ref().unwrap().zab;
    assert_eq!(zab.role(), zab::Role::Following);
    assert!(!m.replica.serving_read_only());
    assert!(m.seen[&1].closed, "read-only clients are disconnected");
    assert!(
        !m.replica.is_local_session(session),
        "read-only sessions end"
    );
}

#[test]
fn without_local_sessions_a_read_only_server_takes_no_new_session() {
    let mut m = Member::new(1, settings(false, false, true));
    m.wait(2100);
    assert!(m.replica.serving_read_only());
    m.connect(1, 0, Some(true));
    assert!(m.seen[&1].closed && m.seen[&1].connect.is_none());
}

#[test]
fn read_only_mode_is_off_unless_enabled() {
    let mut m = Member::new(1, settings(true, false, false));
    m.wait(3000);
    assert!(!m.replica.serving_read_only());
    m.connect(1, 0, Some(true));
    assert!(m.seen[&1].closed, "refused after the hold");
}

#[test]
fn an_observer_never_serves_read_only() {
    let mut m = Member::with_observers(4, settings(true, false, true), &[4]);
    m.wait(3000);
    assert!(
        !m.replica.serving_read_only(),
        "ZooKeeper's observers never look"
    );
    let mut participant = Member::with_observers(1, settings(true, false, true), &[4]);
    participant.wait(3000);
    assert!(participant.replica.serving_read_only());
}
