//! Crash consistency (DESIGN.md §5, §7): a scripted workload runs on a file system that forgets
//! what was not synced; the "process" dies at every mutating file operation in turn; recovery
//! from what the disk kept must give exactly the state after some prefix of the workload that
//! includes every acknowledged transaction (nothing acknowledged lost, nothing half-applied).
//! Torn writes, bit flips in log and snapshot, and a lost segment are checked the same way.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use proto::txn::Txn;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use storage::faulty_fs::{FaultyFs, Tear};
use storage::{FileSystem, Persistence, StorageError};

/// What the "server" saw before it died.
struct Run {
    /// Highest zxid reported durable (acknowledged to clients).
    acked: i64,
    /// Transactions handed to the log.
    submitted: usize,
}

/// Plays the server: append a burst, wait until it is durable, apply, acknowledge. Stops at
/// the first failure (the simulated crash) or when the workload is done.
fn run(fs: &FaultyFs, txns: &[Txn], snap_count: u64, seed: u64) -> Run {
    let durable = Arc::new(AtomicI64::new(0));
    let failed = Arc::new(AtomicBool::new(false));
    let opened = {
        let (d, f) = (durable.clone(), failed.clone());
        Persistence::open(
            Arc::new(fs.clone()),
            options(snap_count),
            Box::new(move |z| d.store(z, Ordering::SeqCst)),
            Box::new(move |_| f.store(true, Ordering::SeqCst)),
        )
    };
    let Ok((mut persistence, recovered)) = opened else {
        return Run {
            acked: 0,
            submitted: 0,
        };
    };
    let mut tree = recovered.tree;
    let start = recovered.last_zxid as usize;
    durable.store(recovered.last_zxid, Ordering::SeqCst);
    let mut acked = recovered.last_zxid;
    let mut submitted = start;
    let mut burst_rng = seed | 1;
    while submitted < txns.len() && !failed.load(Ordering::SeqCst) {
        burst_rng = burst_rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let burst = 1 + (burst_rng >> 60) as usize % 6;
        let end = (submitted + burst).min(txns.len());
        for t in &txns[submitted..end] {
            if persistence.append(t).is_err() {
                break;
            }
            submitted += 1;
        }
        let target = submitted as i64;
        let deadline = Instant::now() + Duration::from_secs(10);
        while durable.load(Ordering::SeqCst) < target && !failed.load(Ordering::SeqCst) {
            assert!(
                Instant::now() < deadline,
                "log writer neither finished nor failed"
            );
            std::thread::sleep(Duration::from_micros(50));
        }
        let now_durable = durable.load(Ordering::SeqCst);
        for t in &txns[acked as usize..now_durable as usize] {
            tree.apply(t, &mut Vec::new());
            persistence.applied(&tree, t);
        }
        acked = now_durable;
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while persistence.snapshot_running() {
        assert!(Instant::now() < deadline, "snapshot thread did not end");
        std::thread::sleep(Duration::from_millis(1));
    }
    persistence.close();
    Run { acked, submitted }
}

/// Recovers from `image` and checks the state is the workload's prefix `n` with
/// `acked <= n <= submitted`. Returns n.
fn check_recovery(
    image: &FaultyFs,
    txns: &[Txn],
    acked: i64,
    submitted: usize,
    what: &str,
) -> usize {
    let recovered = storage::recovery::recover(image, &layout())
        .unwrap_or_else(|e| panic!("{what}: recovery failed: {e}"));
    let n = recovered.last_zxid as usize;
    assert!(
        acked as usize <= n && n <= submitted,
        "{what}: recovered to zxid {n}, but {acked} were acknowledged and {submitted} submitted"
    );
    assert_eq!(recovered.tree.last_processed_zxid(), n as i64, "{what}");
    assert!(
        dump(&recovered.tree) == dump(&reference(txns, n)),
        "{what}: state differs from the prefix of {n} transactions"
    );
    n
}

#[test]
fn a_crash_at_every_write_and_fsync_loses_nothing_acknowledged() {
    let txns = workload(150, 42);
    let clean = FaultyFs::new();
    let full = run(&clean, &txns, 20, 1);
    assert_eq!(full.acked as usize, txns.len());
    check_recovery(
        &clean.crash_image(Tear::None),
        &txns,
        full.acked,
        full.submitted,
        "no crash",
    );
    let total_ops = clean.ops();
    assert!(
        total_ops > 100,
        "the workload should exercise many write points, got {total_ops}"
    );
    let mut prefixes = std::collections::BTreeSet::new();
    for k in 0..total_ops {
        let fs = FaultyFs::new();
        fs.crash_after(k);
        let died = run(&fs, &txns, 20, k);
        for tear in [Tear::None, Tear::Prefix(k * 7 + 3)] {
            let image = fs.crash_image(tear);
            let what = format!("crash after op {k}, {tear:?}");
            let n = check_recovery(&image, &txns, died.acked, died.submitted, &what);
            prefixes.insert(n);
            // The recovered server goes on: it writes the rest, and a second recovery sees all.
            if k % 2 == 0 {
                let resumed = run(&image, &txns, 20, k + 1);
                assert_eq!(resumed.acked as usize, txns.len(), "{what}: resumed run");
                check_recovery(
                    &image.crash_image(Tear::None),
                    &txns,
                    resumed.acked,
                    txns.len(),
                    &format!("{what}, resumed"),
                );
            }
        }
    }
    assert!(
        prefixes.len() > 20,
        "crash points should land all through the workload: {prefixes:?}"
    );
}

fn segments(fs: &FaultyFs) -> Vec<std::path::PathBuf> {
    let dir = layout().wal_dir;
    fs.list(&dir)
        .expect("list")
        .into_iter()
        .map(|n| dir.join(n))
        .collect()
}

#[test]
fn a_damaged_record_before_the_tail_stops_recovery_with_file_and_offset() {
    let txns = workload(60, 7);
    let fs = FaultyFs::new();
    run(&fs, &txns, 1_000_000, 1);
    let first = &segments(&fs)[0];
    let bytes = fs.contents(first).expect("segment");
    let scan = storage::wal::scan(&bytes).expect("header");
    let victim = scan.records[scan.records.len() / 2];
    fs.flip_bit(first, victim.payload.0 + 3, 2).expect("flip");
    let err = storage::recovery::recover(&fs, &layout())
        .err()
        .expect("must refuse");
    match &err {
        StorageError::Corrupt { path, offset, .. } => {
            assert_eq!(path, first);
            assert_eq!(*offset, victim.offset as u64);
        }
        other => panic!("expected Corrupt, got {other}"),
    }
    let message = err.to_string();
    assert!(
        message.contains(&first.display().to_string()) && message.contains("meerkat data truncate"),
        "{message}"
    );
    // The documented way on: cut the log there; recovery then gives the prefix before it.
    storage::inspect::truncate_log(&fs, &layout(), first, victim.offset as u64).expect("truncate");
    let recovered = storage::recovery::recover(&fs, &layout()).expect("recovers after the cut");
    assert_eq!(recovered.last_zxid, victim.zxid - 1);
    assert!(dump(&recovered.tree) == dump(&reference(&txns, victim.zxid as usize - 1)));
}

#[test]
fn a_damaged_last_record_is_cut_like_a_torn_one() {
    // A flipped bit in the very last record cannot be told from a torn write: recovery cuts
    // it, as ZooKeeper does. (Documented: in an ensemble the replicas still hold it.)
    let txns = workload(40, 9);
    let fs = FaultyFs::new();
    run(&fs, &txns, 1_000_000, 1);
    let last = segments(&fs).pop().expect("a segment");
    let bytes = fs.contents(&last).expect("segment");
    let scan = storage::wal::scan(&bytes).expect("header");
    let victim = *scan.records.last().expect("records");
    fs.flip_bit(&last, victim.payload.1 - 1, 0).expect("flip");
    let recovered = storage::recovery::recover(&fs, &layout()).expect("recovers");
    assert_eq!(recovered.last_zxid, 39);
    assert!(recovered.truncated_tail.is_some());
}

#[test]
fn a_damaged_snapshot_falls_back_to_an_older_one_and_the_log() {
    let txns = workload(200, 11);
    let fs = FaultyFs::new();
    let done = run(&fs, &txns, 20, 1);
    let snap_dir = layout().snap_dir;
    let mut snaps = fs.list(&snap_dir).expect("list");
    snaps.sort();
    assert!(
        snaps.len() >= 2,
        "expected several snapshots, got {snaps:?}"
    );
    let newest = snap_dir.join(snaps.last().expect("newest"));
    let len = fs.contents(&newest).expect("snapshot").len();
    fs.flip_bit(&newest, len / 2, 5).expect("flip");
    let recovered = storage::recovery::recover(&fs, &layout()).expect("recovers");
    assert_eq!(recovered.skipped_snapshots.len(), 1);
    assert_eq!(recovered.skipped_snapshots[0].0, newest);
    assert_eq!(recovered.last_zxid, done.acked);
    assert!(dump(&recovered.tree) == dump(&reference(&txns, txns.len())));
    // inspect reports the damage.
    let report = storage::inspect::inspect(&fs, &layout()).expect("inspect");
    assert!(!report.is_healthy());
    assert!(report.render().contains("DAMAGED"));
}

#[test]
fn a_missing_log_segment_is_a_gap_not_silent_loss() {
    let txns = workload(120, 13);
    let fs = FaultyFs::new();
    run(&fs, &txns, 1_000_000, 1);
    let segs = segments(&fs);
    assert!(segs.len() >= 3, "need several segments, got {}", segs.len());
    fs.remove(&segs[1]).expect("remove");
    match storage::recovery::recover(&fs, &layout()) {
        Err(StorageError::Gap { path, .. }) => assert_eq!(path, segs[2]),
        Err(other) => panic!("expected a gap, got {other}"),
        Ok(r) => panic!("recovered to {} despite a missing segment", r.last_zxid),
    }
}

#[test]
fn purge_keeps_what_recovery_from_the_oldest_kept_snapshot_needs() {
    let txns = workload(300, 17);
    let fs = FaultyFs::new();
    run(&fs, &txns, 16, 1);
    let removed = storage::purge::purge(&fs, &layout(), 3).expect("purge");
    assert!(
        !removed.is_empty(),
        "something should be old enough to purge"
    );
    assert_eq!(fs.list(&layout().snap_dir).expect("list").len(), 3);
    // Every kept snapshot can still be recovered from: damage all but the oldest kept one.
    let mut snaps = fs.list(&layout().snap_dir).expect("list");
    snaps.sort();
    for name in &snaps[1..] {
        let p = layout().snap_dir.join(name);
        fs.truncate(&p, 100).expect("truncate");
    }
    let recovered =
        storage::recovery::recover(&fs, &layout()).expect("recovers from the oldest kept snapshot");
    assert_eq!(recovered.last_zxid, txns.len() as i64);
    assert!(dump(&recovered.tree) == dump(&reference(&txns, txns.len())));
}
