//! The tree frozen at one zxid, and the loader that rebuilds a tree from what a snapshot holds.
//!
//! Freezing is O(chunks) and happens on the thread that applies transactions, between two of
//! them, so a snapshot is *consistent*: exactly the state after its zxid. The frozen view can
//! then be walked on another thread while writes continue (see [`crate::arena`]). The byte
//! format of snapshot files belongs to the storage crate; this module only walks and rebuilds.

use crate::acl::AclList;
use crate::arena::Arena;
use crate::data_tree::{DataTree, ROOT};
use crate::node::Node;
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
    pub fn for_each(&self, visit: impl FnMut(&str, &Node)) {
        walk(&self.arena, visit);
    }
}

/// Depth-first pre-order walk with full paths.
pub(crate) fn walk(arena: &Arena, mut visit: impl FnMut(&str, &Node)) {
    let mut stack = vec![("/".to_string(), ROOT)];
    while let Some((node_path, id)) = stack.pop() {
        let Some(node) = arena.get(id) else {
            continue;
        };
        visit(&node_path, node);
        for (name, child) in node.children.iter().rev() {
            stack.push((path::join(&node_path, name), *child));
        }
    }
}

/// Why a snapshot's contents do not make a valid tree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("node {0} comes before its parent")]
    Orphan(String),
    #[error("node {0} appears twice")]
    Duplicate(String),
    #[error("the first node is {0}, not the root")]
    NoRoot(String),
    #[error("the snapshot holds no nodes")]
    Empty,
    #[error("tree digest {found:#x} does not match the recorded {expected:#x}")]
    DigestMismatch { expected: u64, found: u64 },
}

/// Rebuilds a [`DataTree`] from nodes given parents first (the order [`TreeSnapshot::for_each`]
/// produces), then checks the result against the recorded digest.
pub struct TreeLoader {
    tree: DataTree,
    saw_root: bool,
    last_parent: Option<(String, crate::node::NodeId)>,
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
            last_parent: None,
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
            return Ok(());
        }
        self.tree
            .load_node(node_path, data, acl, stat, &mut self.last_parent)
    }

    /// The tree, if it has a root and hashes to `expected_digest`.
    pub fn finish(mut self, zxid: i64, expected_digest: u64) -> Result<DataTree, LoadError> {
        if !self.saw_root {
            return Err(LoadError::Empty);
        }
        self.tree.set_last_processed_zxid(zxid);
        let found = self.tree.digest();
        if found != expected_digest {
            return Err(LoadError::DigestMismatch {
                expected: expected_digest,
                found,
            });
        }
        Ok(self.tree)
    }
}
