//! Prep: turns a write request into a transaction (`PrepRequestProcessor`).
//!
//! Validation runs against the future state (tree + [`PendingChanges`]) in ZooKeeper's order,
//! so the first error a request hits is the one ZooKeeper would report. A failed request still
//! becomes a transaction (an error transaction with its own zxid), so that replies stay in order
//! through the same pipeline as successes.

use crate::acl::{check_acl, fixup_acl, AclList};
use crate::data_tree::DataTree;
use crate::node::{CreateMode, NodeKind, CONTAINER_EPHEMERAL_OWNER, TTL_MAX_MS};
use crate::path;
use crate::pending::{ChangeRecord, PendingChanges, Undo};
use crate::quota;
use proto::multi::MultiOp;
use proto::request::Request;
use proto::txn::*;
use proto::watch::perms;
use proto::{Acl, CreateRequest, ErrorCode, Id, OpCode, SetDataRequest, StatPersisted};
use std::borrow::Cow;

/// Who is asking and where the transaction goes.
#[derive(Debug, Clone, Copy)]
pub struct PrepContext<'a> {
    pub session_id: i64,
    pub cxid: i32,
    pub zxid: i64,
    /// Leader wall-clock time in ms; becomes ctime/mtime.
    pub time_ms: i64,
    pub auth_ids: &'a [Id],
    pub extended_types_enabled: bool,
    /// `authProvider.N` registered `SASLAuthenticationProvider`: `sasl` ACLs are valid.
    pub sasl_provider: bool,
}

/// The preparer owns the pending changes between prep and apply.
#[derive(Debug, Default)]
pub struct Prep {
    pending: PendingChanges,
    /// `zookeeper.enforceQuota`: refuse writes past a quota's hard limit.
    enforce_quota: bool,
    /// QuotaExceeded answers by top namespace (`quota_exceeded_error_per_namespace`).
    quota_exceeded: std::collections::BTreeMap<String, u64>,
}

type PrepResult = Result<TxnBody, ErrorCode>;

impl Prep {
    /// A preparer that enforces quotas' hard limits when `enforce_quota`
    /// (`zookeeper.enforceQuota`); without it quotas are only counted, as in ZooKeeper.
    pub fn with_quota_enforced(enforce_quota: bool) -> Prep {
        Prep {
            enforce_quota,
            ..Prep::default()
        }
    }

    /// Forgets every pending change (the server stopped leading, or its proposals were
    /// refused); the settings and the counters stay.
    pub fn reset(&mut self) {
        self.pending = PendingChanges::default();
    }

    pub fn enforces_quota(&self) -> bool {
        self.enforce_quota
    }

    /// How many writes were refused with QuotaExceeded, by the top namespace of their path.
    pub fn quota_exceeded_counts(&self) -> &std::collections::BTreeMap<String, u64> {
        &self.quota_exceeded
    }

    pub fn pending(&self) -> &PendingChanges {
        &self.pending
    }

    /// Tells prep that every transaction up to `zxid` has been applied to the tree.
    pub fn applied(&mut self, zxid: i64) {
        self.pending.applied(zxid);
    }

    /// Turns a write request into a transaction; errors become error transactions.
    pub fn prepare(&mut self, tree: &DataTree, ctx: &PrepContext<'_>, request: &Request) -> Txn {
        let (op, body) = match request {
            Request::Multi(ops) => (OpCode::Multi, Ok(self.prep_multi(tree, ctx, ops))),
            Request::CloseSession => (OpCode::CloseSession, Ok(self.prep_close_session(tree, ctx))),
            other => (other.op_code(), self.prep_single(tree, ctx, other, None)),
        };
        to_txn(ctx, op, body)
    }

    /// A new session's transaction.
    pub fn prepare_create_session(&mut self, ctx: &PrepContext<'_>, timeout_ms: i32) -> Txn {
        let body = TxnBody::CreateSession(CreateSessionTxn { timeout_ms });
        Txn {
            header: header(ctx, OpCode::CreateSession.code()),
            body,
        }
    }

    /// The container manager's deletion of an empty container or expired TTL node.
    pub fn prepare_delete_container(
        &mut self,
        tree: &DataTree,
        ctx: &PrepContext<'_>,
        node_path: &str,
    ) -> Txn {
        let body = self.prep_delete_container(tree, ctx, node_path);
        to_txn(ctx, OpCode::DeleteContainer, body)
    }

    fn prep_single(
        &mut self,
        tree: &DataTree,
        ctx: &PrepContext<'_>,
        request: &Request,
        undo: Option<&mut Undo>,
    ) -> PrepResult {
        match request {
            Request::Create { op, req } => self.prep_create(tree, ctx, *op, req, -1, undo),
            Request::CreateTtl(r) => {
                let req = CreateRequest {
                    path: r.path.clone(),
                    data: r.data.clone(),
                    acl: r.acl.clone(),
                    flags: r.flags,
                };
                self.prep_create(tree, ctx, OpCode::CreateTtl, &req, r.ttl, undo)
            }
            Request::Delete(r) => self.prep_delete(tree, ctx, &r.path, r.version, undo),
            Request::SetData(r) => self.prep_set_data(tree, ctx, r, undo),
            Request::SetAcl(r) => self.prep_set_acl(tree, ctx, &r.path, &r.acl, r.version, undo),
            Request::Check(r) => self.prep_check(tree, ctx, &r.path, r.version),
            // Reconfiguration is disabled, as in ZooKeeper's default (reconfigEnabled=false).
            Request::Reconfig(_) => Err(ErrorCode::ReconfigDisabled),
            _ => Err(ErrorCode::Unimplemented),
        }
    }

    fn record(&self, tree: &DataTree, node_path: &str) -> Result<ChangeRecord, ErrorCode> {
        self.pending
            .lookup(tree, node_path)
            .ok_or(ErrorCode::NoNode)
    }

    fn prep_create(
        &mut self,
        tree: &DataTree,
        ctx: &PrepContext<'_>,
        op: OpCode,
        req: &CreateRequest,
        ttl: i64,
        undo: Option<&mut Undo>,
    ) -> PrepResult {
        let mode = CreateMode::from_flag(req.flags).ok_or(ErrorCode::BadArguments)?;
        if mode.is_ttl() && !ctx.extended_types_enabled {
            return Err(ErrorCode::Unimplemented);
        }
        let ttl_valid = if mode.is_ttl() {
            ttl > 0 && ttl <= TTL_MAX_MS
        } else {
            ttl < 0
        };
        if !ttl_valid {
            return Err(ErrorCode::BadArguments);
        }
        let last_slash = req.path.rfind('/').ok_or(ErrorCode::BadArguments)?;
        if req.path.contains('\0') {
            return Err(ErrorCode::BadArguments);
        }
        let parent_path = if last_slash == 0 {
            "/"
        } else {
            &req.path[..last_slash]
        };
        let acl = fixup_acl(&req.acl, ctx.auth_ids, ctx.sasl_provider)?;
        let parent = self.record(tree, parent_path)?;
        check_acl(&parent.acl, perms::CREATE, ctx.auth_ids)?;
        let parent_stat = parent.stat.clone().ok_or(ErrorCode::NoNode)?;
        let node_path = if mode.is_sequential() {
            path::with_sequence_suffix(&req.path, parent_stat.cversion)
        } else {
            req.path.clone()
        };
        path::validate_path(&node_path).map_err(|_| ErrorCode::BadArguments)?;
        if self.pending.lookup(tree, &node_path).is_some() {
            return Err(ErrorCode::NodeExists);
        }
        if matches!(
            NodeKind::of_owner(parent_stat.ephemeral_owner),
            NodeKind::Ephemeral(_)
        ) {
            return Err(ErrorCode::NoChildrenForEphemerals);
        }
        let data_len = req.data.as_ref().map_or(0, Vec::len) as i64;
        self.check_quota(tree, ctx.zxid, &node_path, 1, data_len)?;
        let new_cversion = parent_stat.cversion + 1;
        let acl = shared_acl(tree, acl);
        let (body, owner) = create_body(
            op,
            mode,
            &node_path,
            req,
            acl.clone(),
            new_cversion,
            ttl,
            ctx.session_id,
        );
        let mut undo = undo;
        let mut parent_next = parent.clone();
        parent_next.zxid = ctx.zxid;
        parent_next.child_count += 1;
        if let Some(s) = parent_next.stat.as_mut() {
            s.cversion = new_cversion;
            s.pzxid = ctx.zxid;
        }
        self.pending
            .add(parent_path, parent_next, undo.as_deref_mut());
        let stat = StatPersisted {
            czxid: ctx.zxid,
            mzxid: ctx.zxid,
            ctime: ctx.time_ms,
            mtime: ctx.time_ms,
            ephemeral_owner: owner,
            pzxid: ctx.zxid,
            ..StatPersisted::default()
        };
        let node = ChangeRecord {
            zxid: ctx.zxid,
            stat: Some(stat),
            child_count: 0,
            acl,
            data_len,
        };
        self.record_usage(tree, ctx.zxid, &node_path, 1, data_len);
        self.pending.add(&node_path, node, undo);
        Ok(body)
    }

    fn parent_for_delete<'p>(&self, node_path: &'p str) -> Result<&'p str, ErrorCode> {
        let last_slash = node_path.rfind('/').ok_or(ErrorCode::BadArguments)?;
        let special = matches!(
            node_path,
            "/" | "/zookeeper" | "/zookeeper/quota" | "/zookeeper/config"
        );
        if node_path.contains('\0') || special {
            return Err(ErrorCode::BadArguments);
        }
        Ok(if last_slash == 0 {
            "/"
        } else {
            &node_path[..last_slash]
        })
    }

    fn prep_delete(
        &mut self,
        tree: &DataTree,
        ctx: &PrepContext<'_>,
        node_path: &str,
        version: i32,
        undo: Option<&mut Undo>,
    ) -> PrepResult {
        let parent_path = self.parent_for_delete(node_path)?;
        let parent = self.record(tree, parent_path)?;
        check_acl(&parent.acl, perms::DELETE, ctx.auth_ids)?;
        let node = self.record(tree, node_path)?;
        let stat = node.stat.as_ref().ok_or(ErrorCode::NoNode)?;
        check_version(stat.version, version)?;
        if node.child_count > 0 {
            return Err(ErrorCode::NotEmpty);
        }
        self.record_usage(tree, ctx.zxid, node_path, -1, -node.data_len);
        self.record_delete(ctx.zxid, parent_path, parent, node_path, undo);
        Ok(TxnBody::Delete(DeleteTxn {
            path: node_path.to_string(),
        }))
    }

    fn prep_delete_container(
        &mut self,
        tree: &DataTree,
        ctx: &PrepContext<'_>,
        node_path: &str,
    ) -> PrepResult {
        let parent_path = self.parent_for_delete(node_path)?;
        let node = self.record(tree, node_path)?;
        if node.child_count > 0 {
            return Err(ErrorCode::NotEmpty);
        }
        let owner = node.stat.as_ref().map_or(0, |s| s.ephemeral_owner);
        if matches!(
            NodeKind::of_owner(owner),
            NodeKind::Persistent | NodeKind::Ephemeral(_)
        ) {
            return Err(ErrorCode::BadVersion);
        }
        let parent = self.record(tree, parent_path)?;
        self.record_usage(tree, ctx.zxid, node_path, -1, -node.data_len);
        self.record_delete(ctx.zxid, parent_path, parent, node_path, None);
        Ok(TxnBody::DeleteContainer(DeleteTxn {
            path: node_path.to_string(),
        }))
    }

    /// `ZooKeeperServer.checkQuota`, when quotas are enforced: a write adding `count` nodes
    /// and `bytes` bytes under the deepest quota at or above `node_path` is refused with
    /// QuotaExceeded if it would pass a hard limit; passing a soft limit is logged. Usage is
    /// the stats node's plus the changes already prepared (the future state).
    fn check_quota(
        &mut self,
        tree: &DataTree,
        zxid: i64,
        node_path: &str,
        count: i64,
        bytes: i64,
    ) -> Result<(), ErrorCode> {
        if !self.enforce_quota {
            return Ok(());
        }
        let Some(prefix) = tree.quota_paths().deepest_above(node_path) else {
            return Ok(());
        };
        let read = |p: String| {
            tree.get(&p)
                .and_then(|n| quota::StatsTrack::parse(n.data.unwrap_or_default()))
        };
        // A missing or unreadable limits or stats node checks nothing, as in ZooKeeper.
        let (Some(limits), Some(mut usage)) = (
            read(quota::limit_path(&prefix)),
            read(quota::stat_path(&prefix)),
        ) else {
            return Ok(());
        };
        let (pending_count, pending_bytes) = self.pending.usage().total(&prefix);
        usage.add(pending_count, pending_bytes);
        match quota::check(&prefix, &limits, &usage, count, bytes) {
            quota::QuotaCheck::Within => Ok(()),
            quota::QuotaCheck::SoftExceeded(message) => {
                tracing::warn!(zxid, "{message}");
                Ok(())
            }
            quota::QuotaCheck::HardExceeded { message, .. } => {
                tracing::warn!(zxid, "{message}");
                let namespace = quota::top_namespace(node_path).unwrap_or_default();
                *self
                    .quota_exceeded
                    .entry(namespace.to_string())
                    .or_default() += 1;
                Err(ErrorCode::QuotaExceeded)
            }
        }
    }

    /// Notes the usage a prepared write adds under its quota, for the next checks.
    fn record_usage(
        &mut self,
        tree: &DataTree,
        zxid: i64,
        node_path: &str,
        count: i64,
        bytes: i64,
    ) {
        if !self.enforce_quota {
            return;
        }
        if let Some(prefix) = tree.quota_paths().deepest_above(node_path) {
            self.pending.usage_mut().add(zxid, &prefix, count, bytes);
        }
    }

    fn record_delete(
        &mut self,
        zxid: i64,
        parent_path: &str,
        parent: ChangeRecord,
        node_path: &str,
        mut undo: Option<&mut Undo>,
    ) {
        let mut parent_next = parent;
        parent_next.zxid = zxid;
        parent_next.child_count -= 1;
        if let Some(s) = parent_next.stat.as_mut() {
            s.pzxid = zxid;
        }
        let acl = parent_next.acl.clone();
        self.pending
            .add(parent_path, parent_next, undo.as_deref_mut());
        self.pending.add(
            node_path,
            ChangeRecord {
                zxid,
                stat: None,
                child_count: 0,
                acl,
                data_len: 0,
            },
            undo,
        );
    }

    fn prep_set_data(
        &mut self,
        tree: &DataTree,
        ctx: &PrepContext<'_>,
        req: &SetDataRequest,
        undo: Option<&mut Undo>,
    ) -> PrepResult {
        path::validate_path(&req.path).map_err(|_| ErrorCode::BadArguments)?;
        let mut node = self.record(tree, &req.path)?;
        check_acl(&node.acl, perms::WRITE, ctx.auth_ids)?;
        let data_len = req.data.as_ref().map_or(0, Vec::len) as i64;
        self.check_quota(tree, ctx.zxid, &req.path, 0, data_len - node.data_len)?;
        let stat = node.stat.as_mut().ok_or(ErrorCode::NoNode)?;
        let version = check_version(stat.version, req.version)?;
        stat.version = version;
        stat.mtime = ctx.time_ms;
        stat.mzxid = ctx.zxid;
        node.zxid = ctx.zxid;
        self.record_usage(tree, ctx.zxid, &req.path, 0, data_len - node.data_len);
        node.data_len = data_len;
        self.pending.add(&req.path, node, undo);
        Ok(TxnBody::SetData(SetDataTxn {
            path: req.path.clone(),
            data: req.data.clone(),
            version,
        }))
    }

    fn prep_set_acl(
        &mut self,
        tree: &DataTree,
        ctx: &PrepContext<'_>,
        node_path: &str,
        acl: &[Acl],
        version: i32,
        undo: Option<&mut Undo>,
    ) -> PrepResult {
        path::validate_path(node_path).map_err(|_| ErrorCode::BadArguments)?;
        let acl = shared_acl(tree, fixup_acl(acl, ctx.auth_ids, ctx.sasl_provider)?);
        let mut node = self.record(tree, node_path)?;
        check_acl(&node.acl, perms::ADMIN, ctx.auth_ids)?;
        let stat = node.stat.as_mut().ok_or(ErrorCode::NoNode)?;
        let aversion = check_version(stat.aversion, version)?;
        stat.aversion = aversion;
        node.zxid = ctx.zxid;
        node.acl = acl.clone();
        self.pending.add(node_path, node, undo);
        Ok(TxnBody::SetAcl(SetAclTxn {
            path: node_path.to_string(),
            acl,
            version: aversion,
        }))
    }

    fn prep_check(
        &mut self,
        tree: &DataTree,
        ctx: &PrepContext<'_>,
        node_path: &str,
        version: i32,
    ) -> PrepResult {
        path::validate_path(node_path).map_err(|_| ErrorCode::BadArguments)?;
        let node = self.record(tree, node_path)?;
        check_acl(&node.acl, perms::READ, ctx.auth_ids)?;
        let stat = node.stat.as_ref().ok_or(ErrorCode::NoNode)?;
        let version = check_version(stat.version, version)?;
        Ok(TxnBody::Check(CheckVersionTxn {
            path: node_path.to_string(),
            version,
        }))
    }

    /// Every op shares the multi's zxid. After the first failure the remaining ops become
    /// RuntimeInconsistency errors and the changes of the earlier ops are rolled back.
    fn prep_multi(&mut self, tree: &DataTree, ctx: &PrepContext<'_>, ops: &[MultiOp]) -> TxnBody {
        let mut undo: Undo = Vec::new();
        let mut failed = false;
        let mut parts = Vec::with_capacity(ops.len());
        for op in ops {
            if failed {
                parts.push(TxnBody::Error(ErrorTxn {
                    err: ErrorCode::RuntimeInconsistency.code(),
                }));
                continue;
            }
            let request = multi_op_as_request(op);
            match self.prep_single(tree, ctx, &request, Some(&mut undo)) {
                Ok(body) => parts.push(body),
                Err(code) => {
                    failed = true;
                    parts.push(TxnBody::Error(ErrorTxn { err: code.code() }));
                    self.pending.rollback(std::mem::take(&mut undo), ctx.zxid);
                }
            }
        }
        TxnBody::Multi(parts)
    }

    /// Lists the session's ephemerals as they will be once pending changes apply.
    fn prep_close_session(&mut self, tree: &DataTree, ctx: &PrepContext<'_>) -> TxnBody {
        // A pending change may have deleted an ephemeral, or deleted it and let another
        // session re-create it: keep only paths the session will still own.
        let mut paths: std::collections::BTreeSet<String> = tree
            .ephemerals(ctx.session_id)
            .filter(|p| {
                self.pending
                    .lookup(tree, p)
                    .and_then(|r| r.stat)
                    .is_some_and(|s| s.ephemeral_owner == ctx.session_id)
            })
            .map(str::to_string)
            .collect();
        for (p, record) in self.pending.records() {
            if record
                .stat
                .as_ref()
                .is_some_and(|s| s.ephemeral_owner == ctx.session_id)
            {
                paths.insert(p.to_string());
            }
        }
        for p in &paths {
            let parent_path = path::parent_of(p);
            let data_len = self.pending.lookup(tree, p).map_or(0, |r| r.data_len);
            self.record_usage(tree, ctx.zxid, p, -1, -data_len);
            if let Some(parent) = self.pending.lookup(tree, parent_path) {
                self.record_delete(ctx.zxid, parent_path, parent, p, None);
            }
        }
        TxnBody::CloseSession(CloseSessionTxn {
            paths_to_delete: paths.into_iter().collect(),
        })
    }
}

/// A prep result as a transaction: a failure becomes an error transaction with its own zxid.
fn to_txn(ctx: &PrepContext<'_>, op: OpCode, body: PrepResult) -> Txn {
    let (op_type, body) = match body {
        Ok(body) => (op.code(), body),
        Err(code) => (
            OpCode::Error.code(),
            TxnBody::Error(ErrorTxn { err: code.code() }),
        ),
    };
    Txn {
        header: header(ctx, op_type),
        body,
    }
}

fn header(ctx: &PrepContext<'_>, op_type: i32) -> TxnHeader {
    TxnHeader {
        client_id: ctx.session_id,
        cxid: ctx.cxid,
        zxid: ctx.zxid,
        time: ctx.time_ms,
        op_type,
    }
}

/// `checkAndIncVersion`: −1 matches any version; returns the next version.
fn check_version(current: i32, expected: i32) -> Result<i32, ErrorCode> {
    if expected != -1 && expected != current {
        return Err(ErrorCode::BadVersion);
    }
    Ok(current.wrapping_add(1))
}

/// The tree's copy of a common ACL list (the transaction, the pending record and the znode
/// then share one), or a new one.
fn shared_acl(tree: &DataTree, acl: Cow<'_, [Acl]>) -> AclList {
    tree.interned_acl(&acl)
        .unwrap_or_else(|| AclList::new(acl.into_owned()))
}

#[allow(clippy::too_many_arguments)] // every field of a create, computed by prep_create
fn create_body(
    op: OpCode,
    mode: CreateMode,
    node_path: &str,
    req: &CreateRequest,
    acl: AclList,
    parent_cversion: i32,
    ttl: i64,
    session_id: i64,
) -> (TxnBody, i64) {
    let path = node_path.to_string();
    let data = req.data.clone();
    match op {
        OpCode::CreateContainer => (
            TxnBody::CreateContainer(CreateContainerTxn {
                path,
                data,
                acl,
                parent_cversion,
            }),
            CONTAINER_EPHEMERAL_OWNER,
        ),
        OpCode::CreateTtl => (
            TxnBody::CreateTtl(CreateTtlTxn {
                path,
                data,
                acl,
                parent_cversion,
                ttl,
            }),
            NodeKind::ttl_owner(ttl),
        ),
        _ => {
            let ephemeral = mode.is_ephemeral();
            let txn = CreateTxn {
                path,
                data,
                acl,
                ephemeral,
                parent_cversion,
            };
            let owner = if ephemeral { session_id } else { 0 };
            let body = if op == OpCode::Create2 {
                TxnBody::Create2(txn)
            } else {
                TxnBody::Create(txn)
            };
            (body, owner)
        }
    }
}

fn multi_op_as_request(op: &MultiOp) -> Request {
    match op {
        MultiOp::Create { op, req } => Request::Create {
            op: *op,
            req: req.clone(),
        },
        MultiOp::CreateTtl(r) => Request::CreateTtl(r.clone()),
        MultiOp::Delete(r) => Request::Delete(r.clone()),
        MultiOp::SetData(r) => Request::SetData(r.clone()),
        MultiOp::Check(r) => Request::Check(r.clone()),
        // multiRead ops never reach prep; a multi containing them was rejected by the decoder.
        MultiOp::GetChildren(_) | MultiOp::GetData(_) => Request::WhoAmI,
    }
}
