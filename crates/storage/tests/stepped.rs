//! Persistence stepped by its host (`Execution::Stepped`), as the deterministic simulator runs
//! it: nothing is written before the host says so, the same steps give the same disk byte for
//! byte, and a crash between steps leaves exactly what the steps before it made durable.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{options, workload};
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use storage::faulty_fs::{FaultyFs, Tear};
use storage::{Execution, FileSystem, Persistence, PersistenceOptions, Replay};
use tree::DataTree;

fn stepped(base: PersistenceOptions) -> PersistenceOptions {
    PersistenceOptions {
        execution: Execution::Stepped { seed: 42 },
        ..base
    }
}

fn open(
    fs: &FaultyFs,
    options: PersistenceOptions,
) -> (Persistence, storage::Recovered, Arc<AtomicI64>) {
    let durable = Arc::new(AtomicI64::new(-1));
    let d = durable.clone();
    let (p, r) = Persistence::open(
        Arc::new(fs.clone()),
        options,
        Box::new(move |z| d.store(z, Ordering::SeqCst)),
        Box::new(|_| {}),
    )
    .expect("open");
    (p, r, durable)
}

fn apply(tree: &mut DataTree, txn: &proto::txn::Txn) {
    tree.apply(txn, &mut Vec::new());
}

#[test]
fn the_log_is_durable_only_after_the_host_flushes_it() {
    let fs = FaultyFs::new();
    let (mut p, _, durable) = open(&fs, stepped(options(1_000_000)));
    let txns = workload(30, 7);
    for t in &txns[..20] {
        p.append(t).unwrap();
    }
    assert!(p.log_queued());
    assert_eq!(
        durable.load(Ordering::SeqCst),
        -1,
        "nothing reported before the flush"
    );
    let lost = fs.crash_image(Tear::None);
    p.flush_log().unwrap();
    assert!(!p.log_queued());
    assert_eq!(durable.load(Ordering::SeqCst), txns[19].header.zxid);
    for t in &txns[20..] {
        p.append(t).unwrap();
    }
    let kept = fs.crash_image(Tear::None);
    drop(p);

    let replay = |image: &FaultyFs| {
        let options = PersistenceOptions {
            replay: Replay::Collect,
            ..stepped(options(1_000_000))
        };
        open(image, options).1.log.len()
    };
    assert_eq!(replay(&lost), 0, "a crash before the flush keeps nothing");
    assert_eq!(
        replay(&kept),
        20,
        "the flushed group survives, the queued rest does not"
    );
}

#[test]
fn a_snapshot_is_written_when_the_host_runs_it() {
    let fs = FaultyFs::new();
    let (mut p, _, _) = open(&fs, stepped(options(4)));
    let mut tree = DataTree::new();
    for t in &workload(8, 3) {
        p.append(t).unwrap();
        apply(&mut tree, t);
        p.applied(&tree, t);
    }
    p.flush_log().unwrap();
    assert!(
        p.snapshot_running(),
        "snapCount reached: a snapshot started"
    );
    assert_eq!(p.newest_snapshot_zxid(), -1, "but nothing is written yet");
    assert!(p.run_snapshot(25));
    assert!(!p.snapshot_running());
    let zxid = p.newest_snapshot_zxid();
    assert!(zxid > 0);
    assert!(
        fs.len(&common::layout().snap_path(zxid)).is_ok(),
        "the file is in place"
    );
    assert_eq!(p.snapshot_stats.last_millis.load(Ordering::Relaxed), 25);
}

#[test]
fn a_busy_snapshot_rests_by_the_host_clock() {
    let fs = FaultyFs::new();
    let options = PersistenceOptions {
        diskless: true,
        busy_snapshot_rest_percent: 100,
        ..stepped(options(1_000_000))
    };
    let (mut p, _, _) = open(&fs, options);
    let txns = workload(3, 5);
    let mut tree = DataTree::new();
    p.append(&txns[0]).unwrap();
    apply(&mut tree, &txns[0]);
    p.applied(&tree, &txns[0]);
    assert!(
        p.snapshot_running(),
        "a busy snapshot starts at the first write"
    );
    p.set_clock(100);
    assert!(
        p.run_snapshot(40),
        "it took 40 ms: the next waits until 140"
    );
    p.append(&txns[1]).unwrap();
    apply(&mut tree, &txns[1]);
    p.applied(&tree, &txns[1]);
    p.set_clock(139);
    p.idle(&tree);
    assert!(!p.snapshot_running(), "still resting at 139");
    p.set_clock(140);
    p.idle(&tree);
    assert!(
        p.snapshot_running(),
        "rested at 140: the write that came meanwhile gets its snapshot"
    );
}

#[test]
fn a_delta_batch_rests_at_least_the_configured_floor() {
    for floor in [5, 40] {
        let fs = FaultyFs::new();
        let options = PersistenceOptions {
            diskless: true,
            busy_snapshot_rest_percent: 100,
            delta_rest_min_ms: floor,
            ..stepped(options(1_000_000))
        };
        let (mut p, _, _) = open(&fs, options);
        let txns = workload(4, 9);
        let mut tree = DataTree::new();
        let write = |p: &mut storage::Persistence, tree: &mut DataTree, i: usize| {
            p.append(&txns[i]).unwrap();
            apply(tree, &txns[i]);
            p.applied(tree, &txns[i]);
        };
        write(&mut p, &mut tree, 0);
        assert!(p.run_snapshot(2), "the first busy snapshot (full) ran");
        p.set_clock(10);
        write(&mut p, &mut tree, 1);
        assert!(
            p.snapshot_running(),
            "rested 2 ms: the next write starts a delta"
        );
        p.set_clock(100);
        assert!(p.run_snapshot(1), "a delta batch that took 1 ms");
        write(&mut p, &mut tree, 2);
        p.set_clock(100 + floor - 1);
        p.idle(&tree);
        assert!(
            !p.snapshot_running(),
            "a 1 ms batch rests the floor of {floor} ms, not 1 ms"
        );
        p.set_clock(100 + floor);
        p.idle(&tree);
        assert!(
            p.snapshot_running(),
            "rested {floor} ms: the next batch starts"
        );
    }
}

/// Every file under the layout, with its bytes.
fn disk(fs: &FaultyFs) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let layout = common::layout();
    for dir in [&layout.snap_dir, &layout.wal_dir] {
        let mut names = fs.list(dir).unwrap_or_default();
        names.sort();
        for name in names {
            let path = dir.join(name);
            let bytes = fs.read_all(&path).unwrap();
            files.push((path, bytes));
        }
    }
    files
}

#[test]
fn the_same_steps_write_the_same_disk() {
    let run = || {
        let fs = FaultyFs::new();
        let (mut p, _, _) = open(&fs, stepped(options(10)));
        let mut tree = DataTree::new();
        for (i, t) in workload(60, 11).iter().enumerate() {
            p.set_clock(i as u64 * 3);
            p.append(t).unwrap();
            apply(&mut tree, t);
            p.applied(&tree, t);
            if i % 4 == 3 {
                p.flush_log().unwrap();
            }
            if i % 9 == 8 {
                p.run_snapshot(i as u64);
            }
        }
        p.flush_log().unwrap();
        p.run_snapshot(1);
        drop(p);
        disk(&fs)
    };
    let first = run();
    assert!(first.len() >= 3, "snapshots and log segments: {first:?}");
    assert_eq!(first, run());
}

#[test]
fn a_cut_of_the_log_is_reported_before_anything_is_appended_again() {
    let fs = FaultyFs::new();
    let (mut p, _, _) = open(&fs, stepped(options(1_000_000)));
    let cuts = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = cuts.clone();
    p.on_log_cut(Box::new(move |zxid| seen.lock().unwrap().push(zxid)));
    let txns = workload(12, 9);
    let mut tree = DataTree::new();
    for t in &txns {
        p.append(t).unwrap();
        apply(&mut tree, t);
    }
    p.flush_log().unwrap();
    let at = txns[7].header.zxid;
    p.truncate_log_after(at).unwrap();
    assert_eq!(*cuts.lock().unwrap(), vec![at], "TRUNC");
    let image = Persistence::snapshot_bytes(&tree);
    p.replace_with_snapshot(&image, tree.last_processed_zxid())
        .unwrap();
    assert_eq!(
        *cuts.lock().unwrap(),
        vec![at, tree.last_processed_zxid()],
        "SNAP"
    );
}
