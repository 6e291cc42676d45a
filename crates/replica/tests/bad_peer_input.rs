//! The replica driven by hand, without any I/O: what a member does when its leader sends it
//! something it cannot take. It leaves that leader and syncs again; it never stops.
#![allow(clippy::unwrap_used)]

mod common;

use common::at;

use replica::ensemble::codec::{encode, PeerMessage};
use replica::ensemble::Ensemble;
use replica::{Output, Replica, Settings};
use std::sync::Arc;
use storage::faulty_fs::FaultyFs;
use zab::{Boot, Config, Message, Notification, PeerState, Role, Vote, Zab, Zxid};

/// Server 1 of {1, 2, 3}, following 3, which has just told it the new epoch.
fn follower_awaiting_sync(fs: &FaultyFs) -> Replica<storage::Persistence> {
    let (store, recovered, _) = common::store(fs, false);
    let mut replica = Replica::new(Settings::default(), store, recovered, 0, at(0));
    let boot = Boot {
        accepted_epoch: 1,
        current_epoch: 1,
        incarnation: 9,
        ..Boot::default()
    };
    let zab = Zab::new(
        Config::new(1, [1, 2, 3].into(), Default::default()),
        boot,
        0,
    )
    .unwrap();
    replica.join_ensemble(at(0), Ensemble::new(zab, 1, vec![2, 3], 100, 0));
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
        let frame = encode(&PeerMessage::Zab(Message::Notification(n)));
        replica.on_peer_frame(at(1), from, &frame);
    }
    let frame = encode(&PeerMessage::Zab(Message::LeaderInfo { epoch: 2 }));
    replica.on_peer_frame(at(2), 3, &frame);
    assert_eq!(
        replica.ensemble.as_ref().unwrap().zab.role(),
        Role::Following
    );
    replica.take_outputs();
    replica
}

/// The connection to the leader (3), and only that one, is broken.
fn assert_leader_dropped(outputs: &[Output]) {
    let dropped: Vec<u64> = outputs
        .iter()
        .filter_map(|o| match o {
            Output::DisconnectPeer { peer } => Some(*peer),
            _ => None,
        })
        .collect();
    assert!(
        dropped.contains(&3) && dropped.iter().all(|&p| p == 3),
        "{outputs:?}"
    );
}

#[test]
fn a_snapshot_that_does_not_decode_drops_the_leader_instead_of_stopping_the_server() {
    let fs = FaultyFs::new();
    let mut replica = follower_awaiting_sync(&fs);
    let snap = Message::Snap {
        zxid: Zxid::new(1, 5),
        image: Arc::new(b"not a snapshot at all".to_vec()),
    };
    replica.on_peer_frame(at(3), 3, &encode(&PeerMessage::Zab(snap)));
    let outputs = replica.take_outputs();
    assert_leader_dropped(&outputs);
    assert!(replica.fatal.is_none(), "{:?}", replica.fatal);
    let zab = &replica.ensemble.as_ref().unwrap().zab;
    assert_eq!(zab.role(), Role::Looking);
    assert_eq!(zab.last_logged(), Zxid::ZERO, "Zab never took the snapshot");
}

#[test]
fn a_snapshot_holding_another_zxid_than_it_claims_is_refused_too() {
    let fs = FaultyFs::new();
    let mut replica = follower_awaiting_sync(&fs);
    // A real snapshot of an empty tree (zxid 0) that claims to be at 1:5.
    let image = storage::Persistence::snapshot_bytes(&tree::DataTree::new());
    let snap = Message::Snap {
        zxid: Zxid::new(1, 5),
        image: Arc::new(image),
    };
    replica.on_peer_frame(at(3), 3, &encode(&PeerMessage::Zab(snap)));
    let outputs = replica.take_outputs();
    assert_leader_dropped(&outputs);
    assert!(replica.fatal.is_none(), "{:?}", replica.fatal);
}

#[test]
fn an_undecodable_frame_drops_the_peer() {
    let fs = FaultyFs::new();
    let mut replica = follower_awaiting_sync(&fs);
    replica.on_peer_frame(at(3), 3, &[0xff, 0xff, 0xff]);
    let outputs = replica.take_outputs();
    assert_leader_dropped(&outputs);
    assert!(replica.fatal.is_none());
}
