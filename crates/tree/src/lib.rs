//! The in-memory data tree and the transactions that change it (paper §4.1).
//!
//! # Layout
//! * [`data_tree`]: the znodes, sessions and ephemerals; [`DataTree::apply`] is the only way
//!   state changes, one idempotent transaction at a time.
//! * [`prep`]: turns write requests into transactions, validating them against the future
//!   state ([`pending`]) in ZooKeeper's order of checks.
//! * [`acl`]: schemes, permission checks, ACL interning.
//! * [`node`], [`path`], [`digest`]: a znode, path syntax, the incremental tree digest.

pub mod acl;
pub mod data_tree;
pub mod digest;
pub mod node;
pub mod path;
pub mod pending;
pub mod prep;

pub use data_tree::{DataTree, Trigger, TxnOutcome};
pub use prep::{Prep, PrepContext};
