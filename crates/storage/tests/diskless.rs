//! The diskless mode's storage (DESIGN.md §5, thesis ch. 4): no transaction log ever, busy
//! snapshots purged to `NumberToRetain`, and failure checkpoints that survive a crash at any
//! point whole or not at all, and are gone before anything new is acknowledged.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use storage::faulty_fs::{FaultyFs, Tear};
use storage::{FileSystem, Persistence, PersistenceOptions};
use tree::DataTree;

fn diskless_options() -> PersistenceOptions {
    PersistenceOptions {
        diskless: true,
        snap_retain_count: 2,
        ..options(1_000_000)
    }
}

fn open(fs: &FaultyFs) -> (Persistence, storage::Recovered, Arc<AtomicI64>) {
    let durable = Arc::new(AtomicI64::new(-1));
    let d = durable.clone();
    let (p, r) = Persistence::open(
        Arc::new(fs.clone()),
        diskless_options(),
        Box::new(move |z| d.store(z, Ordering::SeqCst)),
        Box::new(|_| {}),
    )
    .expect("open");
    (p, r, durable)
}

fn wait_for_snapshots(p: &Persistence) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while p.snapshot_running() {
        assert!(Instant::now() < deadline, "snapshot thread stuck");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// What a diskless server does with each transaction: hand it over (durable at once), apply
/// it, and let persistence start a busy snapshot.
fn write(p: &mut Persistence, tree: &mut DataTree, txns: &[proto::txn::Txn]) {
    for txn in txns {
        p.append(txn).unwrap();
        tree.apply(txn, &mut Vec::new());
        p.applied(tree, txn);
    }
}

/// Lets idle snapshots run until one covers `zxid`.
fn snapshot_until(p: &mut Persistence, tree: &DataTree, zxid: i64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while p.snapshot_stats.last_zxid.load(Ordering::SeqCst) != zxid {
        assert!(Instant::now() < deadline, "no snapshot reached {zxid:#x}");
        p.idle(tree);
        std::thread::sleep(Duration::from_millis(1));
    }
    wait_for_snapshots(p);
}

/// Writes `txns` in chunks of `chunk`, letting busy snapshots catch up after each; returns
/// every full snapshot file seen meanwhile.
fn write_in_chunks(
    fs: &FaultyFs,
    p: &mut Persistence,
    tree: &mut DataTree,
    txns: &[proto::txn::Txn],
    chunk: usize,
) -> std::collections::BTreeSet<String> {
    let mut fulls = std::collections::BTreeSet::new();
    for chunk in txns.chunks(chunk) {
        write(p, tree, chunk);
        snapshot_until(p, tree, chunk[chunk.len() - 1].header.zxid);
        let files = fs.list(&layout().snap_dir).unwrap();
        fulls.extend(files.into_iter().filter(|n| n.starts_with("snap-")));
    }
    fulls
}

#[test]
fn writes_leave_snapshots_and_epoch_files_only_never_a_log() {
    let fs = FaultyFs::new();
    let (mut p, recovered, durable) = open(&fs);
    let mut tree = recovered.tree;
    p.save_accepted_epoch(1).unwrap();
    p.save_current_epoch(1).unwrap();
    for txn in workload(300, 5) {
        p.append(&txn).unwrap();
        // Durable as soon as handed over: there is no log to wait for.
        assert_eq!(durable.load(Ordering::SeqCst), txn.header.zxid);
        tree.apply(&txn, &mut Vec::new());
        p.applied(&tree, &txn);
    }
    wait_for_snapshots(&p);
    let layout = layout();
    let logs = fs.list(&layout.wal_dir).unwrap_or_default();
    assert!(logs.is_empty(), "a diskless server wrote a log: {logs:?}");
    let files = fs.list(&layout.snap_dir).unwrap();
    let snaps = files.iter().filter(|n| n.starts_with("snap-")).count();
    assert!(snaps >= 1, "busy snapshots were taken: {files:?}");
    assert!(
        snaps <= 3,
        "purged down to NumberToRetain (+1 in flight): {files:?}"
    );
    assert!(
        files.iter().all(|n| n.starts_with("snap-")
            || n.starts_with("delta-")
            || n == "acceptedEpoch"
            || n == "currentEpoch"),
        "{files:?}"
    );
}

/// Busy snapshots after the first are deltas of what was applied since (they cost what
/// changed, not the tree); recovery replays them onto the full snapshot, and once they outgrow
/// it a full snapshot is taken again and the covered deltas are purged.
#[test]
fn busy_snapshots_are_deltas_that_recovery_replays_until_compacted() {
    let fs = FaultyFs::new();
    let (mut p, recovered, _) = open(&fs);
    let mut tree = recovered.tree;
    let txns = workload(400, 17);
    let fulls = write_in_chunks(&fs, &mut p, &mut tree, &txns, 20);
    let busy = p.snapshot_stats.taken.load(Ordering::SeqCst);
    assert_eq!(fulls.len(), 1, "one full snapshot, then deltas: {fulls:?}");
    assert!(busy >= 20, "a busy snapshot per chunk at least: {busy}");
    let files = fs.list(&layout().snap_dir).unwrap();
    assert!(
        files.iter().any(|n| n.starts_with("delta-")),
        "a delta file: {files:?}"
    );
    p.close();
    let (_, recovered, _) = open(&fs.crash_image(storage::faulty_fs::Tear::None));
    assert!(
        recovered.deltas >= 399,
        "recovery replayed the deltas: {}",
        recovered.deltas
    );
    assert_eq!(recovered.tree.last_processed_zxid(), 400);
    assert_eq!(recovered.tree.digest(), tree.digest());
    // What an operator sees: the delta file, whole, up to the last write.
    let report = storage::inspect::inspect(&fs, &layout()).expect("inspect");
    assert!(report.is_healthy(), "{}", report.render());
    assert!(
        report.render().contains("txns up to 0x190"),
        "{}",
        report.render()
    );
}

/// A delta file is preallocated, so a batch's fsync leaves its length (and inode) alone; the
/// zeros after the last batch end the records when it is replayed.
#[test]
fn delta_batches_land_in_a_preallocated_file_whose_zeros_end_the_records() {
    let fs = FaultyFs::new();
    let step = 1 << 20;
    let options = PersistenceOptions {
        segment_bytes: step,
        ..diskless_options()
    };
    let (mut p, recovered) = Persistence::open(
        Arc::new(fs.clone()),
        options,
        Box::new(|_| {}),
        Box::new(|_| {}),
    )
    .expect("open");
    let mut tree = recovered.tree;
    let txns = workload(300, 29);
    let delta_len = |fs: &FaultyFs| {
        let files = fs.list(&layout().snap_dir).unwrap();
        let name = files.iter().find(|n| n.starts_with("delta-")).cloned();
        name.map(|n| fs.len(&layout().snap_dir.join(n)).unwrap())
    };
    write_in_chunks(&fs, &mut p, &mut tree, &txns[..100], 20);
    let first = delta_len(&fs).expect("a delta file");
    assert_eq!(first, step, "one step of preAllocSize preallocated");
    assert_eq!(storage::delta::preallocate_step(step), step);
    write_in_chunks(&fs, &mut p, &mut tree, &txns[100..], 20);
    assert_eq!(delta_len(&fs), Some(first), "later batches fit in the step");
    p.close();
    let (_, recovered, _) = open(&fs.crash_image(storage::faulty_fs::Tear::None));
    assert_eq!(recovered.tree.last_processed_zxid(), 300);
    assert_eq!(recovered.tree.digest(), tree.digest());
}

/// Deltas of data changes make what came before stale; once the files hold four times as many
/// stale bytes as the tree's snapshot (at least 4 MiB), the next busy snapshot is a full one.
#[test]
fn deltas_are_compacted_into_a_full_snapshot() {
    let fs = FaultyFs::new();
    let (mut p, recovered, _) = open(&fs);
    let mut tree = recovered.tree;
    // 2,000 transactions of about 4 KiB: 8 MiB, twice the least a chain of deltas grows to.
    let txns = big_workload(2_000, 4096);
    let fulls = write_in_chunks(&fs, &mut p, &mut tree, &txns, 100);
    // The first busy snapshot (at the first write) is full, then deltas until they hold
    // 4 MiB of overwritten data (four times the tiny tree is less), then a full one of the
    // tiny tree; the next would come after the last of these 8 MiB.
    assert_eq!(fulls.len(), 2, "full snapshots: {fulls:?}");
    let busy = p.snapshot_stats.taken.load(Ordering::SeqCst);
    assert!(
        busy >= 20,
        "delta batches between them: {busy} busy snapshots"
    );
    p.close();
    let (_, recovered, _) = open(&fs.crash_image(storage::faulty_fs::Tear::None));
    assert_eq!(recovered.tree.digest(), tree.digest());
}

/// A tree that only grows leaves nothing stale: its deltas are as compact as a snapshot of
/// it, so it is never rewritten, however far the deltas outgrow the first snapshot (here 8 MiB
/// of creates after a snapshot of an empty tree); recovery replays them all.
#[test]
fn a_growing_tree_is_not_compacted() {
    let fs = FaultyFs::new();
    let (mut p, recovered, _) = open(&fs);
    let mut tree = recovered.tree;
    let txns = growing_workload(8_000, 1024);
    let fulls = write_in_chunks(&fs, &mut p, &mut tree, &txns, 200);
    assert_eq!(
        fulls.len(),
        1,
        "only the first busy snapshot is full: {fulls:?}"
    );
    p.close();
    let (_, recovered, _) = open(&fs.crash_image(storage::faulty_fs::Tear::None));
    assert!(recovered.deltas >= 7_999, "replayed: {}", recovered.deltas);
    assert_eq!(recovered.tree.digest(), tree.digest());
}

/// The estimate compaction judges staleness by is within 2 % of a real snapshot's size.
#[test]
fn a_snapshots_size_is_estimated_from_the_tree() {
    for txns in [workload(3_000, 5), growing_workload(2_000, 100)] {
        let tree = reference(&txns, txns.len());
        let real = storage::snapshot_file::encode_to_vec(&tree.freeze(), 0).len() as f64;
        let estimate = storage::snapshot_file::estimated_bytes(
            tree.node_count(),
            tree.approximate_data_size(),
        ) as f64;
        let error = (estimate - real).abs() / real;
        assert!(error < 0.02, "estimated {estimate} bytes, written {real}");
    }
}

#[test]
fn a_checkpoint_survives_a_crash_at_any_point_whole_or_not_at_all() {
    let txns = workload(120, 9);
    let (applied, pending) = txns.split_at(100);
    let mut tree = DataTree::new();
    for txn in applied {
        tree.apply(txn, &mut Vec::new());
    }
    let base = FaultyFs::new();
    {
        let (p, _, _) = open(&base);
        p.close();
    }
    let (mut crashed, mut finished_any) = (0, 0);
    for k in 0..16 {
        let fs = base.crash_image(Tear::None);
        let (mut p, _, _) = open(&fs);
        fs.crash_after(k);
        let finished = p.checkpoint(&tree, pending, |_| None).is_ok();
        for tear in [Tear::None, Tear::Prefix(k + 1)] {
            let image = fs.crash_image(tear);
            let (p2, recovered, _) = open(&image);
            // None: not written when the crash came; the server is amnesiac, which is safe.
            if let Some(c) = p2.boot_checkpoint().expect("never a damaged checkpoint") {
                assert_eq!(c.snapshot_zxid, tree.last_processed_zxid());
                assert_eq!(c.proposals, pending, "every acknowledged proposal");
                assert_eq!(
                    recovered.tree.last_processed_zxid(),
                    tree.last_processed_zxid(),
                    "the snapshot the checkpoint stands on was loaded"
                );
                assert_eq!(recovered.tree.digest(), tree.digest());
            }
            p2.close();
        }
        if finished {
            finished_any += 1;
        } else {
            crashed += 1;
        }
        if finished {
            let image = fs.crash_image(Tear::None);
            let (p3, _, _) = open(&image);
            assert!(p3.boot_checkpoint().unwrap().is_some(), "finished at k={k}");
            p3.close();
        }
    }
    assert!(
        crashed >= 8,
        "crashes inside the checkpoint were tried: {crashed}"
    );
    assert!(finished_any >= 1, "the last points let it finish");
}

#[test]
fn the_checkpoint_is_gone_before_anything_new_is_acknowledged() {
    let txns = workload(60, 3);
    let fs = FaultyFs::new();
    let (mut p, recovered, durable) = open(&fs);
    let mut tree = recovered.tree;
    for txn in &txns[..50] {
        tree.apply(txn, &mut Vec::new());
    }
    p.checkpoint(&tree, &txns[50..55], |_| None).unwrap();
    p.close();
    let (mut p, _, durable2) = open(&fs);
    assert!(p.boot_checkpoint().unwrap().is_some());
    drop(durable);
    p.append(&txns[55]).unwrap();
    assert_eq!(durable2.load(Ordering::SeqCst), txns[55].header.zxid);
    // The report above is the acknowledgement's licence: by then the checkpoint must be gone
    // from disk, even if the machine crashes right now.
    let image = fs.crash_image(Tear::None);
    let (p2, _, _) = open(&image);
    assert!(p2.boot_checkpoint().unwrap().is_none());
}

#[test]
fn snapshots_carry_the_epoch_label_the_host_set_and_a_leaders_snap_its_zxids_epoch() {
    let txns = workload(40, 4);
    let fs = FaultyFs::new();
    let (mut p, recovered, _) = open(&fs);
    let mut tree = recovered.tree;
    write(&mut p, &mut tree, &txns[..10]);
    snapshot_until(&mut p, &tree, txns[9].header.zxid);
    p.close();
    let (mut p, recovered, _) = open(&fs);
    let zxid_epoch = (txns[9].header.zxid >> 32) as u32;
    assert_eq!(
        recovered.epoch_label, zxid_epoch,
        "no label set: the zxid's epoch stands for it"
    );
    // The host says the state now holds epoch 7's initial history (Zab serves in epoch 7).
    p.set_epoch_label(zxid_epoch + 7);
    write(&mut p, &mut tree, &txns[10..20]);
    snapshot_until(&mut p, &tree, txns[19].header.zxid);
    p.close();
    let (mut p, recovered, _) = open(&fs);
    assert_eq!(recovered.epoch_label, zxid_epoch + 7);
    assert_eq!(recovered.tree.digest(), tree.digest());
    // A leader's SNAP is labelled by its zxid's epoch: this server did not apply it under
    // any epoch of its own.
    let mut newer = recovered.tree;
    for txn in &txns[20..30] {
        newer.apply(txn, &mut Vec::new());
    }
    // Diskless: the snapshot stands at once, whatever the stream after it.
    p.replace_with_snapshot(
        &Persistence::snapshot_bytes(&newer),
        txns[29].header.zxid + 10,
    )
    .unwrap();
    p.close();
    let (_, recovered, _) = open(&fs);
    assert_eq!(recovered.tree.last_processed_zxid(), txns[29].header.zxid);
    assert_eq!(recovered.epoch_label, (txns[29].header.zxid >> 32) as u32);
}

#[test]
fn trunc_cuts_a_whole_checkpoints_proposals() {
    let txns = workload(60, 3);
    let fs = FaultyFs::new();
    let (mut p, recovered, _) = open(&fs);
    let mut tree = recovered.tree;
    for txn in &txns[..50] {
        tree.apply(txn, &mut Vec::new());
    }
    p.checkpoint(&tree, &txns[50..55], |_| None).unwrap();
    // The new leader discarded what this server acknowledged after txns[52].
    p.truncate_log_after(txns[52].header.zxid).unwrap();
    let image = fs.crash_image(Tear::None);
    let (p2, _, _) = open(&image);
    let saved = p2.boot_checkpoint().unwrap().expect("still whole");
    assert_eq!(saved.proposals, txns[50..53].to_vec());
}

#[test]
fn writes_a_busy_snapshot_missed_are_snapshotted_when_the_server_is_idle() {
    let txns = workload(200, 6);
    let fs = FaultyFs::new();
    let (mut p, recovered, _) = open(&fs);
    let mut tree = recovered.tree;
    write(&mut p, &mut tree, &txns);
    // No more writes: only idle() can cover the ones applied while a snapshot ran.
    let last = tree.last_processed_zxid();
    snapshot_until(&mut p, &tree, last);
    p.close();
    let (_, recovered, _) = open(&fs.crash_image(Tear::None));
    assert_eq!(recovered.tree.last_processed_zxid(), last);
}

#[test]
fn a_cancelled_snapshot_leaves_no_file() {
    let txns = workload(30, 2);
    let fs = FaultyFs::new();
    let mut tree = DataTree::new();
    for txn in &txns {
        tree.apply(txn, &mut Vec::new());
    }
    let layout = layout();
    fs.create_dir_all(&layout.snap_dir).unwrap();
    let cancel = std::sync::atomic::AtomicBool::new(true);
    let result = storage::snapshot_file::write_unless_cancelled(
        &fs,
        &layout,
        &tree.freeze(),
        Default::default(),
        &cancel,
    );
    assert!(matches!(result, Err(storage::StorageError::Cancelled)));
    assert_eq!(fs.list(&layout.snap_dir).unwrap(), Vec::<String>::new());
}

#[test]
fn a_checkpoint_extends_the_newest_snapshot_with_the_proposals_after_it_when_they_are_at_hand() {
    let txns = workload(60, 8);
    let fs = FaultyFs::new();
    let (mut p, recovered, _) = open(&fs);
    let mut tree = recovered.tree;
    write(&mut p, &mut tree, &txns[..20]);
    let base = txns[19].header.zxid;
    snapshot_until(&mut p, &tree, base);
    // Applied without a snapshot since (the server was busy), then 5 acknowledged proposals.
    for txn in &txns[20..40] {
        tree.apply(txn, &mut Vec::new());
    }
    let snaps_before = snapshot_names(&fs);
    let since = |zxid: i64| (zxid == base).then(|| txns[20..45].to_vec());
    p.checkpoint(&tree, &txns[40..45], since).unwrap();
    assert_eq!(
        snapshot_names(&fs),
        snaps_before,
        "no new snapshot of the whole tree"
    );
    let image = fs.crash_image(Tear::None);
    let (p2, recovered, _) = open(&image);
    assert_eq!(recovered.tree.last_processed_zxid(), base);
    let saved = p2.boot_checkpoint().unwrap().expect("whole");
    assert_eq!(saved.snapshot_zxid, base);
    assert_eq!(saved.proposals, txns[20..45].to_vec());
    // Without the proposals at hand, a complete snapshot of the tree is written instead.
    p.checkpoint(&tree, &txns[40..45], |_| None).unwrap();
    let (p3, recovered, _) = open(&fs.crash_image(Tear::None));
    assert_eq!(recovered.tree.last_processed_zxid(), txns[39].header.zxid);
    assert_eq!(recovered.tree.digest(), tree.digest());
    let saved = p3.boot_checkpoint().unwrap().expect("whole");
    assert_eq!(saved.proposals, txns[40..45].to_vec());
}

fn snapshot_names(fs: &FaultyFs) -> Vec<String> {
    let mut names: Vec<String> = fs
        .list(&layout().snap_dir)
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with("snap-"))
        .collect();
    names.sort();
    names
}

/// A crash at any file operation while delta batches are written: recovery gives a prefix of
/// the history at least as long as what the last whole batch held, never a mix.
#[test]
fn a_crash_while_deltas_are_written_recovers_a_prefix() {
    let txns = workload(200, 23);
    // Writes the workload, crashing after `crash_after` file operations (if it gets that
    // far); returns the disk, the zxid it held last and the operations made.
    let run = |crash_after: Option<u64>| {
        let fs = FaultyFs::new();
        let (mut p, recovered, _) = open(&fs);
        let mut tree = recovered.tree;
        let start = fs.ops();
        if let Some(k) = crash_after {
            fs.crash_after(start + k);
        }
        let mut on_disk = 0;
        for chunk in txns.chunks(25) {
            for txn in chunk {
                let _ = p.append(txn);
                tree.apply(txn, &mut Vec::new());
                p.applied(&tree, txn);
            }
            p.idle(&tree);
            wait_for_snapshots(&p);
            on_disk = on_disk.max(p.newest_snapshot_zxid());
        }
        drop(p);
        let ops = fs.ops() - start;
        (fs, on_disk, ops)
    };
    // How many batches the workload makes depends on the snapshot thread's timing (a batch
    // rests a few ms): the crash points spread over the operations of a run without one.
    let (_, _, ops) = run(None);
    let mut longest = 0;
    for k in (0..ops).step_by((ops as usize / 17).max(1)) {
        let (fs, on_disk, _) = run(Some(k));
        for tear in [
            storage::faulty_fs::Tear::None,
            storage::faulty_fs::Tear::Prefix(k + 3),
        ] {
            let (_, r, _) = open(&fs.crash_image(tear));
            let at = r.tree.last_processed_zxid();
            assert!(
                at >= on_disk,
                "crash at {k}: recovered {at}, the disk had {on_disk}"
            );
            assert!(
                dump(&r.tree) == dump(&reference(&txns, at as usize)),
                "crash at {k}: the state at {at} is not the history's"
            );
            longest = longest.max(at);
        }
    }
    assert!(
        longest > 100,
        "some crash points come after many batches: {longest}"
    );
}
