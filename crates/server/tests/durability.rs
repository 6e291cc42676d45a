//! The durable standalone server (paper §2.3, §4.3): what was acknowledged survives a restart —
//! data, sessions and their ephemerals — snapshots are taken as writes go on, a session nobody
//! resumes still expires after the restart, and a data dir serves one server at a time.

mod support;

use proto::request::Request;
use proto::response::Response;
use proto::{ConnectRequest, OpCode, PathAndWatch};
use std::time::{Duration, Instant};
use support::*;

fn exists(path: &str) -> Request {
    Request::Exists(PathAndWatch {
        path: path.into(),
        watch: false,
    })
}

fn data_of(reply: &Reply) -> Vec<u8> {
    match reply.response(OpCode::GetData) {
        Response::GetData(r) => r.data.unwrap_or_default(),
        other => panic!("unexpected getData body {other:?}"),
    }
}

#[tokio::test]
async fn acknowledged_writes_and_sessions_survive_a_restart() {
    let mut config = test_config();
    config.tick_time_ms = 100;
    config.min_session_timeout_ms = 200;
    config.max_session_timeout_ms = 2_000;
    let server = start(config.clone()).await;
    let mut kept = Conn::session(server.client_address).await;
    let mut dropped = Conn::session(server.client_address).await;
    assert_eq!(kept.call(&create("/p", b"x", 0)).await.header.err, 0);
    assert_eq!(kept.call(&set_data("/p", b"y", 0)).await.header.err, 0);
    assert_eq!(
        kept.call(&create("/kept-ephemeral", b"", 1))
            .await
            .header
            .err,
        0
    );
    assert_eq!(
        dropped
            .call(&create("/dropped-ephemeral", b"", 1))
            .await
            .header
            .err,
        0
    );
    let last_zxid = kept.call(&get_data("/p", false)).await.header.zxid;
    let kept_session = kept.session.clone().expect("session");
    server.shutdown().await;
    drop((kept, dropped));

    let server = start(config).await;
    let mut resumed = Conn::open(server.client_address).await;
    let response = resumed
        .handshake(&ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: last_zxid,
            timeout_ms: 2_000,
            session_id: kept_session.session_id,
            passwd: kept_session.passwd.clone(),
            read_only: Some(false),
        })
        .await
        .expect("the session is resumed after the restart");
    assert_eq!(response.session_id, kept_session.session_id);
    let read = resumed.call(&get_data("/p", false)).await;
    assert_eq!(data_of(&read), b"y");
    assert!(
        read.header.zxid >= last_zxid,
        "zxids go on from where they were"
    );
    match resumed
        .call(&exists("/kept-ephemeral"))
        .await
        .response(OpCode::Exists)
    {
        Response::Stat(stat) => assert_eq!(stat.ephemeral_owner, kept_session.session_id),
        other => panic!("unexpected exists body {other:?}"),
    }
    // The session nobody resumed expires after its timeout, taking its ephemeral with it.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let reply = resumed.call(&exists("/dropped-ephemeral")).await;
        if reply.header.err == proto::ErrorCode::NoNode.code() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the un-resumed session never expired"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The resumed one stays (pings keep it alive).
    assert_eq!(resumed.call(&Request::Ping).await.header.err, 0);
    assert_eq!(resumed.call(&exists("/kept-ephemeral")).await.header.err, 0);
    server.shutdown().await;
}

#[tokio::test]
async fn snapshots_are_taken_as_writes_go_on_and_restarts_load_them() {
    let mut config = test_config();
    config.snap_count = 10;
    let server = start(config.clone()).await;
    let mut conn = Conn::session(server.client_address).await;
    for i in 0..100 {
        let path = format!("/n{i}");
        assert_eq!(
            conn.call(&create(&path, path.as_bytes(), 0))
                .await
                .header
                .err,
            0
        );
    }
    let snap_dir = config.data_dir.join("meerkat-1");
    let deadline = Instant::now() + Duration::from_secs(10);
    let snapshots = loop {
        let names: Vec<String> = std::fs::read_dir(&snap_dir)
            .expect("snapshot dir")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("snap-") && n.ends_with(".snap"))
            .collect();
        if names.len() >= 3 || Instant::now() > deadline {
            break names;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        snapshots.len() >= 3,
        "snapCount=10 and 100 writes should give several snapshots: {snapshots:?}"
    );
    server.shutdown().await;
    let server = start(config).await;
    let mut conn = Conn::session(server.client_address).await;
    for i in 0..100 {
        let path = format!("/n{i}");
        assert_eq!(
            data_of(&conn.call(&get_data(&path, false)).await),
            path.as_bytes()
        );
    }
    server.shutdown().await;
}

#[tokio::test]
async fn a_data_dir_serves_one_server_at_a_time() {
    let config = test_config();
    let first = start(config.clone()).await;
    match server::start(config.clone()).await {
        Err(server::StartError::Lock(storage::lock::LockError::Held { .. })) => {}
        Err(other) => panic!("expected a lock error, got {other}"),
        Ok(_) => panic!("a second server started on the same data dir"),
    }
    first.shutdown().await;
    // Released with the first server.
    let second = start(config).await;
    second.shutdown().await;
}

#[tokio::test]
async fn an_ensemble_member_needs_its_myid() {
    let dir = fresh_data_dir();
    let text = format!(
        "tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort=2181\nclientPortAddress=127.0.0.1\nserver.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2889:3889\nserver.3=127.0.0.1:2890:3890\n",
        dir.display()
    );
    let config = server::config::ServerConfig::parse(&text, "zoo.cfg").expect("valid zoo.cfg");
    match server::start(config.clone()).await {
        Err(server::StartError::Membership(
            server::replication::MembershipError::MyIdUnreadable { .. },
        )) => {}
        Err(other) => panic!("expected the missing myid to be named, got {other}"),
        Ok(_) => panic!("an ensemble member started without knowing which one it is"),
    }
    std::fs::write(dir.join("myid"), "7\n").expect("write myid");
    match server::start(config.clone()).await {
        Err(server::StartError::Membership(server::replication::MembershipError::NotListed(7))) => {
        }
        Err(other) => panic!("expected myid 7 to be reported as unlisted, got {other}"),
        Ok(_) => panic!("a server not in the ensemble started as a member"),
    }
    std::fs::write(dir.join("myid"), "one").expect("write myid");
    match server::start(config).await {
        Err(server::StartError::Membership(
            server::replication::MembershipError::MyIdInvalid { .. },
        )) => {}
        Err(other) => panic!("expected an invalid myid to be refused, got {other}"),
        Ok(_) => panic!("a server with a garbled myid started"),
    }
}
