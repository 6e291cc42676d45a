//! Replacing a small file so that a crash leaves the old content or the new, never a torn mix:
//! write a temporary file, fsync it, rename it into place, fsync the directory. Used for the
//! epoch files and the diskless checkpoint (snapshots stream their bytes the same way).

use crate::error::{Result, StorageError};
use crate::fs::FileSystem;
use crate::layout::TEMP_SUFFIX;
use std::path::{Path, PathBuf};

/// Durably makes `path` (in `dir`) hold exactly `bytes`.
pub fn replace(fs: &dyn FileSystem, dir: &Path, path: &Path, bytes: &[u8]) -> Result<()> {
    let mut temp = path.to_path_buf().into_os_string();
    temp.push(TEMP_SUFFIX);
    let temp = PathBuf::from(temp);
    let _ = fs.remove(&temp);
    let mut file = fs
        .open_write(&temp, true)
        .map_err(StorageError::io("create temporary file", &temp))?;
    file.write_at(0, bytes)
        .map_err(StorageError::io("write temporary file", &temp))?;
    file.sync_data()
        .map_err(StorageError::io("fsync temporary file", &temp))?;
    fs.rename(&temp, path)
        .map_err(StorageError::io("rename into place", path))?;
    fs.sync_dir(dir)
        .map_err(StorageError::io("sync data directory", dir))
}
