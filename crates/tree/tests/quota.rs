//! Quotas (`tree::quota`): the stats nodes under `/zookeeper/quota` follow every create,
//! delete and setData below a quota path as ZooKeeper 3.9's do, stay equal to a recount of the
//! subtree, survive replay and snapshots, and with enforcement on prep refuses writes past a
//! hard limit against the future state.

use proptest::prelude::*;
use proto::multi::MultiOp;
use proto::request::Request;
use proto::txn::Txn;
use proto::{CreateRequest, ErrorCode, OpCode, PathAndVersion, SetDataRequest, StatPersisted};
use tree::quota::{limit_path, stat_path, StatsTrack};
use tree::{DataTree, Prep, PrepContext, TreeLoader, TxnOutcome};

struct Sut {
    tree: DataTree,
    prep: Prep,
    log: Vec<Txn>,
    zxid: i64,
}

impl Sut {
    fn new(enforce: bool) -> Sut {
        Sut {
            tree: DataTree::new(),
            prep: Prep::with_quota_enforced(enforce),
            log: Vec::new(),
            zxid: 0,
        }
    }

    fn prepare(&mut self, request: &Request) -> Txn {
        self.zxid += 1;
        let ctx = PrepContext {
            session_id: 7,
            cxid: self.zxid as i32,
            zxid: self.zxid,
            time_ms: 1000 + self.zxid,
            auth_ids: &[],
            extended_types_enabled: true,
            sasl_provider: false,
        };
        self.prep.prepare(&self.tree, &ctx, request)
    }

    fn apply(&mut self, txn: &Txn) -> TxnOutcome {
        let outcome = self.tree.apply(txn, &mut Vec::new());
        self.prep.applied(txn.header.zxid);
        self.log.push(txn.clone());
        outcome
    }

    fn run(&mut self, request: &Request) -> TxnOutcome {
        let txn = self.prepare(request);
        self.apply(&txn)
    }

    fn create(&mut self, path: &str, data: &[u8]) -> TxnOutcome {
        self.run(&create(path, data))
    }

    /// What zkCli's `setquota` does for a new quota: the parents under `/zookeeper/quota`,
    /// then the limits node, then the stats node created as `count=0,bytes=0`.
    fn set_quota(&mut self, path: &str, limits: &str) {
        let mut q = String::from("/zookeeper/quota");
        for c in path.split('/').filter(|c| !c.is_empty()) {
            q.push('/');
            q.push_str(c);
            if self.tree.get(&q).is_none() {
                self.create(&q, b"");
            }
        }
        self.create(&limit_path(path), limits.as_bytes());
        self.create(&stat_path(path), b"count=0,bytes=0");
    }

    fn stats(&self, path: &str) -> String {
        let node = self.tree.get(&stat_path(path)).expect("stats node");
        String::from_utf8(node.data.unwrap_or_default().to_vec()).expect("text")
    }
}

fn create(path: &str, data: &[u8]) -> Request {
    Request::Create {
        op: OpCode::Create,
        req: CreateRequest {
            path: path.into(),
            data: Some(data.to_vec()),
            acl: tree::acl::open_acl_unsafe(),
            flags: 0,
        },
    }
}

fn set_data(path: &str, data: &[u8]) -> Request {
    Request::SetData(SetDataRequest {
        path: path.into(),
        data: Some(data.to_vec()),
        version: -1,
    })
}

fn delete(path: &str) -> Request {
    Request::Delete(PathAndVersion {
        path: path.into(),
        version: -1,
    })
}

fn error_of(outcome: &TxnOutcome) -> Option<ErrorCode> {
    match outcome {
        TxnOutcome::Error(code) => Some(*code),
        _ => None,
    }
}

fn load(tree: &DataTree) -> DataTree {
    let snapshot = tree.freeze();
    let mut loader = TreeLoader::new();
    let mut result = Ok(());
    snapshot.for_each(|p, n| {
        if result.is_ok() {
            result = loader.add_node(p, n.data, n.acl, n.stat.clone());
        }
    });
    result.expect("a frozen tree loads");
    loader
        .finish(snapshot.zxid(), snapshot.digest())
        .expect("digest matches")
}

/// The stats text after each kind of change, and the stats node's Stat left as created.
#[test]
fn stats_follow_creates_deletes_and_set_data_as_zookeeper_shows_them() {
    let mut sut = Sut::new(false);
    sut.create("/q", b"abc");
    sut.create("/q/a", b"12345");
    sut.create("/other", b"zz");
    sut.set_quota("/q", "count=10,bytes=-1");
    // The stats node was created as count=0,bytes=0 and recounted: /q and /q/a, 3 + 5 bytes.
    assert_eq!(sut.stats("/q"), "count=2,bytes=8");
    let created: StatPersisted = sut.tree.get(&stat_path("/q")).expect("stats").stat;
    sut.create("/q/a/b", b"xy");
    assert_eq!(sut.stats("/q"), "count=3,bytes=10");
    sut.run(&set_data("/q/a", b"1"));
    assert_eq!(sut.stats("/q"), "count=3,bytes=6");
    sut.run(&delete("/q/a/b"));
    assert_eq!(sut.stats("/q"), "count=2,bytes=4");
    // Outside the quota nothing changes; a sibling with a longer name is outside too.
    sut.create("/qq", b"0123456789");
    sut.run(&set_data("/other", b"0123456789"));
    assert_eq!(sut.stats("/q"), "count=2,bytes=4");
    // ZooKeeper writes the stats node's data alone: version, mzxid and mtime stay.
    let now = sut.tree.get(&stat_path("/q")).expect("stats").stat;
    assert_eq!(now, created);
    assert_eq!(now.version, 0);
    assert_eq!(sut.tree.usage_of("/q"), (2, 4));
}

/// Deleting the limits node ends the upkeep; the stats node keeps its last text.
#[test]
fn deleting_the_limits_node_stops_the_counting() {
    let mut sut = Sut::new(false);
    sut.create("/q", b"");
    sut.set_quota("/q", "count=10,bytes=-1");
    assert_eq!(sut.stats("/q"), "count=1,bytes=0");
    sut.run(&delete(&limit_path("/q")));
    sut.create("/q/x", b"abc");
    assert_eq!(sut.stats("/q"), "count=1,bytes=0");
    assert!(sut.tree.quota_paths().is_empty());
}

/// Nested quotas: a change counts only in the deepest quota above it (ZooKeeper's rule).
#[test]
fn only_the_deepest_quota_counts_a_change() {
    let mut sut = Sut::new(false);
    sut.create("/q", b"");
    sut.create("/q/in", b"");
    sut.set_quota("/q", "count=10,bytes=-1");
    sut.set_quota("/q/in", "count=10,bytes=-1");
    assert_eq!(sut.stats("/q"), "count=2,bytes=0");
    assert_eq!(sut.stats("/q/in"), "count=1,bytes=0");
    sut.create("/q/in/x", b"abcd");
    sut.create("/q/y", b"ab");
    assert_eq!(sut.stats("/q/in"), "count=2,bytes=4");
    assert_eq!(sut.stats("/q"), "count=3,bytes=2");
}

/// A snapshot keeps the stats (no recount) and the loaded tree knows the quota paths again.
#[test]
fn a_loaded_snapshot_keeps_counting() {
    let mut sut = Sut::new(false);
    sut.create("/q", b"abc");
    sut.set_quota("/q", "count=10,bytes=-1");
    let mut loaded = load(&sut.tree);
    assert_eq!(loaded.quota_paths(), sut.tree.quota_paths());
    sut.tree = std::mem::take(&mut loaded);
    sut.create("/q/x", b"12");
    assert_eq!(sut.stats("/q"), "count=2,bytes=5");
}

#[test]
fn hard_limits_refuse_with_quota_exceeded_soft_limits_do_not() {
    let mut sut = Sut::new(true);
    sut.create("/q", b"");
    sut.create("/s", b"");
    sut.set_quota("/q", "count=-1,bytes=-1=;byteHardLimit=6;countHardLimit=3");
    sut.set_quota("/s", "count=1,bytes=1");
    sut.create("/q/a", b"abc");
    sut.create("/q/b", b"");
    // /q, /q/a, /q/b: a fourth node is past countHardLimit=3.
    let refused = sut.create("/q/c", b"");
    assert_eq!(error_of(&refused), Some(ErrorCode::QuotaExceeded));
    assert_eq!(sut.stats("/q"), "count=3,bytes=3");
    // Bytes: 3 + 4 > 6 is refused, 3 + 3 is not.
    let refused = sut.run(&set_data("/q/b", b"1234"));
    assert_eq!(error_of(&refused), Some(ErrorCode::QuotaExceeded));
    let ok = sut.run(&set_data("/q/b", b"123"));
    assert_eq!(error_of(&ok), None);
    // Soft limits only warn.
    let ok = sut.create("/s/a", b"abcdef");
    assert_eq!(error_of(&ok), None);
    assert_eq!(sut.stats("/s"), "count=2,bytes=6");
    // Freeing room lets the create through.
    sut.run(&delete("/q/a"));
    let ok = sut.create("/q/c", b"");
    assert_eq!(error_of(&ok), None);
    assert_eq!(sut.prep.quota_exceeded_counts().get("q").copied(), Some(2));
}

/// Prep counts changes prepared but not yet applied, and a multi's earlier ops.
#[test]
fn enforcement_checks_the_future_state() {
    let mut sut = Sut::new(true);
    sut.create("/q", b"");
    sut.set_quota("/q", "count=-1,bytes=-1=;countHardLimit=3");
    let first = sut.prepare(&create("/q/a", b""));
    let second = sut.prepare(&create("/q/b", b""));
    let third = sut.prepare(&create("/q/c", b""));
    assert_eq!(error_of(&sut.apply(&first)), None);
    assert_eq!(error_of(&sut.apply(&second)), None);
    assert_eq!(error_of(&sut.apply(&third)), Some(ErrorCode::QuotaExceeded));
    sut.run(&delete("/q/b"));
    // One slot left: the multi's second create is past the limit, so nothing applies.
    let multi = Request::Multi(vec![
        MultiOp::Create {
            op: OpCode::Create,
            req: match create("/q/m1", b"") {
                Request::Create { req, .. } => req,
                _ => unreachable!("create builds a create"),
            },
        },
        MultiOp::Create {
            op: OpCode::Create,
            req: match create("/q/m2", b"") {
                Request::Create { req, .. } => req,
                _ => unreachable!("create builds a create"),
            },
        },
    ]);
    let outcome = sut.run(&multi);
    let TxnOutcome::Multi(results) = outcome else {
        panic!("a multi answers per op: {outcome:?}");
    };
    assert_eq!(
        results,
        vec![
            TxnOutcome::Error(ErrorCode::Ok),
            TxnOutcome::Error(ErrorCode::QuotaExceeded)
        ]
    );
    assert!(sut.tree.get("/q/m1").is_none());
    assert!(sut.prep.pending().usage().is_empty());
    let ok = sut.create("/q/m1", b"");
    assert_eq!(error_of(&ok), None);
}

/// Without `enforceQuota` limits are only counted.
#[test]
fn without_enforcement_nothing_is_refused() {
    let mut sut = Sut::new(false);
    sut.create("/q", b"");
    sut.set_quota("/q", "count=-1,bytes=-1=;countHardLimit=1");
    assert_eq!(error_of(&sut.create("/q/a", b"")), None);
    assert_eq!(sut.stats("/q"), "count=2,bytes=0");
}

#[derive(Debug, Clone)]
enum Op {
    Create(usize, Vec<u8>),
    Delete(usize),
    SetData(usize, Vec<u8>),
}

const PATHS: &[&str] = &[
    "/q/a",
    "/q/b",
    "/q/a/x",
    "/q/a/y",
    "/q/b/x",
    "/r/in",
    "/r/in/x",
    "/r/out",
    "/q/a/x/deep",
];

fn op() -> impl Strategy<Value = Op> {
    let path = 0..PATHS.len();
    let data = proptest::collection::vec(any::<u8>(), 0..12);
    prop_oneof![
        (path.clone(), data.clone()).prop_map(|(p, d)| Op::Create(p, d)),
        path.clone().prop_map(Op::Delete),
        (path, data).prop_map(|(p, d)| Op::SetData(p, d)),
    ]
}

fn request(op: &Op) -> Request {
    match op {
        Op::Create(p, d) => create(PATHS[*p], d),
        Op::Delete(p) => delete(PATHS[*p]),
        Op::SetData(p, d) => set_data(PATHS[*p], d),
    }
}

/// A write of the pipelined test: a single op or a multi of two or three.
fn pipelined() -> impl Strategy<Value = Request> {
    prop_oneof![
        3 => op().prop_map(|o| request(&o)),
        1 => proptest::collection::vec(op(), 2..4).prop_map(|ops| {
            Request::Multi(ops.iter().map(|o| match request(o) {
                Request::Create { op, req } => MultiOp::Create { op, req },
                Request::Delete(r) => MultiOp::Delete(r),
                Request::SetData(r) => MultiOp::SetData(r),
                other => unreachable!("request() builds no {other:?}"),
            }).collect())
        }),
    ]
}

fn dump(tree: &DataTree) -> Vec<(String, Option<Vec<u8>>, StatPersisted)> {
    let mut nodes = Vec::new();
    tree.for_each(|p, n| nodes.push((p.to_string(), n.data.map(<[u8]>::to_vec), n.stat.clone())));
    nodes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    /// After any sequence of writes, every stats node equals a recount of its subtree, also
    /// after replaying the log again over the result and after a snapshot round trip; with
    /// enforcement on, no quota's count passes its hard limit.
    #[test]
    fn stats_equal_a_recount(ops in proptest::collection::vec(op(), 1..60), enforce in any::<bool>()) {
        let mut sut = Sut::new(enforce);
        sut.create("/q", b"root");
        sut.create("/r", b"");
        sut.create("/r/in", b"1");
        sut.set_quota("/q", "count=-1,bytes=-1=;byteHardLimit=40;countHardLimit=5");
        sut.set_quota("/r/in", "count=2,bytes=-1");
        for op in &ops {
            sut.run(&request(op));
            for quota in ["/q", "/r/in"] {
                let (count, bytes) = sut.tree.usage_of(quota);
                prop_assert_eq!(sut.stats(quota), StatsTrack::counted(count, bytes).to_text());
                if enforce && quota == "/q" {
                    prop_assert!(count <= 5 && bytes <= 40, "{quota}: {count} nodes, {bytes} bytes");
                }
            }
        }
        prop_assert!(sut.prep.pending().usage().is_empty());
        // Replaying the whole log from scratch, and then again over the result, gives the
        // same state: transactions are idempotent, quota upkeep included.
        let mut replayed = DataTree::new();
        for txn in &sut.log {
            replayed.apply(txn, &mut Vec::new());
        }
        prop_assert_eq!(dump(&replayed), dump(&sut.tree));
        prop_assert_eq!(replayed.digest(), sut.tree.digest());
        prop_assert_eq!(replayed.approximate_data_size(), sut.tree.approximate_data_size());
        let loaded = load(&sut.tree);
        prop_assert_eq!(loaded.quota_paths(), sut.tree.quota_paths());
        prop_assert_eq!(loaded.approximate_data_size(), sut.tree.approximate_data_size());
    }

    /// Pipelined: batches of writes (multis among them) are all prepared before any applies,
    /// as a leader with proposals in flight does. Prep's view of pending usage never lets a
    /// quota pass its hard limits, the stats still equal a recount, and once everything is
    /// applied nothing is left pending.
    #[test]
    fn pipelined_writes_never_pass_a_hard_limit(
        batches in proptest::collection::vec(proptest::collection::vec(pipelined(), 1..6), 1..12),
    ) {
        let mut sut = Sut::new(true);
        sut.create("/q", b"root");
        sut.create("/r", b"");
        sut.create("/r/in", b"1");
        sut.set_quota("/q", "count=-1,bytes=-1=;byteHardLimit=30;countHardLimit=4");
        sut.set_quota("/r/in", "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=3");
        for batch in &batches {
            let txns: Vec<Txn> = batch.iter().map(|r| sut.prepare(r)).collect();
            for txn in &txns {
                sut.apply(txn);
                for (quota, count_max, bytes_max) in [("/q", 4, 30), ("/r/in", 3, i64::MAX)] {
                    let (count, bytes) = sut.tree.usage_of(quota);
                    prop_assert_eq!(sut.stats(quota), StatsTrack::counted(count, bytes).to_text());
                    prop_assert!(count <= count_max && bytes <= bytes_max, "{quota}: {count} nodes, {bytes} bytes");
                }
            }
        }
        prop_assert!(sut.prep.pending().usage().is_empty());
    }

    /// Applying a suffix of the log a second time (recovery from an earlier snapshot point)
    /// ends in the same state as applying it once.
    #[test]
    fn replaying_a_suffix_again_is_harmless(ops in proptest::collection::vec(op(), 1..40), cut in 0usize..100) {
        let mut sut = Sut::new(false);
        sut.create("/q", b"root");
        sut.set_quota("/q", "count=10,bytes=-1");
        for op in &ops {
            sut.run(&request(op));
        }
        let k = cut % (sut.log.len() + 1);
        let mut tree = DataTree::new();
        for txn in &sut.log {
            tree.apply(txn, &mut Vec::new());
        }
        for txn in &sut.log[k..] {
            tree.apply(txn, &mut Vec::new());
        }
        prop_assert_eq!(dump(&tree), dump(&sut.tree));
        prop_assert_eq!(tree.digest(), sut.tree.digest());
    }
}

/// ZooKeeper's quota gauges: limits (hard over soft, −1 for none) and usage summed by the top
/// namespace.
#[test]
fn namespace_quotas_sum_limits_and_usage() {
    let mut sut = Sut::new(false);
    sut.create("/ns", b"");
    sut.create("/ns/a", b"abc");
    sut.create("/ns/b", b"");
    sut.create("/other", b"12");
    sut.set_quota(
        "/ns/a",
        "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=5",
    );
    sut.set_quota("/ns/b", "count=3,bytes=100");
    sut.set_quota("/other", "count=-1,bytes=7");
    let m = sut.tree.namespace_quotas();
    let get = |map: &std::collections::BTreeMap<String, i64>, k: &str| map.get(k).copied();
    assert_eq!(get(&m.count_limit, "ns"), Some(8));
    assert_eq!(get(&m.bytes_limit, "ns"), Some(99));
    assert_eq!(get(&m.count_usage, "ns"), Some(2));
    assert_eq!(get(&m.bytes_usage, "ns"), Some(3));
    assert_eq!(get(&m.count_limit, "other"), Some(-1));
    assert_eq!(get(&m.bytes_limit, "other"), Some(7));
    assert_eq!(get(&m.bytes_usage, "other"), Some(2));
    assert_eq!(m.count_limit.len(), 2);
}
