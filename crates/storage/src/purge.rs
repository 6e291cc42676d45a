//! Retention (`autopurge.snapRetainCount`): keep the newest snapshots and the log needed to
//! recover from the oldest of them; delete the rest.

use crate::error::{Result, StorageError};
use crate::fs::FileSystem;
use crate::layout::{self, Layout};
use std::path::PathBuf;

/// ZooKeeper never keeps fewer than three snapshots.
pub const RETAIN_MIN: usize = 3;

/// Deletes old snapshots and log segments; returns the files removed.
pub fn purge(fs: &dyn FileSystem, layout: &Layout, retain: usize) -> Result<Vec<PathBuf>> {
    purge_keeping(fs, layout, retain.max(RETAIN_MIN))
}

/// As [`purge`], keeping exactly `retain` snapshots (at least one): the diskless mode's
/// `NumberToRetain`, where the snapshots are the only copy and a log to replay does not exist.
pub fn purge_keeping(fs: &dyn FileSystem, layout: &Layout, retain: usize) -> Result<Vec<PathBuf>> {
    let retain = retain.max(1);
    let mut snaps: Vec<i64> = list(fs, &layout.snap_dir)?
        .iter()
        .filter_map(|n| layout::parse_snap_name(n))
        .collect();
    snaps.sort_unstable();
    if snaps.len() < retain {
        return Ok(Vec::new());
    }
    let oldest_kept = snaps[snaps.len() - retain];
    let mut removed = Vec::new();
    for &zxid in &snaps[..snaps.len() - retain] {
        removed.push(layout.snap_path(zxid));
    }
    let mut segments: Vec<i64> = list(fs, &layout.wal_dir)?
        .iter()
        .filter_map(|n| layout::parse_wal_name(n))
        .collect();
    segments.sort_unstable();
    // Segment i holds zxids below the next one's first; it is needed unless all of those are
    // covered by the oldest kept snapshot. The newest segment is always kept.
    for pair in segments.windows(2) {
        if pair[1] <= oldest_kept.saturating_add(1) {
            removed.push(layout.wal_path(pair[0]));
        }
    }
    // Diskless: a delta file continues one full snapshot; it goes with it.
    for base in crate::delta::list(fs, layout)? {
        if base < oldest_kept {
            removed.push(crate::delta::path(layout, base));
        }
    }
    for path in &removed {
        fs.remove(path).map_err(StorageError::io("purge", path))?;
        tracing::debug!(path = %path.display(), "purged");
    }
    Ok(removed)
}

fn list(fs: &dyn FileSystem, dir: &std::path::Path) -> Result<Vec<String>> {
    fs.list(dir).map_err(StorageError::io("list", dir))
}
