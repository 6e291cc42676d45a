//! ZooKeeper's quota bookkeeping (`Quotas`, `StatsTrack`, `DataTree.updateQuotaStat`): a quota
//! on `/a` is the node `/zookeeper/quota/a/zookeeper_limits`, and ZooKeeper keeps the counts in
//! `/zookeeper/quota/a/zookeeper_stats` as text (`count=N,bytes=M`). It recounts them when it
//! loads a snapshot and then adjusts them as transactions apply, so a replay must do the same
//! to serve the text ZooKeeper would. The text and the paths are meerkat's own tree's
//! ([`tree::quota`]), which keeps the same counts as it applies transactions.

pub use tree::quota::{
    stat_path, trim_quota_path, QuotaPaths, StatsTrack, LIMIT_NODE, QUOTA_ROOT, STAT_NODE,
};
