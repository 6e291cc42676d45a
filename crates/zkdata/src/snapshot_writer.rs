//! Writing a meerkat tree as a ZooKeeper 3.9 snapshot (the format of [`crate::snapshot`]):
//! header, sessions, ACL cache, nodes with the root as "", the end marker "/", the seal, the
//! digest section with its seal and the last-processed-zxid section with its seal. Plain
//! (uncompressed), which ZooKeeper reads whatever compression it is set to write.

use crate::digest::{node_digest, DIGEST_VERSION};
use crate::error::{Result, ZkDataError};
use crate::progress::{Progress, Stage};
use crate::snapshot::SNAP_MAGIC;
use proto::Acl;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use tree::DataTree;

/// Jute out through a running Adler-32.
struct JuteSink<W: Write> {
    out: W,
    checksum: adler2::Adler32,
}

impl<W: Write> JuteSink<W> {
    fn raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.checksum.write_slice(bytes);
        self.out.write_all(bytes)
    }
    fn i32(&mut self, v: i32) -> std::io::Result<()> {
        self.raw(&v.to_be_bytes())
    }
    fn i64(&mut self, v: i64) -> std::io::Result<()> {
        self.raw(&v.to_be_bytes())
    }
    fn buffer(&mut self, v: Option<&[u8]>) -> std::io::Result<()> {
        match v {
            None => self.i32(-1),
            Some(b) => {
                self.i32(b.len() as i32)?;
                self.raw(b)
            }
        }
    }
    fn string(&mut self, s: &str) -> std::io::Result<()> {
        self.buffer(Some(s.as_bytes()))
    }
    /// `SnapStream.sealStream`.
    fn seal(&mut self) -> std::io::Result<()> {
        let sum = i64::from(self.checksum.checksum());
        self.i64(sum)?;
        self.string("/")
    }
}

/// What the snapshot holds.
#[derive(Debug, Clone, Copy)]
pub struct WrittenSnapshot {
    pub zxid: i64,
    pub nodes: u64,
    pub sessions: usize,
    pub digest: i64,
    pub bytes: u64,
}

/// Writes `tree` to `path` (which is created; it must not exist) and fsyncs it.
pub fn write(tree: &DataTree, path: &Path, progress: Progress<'_>) -> Result<WrittenSnapshot> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(ZkDataError::io("create", path))?;
    let mut sink = JuteSink {
        out: std::io::BufWriter::with_capacity(1 << 20, file),
        checksum: adler2::Adler32::new(),
    };
    let written = encode(tree, &mut sink, progress).map_err(ZkDataError::io("write", path))?;
    let file = sink
        .out
        .into_inner()
        .map_err(|e| ZkDataError::io("write", path)(e.into_error()))?;
    file.sync_all().map_err(ZkDataError::io("sync", path))?;
    let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    Ok(WrittenSnapshot { bytes, ..written })
}

fn encode<W: Write>(
    tree: &DataTree,
    s: &mut JuteSink<W>,
    progress: Progress<'_>,
) -> std::io::Result<WrittenSnapshot> {
    let zxid = tree.last_processed_zxid();
    s.i32(SNAP_MAGIC)?;
    s.i32(2)?;
    s.i64(0)?;
    let mut sessions: Vec<(i64, i32)> = tree.sessions().iter().map(|(&k, &v)| (k, v)).collect();
    sessions.sort_unstable();
    s.i32(sessions.len() as i32)?;
    for (id, timeout) in &sessions {
        s.i64(*id)?;
        s.i32(*timeout)?;
    }
    // The ACL cache: each distinct list once, numbered from 1 in the order first met.
    let mut numbers: HashMap<Vec<Acl>, i64> = HashMap::new();
    let mut lists: Vec<Vec<Acl>> = Vec::new();
    tree.for_each(|_, node| {
        if !numbers.contains_key(&node.acl[..]) {
            lists.push(node.acl.to_vec());
            numbers.insert(node.acl.to_vec(), lists.len() as i64);
        }
    });
    s.i32(lists.len() as i32)?;
    for (i, list) in lists.iter().enumerate() {
        s.i64(i as i64 + 1)?;
        s.i32(list.len() as i32)?;
        for acl in list {
            s.i32(acl.perms)?;
            s.string(&acl.id.scheme)?;
            s.string(&acl.id.id)?;
        }
    }
    let total = tree.node_count() as u64;
    let mut nodes = 0u64;
    let mut digest = 0i64;
    let mut failed: Option<std::io::Error> = None;
    tree.for_each(|path, node| {
        if failed.is_some() {
            return;
        }
        let zk_path = if path == "/" { "" } else { path };
        digest = digest.wrapping_add(node_digest(zk_path, node.data, &node.stat));
        let st = &node.stat;
        let result = (|| {
            s.string(zk_path)?;
            s.buffer(node.data)?;
            s.i64(numbers.get(&node.acl[..]).copied().unwrap_or(-1))?;
            for v in [st.czxid, st.mzxid, st.ctime, st.mtime] {
                s.i64(v)?;
            }
            for v in [st.version, st.cversion, st.aversion] {
                s.i32(v)?;
            }
            s.i64(st.ephemeral_owner)?;
            s.i64(st.pzxid)
        })();
        if let Err(e) = result {
            failed = Some(e);
        }
        nodes += 1;
        if nodes.is_multiple_of(16_384) {
            progress(Stage::Write, nodes, total);
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    s.string("/")?;
    s.seal()?;
    s.i64(zxid)?;
    s.i32(DIGEST_VERSION)?;
    s.i64(digest)?;
    s.seal()?;
    s.i64(zxid)?;
    s.seal()?;
    s.out.flush()?;
    progress(Stage::Write, total, total);
    Ok(WrittenSnapshot {
        zxid,
        nodes,
        sessions: sessions.len(),
        digest,
        bytes: 0,
    })
}
