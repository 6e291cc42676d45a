//! A meerkat lock and Apache Curator's InterProcessMutex on the same path exclude each other,
//! and meerkat's LeaderLatch and Curator's share one election, against meerkat and against
//! Apache ZooKeeper 3.9.3.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::zookeeper::ZooKeeper;
use support::*;

#[test]
fn curator_and_meerkat_locks_exclude_each_other_on_meerkat() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let server = runtime.block_on(start_meerkat());
    curator::locks_exclude_each_other(&addr(server.client_address));
    server.stop();
}

#[test]
fn curator_and_meerkat_locks_exclude_each_other_on_zookeeper() {
    let zk = ZooKeeper::start();
    curator::locks_exclude_each_other(&addr(zk.address));
}

#[test]
fn curator_and_meerkat_leader_latches_share_an_election_on_meerkat() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let server = runtime.block_on(start_meerkat());
    curator::elections_share_leadership(&addr(server.client_address));
    server.stop();
}

#[test]
fn curator_and_meerkat_leader_latches_share_an_election_on_zookeeper() {
    let zk = ZooKeeper::start();
    curator::elections_share_leadership(&addr(zk.address));
}
