//! Scripted scenarios of diskless mode (DESIGN.md §5): the deadlock the strict amnesia rule
//! causes and the full house that resolves it, the writes a diskless ensemble may lose and the
//! ones it may not, and the planted bug `vote-after-amnesia`.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use sim::options::FaultKind;
use sim::world::World;
use std::collections::BTreeSet;
use zab::{Sid, Zxid};

fn block_both(w: &mut World, a: Sid, b: Sid) {
    w.net.block(a, b);
    w.net.block(b, a);
}

fn is_recovering(w: &World, sid: Sid) -> bool {
    w.server(sid).zab.as_ref().unwrap().is_recovering()
}

fn lost_zxids(w: &World) -> BTreeSet<Zxid> {
    w.durability
        .losses
        .iter()
        .flat_map(|l| l.zxids.iter().copied())
        .collect()
}

/// Three servers; the leader and one follower crash and come back amnesiac (busy snapshots
/// never complete here, so they hold nothing). The third is whole but alone. With the strict
/// amnesia rule it waits forever; with two of three up there is still no full house; once all
/// three are up the full house elects the whole server, and nothing is lost.
#[test]
fn two_amnesiacs_and_a_whole_server_come_back_as_a_full_house() {
    let mut w = diskless_ensemble(5101, 3, None, 1_000_000);
    assert_eq!(leader(&w), 3);
    create(&mut w, 3).unwrap();
    let acked: Vec<Zxid> = (0..5)
        .map(|i| write(&mut w, 3, &format!("x{i}")).unwrap())
        .collect();
    w.crash(3);
    w.crash(1);
    run_for(&mut w, 100);
    assert!(
        w.server(2).disk.whole.is_some(),
        "server 2 lost its leader: it must have saved a whole checkpoint"
    );
    w.restart(1);
    run_for(&mut w, 2_000);
    assert!(is_recovering(&w, 1), "server 1 booted amnesiac");
    assert!(
        w.settled_leader_of_live().is_none(),
        "one whole voter and one amnesiac are no quorum and no full house: {}",
        w.describe()
    );
    w.restart(3);
    assert!(w.settle(3_000), "no full house: {}", w.describe());
    assert_eq!(leader(&w), 2, "the full house elects the best vote");
    assert!(
        w.full_house_samples.len() == 1,
        "{:?}",
        w.full_house_samples
    );
    write(&mut w, 2, "after").unwrap();
    let failures = finish(&mut w);
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(lost_zxids(&w).is_empty(), "server 2 held every write");
    for z in acked {
        assert!(w.checker.committed.contains_key(&z), "{z} lost");
    }
}

/// The same, but server 2 is cut off from the leader while three writes commit on {3, 1}; then
/// 3 and 1 crash. Those three writes had no holder that stayed up and are in no snapshot: they,
/// and only they, are lost. Everything server 2 held survives.
#[test]
fn writes_no_surviving_server_held_are_the_only_ones_lost() {
    let mut w = diskless_ensemble(5102, 3, None, 1_000_000);
    create(&mut w, 3).unwrap();
    let kept: Vec<Zxid> = (0..3)
        .map(|i| write(&mut w, 3, &format!("k{i}")).unwrap())
        .collect();
    block_both(&mut w, 2, 3);
    let gone: BTreeSet<Zxid> = (0..3)
        .map(|i| write(&mut w, 3, &format!("g{i}")).unwrap())
        .collect();
    w.crash(3);
    w.crash(1);
    w.net.heal();
    run_for(&mut w, 500);
    w.restart(1);
    w.restart(3);
    assert!(w.settle(3_000), "no full house: {}", w.describe());
    assert_eq!(leader(&w), 2);
    let failures = finish(&mut w);
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(
        lost_zxids(&w),
        gone,
        "exactly the writes only the crashed servers held"
    );
    for z in kept {
        assert!(w.checker.committed.contains_key(&z), "{z} lost");
    }
}

/// Whole-ensemble power loss: every server comes back amnesiac from its newest completed
/// snapshot. The full house elects the newest; the writes lost are exactly the committed ones
/// after it (the window the simulator reports).
#[test]
fn a_power_loss_loses_exactly_the_writes_after_the_newest_snapshot() {
    let mut w = diskless_ensemble(5103, 3, None, 150);
    create(&mut w, 3).unwrap();
    for i in 0..12 {
        write(&mut w, 3, &format!("p{i}")).unwrap();
    }
    w.inject(FaultKind::PowerLoss);
    let newest = w
        .servers
        .iter()
        .map(|s| s.disk.snapshot_zxid)
        .max()
        .unwrap();
    let expected: BTreeSet<Zxid> = w
        .checker
        .committed
        .range(newest.next_after()..)
        .map(|(z, _)| *z)
        .collect();
    assert!(!expected.is_empty(), "the scenario should lose a window");
    eprintln!("newest snapshot {newest}, window {expected:?}");
    assert!(w.settle(5_000), "no full house: {}", w.describe());
    let failures = finish(&mut w);
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(lost_zxids(&w), expected);
    let loss = &w.durability.losses[0];
    assert!(loss.after_power_loss);
    assert!(w.checker.committed.contains_key(&newest));
}

trait NextAfter {
    fn next_after(self) -> Zxid;
}

impl NextAfter for Zxid {
    fn next_after(self) -> Zxid {
        Zxid(self.0 + 1)
    }
}

/// Server 2 holds every write and stays up, but is partitioned away while 1 and 3 crash and
/// come back amnesiac. It is not present, so no full house forms: 1 and 3 wait. With the
/// planted bug they vote as if whole, elect a leader without the writes, and lose them.
fn partitioned_whole_server(bug: Option<&str>) -> Vec<String> {
    let mut w = diskless_ensemble(5104, 3, bug, 1_000_000);
    create(&mut w, 3).unwrap();
    for i in 0..4 {
        write(&mut w, 3, &format!("h{i}")).unwrap();
    }
    block_both(&mut w, 2, 1);
    block_both(&mut w, 2, 3);
    w.crash(3);
    w.crash(1);
    w.restart(1);
    w.restart(3);
    run_for(&mut w, 2_000);
    if bug.is_none() {
        assert!(
            w.checker.leaders.keys().all(|&e| e == 1),
            "1 and 3 must not elect without 2: {}",
            w.describe()
        );
    }
    finish(&mut w)
}

#[test]
fn a_partitioned_whole_server_is_not_present_so_no_full_house_forms() {
    let failures = partitioned_whole_server(None);
    assert!(failures.is_empty(), "{failures:#?}");
}

#[cfg(feature = "planted-bugs")]
#[test]
fn vote_after_amnesia_is_caught_in_diskless_mode() {
    let failures = partitioned_whole_server(Some("vote-after-amnesia"));
    eprintln!("caught: {failures:?}");
    assert!(
        failures.iter().any(|f| f.starts_with("lost write")),
        "{failures:#?}"
    );
}
