//! What the replica needs from the disk. Production implements it with
//! [`storage::Persistence`]; every call but `append` is durable when it returns, because the
//! replica's next output may depend on it (ZAB.md §2: durability before send).

use proto::txn::Txn;
use storage::StorageError;
use tree::DataTree;

pub trait Store {
    /// Queues a transaction for the log; the host reports its durability later
    /// ([`crate::Replica::on_log_durable`] or, standalone, [`crate::Replica::on_durable`]).
    fn append(&mut self, txn: &Txn) -> Result<(), StorageError>;
    fn save_accepted_epoch(&mut self, epoch: u32) -> Result<(), StorageError>;
    fn save_current_epoch(&mut self, epoch: u32) -> Result<(), StorageError>;
    /// Drops every logged transaction after `zxid` (TRUNC).
    fn truncate_log_after(&mut self, zxid: i64) -> Result<(), StorageError>;
    /// Saves a leader's snapshot as this server's whole state and returns the tree it holds.
    /// It replaces the log once the log holds the leader's stream up to `stream_end` durably
    /// (see [`Store::log_durable`]).
    fn replace_with_snapshot(
        &mut self,
        image: &[u8],
        stream_end: i64,
    ) -> Result<DataTree, StorageError>;
    /// The log holds every proposal up to `zxid` durably; called before anything is
    /// acknowledged on that report (a leader's snapshot may commit here).
    fn log_durable(&mut self, zxid: i64) -> Result<(), StorageError>;
    /// Called after each applied transaction: the snapshot policy of the mode (diskless: `txn`
    /// joins the next delta).
    fn applied(&mut self, tree: &DataTree, txn: &Txn);
    /// Called now and then with nothing applied: diskless busy snapshots catch up.
    fn idle(&mut self, tree: &DataTree);
    /// Diskless: the failure checkpoint (see [`storage::Persistence::checkpoint`]).
    fn checkpoint(
        &mut self,
        tree: &DataTree,
        undelivered: &[Txn],
        since: &dyn Fn(i64) -> Option<Vec<Txn>>,
    ) -> Result<(), StorageError>;
    /// Diskless: the epoch label snapshots started from now on carry.
    fn set_epoch_label(&mut self, epoch: u32);
    /// The zxid of the newest complete snapshot on disk (-1: none).
    fn newest_snapshot_zxid(&self) -> i64;
    fn is_diskless(&self) -> bool;
    /// acceptedEpoch and currentEpoch as saved.
    fn epochs(&self) -> Result<storage::epoch::Epochs, StorageError>;
    /// Diskless: the failure checkpoint left by the last failure, if it is whole.
    fn boot_checkpoint(&self) -> Result<Option<storage::checkpoint::Checkpoint>, StorageError>;
}

impl Store for storage::Persistence {
    fn append(&mut self, txn: &Txn) -> Result<(), StorageError> {
        storage::Persistence::append(self, txn)
    }
    fn save_accepted_epoch(&mut self, epoch: u32) -> Result<(), StorageError> {
        storage::Persistence::save_accepted_epoch(self, epoch)
    }
    fn save_current_epoch(&mut self, epoch: u32) -> Result<(), StorageError> {
        storage::Persistence::save_current_epoch(self, epoch)
    }
    fn truncate_log_after(&mut self, zxid: i64) -> Result<(), StorageError> {
        storage::Persistence::truncate_log_after(self, zxid)
    }
    fn replace_with_snapshot(
        &mut self,
        image: &[u8],
        stream_end: i64,
    ) -> Result<DataTree, StorageError> {
        storage::Persistence::replace_with_snapshot(self, image, stream_end)
    }
    fn log_durable(&mut self, zxid: i64) -> Result<(), StorageError> {
        storage::Persistence::log_durable(self, zxid)
    }
    fn applied(&mut self, tree: &DataTree, txn: &Txn) {
        storage::Persistence::applied(self, tree, txn)
    }
    fn idle(&mut self, tree: &DataTree) {
        storage::Persistence::idle(self, tree)
    }
    fn checkpoint(
        &mut self,
        tree: &DataTree,
        undelivered: &[Txn],
        since: &dyn Fn(i64) -> Option<Vec<Txn>>,
    ) -> Result<(), StorageError> {
        storage::Persistence::checkpoint(self, tree, undelivered, since)
    }
    fn set_epoch_label(&mut self, epoch: u32) {
        storage::Persistence::set_epoch_label(self, epoch)
    }
    fn newest_snapshot_zxid(&self) -> i64 {
        storage::Persistence::newest_snapshot_zxid(self)
    }
    fn is_diskless(&self) -> bool {
        storage::Persistence::is_diskless(self)
    }
    fn epochs(&self) -> Result<storage::epoch::Epochs, StorageError> {
        storage::Persistence::epochs(self)
    }
    fn boot_checkpoint(&self) -> Result<Option<storage::checkpoint::Checkpoint>, StorageError> {
        storage::Persistence::boot_checkpoint(self)
    }
}
