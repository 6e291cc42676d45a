//! Scripted regressions of the ZooKeeper bug classes of LESSONS.md / ZAB.md §7, each driven
//! through the real Zab and tree code. Server ids: the initial leader is 3 (equal logs, highest
//! id wins), so in ZooKeeper's traces S2 = 3, S0 = 1, S1 = 2.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use sim::world::CrashPoint;

/// ZOOKEEPER-3911: a learner ACKs NEWLEADER while the DIFF transactions are not yet on its
/// disk; it crashes, and with its newer currentEpoch later wins an election and truncates the
/// committed (1,3) away. meerkat acknowledges only after the fsync.
fn zk3911(bug: Option<&str>) -> Vec<String> {
    let mut w = ensemble_with(3911, 3, bug, 500);
    assert_eq!(leader(&w), 3);
    create(&mut w, 3).unwrap();
    write(&mut w, 3, "x2").unwrap();
    w.crash(1);
    let x3 = write(&mut w, 3, "x3").unwrap();
    assert_eq!(x3.epoch(), 1);
    w.crash(2);
    // S0 returns, syncs (1,3) by DIFF, acknowledges NEWLEADER and dies before its disk settles.
    w.crash_at = Some(CrashPoint::AfterNewLeaderAck);
    w.restart(1);
    run_for(&mut w, 200);
    assert!(!w.server(1).is_up(), "crash point not reached");
    w.crash(3);
    w.restart(1);
    w.restart(2);
    run_for(&mut w, 1_000);
    finish(&mut w)
}

#[test]
fn zk3911_newleader_acked_only_when_durable() {
    let failures = zk3911(None);
    assert!(failures.is_empty(), "{failures:#?}");
}

/// ZOOKEEPER-4785 / -4643: currentEpoch written before the sync transactions are durable; a
/// crash right after the epoch write leaves a server whose epoch promises history it lacks.
fn zk4785(bug: Option<&str>, point: CrashPoint) -> Vec<String> {
    let mut w = ensemble_with(4785, 3, bug, 500);
    create(&mut w, 3).unwrap();
    write(&mut w, 3, "y2").unwrap();
    w.crash(1);
    write(&mut w, 3, "y3").unwrap();
    write(&mut w, 3, "y4").unwrap();
    w.crash(2);
    w.crash_at = Some(point);
    w.restart(1);
    run_for(&mut w, 200);
    assert!(!w.server(1).is_up(), "crash point {point:?} not reached");
    w.crash(3);
    w.restart(1);
    w.restart(2);
    run_for(&mut w, 1_000);
    finish(&mut w)
}

#[test]
fn zk4785_crash_around_the_epoch_write_loses_nothing() {
    for point in [
        CrashPoint::BeforeCurrentEpoch,
        CrashPoint::AfterCurrentEpoch,
        CrashPoint::BeforeNewLeaderAck,
    ] {
        let failures = zk4785(None, point);
        assert!(failures.is_empty(), "{point:?}: {failures:#?}");
    }
}

/// ZOOKEEPER-3642: a SNAP arrives, the leader dies before NEWLEADER, the learner then syncs by
/// DIFF from the next leader. meerkat stages the SNAP in memory and drops it with the leader.
#[test]
fn zk3642_snap_interrupted_before_newleader() {
    let mut w = ensemble_with(3642, 3, None, 3);
    create(&mut w, 3).unwrap();
    w.crash(1);
    for i in 0..12 {
        write(&mut w, 3, &format!("z{i}")).unwrap();
    }
    w.crash_leader_after_snap = true;
    w.restart(1);
    run_for(&mut w, 50);
    assert!(
        !w.server(3).is_up(),
        "the leader should have died after the SNAP"
    );
    assert!(!w.crash_leader_after_snap, "no SNAP was sent");
    assert!(w.settle(3_000), "{}", w.describe());
    let l = leader(&w);
    write(&mut w, l, "after").unwrap();
    // Whole-ensemble power loss, then back: nothing acknowledged may be missing.
    for sid in w.all_sids() {
        w.crash(sid);
    }
    let failures = finish(&mut w);
    assert!(failures.is_empty(), "{failures:#?}");
}

/// ZOOKEEPER-2845: a deposed leader with an uncommitted tail rejoins; it must be truncated
/// (it advertises its last *logged* zxid), and a restart must not resurrect the tail.
fn zk2845(bug: Option<&str>) -> Vec<String> {
    let mut w = ensemble_with(2845, 3, bug, 500);
    create(&mut w, 3).unwrap();
    write(&mut w, 3, "w1").unwrap();
    for other in [1, 2] {
        w.net.block(3, other);
        w.net.block(other, 3);
    }
    // The old leader logs a proposal nobody else will see.
    assert_eq!(write(&mut w, 3, "t"), None);
    run_for(&mut w, 1_000);
    let l = leader_of(&w, &[1, 2]);
    write(&mut w, l, "w2").unwrap();
    write(&mut w, l, "w3").unwrap();
    w.net.heal();
    run_for(&mut w, 1_000);
    w.crash(3);
    w.restart(3);
    run_for(&mut w, 500);
    finish(&mut w)
}

fn leader_of(w: &sim::world::World, among: &[u64]) -> u64 {
    among
        .iter()
        .copied()
        .find(|s| w.server(*s).zab.as_ref().map(zab::Zab::role) == Some(zab::Role::Leading))
        .unwrap_or_else(|| panic!("no leader among {among:?}: {}", w.describe()))
}

#[test]
fn zk2845_deposed_leader_tail_is_truncated() {
    let failures = zk2845(None);
    assert!(failures.is_empty(), "{failures:#?}");
}

#[cfg(feature = "planted-bugs")]
mod planted {
    use super::*;

    #[test]
    fn zk3911_caught_with_newleader_before_durable() {
        let failures = zk3911(Some("newleader-before-durable"));
        eprintln!("caught: {failures:?}");
        assert!(!failures.is_empty(), "the planted bug went unnoticed");
    }

    #[test]
    fn zk4785_caught_with_newleader_before_durable() {
        let failures = zk4785(
            Some("newleader-before-durable"),
            CrashPoint::AfterCurrentEpoch,
        );
        eprintln!("caught: {failures:?}");
        assert!(!failures.is_empty(), "the planted bug went unnoticed");
    }

    #[test]
    fn zk2845_caught_with_skip_truncate() {
        let failures = zk2845(Some("skip-truncate"));
        eprintln!("caught: {failures:?}");
        assert!(!failures.is_empty(), "the planted bug went unnoticed");
    }
}
