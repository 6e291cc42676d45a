//! What Zab asks of storage in an ensemble (ZAB.md, DESIGN.md §4): recovery that hands the
//! log to Zab instead of applying it, TRUNC (drop records after a zxid), SNAP (replace the
//! state and the whole log with a leader's snapshot), and snapshot bytes to send. Each is
//! checked across a restart, and TRUNC at every crash point.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use proto::txn::Txn;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use storage::faulty_fs::{FaultyFs, Tear};
use storage::recovery::{recover_with, Replay};
use storage::{Persistence, PersistenceOptions};

fn open(fs: &FaultyFs, replay: Replay) -> (Persistence, storage::Recovered, Arc<AtomicI64>) {
    let durable = Arc::new(AtomicI64::new(-1));
    let d = durable.clone();
    let options = PersistenceOptions {
        replay,
        ..options(1_000_000)
    };
    let (p, r) = Persistence::open(
        Arc::new(fs.clone()),
        options,
        Box::new(move |z| d.store(z, Ordering::SeqCst)),
        Box::new(|_| {}),
    )
    .expect("open");
    (p, r, durable)
}

/// Appends and waits until the last is durable.
fn append_all(p: &mut Persistence, durable: &AtomicI64, txns: &[Txn]) {
    for t in txns {
        p.append(t).expect("append");
    }
    let last = txns.last().map_or(0, |t| t.header.zxid);
    let deadline = Instant::now() + Duration::from_secs(10);
    while durable.load(Ordering::SeqCst) < last {
        assert!(Instant::now() < deadline, "not durable in time");
        std::thread::sleep(Duration::from_micros(100));
    }
}

fn zxids(txns: &[Txn]) -> Vec<i64> {
    txns.iter().map(|t| t.header.zxid).collect()
}

#[test]
fn collect_mode_hands_the_log_to_zab_unapplied() {
    let txns = workload(50, 3);
    let fs = FaultyFs::new();
    let (mut p, _, durable) = open(&fs, Replay::Collect);
    append_all(&mut p, &durable, &txns);
    p.close();
    let r = recover_with(&fs, &layout(), Replay::Collect).expect("recover");
    assert_eq!(r.tree.last_processed_zxid(), 0, "nothing applied");
    assert_eq!(r.log, txns);
    assert_eq!(r.last_zxid, 50);
}

#[test]
fn truncate_drops_what_follows_and_new_records_chain_on() {
    let txns = workload(120, 5);
    let fs = FaultyFs::new();
    let (mut p, _, durable) = open(&fs, Replay::Collect);
    append_all(&mut p, &durable, &txns);
    p.truncate_log_after(70).expect("truncate");
    // A different history after 70 (as a new leader would send).
    let other = workload(100, 99);
    let mut after: Vec<Txn> = other[70..100].to_vec();
    for (i, t) in after.iter_mut().enumerate() {
        t.header.zxid = 71 + i as i64;
    }
    append_all(&mut p, &durable, &after);
    p.close();
    let r = recover_with(&fs, &layout(), Replay::Collect).expect("recover");
    assert_eq!(zxids(&r.log), (1..=100).collect::<Vec<_>>());
    assert_eq!(&r.log[..70], &txns[..70]);
    assert_eq!(&r.log[70..], &after[..]);
}

#[test]
fn a_crash_anywhere_in_truncate_keeps_every_record_up_to_the_cut() {
    let txns = workload(120, 7);
    let base = FaultyFs::new();
    let (mut p, _, durable) = open(&base, Replay::Collect);
    append_all(&mut p, &durable, &txns);
    p.close();
    let image = base.crash_image(Tear::None);
    let mut points = 0;
    for k in 0..64 {
        let fs = image.crash_image(Tear::None);
        let (mut p, _, _) = open(&fs, Replay::Collect);
        let start = fs.ops();
        fs.crash_after(start + k);
        let finished = p.truncate_log_after(40).is_ok();
        drop(p);
        for tear in [Tear::None, Tear::Prefix(k + 1)] {
            let r = recover_with(&fs.crash_image(tear), &layout(), Replay::Collect)
                .expect("recoverable");
            let n = r.log.len();
            assert!(
                n >= 40,
                "crash at {k}: records up to the cut were lost ({n} left)"
            );
            assert_eq!(&r.log[..], &txns[..n], "crash at {k}: not a prefix");
            if finished {
                assert_eq!(
                    n, 40,
                    "crash at {k}: truncate returned but {n} records remain"
                );
            }
        }
        points += 1;
        if finished {
            break;
        }
    }
    assert!(points > 3, "truncate should have several crash points");
}

#[test]
fn a_leaders_snapshot_replaces_state_and_log() {
    let txns = workload(150, 11);
    // The leader's state at zxid 100, as bytes.
    let leader_tree = reference(&txns, 100);
    let bytes = Persistence::snapshot_bytes(&leader_tree);
    let fs = FaultyFs::new();
    let (mut p, _, durable) = open(&fs, Replay::Collect);
    // This learner had a different, longer history.
    append_all(&mut p, &durable, &workload(130, 12));
    // Damaged bytes are refused and change nothing.
    let mut damaged = bytes.clone();
    let mid = damaged.len() / 2;
    damaged[mid] ^= 0x10;
    assert!(p.replace_with_snapshot(&damaged, 150).is_err());
    let tree = p.replace_with_snapshot(&bytes, 150).expect("install");
    assert!(dump(&tree) == dump(&leader_tree));
    append_all(&mut p, &durable, &txns[100..150]);
    assert!(
        p.replacement_pending(),
        "the stream is durable, but not yet reported"
    );
    p.log_durable(150).expect("commit");
    assert!(!p.replacement_pending());
    p.close();
    let r = recover_with(&fs, &layout(), Replay::ApplyAll).expect("recover");
    assert_eq!(r.last_zxid, 150);
    assert!(dump(&r.tree) == dump(&reference(&txns, 150)));
}

/// Found by the cluster simulator (seed 1077994 of the 100,000-seed soak): a leader may sync a
/// learner with a snapshot older than one the learner took itself, then stream what follows.
/// The learner's own newer snapshot belongs to the log generation the install replaced; had it
/// stayed, recovery would load it (the newest) and find the new generation's log continuing a
/// snapshot it did not load, and refuse to start.
#[test]
fn a_leaders_snapshot_older_than_the_learners_own_still_recovers() {
    let txns = workload(150, 31);
    let fs = FaultyFs::new();
    let (mut p, _, durable) = open(&fs, Replay::Collect);
    append_all(&mut p, &durable, &txns[..120]);
    // The learner's busy snapshot of the same history at 120 (generation 0).
    let own = reference(&txns, 120);
    let stamp = storage::snapshot_file::Stamp {
        created_ms: 1,
        generation: 0,
        label: 0,
    };
    storage::snapshot_file::write(&fs, &layout(), &own.freeze(), stamp).expect("own snapshot");
    // The leader sends its snapshot at 100 and then streams 101..150.
    let bytes = Persistence::snapshot_bytes(&reference(&txns, 100));
    p.replace_with_snapshot(&bytes, 150).expect("install");
    append_all(&mut p, &durable, &txns[100..150]);
    p.log_durable(150).expect("commit");
    p.close();
    let r = recover_with(&fs.crash_image(Tear::None), &layout(), Replay::ApplyAll)
        .expect("a learner synced by an older snapshot recovers");
    assert_eq!(r.last_zxid, 150);
    assert!(dump(&r.tree) == dump(&reference(&txns, 150)));
}

#[test]
fn epochs_are_kept_across_restarts() {
    let fs = FaultyFs::new();
    let (p, _, _) = open(&fs, Replay::Collect);
    assert_eq!(
        p.epochs().expect("epochs"),
        storage::epoch::Epochs::default()
    );
    p.save_accepted_epoch(7).expect("save");
    p.save_current_epoch(6).expect("save");
    p.close();
    let (p, _, _) = open(&fs.crash_image(Tear::Prefix(3)), Replay::Collect);
    assert_eq!(
        p.epochs().expect("epochs"),
        storage::epoch::Epochs {
            accepted: 7,
            current: 6
        }
    );
}

#[test]
fn a_crash_anywhere_in_a_snapshot_install_gives_the_old_state_or_the_new_never_a_mix() {
    let txns = workload(150, 21);
    let leader_tree = reference(&txns, 100);
    let bytes = Persistence::snapshot_bytes(&leader_tree);
    // A learner whose own, divergent log runs past the leader's snapshot.
    let old_history = workload(130, 22);
    let base = FaultyFs::new();
    let (mut p, _, durable) = open(&base, Replay::Collect);
    append_all(&mut p, &durable, &old_history);
    p.close();
    let image = base.crash_image(Tear::None);
    let mut installed_at = None;
    for k in 0..64 {
        let fs = image.crash_image(Tear::None);
        let (mut p, _, _) = open(&fs, Replay::Collect);
        let start = fs.ops();
        fs.crash_after(start + k);
        // Nothing streamed after the snapshot: it stands when the call returns.
        let finished = p.replace_with_snapshot(&bytes, 100).is_ok();
        drop(p);
        for tear in [Tear::None, Tear::Prefix(k + 3)] {
            let r = recover_with(&fs.crash_image(tear), &layout(), Replay::Collect)
                .expect("recoverable");
            match &r.snapshot {
                Some((_, 100)) => {
                    assert!(
                        dump(&r.tree) == dump(&leader_tree),
                        "crash at {k}: wrong new state"
                    );
                    assert!(r.log.is_empty(), "crash at {k}: {} records of the replaced history replayed onto the leader's snapshot", r.log.len());
                }
                None => {
                    assert!(
                        !finished,
                        "crash at {k}: the install returned, but the old state came back"
                    );
                    assert_eq!(
                        r.log, old_history,
                        "crash at {k}: the old state lost records"
                    );
                }
                Some(other) => panic!("crash at {k}: unexpected snapshot {other:?}"),
            }
        }
        if finished {
            installed_at = Some(k);
            break;
        }
    }
    assert!(
        installed_at.is_some_and(|k| k > 3),
        "the install should have several crash points: {installed_at:?}"
    );
}

#[test]
fn segments_of_a_newer_generation_without_their_snapshot_stop_recovery() {
    let txns = workload(150, 31);
    let fs = FaultyFs::new();
    let (mut p, _, durable) = open(&fs, Replay::Collect);
    append_all(&mut p, &durable, &txns[..50]);
    p.replace_with_snapshot(&Persistence::snapshot_bytes(&reference(&txns, 100)), 120)
        .expect("install");
    append_all(&mut p, &durable, &txns[100..120]);
    p.log_durable(120).expect("commit");
    p.close();
    let snap = layout().snap_path(100);
    fs.truncate(&snap, 80).expect("damage the snapshot");
    match recover_with(&fs, &layout(), Replay::Collect) {
        Err(storage::StorageError::Corrupt { detail, .. }) => {
            assert!(detail.contains("generation"), "{detail}")
        }
        Err(other) => panic!("expected a generation error, got {other}"),
        Ok(r) => panic!(
            "recovered to {} from a log whose snapshot is gone",
            r.last_zxid
        ),
    }
}

/// A learner's log may hold proposals it acknowledged beyond the leader's snapshot; the leader
/// streams them again after it. Until that stream is durable, a crash must bring back the old
/// log, never the snapshot alone (found by the cluster simulator: `sim --cluster
/// --force-snapshot-sync --seed 106` lost acknowledged writes that way).
#[test]
fn a_crash_before_the_stream_is_durable_brings_back_the_learners_own_log() {
    let txns = workload(150, 41);
    let leader_tree = reference(&txns, 100);
    let bytes = Persistence::snapshot_bytes(&leader_tree);
    let base = FaultyFs::new();
    let (mut p, _, durable) = open(&base, Replay::Collect);
    // The learner holds the same history up to 130 (it acknowledged it), with a snapshot of
    // its own at 120 that is newer than the leader's.
    append_all(&mut p, &durable, &txns[..130]);
    let stamp = storage::snapshot_file::Stamp {
        created_ms: 1,
        generation: 0,
        label: 0,
    };
    storage::snapshot_file::write(&base, &layout(), &reference(&txns, 120).freeze(), stamp)
        .expect("own snapshot");
    p.close();
    let image = base.crash_image(Tear::None);
    let mut committed_at = None;
    for k in 0..200 {
        let fs = image.crash_image(Tear::None);
        let (mut p, _, durable) = open(&fs, Replay::Collect);
        let start = fs.ops();
        fs.crash_after(start + k);
        let mut committed = false;
        if p.replace_with_snapshot(&bytes, 150).is_ok() {
            let mut appended = true;
            for t in &txns[100..150] {
                appended &= p.append(t).is_ok();
            }
            let deadline = Instant::now() + Duration::from_secs(2);
            while appended && durable.load(Ordering::SeqCst) < 150 && !p.has_failed() {
                assert!(
                    Instant::now() < deadline,
                    "crash at {k}: not durable in time"
                );
                std::thread::sleep(Duration::from_micros(100));
            }
            if durable.load(Ordering::SeqCst) >= 150 {
                committed = p.log_durable(150).is_ok();
            }
        }
        drop(p);
        for tear in [Tear::None, Tear::Prefix(k + 5)] {
            let r = recover_with(&fs.crash_image(tear), &layout(), Replay::ApplyAll)
                .expect("recoverable");
            // Either state holds every transaction up to 130 that the learner acknowledged.
            assert!(
                r.last_zxid >= 130,
                "crash at {k}: recovered only to {} (acknowledged writes lost)",
                r.last_zxid
            );
            assert!(
                dump(&r.tree) == dump(&reference(&txns, r.last_zxid as usize)),
                "crash at {k}: the state at {} is not the history's",
                r.last_zxid
            );
            if committed {
                assert_eq!(
                    r.last_zxid, 150,
                    "crash at {k}: committed, but not recovered"
                );
            }
        }
        if committed {
            committed_at = Some(k);
            break;
        }
    }
    assert!(
        committed_at.is_some_and(|k| k > 10),
        "the sync should have many crash points: {committed_at:?}"
    );
}

/// A second SNAP before the first one's stream was durable (the sync was aborted and a new one
/// began): the first never stood, so a crash still brings back the state from before both.
#[test]
fn a_second_snapshot_before_the_first_commits_replaces_it_not_the_old_log() {
    let txns = workload(160, 43);
    let fs = FaultyFs::new();
    let (mut p, _, durable) = open(&fs, Replay::Collect);
    append_all(&mut p, &durable, &txns[..130]);
    p.replace_with_snapshot(&Persistence::snapshot_bytes(&reference(&txns, 100)), 150)
        .expect("first install");
    append_all(&mut p, &durable, &txns[100..110]);
    p.replace_with_snapshot(&Persistence::snapshot_bytes(&reference(&txns, 90)), 160)
        .expect("second install");
    append_all(&mut p, &durable, &txns[90..140]);
    let before_commit = fs.crash_image(Tear::None);
    let r = recover_with(&before_commit, &layout(), Replay::ApplyAll).expect("recover");
    assert_eq!(r.last_zxid, 130, "the learner's own log comes back whole");
    assert!(dump(&r.tree) == dump(&reference(&txns, 130)));
    append_all(&mut p, &durable, &txns[140..160]);
    p.log_durable(160).expect("commit");
    p.close();
    let r =
        recover_with(&fs.crash_image(Tear::None), &layout(), Replay::ApplyAll).expect("recover");
    assert_eq!(r.snapshot.as_ref().map(|(_, z)| *z), Some(90));
    assert_eq!(r.last_zxid, 160);
    assert!(dump(&r.tree) == dump(&reference(&txns, 160)));
}

/// TRUNC while a snapshot waits for its stream (a new leader's sync after the first aborted):
/// the cut makes the log durable up to its point, which is all the new leader agrees with, so
/// the snapshot commits there.
#[test]
fn a_truncate_after_a_pending_snapshot_commits_it() {
    let txns = workload(150, 47);
    let fs = FaultyFs::new();
    let (mut p, _, durable) = open(&fs, Replay::Collect);
    append_all(&mut p, &durable, &txns[..130]);
    p.replace_with_snapshot(&Persistence::snapshot_bytes(&reference(&txns, 100)), 150)
        .expect("install");
    for t in &txns[100..140] {
        p.append(t).expect("append");
    }
    p.truncate_log_after(120).expect("truncate");
    assert!(!p.replacement_pending());
    p.close();
    let r =
        recover_with(&fs.crash_image(Tear::None), &layout(), Replay::ApplyAll).expect("recover");
    assert_eq!(r.snapshot.as_ref().map(|(_, z)| *z), Some(100));
    assert_eq!(r.last_zxid, 120);
    assert!(dump(&r.tree) == dump(&reference(&txns, 120)));
}
