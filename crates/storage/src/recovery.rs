//! Start-up: the newest valid snapshot, then every logged transaction after it, in order.
//!
//! A torn final record (a crash mid-write: nothing after it is valid) is cut off, since it was
//! never acknowledged. Any other damage stops start-up with the file and offset
//! ([`StorageError::Corrupt`]), because skipping it could silently drop acknowledged writes.

use crate::error::{Result, StorageError};
use crate::fs::FileSystem;
use crate::layout::{self, Layout, TEMP_SUFFIX};
use crate::snapshot_file;
use crate::wal::{self, ScanEnd};
use proto::jute::{Reader, Record};
use proto::txn::Txn;
use std::path::PathBuf;
use tree::DataTree;

/// What recovery found and did.
pub struct Recovered {
    pub tree: DataTree,
    /// The snapshot loaded (`None`: started from an empty tree).
    pub snapshot: Option<(PathBuf, i64)>,
    /// Snapshots skipped because they were damaged, newest first.
    pub skipped_snapshots: Vec<(PathBuf, String)>,
    /// Transactions replayed from the log.
    pub replayed: u64,
    /// The zxid of the last transaction in the log (or the snapshot if newer).
    pub last_zxid: i64,
    /// A torn tail that was cut off: file, offset, bytes dropped.
    pub truncated_tail: Option<(PathBuf, u64, u64)>,
    /// With [`Replay::Collect`]: the log records after the snapshot, in order, not applied.
    pub log: Vec<Txn>,
    /// The log generation of the loaded snapshot; only segments of it were replayed.
    pub generation: u32,
    /// The loaded snapshot's epoch label ([`crate::snapshot_file::SnapshotHeader::epoch_label`]),
    /// or the last applied delta's; 0 without a snapshot.
    pub epoch_label: u32,
    /// Diskless: the transactions of the delta file applied after the snapshot
    /// ([`crate::delta`]).
    pub deltas: u64,
}

/// What recovery does with the log records after the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    /// Standalone: every logged transaction was committed, so apply them all.
    ApplyAll,
    /// In an ensemble the log may end with proposals that were never committed: hand them to
    /// Zab, which delivers the committed ones (and truncates the others).
    Collect,
}

/// Standalone recovery: snapshot plus every logged transaction applied.
pub fn recover(fs: &dyn FileSystem, layout: &Layout) -> Result<Recovered> {
    recover_with(fs, layout, Replay::ApplyAll)
}

pub fn recover_with(fs: &dyn FileSystem, layout: &Layout, replay: Replay) -> Result<Recovered> {
    for dir in [&layout.snap_dir, &layout.wal_dir] {
        fs.create_dir_all(dir)
            .map_err(StorageError::io("create data directory", dir))?;
    }
    remove_temp_files(fs, &layout.snap_dir)?;
    crate::replacement::settle(fs, layout)?;
    let (mut tree, snapshot, skipped_snapshots, generation, mut epoch_label) =
        newest_snapshot(fs, layout)?;
    // Diskless: the batches of transactions that continue that snapshot.
    let mut deltas = 0;
    if let Some((_, zxid)) = &snapshot {
        let replayed = crate::delta::replay(fs, layout, (generation, *zxid), &mut tree)?;
        deltas = replayed.txns;
        epoch_label = replayed.label.unwrap_or(epoch_label);
    }
    let mut recovered = Recovered {
        generation,
        epoch_label,
        last_zxid: tree.last_processed_zxid(),
        tree: DataTree::new(),
        snapshot,
        skipped_snapshots,
        replayed: 0,
        truncated_tail: None,
        log: Vec::new(),
        deltas,
    };
    replay_log(fs, layout, &mut tree, &mut recovered, replay)?;
    recovered.tree = tree;
    Ok(recovered)
}

fn remove_temp_files(fs: &dyn FileSystem, dir: &std::path::Path) -> Result<()> {
    let names = fs.list(dir).map_err(StorageError::io("list", dir))?;
    for name in names.iter().filter(|n| n.ends_with(TEMP_SUFFIX)) {
        let path = dir.join(name);
        tracing::info!(path = %path.display(), "removing an unfinished snapshot left by a crash");
        match fs.remove(&path) {
            // Already gone is what we wanted.
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(StorageError::io("remove", &path)(e))
            }
            _ => {}
        }
    }
    Ok(())
}

/// The tree, the snapshot loaded, the snapshots skipped, its generation and its epoch label.
type SnapshotChoice = (
    DataTree,
    Option<(PathBuf, i64)>,
    Vec<(PathBuf, String)>,
    u32,
    u32,
);

/// The newest snapshot that reads back whole; damaged newer ones are reported and skipped
/// (the log replay from the older one then proves no transaction is missing).
fn newest_snapshot(fs: &dyn FileSystem, layout: &Layout) -> Result<SnapshotChoice> {
    let names = fs
        .list(&layout.snap_dir)
        .map_err(StorageError::io("list", &layout.snap_dir))?;
    let mut zxids: Vec<i64> = names
        .iter()
        .filter_map(|n| layout::parse_snap_name(n))
        .collect();
    zxids.sort_unstable_by(|a, b| b.cmp(a));
    let mut skipped = Vec::new();
    for zxid in zxids {
        let path = layout.snap_path(zxid);
        match snapshot_file::read(fs, &path) {
            Ok(loaded) if loaded.header.zxid == zxid => {
                let (generation, label) = (loaded.header.generation, loaded.header.epoch_label());
                return Ok((loaded.tree, Some((path, zxid)), skipped, generation, label));
            }
            Ok(loaded) => {
                let why = format!(
                    "its header says zxid {:#x}, its name {zxid:#x}",
                    loaded.header.zxid
                );
                tracing::error!(path = %path.display(), why, "skipping snapshot");
                skipped.push((path, why));
            }
            Err(e) => {
                tracing::error!(path = %path.display(), error = %e, "skipping damaged snapshot; trying an older one");
                skipped.push((path, e.to_string()));
            }
        }
    }
    Ok((DataTree::new(), None, skipped, 0, 0))
}

fn replay_log(
    fs: &dyn FileSystem,
    layout: &Layout,
    tree: &mut DataTree,
    recovered: &mut Recovered,
    replay: Replay,
) -> Result<()> {
    let names = fs
        .list(&layout.wal_dir)
        .map_err(StorageError::io("list", &layout.wal_dir))?;
    let mut firsts: Vec<i64> = names
        .iter()
        .filter_map(|n| layout::parse_wal_name(n))
        .collect();
    firsts.sort_unstable();
    let base = tree.last_processed_zxid();
    let mut applied = base;
    for (i, &first) in firsts.iter().enumerate() {
        let is_last = i + 1 == firsts.len();
        let path = layout.wal_path(first);
        let mut buf = wal::read_records(fs, &path).map_err(StorageError::io("read log", &path))?;
        let mut scanned = wal::scan(&buf);
        if !matches!(&scanned, Ok(s) if matches!(s.end, ScanEnd::Clean { .. })) {
            // Telling a torn tail from damage (or a bad header from an empty one) needs the
            // rest of the file.
            buf = fs
                .read_all(&path)
                .map_err(StorageError::io("read log", &path))?;
            scanned = wal::scan(&buf);
        }
        let scan = match scanned {
            Ok(scan) => scan,
            // A crash while creating the newest segment leaves it without a valid header and
            // without records: nothing in it was ever acknowledged.
            Err(reason) if is_last && buf.iter().skip(wal::HEADER_LEN).all(|&b| b == 0) => {
                tracing::warn!(path = %path.display(), reason, "removing a log segment whose creation was cut short");
                fs.remove(&path)
                    .map_err(StorageError::io("remove", &path))?;
                continue;
            }
            Err(reason) => {
                return Err(StorageError::Corrupt {
                    what: "log segment header",
                    path,
                    offset: 0,
                    detail: reason.to_string(),
                })
            }
        };
        if scan.header.generation < recovered.generation {
            // A history that a leader's snapshot replaced; its removal was cut short by a crash.
            tracing::info!(path = %path.display(), "removing a log segment of a replaced history");
            fs.remove(&path)
                .map_err(StorageError::io("remove", &path))?;
            continue;
        }
        if scan.header.generation > recovered.generation {
            return Err(StorageError::Corrupt {
                what: "log segment header",
                path,
                offset: 0,
                detail: format!(
                    "it continues log generation {}, but the newest readable snapshot is of generation {}: the snapshot that began it is damaged or missing",
                    scan.header.generation, recovered.generation
                ),
            });
        }
        if scan.header.first_zxid != first {
            return Err(StorageError::Corrupt {
                what: "log segment header",
                path,
                offset: 0,
                detail: format!(
                    "header says first zxid {:#x}, name says {first:#x}",
                    scan.header.first_zxid
                ),
            });
        }
        let mut prev = scan.header.prev_zxid;
        for rec in &scan.records {
            if rec.zxid > applied {
                if prev > applied {
                    return Err(StorageError::Gap {
                        path,
                        expected_prev: applied,
                        found_prev: prev,
                    });
                }
                let payload = &buf[rec.payload.0..rec.payload.1];
                let txn =
                    Txn::decode(&mut Reader::new(payload)).map_err(|e| StorageError::Replay {
                        path: path.clone(),
                        offset: rec.offset as u64,
                        detail: e.to_string(),
                    })?;
                match replay {
                    Replay::ApplyAll => {
                        tree.apply(&txn, &mut Vec::new());
                    }
                    Replay::Collect => recovered.log.push(txn),
                }
                applied = rec.zxid;
                recovered.replayed += 1;
            }
            prev = rec.zxid;
        }
        if let ScanEnd::Invalid {
            offset,
            reason,
            later_valid,
        } = scan.end
        {
            if !is_last || later_valid {
                return Err(StorageError::Corrupt {
                    what: "log record",
                    path,
                    offset: offset as u64,
                    detail: reason,
                });
            }
            let dropped = buf.len() as u64 - offset as u64;
            tracing::warn!(
                path = %path.display(),
                offset,
                reason,
                "cutting off a torn record at the end of the log (a write the crash interrupted, never acknowledged)"
            );
            let mut file = fs
                .open_write(&path, false)
                .map_err(StorageError::io("open log", &path))?;
            file.set_len(offset as u64)
                .map_err(StorageError::io("truncate log", &path))?;
            file.sync_data()
                .map_err(StorageError::io("fsync log", &path))?;
            recovered.truncated_tail = Some((path.clone(), offset as u64, dropped));
        }
        // A newest segment without a single whole record (created just before a crash) holds
        // nothing; it goes, or the next segment the writer creates would need its name.
        if is_last && scan.records.is_empty() {
            tracing::info!(path = %path.display(), "removing an empty log segment left by a crash");
            fs.remove(&path)
                .map_err(StorageError::io("remove", &path))?;
            fs.sync_dir(&layout.wal_dir)
                .map_err(StorageError::io("sync log directory", &layout.wal_dir))?;
        }
    }
    recovered.last_zxid = applied;
    Ok(())
}
