//! `maxClientCnxns`: connections from one address beyond the limit are closed at once, without
//! a ConnectResponse; a slot freed by a closing connection is reused.

mod support;

use std::time::Duration;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_max_client_cnxns_are_closed_without_a_response() {
    let mut config = test_config();
    config.max_client_cnxns = 3;
    let server = start(config).await;
    let addr = server.client_address;

    let mut first = Conn::session(addr).await;
    let mut second = Conn::session(addr).await;
    let mut third = Conn::session(addr).await;

    // The 4th: the TCP connect succeeds (the server accepts, then closes), no ConnectResponse.
    let mut fourth = Conn::open(addr).await;
    let _ = fourth.handshake(&new_session_request()).await;
    assert!(
        fourth.session.is_none(),
        "4th connection got a ConnectResponse"
    );
    assert!(fourth.expect_closed().await.is_empty());

    // A four-letter word counts as a connection too (ZooKeeper checks at accept).
    let mut word = Conn::open(addr).await;
    let _ = word.write_all(b"srvr").await;
    assert!(word.expect_closed().await.is_empty(), "4lw over the limit");

    // The three admitted connections work.
    first.round_trip("/one").await;
    second.round_trip("/two").await;
    third.round_trip("/three").await;

    // Close one; within a bounded number of tries a new connection is admitted.
    drop(second);
    let mut admitted = None;
    for _ in 0..50 {
        let mut conn = Conn::open(addr).await;
        if conn.handshake(&new_session_request()).await.is_ok() {
            admitted = Some(conn);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut admitted = admitted.expect("a slot freed by a closed connection is reused");
    admitted.round_trip("/four").await;

    // And the limit still holds with the new one counted.
    let mut over = Conn::open(addr).await;
    let _ = over.handshake(&new_session_request()).await;
    assert!(over.session.is_none(), "over the limit again");
    over.expect_closed().await;

    first.round_trip("/five").await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_max_client_cnxns_means_unlimited() {
    let mut config = test_config();
    config.max_client_cnxns = 0;
    let server = start(config).await;
    let mut conns = Vec::new();
    for _ in 0..80 {
        conns.push(Conn::session(server.client_address).await);
    }
    for (i, conn) in conns.iter_mut().enumerate().step_by(10) {
        conn.round_trip(&format!("/n{i}")).await;
    }
    server.shutdown().await;
}
