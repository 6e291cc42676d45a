//! The same suites against a real Apache ZooKeeper 3.9.3 (started once for this binary, killed
//! by pid when the test ends or panics), and a restart of that server with requests in flight.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use client::{acl, CreateMode, ErrorCode, EventType, SessionState};
use support::zookeeper::ZooKeeper;
use support::*;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn every_operation_watch_kind_reconnect_case_and_recipe_against_zookeeper() {
    let mut zk = ZooKeeper::start();
    let address = addr(zk.address);
    let runtime = runtime();
    runtime.block_on(async {
        ops_suite::run_all(&address).await;
        watch_suite::run_all(&address).await;
        reconnect_suite::cut_with_requests_in_flight(zk.address).await;
        reconnect_suite::many_watches_survive_reconnect(zk.address).await;
        reconnect_suite::silent_server_fails_over(zk.address).await;
        reconnect_suite::expiry_is_reported(zk.address).await;
        recipe_inprocess::run_all(&address).await;
    });
    // The recipes under contention, one process per participant.
    recipe_suite::lock_mutual_exclusion(&address);
    recipe_suite::lock_release_wakes_exactly_one(&address);
    recipe_suite::dead_holder_releases(&address);
    recipe_suite::double_barrier_enters_and_leaves_together(&address);
    recipe_suite::election_fails_over(&address);
    recipe_suite::queue_delivers_each_message_once(&address);
    server_restart_with_requests_in_flight(&runtime, &mut zk);
}

/// ZooKeeper killed (SIGKILL) and restarted on the same dataDir while requests are in flight:
/// the session survives, answers stay in order (successes, then ConnectionLoss), no write is
/// applied twice, and a watch armed before the restart still fires.
fn server_restart_with_requests_in_flight(
    runtime: &tokio::runtime::Runtime,
    server: &mut ZooKeeper,
) {
    let address = addr(server.address);
    let config = config().with_session_timeout(std::time::Duration::from_secs(30));
    let (zk, p, writes) = runtime.block_on(async {
        let zk = client::Client::connect(&address, config)
            .await
            .expect("connects");
        let p = unique("restart");
        mkdir(&zk, &p).await;
        zk.create(
            &format!("{p}/eph"),
            b"",
            &acl::open_unsafe(),
            CreateMode::Ephemeral,
        )
        .await
        .unwrap();
        let writes = (0..300).map(|_| {
            let (zk, p) = (zk.clone(), p.clone());
            async move { zk.set_data(&p, b"x", -1).await }
        });
        let writes = tokio::spawn(ops_suite::futures_join_all(writes.collect::<Vec<_>>()));
        (zk, p, writes)
    });
    let session = zk.session_id();
    let (_, _, watch) = runtime
        .block_on(zk.get_data_w(&format!("{p}/eph")))
        .expect("watch");
    server.restart();
    runtime.block_on(async {
        let results = within("answers", writes).await.unwrap();
        let (before, lost, after) = reconnect_suite::ok_then_connection_loss(&results, 0);
        let ok = before + after;
        assert_eq!(zk.wait_for_state(WAIT).await, SessionState::Connected);
        assert_eq!(zk.session_id(), session, "the session survived the restart");
        let version = zk.exists(&p).await.unwrap().expect("node").version as usize;
        assert!(
            version >= ok && version <= ok + lost,
            "{version} not in [{ok}, {}]",
            ok + lost
        );
        zk.set_data(&format!("{p}/eph"), b"changed", -1)
            .await
            .unwrap();
        let event = within("watch armed before the restart", watch).await;
        assert_eq!(event.event_type, EventType::NodeDataChanged);
        zk.close().await;
        assert_eq!(
            zk.exists("/").await.expect_err("closed").code(),
            ErrorCode::SessionExpired
        );
    });
}
