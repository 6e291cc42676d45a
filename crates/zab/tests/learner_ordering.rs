//! Engine tests: feed one Zab inputs by hand and assert on the exact actions it emits, above
//! all the durability-before-send order of ZAB.md §2.
#![allow(clippy::unwrap_used)]

use proto::txn::{ErrorTxn, Txn, TxnBody, TxnHeader};
use std::sync::Arc;
use zab::{
    Action, Boot, Config, Entry, Message, Notification, PeerState, Role, SharedEntry, Vote, Zab,
    Zxid,
};

fn entry(e: u32, c: u32) -> SharedEntry {
    let zxid = Zxid::new(e, c);
    Arc::new(Entry {
        zxid,
        txn: Txn {
            header: TxnHeader {
                client_id: 1,
                cxid: c as i32,
                zxid: zxid.as_i64(),
                time: 0,
                op_type: -1,
            },
            body: TxnBody::Error(ErrorTxn { err: 0 }),
        },
        digest: Some(7),
    })
}

fn config(me: u64) -> Config {
    Config::new(me, [1, 2, 3].into(), Default::default())
}

/// Server 1, following leader 3, with `log` on disk.
fn follower(log: Vec<SharedEntry>, amnesia: bool) -> Zab {
    let boot = Boot {
        accepted_epoch: 1,
        current_epoch: 1,
        log,
        amnesia,
        incarnation: 9,
        ..Boot::default()
    };
    let mut z = Zab::new(config(1), boot, 0).unwrap();
    z.poll_actions();
    for (from, state) in [(3, PeerState::Leading), (2, PeerState::Following)] {
        let n = Notification {
            vote: Vote {
                leader: 3,
                zxid: Zxid::ZERO,
                epoch: 1,
            },
            round: 5,
            state,
            voter: true,
            config: Zxid::ZERO,
            config_pending: Zxid::ZERO,
        };
        z.handle_message(1, from, Message::Notification(n));
    }
    assert_eq!(z.role(), Role::Following);
    let actions = z.poll_actions();
    assert!(actions.iter().any(|a| matches!(
        a,
        Action::Send {
            to: 3,
            msg: Message::FollowerInfo { .. }
        }
    )));
    z
}

fn sends(actions: &[Action]) -> Vec<&Message> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Send { msg, .. } => Some(msg),
            _ => None,
        })
        .collect()
}

#[test]
fn accepted_epoch_is_saved_before_ackepoch() {
    let mut z = follower(vec![entry(1, 1)], false);
    z.handle_message(2, 3, Message::LeaderInfo { epoch: 2 });
    let a = z.poll_actions();
    assert_eq!(a[0], Action::SaveAcceptedEpoch(2));
    assert_eq!(
        a[1],
        Action::Send {
            to: 3,
            msg: Message::AckEpoch {
                current_epoch: Some(1),
                last_zxid: Zxid::new(1, 1)
            }
        }
    );
}

#[test]
fn newleader_is_acknowledged_only_after_the_sync_is_durable() {
    let mut z = follower(vec![entry(1, 1)], false);
    z.handle_message(2, 3, Message::LeaderInfo { epoch: 2 });
    z.poll_actions();
    z.handle_message(
        3,
        3,
        Message::Diff {
            zxid: Zxid::new(1, 1),
        },
    );
    z.handle_message(3, 3, Message::Proposal(entry(1, 2)));
    z.handle_message(3, 3, Message::Proposal(entry(1, 3)));
    z.handle_message(3, 3, Message::NewLeader { epoch: 2 });
    let a = z.poll_actions();
    assert_eq!(a.len(), 2, "only the appends: {a:?}");
    assert!(matches!(&a[0], Action::Append(e) if e.zxid == Zxid::new(1, 2)));
    assert!(matches!(&a[1], Action::Append(e) if e.zxid == Zxid::new(1, 3)));
    assert_eq!(z.current_epoch(), 1, "currentEpoch must wait for the txns");

    z.handle_log_durable(4, Zxid::new(1, 2));
    assert!(z.poll_actions().is_empty(), "(1,3) is not durable yet");

    z.handle_log_durable(5, Zxid::new(1, 3));
    let a = z.poll_actions();
    assert_eq!(a[0], Action::SaveCurrentEpoch(2));
    assert_eq!(
        sends(&a),
        vec![
            &Message::Ack {
                zxid: Zxid::new(2, 0)
            },
            &Message::Ack {
                zxid: Zxid::new(1, 3)
            }
        ]
    );

    // UPTODATE delivers what the leader says is committed, in order.
    z.handle_message(
        6,
        3,
        Message::UpToDate {
            committed: Zxid::new(1, 3),
        },
    );
    let a = z.poll_actions();
    let delivered: Vec<Zxid> = a
        .iter()
        .filter_map(|a| match a {
            Action::Deliver(e) => Some(e.zxid),
            _ => None,
        })
        .collect();
    assert_eq!(
        delivered,
        vec![Zxid::new(1, 1), Zxid::new(1, 2), Zxid::new(1, 3)]
    );
    assert!(z.is_serving());
}

#[test]
fn proposals_are_acknowledged_after_fsync_and_gaps_abort() {
    let mut z = follower(vec![], false);
    z.handle_message(2, 3, Message::LeaderInfo { epoch: 2 });
    z.handle_message(3, 3, Message::Diff { zxid: Zxid::ZERO });
    z.handle_message(3, 3, Message::NewLeader { epoch: 2 });
    z.handle_message(
        4,
        3,
        Message::UpToDate {
            committed: Zxid::ZERO,
        },
    );
    z.poll_actions();
    z.handle_message(5, 3, Message::Proposal(entry(2, 1)));
    let a = z.poll_actions();
    assert!(sends(&a).is_empty(), "no ACK before the fsync: {a:?}");
    z.handle_log_durable(6, Zxid::new(2, 1));
    assert_eq!(
        sends(&z.poll_actions()),
        vec![&Message::Ack {
            zxid: Zxid::new(2, 1)
        }]
    );
    // (2,3) after (2,1): a hole. The learner leaves rather than log around it.
    z.handle_message(7, 3, Message::Proposal(entry(2, 3)));
    assert_eq!(z.role(), Role::Looking);
}

#[test]
fn trunc_is_applied_to_disk_at_newleader() {
    let mut z = follower(vec![entry(1, 1), entry(1, 2)], false);
    z.handle_message(2, 3, Message::LeaderInfo { epoch: 2 });
    z.handle_message(
        3,
        3,
        Message::Trunc {
            zxid: Zxid::new(1, 1),
        },
    );
    z.handle_message(3, 3, Message::NewLeader { epoch: 2 });
    let a = z.poll_actions();
    assert!(a.contains(&Action::Truncate(Zxid::new(1, 1))));
    assert_eq!(z.last_logged(), Zxid::new(1, 1));
}

#[test]
fn leaderinfo_below_accepted_epoch_is_refused() {
    let mut z = follower(vec![], false);
    z.handle_message(2, 3, Message::LeaderInfo { epoch: 0 });
    assert_eq!(z.role(), Role::Looking);
}

#[test]
fn amnesiac_does_not_vote_and_recovers_after_uptodate() {
    let mut z = follower(vec![], true);
    assert!(z.is_recovering());
    let a = {
        z.handle_message(2, 3, Message::LeaderInfo { epoch: 2 });
        z.poll_actions()
    };
    assert!(!a.is_empty());
    z.handle_message(3, 3, Message::Diff { zxid: Zxid::ZERO });
    z.handle_message(3, 3, Message::NewLeader { epoch: 2 });
    z.handle_message(
        4,
        3,
        Message::UpToDate {
            committed: Zxid::ZERO,
        },
    );
    let a = z.poll_actions();
    assert!(a.contains(&Action::RecoveryComplete));
    assert!(!z.is_recovering());
}

#[test]
fn a_recovering_server_announces_itself_as_non_voter() {
    let boot = Boot {
        amnesia: true,
        ..Boot::default()
    };
    let mut z = Zab::new(config(2), boot, 0).unwrap();
    let a = z.poll_actions();
    let n = sends(&a)
        .into_iter()
        .find_map(|m| match m {
            Message::Notification(n) => Some(*n),
            _ => None,
        })
        .unwrap();
    assert!(!n.voter);
    // It never decides on LOOKING votes alone, however many agree.
    for from in [1, 3] {
        let v = Notification {
            vote: Vote {
                leader: 3,
                zxid: Zxid::ZERO,
                epoch: 0,
            },
            round: 1,
            state: PeerState::Looking,
            voter: true,
            config: Zxid::ZERO,
            config_pending: Zxid::ZERO,
        };
        z.handle_message(1, from, Message::Notification(v));
    }
    z.handle_tick(5_000);
    assert_eq!(z.role(), Role::Looking);
}

#[test]
fn a_digest_mismatch_halts() {
    let mut z = follower(vec![], false);
    let e = entry(1, 1);
    assert!(z.check_applied_digest(&e, 7).is_ok());
    let err = z.check_applied_digest(&e, 8).unwrap_err();
    assert_eq!(err.leader, 7);
    assert_eq!(z.role(), Role::Halted);
}

#[test]
fn boot_refuses_inverted_epochs_and_unordered_logs() {
    let bad = Boot {
        accepted_epoch: 1,
        current_epoch: 2,
        ..Boot::default()
    };
    assert!(Zab::new(config(1), bad, 0).is_err());
    let bad = Boot {
        log: vec![entry(1, 2), entry(1, 1)],
        ..Boot::default()
    };
    assert!(Zab::new(config(1), bad, 0).is_err());
}

#[test]
fn diskless_mode_acknowledges_from_memory() {
    let mut c = config(1);
    c.durability = zab::Durability::Diskless;
    let boot = Boot {
        accepted_epoch: 1,
        current_epoch: 1,
        ..Boot::default()
    };
    let mut z = Zab::new(c, boot, 0).unwrap();
    for (from, state) in [(3, PeerState::Leading), (2, PeerState::Following)] {
        let n = Notification {
            vote: Vote {
                leader: 3,
                zxid: Zxid::ZERO,
                epoch: 1,
            },
            round: 5,
            state,
            voter: true,
            config: Zxid::ZERO,
            config_pending: Zxid::ZERO,
        };
        z.handle_message(1, from, Message::Notification(n));
    }
    z.handle_message(2, 3, Message::LeaderInfo { epoch: 2 });
    z.handle_message(3, 3, Message::Diff { zxid: Zxid::ZERO });
    z.handle_message(3, 3, Message::Proposal(entry(1, 1)));
    z.poll_actions();
    z.handle_message(3, 3, Message::NewLeader { epoch: 2 });
    let a = z.poll_actions();
    // No fsync reported, yet the ACK leaves: the mode promises durability by replication.
    assert!(sends(&a).contains(&&Message::Ack {
        zxid: Zxid::new(2, 0)
    }));
}

#[test]
fn a_diff_from_another_point_makes_the_learner_leave_instead_of_crashing() {
    let mut z = follower(vec![entry(1, 1), entry(1, 2)], false);
    z.handle_message(2, 3, Message::LeaderInfo { epoch: 2 });
    z.poll_actions();
    // The leader claims to stream what follows 1:1, but this server's last zxid is 1:2.
    z.handle_message(
        3,
        3,
        Message::Diff {
            zxid: Zxid::new(1, 1),
        },
    );
    assert_eq!(z.role(), Role::Looking, "the sync is abandoned");
    let a = z.poll_actions();
    assert!(
        !a.iter()
            .any(|a| matches!(a, Action::Append(_) | Action::Truncate(_))),
        "nothing of the bad stream reaches the log: {a:?}"
    );
    // Whatever the old leader still sends is ignored, and the server can look for a leader.
    z.handle_message(3, 3, Message::Proposal(entry(1, 2)));
    z.handle_message(3, 3, Message::NewLeader { epoch: 2 });
    assert_eq!(z.role(), Role::Looking);
    assert_eq!(
        z.current_epoch(),
        1,
        "no epoch was adopted from the abandoned sync"
    );
}
