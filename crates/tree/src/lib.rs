//! The in-memory data tree and the transactions that change it (paper §4.1).
//!
//! # Layout
//! * [`data_tree`]: the znodes, sessions and ephemerals; [`DataTree::apply`] is the only way
//!   state changes, one idempotent transaction at a time.
//! * [`prep`]: turns write requests into transactions, validating them against the future
//!   state ([`pending`]) in ZooKeeper's order of checks.
//! * [`quota`]: ZooKeeper's quotas: the limits and stats nodes under `/zookeeper/quota`, kept
//!   current as transactions apply, and enforced by prep when `zookeeper.enforceQuota` is on.
//! * [`acl`]: schemes, permission checks, ACL interning.
//! * [`node`], [`path`], [`digest`]: a znode, path syntax, the incremental tree digest;
//!   [`path_set`]: a session's ephemeral paths; [`keyed_hasher`]: the hasher of hot tables.
//! * [`record`], [`children`], [`links`]: a znode's stat, name and data packed in one
//!   allocation; its children as a set of ids keyed by those names; its ACL list and children
//!   behind one pointer that leaves share (DESIGN.md §9's memory target).
//! * [`arena`], [`snapshot`]: copy-on-write node storage, so a consistent snapshot can be
//!   written while writes continue; the loader that rebuilds a tree from one.

pub mod acl;
pub mod arena;
pub mod children;
pub mod data_tree;
pub mod digest;
pub mod keyed_hasher;
pub mod links;
pub mod node;
pub mod path;
pub mod path_set;
pub mod pending;
pub mod prep;
pub mod quota;
pub mod record;
pub mod snapshot;

pub use data_tree::{DataTree, Trigger, TxnOutcome};
pub use prep::{Prep, PrepContext};
pub use snapshot::{LoadError, TreeLoader, TreeSnapshot};
