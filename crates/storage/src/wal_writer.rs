//! Appending to the log: records go into the current segment; a new segment starts when the
//! reserved space runs out. Segments are created lazily, named by their first record's zxid
//! (a new epoch's first zxid is not known in advance).

use crate::error::{Result, StorageError};
use crate::fs::FileSystem;
use crate::layout::{self, Layout};
use crate::record;
use crate::wal::{self, SegmentHeader, SegmentWriter, HEADER_LEN};
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
    /// Stamped on every new segment; see [`crate::wal`].
    generation: u32,
}

impl WalWriter {
    /// A writer whose next record follows `last_zxid` (the last one recovery found), in log
    /// generation `generation` (recovery's too).
    pub fn new(
        fs: Arc<dyn FileSystem>,
        layout: Layout,
        last_zxid: i64,
        segment_bytes: u64,
        generation: u32,
    ) -> WalWriter {
        WalWriter {
            fs,
            layout,
            current: None,
            last_zxid,
            segment_bytes,
            buf: Vec::new(),
            generation,
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

    /// Durably drops every record after `zxid` (Zab's TRUNC: proposals a new leader never
    /// committed). The next record starts a new segment chained to `zxid`.
    pub fn truncate_after(&mut self, zxid: i64) -> Result<()> {
        if let Some(mut seg) = self.current.take() {
            seg.sync()?;
        }
        let mut firsts = self.segments()?;
        firsts.reverse();
        for first in firsts {
            let path = self.layout.wal_path(first);
            if first > zxid {
                // Newest first, each removal durable before the next step: whatever a crash
                // leaves is still a chain of segments (never a cut segment followed by a
                // later one, which recovery would rightly call a gap).
                self.fs
                    .remove(&path)
                    .map_err(StorageError::io("remove log segment", &path))?;
                self.fs
                    .sync_dir(&self.layout.wal_dir)
                    .map_err(StorageError::io("sync log directory", &self.layout.wal_dir))?;
                continue;
            }
            let buf = self
                .fs
                .read_all(&path)
                .map_err(StorageError::io("read log", &path))?;
            let scan = wal::scan(&buf).map_err(|reason| StorageError::Corrupt {
                what: "log segment header",
                path: path.clone(),
                offset: 0,
                detail: reason.to_string(),
            })?;
            if let Some(cut) = scan.records.iter().find(|r| r.zxid > zxid) {
                let mut file = self
                    .fs
                    .open_write(&path, false)
                    .map_err(StorageError::io("open log", &path))?;
                file.set_len(cut.offset as u64)
                    .map_err(StorageError::io("truncate log", &path))?;
                file.sync_data()
                    .map_err(StorageError::io("fsync log", &path))?;
            }
            break;
        }
        self.fs
            .sync_dir(&self.layout.wal_dir)
            .map_err(StorageError::io("sync log directory", &self.layout.wal_dir))?;
        self.last_zxid = zxid;
        Ok(())
    }

    /// Durably drops the whole log, once a snapshot at `zxid` of log generation `generation`
    /// that replaces it is durable (Zab's SNAP). The next record starts a new segment of that
    /// generation chained to `zxid`. A crash part way leaves old-generation segments, which
    /// recovery ignores.
    pub fn reset(&mut self, zxid: i64, generation: u32) -> Result<()> {
        self.current = None;
        self.generation = generation;
        for first in self.segments()? {
            let path = self.layout.wal_path(first);
            self.fs
                .remove(&path)
                .map_err(StorageError::io("remove log segment", &path))?;
        }
        self.fs
            .sync_dir(&self.layout.wal_dir)
            .map_err(StorageError::io("sync log directory", &self.layout.wal_dir))?;
        self.last_zxid = zxid;
        Ok(())
    }

    /// First zxids of the segments on disk, ascending.
    fn segments(&self) -> Result<Vec<i64>> {
        let names = self
            .fs
            .list(&self.layout.wal_dir)
            .map_err(StorageError::io("list", &self.layout.wal_dir))?;
        let mut firsts: Vec<i64> = names
            .iter()
            .filter_map(|n| layout::parse_wal_name(n))
            .collect();
        firsts.sort_unstable();
        Ok(firsts)
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
            generation: self.generation,
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
