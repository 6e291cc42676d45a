//! The coordination recipes of the ZooKeeper paper (§2.4), each built only on the public
//! client API, plus the thesis's sequential-znode message queue.
//!
//! | recipe | module | znodes |
//! |---|---|---|
//! | configuration | [`config_watch`] | one znode, read with a watch |
//! | rendezvous | [`rendezvous`] | one znode, filled in later |
//! | group membership | [`group`] | an ephemeral child per member |
//! | lock without herd effect | [`lock`] | Curator `InterProcessMutex`: `_c_<uuid>-lock-<seq>` |
//! | read/write lock | [`rw_lock`] | Curator `InterProcessReadWriteLock`: `__READ__` / `__WRIT__` |
//! | double barrier | [`barrier`] | an ephemeral child per participant, plus `ready` |
//! | leader election | [`election`] | Curator `LeaderLatch`: `_c_<uuid>-latch-<seq>` |
//! | message queue | [`queue`] | persistent sequential `msg-<seq>` children |
//!
//! Lock and election share Apache Curator's znode layout (InterProcessMutex, LeaderLatch), so a
//! meerkat-based process and a Curator-based one contend for the same lock or leadership
//! correctly; `compat/curator` checks it against the real Curator.
//!
//! Common rules: waits never poll, they follow one watch at a time; a ConnectionLoss while
//! creating a sequential znode is resolved by finding our own node again through the
//! `_c_<uuid>-` prefix (Curator's "protected" mode), so a lost answer cannot leave an orphan
//! node that blocks everyone.

pub mod barrier;
pub mod config_watch;
pub mod election;
pub mod group;
pub mod lock;
pub mod queue;
pub mod rendezvous;
pub mod rw_lock;
mod sequential;
