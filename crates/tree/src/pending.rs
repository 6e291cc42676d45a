//! Changes proposed but not yet applied (ZooKeeper's `outstandingChanges`).
//!
//! Prep validates each request against the *future* state: the tree plus every change already
//! turned into a transaction but not yet applied (waiting for fsync or a quorum). Each change
//! is recorded here by path; once its transaction is applied the record is dropped.

use crate::acl::AclList;
use crate::data_tree::DataTree;
use crate::keyed_hasher::KeyedHasher;
use crate::quota::PendingUsage;
use proto::StatPersisted;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// The future state of one path. `stat == None` means the path will not exist.
#[derive(Debug, Clone)]
pub struct ChangeRecord {
    pub zxid: i64,
    pub stat: Option<StatPersisted>,
    pub child_count: i32,
    pub acl: AclList,
    /// The length of the node's data (for quota checks).
    pub data_len: i64,
}

#[derive(Debug, Default)]
pub struct PendingChanges {
    /// Keyed by a path shared with `order` and a multi's undo log: one copy per path while
    /// it has pending changes (a parent under many creates keeps one).
    by_path: HashMap<Arc<str>, ChangeRecord, KeyedHasher>,
    /// (zxid, path) in the order the records were added, to drop them once applied.
    order: VecDeque<(i64, Arc<str>)>,
    /// The quota usage these changes will add (kept only while quotas are enforced).
    usage: PendingUsage,
}

/// Undo log for a multi: the records its ops replaced, to restore if one op fails.
pub type Undo = Vec<(Arc<str>, Option<ChangeRecord>)>;

impl PendingChanges {
    /// The future state of `path`: its pending record, else the tree's current node.
    pub fn lookup(&self, tree: &DataTree, path: &str) -> Option<ChangeRecord> {
        if let Some(record) = self.by_path.get(path) {
            return record.stat.as_ref().map(|_| record.clone());
        }
        tree.get(path).map(|node| ChangeRecord {
            zxid: node.stat.mzxid,
            stat: Some(node.stat.clone()),
            child_count: node.children.len() as i32,
            acl: node.acl.clone(),
            data_len: node.data.map_or(0, <[u8]>::len) as i64,
        })
    }

    /// True when a pending change deletes `path`.
    pub fn is_pending_delete(&self, path: &str) -> bool {
        self.by_path.get(path).is_some_and(|r| r.stat.is_none())
    }

    /// Every pending record (used to compute a closing session's ephemerals).
    pub fn records(&self) -> impl Iterator<Item = (&str, &ChangeRecord)> {
        self.by_path.iter().map(|(path, record)| (&**path, record))
    }

    pub fn add(&mut self, path: &str, record: ChangeRecord, undo: Option<&mut Undo>) {
        // A path with pending changes already has a shared copy: a parent under a stream of
        // creates gets a record per create, and copying its path each time was a malloc.
        let path: Arc<str> = match self.by_path.get_key_value(path) {
            Some((shared, _)) => shared.clone(),
            None => Arc::from(path),
        };
        let zxid = record.zxid;
        let previous = self.by_path.insert(path.clone(), record);
        if let Some(undo) = undo {
            undo.push((path.clone(), previous));
        }
        self.order.push_back((zxid, path));
    }

    /// Restores the records a failed multi replaced, newest first.
    pub fn rollback(&mut self, undo: Undo, zxid: i64) {
        for (path, previous) in undo.into_iter().rev() {
            match previous {
                Some(record) => self.by_path.insert(path, record),
                None => self.by_path.remove(&path),
            };
        }
        while self.order.back().is_some_and(|(z, _)| *z == zxid) {
            self.order.pop_back();
        }
        self.usage.rollback(zxid);
    }

    /// The quota usage pending changes will add, by quota path.
    pub fn usage(&self) -> &PendingUsage {
        &self.usage
    }

    pub fn usage_mut(&mut self) -> &mut PendingUsage {
        &mut self.usage
    }

    /// Drops the records of every transaction up to and including `zxid`.
    pub fn applied(&mut self, zxid: i64) {
        self.usage.applied(zxid);
        while let Some((z, _)) = self.order.front() {
            if *z > zxid {
                break;
            }
            let Some((z, path)) = self.order.pop_front() else {
                break;
            };
            if let std::collections::hash_map::Entry::Occupied(entry) = self.by_path.entry(path) {
                if entry.get().zxid == z {
                    entry.remove();
                }
            }
        }
    }

    pub fn len(&self) -> usize {
        self.by_path.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_path.is_empty()
    }
}
