//! How applying a transaction keeps the quota stats nodes current (`DataTree.createNode`,
//! `deleteNode`, `setData`, `updateQuotaStat`, `updateQuotaForPath`, `setupQuota`); the rules
//! are in [`crate::quota`].

use super::DataTree;
use crate::node::NodeId;
use crate::path;
use crate::quota::{self, StatsTrack};
use crate::record::NodeRecord;

impl DataTree {
    /// The paths that have a quota, as the tree's limits nodes say.
    pub fn quota_paths(&self) -> &quota::QuotaPaths {
        &self.quotas
    }

    /// After `node_path` (data `data_len` bytes) was created under `parent_path`.
    pub(super) fn quota_on_create(&mut self, parent_path: &str, node_path: &str, data_len: i64) {
        if parent_path.starts_with(quota::QUOTA_ROOT) {
            let real = quota::trim_quota_path(parent_path);
            match path::name_of(node_path) {
                quota::LIMIT_NODE => self.quotas.add(real),
                quota::STAT_NODE => self.recount_quota(real),
                _ => {}
            }
        }
        self.add_quota_usage(node_path, 1, data_len);
    }

    /// After `node_path` (which held `data_len` bytes) was deleted from `parent_path`.
    pub(super) fn quota_on_delete(&mut self, parent_path: &str, node_path: &str, data_len: i64) {
        if parent_path.starts_with(quota::PROC_ROOT)
            && path::name_of(node_path) == quota::LIMIT_NODE
        {
            // ZooKeeper trims `/zookeeper/quota` off any parent under `/zookeeper`.
            if let Some(real) = parent_path.get(quota::QUOTA_ROOT.len()..) {
                self.quotas.remove(real);
            }
        }
        self.add_quota_usage(node_path, -1, -data_len);
    }

    /// After `node_path`'s data went from `old_len` to `new_len` bytes.
    pub(super) fn quota_on_set_data(&mut self, node_path: &str, old_len: i64, new_len: i64) {
        self.add_quota_usage(node_path, 0, new_len - old_len);
    }

    /// `updateQuotaStat` for the deepest quota at or above `node_path`, if any. A stats node
    /// that is missing or holds text ZooKeeper could not parse is left alone.
    fn add_quota_usage(&mut self, node_path: &str, count: i64, bytes: i64) {
        let Some(prefix) = self.quotas.deepest_above(node_path) else {
            return;
        };
        let stat_path = quota::stat_path(&prefix);
        let Some(id) = self.find(&stat_path) else {
            return;
        };
        let parsed = StatsTrack::parse(self.node_ref(id).record.data().unwrap_or_default());
        if let Some(mut stats) = parsed {
            stats.add(count, bytes);
            self.write_stats(&stat_path, id, &stats);
        }
    }

    /// `updateQuotaForPath`: the stats node of a quota on `real` set to a fresh count of the
    /// subtree at `real` (itself included).
    pub(super) fn recount_quota(&mut self, real: &str) {
        let stat_path = quota::stat_path(real);
        let Some(stats_id) = self.find(&stat_path) else {
            return;
        };
        let (count, bytes) = self.usage_of(real);
        self.write_stats(&stat_path, stats_id, &StatsTrack::counted(count, bytes));
    }

    /// The number of nodes in the subtree at `real` and the sum of their data lengths
    /// (`getCounts`); (0, 0) when there is no node there.
    pub fn usage_of(&self, real: &str) -> (i64, i64) {
        let (mut count, mut bytes) = (0i64, 0i64);
        let mut stack: Vec<NodeId> = self.find(real).into_iter().collect();
        while let Some(id) = stack.pop() {
            let node = self.node_ref(id);
            count += 1;
            bytes += node.record.data_len() as i64;
            stack.extend(node.children().ids());
        }
        (count, bytes)
    }

    /// Replaces a stats node's data. Its Stat stays as it is (ZooKeeper writes the data field
    /// alone); the digest and the data size follow the new data.
    fn write_stats(&mut self, stat_path: &str, id: NodeId, stats: &StatsTrack) {
        let text = stats.to_bytes();
        let Self {
            nodes,
            digest,
            data_size,
            ..
        } = self;
        let Some(node) = nodes.get_mut(id) else {
            return;
        };
        let stat = node.record.stat();
        digest.remove(stat_path, node.record.data(), &stat);
        *data_size -= node.record.data_len() as u64;
        node.record = NodeRecord::new(node.record.name(), Some(&text), &stat);
        *data_size += text.len() as u64;
        digest.add(stat_path, node.record.data(), &stat);
    }

    /// ZooKeeper's per-namespace quota gauges from the leaf nodes under `/zookeeper/quota`
    /// (`QuotaMetricsUtils.getQuotaLimitOrUsage`).
    pub fn namespace_quotas(&self) -> quota::NamespaceQuotas {
        let mut out = quota::NamespaceQuotas::default();
        let Some(root) = self.find(quota::QUOTA_ROOT) else {
            return out;
        };
        let mut stack = vec![(quota::QUOTA_ROOT.to_string(), root)];
        while let Some((node_path, id)) = stack.pop() {
            let node = self.node_ref(id);
            if node.children().is_empty() {
                out.add_node(&node_path, node.record.data());
                continue;
            }
            for child in node.children().ids() {
                stack.push((path::join(&node_path, self.nodes.name(child)), child));
            }
        }
        out
    }

    /// `setupQuota` without the recount: every leaf `…/zookeeper_limits` under
    /// `/zookeeper/quota` makes the path before it a quota path (see [`crate::quota`] for why
    /// a loaded tree's stats are not recounted).
    pub(crate) fn rebuild_quota_paths(&mut self) {
        let mut quotas = quota::QuotaPaths::default();
        let end = format!("/{}", quota::LIMIT_NODE);
        let Some(root) = self.find(quota::QUOTA_ROOT) else {
            self.quotas = quotas;
            return;
        };
        let mut stack = vec![(quota::QUOTA_ROOT.to_string(), root)];
        while let Some((node_path, id)) = stack.pop() {
            let node = self.node_ref(id);
            if node.children().is_empty() {
                if node_path.ends_with(&end) {
                    if let Some(at) = node_path.find(&end) {
                        quotas.add(&node_path[quota::QUOTA_ROOT.len()..at]);
                    }
                }
                continue;
            }
            for child in node.children().ids() {
                let name = self.nodes.name(child);
                stack.push((path::join(&node_path, name), child));
            }
        }
        self.quotas = quotas;
    }
}
