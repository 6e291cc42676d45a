//! Writing the imported tree as a meerkat data dir, all or nothing: everything goes to a
//! temporary directory beside the target, is fsynced, and is renamed into place as the last
//! step. A crash or an error leaves no `meerkat-1` directory (and the temporary one is removed
//! on error); an existing meerkat data dir is never touched.

use crate::error::{Result, ZkDataError};
use std::path::{Path, PathBuf};
use storage::layout::FORMAT_DIR;
use storage::snapshot_file::{self, Stamp};
use storage::{epoch, Layout, RealFs};
use tree::DataTree;

/// What was written.
#[derive(Debug, Clone)]
pub struct WrittenDir {
    pub dir: PathBuf,
    pub snapshot: PathBuf,
    pub bytes: u64,
}

/// The `meerkat-1` directory an import into `data_dir` creates.
pub fn target(data_dir: &Path) -> PathBuf {
    data_dir.join(FORMAT_DIR)
}

/// Fails unless `data_dir` can take an import (no meerkat data in it yet).
pub fn check_target(data_dir: &Path) -> Result<()> {
    let dir = target(data_dir);
    if dir.exists() {
        return Err(ZkDataError::Invalid {
            path: dir,
            detail: "already holds meerkat data; import only into a data dir without it (move \
                     it away first if it is to be replaced)"
                .into(),
        });
    }
    Ok(())
}

/// Writes `tree` as the only snapshot of a new meerkat data dir under `data_dir`, with the
/// epoch files set to the epoch of its zxid.
pub fn write(tree: &DataTree, data_dir: &Path) -> Result<WrittenDir> {
    check_target(data_dir)?;
    std::fs::create_dir_all(data_dir).map_err(ZkDataError::io("create", data_dir))?;
    let temp = data_dir.join(format!(".{FORMAT_DIR}.import-{}", std::process::id()));
    if temp.exists() {
        std::fs::remove_dir_all(&temp).map_err(ZkDataError::io("remove", &temp))?;
    }
    std::fs::create_dir(&temp).map_err(ZkDataError::io("create", &temp))?;
    let result = fill(tree, &temp).and_then(|(snapshot, bytes)| {
        let dir = target(data_dir);
        std::fs::rename(&temp, &dir).map_err(ZkDataError::io("rename into place", &dir))?;
        sync_dir(data_dir)?;
        let snapshot = dir.join(snapshot.file_name().unwrap_or_default());
        Ok(WrittenDir {
            dir,
            snapshot,
            bytes,
        })
    });
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&temp);
    }
    result
}

fn fill(tree: &DataTree, dir: &Path) -> Result<(PathBuf, u64)> {
    let layout = Layout {
        snap_dir: dir.to_path_buf(),
        wal_dir: dir.to_path_buf(),
    };
    let created_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let written = snapshot_file::write(
        &RealFs,
        &layout,
        &tree.freeze(),
        Stamp {
            created_ms,
            generation: 0,
            label: 0,
        },
    )?;
    let zxid_epoch = (tree.last_processed_zxid() >> 32) as u32;
    epoch::save(&RealFs, &layout, epoch::ACCEPTED, zxid_epoch)?;
    epoch::save(&RealFs, &layout, epoch::CURRENT, zxid_epoch)?;
    Ok((written.path, written.bytes))
}

pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(ZkDataError::io("sync directory", dir))
}
