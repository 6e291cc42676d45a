//! ZooKeeper's quota bookkeeping (`Quotas`, `StatsTrack`, `DataTree.updateQuotaStat`): a quota
//! on `/a` is the node `/zookeeper/quota/a/zookeeper_limits`, and ZooKeeper keeps the counts in
//! `/zookeeper/quota/a/zookeeper_stats` as text (`count=N,bytes=M`). It recounts them when it
//! loads a snapshot and then adjusts them as transactions apply, so a replay must do the same
//! to serve the text ZooKeeper would.

use std::collections::BTreeMap;

pub const QUOTA_ROOT: &str = "/zookeeper/quota";
pub const LIMIT_NODE: &str = "zookeeper_limits";
pub const STAT_NODE: &str = "zookeeper_stats";

/// The stats node of a quota on `path`.
pub fn stat_path(path: &str) -> String {
    format!("{QUOTA_ROOT}{path}/{STAT_NODE}")
}

/// `Quotas.trimQuotaPath`: `/zookeeper/quota/a` → `/a`.
pub fn trim_quota_path(path: &str) -> &str {
    path.get(QUOTA_ROOT.len()..).unwrap_or_default()
}

/// `StatsTrack`: `key=value` pairs separated by `,` or `;`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsTrack(BTreeMap<String, i64>);

impl StatsTrack {
    pub fn counted(count: i64, bytes: i64) -> StatsTrack {
        let mut t = StatsTrack::default();
        t.0.insert("count".into(), count);
        t.0.insert("bytes".into(), bytes);
        t
    }

    /// `None` where ZooKeeper's parser would throw (it then fails the operation).
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

    pub fn add(&mut self, count: i64, bytes: i64) {
        let (c, b) = (self.get("count") + count, self.get("bytes") + bytes);
        self.0.insert("count".into(), c);
        self.0.insert("bytes".into(), b);
    }

    /// `StatsTrack.toString`: count and bytes first, then any other keys sorted, after an
    /// extra `=` that old parsers ignore.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = format!("count={},bytes={}", self.get("count"), self.get("bytes"));
        let extra: Vec<(&String, &i64)> = self
            .0
            .iter()
            .filter(|(k, _)| k.as_str() != "count" && k.as_str() != "bytes")
            .collect();
        if !extra.is_empty() {
            out.push('=');
            for (k, v) in extra {
                out.push_str(&format!(";{k}={v}"));
            }
        }
        out.into_bytes()
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
        assert_eq!(StatsTrack::parse(b"count"), None);
        assert_eq!(trim_quota_path("/zookeeper/quota/a/b"), "/a/b");
        assert_eq!(stat_path("/a"), "/zookeeper/quota/a/zookeeper_stats");
    }
}
