//! Consistent snapshots: a frozen view keeps the exact state of its zxid however the live tree
//! changes afterwards, and the loader rebuilds from it a tree equal to the original (nodes,
//! ACLs, stats, sessions, ephemeral index and digest), rejecting contents that are not a tree.

mod common;

use common::*;
use proptest::prelude::*;
use proto::{Acl, StatPersisted};
use tree::{DataTree, LoadError, TreeLoader, TreeSnapshot};

type Dump = Vec<(String, Option<Vec<u8>>, Vec<Acl>, StatPersisted)>;

fn dump(tree: &DataTree) -> (Dump, Vec<(i64, i32)>, u64) {
    let mut nodes = Vec::new();
    tree.for_each(|p, n| nodes.push((p.to_string(), n.data_vec(), n.acl.to_vec(), n.stat.clone())));
    let mut sessions: Vec<(i64, i32)> = tree.sessions().iter().map(|(&k, &v)| (k, v)).collect();
    sessions.sort_unstable();
    (nodes, sessions, tree.digest())
}

fn load(snapshot: &TreeSnapshot) -> Result<DataTree, LoadError> {
    let mut loader = TreeLoader::new();
    for &(id, timeout) in snapshot.sessions() {
        loader.add_session(id, timeout);
    }
    let mut result = Ok(());
    snapshot.for_each(|p, n| {
        if result.is_ok() {
            result = loader.add_node(p, n.data, n.acl, n.stat.clone());
        }
    });
    result?;
    loader.finish(snapshot.zxid(), snapshot.digest())
}

fn replay_prefix(log: &[proto::txn::Txn], n: usize) -> DataTree {
    let mut tree = DataTree::new();
    for txn in &log[..n] {
        tree.apply(txn, &mut Vec::new());
    }
    tree
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_frozen_view_loads_back_to_the_state_of_its_zxid(ops in long_ops(20, 80), cut in 0usize..1000) {
        let sut = run_checked(&build_scenario(&ops));
        let log = sut.log;
        let k = cut % (log.len() + 1);
        let mut live = replay_prefix(&log, k);
        let frozen = live.freeze();
        let expected = dump(&live);
        for txn in &log[k..] {
            live.apply(txn, &mut Vec::new());
        }
        prop_assert_eq!(frozen.zxid(), live_zxid_at(&log, k));
        let loaded = load(&frozen).expect("a frozen view is a valid tree");
        prop_assert_eq!(dump(&loaded), expected);
        prop_assert_eq!(loaded.last_processed_zxid(), frozen.zxid());
        prop_assert_eq!(loaded.node_count(), frozen.node_count());
        let mut ephemerals_loaded: Vec<_> = loaded.sessions_with_ephemerals().map(|(s, p)| (*s, p.clone())).collect();
        let reference = replay_prefix(&log, k);
        let mut ephemerals_ref: Vec<_> = reference.sessions_with_ephemerals().map(|(s, p)| (*s, p.clone())).collect();
        ephemerals_loaded.sort();
        ephemerals_ref.sort();
        prop_assert_eq!(ephemerals_loaded, ephemerals_ref);
        prop_assert_eq!(loaded.containers(), reference.containers());
        prop_assert_eq!(loaded.ttls(), reference.ttls());
        prop_assert_eq!(loaded.approximate_data_size(), reference.approximate_data_size());
        // The loaded tree goes on exactly like the original.
        let mut resumed = loaded;
        for txn in &log[k..] {
            resumed.apply(txn, &mut Vec::new());
        }
        prop_assert_eq!(dump(&resumed), dump(&live));
    }
}

fn live_zxid_at(log: &[proto::txn::Txn], k: usize) -> i64 {
    if k == 0 {
        0
    } else {
        log[k - 1].header.zxid
    }
}

#[test]
fn the_loader_rejects_what_is_not_a_tree() {
    let stat = StatPersisted::default();
    let open = tree::acl::open_acl_unsafe();

    let mut orphan = TreeLoader::new();
    orphan
        .add_node("/", None, &open, stat.clone())
        .expect("root");
    assert_eq!(
        orphan.add_node("/a/b", None, &open, stat.clone()),
        Err(LoadError::Orphan("/a/b".into()))
    );

    let mut no_root = TreeLoader::new();
    assert_eq!(
        no_root.add_node("/a", None, &open, stat.clone()),
        Err(LoadError::NoRoot("/a".into()))
    );

    let mut twice = TreeLoader::new();
    twice
        .add_node("/", None, &open, stat.clone())
        .expect("root");
    twice
        .add_node("/a", Some(b"x"), &open, stat.clone())
        .expect("a");
    assert_eq!(
        twice.add_node("/a", None, &open, stat.clone()),
        Err(LoadError::Duplicate("/a".into()))
    );

    let mut unordered = TreeLoader::new();
    unordered
        .add_node("/", None, &open, stat.clone())
        .expect("root");
    unordered
        .add_node("/b", None, &open, stat.clone())
        .expect("b");
    assert_eq!(
        unordered.add_node("/a", None, &open, stat.clone()),
        Err(LoadError::OutOfOrder("/a".into()))
    );

    let tree = DataTree::new();
    let frozen = tree.freeze();
    let mut wrong_digest = TreeLoader::new();
    frozen.for_each(|p, n| {
        wrong_digest
            .add_node(p, n.data, n.acl, n.stat.clone())
            .expect("valid");
    });
    assert!(matches!(
        wrong_digest.finish(0, frozen.digest() ^ 1),
        Err(LoadError::DigestMismatch { .. })
    ));
    assert!(matches!(
        TreeLoader::new().finish(0, 0),
        Err(LoadError::Empty)
    ));
}
