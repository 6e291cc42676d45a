//! Zab's two epoch numbers (ZAB.md: `acceptedEpoch`, `currentEpoch`), each in a tiny file of its
//! own beside the snapshots. They are written rarely and must never go backwards or be torn:
//! each write goes to a temporary file, is fsynced, renamed into place, and the directory
//! fsynced, so a crash leaves the old value or the new one.

use crate::error::{Result, StorageError};
use crate::fs::FileSystem;
use crate::layout::Layout;

pub const ACCEPTED: &str = "acceptedEpoch";
pub const CURRENT: &str = "currentEpoch";

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Epochs {
    pub accepted: u32,
    pub current: u32,
}

/// Both epochs; a missing file is epoch 0 (a server that never joined an ensemble).
pub fn read(fs: &dyn FileSystem, layout: &Layout) -> Result<Epochs> {
    Ok(Epochs {
        accepted: read_one(fs, layout, ACCEPTED)?,
        current: read_one(fs, layout, CURRENT)?,
    })
}

fn read_one(fs: &dyn FileSystem, layout: &Layout, name: &str) -> Result<u32> {
    let path = layout.snap_dir.join(name);
    let bytes = match fs.read_all(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => {
            return Err(StorageError::Io {
                op: "read epoch",
                path,
                source: e,
            })
        }
    };
    std::str::from_utf8(&bytes)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| StorageError::Corrupt {
            what: "epoch file",
            path,
            offset: 0,
            detail: format!(
                "{:?} is not an epoch number",
                String::from_utf8_lossy(&bytes)
            ),
        })
}

/// Durably records an epoch under `name` ([`ACCEPTED`] or [`CURRENT`]).
pub fn save(fs: &dyn FileSystem, layout: &Layout, name: &str, epoch: u32) -> Result<()> {
    let path = layout.snap_dir.join(name);
    crate::atomic_file::replace(fs, &layout.snap_dir, &path, format!("{epoch}\n").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faulty_fs::{FaultyFs, Tear};
    use std::path::Path;

    #[test]
    fn epochs_survive_crashes_whole_and_never_torn() {
        let layout = Layout::new(Path::new("/d"), Path::new("/d"));
        let fs = FaultyFs::new();
        fs.create_dir_all(&layout.snap_dir).expect("dir");
        assert_eq!(read(&fs, &layout).expect("read"), Epochs::default());
        save(&fs, &layout, ACCEPTED, 4).expect("save");
        save(&fs, &layout, CURRENT, 3).expect("save");
        // Crash at every point of the next save (5 mutating operations; the image starts
        // counting at zero): the value read back is the old or the new.
        for k in 0..6 {
            let fs = fs.crash_image(Tear::None);
            fs.crash_after(k);
            let _ = save(&fs, &layout, ACCEPTED, 5);
            for tear in [Tear::None, Tear::Prefix(k + 1)] {
                let image = fs.crash_image(tear);
                let epochs = read(&image, &layout).expect("readable after any crash");
                assert!(epochs.accepted == 4 || epochs.accepted == 5, "{epochs:?}");
                assert_eq!(epochs.current, 3);
            }
        }
    }
}
