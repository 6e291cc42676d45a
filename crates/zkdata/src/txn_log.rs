//! ZooKeeper transaction log files (`FileTxnLog`): `log.<hex zxid of the first entry>`.
//!
//! Layout: a file header (magic `ZKLG`, version 2, dbid), then entries, each an Adler-32
//! (long) of the entry bytes, the entry as a buffer (int length + bytes: `TxnHeader`, body,
//! 3.6+ digest) and the end-of-record byte `B`. Files are preallocated with zeros, so a zero
//! length marks the end.
//!
//! ZooKeeper ends a file where an entry is incomplete (the file ends inside it, or its last
//! byte is not `B`): a write cut by a crash. This reader does the same but also checks that
//! nothing but zeros follows, so that damage is not mistaken for a torn write. A checksum
//! mismatch or an entry that does not decode stops the read with the file and offset, as it
//! stops ZooKeeper's start-up.

use crate::error::{Result, ZkDataError};
use crate::jute_stream::{JuteStream, StreamError, BUFFER_MAX};
use crate::snapshot::zxid_from_name;
use crate::txn::{decode_entry, LogEntry};
use std::io::BufReader;
use std::path::{Path, PathBuf};

pub const LOG_MAGIC: i32 = 0x5a4b_4c47; // "ZKLG"
pub const LOG_PREFIX: &str = "log";
const END_OF_RECORD: u8 = b'B';

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFile {
    pub path: PathBuf,
    /// The zxid in the name.
    pub first_zxid: i64,
    pub len: u64,
}

/// The log files in `dir`, oldest first.
pub fn list(dir: &Path) -> Result<Vec<LogFile>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(ZkDataError::io("list", dir))? {
        let entry = entry.map_err(ZkDataError::io("list", dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(first_zxid) = zxid_from_name(name, LOG_PREFIX) {
            let len = entry.metadata().map(|m| m.len()).unwrap_or(0);
            files.push(LogFile {
                path: entry.path(),
                first_zxid,
                len,
            });
        }
    }
    files.sort_by_key(|f| f.first_zxid);
    Ok(files)
}

/// How a file ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileEnd {
    /// At the zero padding or the end of the file, after a whole entry.
    Clean,
    /// An incomplete entry at `offset`, with only zeros after it: cut as ZooKeeper cuts it.
    Torn { offset: u64, reason: String },
    /// An empty file (ZooKeeper deletes one that is the newest; this reader never deletes).
    Empty,
}

/// Reads every entry of `path` in order, handing each with its byte offset to `visit`.
/// `progress` is told the bytes read so far.
pub fn read_file(
    path: &Path,
    visit: &mut dyn FnMut(u64, LogEntry) -> Result<()>,
    progress: &mut dyn FnMut(u64),
) -> Result<FileEnd> {
    let file = std::fs::File::open(path).map_err(ZkDataError::io("open", path))?;
    let empty = file.metadata().map(|m| m.len() == 0).unwrap_or(false);
    if empty {
        return Ok(FileEnd::Empty);
    }
    let mut log = LogReader {
        path,
        s: JuteStream::new(BufReader::with_capacity(1 << 20, file)),
    };
    log.header()?;
    let mut entries = 0u64;
    loop {
        let (at, bytes) = match log.next_entry()? {
            Next::Entry(at, bytes) => (at, bytes),
            Next::End(end) => return Ok(end),
        };
        let entry = decode_entry(&bytes).map_err(|e| {
            log.corrupt(
                at,
                format!("the entry does not decode as a transaction: {e}"),
            )
        })?;
        visit(at, entry)?;
        entries += 1;
        if entries.is_multiple_of(4096) {
            progress(log.s.offset());
        }
    }
}

enum Next {
    /// An entry's bytes (checksum verified) and its offset.
    Entry(u64, Vec<u8>),
    End(FileEnd),
}

struct LogReader<'a> {
    path: &'a Path,
    s: JuteStream<BufReader<std::fs::File>>,
}

impl LogReader<'_> {
    fn corrupt(&self, offset: u64, detail: String) -> ZkDataError {
        ZkDataError::Corrupt {
            path: self.path.to_path_buf(),
            offset,
            detail,
        }
    }

    fn stream(&self, e: StreamError, at: u64) -> ZkDataError {
        match e {
            StreamError::Io(e) => ZkDataError::Io {
                op: "read",
                path: self.path.to_path_buf(),
                source: e,
            },
            other => self.corrupt(other.offset().unwrap_or(at), other.describe()),
        }
    }

    /// Magic `ZKLG`, version 2, dbid.
    fn header(&mut self) -> Result<()> {
        let magic = self.s.read_i32().map_err(|e| self.stream(e, 0))?;
        if magic != LOG_MAGIC {
            return Err(self.corrupt(
                0,
                format!("not a ZooKeeper transaction log: magic {magic:#010x}, expected ZKLG"),
            ));
        }
        let version = self.s.read_i32().map_err(|e| self.stream(e, 4))?;
        if version != 2 {
            return Err(self.corrupt(4, format!("unknown log version {version}")));
        }
        self.s.read_i64().map_err(|e| self.stream(e, 8))?;
        Ok(())
    }

    /// An incomplete entry at `at`: torn if only zeros follow, damage otherwise.
    fn torn(&mut self, at: u64, reason: &str) -> Result<Next> {
        match self.s.rest_is_zero() {
            Ok(true) => Ok(Next::End(FileEnd::Torn {
                offset: at,
                reason: reason.to_string(),
            })),
            Ok(false) => Err(self.corrupt(
                at,
                format!("{reason}, yet more data follows it: not a write cut short by a crash"),
            )),
            Err(e) => Err(self.stream(e, at)),
        }
    }

    /// `FileTxnIterator.next` and `Util.readTxnBytes`: checksum, length, bytes, `B`.
    fn next_entry(&mut self) -> Result<Next> {
        let at = self.s.offset();
        let checksum = match self.s.read_i64() {
            Ok(c) => c,
            Err(StreamError::Eof { .. }) => return Ok(Next::End(FileEnd::Clean)),
            Err(e) => return Err(self.stream(e, at)),
        };
        let len_at = self.s.offset();
        let len = match self.s.read_i32() {
            Ok(len) => len,
            Err(StreamError::Eof { .. }) => return self.torn(at, "the entry is cut short"),
            Err(e) => return Err(self.stream(e, len_at)),
        };
        if len == 0 {
            // The preallocated zeros: the end, unless something other than zeros follows.
            return match self.s.rest_is_zero() {
                Ok(true) => Ok(Next::End(FileEnd::Clean)),
                Ok(false) => Err(self.corrupt(
                    at,
                    "an empty entry (the end of the log) followed by more data".into(),
                )),
                Err(e) => Err(self.stream(e, at)),
            };
        }
        if len < 0 || len as usize > BUFFER_MAX {
            return Err(self.corrupt(len_at, format!("unreasonable entry length {len}")));
        }
        // Filled as the bytes arrive: a length the file cannot back costs nothing.
        let mut bytes = Vec::with_capacity((len as usize).min(1 << 20));
        let mut step = [0u8; 1 << 16];
        while bytes.len() < len as usize {
            let n = (len as usize - bytes.len()).min(step.len());
            match self.s.read_exact(&mut step[..n]) {
                Ok(()) => bytes.extend_from_slice(&step[..n]),
                Err(StreamError::Eof { .. }) => return self.torn(at, "the entry is cut short"),
                Err(e) => return Err(self.stream(e, at)),
            }
        }
        match self.s.read_u8() {
            Ok(END_OF_RECORD) => {}
            Ok(_) => return self.torn(at, "the entry is incomplete (no end-of-record byte)"),
            Err(StreamError::Eof { .. }) => return self.torn(at, "the entry is cut short"),
            Err(e) => return Err(self.stream(e, at)),
        }
        let actual = adler2::adler32_slice(&bytes);
        if checksum as u64 != u64::from(actual) {
            return Err(self.corrupt(
                at,
                format!(
                    "checksum mismatch: the entry records {checksum:#x}, its bytes sum to \
                     {actual:#x} (ZooKeeper refuses to start here too: \"CRC check failed\")"
                ),
            ));
        }
        Ok(Next::Entry(at, bytes))
    }
}
