//! ZooKeeper's data tree as ZooKeeper itself keeps it (`DataTree`), so that a snapshot plus its
//! logs replay to exactly the state ZooKeeper would serve after a restart: stored cversion
//! (the count of creates), pzxid, ephemeral owners, the ACL cache and the 3.6+ digest.
//!
//! The operations here copy `DataTree`'s behaviour including its quirks that a fuzzy snapshot
//! exposes: a delete updates the parent's pzxid before finding out the node is gone; a create
//! only moves the parent's cversion forward; setData and setACL never look at czxid. meerkat's
//! own tree is stricter, which is why an import replays here and converts at the end.

use crate::acl_cache::AclCache;
use crate::digest::node_digest;
use crate::quota::{self, StatsTrack};
use proto::{Acl, ErrorCode, StatPersisted};
use std::collections::{BTreeMap, BTreeSet, HashMap};

pub type NodeId = u32;

#[derive(Debug, Clone, Default)]
pub struct ZkNode {
    pub data: Option<Box<[u8]>>,
    /// A number of the ACL cache.
    pub acl: i64,
    pub stat: StatPersisted,
    pub children: BTreeMap<Box<str>, NodeId>,
}

/// ZooKeeper's `EphemeralType` with extended types on (as meerkat always has them): what an
/// ephemeralOwner value means.
pub fn is_session_owner(owner: i64) -> bool {
    const EXTENDED_MASK: i64 = 0xff00_0000_0000_0000_u64 as i64;
    owner != 0 && owner != i64::MIN && owner & EXTENDED_MASK != EXTENDED_MASK
}

#[derive(Debug, Default)]
pub struct ZkTree {
    nodes: Vec<Option<ZkNode>>,
    free: Vec<NodeId>,
    node_count: usize,
    pub acls: AclCache,
    /// Session → the paths of its ephemerals (`DataTree.ephemerals`).
    ephemerals: HashMap<i64, BTreeSet<String>>,
    digest: i64,
    pub last_processed_zxid: i64,
    /// Paths with a quota (ZooKeeper's `pTrie`).
    quota_paths: quota::QuotaPaths,
}

const ROOT: NodeId = 0;

/// Splits `/a/b/c` into (`/a/b`, `c`) as `path.lastIndexOf('/')` does; the root's children
/// have the parent "".
fn split(path: &str) -> Option<(&str, &str)> {
    let slash = path.rfind('/')?;
    Some((&path[..slash], &path[slash + 1..]))
}

impl ZkTree {
    /// A tree holding only `root` (a snapshot's first node).
    pub fn with_root(root: ZkNode) -> ZkTree {
        let mut tree = ZkTree {
            digest: node_digest("", root.data.as_deref(), &root.stat),
            ..ZkTree::default()
        };
        tree.nodes.push(Some(ZkNode {
            children: BTreeMap::new(),
            ..root
        }));
        tree.node_count = 1;
        tree
    }

    pub fn digest(&self) -> i64 {
        self.digest
    }

    pub fn node_count(&self) -> usize {
        self.node_count
    }

    pub fn node(&self, id: NodeId) -> Option<&ZkNode> {
        self.nodes.get(id as usize)?.as_ref()
    }

    fn node_mut(&mut self, id: NodeId) -> Option<&mut ZkNode> {
        self.nodes.get_mut(id as usize)?.as_mut()
    }

    /// The node at `path`: "" and "/" are the root, as ZooKeeper maps both.
    pub fn find(&self, path: &str) -> Option<NodeId> {
        if path.is_empty() || path == "/" {
            return Some(ROOT);
        }
        let mut id = ROOT;
        for name in path.strip_prefix('/')?.split('/') {
            id = *self.node(id)?.children.get(name)?;
        }
        Some(id)
    }

    pub fn root(&self) -> NodeId {
        ROOT
    }

    /// Links a node read from a snapshot under its parent (`deserialize`): the parent must
    /// already be there.
    pub fn load(&mut self, path: &str, node: ZkNode) -> Result<(), String> {
        let (parent_path, name) = split(path).ok_or_else(|| format!("bad path {path:?}"))?;
        let parent = self
            .find(parent_path)
            .ok_or_else(|| format!("unable to find parent {parent_path:?} of path {path:?}"))?;
        let owner = node.stat.ephemeral_owner;
        self.digest = self
            .digest
            .wrapping_add(node_digest(path, node.data.as_deref(), &node.stat));
        let id = self.alloc(node);
        let replaced = self
            .node_mut(parent)
            .and_then(|p| p.children.insert(name.into(), id));
        if let Some(old) = replaced {
            // ZooKeeper's map keeps the later node under the path; the earlier one is gone.
            self.drop_subtree(old, path);
        }
        if is_session_owner(owner) {
            self.ephemerals
                .entry(owner)
                .or_default()
                .insert(path.to_string());
        }
        Ok(())
    }

    fn alloc(&mut self, node: ZkNode) -> NodeId {
        self.node_count += 1;
        match self.free.pop() {
            Some(id) => {
                self.nodes[id as usize] = Some(node);
                id
            }
            None => {
                self.nodes.push(Some(node));
                (self.nodes.len() - 1) as NodeId
            }
        }
    }

    fn release(&mut self, id: NodeId) -> Option<ZkNode> {
        let node = self.nodes.get_mut(id as usize)?.take()?;
        self.node_count -= 1;
        self.free.push(id);
        Some(node)
    }

    /// Removes a node and whatever hangs below it, with their digests.
    fn drop_subtree(&mut self, id: NodeId, path: &str) {
        let mut stack = vec![(id, path.to_string())];
        while let Some((id, path)) = stack.pop() {
            if let Some(node) = self.release(id) {
                self.digest =
                    self.digest
                        .wrapping_sub(node_digest(&path, node.data.as_deref(), &node.stat));
                for (name, child) in node.children {
                    stack.push((child, format!("{path}/{name}")));
                }
            }
        }
    }

    /// Runs `change` on a node, keeping the digest current (`preChange` / `postChange`).
    fn change(&mut self, path: &str, id: NodeId, change: impl FnOnce(&mut ZkNode)) {
        let Some(node) = self.nodes.get_mut(id as usize).and_then(Option::as_mut) else {
            return;
        };
        let before = node_digest(path, node.data.as_deref(), &node.stat);
        change(node);
        let after = node_digest(path, node.data.as_deref(), &node.stat);
        self.digest = self.digest.wrapping_sub(before).wrapping_add(after);
    }

    /// `DataTree.createNode`.
    #[allow(clippy::too_many_arguments)]
    pub fn create_node(
        &mut self,
        path: &str,
        data: Option<&[u8]>,
        acl: &[Acl],
        owner: i64,
        parent_cversion: i32,
        zxid: i64,
        time: i64,
    ) -> Result<(), ErrorCode> {
        let (parent_path, name) = split(path).ok_or(ErrorCode::BadArguments)?;
        let parent = self.find(parent_path).ok_or(ErrorCode::NoNode)?;
        let acl = self.acls.intern(acl);
        if self
            .node(parent)
            .is_some_and(|p| p.children.contains_key(name))
        {
            return Err(ErrorCode::NodeExists);
        }
        let stat = StatPersisted {
            czxid: zxid,
            mzxid: zxid,
            ctime: time,
            mtime: time,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: owner,
            pzxid: zxid,
        };
        let node = ZkNode {
            data: data.map(Box::from),
            acl,
            stat,
            children: BTreeMap::new(),
        };
        self.digest = self
            .digest
            .wrapping_add(node_digest(path, node.data.as_deref(), &node.stat));
        let id = self.alloc(node);
        self.change(parent_path, parent, |p| {
            let cversion = if parent_cversion == -1 {
                p.stat.cversion.wrapping_add(1)
            } else {
                parent_cversion
            };
            if cversion > p.stat.cversion {
                p.stat.cversion = cversion;
                p.stat.pzxid = zxid;
            }
            p.children.insert(name.into(), id);
        });
        if is_session_owner(owner) {
            self.ephemerals
                .entry(owner)
                .or_default()
                .insert(path.to_string());
        }
        if parent_path.starts_with(quota::QUOTA_ROOT) {
            if name == quota::LIMIT_NODE {
                self.quota_paths.add(quota::trim_quota_path(parent_path));
            }
            if name == quota::STAT_NODE {
                self.update_quota_for_path(quota::trim_quota_path(parent_path));
            }
        }
        let bytes = data.map_or(0, |d| d.len() as i64);
        self.update_quota_stat(path, bytes, 1);
        Ok(())
    }

    /// `DataTree.deleteNode`: the parent loses the name and its pzxid moves forward even when
    /// the node turns out to be missing. Children are not checked (prep did that).
    pub fn delete_node(&mut self, path: &str, zxid: i64) -> Result<(), ErrorCode> {
        let (parent_path, name) = split(path).ok_or(ErrorCode::BadArguments)?;
        let parent = self.find(parent_path).ok_or(ErrorCode::NoNode)?;
        let mut removed = None;
        self.change(parent_path, parent, |p| {
            removed = p.children.remove(name);
            if zxid > p.stat.pzxid {
                p.stat.pzxid = zxid;
            }
        });
        let id = removed.ok_or(ErrorCode::NoNode)?;
        let owner = self.node(id).map_or(0, |n| n.stat.ephemeral_owner);
        let bytes = self
            .node(id)
            .and_then(|n| n.data.as_ref())
            .map_or(0, |d| d.len() as i64);
        self.drop_subtree(id, path);
        if is_session_owner(owner) {
            if let Some(set) = self.ephemerals.get_mut(&owner) {
                set.remove(path);
            }
        }
        if parent_path.starts_with("/zookeeper") && name == quota::LIMIT_NODE {
            self.quota_paths.remove(quota::trim_quota_path(parent_path));
        }
        self.update_quota_stat(path, -bytes, -1);
        Ok(())
    }

    /// `DataTree.setData`.
    pub fn set_data(
        &mut self,
        path: &str,
        data: Option<&[u8]>,
        version: i32,
        zxid: i64,
        time: i64,
    ) -> Result<(), ErrorCode> {
        let id = self.find(path).ok_or(ErrorCode::NoNode)?;
        let old_len = self
            .node(id)
            .and_then(|n| n.data.as_ref())
            .map_or(0, |d| d.len() as i64);
        let new_len = data.map_or(0, |d| d.len() as i64);
        self.update_quota_stat(path, new_len - old_len, 0);
        self.change(path, id, |n| {
            n.data = data.map(Box::from);
            n.stat.mtime = time;
            n.stat.mzxid = zxid;
            n.stat.version = version;
        });
        Ok(())
    }

    /// `DataTree.setupQuota`, run once a snapshot is loaded: every quota's stats recounted.
    pub fn setup_quota(&mut self) {
        let Some(root) = self.find(quota::QUOTA_ROOT) else {
            return;
        };
        let mut limits = Vec::new();
        let mut stack = vec![(quota::QUOTA_ROOT.to_string(), root)];
        while let Some((path, id)) = stack.pop() {
            let Some(node) = self.node(id) else { continue };
            if node.children.is_empty() {
                let end = format!("/{}", quota::LIMIT_NODE);
                if let Some(at) = path.find(&end).filter(|_| path.ends_with(&end)) {
                    limits.push(path[quota::QUOTA_ROOT.len()..at].to_string());
                }
                continue;
            }
            for (name, child) in &node.children {
                stack.push((format!("{path}/{name}"), *child));
            }
        }
        for real in limits {
            self.update_quota_for_path(&real);
            self.quota_paths.add(&real);
        }
    }

    /// `DataTree.updateQuotaForPath`: the stats node of `real` set to a fresh count of the
    /// subtree (nodes and data bytes).
    fn update_quota_for_path(&mut self, real: &str) {
        let (mut count, mut bytes) = (0i64, 0i64);
        if let Some(id) = self.find(real) {
            let mut stack = vec![id];
            while let Some(id) = stack.pop() {
                let Some(node) = self.node(id) else { continue };
                count += 1;
                bytes += node.data.as_ref().map_or(0, |d| d.len() as i64);
                stack.extend(node.children.values().copied());
            }
        }
        self.set_quota_stats(real, StatsTrack::counted(count, bytes));
    }

    /// `DataTree.updateQuotaStat` for the innermost quota above `path`, if any.
    fn update_quota_stat(&mut self, path: &str, bytes: i64, count: i64) {
        if self.quota_paths.is_empty() {
            return;
        }
        let Some(prefix) = self.quota_paths.deepest_above(path) else {
            return;
        };
        let Some(id) = self.find(&quota::stat_path(&prefix)) else {
            return;
        };
        let parsed = self
            .node(id)
            .map(|n| StatsTrack::parse(n.data.as_deref().unwrap_or_default()));
        if let Some(Some(mut stats)) = parsed {
            stats.add(count, bytes);
            self.set_quota_stats(&prefix, stats);
        }
    }

    /// Writes a stats node's text; under `/zookeeper/` nothing counts in the digest, and
    /// ZooKeeper changes no stat field here.
    fn set_quota_stats(&mut self, real: &str, stats: StatsTrack) {
        if let Some(id) = self.find(&quota::stat_path(real)) {
            if let Some(node) = self.node_mut(id) {
                node.data = Some(stats.to_bytes().into_boxed_slice());
            }
        }
    }

    /// `DataTree.setACL`.
    pub fn set_acl(&mut self, path: &str, acl: &[Acl], version: i32) -> Result<(), ErrorCode> {
        let id = self.find(path).ok_or(ErrorCode::NoNode)?;
        let acl = self.acls.intern(acl);
        self.change(path, id, |n| {
            n.stat.aversion = version;
            n.acl = acl;
        });
        Ok(())
    }

    /// `DataTree.setCversionPzxid`: the fix-up ZooKeeper applies to the parent when replaying
    /// a create whose node the fuzzy snapshot already holds.
    pub fn set_cversion_pzxid(
        &mut self,
        path: &str,
        cversion: i32,
        zxid: i64,
    ) -> Result<(), ErrorCode> {
        let path = path.strip_suffix('/').unwrap_or(path);
        let id = self.find(path).ok_or(ErrorCode::NoNode)?;
        let current = self.node(id).map_or(0, |n| n.stat.cversion);
        let cversion = if cversion == -1 {
            current.wrapping_add(1)
        } else {
            cversion
        };
        if cversion > current {
            self.change(path, id, |n| {
                n.stat.cversion = cversion;
                n.stat.pzxid = zxid;
            });
        }
        Ok(())
    }

    /// `DataTree.killSession`: the paths the close transaction lists, then whatever else the
    /// tree knows the session owns. Missing nodes are ignored.
    pub fn kill_session(&mut self, session: i64, zxid: i64, listed: Option<&[String]>) {
        let local = self.ephemerals.remove(&session).unwrap_or_default();
        if let Some(listed) = listed {
            for path in listed {
                let _ = self.delete_node(path, zxid);
            }
        }
        for path in local {
            if listed.is_some_and(|l| l.contains(&path)) {
                continue;
            }
            let _ = self.delete_node(&path, zxid);
        }
    }

    /// Sessions that own ephemerals (`DataTree.getSessions`).
    pub fn sessions_with_ephemerals(&self) -> Vec<i64> {
        self.ephemerals.keys().copied().collect()
    }

    pub fn ephemeral_count(&self) -> usize {
        self.ephemerals.values().map(BTreeSet::len).sum()
    }

    /// Hands out every node as [`ZkTree::walk`] visits them (children moved out), freeing
    /// each as it goes, so a conversion never holds two whole trees.
    pub fn drain(mut self, mut visit: impl FnMut(&str, ZkNode)) {
        let mut stack = vec![("/".to_string(), ROOT)];
        while let Some((path, id)) = stack.pop() {
            let Some(mut node) = self.nodes.get_mut(id as usize).and_then(Option::take) else {
                continue;
            };
            let children = std::mem::take(&mut node.children);
            for (name, child) in children.into_iter().rev() {
                let child_path = if path == "/" {
                    format!("/{name}")
                } else {
                    format!("{path}/{name}")
                };
                stack.push((child_path, child));
            }
            visit(&path, node);
        }
    }

    /// Every node depth-first, parents first, children in name order, with full paths
    /// (the root as "/").
    pub fn walk(&self, mut visit: impl FnMut(&str, NodeId, &ZkNode)) {
        let mut stack = vec![("/".to_string(), ROOT)];
        while let Some((path, id)) = stack.pop() {
            let Some(node) = self.node(id) else { continue };
            visit(&path, id, node);
            for (name, child) in node.children.iter().rev() {
                let child_path = if path == "/" {
                    format!("/{name}")
                } else {
                    format!("{path}/{name}")
                };
                stack.push((child_path, *child));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl_cache::open_acl_unsafe;

    fn tree() -> ZkTree {
        ZkTree::with_root(ZkNode {
            data: Some(Box::from(&b""[..])),
            acl: -1,
            ..ZkNode::default()
        })
    }

    fn recomputed(t: &ZkTree) -> i64 {
        let mut sum = 0i64;
        t.walk(|path, _, n| {
            sum = sum.wrapping_add(node_digest(path, n.data.as_deref(), &n.stat));
        });
        sum
    }

    #[test]
    fn operations_keep_the_digest_equal_to_a_recount() {
        let mut t = tree();
        let acl = open_acl_unsafe();
        assert!(t.create_node("/a", Some(b"x"), &acl, 0, -1, 1, 10).is_ok());
        assert!(t.create_node("/a/b", None, &acl, 7, -1, 2, 11).is_ok());
        assert_eq!(
            t.create_node("/a/b", None, &acl, 7, -1, 3, 12),
            Err(ErrorCode::NodeExists)
        );
        assert!(t.set_data("/a", Some(b"yy"), 1, 4, 13).is_ok());
        assert!(t.set_acl("/a", &acl, 1).is_ok());
        assert_eq!(recomputed(&t), t.digest());
        t.kill_session(7, 5, None);
        assert_eq!(t.find("/a/b"), None);
        assert_eq!(recomputed(&t), t.digest());
        let a = t
            .find("/a")
            .and_then(|id| t.node(id))
            .map(|n| n.stat.clone());
        assert_eq!(a.as_ref().map(|s| (s.cversion, s.pzxid)), Some((1, 5)));
    }

    #[test]
    fn a_delete_of_a_missing_node_still_moves_the_parent_pzxid() {
        let mut t = tree();
        let acl = open_acl_unsafe();
        assert!(t.create_node("/a", None, &acl, 0, -1, 1, 10).is_ok());
        assert_eq!(t.delete_node("/a/gone", 9), Err(ErrorCode::NoNode));
        let pzxid = t.find("/a").and_then(|id| t.node(id)).map(|n| n.stat.pzxid);
        assert_eq!(pzxid, Some(9));
        assert_eq!(recomputed(&t), t.digest());
    }
}
