//! The replicated state: the znode tree plus the sessions that own ephemerals.
//!
//! Changed only by [`DataTree::apply`], one transaction at a time in zxid order. Every
//! transaction carries its outcome already computed by prep (versions, parent cversion, zxid,
//! time), so applying is deterministic and replaying a prefix twice is harmless (a replayed setData or
//! setACL older than the node now at its path leaves that node alone).

use crate::acl::{AclCache, AclList};
use crate::arena::Arena;
use crate::children::Children;
use crate::digest::NodeDigest;
use crate::links::{LeafLinks, Links};
use crate::node::{Node, NodeId, NodeKind, NodeView};
use crate::path;
use crate::record::NodeRecord;
use proto::txn::{Txn, TxnBody, TxnHeader};
use proto::{Acl, ErrorCode, Stat, StatPersisted};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

mod quota_upkeep;

/// What a transaction did, for the reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnOutcome {
    Created {
        path: String,
        stat: Stat,
    },
    Deleted,
    /// setData and setACL: the node's new Stat.
    Updated(Stat),
    Checked,
    Multi(Vec<TxnOutcome>),
    SessionCreated,
    SessionClosed,
    Error(ErrorCode),
}

/// The fields every kind of create transaction shares, unpacked once for [`DataTree::create`].
struct NewNode<'a> {
    path: &'a str,
    data: &'a Option<Vec<u8>>,
    acl: &'a [Acl],
    owner: i64,
    parent_cversion: i32,
}

impl<'a> NewNode<'a> {
    fn of(
        path: &'a str,
        data: &'a Option<Vec<u8>>,
        acl: &'a [Acl],
        owner: i64,
        parent_cversion: i32,
    ) -> Self {
        NewNode {
            path,
            data,
            acl,
            owner,
            parent_cversion,
        }
    }
}

/// A change that may fire watches, with the ACL of the node it concerns (a watcher is told
/// only if it may read that node, as in ZooKeeper's `ServerCnxn.process`).
/// The path is borrowed from the transaction applied: every path a change fires on is in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger<'t> {
    Created(&'t str, AclList),
    Deleted(&'t str, AclList),
    DataChanged(&'t str, AclList),
    ChildrenChanged(&'t str, AclList),
}

impl Trigger<'_> {
    pub fn acl(&self) -> &AclList {
        match self {
            Trigger::Created(_, acl)
            | Trigger::Deleted(_, acl)
            | Trigger::DataChanged(_, acl)
            | Trigger::ChildrenChanged(_, acl) => acl,
        }
    }
}

#[derive(Debug)]
pub struct DataTree {
    nodes: Arena,
    /// [`crate::children::name_hash32`] of each node's name, by id: growing a child set
    /// rehashes from here instead of reading every child's name (4 bytes a node).
    name_hashes: Vec<u32>,
    free: Vec<NodeId>,
    node_count: usize,
    data_size: u64,
    acl_cache: AclCache,
    leaf_links: LeafLinks,
    /// Session id → timeout (ms). Sessions are replicated state, like ZooKeeper's.
    sessions: HashMap<i64, i32>,
    ephemerals: HashMap<i64, EphemeralPaths, crate::keyed_hasher::KeyedHasher>,
    containers: BTreeSet<String>,
    ttls: BTreeSet<String>,
    last_processed_zxid: i64,
    digest: NodeDigest,
    /// The ACL cache size at which unused lists are next swept.
    acl_purge_at: usize,
    /// The paths with a quota (`crate::quota`).
    quotas: crate::quota::QuotaPaths,
}

const ACL_PURGE_MIN: usize = 64;

pub(crate) const ROOT: NodeId = 0;

impl Default for DataTree {
    fn default() -> Self {
        Self::new()
    }
}

/// A session's ephemerals. Hashed, not sorted: every create and delete of an ephemeral touches
/// the set, and a sorted set of strings follows a pointer per comparison (4 % of a leader's
/// time under creating clients). Lists are sorted when asked for.
type EphemeralPaths = crate::path_set::PathSet;

impl DataTree {
    /// A tree with `/`, `/zookeeper`, `/zookeeper/quota` and `/zookeeper/config`, as every
    /// ZooKeeper server has.
    pub fn new() -> DataTree {
        let mut tree = DataTree::empty();
        let open = tree.acl_cache.intern(&crate::acl::open_acl_unsafe());
        // The root's data is empty, not null, as ZooKeeper's (`new DataNode(new byte[0], ..)`).
        tree.load_root(
            Some(&[]),
            &crate::acl::open_acl_unsafe(),
            StatPersisted::default(),
        );
        tree.insert_system_node("/zookeeper", open.clone(), 0);
        tree.insert_system_node("/zookeeper/quota", open, 0);
        // The dynamic-config node is read-only for clients and has aversion −1, as in ZooKeeper.
        let read_only = tree.acl_cache.intern(&[proto::Acl {
            perms: proto::watch::perms::READ,
            id: proto::Id {
                scheme: "world".into(),
                id: "anyone".into(),
            },
        }]);
        tree.insert_system_node("/zookeeper/config", read_only, -1);
        tree
    }

    /// A tree with no nodes at all, for [`crate::snapshot::TreeLoader`] to fill.
    pub(crate) fn empty() -> DataTree {
        DataTree {
            nodes: Arena::default(),
            name_hashes: Vec::new(),
            free: Vec::new(),
            node_count: 0,
            data_size: 0,
            acl_cache: AclCache::default(),
            leaf_links: LeafLinks::default(),
            sessions: HashMap::new(),
            ephemerals: HashMap::default(),
            containers: BTreeSet::new(),
            ttls: BTreeSet::new(),
            last_processed_zxid: 0,
            digest: NodeDigest::default(),
            acl_purge_at: ACL_PURGE_MIN,
            quotas: crate::quota::QuotaPaths::default(),
        }
    }

    /// Sets the root (slot 0) as a snapshot recorded it.
    pub(crate) fn load_root(&mut self, data: Option<&[u8]>, acl: &[Acl], stat: StatPersisted) {
        let acl = self.acl_cache.intern(acl);
        // The root's name is empty: its path is "/" and no parent looks it up.
        let record = NodeRecord::new("", data, &stat);
        // Like every other node, the root's data counts in the size (its path does not).
        self.data_size += record.data_len() as u64;
        match self.nodes.get_mut(ROOT) {
            Some(root) => {
                self.data_size -= root.record.data_len() as u64;
                self.digest
                    .remove("/", root.record.data(), &root.record.stat());
                root.record = record;
                self.digest.add("/", root.record.data(), &stat);
                self.set_acl_of(ROOT, acl);
            }
            None => {
                self.digest.add("/", record.data(), &stat);
                let links = self.leaf_links.of(&acl);
                self.alloc(Node { record, links });
            }
        }
    }

    /// Adds a node exactly as a snapshot recorded it, without linking it to its parent:
    /// [`crate::snapshot::TreeLoader`] builds each child map in one go once all children are
    /// known (linking one by one costs a map search per node).
    pub(crate) fn load_unlinked(
        &mut self,
        node_path: &str,
        data: Option<&[u8]>,
        acl: AclList,
        stat: StatPersisted,
    ) -> NodeId {
        self.digest.add(node_path, data, &stat);
        self.data_size += (node_path.len() + data.map_or(0, <[u8]>::len)) as u64;
        let owner = stat.ephemeral_owner;
        let links = self.leaf_links.of(&acl);
        let id = self.alloc(Node {
            record: NodeRecord::new(path::name_of(node_path), data, &stat),
            links,
        });
        self.index_kind(node_path, owner);
        id
    }

    /// Gives a loaded node its complete set of children, whose names must be distinct.
    pub(crate) fn set_children(&mut self, id: NodeId, ids: &[NodeId]) {
        let nodes = &self.nodes;
        let children = Children::from_ids(ids, |c| nodes.name(c));
        self.set_children_of(id, children);
    }

    /// The name of a node in the arena (for the loader's order checks).
    pub(crate) fn name_of(&self, id: NodeId) -> &str {
        self.nodes.name(id)
    }

    /// The shared copy of an ACL list (for loaders that meet the same list many times).
    pub(crate) fn intern_acl(&mut self, acl: &[Acl]) -> AclList {
        self.acl_cache.intern(acl)
    }

    pub(crate) fn load_session(&mut self, session_id: i64, timeout_ms: i32) {
        self.sessions.insert(session_id, timeout_ms);
    }

    pub(crate) fn set_last_processed_zxid(&mut self, zxid: i64) {
        self.last_processed_zxid = zxid;
    }

    /// The whole state as it is now, for a snapshot taken while writes go on. Cheap: it shares
    /// the node arena copy-on-write.
    pub fn freeze(&self) -> crate::snapshot::TreeSnapshot {
        let mut sessions: Vec<(i64, i32)> = self.sessions.iter().map(|(&k, &v)| (k, v)).collect();
        sessions.sort_unstable();
        crate::snapshot::TreeSnapshot {
            arena: self.nodes.freeze(),
            sessions,
            zxid: self.last_processed_zxid,
            digest: self.digest.value(),
            node_count: self.node_count,
        }
    }

    /// Records a node in the index of its kind (ephemerals by owner, containers, TTL nodes).
    fn index_kind(&mut self, node_path: &str, owner: i64) {
        match NodeKind::of_owner(owner) {
            NodeKind::Ephemeral(session) => {
                self.ephemerals
                    .entry(session)
                    .or_default()
                    .insert(node_path);
            }
            NodeKind::Container => {
                self.containers.insert(node_path.to_string());
            }
            NodeKind::Ttl(_) => {
                self.ttls.insert(node_path.to_string());
            }
            NodeKind::Persistent => {}
        }
    }

    fn insert_system_node(&mut self, node_path: &str, acl: AclList, aversion: i32) {
        let parent = self.find(path::parent_of(node_path)).unwrap_or(ROOT);
        let stat = StatPersisted {
            aversion,
            ..StatPersisted::default()
        };
        self.digest.add(node_path, Some(&[]), &stat);
        let node = Node {
            record: NodeRecord::new(path::name_of(node_path), Some(&[]), &stat),
            links: self.leaf_links.of(&acl),
        };
        let id = self.alloc(node);
        self.link_child(parent, id);
        self.data_size += node_path.len() as u64;
    }

    fn alloc(&mut self, node: Node) -> NodeId {
        self.node_count += 1;
        let hash = crate::children::name_hash32(node.record.name());
        let id = match self.free.pop() {
            Some(id) => match self.nodes.put(id, node) {
                Ok(()) => id,
                Err(node) => self.nodes.push(node),
            },
            None => self.nodes.push(node),
        };
        let i = id as usize;
        if i >= self.name_hashes.len() {
            self.name_hashes.resize(i + 1, 0);
        }
        self.name_hashes[i] = hash;
        id
    }

    /// Adds node `id` (already in the arena, so its name can be read) to `parent`'s children.
    fn link_child(&mut self, parent: NodeId, id: NodeId) {
        let mut children = self.take_children(parent);
        let (nodes, hashes) = (&self.nodes, &self.name_hashes);
        // Every id in a child set was allocated, so it has a hash.
        children.insert(id, |c| nodes.name(c), |c| hashes[c as usize]);
        self.set_children_of(parent, children);
    }

    /// Removes the child called `name` from `parent`'s children.
    fn unlink_child(&mut self, parent: NodeId, name: &str) -> Option<NodeId> {
        let mut children = self.take_children(parent);
        let nodes = &self.nodes;
        let removed = children.remove(name, |c| nodes.name(c));
        self.set_children_of(parent, children);
        removed
    }

    /// Moves `id`'s children out (leaving it none), so that they can change while the arena
    /// is read for names. Only the links are copied, if shared, never the child set.
    fn take_children(&mut self, id: NodeId) -> Children {
        let node = self.node_mut(id);
        if node.links.children.is_empty() {
            return Children::default();
        }
        std::mem::take(&mut Arc::make_mut(&mut node.links).children)
    }

    /// Gives `id` these children; a node left with none shares its ACL's leaf links again.
    fn set_children_of(&mut self, id: NodeId, children: Children) {
        let Self {
            nodes, leaf_links, ..
        } = self;
        let node = nodes.get_mut(id).expect("caller found this node");
        if children.is_empty() {
            node.links = leaf_links.of(&node.links.acl);
        } else {
            Arc::make_mut(&mut node.links).children = children;
        }
    }

    /// Gives `id` another ACL list, keeping its children.
    fn set_acl_of(&mut self, id: NodeId, acl: AclList) {
        let Self {
            nodes, leaf_links, ..
        } = self;
        let node = nodes.get_mut(id).expect("caller found this node");
        if node.links.children.is_empty() {
            node.links = leaf_links.of(&acl);
        } else {
            let children = node.links.children.clone();
            node.links = Arc::new(Links { acl, children });
        }
    }

    fn child(&self, parent: NodeId, name: &str) -> Option<NodeId> {
        let nodes = &self.nodes;
        self.node_ref(parent)
            .children()
            .get(name, |c| nodes.name(c))
    }

    fn release(&mut self, id: NodeId) -> Option<Node> {
        let node = self.nodes.take(id)?;
        self.node_count -= 1;
        self.free.push(id);
        Some(node)
    }

    fn node_ref(&self, id: NodeId) -> &Node {
        // Ids come only from child maps of live nodes, which are kept consistent by apply.
        self.nodes.get(id).expect("child map points at a live node")
    }

    fn view(&self, id: NodeId) -> NodeView<'_> {
        self.node_ref(id).view(&self.nodes)
    }

    fn node_mut(&mut self, id: NodeId) -> &mut Node {
        self.nodes
            .get_mut(id)
            .expect("child map points at a live node")
    }

    /// The node at exactly `node_path`. Like ZooKeeper's path map, a path with an empty
    /// component (`/a/`, `//a`) names no node; `""` is the root, as in ZooKeeper.
    fn find(&self, node_path: &str) -> Option<NodeId> {
        let mut id = ROOT;
        if node_path.is_empty() || node_path == "/" {
            return Some(id);
        }
        for name in node_path.strip_prefix('/')?.split('/') {
            id = self.child(id, name)?;
        }
        Some(id)
    }

    /// The znode at `path`, if any.
    pub fn get(&self, node_path: &str) -> Option<NodeView<'_>> {
        self.find(node_path)
            .map(|id| self.node_ref(id).view(&self.nodes))
    }

    pub fn stat(&self, node_path: &str) -> Option<Stat> {
        self.get(node_path).map(|n| n.stat())
    }

    /// Child names in lexicographic order.
    pub fn children(&self, node_path: &str) -> Option<Vec<String>> {
        self.get(node_path)
            .map(|n| n.children.keys().map(str::to_string).collect())
    }

    /// Every descendant of `path` (ZooKeeper's getAllChildrenNumber).
    pub fn descendant_count(&self, node_path: &str) -> Option<usize> {
        let id = self.find(node_path)?;
        let mut count = 0;
        let mut stack = vec![id];
        while let Some(id) = stack.pop() {
            let node = self.node_ref(id);
            count += node.children().len();
            stack.extend(node.children().ids());
        }
        Some(count)
    }

    pub fn node_count(&self) -> usize {
        self.node_count
    }

    /// The tree's shared copy of an ACL list equal to `acl`, if a znode has (or had) one.
    pub fn interned_acl(&self, acl: &[Acl]) -> Option<AclList> {
        self.acl_cache.get(acl)
    }

    /// Sum of path and data lengths, as ZooKeeper's `approximateDataSize`.
    pub fn approximate_data_size(&self) -> u64 {
        self.data_size
    }

    pub fn last_processed_zxid(&self) -> i64 {
        self.last_processed_zxid
    }

    pub fn digest(&self) -> u64 {
        self.digest.value()
    }

    pub fn sessions(&self) -> &HashMap<i64, i32> {
        &self.sessions
    }

    /// The ephemerals a session owns, sorted.
    pub fn ephemerals(&self, session_id: i64) -> impl Iterator<Item = &str> {
        self.ephemerals
            .get(&session_id)
            .map(EphemeralPaths::sorted)
            .unwrap_or_default()
            .into_iter()
    }

    pub fn ephemeral_count(&self) -> usize {
        self.ephemerals.values().map(EphemeralPaths::len).sum()
    }

    /// Every session that owns ephemerals, with its ephemerals sorted.
    pub fn sessions_with_ephemerals(&self) -> impl Iterator<Item = (&i64, Vec<&str>)> {
        self.ephemerals
            .iter()
            .map(|(session, paths)| (session, paths.sorted()))
    }

    pub fn containers(&self) -> &BTreeSet<String> {
        &self.containers
    }

    pub fn ttls(&self) -> &BTreeSet<String> {
        &self.ttls
    }

    /// Applies one committed transaction. Transactions at or below the last processed zxid
    /// are applied again harmlessly: each op re-checks existence and versions are absolute.
    pub fn apply<'t>(&mut self, txn: &'t Txn, triggers: &mut Vec<Trigger<'t>>) -> TxnOutcome {
        let outcome = self.apply_body(&txn.header, &txn.body, triggers);
        if txn.header.zxid > self.last_processed_zxid {
            self.last_processed_zxid = txn.header.zxid;
        }
        outcome
    }

    fn apply_body<'t>(
        &mut self,
        h: &TxnHeader,
        body: &'t TxnBody,
        triggers: &mut Vec<Trigger<'t>>,
    ) -> TxnOutcome {
        let result = match body {
            TxnBody::Create(t) | TxnBody::Create2(t) => {
                let owner = if t.ephemeral { h.client_id } else { 0 };
                self.create(
                    h,
                    NewNode::of(&t.path, &t.data, &t.acl, owner, t.parent_cversion),
                    triggers,
                )
            }
            TxnBody::CreateContainer(t) => {
                let owner = crate::node::CONTAINER_EPHEMERAL_OWNER;
                self.create(
                    h,
                    NewNode::of(&t.path, &t.data, &t.acl, owner, t.parent_cversion),
                    triggers,
                )
            }
            TxnBody::CreateTtl(t) => {
                let owner = NodeKind::ttl_owner(t.ttl);
                self.create(
                    h,
                    NewNode::of(&t.path, &t.data, &t.acl, owner, t.parent_cversion),
                    triggers,
                )
            }
            TxnBody::Delete(t) | TxnBody::DeleteContainer(t) => self
                .delete(&t.path, h.zxid, triggers)
                .map(|()| TxnOutcome::Deleted),
            TxnBody::SetData(t) => self.set_data(h, &t.path, &t.data, t.version, triggers),
            TxnBody::SetAcl(t) => self.set_acl(h.zxid, &t.path, &t.acl, t.version),
            TxnBody::Check(_) => Ok(TxnOutcome::Checked),
            TxnBody::Multi(parts) => Ok(self.apply_multi(h, parts, triggers)),
            TxnBody::CreateSession(t) => {
                self.sessions.insert(h.client_id, t.timeout_ms);
                Ok(TxnOutcome::SessionCreated)
            }
            TxnBody::CloseSession(t) => {
                self.close_session(h, &t.paths_to_delete, triggers);
                Ok(TxnOutcome::SessionClosed)
            }
            TxnBody::Error(t) => Ok(TxnOutcome::Error(
                ErrorCode::from_i32(t.err).unwrap_or(ErrorCode::SystemError),
            )),
        };
        result.unwrap_or_else(TxnOutcome::Error)
    }

    /// A multi whose prep failed carries error parts: nothing is applied and every op reports
    /// 0 before the failure, its code at it, −2 after it (ZooKeeper's `DataTree.processTxn`).
    fn apply_multi<'t>(
        &mut self,
        h: &TxnHeader,
        parts: &'t [TxnBody],
        triggers: &mut Vec<Trigger<'t>>,
    ) -> TxnOutcome {
        if parts.iter().any(|p| matches!(p, TxnBody::Error(_))) {
            let mut failed = false;
            let results = parts
                .iter()
                .map(|part| match part {
                    TxnBody::Error(e) => {
                        failed = true;
                        TxnOutcome::Error(
                            ErrorCode::from_i32(e.err).unwrap_or(ErrorCode::SystemError),
                        )
                    }
                    _ if failed => TxnOutcome::Error(ErrorCode::RuntimeInconsistency),
                    _ => TxnOutcome::Error(ErrorCode::Ok),
                })
                .collect();
            return TxnOutcome::Multi(results);
        }
        let results = parts
            .iter()
            .map(|part| self.apply_body(h, part, triggers))
            .collect();
        TxnOutcome::Multi(results)
    }

    fn create<'t>(
        &mut self,
        h: &TxnHeader,
        new: NewNode<'t>,
        triggers: &mut Vec<Trigger<'t>>,
    ) -> Result<TxnOutcome, ErrorCode> {
        let NewNode {
            path: node_path,
            data,
            acl,
            owner,
            parent_cversion,
        } = new;
        let parent_path = path::parent_of(node_path);
        let name = path::name_of(node_path);
        let parent_id = self.find(parent_path).ok_or(ErrorCode::NoNode)?;
        if self.child(parent_id, name).is_some() {
            return Err(ErrorCode::NodeExists);
        }
        let stat = StatPersisted {
            czxid: h.zxid,
            mzxid: h.zxid,
            ctime: h.time,
            mtime: h.time,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: owner,
            pzxid: h.zxid,
        };
        let acl = self.acl_cache.intern(acl);
        let data = data.as_deref();
        self.digest.add(node_path, data, &stat);
        self.data_size += (node_path.len() + data.map_or(0, <[u8]>::len)) as u64;
        let node = Node {
            record: NodeRecord::new(name, data, &stat),
            links: self.leaf_links.of(&acl),
        };
        let id = self.alloc(node);
        self.update_stat(parent_path, parent_id, |parent| {
            let cversion = if parent_cversion == -1 {
                parent.cversion + 1
            } else {
                parent_cversion
            };
            // Only move forward: replaying an older create must not roll back cversion/pzxid.
            if cversion > parent.cversion {
                parent.cversion = cversion;
                parent.pzxid = h.zxid;
            }
        });
        self.link_child(parent_id, id);
        self.index_kind(node_path, owner);
        let stat = self.node_ref(id).view(&self.nodes).stat();
        self.quota_on_create(parent_path, node_path, data.map_or(0, <[u8]>::len) as i64);
        let (acl, parent_acl) = (
            self.node_ref(id).acl().clone(),
            self.node_ref(parent_id).acl().clone(),
        );
        triggers.push(Trigger::Created(node_path, acl));
        triggers.push(Trigger::ChildrenChanged(parent_path, parent_acl));
        Ok(TxnOutcome::Created {
            path: node_path.to_string(),
            stat,
        })
    }

    /// Runs `change` on the persisted stat of the node at `node_path`, keeping the digest
    /// current. (Children are not in the digest, so linking and unlinking need no update.)
    fn update_stat(
        &mut self,
        node_path: &str,
        id: NodeId,
        change: impl FnOnce(&mut StatPersisted),
    ) {
        let Self { nodes, digest, .. } = self;
        let node = nodes.get_mut(id).expect("caller found this node");
        let mut stat = node.record.stat();
        digest.remove(node_path, node.record.data(), &stat);
        change(&mut stat);
        node.record = node.record.with_stat(&stat);
        digest.add(node_path, node.record.data(), &stat);
    }

    fn delete<'t>(
        &mut self,
        node_path: &'t str,
        zxid: i64,
        triggers: &mut Vec<Trigger<'t>>,
    ) -> Result<(), ErrorCode> {
        if node_path == "/" {
            return Err(ErrorCode::BadArguments);
        }
        let parent_path = path::parent_of(node_path);
        let name = path::name_of(node_path);
        let parent_id = self.find(parent_path).ok_or(ErrorCode::NoNode)?;
        let id = self.child(parent_id, name).ok_or(ErrorCode::NoNode)?;
        if !self.node_ref(id).children().is_empty() {
            return Err(ErrorCode::NotEmpty);
        }
        let unlinked = self.unlink_child(parent_id, name);
        debug_assert_eq!(unlinked, Some(id));
        self.update_stat(parent_path, parent_id, |parent| {
            if zxid > parent.pzxid {
                parent.pzxid = zxid;
            }
        });
        let node = self.release(id).ok_or(ErrorCode::NoNode)?;
        let stat = node.record.stat();
        self.digest.remove(node_path, node.record.data(), &stat);
        self.data_size -= (node_path.len() + node.record.data_len()) as u64;
        match NodeKind::of_owner(stat.ephemeral_owner) {
            NodeKind::Ephemeral(session) => {
                if let Some(set) = self.ephemerals.get_mut(&session) {
                    set.remove(node_path);
                    if set.is_empty() {
                        self.ephemerals.remove(&session);
                    }
                }
            }
            NodeKind::Container => {
                self.containers.remove(node_path);
            }
            NodeKind::Ttl(_) => {
                self.ttls.remove(node_path);
            }
            NodeKind::Persistent => {}
        }
        self.quota_on_delete(parent_path, node_path, node.record.data_len() as i64);
        let deleted_acl = node.acl().clone();
        drop(node);
        self.maybe_purge_acls();
        let parent_acl = self.node_ref(parent_id).acl().clone();
        triggers.push(Trigger::Deleted(node_path, deleted_acl));
        triggers.push(Trigger::ChildrenChanged(parent_path, parent_acl));
        Ok(())
    }

    fn set_data<'t>(
        &mut self,
        h: &TxnHeader,
        node_path: &'t str,
        data: &Option<Vec<u8>>,
        version: i32,
        triggers: &mut Vec<Trigger<'t>>,
    ) -> Result<TxnOutcome, ErrorCode> {
        let id = self.find(node_path).ok_or(ErrorCode::NoNode)?;
        if h.zxid < self.node_ref(id).record.stat().czxid {
            // Replay of a change to an earlier node at this path (deleted and re-created since):
            // it must not touch the current node.
            return Ok(TxnOutcome::Updated(self.view(id).stat()));
        }
        let old_len = self.node_ref(id).record.data_len() as u64;
        let new_len = data.as_ref().map_or(0, |d| d.len()) as u64;
        let Self { nodes, digest, .. } = self;
        let node = nodes.get_mut(id).expect("found above");
        let mut stat = node.record.stat();
        digest.remove(node_path, node.record.data(), &stat);
        stat.version = version;
        stat.mzxid = h.zxid;
        stat.mtime = h.time;
        node.record = NodeRecord::new(node.record.name(), data.as_deref(), &stat);
        digest.add(node_path, node.record.data(), &stat);
        self.data_size = self.data_size - old_len + new_len;
        self.quota_on_set_data(node_path, old_len as i64, new_len as i64);
        triggers.push(Trigger::DataChanged(
            node_path,
            self.node_ref(id).acl().clone(),
        ));
        Ok(TxnOutcome::Updated(self.view(id).stat()))
    }

    fn set_acl(
        &mut self,
        zxid: i64,
        node_path: &str,
        acl: &[Acl],
        version: i32,
    ) -> Result<TxnOutcome, ErrorCode> {
        let id = self.find(node_path).ok_or(ErrorCode::NoNode)?;
        if zxid < self.node_ref(id).record.stat().czxid {
            return Ok(TxnOutcome::Updated(self.view(id).stat()));
        }
        let acl = self.acl_cache.intern(acl);
        self.update_stat(node_path, id, |stat| stat.aversion = version);
        self.set_acl_of(id, acl);
        self.maybe_purge_acls();
        Ok(TxnOutcome::Updated(self.view(id).stat()))
    }

    fn close_session<'t>(
        &mut self,
        h: &TxnHeader,
        paths: &'t [String],
        triggers: &mut Vec<Trigger<'t>>,
    ) {
        self.sessions.remove(&h.client_id);
        // Deepest first, so an ephemeral's parent is never deleted before it (defensive:
        // ephemerals have no children, but the list comes from the log).
        let mut paths: Vec<&'t str> = paths.iter().map(String::as_str).collect();
        paths.sort_by_key(|p| std::cmp::Reverse(p.len()));
        for p in paths {
            let owned = self
                .get(p)
                .is_some_and(|n| n.stat.ephemeral_owner == h.client_id);
            if owned {
                let _ = self.delete(p, h.zxid, triggers);
            }
        }
    }

    /// ACL lists are reference counted by `Arc`; unused ones are swept when the cache has
    /// doubled since the last sweep, so the sweep costs O(1) amortised per change.
    fn maybe_purge_acls(&mut self) {
        if self.acl_cache.len() > self.acl_purge_at {
            // Leaf links hold their ACL lists: drop the unused ones first.
            self.leaf_links.purge_unused();
            self.acl_cache.purge_unused();
            self.acl_purge_at = (2 * self.acl_cache.len()).max(ACL_PURGE_MIN);
        }
    }

    /// Walks every node depth-first with its path (for dumps and tests).
    pub fn for_each(&self, visit: impl FnMut(&str, &NodeView<'_>)) {
        crate::snapshot::walk(&self.nodes, visit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::txn::{CreateTxn, DeleteTxn, SetAclTxn};

    fn apply(tree: &mut DataTree, zxid: i64, body: TxnBody) -> TxnOutcome {
        let header = TxnHeader {
            client_id: 1,
            cxid: 0,
            zxid,
            time: zxid,
            op_type: 0,
        };
        tree.apply(&Txn { header, body }, &mut Vec::new())
    }

    fn create(path: &str, acl: &[Acl]) -> TxnBody {
        TxnBody::Create(CreateTxn {
            path: path.into(),
            data: Some(b"d".to_vec()),
            acl: acl.to_vec().into(),
            ephemeral: false,
            parent_cversion: -1,
        })
    }

    fn set_acl(path: &str, acl: &[Acl]) -> TxnBody {
        TxnBody::SetAcl(SetAclTxn {
            path: path.into(),
            acl: acl.to_vec().into(),
            version: 1,
        })
    }

    fn acl_of(tree: &DataTree, path: &str) -> Vec<Acl> {
        tree.get(path).expect("node").acl.to_vec()
    }

    /// Leaves share their links: a node's ACL must survive gaining and losing children, a
    /// setACL must not reach the other leaves that shared them, and a frozen view must keep
    /// what it saw.
    #[test]
    fn shared_links_keep_each_nodes_acl_and_children() {
        let open = crate::acl::open_acl_unsafe();
        let read = vec![Acl {
            perms: proto::watch::perms::READ,
            id: proto::Id {
                scheme: "world".into(),
                id: "anyone".into(),
            },
        }];
        let mut tree = DataTree::new();
        apply(&mut tree, 1, create("/a", &open));
        apply(&mut tree, 2, create("/b", &open));
        apply(&mut tree, 3, create("/a/x", &read));
        let frozen = tree.freeze();
        apply(&mut tree, 4, set_acl("/a", &read));
        assert_eq!(acl_of(&tree, "/a"), read);
        assert_eq!(acl_of(&tree, "/b"), open);
        assert_eq!(tree.children("/a"), Some(vec!["x".to_string()]));
        apply(
            &mut tree,
            5,
            TxnBody::Delete(DeleteTxn {
                path: "/a/x".into(),
            }),
        );
        assert_eq!(acl_of(&tree, "/a"), read);
        assert_eq!(tree.children("/a"), Some(vec![]));
        apply(&mut tree, 6, set_acl("/b", &read));
        apply(&mut tree, 7, create("/b/y", &open));
        assert_eq!(acl_of(&tree, "/b"), read);
        assert_eq!(acl_of(&tree, "/b/y"), open);
        let mut seen = Vec::new();
        frozen.for_each(|p, n| seen.push((p.to_string(), n.acl.to_vec(), n.children.len())));
        let a = seen.iter().find(|(p, ..)| p == "/a").expect("/a frozen");
        assert_eq!((a.1.clone(), a.2), (open.clone(), 1));
        assert!(seen.iter().any(|(p, acl, _)| p == "/a/x" && *acl == read));
        assert!(!seen.iter().any(|(p, ..)| p == "/b/y"));
    }
}
