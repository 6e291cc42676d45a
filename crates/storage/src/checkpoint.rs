//! The diskless mode's failure checkpoint (thesis Alg. 4.2/4.3, DESIGN.md §5): when a server
//! loses its leader or its quorum it writes a complete snapshot, then this file with the
//! proposals it acknowledged that were not committed yet. While the file exists, the server's
//! disk holds everything it ever acknowledged ("whole"), so after a restart it may vote at once
//! and re-propose those proposals if it leads.
//!
//! The file must be gone (durably) before the server acknowledges anything new, or a restart
//! would trust a checkpoint that no longer covers what it acknowledged: [`remove`] is called
//! before the first append after a checkpoint or a boot.
//!
//! Format, big-endian: magic `MKCHKPT1`, the zxid of the snapshot written with it (i64), the
//! proposal count (u32), then each proposal as a framed record (length, CRC32C, jute txn), then
//! an end frame of zeros. Written to a temporary file, fsynced, renamed, directory fsynced.

use crate::error::{Result, StorageError};
use crate::fs::FileSystem;
use crate::layout::Layout;
use crate::record::{read_frame, write_frame, Frame, FRAME_HEADER_LEN};
use crate::wal::encode_txn;
use proto::jute::{Reader, Record};
use proto::txn::Txn;
use std::path::PathBuf;

const MAGIC: &[u8; 8] = b"MKCHKPT1";
pub const FILE_NAME: &str = "checkpoint";
const HEADER_LEN: usize = 8 + 8 + 4;

/// A checkpoint read back at boot.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// The zxid of the complete snapshot written just before this file.
    pub snapshot_zxid: i64,
    /// The acknowledged proposals after that snapshot, in zxid order.
    pub proposals: Vec<Txn>,
}

fn path(layout: &Layout) -> PathBuf {
    layout.snap_dir.join(FILE_NAME)
}

/// Durably records `proposals` (after the snapshot at `snapshot_zxid`) as a whole checkpoint.
pub fn write(
    fs: &dyn FileSystem,
    layout: &Layout,
    snapshot_zxid: i64,
    proposals: &[Txn],
) -> Result<()> {
    let path = path(layout);
    let mut bytes = Vec::with_capacity(HEADER_LEN + proposals.len() * 128 + FRAME_HEADER_LEN);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&snapshot_zxid.to_be_bytes());
    bytes.extend_from_slice(&(proposals.len() as u32).to_be_bytes());
    for txn in proposals {
        write_frame(&mut bytes, &encode_txn(txn));
    }
    bytes.extend_from_slice(&[0; FRAME_HEADER_LEN]);
    crate::atomic_file::replace(fs, &layout.snap_dir, &path, &bytes)
}

/// The checkpoint, if there is a whole one. A damaged file is reported as an error: the caller
/// must then treat the server as having lost what it acknowledged.
pub fn read(fs: &dyn FileSystem, layout: &Layout) -> Result<Option<Checkpoint>> {
    let path = path(layout);
    let bytes = match fs.read_all(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StorageError::io("read checkpoint", &path)(e)),
    };
    let corrupt = |offset: usize, detail: String| StorageError::Corrupt {
        what: "checkpoint",
        path: path.clone(),
        offset: offset as u64,
        detail,
    };
    let header = bytes
        .get(..HEADER_LEN)
        .ok_or_else(|| corrupt(0, "shorter than its header".into()))?;
    if &header[..8] != MAGIC {
        return Err(corrupt(0, "not a meerkat checkpoint".into()));
    }
    let mut zxid = [0u8; 8];
    zxid.copy_from_slice(&header[8..16]);
    let mut count = [0u8; 4];
    count.copy_from_slice(&header[16..20]);
    let count = u32::from_be_bytes(count) as usize;
    let mut proposals = Vec::with_capacity(count.min(bytes.len() / FRAME_HEADER_LEN));
    let mut at = HEADER_LEN;
    loop {
        match read_frame(&bytes, at) {
            Frame::Valid { payload, next } => {
                let txn = Txn::decode(&mut Reader::new(payload))
                    .map_err(|e| corrupt(at, format!("undecodable proposal: {e}")))?;
                proposals.push(txn);
                at = next;
            }
            Frame::End => break,
            Frame::Invalid { reason } => return Err(corrupt(at, reason.into())),
        }
    }
    if proposals.len() != count {
        return Err(corrupt(
            at,
            format!(
                "{} proposals where the header says {count}",
                proposals.len()
            ),
        ));
    }
    if proposals
        .windows(2)
        .any(|w| w[0].header.zxid >= w[1].header.zxid)
    {
        return Err(corrupt(HEADER_LEN, "proposals out of zxid order".into()));
    }
    Ok(Some(Checkpoint {
        snapshot_zxid: i64::from_be_bytes(zxid),
        proposals,
    }))
}

/// Zab's TRUNC on a server whose checkpoint is still whole: durably drops the saved proposals
/// after `zxid`, which the leader discarded. A damaged checkpoint is removed instead (the
/// server then boots amnesiac, which is always safe).
pub fn truncate_after(fs: &dyn FileSystem, layout: &Layout, zxid: i64) -> Result<()> {
    match read(fs, layout) {
        Ok(None) => Ok(()),
        Ok(Some(checkpoint)) => {
            let kept: Vec<Txn> = checkpoint
                .proposals
                .iter()
                .filter(|t| t.header.zxid <= zxid)
                .cloned()
                .collect();
            if kept.len() == checkpoint.proposals.len() {
                return Ok(());
            }
            write(fs, layout, checkpoint.snapshot_zxid, &kept)
        }
        Err(e) => {
            tracing::warn!(error = %e, "diskless: removing a damaged failure checkpoint at TRUNC");
            remove(fs, layout)
        }
    }
}

/// Durably forgets the checkpoint: from now on this server may acknowledge what it does not
/// hold on disk.
pub fn remove(fs: &dyn FileSystem, layout: &Layout) -> Result<()> {
    let path = path(layout);
    match fs.remove(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(StorageError::io("remove checkpoint", &path)(e)),
    }
    fs.sync_dir(&layout.snap_dir)
        .map_err(StorageError::io("sync data directory", &layout.snap_dir))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faulty_fs::{FaultyFs, Tear};
    use proto::txn::{ErrorTxn, TxnBody, TxnHeader};
    use std::path::Path;

    fn txn(zxid: i64) -> Txn {
        Txn {
            header: TxnHeader {
                client_id: 7,
                cxid: 1,
                zxid,
                time: 0,
                op_type: -1,
            },
            body: TxnBody::Error(ErrorTxn { err: 0 }),
        }
    }

    fn setup() -> (FaultyFs, Layout) {
        let layout = Layout::new(Path::new("/d"), Path::new("/d"));
        let fs = FaultyFs::new();
        fs.create_dir_all(&layout.snap_dir).expect("dir");
        (fs, layout)
    }

    #[test]
    fn a_checkpoint_reads_back_and_is_gone_after_remove() {
        let (fs, layout) = setup();
        assert_eq!(read(&fs, &layout).expect("read"), None);
        let proposals = vec![txn(11), txn(12), txn(13)];
        write(&fs, &layout, 10, &proposals).expect("write");
        let back = read(&fs, &layout).expect("read").expect("present");
        assert_eq!(back.snapshot_zxid, 10);
        assert_eq!(back.proposals, proposals);
        remove(&fs, &layout).expect("remove");
        assert_eq!(read(&fs, &layout).expect("read"), None);
        remove(&fs, &layout).expect("removing twice is fine");
    }

    #[test]
    fn a_crash_leaves_the_old_state_or_the_new_never_a_torn_checkpoint() {
        let (fs, layout) = setup();
        for k in 0..6 {
            let fs = fs.crash_image(Tear::None);
            fs.crash_after(k);
            let _ = write(&fs, &layout, 10, &[txn(11), txn(12)]);
            for tear in [Tear::None, Tear::Prefix(k + 3)] {
                let image = fs.crash_image(tear);
                match read(&image, &layout).expect("never damaged after a crash") {
                    None => {}
                    Some(c) => assert_eq!(c.proposals.len(), 2),
                }
            }
        }
    }

    #[test]
    fn trunc_cuts_the_saved_proposals_the_leader_discarded() {
        let (fs, layout) = setup();
        truncate_after(&fs, &layout, 5).expect("no checkpoint: nothing to do");
        assert_eq!(read(&fs, &layout).expect("read"), None);
        write(&fs, &layout, 10, &[txn(11), txn(12), txn(13)]).expect("write");
        truncate_after(&fs, &layout, 13).expect("nothing after 13");
        assert_eq!(
            read(&fs, &layout)
                .expect("read")
                .expect("whole")
                .proposals
                .len(),
            3
        );
        truncate_after(&fs, &layout, 11).expect("truncate");
        let back = read(&fs, &layout).expect("read").expect("still whole");
        assert_eq!(back.snapshot_zxid, 10);
        assert_eq!(back.proposals, vec![txn(11)]);
        let len = fs.len(&path(&layout)).expect("len");
        fs.flip_bit(&path(&layout), len as usize - 12, 3)
            .expect("flip");
        truncate_after(&fs, &layout, 10).expect("a damaged checkpoint is removed");
        assert_eq!(read(&fs, &layout).expect("read"), None);
    }

    #[test]
    fn damage_is_reported_not_trusted() {
        let (fs, layout) = setup();
        write(&fs, &layout, 10, &[txn(11), txn(12)]).expect("write");
        let len = fs.len(&path(&layout)).expect("len");
        fs.flip_bit(&path(&layout), len as usize - 12, 3)
            .expect("flip");
        assert!(read(&fs, &layout).is_err(), "a flipped bit must not pass");
    }
}
