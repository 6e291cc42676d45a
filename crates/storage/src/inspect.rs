//! What an operator sees with `meerkat data inspect`: every snapshot and log segment with its
//! zxid range and whether its checksums hold; and the one repair meerkat offers, cutting a log
//! at a damaged record (`meerkat data truncate`).

use crate::error::{Result, StorageError};
use crate::fs::FileSystem;
use crate::layout::{self, Layout};
use crate::snapshot_file;
use crate::wal::{self, ScanEnd};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    Ok,
    /// A torn final record that recovery will cut off.
    TornTail {
        offset: u64,
    },
    Damaged(String),
}

#[derive(Debug, Clone)]
pub struct SnapshotInfo {
    pub path: PathBuf,
    pub zxid: i64,
    pub bytes: u64,
    pub nodes: Option<u64>,
    pub health: Health,
}

#[derive(Debug, Clone)]
pub struct SegmentInfo {
    pub path: PathBuf,
    pub first_zxid: i64,
    pub last_zxid: Option<i64>,
    pub records: usize,
    pub bytes: u64,
    pub health: Health,
}

#[derive(Debug, Clone)]
pub struct Report {
    pub snapshots: Vec<SnapshotInfo>,
    pub segments: Vec<SegmentInfo>,
    /// Diskless: the delta files continuing full snapshots ([`crate::delta`]).
    pub deltas: Vec<(PathBuf, u64, Result<crate::delta::Summary, String>)>,
}

impl Report {
    pub fn is_healthy(&self) -> bool {
        self.snapshots.iter().all(|s| s.health == Health::Ok)
            && self
                .segments
                .iter()
                .all(|s| matches!(s.health, Health::Ok | Health::TornTail { .. }))
            && self.deltas.iter().all(|(_, _, summary)| summary.is_ok())
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        let health = |h: &Health| match h {
            Health::Ok => "ok".to_string(),
            Health::TornTail { offset } => {
                format!("torn tail at offset {offset} (recovery cuts it)")
            }
            Health::Damaged(why) => format!("DAMAGED: {why}"),
        };
        let _ = writeln!(out, "snapshots ({}):", self.snapshots.len());
        for s in &self.snapshots {
            let nodes = s.nodes.map_or("?".to_string(), |n| n.to_string());
            let _ = writeln!(
                out,
                "  {}  zxid {:#x}  {} bytes  {} nodes  {}",
                s.path.display(),
                s.zxid,
                s.bytes,
                nodes,
                health(&s.health)
            );
        }
        if !self.deltas.is_empty() {
            let _ = writeln!(out, "delta files ({}):", self.deltas.len());
        }
        for (path, bytes, summary) in &self.deltas {
            let what = match summary {
                Ok(s) => format!(
                    "continues {:#x}  {} txns up to {}  {} bytes  {}",
                    s.base_zxid,
                    s.txns,
                    s.last_zxid.map_or("-".to_string(), |z| format!("{z:#x}")),
                    bytes,
                    s.ends_early_at.map_or("ok".to_string(), |at| format!(
                        "ends in a torn or damaged record at offset {at} (recovery stops there)"
                    ))
                ),
                Err(why) => format!("DAMAGED: {why}"),
            };
            let _ = writeln!(out, "  {}  {what}", path.display());
        }
        let _ = writeln!(out, "log segments ({}):", self.segments.len());
        for s in &self.segments {
            let last = s.last_zxid.map_or("-".to_string(), |z| format!("{z:#x}"));
            let _ = writeln!(
                out,
                "  {}  zxids {:#x}..{}  {} records  {} bytes  {}",
                s.path.display(),
                s.first_zxid,
                last,
                s.records,
                s.bytes,
                health(&s.health)
            );
        }
        out
    }
}

/// Reads and verifies every file (snapshots are fully loaded to check their digests).
pub fn inspect(fs: &dyn FileSystem, layout: &Layout) -> Result<Report> {
    let mut snapshots = Vec::new();
    for name in list(fs, &layout.snap_dir)? {
        let Some(zxid) = layout::parse_snap_name(&name) else {
            continue;
        };
        let path = layout.snap_dir.join(&name);
        let bytes = fs.len(&path).unwrap_or(0);
        let (nodes, health) = match snapshot_file::read(fs, &path) {
            Ok(loaded) => (Some(loaded.header.node_count), Health::Ok),
            Err(e) => (None, Health::Damaged(e.to_string())),
        };
        snapshots.push(SnapshotInfo {
            path,
            zxid,
            bytes,
            nodes,
            health,
        });
    }
    let mut deltas = Vec::new();
    for base in crate::delta::list(fs, layout)? {
        let path = crate::delta::path(layout, base);
        let bytes = fs.len(&path).unwrap_or(0);
        let summary = crate::delta::summarize(fs, &path).map_err(|e| e.to_string());
        deltas.push((path, bytes, summary));
    }
    let names: Vec<String> = list(fs, &layout.wal_dir)?
        .into_iter()
        .filter(|n| layout::parse_wal_name(n).is_some())
        .collect();
    let mut segments = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let Some(first_zxid) = layout::parse_wal_name(name) else {
            continue;
        };
        let path = layout.wal_dir.join(name);
        let bytes = fs.len(&path).map_err(StorageError::io("read log", &path))?;
        let mut buf = wal::read_records(fs, &path).map_err(StorageError::io("read log", &path))?;
        if !matches!(wal::scan(&buf), Ok(s) if matches!(s.end, ScanEnd::Clean { .. })) {
            buf = fs
                .read_all(&path)
                .map_err(StorageError::io("read log", &path))?;
        }
        let is_last = i + 1 == names.len();
        let info = match wal::scan(&buf) {
            Ok(scan) => SegmentInfo {
                path,
                first_zxid,
                last_zxid: scan.records.last().map(|r| r.zxid),
                records: scan.records.len(),
                bytes,
                health: match scan.end {
                    ScanEnd::Clean { .. } => Health::Ok,
                    ScanEnd::Invalid {
                        offset,
                        later_valid: false,
                        ..
                    } if is_last => Health::TornTail {
                        offset: offset as u64,
                    },
                    ScanEnd::Invalid { offset, reason, .. } => {
                        Health::Damaged(format!("{reason} at offset {offset}"))
                    }
                },
            },
            Err(reason) => SegmentInfo {
                path,
                first_zxid,
                last_zxid: None,
                records: 0,
                bytes,
                health: Health::Damaged(reason.to_string()),
            },
        };
        segments.push(info);
    }
    Ok(Report {
        snapshots,
        segments,
        deltas,
    })
}

/// The operator's way past damage in the log: cut `segment` at `offset` (dropping that record
/// and all after it in this segment) and remove every later segment. Transactions after the
/// cut are lost on this server; in an ensemble it fetches them again from the leader.
pub fn truncate_log(
    fs: &dyn FileSystem,
    layout: &Layout,
    segment: &Path,
    offset: u64,
) -> Result<Vec<PathBuf>> {
    let name = segment
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(layout::parse_wal_name)
        .ok_or_else(|| StorageError::Corrupt {
            what: "log segment name",
            path: segment.to_path_buf(),
            offset: 0,
            detail: "not a meerkat log segment".into(),
        })?;
    let path = layout.wal_path(name);
    let mut file = fs
        .open_write(&path, false)
        .map_err(StorageError::io("open log", &path))?;
    file.set_len(offset.max(wal::HEADER_LEN as u64))
        .map_err(StorageError::io("truncate log", &path))?;
    file.sync_data()
        .map_err(StorageError::io("fsync log", &path))?;
    let mut removed = Vec::new();
    for later in list(fs, &layout.wal_dir)?
        .iter()
        .filter_map(|n| layout::parse_wal_name(n))
    {
        if later > name {
            let p = layout.wal_path(later);
            fs.remove(&p).map_err(StorageError::io("remove", &p))?;
            removed.push(p);
        }
    }
    fs.sync_dir(&layout.wal_dir)
        .map_err(StorageError::io("sync log directory", &layout.wal_dir))?;
    Ok(removed)
}

fn list(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<String>> {
    match fs.list(dir) {
        Ok(names) => Ok(names),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(StorageError::Io {
            op: "list",
            path: dir.to_path_buf(),
            source: e,
        }),
    }
}
