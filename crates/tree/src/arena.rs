//! The node arena, copy-on-write in fixed-size chunks.
//!
//! A snapshot must see the tree at one exact zxid while writes go on (DESIGN.md §5: consistent
//! snapshots, not ZooKeeper's fuzzy ones). Freezing clones only the list of chunk pointers
//! (a million nodes are 62,500 chunks); afterwards the first change to a chunk the frozen view
//! still holds copies that one chunk. A chunk copy is cheap because a node is two shared
//! pointers (record, links): 16 bytes, no data copied.

use crate::node::{Node, NodeId};
use std::sync::Arc;

/// Nodes per chunk. Writes during a snapshot copy each chunk they touch (256 bytes at this
/// size), so small chunks keep a snapshot under random writes from copying the whole arena; the
/// chunk list a freeze clones is 62,500 pointers for a million nodes (a quarter millisecond).
const CHUNK_LEN: usize = 16;

/// A fixed array rather than a `Vec`: one allocation per chunk, no length or capacity.
type Chunk = [Option<Node>; CHUNK_LEN];

#[derive(Debug, Clone, Default)]
pub struct Arena {
    chunks: Vec<Arc<Chunk>>,
    /// Slots handed out so far (live or freed); the slots after them in the last chunk are
    /// empty and not free.
    len: usize,
}

impl Arena {
    pub fn get(&self, id: NodeId) -> Option<&Node> {
        let id = id as usize;
        self.chunks.get(id / CHUNK_LEN)?[id % CHUNK_LEN].as_ref()
    }

    /// The name of node `id` ("" for a free slot: callers pass ids from live child sets).
    pub fn name(&self, id: NodeId) -> &str {
        let node = self.get(id);
        debug_assert!(node.is_some(), "node {id} is named by a child set but free");
        node.map_or("", |n| n.record.name())
    }

    /// The node, copying its chunk first if a frozen view shares it.
    pub fn get_mut(&mut self, id: NodeId) -> Option<&mut Node> {
        let id = id as usize;
        let chunk = self.chunks.get_mut(id / CHUNK_LEN)?;
        Arc::make_mut(chunk)[id % CHUNK_LEN].as_mut()
    }

    /// Puts a node in a fresh slot at the end.
    pub fn push(&mut self, node: Node) -> NodeId {
        let id = self.len;
        assert!(id < NodeId::MAX as usize, "more nodes than ids");
        if id.is_multiple_of(CHUNK_LEN) {
            self.chunks.push(Arc::new(std::array::from_fn(|_| None)));
        }
        let chunk = self.chunks.last_mut().expect("a chunk was just ensured");
        let slot = &mut Arc::make_mut(chunk)[id % CHUNK_LEN];
        debug_assert!(slot.is_none(), "slot {id} past the end is taken");
        *slot = Some(node);
        self.len += 1;
        id as NodeId
    }

    /// Puts a node in a slot freed earlier. Returns the node back if the slot is not free.
    pub fn put(&mut self, id: NodeId, node: Node) -> Result<(), Node> {
        let i = id as usize;
        if i >= self.len {
            return Err(node);
        }
        let Some(chunk) = self.chunks.get_mut(i / CHUNK_LEN) else {
            return Err(node);
        };
        match &mut Arc::make_mut(chunk)[i % CHUNK_LEN] {
            slot @ None => {
                *slot = Some(node);
                Ok(())
            }
            Some(_) => Err(node),
        }
    }

    /// Empties a slot, returning its node.
    pub fn take(&mut self, id: NodeId) -> Option<Node> {
        let i = id as usize;
        let chunk = self.chunks.get_mut(i / CHUNK_LEN)?;
        // Do not copy a shared chunk for nothing.
        chunk[i % CHUNK_LEN].as_ref()?;
        Arc::make_mut(chunk)[i % CHUNK_LEN].take()
    }

    /// A read-only view of the arena as it is now, unaffected by later changes.
    pub fn freeze(&self) -> Arena {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::AclCache;
    use proto::StatPersisted;

    fn node(version: i32) -> Node {
        let mut acls = AclCache::default();
        let stat = StatPersisted {
            version,
            ..StatPersisted::default()
        };
        let acl = acls.intern(&crate::acl::open_acl_unsafe());
        Node {
            record: crate::record::NodeRecord::new("n", None, &stat),
            links: crate::links::LeafLinks::default().of(&acl),
        }
    }

    fn version(node: &Node) -> i32 {
        node.record.stat().version
    }

    #[test]
    fn frozen_view_keeps_old_values_while_the_live_arena_changes() {
        let mut arena = Arena::default();
        let ids: Vec<NodeId> = (0..1000).map(|v| arena.push(node(v))).collect();
        let frozen = arena.freeze();
        for &id in &ids {
            let live = arena.get_mut(id).expect("live");
            let mut stat = live.record.stat();
            stat.version += 10_000;
            live.record = live.record.with_stat(&stat);
        }
        arena.take(ids[5]);
        let extra = arena.push(node(-1));
        for (v, &id) in ids.iter().enumerate() {
            assert_eq!(version(frozen.get(id).expect("frozen")), v as i32);
        }
        assert!(frozen.get(extra).is_none());
        assert!(arena.get(ids[5]).is_none());
        assert_eq!(version(arena.get(ids[6]).expect("live")), 10_006);
    }

    #[test]
    fn put_fills_only_free_slots() {
        let mut arena = Arena::default();
        let a = arena.push(node(1));
        assert!(arena.put(a, node(2)).is_err());
        arena.take(a);
        assert!(arena.put(a, node(3)).is_ok());
        assert_eq!(version(arena.get(a).expect("put")), 3);
        assert!(arena.put(99, node(4)).is_err());
    }
}
