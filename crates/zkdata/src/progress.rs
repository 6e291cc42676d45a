//! How long-running steps report how far they are, for a progress bar or log lines. The
//! library only counts; drawing is the caller's business.

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Bytes of the snapshot file read, of its size.
    Snapshot,
    /// Bytes of log files read, of their total size.
    Log,
    /// Nodes converted, of the tree's node count.
    Convert,
    /// Nodes written, of the tree's node count.
    Write,
}

/// Told `(stage, done, total)` from time to time; `total` 0 means unknown.
pub type Progress<'a> = &'a mut dyn FnMut(Stage, u64, u64);

/// A no-op progress sink.
pub fn quiet(_: Stage, _: u64, _: u64) {}

/// Counts the bytes read through it (before decompression), for progress by file size.
pub struct CountingReader<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R> CountingReader<R> {
    pub fn new(inner: R, count: Arc<AtomicU64>) -> Self {
        CountingReader { inner, count }
    }
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}
