//! How a member boots (DESIGN.md §5): the epochs and the log Zab starts from, and, in diskless
//! mode, whether this server is whole (its failure checkpoint holds everything it
//! acknowledged) or amnesiac (it must not vote until a leader has brought it up to date).

use crate::store::Store;
use std::sync::Arc;
use storage::StorageError;

/// What Zab needs from disk: the epochs, and the log after the snapshot, unapplied.
/// `incarnation` is a number unique to this boot (the host draws it).
pub fn zab_boot<S: Store>(
    store: &S,
    recovered: &storage::Recovered,
    diskless: bool,
    incarnation: u64,
) -> Result<zab::Boot, StorageError> {
    let epochs = store.epochs()?;
    let snapshot_zxid = recovered.tree.last_processed_zxid();
    let (log, amnesia) = if diskless {
        diskless_boot_log(store, snapshot_zxid, epochs.accepted)
    } else {
        // A durable member keeps what it acknowledged in its log.
        (recovered.log.clone(), false)
    };
    // An amnesiac diskless server votes as what its snapshot holds: the state was applied
    // under the snapshot's epoch label, which may be older than the epoch file (DESIGN.md §5).
    let current_epoch = if amnesia {
        recovered.epoch_label.min(epochs.current)
    } else {
        epochs.current
    };
    let log = log
        .iter()
        .map(|txn| {
            Arc::new(zab::Entry {
                zxid: zab::Zxid::from_i64(txn.header.zxid),
                txn: txn.clone(),
                digest: None,
            })
        })
        .collect();
    Ok(zab::Boot {
        accepted_epoch: epochs.accepted,
        current_epoch,
        snapshot_zxid: zab::Zxid::from_i64(snapshot_zxid),
        log,
        amnesia,
        incarnation,
    })
}

/// A diskless member's state at boot: whole (with the proposals its failure checkpoint saved)
/// if the checkpoint is on disk, or amnesiac (DESIGN.md §5: it may have acknowledged what its
/// newest snapshot lacks, so it must not vote until a leader has brought it up to date). A
/// server that never took part in an epoch never acknowledged anything.
fn diskless_boot_log<S: Store>(
    store: &S,
    snapshot_zxid: i64,
    accepted_epoch: u32,
) -> (Vec<proto::txn::Txn>, bool) {
    match store.boot_checkpoint() {
        Ok(Some(checkpoint)) if checkpoint.snapshot_zxid > snapshot_zxid => {
            // The snapshot the checkpoint extends is damaged or gone: its proposals do not
            // follow on from the state loaded, so they cannot be trusted to complete it.
            tracing::error!(
                checkpoint_base = format!("{:#x}", checkpoint.snapshot_zxid),
                loaded = format!("{snapshot_zxid:#x}"),
                "diskless: the failure checkpoint extends a snapshot that did not load; treating this server as having lost what it acknowledged"
            );
            (Vec::new(), true)
        }
        Ok(Some(checkpoint)) => {
            let saved: Vec<_> = checkpoint
                .proposals
                .into_iter()
                .filter(|t| t.header.zxid > snapshot_zxid)
                .collect();
            tracing::info!(
                proposals = saved.len(),
                "diskless: a whole failure checkpoint is on disk; this server votes at once"
            );
            (saved, false)
        }
        Ok(None) if accepted_epoch == 0 => (Vec::new(), false),
        Ok(None) => {
            tracing::warn!(
                "diskless: no failure checkpoint (the server stopped without one); it may have \
                 acknowledged writes its snapshots lack, so it will not vote until a leader has \
                 brought it up to date"
            );
            (Vec::new(), true)
        }
        Err(e) => {
            tracing::error!(error = %e, "diskless: the failure checkpoint is damaged; treating this server as having lost what it acknowledged");
            (Vec::new(), true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use storage::faulty_fs::FaultyFs;

    fn diskless_persistence(fs: &FaultyFs) -> storage::Persistence {
        let options = storage::PersistenceOptions {
            layout: storage::Layout::new(std::path::Path::new("/d"), std::path::Path::new("/d")),
            force_sync: true,
            segment_bytes: 4096,
            snap_count: 1000,
            snap_retain_count: 3,
            purge_interval: std::time::Duration::ZERO,
            fsync_warn: std::time::Duration::from_secs(1),
            replay: storage::Replay::Collect,
            diskless: true,
            busy_snapshot_rest_percent: 0,
            delta_rest_min_ms: storage::DELTA_REST_MIN_MS,
            execution: Default::default(),
        };
        let (persistence, _) = storage::Persistence::open(
            Arc::new(fs.clone()),
            options,
            Box::new(|_| {}),
            Box::new(|_| {}),
        )
        .expect("open");
        persistence
    }

    #[test]
    fn a_checkpoint_is_trusted_only_on_top_of_the_snapshot_it_extends() {
        let fs = FaultyFs::new();
        let persistence = diskless_persistence(&fs);
        let layout = storage::Layout::new(std::path::Path::new("/d"), std::path::Path::new("/d"));
        storage::checkpoint::write(&fs, &layout, 0x1_0000_0005, &[]).expect("write");
        let (_, amnesia) = diskless_boot_log(&persistence, 0x1_0000_0005, 1);
        assert!(!amnesia, "the snapshot it extends loaded: whole");
        let (_, amnesia) = diskless_boot_log(&persistence, 0x1_0000_0009, 1);
        assert!(
            !amnesia,
            "a newer snapshot of the same history loaded: whole"
        );
        let (_, amnesia) = diskless_boot_log(&persistence, 0x1_0000_0002, 1);
        assert!(
            amnesia,
            "an older snapshot loaded: the checkpoint leaves a gap"
        );
    }
}
