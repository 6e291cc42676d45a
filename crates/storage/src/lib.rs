//! meerkat's persistence (DESIGN.md §5): the write-ahead log with group commit, consistent
//! snapshots, recovery, retention, and the tools operators use on a data dir.
//!
//! # Layout
//! * [`persistence`]: the server's handle — append, durable notifications, snapshot policy;
//!   the seam where the diskless mode plugs in.
//! * [`group_commit`], [`wal_writer`], [`wal`]: the log's writer thread, segment rolling, and
//!   the segment format (header, framed records, scanning).
//! * [`snapshot_file`]: the snapshot format, written from a frozen tree on its own thread;
//!   [`delta`]: diskless mode's incremental busy snapshots.
//! * [`execution`]: threads in production, or stepped by the host without threads or clocks
//!   ([`stepped_log`]: group commit when the host flushes), so the deterministic simulator runs
//!   this very code.
//! * [`recovery`]: newest valid snapshot + log replay; torn tails cut, damage refused.
//! * [`replacement`]: a leader's snapshot replacing the log, atomic across crashes.
//! * [`purge`], [`inspect`]: retention; listing, verification and repair for operators.
//! * [`fs`], [`faulty_fs`]: the file operations used, and a file system that forgets unsynced
//!   data, for crash tests.
//! * [`record`], [`layout`], [`error`]: framing and checksums, file names, errors.

pub mod atomic_file;
pub mod checkpoint;
pub mod delta;
pub mod epoch;
pub mod error;
pub mod execution;
pub mod faulty_fs;
pub mod fs;
pub mod group_commit;
pub mod inspect;
pub mod layout;
pub mod lock;
pub mod persistence;
#[cfg(feature = "planted-bugs")]
pub mod planted;
pub mod purge;
pub mod recent_samples;
pub mod record;
pub mod recovery;
pub mod replacement;
pub mod snapshot_file;
mod snapshot_job;
pub use snapshot_job::DELTA_REST_MIN_MS;
pub mod stepped_log;
pub mod wal;
pub mod wal_writer;

pub use error::StorageError;
pub use execution::Execution;
pub use fs::{FileSystem, RealFs};
pub use layout::Layout;
pub use persistence::{Persistence, PersistenceOptions};
pub use recovery::{Recovered, Replay};
