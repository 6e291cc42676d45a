//! A large ZooKeeper data dir for the import measurement in docs/perf.md, written through the
//! export path (ZooKeeper then rewrites the snapshot itself when started on it, see the doc).
//! Ignored by default; run with
//! `ZKDATA_SYNTHETIC_DIR=DIR ZKDATA_SYNTHETIC_ZNODES=1000000 cargo test --release -p zkdata
//! --test synthetic_data_dir -- --ignored`.
//! The small case runs always: the synthetic dir imports back to the same tree.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proto::StatPersisted;
use tree::digest::NodeDigest;
use tree::{DataTree, TreeLoader};

/// `/bench/gNNN/nNNN...` with `per_group` children per group and 100 bytes of data each.
fn tree_of(znodes: usize, per_group: usize) -> DataTree {
    let open = tree::acl::open_acl_unsafe();
    let mut loader = TreeLoader::new();
    let acl = loader.intern_acl(&open);
    let mut digest = NodeDigest::default();
    let mut zxid = 0i64;
    let mut add =
        |loader: &mut TreeLoader, path: &str, data: Option<&[u8]>, stat: StatPersisted| {
            digest.add(path, data, &stat);
            loader
                .add_node_shared(path, data, acl.clone(), stat)
                .unwrap();
        };
    let groups = znodes.div_ceil(per_group);
    let system = StatPersisted::default();
    let stat = |czxid: i64, cversion: i32, pzxid: i64| StatPersisted {
        czxid,
        mzxid: czxid,
        ctime: 1_700_000_000_000 + czxid,
        mtime: 1_700_000_000_000 + czxid,
        version: 0,
        cversion,
        aversion: 0,
        ephemeral_owner: 0,
        pzxid,
    };
    let total_zxid = (znodes + groups + 1) as i64;
    add(&mut loader, "/", Some(b""), stat(0, 2, 1));
    add(
        &mut loader,
        "/bench",
        Some(b""),
        stat(1, groups as i32, total_zxid),
    );
    zxid += 1;
    let data = [b'x'; 100];
    let mut left = znodes;
    for g in 0..groups {
        zxid += 1;
        let group_zxid = zxid;
        let n = left.min(per_group);
        left -= n;
        let group = format!("/bench/g{g:06}");
        add(
            &mut loader,
            &group,
            Some(b""),
            stat(group_zxid, n as i32, group_zxid + n as i64),
        );
        for i in 0..n {
            zxid += 1;
            add(
                &mut loader,
                &format!("{group}/n{i:06}"),
                Some(&data),
                stat(zxid, 0, zxid),
            );
        }
    }
    add(&mut loader, "/zookeeper", Some(b""), system.clone());
    let config = StatPersisted {
        aversion: -1,
        ..StatPersisted::default()
    };
    add(&mut loader, "/zookeeper/config", Some(b""), config);
    add(&mut loader, "/zookeeper/quota", Some(b""), system);
    loader.finish(zxid, digest.value()).unwrap()
}

#[test]
fn a_synthetic_data_dir_imports_back_to_the_same_tree() {
    let tree = tree_of(2_000, 300);
    let dir = tempfile::tempdir().unwrap();
    zkdata::export::export(&tree, dir.path(), &mut zkdata::progress::quiet).unwrap();
    let source = zkdata::locate(dir.path(), None).unwrap();
    let mut restored = zkdata::restore(&source, &mut zkdata::progress::quiet).unwrap();
    assert_eq!(
        restored.snapshot_digest_checked,
        Some(tree.last_processed_zxid())
    );
    let back = zkdata::to_meerkat::to_meerkat(&mut restored, &mut zkdata::progress::quiet).unwrap();
    assert_eq!(back.digest(), tree.digest());
    assert_eq!(back.node_count(), tree.node_count());
}

#[test]
#[ignore = "writes a large data dir; see the module docs"]
fn write_a_large_synthetic_data_dir() {
    let dir = std::env::var("ZKDATA_SYNTHETIC_DIR").expect("ZKDATA_SYNTHETIC_DIR");
    let znodes: usize = std::env::var("ZKDATA_SYNTHETIC_ZNODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let tree = tree_of(znodes, 1_000);
    let exported = zkdata::export::export(
        &tree,
        std::path::Path::new(&dir),
        &mut zkdata::progress::quiet,
    )
    .unwrap();
    println!("{exported:?}");
}
