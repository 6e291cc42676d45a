//! Diskless mode's incremental busy snapshots: the transactions applied since the newest full
//! snapshot, appended in batches to one file that continues it. A full snapshot costs in
//! proportion to the tree; a batch costs in proportion to what changed, so busy snapshots can
//! follow writes closely without a core spent rewriting the tree (DESIGN.md §5). Recovery
//! loads the newest full snapshot, then the delta file that continues it, up to its last whole
//! record; a full snapshot (and a new delta file) is taken again once the files hold four
//! times as many stale bytes (overwritten, deleted) as a snapshot of the tree would take
//! (compaction: each byte of transactions that made something stale then costs a quarter
//! byte of snapshot, and recovery reads at most five snapshots' worth).
//!
//! Only committed, applied transactions are written, so replaying them never needs Zab; and
//! no acknowledgement waits for a batch (that is what makes the mode diskless).
//!
//! Name `delta-<base zxid, 16 hex digits>.txns` in the snapshot directory. Format, big-endian:
//! magic `MKDELTA1`, the generation (u32) and zxid (i64) of the full snapshot it continues, a
//! CRC32C of those 20 bytes; then framed records (length, CRC32C, payload), each payload a kind
//! byte and its body: 0, a jute transaction; 1, the epoch label (u32) of the state up to this
//! point (one closes every batch). Each batch is appended and fsynced; a crash may tear the
//! last one, whose whole records still apply but whose label is then not reached: the label
//! claims the state holds its epoch's initial history, which a torn batch may lack (files of
//! earlier builds open each batch with its label; they replay as they always did). The file
//! is preallocated a step at a time and its zeros end the records (as in a log segment): a
//! batch then leaves the file's size alone, so its fsync writes no inode (about a fifth of a
//! batch's CPU here, measured).

use crate::error::{Result, StorageError};
use crate::fs::{FileSystem, WritableFile};
use crate::layout::Layout;
use crate::record::{crc, read_frame, Frame, FRAME_HEADER_LEN};
use proto::jute::{Reader, Record};
use proto::txn::Txn;
use std::path::PathBuf;

const MAGIC: &[u8; 8] = b"MKDELTA1";
pub const HEADER_LEN: usize = 8 + 4 + 8 + 4;
const PREFIX: &str = "delta-";
const SUFFIX: &str = ".txns";
const KIND_TXN: u8 = 0;
const KIND_LABEL: u8 = 1;
/// The most a delta file is grown by when a batch does not fit (a few seconds of writes at
/// full speed); less when `preAllocSize` is smaller (the simulator's disk holds it in memory).
pub const PREALLOCATE_STEP_MAX: u64 = 4 << 20;

/// How much a delta file grows at a time, given `preAllocSize` (the log's step).
pub fn preallocate_step(segment_bytes: u64) -> u64 {
    segment_bytes.clamp(4096, PREALLOCATE_STEP_MAX)
}

/// The delta file continuing the full snapshot of `base_zxid`.
pub fn path(layout: &Layout, base_zxid: i64) -> PathBuf {
    layout
        .snap_dir
        .join(format!("{PREFIX}{base_zxid:016x}{SUFFIX}"))
}

/// The base zxid of a delta file named by [`path`].
pub fn parse_name(name: &str) -> Option<i64> {
    let hex = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    if hex.len() != 16 {
        return None;
    }
    u64::from_str_radix(hex, 16).ok().map(|v| v as i64)
}

fn encode_header(generation: u32, base_zxid: i64) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&generation.to_be_bytes());
    h[12..20].copy_from_slice(&base_zxid.to_be_bytes());
    let sum = crc(&h[..20]);
    h[20..24].copy_from_slice(&sum.to_be_bytes());
    h
}

/// (generation, base zxid) of a delta file's header.
fn decode_header(h: &[u8]) -> std::result::Result<(u32, i64), &'static str> {
    let h = h.get(..HEADER_LEN).ok_or("shorter than its header")?;
    if &h[..8] != MAGIC {
        return Err("not a meerkat delta file");
    }
    if crc(&h[..20]) != u32::from_be_bytes([h[20], h[21], h[22], h[23]]) {
        return Err("header checksum mismatch");
    }
    let mut zxid = [0u8; 8];
    zxid.copy_from_slice(&h[12..20]);
    Ok((
        u32::from_be_bytes([h[8], h[9], h[10], h[11]]),
        i64::from_be_bytes(zxid),
    ))
}

/// The label frame that closes a batch: length and checksum, the kind byte, the label.
const LABEL_FRAME_LEN: usize = FRAME_HEADER_LEN + 1 + 4;

/// A spare buffer up to this size (or four times the batch before) is reused as it is.
const SPARE_KEPT_MIN: usize = 1 << 20;

/// Transactions as they are applied, framed, waiting for the next batch, which
/// [`Journal::seal`] closes with its label frame; the batch is written from this buffer as it
/// stands, and the buffer of a written batch comes back for a later journal
/// ([`Journal::next`]), so a busy diskless server allocates none.
#[derive(Debug)]
pub struct Journal {
    /// The zxid the first transaction follows (the state on disk when it began).
    pub prev_zxid: i64,
    pub last_zxid: i64,
    pub count: u32,
    /// The framed transactions, then (once sealed) the label frame.
    frames: Vec<u8>,
    sealed: bool,
}

impl Journal {
    pub fn starting_at(zxid: i64) -> Journal {
        Journal::reusing(zxid, Vec::new())
    }

    /// A journal whose frames go into `buffer` (its contents dropped, its room kept).
    fn reusing(zxid: i64, mut buffer: Vec<u8>) -> Journal {
        buffer.clear();
        Journal {
            prev_zxid: zxid,
            last_zxid: zxid,
            count: 0,
            frames: buffer,
            sealed: false,
        }
    }

    /// A journal after this one, in `spare` (the buffer of a batch already written, or a new
    /// one), with room for as much as this one held: the next batch is usually about as
    /// large, so nothing is reallocated while it fills.
    pub fn next(&self, zxid: i64, spare: Vec<u8>) -> Journal {
        // A buffer left far larger by a burst is not kept for ever.
        let keep = spare.capacity() <= 4 * self.frames.len().max(SPARE_KEPT_MIN);
        let mut next = Journal::reusing(zxid, if keep { spare } else { Vec::new() });
        next.frames.reserve(self.frames.len());
        next
    }

    fn label_frame(label: u32) -> [u8; LABEL_FRAME_LEN] {
        let mut payload = [KIND_LABEL, 0, 0, 0, 0];
        payload[1..].copy_from_slice(&label.to_be_bytes());
        let mut frame = [0u8; LABEL_FRAME_LEN];
        frame[..4].copy_from_slice(&(payload.len() as u32).to_be_bytes());
        frame[4..FRAME_HEADER_LEN].copy_from_slice(&crc(&payload).to_be_bytes());
        frame[FRAME_HEADER_LEN..].copy_from_slice(&payload);
        frame
    }

    /// Frames `txn` in place: encoded straight into the journal, its length and checksum
    /// filled in after.
    pub fn push(&mut self, txn: &Txn) {
        assert!(!self.sealed, "a sealed journal takes no more transactions");
        let start = self.frames.len();
        self.frames
            .reserve(FRAME_HEADER_LEN + 1 + txn.encoded_len());
        self.frames.extend_from_slice(&[0; FRAME_HEADER_LEN]);
        let mut w = proto::jute::Writer::wrap(std::mem::take(&mut self.frames));
        w.write_raw(&[KIND_TXN]);
        txn.encode(&mut w);
        self.frames = w.into_inner();
        let body = start + FRAME_HEADER_LEN;
        let (len, sum) = ((self.frames.len() - body) as u32, crc(&self.frames[body..]));
        self.frames[start..start + 4].copy_from_slice(&len.to_be_bytes());
        self.frames[start + 4..body].copy_from_slice(&sum.to_be_bytes());
        self.last_zxid = txn.header.zxid;
        self.count += 1;
    }

    /// Closes the batch with the epoch label of the state it brings the disk to: replay
    /// reaches the label only past every transaction of the batch.
    pub fn seal(&mut self, label: u32) {
        assert!(!self.sealed, "a journal is sealed once");
        self.frames.extend_from_slice(&Self::label_frame(label));
        self.sealed = true;
    }

    /// Planted bug: the batch opens with its label, so a tear inside it keeps the label.
    #[cfg(feature = "planted-bugs")]
    pub fn seal_opening(&mut self, label: u32) {
        assert!(!self.sealed, "a journal is sealed once");
        self.frames.splice(0..0, Self::label_frame(label));
        self.sealed = true;
    }

    /// The bytes of the batch: the transactions, then the label frame (once sealed).
    pub fn bytes(&self) -> usize {
        self.frames.len()
    }

    /// Drops the transactions (the disk fell too far behind); the buffer's room goes too.
    pub fn drop_transactions(&mut self) {
        *self = Journal::starting_at(self.prev_zxid);
    }

    /// The buffer, for a later journal.
    pub fn into_buffer(self) -> Vec<u8> {
        self.frames
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// Where a delta file's records end, and how far it is preallocated (its length on disk).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// Bytes of records after the header (where the next batch goes).
    pub written: u64,
    /// The file's length: the header, the records and the preallocated zeros after them.
    pub allocated: u64,
}

/// The delta file the last batch went to, kept open for the next one: naming, opening and
/// closing it for every batch took a fifth of a diskless leader's snapshot thread at 30,000
/// writes a second (profiled).
pub struct OpenDelta {
    of: (u32, i64),
    path: PathBuf,
    file: Box<dyn WritableFile>,
}

/// Durably appends `journal`, sealed with its label ([`Journal::seal`]), as one batch to the
/// delta file continuing the full snapshot of `base_zxid`, which ends at `end` (`written` 0:
/// the file is created), growing it `step` bytes at a time. Returns where it ends now.
/// `open` is the file the last batch went to: used when it is this one, and replaced by it
/// once the batch is durable (after a failure it is left empty).
pub fn append(
    fs: &dyn FileSystem,
    layout: &Layout,
    (generation, base_zxid): (u32, i64),
    end: Extent,
    journal: &Journal,
    step: u64,
    open: &mut Option<OpenDelta>,
) -> Result<Extent> {
    let batch = &journal.frames;
    assert!(
        journal.sealed,
        "a batch is written sealed, closed by its label"
    );
    let created = end.written == 0;
    let kept = open
        .take()
        .filter(|o| !created && o.of == (generation, base_zxid));
    let path = match &kept {
        Some(kept) => kept.path.clone(),
        None => path(layout, base_zxid),
    };
    let mut file = if let Some(kept) = kept {
        kept.file
    } else if created {
        // A file left by a chain that never got past its creation is replaced.
        let _ = fs.remove(&path);
        let mut file = fs
            .open_write(&path, true)
            .map_err(StorageError::io("create delta file", &path))?;
        file.write_at(0, &encode_header(generation, base_zxid))
            .map_err(StorageError::io("write delta file", &path))?;
        file
    } else {
        fs.open_write(&path, false)
            .map_err(StorageError::io("open delta file", &path))?
    };
    let at = HEADER_LEN as u64 + end.written;
    let needed = at + batch.len() as u64;
    let allocated = if created || needed > end.allocated {
        let grown = needed.next_multiple_of(step.max(1));
        file.preallocate(grown)
            .map_err(StorageError::io("preallocate delta file", &path))?;
        grown
    } else {
        end.allocated
    };
    file.write_at(at, batch)
        .map_err(StorageError::io("write delta file", &path))?;
    file.sync_data()
        .map_err(StorageError::io("fsync delta file", &path))?;
    if created {
        fs.sync_dir(&layout.snap_dir).map_err(StorageError::io(
            "sync snapshot directory",
            &layout.snap_dir,
        ))?;
    }
    *open = Some(OpenDelta {
        of: (generation, base_zxid),
        path,
        file,
    });
    Ok(Extent {
        written: end.written + batch.len() as u64,
        allocated,
    })
}

/// What [`replay`] applied.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Replayed {
    pub txns: u64,
    /// The label of the last batch read whole.
    pub label: Option<u32>,
    /// Bytes of whole records after the header.
    pub bytes: u64,
}

/// Applies the delta file continuing the full snapshot of `base_zxid` (generation
/// `generation`) to `tree`, which holds that snapshot, up to its last whole record. Missing,
/// or of another generation: nothing. A torn or damaged record ends it there (logged): the
/// state is then older than the disk claimed, which the diskless boot rules treat as having
/// lost what it acknowledged.
pub fn replay(
    fs: &dyn FileSystem,
    layout: &Layout,
    (generation, base_zxid): (u32, i64),
    tree: &mut tree::DataTree,
) -> Result<Replayed> {
    let path = path(layout, base_zxid);
    let bytes = match fs.read_all(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Replayed::default()),
        Err(e) => return Err(StorageError::io("read delta file", &path)(e)),
    };
    let mut replayed = Replayed::default();
    match decode_header(&bytes) {
        Ok((g, z)) if g == generation && z == base_zxid => {}
        Ok(_) => {
            tracing::warn!(path = %path.display(), "ignoring a delta file of another generation");
            return Ok(replayed);
        }
        Err(why) => {
            tracing::warn!(path = %path.display(), why, "ignoring a delta file whose header is not whole");
            return Ok(replayed);
        }
    }
    let mut at = HEADER_LEN;
    loop {
        let (payload, next) = match read_frame(&bytes, at) {
            Frame::Valid { payload, next } => (payload, next),
            Frame::End => break,
            Frame::Invalid { reason } => {
                tracing::warn!(path = %path.display(), offset = at, reason, "a delta file ends in a record a crash cut short (or damage); the state recovered stops before it");
                break;
            }
        };
        match payload.split_first() {
            Some((&KIND_LABEL, body)) if body.len() == 4 => {
                replayed.label = Some(u32::from_be_bytes([body[0], body[1], body[2], body[3]]));
            }
            Some((&KIND_TXN, body)) => {
                let txn = match Txn::decode(&mut Reader::new(body)) {
                    Ok(txn) => txn,
                    Err(e) => {
                        tracing::error!(path = %path.display(), offset = at, error = %e, "an undecodable transaction in a delta file; the state recovered stops before it");
                        break;
                    }
                };
                if txn.header.zxid <= tree.last_processed_zxid() {
                    tracing::error!(path = %path.display(), offset = at, "a delta file out of zxid order; the state recovered stops before it");
                    break;
                }
                tree.apply(&txn, &mut Vec::new());
                replayed.txns += 1;
            }
            _ => {
                tracing::error!(path = %path.display(), offset = at, "an unknown record in a delta file; the state recovered stops before it");
                break;
            }
        }
        at = next;
        replayed.bytes = (at - HEADER_LEN) as u64;
    }
    Ok(replayed)
}

/// What `meerkat data inspect` shows of a delta file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub generation: u32,
    pub base_zxid: i64,
    pub txns: u64,
    pub last_zxid: Option<i64>,
    /// Where whole records end before the file does (a torn batch, or damage).
    pub ends_early_at: Option<usize>,
}

/// Reads a delta file's header and walks its records (checksums checked, nothing applied).
pub fn summarize(fs: &dyn FileSystem, path: &std::path::Path) -> Result<Summary> {
    let bytes = fs
        .read_all(path)
        .map_err(StorageError::io("read delta file", path))?;
    let (generation, base_zxid) = decode_header(&bytes).map_err(|why| StorageError::Corrupt {
        what: "delta file header",
        path: path.to_path_buf(),
        offset: 0,
        detail: why.to_string(),
    })?;
    let mut summary = Summary {
        generation,
        base_zxid,
        txns: 0,
        last_zxid: None,
        ends_early_at: None,
    };
    let mut at = HEADER_LEN;
    loop {
        match read_frame(&bytes, at) {
            Frame::Valid { payload, next } => {
                if let Some((&KIND_TXN, body)) = payload.split_first() {
                    summary.txns += 1;
                    summary.last_zxid = crate::wal::zxid_of(body);
                }
                at = next;
            }
            Frame::End => break,
            Frame::Invalid { .. } => {
                summary.ends_early_at = Some(at);
                break;
            }
        }
    }
    Ok(summary)
}

/// The base zxids of the delta files in the snapshot directory, ascending.
pub fn list(fs: &dyn FileSystem, layout: &Layout) -> Result<Vec<i64>> {
    let names = fs
        .list(&layout.snap_dir)
        .map_err(StorageError::io("list", &layout.snap_dir))?;
    let mut found: Vec<i64> = names.iter().filter_map(|n| parse_name(n)).collect();
    found.sort_unstable();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let layout = Layout::new(std::path::Path::new("/d"), std::path::Path::new("/d"));
        for zxid in [0, 1, 0x3_0000_0007, i64::MAX] {
            let p = path(&layout, zxid);
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            assert_eq!(parse_name(name), Some(zxid));
        }
        assert_eq!(parse_name("delta-12.txns"), None);
        assert_eq!(parse_name("snap-0000000000000001.snap"), None);
    }

    fn header(zxid: i64, op: proto::OpCode) -> proto::txn::TxnHeader {
        proto::txn::TxnHeader {
            client_id: 1,
            cxid: 1,
            zxid,
            time: 0,
            op_type: op.code(),
        }
    }

    fn txn(zxid: i64) -> Txn {
        Txn {
            header: header(zxid, proto::OpCode::Delete),
            body: proto::txn::TxnBody::Delete(proto::txn::DeleteTxn {
                path: format!("/n{zxid}"),
            }),
        }
    }

    /// What a sealed journal holds is a batch as replay reads it: each transaction's frame,
    /// then the label frame; the next journal fills the same buffer.
    #[test]
    fn a_sealed_journal_is_its_transactions_then_a_label_frame_in_a_reused_buffer() {
        let mut journal = Journal::starting_at(4);
        journal.push(&txn(5));
        journal.push(&txn(6));
        journal.seal(7);
        let mut at = 0;
        let mut payloads = Vec::new();
        while let Frame::Valid { payload, next } = read_frame(&journal.frames, at) {
            payloads.push(payload.to_vec());
            at = next;
        }
        assert_eq!(at, journal.bytes(), "every byte is in a frame");
        assert_eq!(payloads.len(), 3);
        assert_eq!(payloads[2], [KIND_LABEL, 0, 0, 0, 7]);
        for (payload, zxid) in payloads[..2].iter().zip([5, 6]) {
            let decoded = Txn::decode(&mut Reader::new(&payload[1..])).expect("a transaction");
            assert_eq!((payload[0], decoded), (KIND_TXN, txn(zxid)));
        }
        let first = journal.frames.as_ptr();
        let next = journal.next(6, journal.frames.clone());
        assert_eq!((next.prev_zxid, next.count, next.bytes()), (6, 0, 0));
        let buffer = journal.into_buffer();
        let reused = Journal::starting_at(0).next(6, buffer);
        assert_eq!(
            reused.frames.as_ptr(),
            first,
            "the written batch's buffer is reused"
        );
    }

    /// Batches written through the file kept open from the last one land as they would through
    /// a file opened for each; a chain that starts over (a new full snapshot of the same
    /// zxid) replaces the file instead of writing to the one still open.
    #[test]
    fn a_kept_delta_file_writes_what_a_reopened_one_would() {
        let layout = Layout::new(std::path::Path::new("/d"), std::path::Path::new("/d"));
        let batches: Vec<Journal> = (0..3)
            .map(|b| {
                let mut journal = Journal::starting_at(b * 2);
                journal.push(&create(b * 2 + 1));
                journal.push(&create(b * 2 + 2));
                journal.seal(1);
                journal
            })
            .collect();
        let write_all = |keep: bool| {
            let fs = crate::faulty_fs::FaultyFs::new();
            fs.create_dir_all(&layout.snap_dir).expect("dir");
            let (mut end, mut open) = (Extent::default(), None);
            for journal in &batches {
                if !keep {
                    open = None;
                }
                end = append(&fs, &layout, (1, 0), end, journal, 64, &mut open).expect("batch");
                assert!(open.is_some(), "the file is kept after a batch");
            }
            (fs, open)
        };
        let (kept, mut open) = write_all(true);
        let (reopened, _) = write_all(false);
        let file = path(&layout, 0);
        assert_eq!(kept.contents(&file), reopened.contents(&file));
        let mut tree = tree::DataTree::new();
        assert_eq!(
            replay(&kept, &layout, (1, 0), &mut tree)
                .expect("replay")
                .txns,
            6
        );
        // Starting over: the new file holds the new batch only.
        append(
            &kept,
            &layout,
            (1, 0),
            Extent::default(),
            &batches[0],
            64,
            &mut open,
        )
        .expect("batch");
        let mut tree = tree::DataTree::new();
        assert_eq!(
            replay(&kept, &layout, (1, 0), &mut tree)
                .expect("replay")
                .txns,
            2
        );
    }

    /// A crash may tear a batch anywhere. Wherever it does, replay reaches the batch's label
    /// only with every transaction of the batch applied: the label claims the state holds its
    /// epoch's initial history, which a torn batch may lack (the simulator found it).
    #[test]
    fn a_batch_torn_anywhere_keeps_the_label_before_it() {
        let fs = crate::faulty_fs::FaultyFs::new();
        let layout = Layout::new(std::path::Path::new("/d"), std::path::Path::new("/d"));
        fs.create_dir_all(&layout.snap_dir).expect("dir");
        let mut first = Journal::starting_at(0);
        for zxid in 1..=2 {
            first.push(&create(zxid));
        }
        first.seal(1);
        let mut open = None;
        let end = append(
            &fs,
            &layout,
            (1, 0),
            Extent::default(),
            &first,
            4096,
            &mut open,
        )
        .expect("batch");
        // The initial history of epoch 2 (transactions of epoch 1), then epoch 2's first.
        let mut second = first.next(2, Vec::new());
        for zxid in [3, 4, 2 << 32 | 1] {
            second.push(&create(zxid));
        }
        second.seal(2);
        append(&fs, &layout, (1, 0), end, &second, 4096, &mut open).expect("batch");
        let file = path(&layout, 0);
        let whole = fs.contents(&file).expect("delta file");
        let batch_end = HEADER_LEN + second.bytes() + first.bytes();
        for cut in HEADER_LEN + first.bytes()..=batch_end {
            let torn = crate::faulty_fs::FaultyFs::new();
            torn.create_dir_all(&layout.snap_dir).expect("dir");
            let mut bytes = whole[..cut].to_vec();
            bytes.resize(whole.len(), 0);
            let mut w = torn.open_write(&file, true).expect("file");
            w.write_at(0, &bytes).expect("write");
            let mut tree = tree::DataTree::new();
            let replayed = replay(&torn, &layout, (1, 0), &mut tree).expect("replay");
            let whole_batch = tree.last_processed_zxid() == 2 << 32 | 1;
            let why = format!("torn at {cut}: {} transactions replayed", replayed.txns);
            match replayed.label {
                Some(2) => assert!(whole_batch, "{why}"),
                Some(1) => assert!(cut < batch_end, "{why}"),
                other => panic!("{why}: label {other:?}"),
            }
            assert!(replayed.txns >= 2, "the first batch is whole");
        }
    }

    fn create(zxid: i64) -> Txn {
        Txn {
            header: header(zxid, proto::OpCode::Create),
            body: proto::txn::TxnBody::Create(proto::txn::CreateTxn {
                path: format!("/n{zxid}"),
                data: vec![7; 20].into(),
                acl: Default::default(),
                ephemeral: false,
                parent_cversion: 1,
            }),
        }
    }

    #[test]
    fn a_damaged_header_is_refused() {
        let mut bytes = encode_header(2, 0x30);
        assert_eq!(decode_header(&bytes), Ok((2, 0x30)));
        bytes[13] ^= 1;
        assert!(decode_header(&bytes).is_err());
    }
}
