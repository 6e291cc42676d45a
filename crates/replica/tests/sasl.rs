//! SASL outcomes and `enforce.auth`, driven by hand on a standalone replica: the exact frames
//! and closes ZooKeeper's `processSasl` and `AuthenticationHelper` produce.
#![allow(clippy::unwrap_used)]

mod common;

use common::{at, connect, reply_of, request};
use proto::request::Request;
use proto::{ErrorCode, Id, PathAndWatch, Reader};
use replica::sasl::SaslOutcome;
use replica::{ClientInput, Output, Replica, Settings};
use storage::faulty_fs::FaultyFs;

const CONN: u64 = 1;

/// What the client saw: (xid, err, token) of each reply, and whether it was closed.
#[derive(Debug, Default, PartialEq)]
struct Seen {
    replies: Vec<(i32, i32, Option<Vec<u8>>)>,
    closed: bool,
}

struct Fixture {
    replica: Replica<storage::Persistence>,
    durable: common::Reports,
    t: u64,
    _fs: FaultyFs,
}

impl Fixture {
    /// A standalone, diskless server with `settings` and one connected session.
    fn new(settings: Settings) -> Fixture {
        let fs = FaultyFs::new();
        let (store, recovered, durable) = common::store(&fs, true);
        let replica = Replica::new(settings, store, recovered, 0, at(0));
        let mut f = Fixture {
            replica,
            durable,
            t: 0,
            _fs: fs,
        };
        f.input(connect(CONN));
        f
    }

    /// Feeds `input`, applies what became durable, and returns what the client saw (the
    /// connect response is not a reply and is left out).
    fn input(&mut self, input: ClientInput) -> Seen {
        self.t += 1;
        self.replica.on_client(at(self.t), input);
        let mut seen = Seen::default();
        for _ in 0..10 {
            let reports: Vec<i64> = self.durable.lock().unwrap().drain(..).collect();
            for zxid in reports {
                self.replica.on_durable(at(self.t), zxid);
            }
            let outputs = self.replica.take_outputs();
            if outputs.is_empty() {
                break;
            }
            for output in outputs {
                match output {
                    Output::ToClient {
                        frame,
                        is_reply: true,
                        ..
                    } => {
                        let (xid, err) = reply_of(&frame);
                        // A SASL reply carries a token after the 16-byte header.
                        let token = (frame.len() > 20)
                            .then(|| Reader::new(&frame[20..]).read_buffer().ok().flatten())
                            .flatten()
                            .map(<[u8]>::to_vec);
                        seen.replies.push((xid, err, token));
                    }
                    Output::CloseClient { .. } => seen.closed = true,
                    _ => {}
                }
            }
        }
        seen
    }

    fn sasl(&mut self, xid: i32, outcome: SaslOutcome) -> Seen {
        self.input(ClientInput::Sasl {
            conn: CONN,
            xid,
            outcome,
            received_ms: self.t,
        })
    }

    fn exists(&mut self, xid: i32) -> Seen {
        let exists = Request::Exists(PathAndWatch {
            path: "/".into(),
            watch: false,
        });
        self.input(request(CONN, xid, exists, self.t))
    }

    fn ids(&self) -> Vec<Id> {
        self.replica.conns[&CONN].auth_ids.to_vec()
    }
}

fn enforcing(schemes: &[&str]) -> Settings {
    Settings {
        enforce_auth_schemes: schemes.iter().map(|s| s.to_string()).collect(),
        ..Settings::default()
    }
}

fn sasl_id(user: &str) -> Id {
    Id {
        scheme: "sasl".into(),
        id: user.to_string().into(),
    }
}

fn reply(xid: i32, err: ErrorCode, token: Option<&[u8]>) -> Seen {
    Seen {
        replies: vec![(xid, err.code(), token.map(<[u8]>::to_vec))],
        closed: false,
    }
}

fn closing(xid: i32, err: ErrorCode) -> Seen {
    Seen {
        replies: vec![(xid, err.code(), None)],
        closed: true,
    }
}

#[test]
fn an_exchange_adds_the_sasl_identity() {
    let mut f = Fixture::new(enforcing(&["sasl"]));
    let challenge = SaslOutcome::Continue {
        token: b"realm=...".to_vec(),
    };
    assert_eq!(
        f.sasl(1, challenge),
        reply(1, ErrorCode::Ok, Some(b"realm=..."))
    );
    let done = SaslOutcome::Authenticated {
        token: b"rspauth=x".to_vec(),
        ids: vec![sasl_id("bob")],
    };
    assert_eq!(f.sasl(2, done), reply(2, ErrorCode::Ok, Some(b"rspauth=x")));
    assert!(f.ids().contains(&sasl_id("bob")));
    // Enforced, and now authenticated: requests go through.
    assert_eq!(f.exists(3).replies[0].1, 0);
}

#[test]
fn enforce_auth_closes_an_unauthenticated_connection() {
    let mut f = Fixture::new(enforcing(&["sasl"]));
    assert_eq!(
        f.exists(5),
        closing(5, ErrorCode::SessionClosedRequireSaslAuth)
    );
    // Before the request is looked at: an unknown op code gets the same.
    let mut f = Fixture::new(enforcing(&["sasl"]));
    let unknown = ClientInput::Request {
        conn: CONN,
        xid: 9,
        op_type: 999,
        request: Err(proto::request::RequestError::UnknownOpCode(999)),
        received_ms: 0,
    };
    assert_eq!(
        f.input(unknown),
        closing(9, ErrorCode::SessionClosedRequireSaslAuth)
    );
    // Another scheme than the enforced one does not count; `ip` counts when enforced.
    let mut f = Fixture::new(enforcing(&["digest"]));
    let auth = Request::Auth(proto::AuthPacket {
        auth_type: 0,
        scheme: "digest".into(),
        auth: Some(b"bob:pw".to_vec()),
    });
    assert_eq!(f.input(request(CONN, -4, auth, 0)).replies[0].1, 0);
    assert_eq!(f.exists(6).replies[0].1, 0);
    let mut f = Fixture::new(enforcing(&["ip"]));
    assert_eq!(f.exists(7).replies[0].1, 0);
    let mut f = Fixture::new(Settings::default());
    assert_eq!(f.exists(8).replies[0].1, 0);
}

#[test]
fn a_failed_exchange_is_answered_as_zookeeper_does() {
    let failed = || SaslOutcome::Failed {
        reason: "DIGEST-MD5: digest response format violation. Mismatched response.".into(),
    };
    let mut f = Fixture::new(Settings::default());
    assert_eq!(f.sasl(1, failed()), closing(1, ErrorCode::AuthFailed));
    let mut f = Fixture::new(enforcing(&["sasl"]));
    assert_eq!(
        f.sasl(1, failed()),
        closing(1, ErrorCode::SessionClosedRequireSaslAuth)
    );
    let lenient = Settings {
        allow_sasl_failed_clients: true,
        ..Settings::default()
    };
    let mut f = Fixture::new(lenient);
    assert_eq!(f.sasl(1, failed()), reply(1, ErrorCode::Ok, None));
    assert!(!f.ids().iter().any(|id| id.scheme == "sasl"));
    // Without a JAAS login ZooKeeper answers OK with no token.
    let mut f = Fixture::new(Settings::default());
    assert_eq!(
        f.sasl(1, SaslOutcome::NotConfigured),
        reply(1, ErrorCode::Ok, None)
    );
}
