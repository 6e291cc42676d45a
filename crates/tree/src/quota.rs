//! ZooKeeper's quotas (`Quotas`, `StatsTrack`, `DataTree.updateQuotaStat`, `PathTrie`,
//! `ZooKeeperServer.checkQuota`).
//!
//! A quota on `/a` is the node `/zookeeper/quota/a/zookeeper_limits`, whose data is a
//! [`StatsTrack`] text such as `count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=10`. Its
//! usage lives beside it in `/zookeeper/quota/a/zookeeper_stats` (`count=N,bytes=M`: the nodes
//! of the subtree `/a`, `/a` included, and the sum of their data lengths).
//!
//! As in ZooKeeper 3.9:
//! * creating a node called `zookeeper_limits` under `/zookeeper/quota` makes its parent's real
//!   path a quota path ([`QuotaPaths`], ZooKeeper's `pTrie`); deleting it (anywhere under
//!   `/zookeeper`) unmakes it;
//! * creating a node called `zookeeper_stats` under `/zookeeper/quota` replaces the data it was
//!   created with by a count of the real subtree;
//! * every create, delete and setData of a node at or below a quota path adds its change of
//!   count and bytes to the stats node of the *deepest* quota path above it. Only the stats
//!   node's data changes, never its Stat (version, mzxid and mtime stay as created), exactly as
//!   ZooKeeper writes `statNode.data` directly;
//! * with `zookeeper.enforceQuota=true`, prep refuses a create or setData that would take a
//!   quota's usage past a hard limit (`countHardLimit`, `byteHardLimit`) with QuotaExceeded;
//!   a soft limit (`count`, `bytes`) only logs a warning.
//!
//! meerkat's stats nodes are ordinary nodes of the tree, so they are in its digest and its
//! snapshots. Unlike ZooKeeper, a loaded snapshot's stats are not recounted: meerkat's
//! snapshots are consistent (taken at one zxid), so the counts in them are already right, and a
//! recount on one replica only would change its digest. [`QuotaPaths`] is rebuilt from the
//! limits nodes when a snapshot loads, as ZooKeeper's `setupQuota` rebuilds its trie.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

pub const PROC_ROOT: &str = "/zookeeper";
pub const QUOTA_ROOT: &str = "/zookeeper/quota";
pub const LIMIT_NODE: &str = "zookeeper_limits";
pub const STAT_NODE: &str = "zookeeper_stats";

/// `Quotas.quotaPath`: the node under which `path`'s quota nodes live.
pub fn quota_path(path: &str) -> String {
    format!("{QUOTA_ROOT}{path}")
}

/// `Quotas.limitPath`: the limits node of a quota on `path`.
pub fn limit_path(path: &str) -> String {
    format!("{QUOTA_ROOT}{path}/{LIMIT_NODE}")
}

/// `Quotas.statPath`: the stats node of a quota on `path`.
pub fn stat_path(path: &str) -> String {
    format!("{QUOTA_ROOT}{path}/{STAT_NODE}")
}

/// `Quotas.trimQuotaPath`: `/zookeeper/quota/a` → `/a` (empty when `path` is shorter).
pub fn trim_quota_path(path: &str) -> &str {
    path.get(QUOTA_ROOT.len()..).unwrap_or_default()
}

/// `PathUtils.getTopNamespace`: the first component of `path` (`/a/b` → `a`), the label of
/// ZooKeeper's per-namespace quota metrics.
pub fn top_namespace(path: &str) -> Option<&str> {
    path.split('/').nth(1).filter(|n| !n.is_empty())
}

/// ZooKeeper's per-namespace quota gauges (`QuotaMetricsUtils`): the limits (the hard one
/// where set, else the soft one, −1 for none) and the usage of every quota, summed by the top
/// namespace of the quota's path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamespaceQuotas {
    pub count_limit: BTreeMap<String, i64>,
    pub bytes_limit: BTreeMap<String, i64>,
    pub count_usage: BTreeMap<String, i64>,
    pub bytes_usage: BTreeMap<String, i64>,
}

impl NamespaceQuotas {
    /// Adds a leaf quota node (`…/zookeeper_limits` or `…/zookeeper_stats` under
    /// `/zookeeper/quota`) found at `node_path` with `data`; other nodes count for nothing,
    /// nor does text `StatsTrack` cannot read.
    pub fn add_node(&mut self, node_path: &str, data: Option<&[u8]>) {
        let real = trim_quota_path(node_path);
        let (Some(namespace), Some(data)) = (top_namespace(real), data) else {
            return;
        };
        let Some(track) = StatsTrack::parse(data) else {
            return;
        };
        let add = |map: &mut BTreeMap<String, i64>, v: i64| {
            let sum = map.entry(namespace.to_string()).or_default();
            *sum = sum.wrapping_add(v);
        };
        if node_path.ends_with(&format!("/{LIMIT_NODE}")) {
            add(&mut self.count_limit, track.count_limit());
            add(&mut self.bytes_limit, track.byte_limit());
        } else if node_path.ends_with(&format!("/{STAT_NODE}")) {
            add(&mut self.count_usage, track.count());
            add(&mut self.bytes_usage, track.bytes());
        }
    }
}

const COUNT: &str = "count";
const BYTES: &str = "bytes";
const COUNT_HARD_LIMIT: &str = "countHardLimit";
const BYTE_HARD_LIMIT: &str = "byteHardLimit";

/// `StatsTrack`: `key=value` pairs separated by `,` or `;`; a missing key reads as −1.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsTrack(BTreeMap<String, i64>);

impl StatsTrack {
    /// `count=N,bytes=M`, as ZooKeeper's stats nodes hold.
    pub fn counted(count: i64, bytes: i64) -> StatsTrack {
        let mut t = StatsTrack::default();
        t.set_count(count);
        t.set_bytes(bytes);
        t
    }

    /// `None` where ZooKeeper's parser would throw (a pair without `=`, a value that is not a
    /// number, text that is not UTF-8).
    pub fn parse(data: &[u8]) -> Option<StatsTrack> {
        let text = std::str::from_utf8(data).ok()?;
        let mut t = StatsTrack::default();
        for pair in text.split([',', ';']).filter(|p| !p.is_empty()) {
            // Java's split drops trailing empty parts: "bytes=2=" is ("bytes", "2").
            let mut kv = pair.split('=');
            let key = kv.next()?;
            let value = kv.next()?;
            let value = if value.is_empty() {
                -1
            } else {
                value.parse().ok()?
            };
            t.0.insert(key.to_string(), value);
        }
        Some(t)
    }

    fn get(&self, key: &str) -> i64 {
        self.0.get(key).copied().unwrap_or(-1)
    }

    pub fn count(&self) -> i64 {
        self.get(COUNT)
    }

    pub fn bytes(&self) -> i64 {
        self.get(BYTES)
    }

    pub fn count_hard_limit(&self) -> i64 {
        self.get(COUNT_HARD_LIMIT)
    }

    pub fn byte_hard_limit(&self) -> i64 {
        self.get(BYTE_HARD_LIMIT)
    }

    pub fn set_count(&mut self, v: i64) {
        self.0.insert(COUNT.into(), v);
    }

    pub fn set_bytes(&mut self, v: i64) {
        self.0.insert(BYTES.into(), v);
    }

    pub fn set_count_hard_limit(&mut self, v: i64) {
        self.0.insert(COUNT_HARD_LIMIT.into(), v);
    }

    pub fn set_byte_hard_limit(&mut self, v: i64) {
        self.0.insert(BYTE_HARD_LIMIT.into(), v);
    }

    /// Adds to count and bytes (a missing one starts from −1, as ZooKeeper's does).
    pub fn add(&mut self, count: i64, bytes: i64) {
        let (c, b) = (
            self.count().wrapping_add(count),
            self.bytes().wrapping_add(bytes),
        );
        self.set_count(c);
        self.set_bytes(b);
    }

    /// The limit a count is held to: the hard one if set, else the soft one (−1: none).
    pub fn count_limit(&self) -> i64 {
        if self.count_hard_limit() > -1 {
            self.count_hard_limit()
        } else {
            self.count()
        }
    }

    /// The limit bytes are held to: the hard one if set, else the soft one (−1: none).
    pub fn byte_limit(&self) -> i64 {
        if self.byte_hard_limit() > -1 {
            self.byte_hard_limit()
        } else {
            self.bytes()
        }
    }

    /// `StatsTrack.toString`: count and bytes first, then any other keys sorted, after an
    /// extra `=` that old parsers ignore.
    pub fn to_text(&self) -> String {
        let mut out = format!("{COUNT}={},{BYTES}={}", self.count(), self.bytes());
        let mut extra = self
            .0
            .iter()
            .filter(|(k, _)| k.as_str() != COUNT && k.as_str() != BYTES)
            .peekable();
        if extra.peek().is_some() {
            out.push('=');
            for (k, v) in extra {
                out.push_str(&format!(";{k}={v}"));
            }
        }
        out
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_text().into_bytes()
    }
}

/// The components of a path, as `PathTrie.split` sees them (empty ones skipped).
fn components(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|c| !c.is_empty())
}

/// A path rebuilt from its components (`//a/b/` → `/a/b`); `None` for no components.
fn normalized(path: &str) -> Option<String> {
    let mut out = String::new();
    for c in components(path) {
        out.push('/');
        out.push_str(c);
    }
    (!out.is_empty()).then_some(out)
}

/// The paths that have a quota (ZooKeeper's `pTrie`), by their components.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuotaPaths {
    paths: BTreeSet<String>,
}

impl QuotaPaths {
    /// `PathTrie.addPath`. The root (no components) never counts as a quota path.
    pub fn add(&mut self, path: &str) {
        if let Some(p) = normalized(path) {
            self.paths.insert(p);
        }
    }

    /// `PathTrie.deletePath`.
    pub fn remove(&mut self, path: &str) {
        if let Some(p) = normalized(path) {
            self.paths.remove(&p);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &String> {
        self.paths.iter()
    }

    /// `DataTree.getMaxPrefixWithQuota`: the deepest quota path that is `path` or one of its
    /// ancestors, compared component by component (`/ab` is not under `/a`).
    pub fn deepest_above(&self, path: &str) -> Option<String> {
        if self.paths.is_empty() {
            return None;
        }
        let mut prefix = String::new();
        let mut deepest = None;
        for c in components(path) {
            prefix.push('/');
            prefix.push_str(c);
            if self.paths.contains(&prefix) {
                deepest = Some(prefix.clone());
            }
        }
        deepest
    }
}

/// What prep found about a write under a quota.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuotaCheck {
    Within,
    /// Past a soft limit: allowed, with ZooKeeper's warning text.
    SoftExceeded(String),
    /// Past a hard limit: refused with QuotaExceeded. The quota path and ZooKeeper's text.
    HardExceeded {
        prefix: String,
        message: String,
    },
}

/// `ZooKeeperServer.checkQuota(lastPrefix, bytesDiff, countDiff)`: the usage after the change
/// against the limits. The count is checked first, and only a change of it is checked; the
/// same for bytes.
pub fn check(
    prefix: &str,
    limits: &StatsTrack,
    usage: &StatsTrack,
    count_diff: i64,
    bytes_diff: i64,
) -> QuotaCheck {
    let mut verdict = QuotaCheck::Within;
    let checks = [
        (
            "count",
            "Count",
            count_diff,
            usage.count(),
            limits.count_limit(),
            limits.count_hard_limit() > -1,
            limits.count() > -1 || limits.count_hard_limit() > -1,
        ),
        (
            "bytes",
            "Byte",
            bytes_diff,
            usage.bytes(),
            limits.byte_limit(),
            limits.byte_hard_limit() > -1,
            limits.bytes() > -1 || limits.byte_hard_limit() > -1,
        ),
    ];
    for (what, kind, diff, current, limit, hard, limited) in checks {
        if diff == 0 || !limited {
            continue;
        }
        let next = current.wrapping_add(diff);
        if next > limit {
            let strength = if hard { "hard" } else { "soft" };
            let message = format!(
                "Quota exceeded: {prefix} [current {what}={next}, {strength}{kind}Limit={limit}]"
            );
            if hard {
                return QuotaCheck::HardExceeded {
                    prefix: prefix.to_string(),
                    message,
                };
            }
            verdict = QuotaCheck::SoftExceeded(message);
        }
    }
    verdict
}

/// The changes of usage that prep has accepted but the tree has not applied yet, by quota
/// path, so that prep checks a write against the usage it will meet (the future state).
#[derive(Debug, Default)]
pub struct PendingUsage {
    /// (zxid, quota path, count change, bytes change) in prep order.
    changes: VecDeque<(i64, String, i64, i64)>,
    /// The sum of `changes` per quota path.
    totals: HashMap<String, (i64, i64)>,
}

impl PendingUsage {
    pub fn add(&mut self, zxid: i64, prefix: &str, count: i64, bytes: i64) {
        if count == 0 && bytes == 0 {
            return;
        }
        let total = self.totals.entry(prefix.to_string()).or_default();
        total.0 = total.0.wrapping_add(count);
        total.1 = total.1.wrapping_add(bytes);
        self.changes
            .push_back((zxid, prefix.to_string(), count, bytes));
    }

    /// The pending (count, bytes) change of a quota path.
    pub fn total(&self, prefix: &str) -> (i64, i64) {
        self.totals.get(prefix).copied().unwrap_or_default()
    }

    fn undo_one(&mut self, prefix: &str, count: i64, bytes: i64) {
        if let Some(total) = self.totals.get_mut(prefix) {
            total.0 = total.0.wrapping_sub(count);
            total.1 = total.1.wrapping_sub(bytes);
            if *total == (0, 0) {
                self.totals.remove(prefix);
            }
        }
    }

    /// Forgets the changes of `zxid` (a multi that failed part-way).
    pub fn rollback(&mut self, zxid: i64) {
        while let Some((z, ..)) = self.changes.back() {
            if *z != zxid {
                break;
            }
            if let Some((_, prefix, count, bytes)) = self.changes.pop_back() {
                self.undo_one(&prefix, count, bytes);
            }
        }
    }

    /// Forgets the changes of every transaction up to and including `zxid`: the tree's stats
    /// nodes hold them now.
    pub fn applied(&mut self, zxid: i64) {
        while let Some((z, ..)) = self.changes.front() {
            if *z > zxid {
                break;
            }
            if let Some((_, prefix, count, bytes)) = self.changes.pop_front() {
                self.undo_one(&prefix, count, bytes);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_text_round_trips_as_zookeeper_writes_it() {
        let t = StatsTrack::parse(b"count=3,bytes=10").unwrap_or_default();
        assert_eq!(t.to_bytes(), b"count=3,bytes=10");
        let mut t = StatsTrack::parse(b"count=1,bytes=-1=;countHardLimit=5").unwrap_or_default();
        t.add(2, 7);
        assert_eq!(t.to_bytes(), b"count=3,bytes=6=;countHardLimit=5");
        assert_eq!(t.count_hard_limit(), 5);
        assert_eq!(t.byte_hard_limit(), -1);
        assert_eq!(StatsTrack::parse(b"count"), None);
        assert_eq!(StatsTrack::parse(b"count=x"), None);
        assert_eq!(StatsTrack::parse(b"").map(|t| t.count()), Some(-1));
        assert_eq!(trim_quota_path("/zookeeper/quota/a/b"), "/a/b");
        assert_eq!(trim_quota_path("/zookeeper"), "");
        assert_eq!(stat_path("/a"), "/zookeeper/quota/a/zookeeper_stats");
        assert_eq!(limit_path("/a"), "/zookeeper/quota/a/zookeeper_limits");
    }

    /// zkCli's `setquota -N 2 /a` writes every limit, unset ones as −1.
    #[test]
    fn zkcli_limits_text() {
        let mut t = StatsTrack::default();
        t.set_count(-1);
        t.set_bytes(-1);
        t.set_count_hard_limit(2);
        t.set_byte_hard_limit(-1);
        assert_eq!(
            t.to_text(),
            "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=2"
        );
        assert_eq!(t.count_limit(), 2);
        assert_eq!(t.byte_limit(), -1);
    }

    #[test]
    fn deepest_quota_path_by_components() {
        let mut q = QuotaPaths::default();
        assert_eq!(q.deepest_above("/a"), None);
        q.add("/a");
        q.add("/a/b/c");
        q.add("/");
        assert_eq!(q.deepest_above("/a"), Some("/a".into()));
        assert_eq!(q.deepest_above("/a/b"), Some("/a".into()));
        assert_eq!(q.deepest_above("/a/b/c/d"), Some("/a/b/c".into()));
        assert_eq!(q.deepest_above("/ab"), None);
        assert_eq!(q.deepest_above("/"), None);
        q.remove("/a");
        assert_eq!(q.deepest_above("/a/b"), None);
        assert_eq!(q.deepest_above("/a/b/c"), Some("/a/b/c".into()));
    }

    #[test]
    fn hard_limits_refuse_soft_limits_warn() {
        let limits = StatsTrack::parse(b"count=2,bytes=-1=;byteHardLimit=10;countHardLimit=-1")
            .unwrap_or_default();
        let usage = StatsTrack::counted(2, 4);
        assert_eq!(
            check("/a", &limits, &usage, 1, 0),
            QuotaCheck::SoftExceeded(
                "Quota exceeded: /a [current count=3, softCountLimit=2]".into()
            )
        );
        assert_eq!(check("/a", &limits, &usage, 0, 6), QuotaCheck::Within);
        assert_eq!(
            check("/a", &limits, &usage, 1, 7),
            QuotaCheck::HardExceeded {
                prefix: "/a".into(),
                message: "Quota exceeded: /a [current bytes=11, hardByteLimit=10]".into()
            }
        );
        // A delete-like change never exceeds; a change of 0 is not checked.
        assert_eq!(check("/a", &limits, &usage, -1, -4), QuotaCheck::Within);
        let over = StatsTrack::counted(5, 40);
        assert_eq!(check("/a", &limits, &over, 0, 0), QuotaCheck::Within);
    }

    #[test]
    fn pending_usage_follows_prep_rollback_and_apply() {
        let mut p = PendingUsage::default();
        p.add(1, "/a", 1, 3);
        p.add(2, "/a", 1, 2);
        p.add(2, "/b", 1, 0);
        assert_eq!(p.total("/a"), (2, 5));
        p.rollback(2);
        assert_eq!(p.total("/a"), (1, 3));
        assert_eq!(p.total("/b"), (0, 0));
        p.applied(1);
        assert_eq!(p.total("/a"), (0, 0));
        assert!(p.is_empty());
    }
}
