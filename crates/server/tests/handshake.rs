//! The session handshake edge cases: wrong password, reattaching with the right one, old
//! clients without the readOnly byte, and a client that has seen a newer zxid than the server.

mod support;

use proto::response::Response;
use proto::{ConnectRequest, OpCode};
use support::*;

fn reconnect_request(session_id: i64, passwd: Vec<u8>, last_zxid_seen: i64) -> ConnectRequest {
    ConnectRequest {
        protocol_version: 0,
        last_zxid_seen,
        timeout_ms: SESSION_TIMEOUT_MS,
        session_id,
        passwd,
        read_only: Some(false),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_password_is_expired_and_right_password_keeps_the_session() {
    let server = start(test_config()).await;
    let addr = server.client_address;
    let mut first = Conn::session(addr).await;
    let session = first.session.clone().expect("session");
    assert_eq!(session.passwd.len(), 16);
    let created = first.call(&create("/eph", b"mine", 1)).await;
    assert_eq!(created.header.err, 0, "ephemeral create");
    let zxid = created.header.zxid;
    drop(first);

    // Wrong password: timeOut 0, sessionId 0, 16 zero bytes, then the connection is closed.
    let mut wrong_passwd = session.passwd.clone();
    wrong_passwd[0] ^= 0xff;
    let mut intruder = Conn::open(addr).await;
    let response = intruder
        .handshake(&reconnect_request(session.session_id, wrong_passwd, zxid))
        .await
        .expect("an expired-session response");
    assert_eq!(response.timeout_ms, 0);
    assert_eq!(response.session_id, 0);
    assert_eq!(response.passwd, vec![0u8; 16]);
    assert_eq!(response.protocol_version, 0);
    assert!(
        intruder.expect_closed().await.is_empty(),
        "nothing after it"
    );

    // An unknown session id, any password: the same answer.
    let mut stranger = Conn::open(addr).await;
    let response = stranger
        .handshake(&reconnect_request(0x7777_0000_0000_0001, vec![0; 16], 0))
        .await
        .expect("an expired-session response");
    assert_eq!((response.timeout_ms, response.session_id), (0, 0));
    assert_eq!(response.passwd, vec![0u8; 16]);
    stranger.expect_closed().await;

    // Right password: the same session, its ephemeral still there.
    let mut back = Conn::open(addr).await;
    let response = back
        .handshake(&reconnect_request(
            session.session_id,
            session.passwd.clone(),
            zxid,
        ))
        .await
        .expect("session resumed");
    assert_eq!(response.session_id, session.session_id);
    assert_eq!(response.passwd, session.passwd);
    assert!(response.timeout_ms > 0);
    let read = back.call(&get_data("/eph", false)).await;
    match read.response(OpCode::GetData) {
        Response::GetData(r) => {
            assert_eq!(r.data.as_deref(), Some(b"mine".as_slice()));
            assert_eq!(r.stat.ephemeral_owner, session.session_id);
        }
        other => panic!("unexpected {other:?}"),
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reattaching_a_live_session_closes_its_old_connection() {
    let server = start(test_config()).await;
    let addr = server.client_address;
    let mut old = Conn::session(addr).await;
    let session = old.session.clone().expect("session");
    old.round_trip("/old").await;

    let mut new = Conn::open(addr).await;
    let response = new
        .handshake(&reconnect_request(
            session.session_id,
            session.passwd.clone(),
            0,
        ))
        .await
        .expect("session moved");
    assert_eq!(response.session_id, session.session_id);
    old.expect_closed().await;
    new.round_trip("/new").await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_response_mirrors_the_read_only_byte() {
    let server = start(test_config()).await;
    let addr = server.client_address;

    let mut with = Conn::open(addr).await;
    let (response, len) = with
        .handshake_raw(&new_session_request())
        .await
        .expect("ConnectResponse");
    assert_eq!(len, 37, "4+4+8+(4+16)+1 bytes");
    assert_eq!(response.read_only, Some(false));

    let mut old_client = new_session_request();
    old_client.read_only = None;
    let mut without = Conn::open(addr).await;
    let (response, len) = without
        .handshake_raw(&old_client)
        .await
        .expect("ConnectResponse");
    assert_eq!(len, 36, "no readOnly byte for a client that sent none");
    assert_eq!(response.read_only, None);
    assert_ne!(response.session_id, 0);
    without.round_trip("/old-client").await;

    // The expired answer mirrors it too.
    let mut stale = Conn::open(addr).await;
    let mut request = reconnect_request(0x1234, vec![1; 16], 0);
    request.read_only = None;
    let (response, len) = stale.handshake_raw(&request).await.expect("expired");
    assert_eq!((len, response.session_id), (36, 0));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_ahead_of_the_server_is_closed_without_a_response() {
    let server = start(test_config()).await;
    let addr = server.client_address;
    let mut conn = Conn::session(addr).await;
    let zxid = conn.call(&create("/z", b"", 0)).await.header.zxid;
    assert!(zxid > 0);

    // New session, lastZxidSeen ahead of the server.
    let mut ahead = Conn::open(addr).await;
    let mut request = new_session_request();
    request.last_zxid_seen = zxid + 1000;
    assert!(ahead.handshake(&request).await.is_err());
    assert!(ahead.session.is_none(), "no ConnectResponse");
    assert!(ahead.expect_closed().await.is_empty());

    // Reattaching an existing session with a zxid ahead: refused the same way, session kept.
    let session = conn.session.clone().expect("session");
    let mut ahead = Conn::open(addr).await;
    let request = reconnect_request(session.session_id, session.passwd.clone(), i64::MAX);
    assert!(ahead.handshake(&request).await.is_err());
    assert!(ahead.session.is_none(), "no ConnectResponse");
    ahead.expect_closed().await;

    // The server's own zxid is fine, and the original connection was not disturbed.
    let mut level = Conn::open(addr).await;
    let mut request = new_session_request();
    request.last_zxid_seen = conn.call(&get_data("/z", false)).await.header.zxid;
    level.handshake(&request).await.expect("accepted");
    level.round_trip("/level").await;
    conn.round_trip("/undisturbed").await;
    server.shutdown().await;
}
