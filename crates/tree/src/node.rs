//! One znode as stored: data, a shared ACL list, persisted stat and children by name.
//! The node does not store its own path or name; its parent's child map holds the name once.
//!
//! Data and the child map are shared pointers so that copying a node (when a snapshot holds
//! its arena chunk, see [`crate::arena`]) costs a few reference-count increments.

use crate::acl::AclList;
use proto::{Stat, StatPersisted};
use std::collections::BTreeMap;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

/// Index of a node in the tree's arena.
pub type NodeId = u32;

#[derive(Debug, Clone)]
pub struct Node {
    pub data: Option<Arc<[u8]>>,
    pub acl: AclList,
    pub stat: StatPersisted,
    pub children: Children,
}

/// A node's children by name, in name order. Copy-on-write: a copy shares the map until one
/// side changes it, and every childless node shares one empty map (no allocation per leaf).
#[derive(Debug, Clone)]
pub struct Children(Arc<BTreeMap<Arc<str>, NodeId>>);

impl Default for Children {
    fn default() -> Self {
        static EMPTY: OnceLock<Arc<BTreeMap<Arc<str>, NodeId>>> = OnceLock::new();
        Children(EMPTY.get_or_init(|| Arc::new(BTreeMap::new())).clone())
    }
}

impl Deref for Children {
    type Target = BTreeMap<Arc<str>, NodeId>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Children {
    /// A map built in one pass from names already in strictly increasing order.
    pub fn from_sorted(children: Vec<(Arc<str>, NodeId)>) -> Children {
        if children.is_empty() {
            return Children::default();
        }
        Children(Arc::new(children.into_iter().collect()))
    }

    pub fn insert(&mut self, name: &str, id: NodeId) {
        Arc::make_mut(&mut self.0).insert(name.into(), id);
    }

    pub fn remove(&mut self, name: &str) -> Option<NodeId> {
        if !self.0.contains_key(name) {
            return None;
        }
        let removed = Arc::make_mut(&mut self.0).remove(name);
        if self.0.is_empty() {
            *self = Children::default();
        }
        removed
    }
}

impl Node {
    /// The client-visible Stat (`DataNode.copyStat`): the persisted fields plus dataLength and
    /// numChildren. The stored cversion counts creates (it names sequential children); clients
    /// see creates plus deletes, i.e. `2 × creates − children still present`. Containers and
    /// TTL nodes show ephemeralOwner 0: their marker is internal.
    pub fn stat(&self) -> Stat {
        let s = &self.stat;
        let num_children = self.children.len() as i32;
        let ephemeral_owner = match NodeKind::of_owner(s.ephemeral_owner) {
            NodeKind::Ephemeral(owner) => owner,
            _ => 0,
        };
        Stat {
            czxid: s.czxid,
            mzxid: s.mzxid,
            ctime: s.ctime,
            mtime: s.mtime,
            version: s.version,
            cversion: s.cversion.wrapping_mul(2).wrapping_sub(num_children),
            aversion: s.aversion,
            ephemeral_owner,
            data_length: self.data.as_ref().map_or(0, |d| d.len() as i32),
            num_children,
            pzxid: s.pzxid,
        }
    }

    pub fn data_vec(&self) -> Option<Vec<u8>> {
        self.data.as_ref().map(|d| d.to_vec())
    }
}

/// What kind of znode an `ephemeralOwner` value denotes (`EphemeralType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    Persistent,
    /// Owned by the session with this id.
    Ephemeral(i64),
    Container,
    /// Persistent with a time-to-live in ms.
    Ttl(i64),
}

/// ephemeralOwner of container znodes (`Long.MIN_VALUE`).
pub const CONTAINER_EPHEMERAL_OWNER: i64 = i64::MIN;
/// TTL znodes carry 0xFF in the top byte of ephemeralOwner and the ttl below it.
const TTL_MASK: i64 = 0xff00_0000_0000_0000_u64 as i64;
/// The largest ttl that fits under the mask.
pub const TTL_MAX_MS: i64 = 0x00ff_ffff_ffff_ffff;

impl NodeKind {
    pub fn of_owner(owner: i64) -> NodeKind {
        if owner == 0 {
            NodeKind::Persistent
        } else if owner == CONTAINER_EPHEMERAL_OWNER {
            NodeKind::Container
        } else if owner & TTL_MASK == TTL_MASK {
            NodeKind::Ttl(owner & TTL_MAX_MS)
        } else {
            NodeKind::Ephemeral(owner)
        }
    }

    pub fn ttl_owner(ttl_ms: i64) -> i64 {
        TTL_MASK | (ttl_ms & TTL_MAX_MS)
    }
}

/// ZooKeeper's CreateMode flag values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateMode {
    Persistent,
    Ephemeral,
    PersistentSequential,
    EphemeralSequential,
    Container,
    PersistentWithTtl,
    PersistentSequentialWithTtl,
}

impl CreateMode {
    pub fn from_flag(flag: i32) -> Option<CreateMode> {
        use CreateMode::*;
        Some(match flag {
            0 => Persistent,
            1 => Ephemeral,
            2 => PersistentSequential,
            3 => EphemeralSequential,
            4 => Container,
            5 => PersistentWithTtl,
            6 => PersistentSequentialWithTtl,
            _ => return None,
        })
    }

    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential
                | CreateMode::EphemeralSequential
                | CreateMode::PersistentSequentialWithTtl
        )
    }

    pub fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }

    pub fn is_ttl(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl
        )
    }

    pub fn is_container(self) -> bool {
        self == CreateMode::Container
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_kinds() {
        assert_eq!(NodeKind::of_owner(0), NodeKind::Persistent);
        assert_eq!(
            NodeKind::of_owner(0x0100_0000_0000_0001),
            NodeKind::Ephemeral(0x0100_0000_0000_0001)
        );
        assert_eq!(
            NodeKind::of_owner(CONTAINER_EPHEMERAL_OWNER),
            NodeKind::Container
        );
        assert_eq!(
            NodeKind::of_owner(NodeKind::ttl_owner(5000)),
            NodeKind::Ttl(5000)
        );
    }
}
