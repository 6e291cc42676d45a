//! Appending to the log: records go into the current segment; a new segment starts when the
//! reserved space runs out. Segments are created lazily, named by their first record's zxid
//! (a new epoch's first zxid is not known in advance).

use crate::error::Result;
use crate::fs::FileSystem;
use crate::layout::Layout;
use crate::record;
use crate::wal::{SegmentHeader, SegmentWriter, HEADER_LEN};
use std::sync::Arc;

/// Reserved size of a segment: ZooKeeper's `preAllocSize` default (64 MiB).
pub const SEGMENT_BYTES_DEFAULT: u64 = 64 << 20;

pub struct WalWriter {
    fs: Arc<dyn FileSystem>,
    layout: Layout,
    current: Option<SegmentWriter>,
    last_zxid: i64,
    segment_bytes: u64,
    buf: Vec<u8>,
}

impl WalWriter {
    /// A writer whose next record follows `last_zxid` (the last one recovery found).
    pub fn new(
        fs: Arc<dyn FileSystem>,
        layout: Layout,
        last_zxid: i64,
        segment_bytes: u64,
    ) -> WalWriter {
        WalWriter {
            fs,
            layout,
            current: None,
            last_zxid,
            segment_bytes,
            buf: Vec::new(),
        }
    }

    pub fn last_zxid(&self) -> i64 {
        self.last_zxid
    }

    /// Writes encoded transactions (strictly increasing zxids), not yet durable.
    pub fn write(&mut self, records: &[(i64, Vec<u8>)]) -> Result<()> {
        let mut pending = 0u64;
        for (zxid, payload) in records {
            debug_assert!(*zxid > self.last_zxid, "log records must be in zxid order");
            let framed_len = record::FRAME_HEADER_LEN + payload.len();
            // A fresh segment always has room for its first record (see `roll`).
            let full = self
                .current
                .as_ref()
                .is_none_or(|seg| !seg.has_room(self.buf.len() + framed_len));
            if full {
                self.flush(pending)?;
                pending = 0;
                self.roll(*zxid, framed_len)?;
            }
            record::write_frame(&mut self.buf, payload);
            pending += 1;
            self.last_zxid = *zxid;
        }
        self.flush(pending)
    }

    /// Makes everything written so far durable.
    pub fn sync(&mut self) -> Result<()> {
        match &mut self.current {
            Some(seg) => seg.sync(),
            None => Ok(()),
        }
    }

    fn flush(&mut self, records: u64) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        if let Some(seg) = &mut self.current {
            seg.append(&self.buf, records)?;
        }
        self.buf.clear();
        Ok(())
    }

    /// Seals the current segment (durably) and starts one for a record of `first_len` bytes.
    fn roll(&mut self, first_zxid: i64, first_len: usize) -> Result<()> {
        if let Some(mut old) = self.current.take() {
            old.sync()?;
        }
        let capacity = self.segment_bytes.max((HEADER_LEN + first_len) as u64);
        let header = SegmentHeader {
            first_zxid,
            prev_zxid: self.last_zxid,
        };
        self.current = Some(SegmentWriter::create(
            self.fs.as_ref(),
            &self.layout,
            header,
            capacity,
        )?);
        tracing::debug!(
            first_zxid = format!("{first_zxid:#x}"),
            "started a new log segment"
        );
        Ok(())
    }
}
