//! ZooKeeper snapshot files (`FileSnap`, `SerializeUtils.serializeSnapshot`,
//! `DataTree.serialize`), read into a [`ZkTree`].
//!
//! Layout, all Jute through one running Adler-32:
//! * file header: magic `ZKSN`, version 2, dbid;
//! * sessions: count, then (id long, timeout int) each;
//! * the ACL cache: count, then (number long, vector of ACL) each;
//! * nodes, parents first: (path, data buffer, ACL number, StatPersisted); the root's path is
//!   "", and the path "/" ends the list;
//! * a seal: the Adler-32 so far as a long, then the string "/";
//! * 3.6+: the digest (zxid long, digest version int, digest long) and a seal;
//! * 3.7+: the last processed zxid (long) and a seal.
//!
//! Before reading, a plain snapshot must end in the 5 bytes of a sealed stream (`00 00 00 01
//! '/'`), as `SnapStream.isValidSnapshot` checks, which is how a snapshot cut short by a crash
//! is recognised and skipped.

use crate::compression::{Compression, XERIAL_MAGIC};
use crate::error::{Result, ZkDataError};
use crate::jute_stream::{JuteStream, StreamError};
use crate::progress::{CountingReader, Progress, Stage};
use crate::zk_tree::{ZkNode, ZkTree};
use proto::{Acl, Id, StatPersisted};
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub const SNAP_MAGIC: i32 = 0x5a4b_534e; // "ZKSN"
pub const SNAP_PREFIX: &str = "snapshot";

/// More sessions or ACL lists than this in one snapshot is damage, not data.
const COUNT_MAX: i32 = 1 << 26;
/// ACL entries in one list.
const ACL_LIST_MAX: i32 = 1 << 16;

/// The tree digest a 3.6+ snapshot records (`DataTree.ZxidDigest`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZxidDigest {
    pub zxid: i64,
    pub version: i32,
    pub digest: i64,
}

#[derive(Debug)]
pub struct ZkSnapshot {
    pub path: PathBuf,
    /// The zxid in the file name: replay starts after it.
    pub zxid: i64,
    pub tree: ZkTree,
    pub sessions: BTreeMap<i64, i32>,
    pub digest: Option<ZxidDigest>,
    pub compression: Compression,
}

/// The zxid of a file named `<prefix>.<hex>[.<ext>]` (`Util.getZxidFromName`).
pub fn zxid_from_name(name: &str, prefix: &str) -> Option<i64> {
    let mut parts = name.split('.');
    if parts.next()? != prefix {
        return None;
    }
    u64::from_str_radix(parts.next()?, 16)
        .ok()
        .map(|v| v as i64)
}

/// `SnapStream.isValidSnapshot`: whether the file looks complete before it is read.
pub fn looks_complete(path: &Path) -> Result<std::result::Result<(), String>> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let mut file = std::fs::File::open(path).map_err(ZkDataError::io("open", path))?;
    let len = file
        .metadata()
        .map_err(ZkDataError::io("stat", path))?
        .len();
    match Compression::of_name(name) {
        Compression::Gzip => {
            let mut magic = [0u8; 2];
            if file.read_exact(&mut magic).is_err() || magic != [0x1f, 0x8b] {
                return Ok(Err("not a gzip file".into()));
            }
        }
        Compression::Snappy => {
            let mut magic = [0u8; 8];
            if file.read_exact(&mut magic).is_err() || magic != XERIAL_MAGIC {
                return Ok(Err("not a snappy-java stream".into()));
            }
        }
        Compression::None => {
            if len < 10 {
                return Ok(Err(format!("only {len} bytes long")));
            }
            let mut tail = [0u8; 5];
            file.seek(SeekFrom::Start(len - 5))
                .and_then(|_| file.read_exact(&mut tail))
                .map_err(ZkDataError::io("read", path))?;
            if tail != [0, 0, 0, 1, b'/'] {
                return Ok(Err(format!(
                    "it does not end with ZooKeeper's seal (the last 5 bytes, at offset {}, \
                     are {tail:02x?}): the snapshot was cut short, most likely by a crash \
                     while it was written",
                    len - 5
                )));
            }
        }
    }
    Ok(Ok(()))
}

/// Reads a whole snapshot file.
pub fn read(path: &Path, progress: Progress<'_>) -> Result<ZkSnapshot> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let zxid = zxid_from_name(name, SNAP_PREFIX).ok_or_else(|| ZkDataError::Invalid {
        path: path.to_path_buf(),
        detail: "not named snapshot.<hex zxid>".into(),
    })?;
    let compression = Compression::of_name(name);
    let file = std::fs::File::open(path).map_err(ZkDataError::io("open", path))?;
    let total = file.metadata().map(|m| m.len()).unwrap_or(0);
    let consumed = Arc::new(AtomicU64::new(0));
    let reader = compression.reader(CountingReader::new(file, consumed.clone()));
    let mut stream = JuteStream::new(reader);
    let mut on_node = |_: u64| progress(Stage::Snapshot, consumed.load(Ordering::Relaxed), total);
    let parsed = parse(&mut stream, &mut on_node);
    let (tree, sessions, digest) = parsed.map_err(|e| match e {
        Failure::Stream(e) => ZkDataError::Corrupt {
            path: path.to_path_buf(),
            offset: e.offset().unwrap_or(stream.offset()),
            detail: format!("{}{}", e.describe(), compression.describe()),
        },
        Failure::At(offset, detail) => ZkDataError::Corrupt {
            path: path.to_path_buf(),
            offset,
            detail: format!("{detail}{}", compression.describe()),
        },
    })?;
    progress(Stage::Snapshot, total, total);
    Ok(ZkSnapshot {
        path: path.to_path_buf(),
        zxid,
        tree,
        sessions,
        digest,
        compression,
    })
}

enum Failure {
    Stream(StreamError),
    At(u64, String),
}

impl From<StreamError> for Failure {
    fn from(e: StreamError) -> Self {
        Failure::Stream(e)
    }
}

type Parsed = (ZkTree, BTreeMap<i64, i32>, Option<ZxidDigest>);

fn parse<R: Read>(
    s: &mut JuteStream<R>,
    on_node: &mut dyn FnMut(u64),
) -> std::result::Result<Parsed, Failure> {
    let magic = s.read_i32()?;
    if magic != SNAP_MAGIC {
        return Err(Failure::At(
            0,
            format!("not a ZooKeeper snapshot: magic {magic:#010x}, expected ZKSN"),
        ));
    }
    let version = s.read_i32()?;
    if version != 2 {
        return Err(Failure::At(
            4,
            format!("unknown snapshot version {version}"),
        ));
    }
    let _dbid = s.read_i64()?;
    let sessions = read_sessions(s)?;
    let acls = read_acl_cache(s)?;
    let mut tree = read_nodes(s, on_node)?;
    tree.acls = acls;
    check_seal(s)?;
    // 3.6+ digest, then 3.7+ last processed zxid; older snapshots end after the first seal.
    let mut digest = None;
    match s.read_i64() {
        Err(StreamError::Eof { .. }) => return Ok((tree, sessions, None)),
        Err(e) => return Err(e.into()),
        Ok(zxid) => {
            let version = s.read_i32()?;
            let value = if version < 2 {
                let text = s.read_string()?.unwrap_or_default();
                i64::from_str_radix(&text, 16).unwrap_or(0)
            } else {
                s.read_i64()?
            };
            check_seal(s)?;
            if zxid > 0 {
                digest = Some(ZxidDigest {
                    zxid,
                    version,
                    digest: value,
                });
            }
        }
    }
    match s.read_i64() {
        Err(StreamError::Eof { .. }) => {}
        Err(e) => return Err(e.into()),
        Ok(_last_processed) => check_seal(s)?,
    }
    Ok((tree, sessions, digest))
}

fn read_count<R: Read>(s: &mut JuteStream<R>, what: &str) -> std::result::Result<i32, Failure> {
    let at = s.offset();
    let n = s.read_i32()?;
    if !(0..=COUNT_MAX).contains(&n) {
        return Err(Failure::At(at, format!("unreasonable {what} count {n}")));
    }
    Ok(n)
}

fn read_sessions<R: Read>(
    s: &mut JuteStream<R>,
) -> std::result::Result<BTreeMap<i64, i32>, Failure> {
    let n = read_count(s, "session")?;
    let mut sessions = BTreeMap::new();
    for _ in 0..n {
        let id = s.read_i64()?;
        let timeout = s.read_i32()?;
        sessions.insert(id, timeout);
    }
    Ok(sessions)
}

fn read_acl_cache<R: Read>(
    s: &mut JuteStream<R>,
) -> std::result::Result<crate::acl_cache::AclCache, Failure> {
    let n = read_count(s, "ACL list")?;
    let mut cache = crate::acl_cache::AclCache::default();
    for _ in 0..n {
        let id = s.read_i64()?;
        let at = s.offset();
        let len = s.read_i32()?;
        if !(0..=ACL_LIST_MAX).contains(&len) {
            return Err(Failure::At(
                at,
                format!("unreasonable ACL list length {len}"),
            ));
        }
        let mut list = Vec::new();
        for _ in 0..len {
            let perms = s.read_i32()?;
            let scheme = s.read_string()?.unwrap_or_default();
            let id = s.read_string()?.unwrap_or_default();
            list.push(Acl {
                perms,
                id: Id {
                    scheme: scheme.into(),
                    id: id.into(),
                },
            });
        }
        cache.insert(id, list);
    }
    Ok(cache)
}

fn read_stat<R: Read>(s: &mut JuteStream<R>) -> std::result::Result<StatPersisted, Failure> {
    Ok(StatPersisted {
        czxid: s.read_i64()?,
        mzxid: s.read_i64()?,
        ctime: s.read_i64()?,
        mtime: s.read_i64()?,
        version: s.read_i32()?,
        cversion: s.read_i32()?,
        aversion: s.read_i32()?,
        ephemeral_owner: s.read_i64()?,
        pzxid: s.read_i64()?,
    })
}

fn read_nodes<R: Read>(
    s: &mut JuteStream<R>,
    on_node: &mut dyn FnMut(u64),
) -> std::result::Result<ZkTree, Failure> {
    let mut tree: Option<ZkTree> = None;
    let mut count = 0u64;
    loop {
        let at = s.offset();
        let path = s
            .read_string()?
            .ok_or_else(|| Failure::At(at, "a null node path".into()))?;
        if path == "/" {
            break;
        }
        let node = ZkNode {
            data: s.read_buffer()?.map(Vec::into_boxed_slice),
            acl: s.read_i64()?,
            stat: read_stat(s)?,
            children: BTreeMap::new(),
        };
        match tree.as_mut() {
            None if path.is_empty() => tree = Some(ZkTree::with_root(node)),
            None => {
                return Err(Failure::At(
                    at,
                    format!("the first node is {path:?}, not the root \"\""),
                ))
            }
            Some(t) => t
                .load(&path, node)
                .map_err(|e| Failure::At(at, format!("invalid data tree: {e}")))?,
        }
        count += 1;
        if count.is_multiple_of(16_384) {
            on_node(count);
        }
    }
    tree.ok_or_else(|| Failure::At(s.offset(), "the snapshot holds no nodes".into()))
}

/// `SnapStream.checkSealIntegrity`: the Adler-32 of everything before, then "/".
fn check_seal<R: Read>(s: &mut JuteStream<R>) -> std::result::Result<(), Failure> {
    let expected = u64::from(s.checksum());
    let at = s.offset();
    let recorded = s.read_i64()? as u64;
    let _slash = s.read_string()?;
    if recorded != expected {
        return Err(Failure::At(
            at,
            format!("checksum mismatch: the file records {recorded:#x}, the bytes before it sum to {expected:#x}"),
        ));
    }
    Ok(())
}
