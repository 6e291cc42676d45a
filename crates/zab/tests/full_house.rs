//! Engine tests of a leader elected by a full house (diskless mode): it hears every voter in
//! discovery, counts amnesiac ones, abandons the attempt when a voter is ahead of it, and an
//! amnesiac leader becomes whole when it is established.
#![allow(clippy::unwrap_used)]

use zab::{
    Action, Boot, Config, Durability, Message, Notification, PeerState, Role, Vote, Zab, Zxid,
};

fn config(me: u64) -> Config {
    let mut c = Config::new(me, [1, 2, 3].into(), Default::default());
    c.durability = Durability::Diskless;
    c
}

fn vote(leader: u64, epoch: u32, counter: u32) -> Vote {
    Vote {
        leader,
        zxid: Zxid::new(1, counter),
        epoch,
    }
}

fn notification(v: Vote, voter: bool) -> Message {
    Message::Notification(Notification {
        vote: v,
        round: 1,
        state: PeerState::Looking,
        voter,
        config: Zxid::ZERO,
        config_pending: Zxid::ZERO,
    })
}

fn follower_info(accepted_epoch: u32, last: u32, recovering: bool) -> Message {
    Message::FollowerInfo {
        accepted_epoch,
        last_zxid: Zxid::new(1, last),
        observer: false,
        recovering,
        incarnation: 7,
    }
}

fn ack_epoch(epoch: u32, last: u32) -> Message {
    Message::AckEpoch {
        current_epoch: Some(epoch),
        last_zxid: Zxid::new(1, last),
    }
}

fn sent_leader_info(actions: &[Action]) -> bool {
    actions.iter().any(|a| {
        matches!(
            a,
            Action::Send {
                msg: Message::LeaderInfo { .. },
                ..
            }
        )
    })
}

/// Server 3 booted amnesiac from a snapshot at (1,6) labelled epoch 1; 1 is whole at (1,4),
/// 2 amnesiac at (1,2). The full house elects 3.
fn full_house_leader() -> Zab {
    let boot = Boot {
        accepted_epoch: 2,
        current_epoch: 1,
        snapshot_zxid: Zxid::new(1, 6),
        log: Vec::new(),
        amnesia: true,
        incarnation: 1,
    };
    let c = config(3);
    let mut z = Zab::new(c.clone(), boot, 0).unwrap();
    assert!(z.is_recovering());
    let best = vote(3, 1, 6);
    z.handle_message(1, 1, notification(best, true));
    z.handle_message(1, 2, notification(best, false));
    z.handle_tick(1 + c.finalize_wait_ms);
    assert_eq!(z.role(), Role::Leading);
    assert!(z.elected_by_full_house());
    z.poll_actions();
    z
}

#[test]
fn a_full_house_leader_hears_every_voter_and_counts_amnesiacs() {
    let mut z = full_house_leader();
    z.handle_message(30, 1, follower_info(1, 4, false));
    assert!(
        !sent_leader_info(&z.poll_actions()),
        "a quorum is not enough: every voter must report"
    );
    z.handle_message(31, 2, follower_info(1, 2, true));
    let a = z.poll_actions();
    assert!(
        a.contains(&Action::SaveAcceptedEpoch(3)),
        "above every acceptedEpoch"
    );
    assert!(sent_leader_info(&a));
    z.handle_message(32, 1, ack_epoch(1, 4));
    assert!(!z.poll_actions().contains(&Action::SaveCurrentEpoch(3)));
    z.handle_message(33, 2, ack_epoch(1, 2));
    assert!(z.poll_actions().contains(&Action::SaveCurrentEpoch(3)));
    // The amnesiac learner's NEWLEADER ACK completes the quorum under a full house.
    z.handle_message(
        34,
        2,
        Message::Ack {
            zxid: Zxid::new(3, 0),
        },
    );
    let a = z.poll_actions();
    let recovered = a.iter().position(|x| *x == Action::RecoveryComplete);
    let leading = a.iter().position(|x| {
        *x == Action::RoleChanged {
            role: Role::Leading,
            epoch: 3,
        }
    });
    assert!(recovered.is_some() && leading.is_some(), "{a:?}");
    assert!(
        !z.is_recovering(),
        "the established history is the ensemble's"
    );
    assert!(z.is_serving());
}

#[test]
fn a_voter_ahead_of_a_full_house_leader_ends_the_attempt() {
    let mut z = full_house_leader();
    z.handle_message(30, 1, follower_info(1, 4, false));
    z.handle_message(31, 2, follower_info(1, 2, true));
    z.poll_actions();
    // Server 1's report is fresher than what the election saw.
    z.handle_message(32, 1, ack_epoch(1, 9));
    assert_eq!(z.role(), Role::Looking);
}

fn entry(counter: u32) -> zab::SharedEntry {
    use proto::txn::{ErrorTxn, Txn, TxnBody, TxnHeader};
    let zxid = Zxid::new(1, counter);
    std::sync::Arc::new(zab::Entry {
        zxid,
        txn: Txn {
            header: TxnHeader {
                client_id: 1,
                cxid: 1,
                zxid: zxid.as_i64(),
                time: 0,
                op_type: -1,
            },
            body: TxnBody::Error(ErrorTxn { err: 0 }),
        },
        digest: None,
    })
}

#[test]
fn undelivered_entries_are_what_a_failure_checkpoint_saves() {
    // A whole checkpoint boots with its entries; they are undelivered until a leader commits.
    let boot = Boot {
        accepted_epoch: 1,
        current_epoch: 1,
        snapshot_zxid: Zxid::new(1, 2),
        log: vec![entry(3), entry(4)],
        amnesia: false,
        incarnation: 1,
    };
    let z = Zab::new(config(1), boot, 0).unwrap();
    let zxids: Vec<Zxid> = z.undelivered().iter().map(|e| e.zxid).collect();
    assert_eq!(zxids, vec![Zxid::new(1, 3), Zxid::new(1, 4)]);
    assert_eq!(z.delivered(), Zxid::new(1, 2));
}
