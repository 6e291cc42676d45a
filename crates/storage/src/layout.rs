//! Where files live and how they are named.
//!
//! meerkat keeps its files in a `meerkat-1` directory under `dataDir` (snapshots) and
//! `dataLogDir` (the log), so a data dir of Apache ZooKeeper (`version-2`) is never mistaken for
//! ours, and a future format can sit beside this one. Names carry a zxid in fixed-width hex so
//! that name order is zxid order.

use std::path::{Path, PathBuf};

pub const FORMAT_DIR: &str = "meerkat-1";
const WAL_PREFIX: &str = "wal-";
const WAL_SUFFIX: &str = ".log";
const SNAP_PREFIX: &str = "snap-";
const SNAP_SUFFIX: &str = ".snap";
pub const TEMP_SUFFIX: &str = ".tmp";

/// The two directories of one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub snap_dir: PathBuf,
    pub wal_dir: PathBuf,
}

impl Layout {
    /// `data_dir` holds snapshots, `data_log_dir` the log (ZooKeeper's dataDir / dataLogDir).
    pub fn new(data_dir: &Path, data_log_dir: &Path) -> Layout {
        Layout {
            snap_dir: data_dir.join(FORMAT_DIR),
            wal_dir: data_log_dir.join(FORMAT_DIR),
        }
    }

    pub fn wal_path(&self, first_zxid: i64) -> PathBuf {
        self.wal_dir.join(wal_name(first_zxid))
    }

    pub fn snap_path(&self, zxid: i64) -> PathBuf {
        self.snap_dir.join(snap_name(zxid))
    }
}

pub fn wal_name(first_zxid: i64) -> String {
    format!("{WAL_PREFIX}{first_zxid:016x}{WAL_SUFFIX}")
}

pub fn snap_name(zxid: i64) -> String {
    format!("{SNAP_PREFIX}{zxid:016x}{SNAP_SUFFIX}")
}

/// The first zxid of a log segment named by [`wal_name`].
pub fn parse_wal_name(name: &str) -> Option<i64> {
    parse_hex(name.strip_prefix(WAL_PREFIX)?.strip_suffix(WAL_SUFFIX)?)
}

/// The zxid of a snapshot named by [`snap_name`].
pub fn parse_snap_name(name: &str) -> Option<i64> {
    parse_hex(name.strip_prefix(SNAP_PREFIX)?.strip_suffix(SNAP_SUFFIX)?)
}

fn parse_hex(s: &str) -> Option<i64> {
    if s.len() != 16 {
        return None;
    }
    u64::from_str_radix(s, 16).ok().map(|v| v as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sort_by_zxid() {
        for zxid in [0, 1, 0x1_0000_0001, i64::MAX] {
            assert_eq!(parse_wal_name(&wal_name(zxid)), Some(zxid));
            assert_eq!(parse_snap_name(&snap_name(zxid)), Some(zxid));
        }
        assert!(wal_name(0xff) < wal_name(0x100));
        assert_eq!(parse_wal_name("wal-00ff.log"), None);
        assert_eq!(parse_snap_name("snap-000000000000000g.snap"), None);
        assert_eq!(parse_snap_name("log.100"), None);
    }
}
