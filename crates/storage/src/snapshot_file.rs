//! Snapshot files: a consistent copy of the tree and sessions at one zxid.
//!
//! Layout (big-endian): a 56-byte header — magic `MKSNAP\r\n`, format version, log generation
//! (which log segments may be replayed after it, see [`crate::wal`]), zxid,
//! tree digest, node count, creation time (ms), epoch label, CRC32C of the first 52 bytes — then
//! framed chunks (length, CRC32C, payload; [`crate::record`]) of up to 256 KiB, each holding
//! whole records: a session, an ACL list (numbered on first use), a node, and last an end
//! record with the counts. A file without its end record, or whose rebuilt tree does not hash
//! to the recorded digest, is not a snapshot.
//!
//! Written as `<name>.tmp`, fsynced, renamed, and the directory fsynced: a crash leaves either
//! no snapshot or a whole one.

use crate::error::{Result, StorageError};
use crate::fs::FileSystem;
use crate::layout::{Layout, TEMP_SUFFIX};
use crate::record::{self, FRAME_HEADER_LEN, PAYLOAD_MAX};
use proto::jute::{Reader, Record, Writer};
use proto::{Acl, StatPersisted};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use tree::{DataTree, TreeLoader, TreeSnapshot};

const MAGIC: &[u8; 8] = b"MKSNAP\r\n";
const VERSION: u32 = 2;
/// Version 1 had no epoch label (bytes 48..52 held the CRC of the first 48); still readable.
const VERSION_UNLABELLED: u32 = 1;
const HEADER_LEN: usize = 56;
const CHUNK_BYTES: usize = 256 << 10;

const TAG_SESSION: u8 = 1;
const TAG_ACL: u8 = 2;
const TAG_NODE: u8 = 3;
const TAG_END: u8 = 0xff;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotHeader {
    pub generation: u32,
    pub zxid: i64,
    pub digest: u64,
    pub node_count: u64,
    pub created_ms: i64,
    /// Diskless mode (DESIGN.md §5): the currentEpoch under which the state in this snapshot
    /// was applied, never above it. 0 when unknown; see [`SnapshotHeader::epoch_label`].
    pub label: u32,
}

impl SnapshotHeader {
    fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_be_bytes());
        h[12..16].copy_from_slice(&self.generation.to_be_bytes());
        h[16..24].copy_from_slice(&self.zxid.to_be_bytes());
        h[24..32].copy_from_slice(&self.digest.to_be_bytes());
        h[32..40].copy_from_slice(&self.node_count.to_be_bytes());
        h[40..48].copy_from_slice(&self.created_ms.to_be_bytes());
        h[48..52].copy_from_slice(&self.label.to_be_bytes());
        let sum = record::crc(&h[..52]);
        h[52..56].copy_from_slice(&sum.to_be_bytes());
        h
    }

    /// The epoch label to trust: the recorded one, or the zxid's own epoch when none was
    /// recorded (a leader's SNAP, an older file). The zxid's epoch is always a safe lower bound:
    /// the state holds a transaction of that epoch, so it was applied under it or later.
    pub fn epoch_label(&self) -> u32 {
        if self.label != 0 {
            self.label
        } else {
            (self.zxid >> 32) as u32
        }
    }

    fn decode(h: &[u8; HEADER_LEN]) -> std::result::Result<SnapshotHeader, &'static str> {
        if &h[..8] != MAGIC {
            return Err("not a meerkat snapshot (bad magic)");
        }
        let u32_at = |at: usize| u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
        let (label, summed) = match u32_at(8) {
            VERSION => (u32_at(48), 52),
            VERSION_UNLABELLED => (0, 48),
            _ => return Err("unknown snapshot format version"),
        };
        if record::crc(&h[..summed]) != u32_at(summed) {
            return Err("header checksum mismatch");
        }
        let u64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&h[at..at + 8]);
            u64::from_be_bytes(b)
        };
        Ok(SnapshotHeader {
            generation: u32::from_be_bytes([h[12], h[13], h[14], h[15]]),
            zxid: u64_at(16) as i64,
            digest: u64_at(24),
            node_count: u64_at(32),
            created_ms: u64_at(40) as i64,
            label,
        })
    }
}

/// What writing a snapshot produced.
#[derive(Debug, Clone)]
pub struct Written {
    pub path: PathBuf,
    pub bytes: u64,
    pub header: SnapshotHeader,
}

/// What a snapshot file records besides the tree.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stamp {
    pub created_ms: i64,
    /// The log generation (see [`crate::wal`]).
    pub generation: u32,
    /// The epoch label ([`SnapshotHeader::label`]); 0 when unknown.
    pub label: u32,
}

/// A node record's bytes beyond its path and data: the record's length (4), its tag (1), the
/// lengths of path and data (4 + 4), the ACL id (4) and the persisted stat (60).
const NODE_RECORD_OVERHEAD: u64 = 4 + 1 + 4 + 4 + 4 + 60;

/// About how many bytes a snapshot of a tree of `nodes` znodes whose paths and data sum to
/// `path_and_data_bytes` (ZooKeeper's approximate data size) takes, without writing it:
/// the node records, which are nearly all of it (sessions, ACLs and the chunks' framing are
/// left out).
pub fn estimated_bytes(nodes: usize, path_and_data_bytes: u64) -> u64 {
    (nodes as u64)
        .saturating_mul(NODE_RECORD_OVERHEAD)
        .saturating_add(path_and_data_bytes)
}

/// Writes `snapshot` durably as `snap-<zxid>.snap` under the layout's snapshot dir.
pub fn write(
    fs: &dyn FileSystem,
    layout: &Layout,
    snapshot: &TreeSnapshot,
    stamp: Stamp,
) -> Result<Written> {
    write_unless_cancelled(fs, layout, snapshot, stamp, &AtomicBool::new(false))
}

/// As [`write`], but gives up with [`StorageError::Cancelled`] (leaving no file behind) as
/// soon as `cancel` is set: a busy snapshot must not delay a failure checkpoint.
pub fn write_unless_cancelled(
    fs: &dyn FileSystem,
    layout: &Layout,
    snapshot: &TreeSnapshot,
    stamp: Stamp,
    cancel: &AtomicBool,
) -> Result<Written> {
    let path = layout.snap_path(snapshot.zxid());
    let temp = temp_path(&path);
    let mut file = FileSink::create(fs, &temp)?;
    let encoded = encode(snapshot, stamp, &mut |b| {
        if cancel.load(Ordering::Relaxed) {
            return Err(StorageError::Cancelled);
        }
        file.write(b)
    });
    let (bytes, header) = match encoded {
        Ok(done) => done,
        Err(e) => {
            drop(file);
            let _ = fs.remove(&temp);
            return Err(e);
        }
    };
    file.sync()?;
    fs.rename(&temp, &path)
        .map_err(StorageError::io("rename snapshot into place", &path))?;
    fs.sync_dir(&layout.snap_dir).map_err(StorageError::io(
        "sync snapshot directory",
        &layout.snap_dir,
    ))?;
    Ok(Written {
        path,
        bytes,
        header,
    })
}

/// The snapshot file's bytes in memory (what a leader sends a learner that needs SNAP).
pub fn encode_to_vec(snapshot: &TreeSnapshot, created_ms: i64) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing to memory cannot fail.
    let stamp = Stamp {
        created_ms,
        ..Stamp::default()
    };
    let _ = encode(snapshot, stamp, &mut |b| {
        out.extend_from_slice(b);
        Ok(())
    });
    out
}

/// Stores snapshot bytes received from elsewhere durably under the name of their zxid, as log
/// generation `generation`, after checking that they are a whole, valid snapshot. Returns the
/// loaded tree.
pub fn save_bytes(
    fs: &dyn FileSystem,
    layout: &Layout,
    bytes: &[u8],
    generation: u32,
) -> Result<Loaded> {
    save_bytes_at(fs, layout, bytes, generation, |zxid| layout.snap_path(zxid))
}

/// As [`save_bytes`], under the name `path_of(zxid)` gives (a pending replacement's name, see
/// [`crate::replacement`]).
pub fn save_bytes_at(
    fs: &dyn FileSystem,
    layout: &Layout,
    bytes: &[u8],
    generation: u32,
    path_of: impl FnOnce(i64) -> PathBuf,
) -> Result<Loaded> {
    let mut loaded = decode_bytes(bytes)?;
    loaded.header.generation = generation;
    // Whatever the sender's label, this server did not apply this state under it: let the
    // zxid's epoch stand for it (DESIGN.md §5).
    loaded.header.label = 0;
    let path = path_of(loaded.header.zxid);
    let temp = temp_path(&path);
    let mut file = FileSink::create(fs, &temp)?;
    // Our own header (generation and checksum), then the sender's chunks as they are.
    file.write(&loaded.header.encode())?;
    file.write(&bytes[HEADER_LEN..])?;
    file.sync()?;
    fs.rename(&temp, &path)
        .map_err(StorageError::io("rename snapshot into place", &path))?;
    fs.sync_dir(&layout.snap_dir).map_err(StorageError::io(
        "sync snapshot directory",
        &layout.snap_dir,
    ))?;
    Ok(loaded)
}

/// Serialises `snapshot` through `emit` (header, then checksummed chunks). Returns the byte
/// count and the header.
fn encode(
    snapshot: &TreeSnapshot,
    stamp: Stamp,
    emit: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<(u64, SnapshotHeader)> {
    let Stamp {
        created_ms,
        generation,
        label,
    } = stamp;
    let header = SnapshotHeader {
        generation,
        label,
        zxid: snapshot.zxid(),
        digest: snapshot.digest(),
        node_count: snapshot.node_count() as u64,
        created_ms,
    };
    let mut out = ChunkWriter::new(emit);
    out.emit_raw(&header.encode())?;
    for &(id, timeout) in snapshot.sessions() {
        let mut w = Writer::new();
        w.write_raw(&[TAG_SESSION]);
        w.write_i64(id);
        w.write_i32(timeout);
        out.record(w.as_slice())?;
    }
    let mut acl_ids: HashMap<*const Acl, u32> = HashMap::new();
    let mut nodes = 0u64;
    let mut failure = None;
    let mut scratch = Vec::new();
    snapshot.for_each(|node_path, node| {
        if failure.is_some() {
            return;
        }
        let key = node.acl.as_ptr();
        let next_id = acl_ids.len() as u32;
        let acl_id = *acl_ids.entry(key).or_insert_with(|| {
            let mut w = Writer::new();
            w.write_raw(&[TAG_ACL]);
            w.write_i32(next_id as i32);
            w.write_i32(node.acl.len() as i32);
            for acl in node.acl.iter() {
                acl.encode(&mut w);
            }
            if let Err(e) = out.record(w.as_slice()) {
                failure = Some(e);
            }
            next_id
        });
        // One buffer for every node record: a snapshot of a million nodes allocates once here.
        let mut w = Writer::wrap(std::mem::take(&mut scratch));
        w.write_raw(&[TAG_NODE]);
        w.write_ustring(node_path);
        w.write_buffer(node.data);
        w.write_i32(acl_id as i32);
        node.stat.encode(&mut w);
        if let Err(e) = out.record(w.as_slice()) {
            failure = Some(e);
        }
        scratch = w.into_inner();
        scratch.clear();
        nodes += 1;
    });
    if let Some(e) = failure {
        return Err(e);
    }
    let mut w = Writer::new();
    w.write_raw(&[TAG_END]);
    w.write_i64(nodes as i64);
    w.write_i64(snapshot.sessions().len() as i64);
    w.write_i64(snapshot.digest() as i64);
    out.record(w.as_slice())?;
    let bytes = out.finish()?;
    Ok((bytes, header))
}

/// A snapshot file being written sequentially.
struct FileSink {
    file: Box<dyn crate::fs::WritableFile>,
    path: PathBuf,
    pos: u64,
}

impl FileSink {
    fn create(fs: &dyn FileSystem, path: &Path) -> Result<FileSink> {
        // A leftover from a crash mid-snapshot is garbage; start over.
        let _ = fs.remove(path);
        let file = fs
            .open_write(path, true)
            .map_err(StorageError::io("create snapshot", path))?;
        Ok(FileSink {
            file,
            path: path.to_path_buf(),
            pos: 0,
        })
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.file
            .write_at(self.pos, bytes)
            .map_err(StorageError::io("write snapshot", &self.path))?;
        self.pos += bytes.len() as u64;
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(StorageError::io("fsync snapshot", &self.path))
    }
}

pub fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(TEMP_SUFFIX);
    PathBuf::from(name)
}

/// Collects records into checksummed chunks and hands them to the sink in order.
struct ChunkWriter<'a> {
    emit: &'a mut dyn FnMut(&[u8]) -> Result<()>,
    bytes: u64,
    chunk: Vec<u8>,
    framed: Vec<u8>,
}

impl<'a> ChunkWriter<'a> {
    fn new(emit: &'a mut dyn FnMut(&[u8]) -> Result<()>) -> ChunkWriter<'a> {
        ChunkWriter {
            emit,
            bytes: 0,
            chunk: Vec::with_capacity(CHUNK_BYTES),
            framed: Vec::with_capacity(CHUNK_BYTES + FRAME_HEADER_LEN),
        }
    }

    fn emit_raw(&mut self, bytes: &[u8]) -> Result<()> {
        (self.emit)(bytes)?;
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    /// Adds one record, preceded by its length so a reader can split the chunk.
    fn record(&mut self, bytes: &[u8]) -> Result<()> {
        if !self.chunk.is_empty() && self.chunk.len() + 4 + bytes.len() > CHUNK_BYTES {
            self.flush_chunk()?;
        }
        self.chunk
            .extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        self.chunk.extend_from_slice(bytes);
        Ok(())
    }

    fn flush_chunk(&mut self) -> Result<()> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        self.framed.clear();
        record::write_frame(&mut self.framed, &self.chunk);
        let framed = std::mem::take(&mut self.framed);
        self.emit_raw(&framed)?;
        self.framed = framed;
        self.chunk.clear();
        Ok(())
    }

    fn finish(mut self) -> Result<u64> {
        self.flush_chunk()?;
        Ok(self.bytes)
    }
}

/// A snapshot read back.
pub struct Loaded {
    pub header: SnapshotHeader,
    pub tree: DataTree,
}

/// Reads and verifies a snapshot: every chunk's checksum, the end record, the digest.
pub fn read(fs: &dyn FileSystem, path: &Path) -> Result<Loaded> {
    let input = std::io::BufReader::with_capacity(
        1 << 20,
        fs.open_read(path)
            .map_err(StorageError::io("open snapshot", path))?,
    );
    read_from(input, path)
}

/// Verifies and loads snapshot bytes held in memory (received from a leader).
pub fn decode_bytes(bytes: &[u8]) -> Result<Loaded> {
    read_from(bytes, Path::new("<snapshot received from the leader>"))
}

/// `path` only names the source in errors.
fn read_from(mut input: impl Read, path: &Path) -> Result<Loaded> {
    let corrupt = |offset: u64, detail: String| StorageError::Corrupt {
        what: "snapshot",
        path: path.to_path_buf(),
        offset,
        detail,
    };
    let mut h = [0u8; HEADER_LEN];
    input
        .read_exact(&mut h)
        .map_err(|e| corrupt(0, format!("header unreadable: {e}")))?;
    let header = SnapshotHeader::decode(&h).map_err(|e| corrupt(0, e.to_string()))?;
    let mut loader = TreeLoader::new();
    let mut acls: Vec<tree::acl::AclList> = Vec::new();
    let mut offset = HEADER_LEN as u64;
    let mut counts = (0u64, 0u64);
    let mut chunk = Vec::new();
    loop {
        let mut frame_header = [0u8; FRAME_HEADER_LEN];
        input
            .read_exact(&mut frame_header)
            .map_err(|_| corrupt(offset, "the file ends before its end record".into()))?;
        let len = u32::from_be_bytes([
            frame_header[0],
            frame_header[1],
            frame_header[2],
            frame_header[3],
        ]) as usize;
        let sum = u32::from_be_bytes([
            frame_header[4],
            frame_header[5],
            frame_header[6],
            frame_header[7],
        ]);
        if len == 0 || len > PAYLOAD_MAX {
            return Err(corrupt(offset, format!("implausible chunk length {len}")));
        }
        chunk.resize(len, 0);
        input
            .read_exact(&mut chunk)
            .map_err(|_| corrupt(offset, "chunk cut short".into()))?;
        if record::crc(&chunk) != sum {
            return Err(corrupt(offset, "chunk checksum mismatch".into()));
        }
        let ended = read_chunk(&chunk, &mut loader, &mut acls, &mut counts)
            .map_err(|detail| corrupt(offset, detail))?;
        offset += (FRAME_HEADER_LEN + len) as u64;
        if let Some((nodes, sessions, digest)) = ended {
            if nodes != counts.0 || sessions != counts.1 || digest != header.digest {
                return Err(corrupt(offset, format!(
                    "end record says {nodes} nodes, {sessions} sessions, digest {digest:#x}; found {} nodes, {} sessions, header digest {:#x}",
                    counts.0, counts.1, header.digest
                )));
            }
            let tree = loader
                .finish(header.zxid, header.digest)
                .map_err(|e| corrupt(offset, e.to_string()))?;
            return Ok(Loaded { header, tree });
        }
    }
}

/// Feeds one chunk's records to the loader. Returns the end record's contents if it was there.
fn read_chunk(
    chunk: &[u8],
    loader: &mut TreeLoader,
    acls: &mut Vec<tree::acl::AclList>,
    counts: &mut (u64, u64),
) -> std::result::Result<Option<(u64, u64, u64)>, String> {
    let mut r = Reader::new(chunk);
    while r.remaining() > 0 {
        let len = r.read_i32().map_err(|e| e.to_string())?;
        let rest = r.rest();
        let len = usize::try_from(len).map_err(|_| "negative record length".to_string())?;
        let body = rest.get(..len).ok_or("record longer than its chunk")?;
        r = Reader::new(&rest[len..]);
        let (&tag, body) = body.split_first().ok_or("empty record")?;
        let mut b = Reader::new(body);
        let e = |e: proto::jute::DecodeError| e.to_string();
        match tag {
            TAG_SESSION => {
                let id = b.read_i64().map_err(e)?;
                let timeout = b.read_i32().map_err(e)?;
                loader.add_session(id, timeout);
                counts.1 += 1;
            }
            TAG_ACL => {
                let id = b.read_i32().map_err(e)?;
                if id as usize != acls.len() {
                    return Err(format!("ACL list {id} out of order"));
                }
                let n = b.read_vector_len(12).map_err(e)?.unwrap_or(0);
                let mut list = Vec::with_capacity(n);
                for _ in 0..n {
                    list.push(Acl::decode(&mut b).map_err(e)?);
                }
                acls.push(loader.intern_acl(&list));
            }
            TAG_NODE => {
                let node_path = b.read_ustring().map_err(e)?.ok_or("node without a path")?;
                let data = b.read_buffer().map_err(e)?;
                let acl_id = b.read_i32().map_err(e)?;
                let acl = acls
                    .get(acl_id as usize)
                    .ok_or_else(|| format!("node {node_path} uses unknown ACL list {acl_id}"))?
                    .clone();
                let stat = StatPersisted::decode(&mut b).map_err(e)?;
                loader
                    .add_node_shared(&node_path, data, acl, stat)
                    .map_err(|e| e.to_string())?;
                counts.0 += 1;
            }
            TAG_END => {
                let nodes = b.read_i64().map_err(e)? as u64;
                let sessions = b.read_i64().map_err(e)? as u64;
                let digest = b.read_i64().map_err(e)? as u64;
                return Ok(Some((nodes, sessions, digest)));
            }
            other => return Err(format!("unknown record tag {other}")),
        }
        b.finish().map_err(e)?;
    }
    Ok(None)
}

/// Reads only the header (for listings).
pub fn read_header(fs: &dyn FileSystem, path: &Path) -> Result<SnapshotHeader> {
    let mut h = [0u8; HEADER_LEN];
    fs.open_read(path)
        .and_then(|mut f| f.read_exact(&mut h))
        .map_err(StorageError::io("read snapshot header", path))?;
    SnapshotHeader::decode(&h).map_err(|e| StorageError::Corrupt {
        what: "snapshot",
        path: path.to_path_buf(),
        offset: 0,
        detail: e.to_string(),
    })
}
