//! ZooKeeper's ACL cache (`ReferenceCountedACLCache`): every distinct ACL list is stored once
//! under a number, and each node holds the number. −1 stands for `OPEN_ACL_UNSAFE` without an
//! entry (the root and `/zookeeper` are created that way).

use proto::{Acl, Id};
use std::collections::{BTreeMap, HashMap};

pub const OPEN_UNSAFE_ACL_ID: i64 = -1;

#[derive(Debug, Default, Clone)]
pub struct AclCache {
    by_id: BTreeMap<i64, Vec<Acl>>,
    by_list: HashMap<Vec<Acl>, i64>,
    last_id: i64,
}

pub fn open_acl_unsafe() -> Vec<Acl> {
    vec![Acl {
        perms: proto::watch::perms::ALL,
        id: Id {
            scheme: "world".into(),
            id: "anyone".into(),
        },
    }]
}

impl AclCache {
    /// An entry as a snapshot lists it (`deserialize`): the next new number follows the
    /// largest seen.
    pub fn insert(&mut self, id: i64, acl: Vec<Acl>) {
        self.last_id = self.last_id.max(id);
        self.by_list.insert(acl.clone(), id);
        self.by_id.insert(id, acl);
    }

    /// The number of `acl`, adding it if new (`convertAcls`).
    pub fn intern(&mut self, acl: &[Acl]) -> i64 {
        if let Some(&id) = self.by_list.get(acl) {
            return id;
        }
        self.last_id += 1;
        self.insert(self.last_id, acl.to_vec());
        self.last_id
    }

    /// The list a node's number stands for (`convertLong`); `None` if the cache lacks it.
    pub fn get(&self, id: i64) -> Option<Vec<Acl>> {
        if id == OPEN_UNSAFE_ACL_ID {
            return Some(open_acl_unsafe());
        }
        self.by_id.get(&id).cloned()
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}
