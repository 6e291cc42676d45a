//! One znode as stored, and the view of it readers get.
//!
//! A stored node is two pointers: its [`NodeRecord`] (stat, name, data) and its [`Links`] (ACL
//! list and children, shared by leaves). The node does not store its own path; its name is in
//! its record, and its parent's child set finds it by that name. Copying a node (when a
//! snapshot holds its arena chunk, see [`crate::arena`]) costs two reference-count increments.

use crate::acl::AclList;
use crate::arena::Arena;
use crate::children::Children;
use crate::links::Links;
use crate::record::NodeRecord;
use proto::{Stat, StatPersisted};
use std::sync::Arc;

/// Index of a node in the tree's arena.
pub type NodeId = u32;

#[derive(Debug, Clone)]
pub struct Node {
    pub(crate) record: NodeRecord,
    pub(crate) links: Arc<Links>,
}

impl Node {
    pub(crate) fn acl(&self) -> &AclList {
        &self.links.acl
    }

    pub(crate) fn children(&self) -> &Children {
        &self.links.children
    }

    pub(crate) fn view<'a>(&'a self, arena: &'a Arena) -> NodeView<'a> {
        NodeView {
            data: self.record.data(),
            stat: self.record.stat(),
            acl: &self.links.acl,
            children: ChildNames {
                children: &self.links.children,
                arena,
            },
        }
    }
}

/// A znode as readers see it: data, persisted stat, ACL and children.
#[derive(Debug, Clone)]
pub struct NodeView<'a> {
    pub data: Option<&'a [u8]>,
    pub stat: StatPersisted,
    pub acl: &'a AclList,
    pub children: ChildNames<'a>,
}

/// A node's children, named.
#[derive(Clone)]
pub struct ChildNames<'a> {
    children: &'a Children,
    arena: &'a Arena,
}

impl std::fmt::Debug for ChildNames<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.keys()).finish()
    }
}

impl<'a> ChildNames<'a> {
    pub fn len(&self) -> usize {
        self.children.len()
    }

    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    /// Child names in name order.
    pub fn keys(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        let arena = self.arena;
        let sorted = self.children.sorted(|id| arena.name(id));
        sorted.into_iter().map(move |id| arena.name(id))
    }
}

impl NodeView<'_> {
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
            data_length: self.data.map_or(0, |d| d.len() as i32),
            num_children,
            pzxid: s.pzxid,
        }
    }

    pub fn data_vec(&self) -> Option<Vec<u8>> {
        self.data.map(<[u8]>::to_vec)
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
