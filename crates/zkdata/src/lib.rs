//! Apache ZooKeeper data directories (3.4–3.9): reading them as ZooKeeper does on start-up, so
//! a meerkat data dir can be made from one (`meerkat data import --from-zookeeper`), and
//! writing a snapshot ZooKeeper starts from (`meerkat data export --to-zookeeper`).
//! Nothing here ever writes to a ZooKeeper directory it reads.
//!
//! # Layout
//! * [`restore`]: the start-up procedure: newest valid snapshot, log replay, digest checks,
//!   dead sessions. The entry point.
//! * [`snapshot`], [`txn_log`], [`txn`]: the file formats: snapshot files (plain, gzip,
//!   snappy via [`compression`]), log files with their checksums and torn tails, the logged
//!   transaction types.
//! * [`zk_tree`], [`process_txn`], [`acl_cache`], [`digest`]: ZooKeeper's data tree with its
//!   replay semantics, its ACL numbering and its 3.6+ digest; [`quota`], its quota counts.
//! * [`to_meerkat`], [`meerkat_dir`]: the restored state as a meerkat tree and data dir.
//! * [`snapshot_writer`], [`export`]: the way back.
//! * [`jute_stream`], [`progress`], [`error`]: bounded streaming Jute, progress counts, errors
//!   that name the file and offset.

pub mod acl_cache;
pub mod compression;
pub mod digest;
pub mod error;
pub mod export;
pub mod jute_stream;
pub mod meerkat_dir;
pub mod process_txn;
pub mod progress;
pub mod quota;
pub mod restore;
pub mod snapshot;
pub mod snapshot_writer;
pub mod to_meerkat;
pub mod txn;
pub mod txn_log;
pub mod zk_tree;

pub use error::{Result, ZkDataError};
pub use progress::{Progress, Stage};
pub use restore::{locate, restore, Restored, Source};
