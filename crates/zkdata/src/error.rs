//! What can go wrong reading a ZooKeeper data directory or writing one, always with the file
//! and, where there is one, the byte offset, so that an operator can look at the spot.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ZkDataError {
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path} is not a ZooKeeper data directory: it has no version-2 directory (ZooKeeper keeps \
         its snapshots in dataDir/version-2 and its logs in dataLogDir/version-2)"
    )]
    NotZooKeeper { path: PathBuf },
    #[error("no valid ZooKeeper snapshot in {dir}{}", skipped_list(.skipped))]
    NoSnapshot {
        dir: PathBuf,
        /// Snapshot files found but unusable, newest first, each with the reason.
        skipped: Vec<(PathBuf, String)>,
    },
    /// Damage: the bytes at this spot are not what ZooKeeper writes.
    #[error("{path} at byte offset {offset}: {detail}")]
    Corrupt {
        path: PathBuf,
        offset: u64,
        detail: String,
    },
    #[error(
        "the transaction log has a gap: {path} at byte offset {offset} holds zxid {found:#x} but \
         the next transaction after {previous:#x} was expected{}; a log file is missing",
        .after.as_ref().map(|p| format!(" (the last one read was in {})", p.display())).unwrap_or_default()
    )]
    Gap {
        path: PathBuf,
        offset: u64,
        previous: i64,
        found: i64,
        after: Option<PathBuf>,
    },
    #[error(
        "the log ends at zxid {last:#x} but the snapshot {snapshot} was taken at {snapshot_zxid:#x} \
         and the transactions between are missing"
    )]
    LogBehindSnapshot {
        snapshot: PathBuf,
        snapshot_zxid: i64,
        last: i64,
    },
    #[error(
        "tree digest mismatch after zxid {zxid:#x} ({source_of}): ZooKeeper recorded {expected:#x}, \
         the replayed tree has {found:#x}. ZooKeeper itself would log \"Digests are not matching\" \
         here; the data on disk does not replay to the state ZooKeeper had"
    )]
    DigestMismatch {
        zxid: i64,
        source_of: String,
        expected: i64,
        found: i64,
    },
    #[error("{path}: {detail}")]
    Invalid { path: PathBuf, detail: String },
    #[error(transparent)]
    Storage(#[from] storage::StorageError),
    #[error("the snapshot's nodes do not form a tree: {0}")]
    Tree(#[from] tree::LoadError),
}

fn skipped_list(skipped: &[(PathBuf, String)]) -> String {
    if skipped.is_empty() {
        return String::new();
    }
    let mut out = String::from(":");
    for (path, why) in skipped {
        out.push_str(&format!("\n  {}: {why}", path.display()));
    }
    out
}

impl ZkDataError {
    pub(crate) fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> ZkDataError {
        let path = path.into();
        move |source| ZkDataError::Io { op, path, source }
    }
}

pub type Result<T, E = ZkDataError> = std::result::Result<T, E>;
