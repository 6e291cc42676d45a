//! Reconnection against meerkat: meerkat is in memory for now, so connections are broken or
//! silenced by a fault proxy instead of restarting the server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_cut_with_requests_in_flight() {
    let server = start_meerkat().await;
    reconnect_suite::cut_with_requests_in_flight(server.client_address).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_beyond_one_set_watches_batch_survive() {
    let server = start_meerkat().await;
    reconnect_suite::many_watches_survive_reconnect(server.client_address).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_server_fails_over_to_the_next() {
    let server = start_meerkat().await;
    reconnect_suite::silent_server_fails_over(server.client_address).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_session_is_kept_alive_by_pings() {
    let server = start_meerkat().await;
    reconnect_suite::idle_session_is_kept_alive_by_pings(server.client_address).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_is_reported() {
    let server = start_meerkat().await;
    reconnect_suite::expiry_is_reported(server.client_address).await;
}

/// meerkat (now durable) stopped and started again on the same data directory while requests
/// are in flight: the session survives, answers stay in order, nothing is applied twice, and
/// a watch armed before the restart still fires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_restart_with_requests_in_flight() {
    use client::{acl, CreateMode, EventType, SessionState};
    let mut server = start_meerkat().await;
    let config = config().with_session_timeout(std::time::Duration::from_secs(30));
    let zk = client::Client::connect(&addr(server.client_address), config)
        .await
        .unwrap();
    let session = zk.session_id();
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
    let (_, _, watch) = zk.get_data_w(&format!("{p}/eph")).await.unwrap();
    let writes = (0..300).map(|_| {
        let (zk, p) = (zk.clone(), p.clone());
        async move { zk.set_data(&p, b"x", -1).await }
    });
    let writes = tokio::spawn(ops_suite::futures_join_all(writes.collect::<Vec<_>>()));
    server.restart().await;
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
    assert!(zk.exists(&format!("{p}/eph")).await.unwrap().is_some());
    zk.set_data(&format!("{p}/eph"), b"changed", -1)
        .await
        .unwrap();
    let event = within("watch armed before the restart", watch).await;
    assert_eq!(event.event_type, EventType::NodeDataChanged);
    zk.close().await;
}
