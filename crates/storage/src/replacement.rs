//! A leader's snapshot replacing this server's log (Zab's SNAP), made crash-atomic.
//!
//! The leader's snapshot may be of an older zxid than this server's log ends at; the leader
//! then streams the transactions after it. Until that stream is durable, the old log is the
//! only copy on this disk of transactions this server may have acknowledged, and a crash must
//! recover it (ZAB.md §2: an acknowledged proposal is never forgotten). So the replacement
//! happens in two steps:
//!
//! * [`begin`]: the snapshot is saved *pending* (`snap-<zxid>.snap.pending`), and the old
//!   generation's log segments and every snapshot newer than the new one are set aside
//!   (`<name>.replaced`), out of the way of the new generation's segments. Recovery that finds
//!   a pending snapshot undoes the replacement ([`settle`]): the new generation's segments go,
//!   what was set aside comes back.
//! * [`commit`]: once the stream is durable, one rename makes the snapshot the one recovery
//!   loads; what was set aside is then deleted (recovery finishes that if a crash cuts it short).

use crate::error::{Result, StorageError};
use crate::fs::FileSystem;
use crate::layout::{self, Layout};
use crate::snapshot_file::{self, Loaded};
use crate::wal;
use std::path::{Path, PathBuf};

const PENDING_SUFFIX: &str = ".pending";
const SET_ASIDE_SUFFIX: &str = ".replaced";

/// The name a snapshot has until its replacement commits.
pub fn pending_path(layout: &Layout, zxid: i64) -> PathBuf {
    with_suffix(&layout.snap_path(zxid), PENDING_SUFFIX)
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// What [`begin`] is asked to do besides saving the snapshot.
#[derive(Debug, Clone, Copy)]
pub struct Begin {
    /// The new generation; one still pending is reused, so that every file of an
    /// uncommitted generation is told apart from the committed one by the same number.
    pub generation: u32,
    /// An earlier replacement is still pending: the log segments now on disk are of its
    /// uncommitted generation (the caller's log reset deletes them), not ones to set aside.
    pub earlier_pending: bool,
    /// Planted bug: leave snapshots newer than the new one where recovery finds them.
    pub keep_newer_snapshots: bool,
}

/// Saves `bytes` as a pending snapshot of generation `how.generation` and sets aside what it
/// replaces. The caller then resets its log writer to the snapshot's zxid and generation.
pub fn begin(fs: &dyn FileSystem, layout: &Layout, bytes: &[u8], how: Begin) -> Result<Loaded> {
    let loaded = snapshot_file::save_bytes_at(fs, layout, bytes, how.generation, |zxid| {
        pending_path(layout, zxid)
    })?;
    let zxid = loaded.header.zxid;
    if !how.earlier_pending {
        for first in names(fs, &layout.wal_dir, layout::parse_wal_name)? {
            set_aside(fs, &layout.wal_path(first))?;
        }
    }
    if !how.keep_newer_snapshots {
        for at in names(fs, &layout.snap_dir, layout::parse_snap_name)? {
            if at > zxid {
                set_aside(fs, &layout.snap_path(at))?;
            }
        }
    }
    // An earlier pending snapshot of another zxid is of a replacement abandoned for this one.
    for at in names(fs, &layout.snap_dir, parse_pending_name)? {
        if at != zxid {
            remove(fs, &pending_path(layout, at))?;
        }
    }
    sync_both(fs, layout)?;
    Ok(loaded)
}

/// Makes the pending snapshot of `zxid` the one recovery loads, then deletes what it replaced.
pub fn commit(fs: &dyn FileSystem, layout: &Layout, zxid: i64) -> Result<()> {
    let (from, to) = (pending_path(layout, zxid), layout.snap_path(zxid));
    fs.rename(&from, &to)
        .map_err(StorageError::io("commit the leader's snapshot", &from))?;
    fs.sync_dir(&layout.snap_dir).map_err(StorageError::io(
        "sync snapshot directory",
        &layout.snap_dir,
    ))?;
    remove_set_aside(fs, layout)
}

/// What recovery found of a replacement a crash interrupted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// Nothing to do.
    Clean,
    /// A replacement had not committed: this server's state from before it is back.
    UndidPending,
    /// A replacement had committed; the files it replaced are deleted now.
    FinishedCommit,
}

/// Start-up: brings the data dir back to one whole generation (see the module doc).
pub fn settle(fs: &dyn FileSystem, layout: &Layout) -> Result<Settled> {
    let pending = names(fs, &layout.snap_dir, parse_pending_name)?;
    if !pending.is_empty() {
        undo(fs, layout, &pending)?;
        return Ok(Settled::UndidPending);
    }
    let leftover = !set_aside_names(fs, &layout.wal_dir)?.is_empty()
        || !set_aside_names(fs, &layout.snap_dir)?.is_empty();
    if leftover {
        remove_set_aside(fs, layout)?;
        return Ok(Settled::FinishedCommit);
    }
    Ok(Settled::Clean)
}

/// Deletes the uncommitted generation's segments, restores what was set aside, and only then
/// the pending snapshots, so that a crash part way leaves a state this function undoes again.
fn undo(fs: &dyn FileSystem, layout: &Layout, pending: &[i64]) -> Result<()> {
    let mut uncommitted = u32::MAX;
    for &at in pending {
        let header = snapshot_file::read_header(fs, &pending_path(layout, at))?;
        uncommitted = uncommitted.min(header.generation);
    }
    for first in names(fs, &layout.wal_dir, layout::parse_wal_name)? {
        let path = layout.wal_path(first);
        let of_uncommitted = match wal::read_header(fs, &path)
            .map_err(StorageError::io("read log segment header", &path))?
        {
            Ok(header) => header.generation >= uncommitted,
            // The old generation's segments were whole when set aside, so a segment whose
            // creation a crash cut short is the new generation's; anything else is damage.
            Err(why) => {
                let bytes = fs
                    .read_all(&path)
                    .map_err(StorageError::io("read log segment", &path))?;
                if !bytes.iter().skip(wal::HEADER_LEN).all(|&b| b == 0) {
                    return Err(StorageError::Corrupt {
                        what: "log segment header",
                        path,
                        offset: 0,
                        detail: why.to_string(),
                    });
                }
                true
            }
        };
        if of_uncommitted {
            tracing::info!(path = %path.display(), "removing a log segment of a snapshot sync a crash interrupted");
            remove(fs, &path)?;
        }
    }
    for dir in [&layout.wal_dir, &layout.snap_dir] {
        for name in set_aside_names(fs, dir)? {
            let from = dir.join(&name);
            let to = dir.join(&name[..name.len() - SET_ASIDE_SUFFIX.len()]);
            tracing::info!(path = %to.display(), "restoring a file a snapshot sync had set aside (it never completed)");
            fs.rename(&from, &to)
                .map_err(StorageError::io("restore set-aside file", &from))?;
        }
    }
    sync_both(fs, layout)?;
    for &at in pending {
        let path = pending_path(layout, at);
        tracing::warn!(path = %path.display(), "dropping a leader's snapshot whose sync a crash interrupted; this server resumes from its own state");
        remove(fs, &path)?;
    }
    fs.sync_dir(&layout.snap_dir).map_err(StorageError::io(
        "sync snapshot directory",
        &layout.snap_dir,
    ))
}

fn remove_set_aside(fs: &dyn FileSystem, layout: &Layout) -> Result<()> {
    for dir in [&layout.wal_dir, &layout.snap_dir] {
        for name in set_aside_names(fs, dir)? {
            remove(fs, &dir.join(name))?;
        }
    }
    sync_both(fs, layout)
}

fn set_aside(fs: &dyn FileSystem, path: &Path) -> Result<()> {
    let to = with_suffix(path, SET_ASIDE_SUFFIX);
    fs.rename(path, &to)
        .map_err(StorageError::io("set aside a replaced file", path))
}

fn remove(fs: &dyn FileSystem, path: &Path) -> Result<()> {
    match fs.remove(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(StorageError::io("remove", path)(e))
        }
        _ => Ok(()),
    }
}

fn sync_both(fs: &dyn FileSystem, layout: &Layout) -> Result<()> {
    for dir in [&layout.wal_dir, &layout.snap_dir] {
        fs.sync_dir(dir)
            .map_err(StorageError::io("sync data directory", dir))?;
    }
    Ok(())
}

fn names(fs: &dyn FileSystem, dir: &Path, parse: impl Fn(&str) -> Option<i64>) -> Result<Vec<i64>> {
    let listed = fs.list(dir).map_err(StorageError::io("list", dir))?;
    let mut found: Vec<i64> = listed.iter().filter_map(|n| parse(n)).collect();
    found.sort_unstable();
    Ok(found)
}

fn set_aside_names(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<String>> {
    let listed = fs.list(dir).map_err(StorageError::io("list", dir))?;
    Ok(listed
        .into_iter()
        .filter(|n| n.ends_with(SET_ASIDE_SUFFIX))
        .collect())
}

fn parse_pending_name(name: &str) -> Option<i64> {
    layout::parse_snap_name(name.strip_suffix(PENDING_SUFFIX)?)
}
