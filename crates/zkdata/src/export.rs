//! `meerkat data export --to-zookeeper`: a meerkat data dir's state as a ZooKeeper data dir
//! that ZooKeeper 3.9 starts from: `version-2/snapshot.<zxid>` plus the `acceptedEpoch` and
//! `currentEpoch` files a quorum member reads. Written to a temporary directory and renamed into
//! place, so the ZooKeeper dir either gets a whole `version-2` or none.

use crate::error::{Result, ZkDataError};
use crate::meerkat_dir::sync_dir;
use crate::progress::Progress;
use crate::snapshot_writer::{self, WrittenSnapshot};
use std::path::{Path, PathBuf};
use tree::DataTree;

#[derive(Debug, Clone)]
pub struct Exported {
    pub snapshot: PathBuf,
    pub written: WrittenSnapshot,
}

/// Writes `tree` as a new ZooKeeper data dir under `zk_data_dir` (which must not hold a
/// `version-2` directory yet).
pub fn export(tree: &DataTree, zk_data_dir: &Path, progress: Progress<'_>) -> Result<Exported> {
    let target = zk_data_dir.join("version-2");
    if target.exists() {
        return Err(ZkDataError::Invalid {
            path: target,
            detail: "already exists; export only into a ZooKeeper data dir without one".into(),
        });
    }
    std::fs::create_dir_all(zk_data_dir).map_err(ZkDataError::io("create", zk_data_dir))?;
    let temp = zk_data_dir.join(format!(".version-2.export-{}", std::process::id()));
    if temp.exists() {
        std::fs::remove_dir_all(&temp).map_err(ZkDataError::io("remove", &temp))?;
    }
    std::fs::create_dir(&temp).map_err(ZkDataError::io("create", &temp))?;
    let result = (|| {
        let zxid = tree.last_processed_zxid();
        let name = format!("snapshot.{:x}", zxid as u64);
        let written = snapshot_writer::write(tree, &temp.join(&name), progress)?;
        let epoch = (zxid as u64 >> 32).to_string();
        for file in ["acceptedEpoch", "currentEpoch"] {
            let path = temp.join(file);
            std::fs::write(&path, &epoch).map_err(ZkDataError::io("write", &path))?;
        }
        sync_dir(&temp)?;
        std::fs::rename(&temp, &target).map_err(ZkDataError::io("rename into place", &target))?;
        sync_dir(zk_data_dir)?;
        Ok(Exported {
            snapshot: target.join(name),
            written,
        })
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&temp);
    }
    result
}
