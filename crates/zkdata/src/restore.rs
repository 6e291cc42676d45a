//! What ZooKeeper does with its data directory on start-up (`FileTxnSnapLog.restore`,
//! `ZooKeeperServer.loadData`), done without writing to it:
//!
//! 1. the newest snapshot that reads back whole (up to 100 tried, newest first; one cut short
//!    by a crash is skipped for the one before it);
//! 2. every logged transaction after the snapshot's zxid, from the log file that starts at or
//!    before it on, applied as ZooKeeper applies them over a fuzzy snapshot;
//! 3. the digests checked: the snapshot's once the replay reaches its zxid, and each logged
//!    transaction's after that;
//! 4. sessions that own ephemerals but are not live any more are killed at the last zxid, as
//!    ZooKeeper's "Clean up dead sessions" does.
//!
//! Unlike ZooKeeper it also insists that the transactions follow one another (each zxid the
//! one after the last within an epoch), so a missing log file is an error instead of silent
//! loss, and that a skipped newer snapshot's zxid is reached by the logs.

use crate::digest::DIGEST_VERSION;
use crate::error::{Result, ZkDataError};
use crate::process_txn::process;
use crate::progress::{Progress, Stage};
use crate::snapshot::{self, ZkSnapshot, ZxidDigest, SNAP_PREFIX};
use crate::txn_log::{self, FileEnd, LogFile};
use crate::zk_tree::ZkTree;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Snapshots tried before giving up, as ZooKeeper (`findNValidSnapshots(100)`).
const SNAPSHOTS_TRIED_MAX: usize = 100;

/// Where a ZooKeeper server keeps its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// `dataDir/version-2`: snapshots.
    pub snap_dir: PathBuf,
    /// `dataLogDir/version-2`: transaction logs.
    pub log_dir: PathBuf,
}

/// `data_dir` is ZooKeeper's dataDir (or its version-2 directory); `data_log_dir` its
/// dataLogDir when that is separate.
pub fn locate(data_dir: &Path, data_log_dir: Option<&Path>) -> Result<Source> {
    let version_dir = |dir: &Path| -> Result<PathBuf> {
        if !dir.is_dir() {
            return Err(ZkDataError::Io {
                op: "open directory",
                path: dir.to_path_buf(),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "not a directory"),
            });
        }
        let inner = dir.join("version-2");
        if inner.is_dir() {
            Ok(inner)
        } else if dir.file_name().is_some_and(|n| n == "version-2") {
            Ok(dir.to_path_buf())
        } else {
            Err(ZkDataError::NotZooKeeper {
                path: dir.to_path_buf(),
            })
        }
    };
    let snap_dir = version_dir(data_dir)?;
    let log_dir = match data_log_dir {
        Some(dir) => version_dir(dir)?,
        None => snap_dir.clone(),
    };
    Ok(Source { snap_dir, log_dir })
}

/// The state ZooKeeper would serve after a restart, and how it was reached.
#[derive(Debug)]
pub struct Restored {
    pub tree: ZkTree,
    pub sessions: BTreeMap<i64, i32>,
    pub snapshot: PathBuf,
    pub snapshot_zxid: i64,
    /// Newer snapshots that could not be used, with the reason.
    pub skipped_snapshots: Vec<(PathBuf, String)>,
    pub logs_read: Vec<PathBuf>,
    pub txns_replayed: u64,
    /// Incomplete last entries that ended a file: file, offset, why.
    pub torn: Vec<(PathBuf, u64, String)>,
    /// The snapshot digest compared (its zxid), if the snapshot had one the replay reached.
    pub snapshot_digest_checked: Option<i64>,
    /// The snapshot digest's zxid when the logs never reached it (ZooKeeper warns then).
    pub snapshot_digest_unreached: Option<i64>,
    pub txn_digests_checked: u64,
    /// Sessions killed because they owned ephemerals but were gone.
    pub dead_sessions: Vec<i64>,
    pub last_zxid: i64,
}

/// A snapshot file and its zxid, newest first.
fn snapshot_files(dir: &Path) -> Result<Vec<(i64, PathBuf)>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(ZkDataError::io("list", dir))? {
        let entry = entry.map_err(ZkDataError::io("list", dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(zxid) = snapshot::zxid_from_name(name, SNAP_PREFIX) {
            files.push((zxid, entry.path()));
        }
    }
    files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    Ok(files)
}

fn epoch(zxid: i64) -> i64 {
    zxid >> 32
}

/// Restores as ZooKeeper would; reads only.
pub fn restore(source: &Source, progress: Progress<'_>) -> Result<Restored> {
    let files = snapshot_files(&source.snap_dir)?;
    let mut skipped = Vec::new();
    let mut chosen: Option<ZkSnapshot> = None;
    for (_, path) in files.into_iter().take(SNAPSHOTS_TRIED_MAX) {
        if let Err(why) = snapshot::looks_complete(&path)? {
            tracing::warn!(path = %path.display(), why, "skipping snapshot");
            skipped.push((path, why));
            continue;
        }
        match snapshot::read(&path, progress) {
            Ok(snap) => {
                chosen = Some(snap);
                break;
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "skipping snapshot");
                skipped.push((path, e.to_string()));
            }
        }
    }
    let Some(snap) = chosen else {
        return Err(ZkDataError::NoSnapshot {
            dir: source.snap_dir.clone(),
            skipped,
        });
    };
    let ZkSnapshot {
        path: snapshot_path,
        zxid: snapshot_zxid,
        mut tree,
        mut sessions,
        digest,
        ..
    } = snap;
    tree.last_processed_zxid = snapshot_zxid;
    tree.setup_quota();
    let mut restored = Restored {
        tree: ZkTree::default(),
        sessions: BTreeMap::new(),
        snapshot: snapshot_path.clone(),
        snapshot_zxid,
        skipped_snapshots: skipped,
        logs_read: Vec::new(),
        txns_replayed: 0,
        torn: Vec::new(),
        snapshot_digest_checked: None,
        snapshot_digest_unreached: None,
        txn_digests_checked: 0,
        dead_sessions: Vec::new(),
        last_zxid: snapshot_zxid,
    };
    // A digest older than the snapshot's start is not compared (`deserializeZxidDigest`).
    let mut pending: Option<ZxidDigest> = digest.filter(|d| d.zxid >= snapshot_zxid);
    let check_snapshot_digest = |tree: &ZkTree,
                                 zxid: i64,
                                 pending: &mut Option<ZxidDigest>,
                                 restored: &mut Restored|
     -> Result<()> {
        if let Some(d) = *pending {
            if d.zxid == zxid {
                *pending = None;
                if d.version == DIGEST_VERSION {
                    if tree.digest() != d.digest {
                        return Err(ZkDataError::DigestMismatch {
                            zxid,
                            source_of: format!("the digest of {}", snapshot_path.display()),
                            expected: d.digest,
                            found: tree.digest(),
                        });
                    }
                    restored.snapshot_digest_checked = Some(zxid);
                }
            }
        }
        Ok(())
    };
    check_snapshot_digest(&tree, snapshot_zxid, &mut pending, &mut restored)?;

    // The log file that starts at or before the snapshot, and every later one
    // (`FileTxnLog.getLogFiles`).
    let logs = txn_log::list(&source.log_dir)?;
    let start = logs
        .iter()
        .rposition(|f| f.first_zxid <= snapshot_zxid)
        .unwrap_or(0);
    let logs: Vec<LogFile> = logs.into_iter().skip(start).collect();
    let total: u64 = logs.iter().map(|f| f.len).sum();
    let mut done_bytes = 0u64;
    let mut previous = snapshot_zxid;
    let mut previous_file: Option<PathBuf> = None;
    let count = logs.len();
    for (i, log) in logs.iter().enumerate() {
        let path = log.path.clone();
        let mut visit = |offset: u64, entry: crate::txn::LogEntry| -> Result<()> {
            let zxid = entry.header.zxid;
            if zxid <= snapshot_zxid {
                return Ok(());
            }
            let follows = if epoch(zxid) == epoch(previous) {
                zxid == previous + 1
            } else {
                epoch(zxid) > epoch(previous)
            };
            if !follows {
                if zxid > previous {
                    return Err(ZkDataError::Gap {
                        path: path.clone(),
                        offset,
                        previous,
                        found: zxid,
                        after: previous_file.clone(),
                    });
                }
                return Err(ZkDataError::Corrupt {
                    path: path.clone(),
                    offset,
                    detail: format!(
                        "zxid {zxid:#x} does not follow {previous:#x}: the log goes backwards"
                    ),
                });
            }
            process(&mut tree, &mut sessions, &entry);
            restored.txns_replayed += 1;
            check_snapshot_digest(&tree, zxid, &mut pending, &mut restored)?;
            if pending.is_none() {
                if let Some(d) = entry.digest.filter(|d| d.version == DIGEST_VERSION) {
                    if d.tree_digest != tree.digest() {
                        return Err(ZkDataError::DigestMismatch {
                            zxid,
                            source_of: format!(
                                "the digest logged with it in {} at byte offset {offset}",
                                path.display()
                            ),
                            expected: d.tree_digest,
                            found: tree.digest(),
                        });
                    }
                    restored.txn_digests_checked += 1;
                }
            }
            previous = zxid;
            previous_file = Some(path.clone());
            Ok(())
        };
        let base = done_bytes;
        let mut on_bytes = |n: u64| progress(Stage::Log, base + n, total);
        let end = txn_log::read_file(&log.path, &mut visit, &mut on_bytes)?;
        done_bytes += log.len;
        progress(Stage::Log, done_bytes, total);
        restored.logs_read.push(log.path.clone());
        match end {
            FileEnd::Clean => {}
            FileEnd::Torn { offset, reason } => {
                tracing::warn!(path = %log.path.display(), offset, reason, "the last entry of this log file is incomplete; it ends here, as ZooKeeper ends it");
                restored.torn.push((log.path.clone(), offset, reason));
            }
            FileEnd::Empty if i + 1 == count => {}
            FileEnd::Empty => {
                return Err(ZkDataError::Corrupt {
                    path: log.path.clone(),
                    offset: 0,
                    detail: "an empty log file (no header) before newer ones".into(),
                })
            }
        }
    }
    if let Some(d) = pending {
        tracing::warn!(
            zxid = format!("{:#x}", d.zxid),
            "the logs never reach the zxid of the snapshot's digest; it was not compared"
        );
        restored.snapshot_digest_unreached = Some(d.zxid);
    }
    let last = tree.last_processed_zxid;
    // A newer snapshot that was skipped proves the server got that far: the logs must too.
    let newest_skipped = restored
        .skipped_snapshots
        .iter()
        .filter_map(|(p, _)| {
            let zxid = snapshot::zxid_from_name(p.file_name()?.to_str()?, SNAP_PREFIX)?;
            Some((zxid, p.clone()))
        })
        .max_by_key(|(zxid, _)| *zxid);
    if let Some((newer_zxid, newer)) = newest_skipped.filter(|(z, _)| *z > last) {
        return Err(ZkDataError::LogBehindSnapshot {
            snapshot: newer,
            snapshot_zxid: newer_zxid,
            last,
        });
    }
    // ZooKeeperServer.loadData: "Clean up dead sessions".
    let mut dead: Vec<i64> = tree
        .sessions_with_ephemerals()
        .into_iter()
        .filter(|s| !sessions.contains_key(s))
        .collect();
    dead.sort_unstable();
    for session in &dead {
        tree.kill_session(*session, last, None);
    }
    restored.dead_sessions = dead;
    restored.last_zxid = last;
    restored.tree = tree;
    restored.sessions = sessions;
    Ok(restored)
}
