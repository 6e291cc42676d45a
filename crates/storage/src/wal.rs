//! Write-ahead log segments: a header, then framed transactions in zxid order, then zeros up
//! to the preallocated size.
//!
//! Header (40 bytes, big-endian): magic `MKWAL\r\n\x1a`, format version, log generation, the
//! segment's first zxid, the zxid of the last record before it (`prev`), CRC32C of the first 32
//! bytes, padding. The generation changes when a leader's snapshot replaces the whole log, so
//! segments of the replaced history are never replayed onto the new state (see recovery). `prev` chains the segments, so a missing segment is detected even across the zxid
//! jumps of a new epoch.

use crate::error::{Result, StorageError};
use crate::fs::{FileSystem, WritableFile};
use crate::layout::Layout;
use crate::record::{self, Frame, FRAME_HEADER_LEN};
use proto::jute::{Reader, Record};
use proto::txn::{Txn, TxnHeader};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"MKWAL\r\n\x1a";
const VERSION: u32 = 1;
pub const HEADER_LEN: usize = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentHeader {
    pub first_zxid: i64,
    pub prev_zxid: i64,
    pub generation: u32,
}

impl SegmentHeader {
    fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_be_bytes());
        h[12..16].copy_from_slice(&self.generation.to_be_bytes());
        h[16..24].copy_from_slice(&self.first_zxid.to_be_bytes());
        h[24..32].copy_from_slice(&self.prev_zxid.to_be_bytes());
        let sum = record::crc(&h[..32]);
        h[32..36].copy_from_slice(&sum.to_be_bytes());
        h
    }

    fn decode(buf: &[u8]) -> std::result::Result<SegmentHeader, &'static str> {
        let h = buf
            .get(..HEADER_LEN)
            .ok_or("segment shorter than its header")?;
        if &h[..8] != MAGIC {
            return Err("not a meerkat log segment (bad magic)");
        }
        let sum = u32::from_be_bytes([h[32], h[33], h[34], h[35]]);
        if record::crc(&h[..32]) != sum {
            return Err("header checksum mismatch");
        }
        let version = u32::from_be_bytes([h[8], h[9], h[10], h[11]]);
        if version != VERSION {
            return Err("unknown segment format version");
        }
        let i64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&h[at..at + 8]);
            i64::from_be_bytes(b)
        };
        Ok(SegmentHeader {
            first_zxid: i64_at(16),
            prev_zxid: i64_at(24),
            generation: u32::from_be_bytes([h[12], h[13], h[14], h[15]]),
        })
    }
}

/// The header of the segment at `path`, read alone (`Ok(Err(why))`: the file is there but its
/// header is not a valid one, as after a crash while the segment was being created).
pub fn read_header(
    fs: &dyn FileSystem,
    path: &Path,
) -> std::io::Result<std::result::Result<SegmentHeader, &'static str>> {
    use std::io::Read;
    let mut h = [0u8; HEADER_LEN];
    let mut input = fs.open_read(path)?;
    let mut got = 0;
    while got < HEADER_LEN {
        let n = input.read(&mut h[got..])?;
        if n == 0 {
            return Ok(Err("segment shorter than its header"));
        }
        got += n;
    }
    Ok(SegmentHeader::decode(&h))
}

/// The zxid of an encoded transaction, read from its header alone.
pub fn zxid_of(payload: &[u8]) -> Option<i64> {
    TxnHeader::decode(&mut Reader::new(payload))
        .ok()
        .map(|h| h.zxid)
}

pub fn encode_txn(txn: &Txn) -> Vec<u8> {
    let mut w = proto::jute::Writer::wrap(Vec::with_capacity(txn.encoded_len()));
    txn.encode(&mut w);
    w.into_inner()
}

/// One record found by [`scan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScannedRecord {
    pub offset: usize,
    pub zxid: i64,
    pub payload: (usize, usize),
}

/// How a scan ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanEnd {
    /// Zeros or end of file after the last record.
    Clean { end: usize },
    /// A bad frame at `offset`. `later_valid` tells whether a valid record with a higher zxid
    /// follows it, i.e. whether this is damage in the middle rather than a torn tail.
    Invalid {
        offset: usize,
        reason: String,
        later_valid: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    pub header: SegmentHeader,
    pub records: Vec<ScannedRecord>,
    pub end: ScanEnd,
}

impl Scan {
    pub fn last_zxid(&self) -> i64 {
        self.records
            .last()
            .map_or(self.header.prev_zxid, |r| r.zxid)
    }
}

/// Reads a whole segment. Fails only if the header itself is unreadable.
pub fn scan(buf: &[u8]) -> std::result::Result<Scan, &'static str> {
    let header = SegmentHeader::decode(buf)?;
    let mut records = Vec::new();
    let mut at = HEADER_LEN;
    let mut last = header.prev_zxid;
    let end = loop {
        match record::read_frame(buf, at) {
            Frame::End => break ScanEnd::Clean { end: at },
            Frame::Invalid { reason } => {
                break ScanEnd::Invalid {
                    offset: at,
                    reason: reason.to_string(),
                    later_valid: valid_record_after(buf, at + 1, last),
                }
            }
            Frame::Valid { payload, next } => match zxid_of(payload) {
                Some(zxid) if zxid > last => {
                    let start = at + FRAME_HEADER_LEN;
                    records.push(ScannedRecord {
                        offset: at,
                        zxid,
                        payload: (start, start + payload.len()),
                    });
                    last = zxid;
                    at = next;
                }
                Some(zxid) => {
                    break ScanEnd::Invalid {
                        offset: at,
                        reason: format!("zxid {zxid:#x} does not follow {last:#x}"),
                        later_valid: true,
                    }
                }
                None => {
                    break ScanEnd::Invalid {
                        offset: at,
                        reason: "checksum matches but the transaction header does not decode"
                            .into(),
                        later_valid: true,
                    }
                }
            },
        }
    };
    Ok(Scan {
        header,
        records,
        end,
    })
}

/// Is there, anywhere from `from`, a frame with a valid checksum holding a transaction newer
/// than `after`? A torn tail has none; damage in the middle of the log does.
fn valid_record_after(buf: &[u8], from: usize, after: i64) -> bool {
    (from..buf.len().saturating_sub(FRAME_HEADER_LEN)).any(|at| {
        let len = u32::from_be_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]) as usize;
        len > 0
            && len <= buf.len() - at - FRAME_HEADER_LEN
            && matches!(record::read_frame(buf, at),
                Frame::Valid { payload, .. } if zxid_of(payload).is_some_and(|z| z > after))
    })
}

/// Reads a segment up to the end of its records: the header, the frames, and the zero frame
/// header that ends them, but not the preallocated zeros after it (reading 64 MiB of zeros per
/// segment made a restart of an almost empty server take a quarter of a second). Checksums are
/// not checked here; [`scan`] does that. If the frames do not end cleanly, the whole file is
/// returned, because telling a torn tail from damage needs everything after the bad frame.
pub fn read_records(fs: &dyn FileSystem, path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    const CHUNK: usize = 256 << 10;
    let mut input = fs.open_read(path)?;
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK);
    let mut at = HEADER_LEN;
    loop {
        let start = buf.len();
        buf.resize(start + CHUNK, 0);
        let n = input.read(&mut buf[start..])?;
        buf.truncate(start + n);
        // Walk over whole frames; stop reading at the zero frame header after the last one.
        while let Some(header) = buf.get(at..at + FRAME_HEADER_LEN) {
            let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
            if len == 0 && header[4..].iter().all(|&b| b == 0) {
                return Ok(buf);
            }
            if len > record::PAYLOAD_MAX {
                // Not a frame: damage or a torn write. Read everything.
                input.read_to_end(&mut buf)?;
                return Ok(buf);
            }
            if buf.len() < at + FRAME_HEADER_LEN + len {
                break;
            }
            at += FRAME_HEADER_LEN + len;
        }
        if n == 0 {
            return Ok(buf);
        }
    }
}

/// The segment being appended to.
pub struct SegmentWriter {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    header: SegmentHeader,
    pos: u64,
    capacity: u64,
    records: u64,
}

impl SegmentWriter {
    /// Creates a segment, writes its header, reserves `capacity` bytes, and makes the file and
    /// its name durable before any record goes in.
    pub fn create(
        fs: &dyn FileSystem,
        layout: &Layout,
        header: SegmentHeader,
        capacity: u64,
    ) -> Result<SegmentWriter> {
        let path = layout.wal_path(header.first_zxid);
        let mut file = fs
            .open_write(&path, true)
            .map_err(StorageError::io("create log segment", &path))?;
        let capacity = capacity.max(HEADER_LEN as u64);
        file.preallocate(capacity)
            .map_err(StorageError::io("preallocate log segment", &path))?;
        file.write_at(0, &header.encode())
            .map_err(StorageError::io("write log header", &path))?;
        file.sync_data()
            .map_err(StorageError::io("sync log header", &path))?;
        fs.sync_dir(&layout.wal_dir)
            .map_err(StorageError::io("sync log directory", &layout.wal_dir))?;
        Ok(SegmentWriter {
            file,
            path,
            header,
            pos: HEADER_LEN as u64,
            capacity,
            records: 0,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn header(&self) -> SegmentHeader {
        self.header
    }

    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Whether `len` more bytes fit in the reserved space.
    pub fn has_room(&self, len: usize) -> bool {
        self.pos + len as u64 <= self.capacity
    }

    /// Writes framed records (not yet durable).
    pub fn append(&mut self, framed: &[u8], records: u64) -> Result<()> {
        self.file
            .write_at(self.pos, framed)
            .map_err(StorageError::io("append to log", &self.path))?;
        self.pos += framed.len() as u64;
        self.records += records;
        Ok(())
    }

    pub fn sync(&mut self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(StorageError::io("fsync log", &self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::txn::{CreateSessionTxn, TxnBody};

    fn txn(zxid: i64) -> Txn {
        Txn {
            header: TxnHeader {
                client_id: 7,
                cxid: 0,
                zxid,
                time: 1,
                op_type: proto::OpCode::CreateSession as i32,
            },
            body: TxnBody::CreateSession(CreateSessionTxn { timeout_ms: 30_000 }),
        }
    }

    fn segment(zxids: &[i64]) -> Vec<u8> {
        let mut buf = SegmentHeader {
            first_zxid: zxids[0],
            prev_zxid: zxids[0] - 1,
            generation: 0,
        }
        .encode()
        .to_vec();
        for &z in zxids {
            record::write_frame(&mut buf, &encode_txn(&txn(z)));
        }
        buf.extend_from_slice(&[0; 256]);
        buf
    }

    #[test]
    fn a_clean_segment_scans_to_its_records() {
        let buf = segment(&[5, 6, 7]);
        let scan = scan(&buf).expect("header");
        assert_eq!(
            scan.records.iter().map(|r| r.zxid).collect::<Vec<_>>(),
            [5, 6, 7]
        );
        assert!(matches!(scan.end, ScanEnd::Clean { .. }));
        assert_eq!(scan.last_zxid(), 7);
    }

    #[test]
    fn a_torn_tail_is_told_from_damage_in_the_middle() {
        let clean = segment(&[5, 6, 7]);
        let third = scan(&clean).expect("header").records[2].offset;
        // Torn: the last record's second half never reached the disk.
        let mut torn = clean.clone();
        for b in &mut torn[third + 12..] {
            *b = 0;
        }
        let s = scan(&torn).expect("header");
        assert_eq!(s.records.len(), 2);
        assert!(matches!(
            s.end,
            ScanEnd::Invalid {
                later_valid: false,
                ..
            }
        ));
        // Damaged: a bit flipped in the second record, the third still intact after it.
        let second = scan(&clean).expect("header").records[1].offset;
        let mut flipped = clean;
        flipped[second + 20] ^= 1;
        let s = scan(&flipped).expect("header");
        assert_eq!(s.records.len(), 1);
        assert!(
            matches!(s.end, ScanEnd::Invalid { later_valid: true, offset, .. } if offset == second)
        );
    }

    #[test]
    fn reading_stops_at_the_end_of_the_records_not_the_end_of_the_file() {
        use crate::faulty_fs::FaultyFs;
        let fs = FaultyFs::new();
        let layout = Layout::new(Path::new("/d"), Path::new("/d"));
        fs.create_dir_all(&layout.wal_dir).expect("dir");
        let header = SegmentHeader {
            first_zxid: 1,
            prev_zxid: 0,
            generation: 0,
        };
        let mut seg = SegmentWriter::create(&fs, &layout, header, 4 << 20).expect("create");
        // About 1.5 MiB of records: several read chunks, then 2.5 MiB of preallocated zeros.
        let mut framed = Vec::new();
        for z in 1..=3000 {
            let mut t = txn(z);
            t.body = TxnBody::Error(proto::txn::ErrorTxn { err: -101 });
            t.header.op_type = -1;
            let mut payload = encode_txn(&t);
            payload.extend_from_slice(&[0xab; 480]);
            record::write_frame(&mut framed, &payload);
        }
        seg.append(&framed, 3000).expect("append");
        seg.sync().expect("sync");
        let path = layout.wal_path(1);
        let buf = read_records(&fs, &path).expect("read");
        assert!(
            buf.len() < 2 << 20,
            "read {} bytes of a {}-byte file",
            buf.len(),
            fs.len(&path).expect("len")
        );
        // At most one read chunk past the zero frame header that ends the records.
        let end = HEADER_LEN + framed.len() + FRAME_HEADER_LEN;
        assert!(
            buf.len() >= end && buf.len() <= end + (256 << 10),
            "{} vs {end}",
            buf.len()
        );
        let scanned = scan(&buf).expect("header");
        assert_eq!(scanned.records.len(), 3000);
        assert!(matches!(scanned.end, ScanEnd::Clean { .. }));
    }

    #[test]
    fn a_bad_header_is_refused() {
        let mut buf = segment(&[1]);
        buf[20] ^= 1;
        assert!(scan(&buf).is_err());
        assert!(scan(&buf[..10]).is_err());
    }
}
