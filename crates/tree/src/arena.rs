//! The node arena, copy-on-write in fixed-size chunks grouped in pages.
//!
//! A snapshot must see the tree at one exact zxid while writes go on (DESIGN.md §5: consistent
//! snapshots, not ZooKeeper's fuzzy ones). Freezing clones only the list of page pointers
//! (a million nodes are 977 pages); afterwards the first change to a page and a chunk the
//! frozen view still holds copies that page (64 chunk pointers) and that chunk (16 nodes). A
//! chunk copy is cheap because a node is two shared pointers (record, links): 16 bytes, no data
//! copied.

use crate::node::{Node, NodeId};
use std::sync::Arc;

/// Nodes per chunk. Writes during a snapshot copy each chunk they touch (256 bytes at this
/// size), so small chunks keep a snapshot under random writes from copying the whole arena.
const CHUNK_LEN: usize = 16;
/// Chunks per page. Pages keep the list a freeze clones short (with chunks alone it was 62,500
/// pointers for a million nodes: a millisecond on the thread that applies writes).
const PAGE_LEN: usize = 64;

/// A fixed array rather than a `Vec`: one allocation per chunk, no length or capacity.
type Chunk = [Option<Node>; CHUNK_LEN];
/// Up to [`PAGE_LEN`] chunks; only the last page is not full.
type Page = Vec<Arc<Chunk>>;

#[derive(Debug, Clone, Default)]
pub struct Arena {
    pages: Vec<Arc<Page>>,
    /// Slots handed out so far (live or freed); the slots after them in the last chunk are
    /// empty and not free.
    len: usize,
}

/// Page, chunk within the page, slot within the chunk.
fn place(id: usize) -> (usize, usize, usize) {
    let chunk = id / CHUNK_LEN;
    (chunk / PAGE_LEN, chunk % PAGE_LEN, id % CHUNK_LEN)
}

impl Arena {
    pub fn get(&self, id: NodeId) -> Option<&Node> {
        let (page, chunk, slot) = place(id as usize);
        self.pages.get(page)?.get(chunk)?[slot].as_ref()
    }

    /// The name of node `id` ("" for a free slot: callers pass ids from live child sets).
    pub fn name(&self, id: NodeId) -> &str {
        let node = self.get(id);
        debug_assert!(node.is_some(), "node {id} is named by a child set but free");
        node.map_or("", |n| n.record.name())
    }

    /// The chunk holding `id`, copying it and its page first if a frozen view shares them.
    fn chunk_mut(&mut self, id: usize) -> Option<&mut Chunk> {
        let (page, chunk, _) = place(id);
        let page = Arc::make_mut(self.pages.get_mut(page)?);
        Some(Arc::make_mut(page.get_mut(chunk)?))
    }

    /// The node, copying its chunk first if a frozen view shares it.
    pub fn get_mut(&mut self, id: NodeId) -> Option<&mut Node> {
        // Do not copy a shared chunk for an empty slot.
        self.get(id)?;
        let id = id as usize;
        self.chunk_mut(id)?[id % CHUNK_LEN].as_mut()
    }

    /// Puts a node in a fresh slot at the end.
    pub fn push(&mut self, node: Node) -> NodeId {
        let id = self.len;
        assert!(id < NodeId::MAX as usize, "more nodes than ids");
        let (page, chunk, slot) = place(id);
        if slot == 0 {
            if chunk == 0 {
                self.pages.push(Arc::new(Vec::with_capacity(PAGE_LEN)));
            }
            let last = self.pages.last_mut().expect("a page was just ensured");
            Arc::make_mut(last).push(Arc::new(std::array::from_fn(|_| None)));
        }
        debug_assert_eq!(self.pages.len(), page + 1);
        let chunk = self.chunk_mut(id).expect("the chunk was just ensured");
        debug_assert!(chunk[slot].is_none(), "slot {id} past the end is taken");
        chunk[slot] = Some(node);
        self.len += 1;
        id as NodeId
    }

    /// Puts a node in a slot freed earlier. Returns the node back if the slot is not free.
    pub fn put(&mut self, id: NodeId, node: Node) -> Result<(), Node> {
        let i = id as usize;
        if i >= self.len || self.get(id).is_some() {
            return Err(node);
        }
        match self.chunk_mut(i) {
            Some(chunk) => {
                chunk[i % CHUNK_LEN] = Some(node);
                Ok(())
            }
            None => Err(node),
        }
    }

    /// Empties a slot, returning its node.
    pub fn take(&mut self, id: NodeId) -> Option<Node> {
        // Do not copy a shared chunk for nothing.
        self.get(id)?;
        let i = id as usize;
        self.chunk_mut(i)?[i % CHUNK_LEN].take()
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
        // Three pages, so that copying pages as well as chunks is exercised.
        let ids: Vec<NodeId> = (0..3000).map(|v| arena.push(node(v))).collect();
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
