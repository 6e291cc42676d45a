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
use crate::txn::LogEntry;
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
    let (snap, skipped) = newest_readable_snapshot(source, progress)?;
    let mut replay = Replay::start(snap, skipped)?;
    replay_logs(source, &mut replay, progress)?;
    replay.finish()
}

/// `FileSnap.deserialize`: the newest snapshot that looks complete and reads back whole,
/// with the newer ones skipped and why.
fn newest_readable_snapshot(
    source: &Source,
    progress: Progress<'_>,
) -> Result<(ZkSnapshot, Vec<(PathBuf, String)>)> {
    let mut skipped = Vec::new();
    for (_, path) in snapshot_files(&source.snap_dir)?
        .into_iter()
        .take(SNAPSHOTS_TRIED_MAX)
    {
        if let Err(why) = snapshot::looks_complete(&path)? {
            tracing::warn!(path = %path.display(), why, "skipping snapshot");
            skipped.push((path, why));
            continue;
        }
        match snapshot::read(&path, progress) {
            Ok(snap) => return Ok((snap, skipped)),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "skipping snapshot");
                skipped.push((path, e.to_string()));
            }
        }
    }
    Err(ZkDataError::NoSnapshot {
        dir: source.snap_dir.clone(),
        skipped,
    })
}

/// The replay in progress: the tree, the live sessions, and what the checks need.
struct Replay {
    tree: ZkTree,
    sessions: BTreeMap<i64, i32>,
    restored: Restored,
    /// The snapshot's digest until the replay reaches its zxid.
    pending: Option<ZxidDigest>,
    /// The last zxid applied (the snapshot's to begin with) and the file it came from.
    previous: i64,
    previous_file: Option<PathBuf>,
}

impl Replay {
    fn start(snap: ZkSnapshot, skipped: Vec<(PathBuf, String)>) -> Result<Replay> {
        let ZkSnapshot {
            path,
            zxid,
            mut tree,
            sessions,
            digest,
            ..
        } = snap;
        tree.last_processed_zxid = zxid;
        tree.setup_quota();
        let mut replay = Replay {
            tree,
            sessions,
            restored: Restored {
                tree: ZkTree::default(),
                sessions: BTreeMap::new(),
                snapshot: path,
                snapshot_zxid: zxid,
                skipped_snapshots: skipped,
                logs_read: Vec::new(),
                txns_replayed: 0,
                torn: Vec::new(),
                snapshot_digest_checked: None,
                snapshot_digest_unreached: None,
                txn_digests_checked: 0,
                dead_sessions: Vec::new(),
                last_zxid: zxid,
            },
            // A digest older than the snapshot's start is not compared
            // (`deserializeZxidDigest`).
            pending: digest.filter(|d| d.zxid >= zxid),
            previous: zxid,
            previous_file: None,
        };
        replay.check_snapshot_digest(zxid)?;
        Ok(replay)
    }

    /// `compareSnapshotDigests`: once the replay reaches the digest's zxid.
    fn check_snapshot_digest(&mut self, zxid: i64) -> Result<()> {
        let Some(d) = self.pending.filter(|d| d.zxid == zxid) else {
            return Ok(());
        };
        self.pending = None;
        if d.version != DIGEST_VERSION {
            return Ok(());
        }
        if self.tree.digest() != d.digest {
            return Err(ZkDataError::DigestMismatch {
                zxid,
                source_of: format!("the digest of {}", self.restored.snapshot.display()),
                expected: d.digest,
                found: self.tree.digest(),
            });
        }
        self.restored.snapshot_digest_checked = Some(zxid);
        Ok(())
    }

    /// One logged entry: skipped if the snapshot holds it, else checked to follow the last
    /// one, applied, and its digest compared.
    fn apply(&mut self, path: &Path, offset: u64, entry: LogEntry) -> Result<()> {
        let zxid = entry.header.zxid;
        if zxid <= self.restored.snapshot_zxid {
            return Ok(());
        }
        let previous = self.previous;
        let follows = if epoch(zxid) == epoch(previous) {
            zxid == previous + 1
        } else {
            epoch(zxid) > epoch(previous)
        };
        if !follows && zxid > previous {
            return Err(ZkDataError::Gap {
                path: path.to_path_buf(),
                offset,
                previous,
                found: zxid,
                after: self.previous_file.clone(),
            });
        }
        if !follows {
            return Err(ZkDataError::Corrupt {
                path: path.to_path_buf(),
                offset,
                detail: format!(
                    "zxid {zxid:#x} does not follow {previous:#x}: the log goes backwards"
                ),
            });
        }
        process(&mut self.tree, &mut self.sessions, &entry);
        self.restored.txns_replayed += 1;
        self.check_snapshot_digest(zxid)?;
        // `compareDigest`: each logged digest once the snapshot's has been reached.
        let logged = entry.digest.filter(|d| d.version == DIGEST_VERSION);
        if let (None, Some(d)) = (self.pending, logged) {
            if d.tree_digest != self.tree.digest() {
                return Err(ZkDataError::DigestMismatch {
                    zxid,
                    source_of: format!(
                        "the digest logged with it in {} at byte offset {offset}",
                        path.display()
                    ),
                    expected: d.tree_digest,
                    found: self.tree.digest(),
                });
            }
            self.restored.txn_digests_checked += 1;
        }
        self.previous = zxid;
        self.previous_file = Some(path.to_path_buf());
        Ok(())
    }

    /// The checks after the last entry, then ZooKeeper's dead-session clean-up.
    fn finish(mut self) -> Result<Restored> {
        if let Some(d) = self.pending {
            tracing::warn!(
                zxid = format!("{:#x}", d.zxid),
                "the logs never reach the zxid of the snapshot's digest; it was not compared"
            );
            self.restored.snapshot_digest_unreached = Some(d.zxid);
        }
        let last = self.tree.last_processed_zxid;
        // A newer snapshot that was skipped proves the server got that far: the logs must too.
        let newest_skipped = self
            .restored
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
        let mut dead: Vec<i64> = self
            .tree
            .sessions_with_ephemerals()
            .into_iter()
            .filter(|s| !self.sessions.contains_key(s))
            .collect();
        dead.sort_unstable();
        for session in &dead {
            self.tree.kill_session(*session, last, None);
        }
        self.restored.dead_sessions = dead;
        self.restored.last_zxid = last;
        self.restored.tree = self.tree;
        self.restored.sessions = self.sessions;
        Ok(self.restored)
    }
}

/// The log file that starts at or before the snapshot and every later one
/// (`FileTxnLog.getLogFiles`), in order.
fn replay_logs(source: &Source, replay: &mut Replay, progress: Progress<'_>) -> Result<()> {
    let logs = txn_log::list(&source.log_dir)?;
    let snapshot_zxid = replay.restored.snapshot_zxid;
    let first = logs
        .iter()
        .rposition(|f| f.first_zxid <= snapshot_zxid)
        .unwrap_or(0);
    let logs: Vec<LogFile> = logs.into_iter().skip(first).collect();
    let total: u64 = logs.iter().map(|f| f.len).sum();
    let mut done = 0u64;
    for (i, log) in logs.iter().enumerate() {
        let base = done;
        let end = txn_log::read_file(
            &log.path,
            &mut |offset, entry| replay.apply(&log.path, offset, entry),
            &mut |n| progress(Stage::Log, base + n, total),
        )?;
        done += log.len;
        progress(Stage::Log, done, total);
        replay.restored.logs_read.push(log.path.clone());
        match end {
            FileEnd::Clean => {}
            FileEnd::Torn { offset, reason } => {
                tracing::warn!(path = %log.path.display(), offset, reason, "the last entry of this log file is incomplete; it ends here, as ZooKeeper ends it");
                replay
                    .restored
                    .torn
                    .push((log.path.clone(), offset, reason));
            }
            FileEnd::Empty if i + 1 == logs.len() => {}
            FileEnd::Empty => {
                return Err(ZkDataError::Corrupt {
                    path: log.path.clone(),
                    offset: 0,
                    detail: "an empty log file (no header) before newer ones".into(),
                })
            }
        }
    }
    Ok(())
}
