//! Engine tests of the leader: epoch files before LEADERINFO / NEWLEADER, establishment at a
//! NEWLEADER quorum, commits only at a quorum that includes the leader's own fsync.
#![allow(clippy::unwrap_used)]

use proto::txn::{ErrorTxn, Txn, TxnBody, TxnHeader};
use zab::{
    Action, Boot, Config, Message, Notification, PeerState, ProposeError, Role, Vote, Zab, Zxid,
};

fn noop(zxid: Zxid) -> Txn {
    Txn {
        header: TxnHeader {
            client_id: 1,
            cxid: 1,
            zxid: zxid.as_i64(),
            time: 0,
            op_type: -1,
        },
        body: TxnBody::Error(ErrorTxn { err: 0 }),
    }
}

fn position(actions: &[Action], pred: impl Fn(&Action) -> bool) -> usize {
    actions.iter().position(pred).expect("action present")
}

/// Server 3 elected by 1 and 2, with 1 synced: an established leader of epoch 1.
fn leader() -> Zab {
    let c = Config::new(3, [1, 2, 3].into(), Default::default());
    let mut z = Zab::new(c.clone(), Boot::default(), 0).unwrap();
    z.poll_actions();
    for from in [1, 2] {
        let n = Notification {
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
        z.handle_message(1, from, Message::Notification(n));
    }
    z.handle_tick(1 + c.finalize_wait_ms);
    assert_eq!(z.role(), Role::Leading);
    assert!(!z.is_serving());
    z.poll_actions();
    z.handle_message(
        30,
        1,
        Message::FollowerInfo {
            accepted_epoch: 0,
            last_zxid: Zxid::ZERO,
            observer: false,
            recovering: false,
            incarnation: 1,
        },
    );
    let a = z.poll_actions();
    let save = position(&a, |x| *x == Action::SaveAcceptedEpoch(1));
    let info = position(&a, |x| {
        matches!(
            x,
            Action::Send {
                msg: Message::LeaderInfo { epoch: 1 },
                ..
            }
        )
    });
    assert!(
        save < info,
        "acceptedEpoch must be durable before LEADERINFO"
    );
    z.handle_message(
        31,
        1,
        Message::AckEpoch {
            current_epoch: Some(0),
            last_zxid: Zxid::ZERO,
        },
    );
    let a = z.poll_actions();
    let save = position(&a, |x| *x == Action::SaveCurrentEpoch(1));
    let newleader = position(&a, |x| {
        matches!(
            x,
            Action::Send {
                msg: Message::NewLeader { epoch: 1 },
                ..
            }
        )
    });
    assert!(
        save < newleader,
        "currentEpoch must be durable before NEWLEADER"
    );
    assert_eq!(
        z.propose(32, noop(Zxid::new(1, 1)), None),
        Err(ProposeError::NotLeader)
    );
    z.handle_message(
        33,
        1,
        Message::Ack {
            zxid: Zxid::new(1, 0),
        },
    );
    let a = z.poll_actions();
    assert!(a.contains(&Action::RoleChanged {
        role: Role::Leading,
        epoch: 1
    }));
    assert!(z.is_serving());
    z
}

#[test]
fn commits_need_a_quorum_including_the_leaders_own_fsync() {
    let mut z = leader();
    let zxid = z.next_zxid().unwrap();
    assert_eq!(zxid, Zxid::new(1, 1));
    assert_eq!(z.propose(40, noop(zxid), Some(1)), Ok(zxid));
    let a = z.poll_actions();
    assert!(matches!(&a[0], Action::Append(e) if e.zxid == zxid));
    assert!(a.iter().any(|x| matches!(
        x,
        Action::Send {
            to: 1,
            msg: Message::Proposal(_)
        }
    )));

    // The follower's ACK alone is not a quorum with an unsynced leader.
    z.handle_message(41, 1, Message::Ack { zxid });
    assert!(!z
        .poll_actions()
        .iter()
        .any(|x| matches!(x, Action::Deliver(_))));
    // Our own fsync completes the quorum {1, 3}.
    z.handle_log_durable(42, zxid);
    let a = z.poll_actions();
    let deliver = position(&a, |x| matches!(x, Action::Deliver(e) if e.zxid == zxid));
    let commit = position(
        &a,
        |x| matches!(x, Action::Send { to: 1, msg: Message::Commit { zxid: z } } if *z == zxid),
    );
    assert!(deliver < commit);
}

#[test]
fn a_new_connection_forgets_old_acks() {
    let mut z = leader();
    let zxid = z.next_zxid().unwrap();
    z.propose(40, noop(zxid), None).unwrap();
    z.handle_message(41, 1, Message::Ack { zxid });
    // Server 1 restarts before we fsync: its old ACK must not count any more.
    z.handle_message(
        42,
        1,
        Message::FollowerInfo {
            accepted_epoch: 1,
            last_zxid: Zxid::ZERO,
            observer: false,
            recovering: false,
            incarnation: 2,
        },
    );
    z.poll_actions();
    z.handle_log_durable(43, zxid);
    assert!(!z
        .poll_actions()
        .iter()
        .any(|x| matches!(x, Action::Deliver(_))));
}

#[test]
fn losing_the_quorum_for_sync_limit_steps_down() {
    let mut z = leader();
    let c = z.config().clone();
    z.handle_tick(100);
    assert_eq!(z.role(), Role::Leading);
    z.handle_tick(33 + c.sync_limit_ms() + 1);
    assert_eq!(z.role(), Role::Looking);
}

/// Commits `n` proposals through `z` (the leader of [`leader`], follower 1 acknowledging).
fn commit_many(z: &mut Zab, n: u32, now: u64) {
    for k in 0..n {
        let zxid = z.next_zxid().unwrap();
        z.propose(now + u64::from(k), noop(zxid), Some(1)).unwrap();
        z.handle_message(now + u64::from(k), 1, Message::Ack { zxid });
        z.handle_log_durable(now + u64::from(k), zxid);
        z.poll_actions();
    }
}

#[test]
fn a_diskless_host_keeps_what_its_newest_snapshot_lacks_in_memory() {
    // Without it, only the last committed_log_max (500) delivered entries stay.
    let mut z = leader();
    commit_many(&mut z, 600, 100);
    assert_eq!(z.entries_since(Zxid::new(1, 10)), None);
    assert_eq!(
        z.entries_since(Zxid::new(1, 550)).map(|e| e.len()),
        Some(50)
    );
    // With the newest snapshot at (1, 10), everything after it stays.
    let mut z = leader();
    z.retain_after(Zxid::new(1, 10));
    commit_many(&mut z, 600, 100);
    let kept = z.entries_since(Zxid::new(1, 10)).expect("kept");
    assert_eq!(kept.len(), 590);
    assert_eq!(kept[0].zxid, Zxid::new(1, 11));
    // A newer snapshot lets the older entries go (down to the usual window).
    z.retain_after(Zxid::new(1, 590));
    commit_many(&mut z, 1, 1000);
    assert_eq!(z.entries_since(Zxid::new(1, 10)), None);
    assert_eq!(
        z.entries_since(Zxid::new(1, 590)).map(|e| e.len()),
        Some(11)
    );
}

#[test]
fn retention_stops_at_its_byte_bound() {
    use proto::txn::SetDataTxn;
    let mut z = leader();
    z.retain_after(Zxid::new(1, 0));
    let big = vec![0u8; 1 << 20];
    let n = (zab::RETAINED_BYTES_MAX >> 20) as u32 + 20;
    for k in 0..n {
        let zxid = z.next_zxid().unwrap();
        let mut txn = noop(zxid);
        txn.header.op_type = 5;
        txn.body = TxnBody::SetData(SetDataTxn {
            path: "/big".into(),
            data: Some(big.clone()),
            version: -1,
        });
        z.propose(100 + u64::from(k), txn, Some(1)).unwrap();
        z.handle_message(100 + u64::from(k), 1, Message::Ack { zxid });
        z.handle_log_durable(100 + u64::from(k), zxid);
        z.poll_actions();
    }
    // Fewer than RETAINED_ENTRIES_MAX entries, but more bytes than allowed: the oldest went.
    assert_eq!(z.entries_since(Zxid::new(1, 0)), None);
    let kept = z
        .entries_since(Zxid::new(1, n - 10))
        .expect("the newest stay");
    assert_eq!(kept.len(), 10);
}

#[test]
fn a_hand_over_abdicates_only_once_the_successor_holds_every_proposal() {
    let mut z = leader();
    let zxid = z.next_zxid().unwrap();
    z.propose(40, noop(zxid), None).unwrap();
    z.poll_actions();
    assert_eq!(z.transfer_leadership(41, 1_000), Ok(1));
    assert_eq!(z.transfer_underway(), Some(1));
    assert_eq!(z.next_zxid(), None, "no new proposals during a hand-over");
    assert_eq!(
        z.propose(41, noop(zxid), None),
        Err(ProposeError::Transferring)
    );
    // The successor has not acknowledged: no ABDICATE yet.
    z.handle_log_durable(42, zxid);
    let a = z.poll_actions();
    assert!(!a.iter().any(|x| matches!(
        x,
        Action::Send {
            msg: Message::Abdicate { .. },
            ..
        }
    )));
    assert_eq!(z.role(), Role::Leading);
    // Its ACK commits the proposal; the COMMIT goes out before ABDICATE.
    z.handle_message(43, 1, Message::Ack { zxid });
    let a = z.poll_actions();
    let commit = position(
        &a,
        |x| matches!(x, Action::Send { to: 1, msg: Message::Commit { zxid: z } } if *z == zxid),
    );
    let abdicate = position(&a, |x| {
        matches!(
            x,
            Action::Send {
                to: 1,
                msg: Message::Abdicate { successor }
            } if *successor == Vote { leader: 1, zxid, epoch: 1 }
        )
    });
    assert!(commit < abdicate);
    assert!(a.contains(&Action::Abdicated { successor: 1 }));
    assert_eq!(z.role(), Role::Looking);
    // The old leader now votes for its successor, not for itself.
    let own_vote = a.iter().rev().find_map(|x| match x {
        Action::Send {
            msg: Message::Notification(n),
            ..
        } => Some(n.vote),
        _ => None,
    });
    assert_eq!(own_vote.map(|v| v.leader), Some(1));
}

#[test]
fn a_hand_over_the_successor_cannot_complete_is_abandoned_at_its_bound() {
    let mut z = leader();
    let zxid = z.next_zxid().unwrap();
    z.propose(40, noop(zxid), None).unwrap();
    z.handle_log_durable(40, zxid);
    z.poll_actions();
    assert_eq!(z.transfer_leadership(41, 50), Ok(1));
    z.handle_tick(60);
    assert_eq!(z.transfer_underway(), Some(1), "still within its bound");
    z.handle_tick(92);
    assert_eq!(z.transfer_underway(), None);
    assert_eq!(z.role(), Role::Leading);
    assert!(z.next_zxid().is_some(), "proposing again");
    assert_eq!(
        z.transfer_leadership(93, 50).map(|_| ()),
        Ok(()),
        "a new hand-over may start"
    );
}

/// A reconfiguration transaction at `zxid` installing `voters` (ZooKeeper's setData of
/// /zookeeper/config with op type reconfig).
fn reconfig(zxid: Zxid, voters: &[u64]) -> Txn {
    let mut text = String::new();
    for v in voters {
        text.push_str(&format!(
            "server.{v}=127.0.0.1:{}:{}:participant\n",
            2000 + v,
            3000 + v
        ));
    }
    text.push_str(&format!("version={:x}", zxid.as_i64()));
    Txn {
        header: TxnHeader {
            client_id: 1,
            cxid: 1,
            zxid: zxid.as_i64(),
            time: 0,
            op_type: zab::membership::RECONFIG_OP,
        },
        body: TxnBody::SetData(proto::txn::SetDataTxn {
            path: zab::membership::CONFIG_NODE.into(),
            data: Some(text.into_bytes()),
            version: -1,
        }),
    }
}

fn delivered(actions: &[Action]) -> Vec<Zxid> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Deliver(e) => Some(e.zxid),
            _ => None,
        })
        .collect()
}

#[test]
fn a_pending_reconfiguration_commits_only_with_a_quorum_of_both_configurations() {
    let mut z = leader();
    let zxid = z.next_zxid().unwrap();
    // {1, 3} is a quorum of the old voters {1, 2, 3}, not of the new {1, 3, 4, 5}.
    z.propose(40, reconfig(zxid, &[1, 3, 4, 5]), None).unwrap();
    assert_eq!(
        z.config().pending.as_ref().map(|p| p.voters.clone()),
        Some([1, 3, 4, 5].into())
    );
    z.handle_message(41, 1, Message::Ack { zxid });
    z.handle_log_durable(42, zxid);
    assert_eq!(delivered(&z.poll_actions()), Vec::<Zxid>::new());
    // A write after it waits too: every quorum needs both configurations while one is pending.
    let next = z.next_zxid().unwrap();
    z.propose(43, noop(next), None).unwrap();
    z.handle_message(44, 1, Message::Ack { zxid: next });
    z.handle_log_durable(45, next);
    assert_eq!(delivered(&z.poll_actions()), Vec::<Zxid>::new());
    assert_eq!(z.config().voters, [1, 2, 3].into(), "nothing activated");
}

#[test]
fn a_committed_reconfiguration_becomes_the_active_configuration() {
    let mut z = leader();
    let zxid = z.next_zxid().unwrap();
    // Remove 2: {1, 3} is a quorum of both {1, 2, 3} and {1, 3}.
    z.propose(40, reconfig(zxid, &[1, 3]), None).unwrap();
    z.handle_message(41, 1, Message::Ack { zxid });
    z.handle_log_durable(42, zxid);
    let a = z.poll_actions();
    assert_eq!(delivered(&a), vec![zxid]);
    assert_eq!(z.config().voters, [1, 3].into());
    assert_eq!(z.config().version, zxid);
    assert!(z.config().pending.is_none());
    assert!(a.iter().any(|x| matches!(
        x,
        Action::MembershipChanged { active, pending: None } if active.voters == [1, 3].into()
    )));
    assert!(z.is_serving());
}

#[test]
fn a_leader_removed_from_the_voters_hands_leadership_over() {
    let mut z = leader();
    let zxid = z.next_zxid().unwrap();
    // The new configuration {1}: 3 (the leader) no longer votes.
    z.propose(40, reconfig(zxid, &[1]), None).unwrap();
    z.handle_message(41, 1, Message::Ack { zxid });
    z.handle_log_durable(42, zxid);
    let a = z.poll_actions();
    assert_eq!(delivered(&a), vec![zxid]);
    assert!(
        a.contains(&Action::Abdicated { successor: 1 }),
        "the leader abdicates to the only voter: {a:?}"
    );
    assert_eq!(z.role(), Role::Looking);
    assert!(!z.is_serving());
}

#[test]
fn a_configuration_of_one_voter_elects_and_establishes_it_alone() {
    // After a lost-quorum recovery (or a reconfiguration to one voter) no peer answers.
    let c = Config::new(1, [1].into(), Default::default());
    let mut z = Zab::new(c.clone(), Boot::default(), 0).unwrap();
    let mut now = 0;
    while !z.is_serving() && now < 5 * c.init_limit_ms() {
        now += 10;
        z.handle_tick(now);
    }
    assert!(z.is_serving(), "role {:?} after {now} ms", z.role());
    assert_eq!(z.role(), Role::Leading);
    let zxid = z.next_zxid().unwrap();
    z.propose(now, noop(zxid), None).unwrap();
    z.handle_log_durable(now, zxid);
    assert_eq!(
        delivered(&z.poll_actions()),
        vec![zxid],
        "its own fsync commits"
    );
}
