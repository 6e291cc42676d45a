//! What can go wrong in persistence, with enough context for an operator to act on it.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Damage that is not a torn tail: the data after it cannot be trusted, so start-up stops.
    #[error(
        "corrupt {what} in {path} at byte offset {offset}: {detail}. Records after this point \
         cannot be trusted. To proceed: restore this data dir from a backup or let it resync \
         from a replica, or accept losing this record and everything after it with \
         `meerkat data truncate {path} {offset}` (see docs/storage.md)"
    )]
    Corrupt {
        what: &'static str,
        path: PathBuf,
        offset: u64,
        detail: String,
    },
    #[error(
        "the log has a gap: {path} starts after zxid {expected_prev:#x} but the log before it \
         ends at {found_prev:#x}; a log segment is missing"
    )]
    Gap {
        path: PathBuf,
        expected_prev: i64,
        found_prev: i64,
    },
    #[error("replaying {path} at byte offset {offset}: {detail}")]
    Replay {
        path: PathBuf,
        offset: u64,
        detail: String,
    },
    #[error("the storage writer has stopped after an earlier error; the server must restart")]
    Stopped,
    /// A snapshot was abandoned on purpose (a failure checkpoint or a leader's SNAP needed the
    /// disk); it left no file behind.
    #[error("snapshot cancelled")]
    Cancelled,
}

impl StorageError {
    pub(crate) fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> StorageError {
        let path = path.into();
        move |source| StorageError::Io { op, path, source }
    }
}

pub type Result<T, E = StorageError> = std::result::Result<T, E>;
