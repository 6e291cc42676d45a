//! The tree frozen at one zxid, and the loader that rebuilds a tree from what a snapshot holds.
//!
//! Freezing is O(chunks) and happens on the thread that applies transactions, between two of
//! them, so a snapshot is *consistent*: exactly the state after its zxid. The frozen view can
//! then be walked on another thread while writes continue (see [`crate::arena`]). The byte
//! format of snapshot files belongs to the storage crate; this module only walks and rebuilds.

use crate::acl::AclList;
use crate::arena::Arena;
use crate::data_tree::{DataTree, ROOT};
use crate::node::{NodeId, NodeView};
use crate::path;
use proto::{Acl, StatPersisted};

/// A read-only copy of the whole replicated state at [`TreeSnapshot::zxid`].
#[derive(Debug, Clone)]
pub struct TreeSnapshot {
    pub(crate) arena: Arena,
    pub(crate) sessions: Vec<(i64, i32)>,
    pub(crate) zxid: i64,
    pub(crate) digest: u64,
    pub(crate) node_count: usize,
}

impl TreeSnapshot {
    /// The last transaction this state includes.
    pub fn zxid(&self) -> i64 {
        self.zxid
    }

    /// The tree digest at that zxid; a loader recomputes it to prove the file intact.
    pub fn digest(&self) -> u64 {
        self.digest
    }

    pub fn node_count(&self) -> usize {
        self.node_count
    }

    /// Live sessions and their timeouts (ms), sorted by id.
    pub fn sessions(&self) -> &[(i64, i32)] {
        &self.sessions
    }

    /// Every node, parents before children, children in name order.
    pub fn for_each(&self, visit: impl FnMut(&str, &NodeView<'_>)) {
        walk(&self.arena, visit);
    }
}

/// Depth-first pre-order walk with full paths, children in name order.
pub(crate) fn walk(arena: &Arena, mut visit: impl FnMut(&str, &NodeView<'_>)) {
    // Paths are built as the walk descends: the stack holds ids, not paths, so a parent with a
    // million children costs four bytes per child here, not a path string each.
    let mut stack: Vec<Frame> = vec![Frame {
        path: "/".to_string(),
        pending: vec![ROOT],
    }];
    while let Some(frame) = stack.last_mut() {
        let Some(id) = frame.pending.pop() else {
            stack.pop();
            continue;
        };
        let Some(node) = arena.get(id) else {
            continue;
        };
        let node_path = if id == ROOT {
            "/".to_string()
        } else {
            path::join(&frame.path, node.record.name())
        };
        visit(&node_path, &node.view(arena));
        if !node.children().is_empty() {
            let mut pending = node.children().sorted(|c| arena.name(c));
            pending.reverse();
            stack.push(Frame {
                path: node_path,
                pending,
            });
        }
    }
}

/// A node whose children the walk is visiting: its path, and its children still to visit
/// (last in name order first, so that popping gives name order).
struct Frame {
    path: String,
    pending: Vec<NodeId>,
}

/// Why a snapshot's contents do not make a valid tree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("node {0} comes before its parent")]
    Orphan(String),
    #[error("node {0} appears twice")]
    Duplicate(String),
    #[error("node {0} is listed out of order (children must come in name order)")]
    OutOfOrder(String),
    #[error("the first node is {0}, not the root")]
    NoRoot(String),
    #[error("the snapshot holds no nodes")]
    Empty,
    #[error("tree digest {found:#x} does not match the recorded {expected:#x}")]
    DigestMismatch { expected: u64, found: u64 },
}

/// Rebuilds a [`DataTree`] from nodes in the order [`TreeSnapshot::for_each`] produces (depth
/// first, parents before children, siblings in name order), then checks the result against the
/// recorded digest. Any other order is refused rather than guessed at.
pub struct TreeLoader {
    tree: DataTree,
    saw_root: bool,
    /// The path from the root to the last node added: each with its id and the children seen
    /// so far. A pre-order listing only ever adds children to a node on this path.
    open: Vec<OpenNode>,
}

struct OpenNode {
    path: String,
    id: NodeId,
    children: Vec<NodeId>,
}

impl Default for TreeLoader {
    fn default() -> Self {
        Self::new()
    }
}

impl TreeLoader {
    pub fn new() -> TreeLoader {
        TreeLoader {
            tree: DataTree::empty(),
            saw_root: false,
            open: Vec::new(),
        }
    }

    pub fn add_session(&mut self, session_id: i64, timeout_ms: i32) {
        self.tree.load_session(session_id, timeout_ms);
    }

    pub fn add_node(
        &mut self,
        node_path: &str,
        data: Option<&[u8]>,
        acl: &[Acl],
        stat: StatPersisted,
    ) -> Result<(), LoadError> {
        let acl = self.intern_acl(acl);
        self.add_node_shared(node_path, data, acl, stat)
    }

    /// The shared copy of an ACL list, to pass to [`TreeLoader::add_node_shared`] for every
    /// node that uses it (interning once per list instead of once per node).
    pub fn intern_acl(&mut self, acl: &[Acl]) -> AclList {
        self.tree.intern_acl(acl)
    }

    pub fn add_node_shared(
        &mut self,
        node_path: &str,
        data: Option<&[u8]>,
        acl: AclList,
        stat: StatPersisted,
    ) -> Result<(), LoadError> {
        if !self.saw_root {
            if node_path != "/" {
                return Err(LoadError::NoRoot(node_path.to_string()));
            }
            self.saw_root = true;
            self.tree.load_root(data, &acl, stat);
            self.open.push(OpenNode {
                path: "/".into(),
                id: crate::data_tree::ROOT,
                children: Vec::new(),
            });
            return Ok(());
        }
        let parent_path = path::parent_of(node_path);
        // Close the nodes whose subtrees are complete.
        while self.open.last().is_some_and(|n| n.path != parent_path) {
            self.close_last();
        }
        let name = path::name_of(node_path);
        let Some(parent) = self.open.last() else {
            return Err(LoadError::Orphan(node_path.to_string()));
        };
        match parent.children.last().map(|&last| self.tree.name_of(last)) {
            Some(last) if last == name => return Err(LoadError::Duplicate(node_path.to_string())),
            Some(last) if last > name => return Err(LoadError::OutOfOrder(node_path.to_string())),
            _ => {}
        }
        let id = self.tree.load_unlinked(node_path, data, acl, stat);
        if let Some(parent) = self.open.last_mut() {
            parent.children.push(id);
        }
        self.open.push(OpenNode {
            path: node_path.to_string(),
            id,
            children: Vec::new(),
        });
        Ok(())
    }

    /// Gives the innermost open node its child map.
    fn close_last(&mut self) {
        if let Some(done) = self.open.pop() {
            self.tree.set_children(done.id, &done.children);
        }
    }

    /// The tree, if it has a root and hashes to `expected_digest`.
    pub fn finish(mut self, zxid: i64, expected_digest: u64) -> Result<DataTree, LoadError> {
        if !self.saw_root {
            return Err(LoadError::Empty);
        }
        while !self.open.is_empty() {
            self.close_last();
        }
        self.tree.set_last_processed_zxid(zxid);
        let found = self.tree.digest();
        if found != expected_digest {
            return Err(LoadError::DigestMismatch {
                expected: expected_digest,
                found,
            });
        }
        self.tree.rebuild_quota_paths();
        Ok(self.tree)
    }
}
