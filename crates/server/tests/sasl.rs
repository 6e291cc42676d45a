//! SASL (op 102) over a real socket, with bad input: what a connection gets for a good first
//! token, garbage, an oversized token, a body that is no `GetSASLRequest`, and a server without
//! a JAAS file; other clients keep being served. The full DIGEST-MD5 exchange with real
//! clients is in compat/java (`SaslTest`) and compat/kazoo (`sasl_test.py`).

mod support;

use proto::jute::{Reader, Writer};
use proto::{ErrorCode, OpCode};
use support::*;

const SASL: i32 = OpCode::Sasl as i32;

/// A `GetSASLRequest` body: the token as a jute buffer (None: length −1).
fn sasl_body(token: Option<&[u8]>) -> Vec<u8> {
    let mut w = Writer::new();
    w.write_buffer(token);
    w.as_slice().to_vec()
}

/// The token of a `SetSASLResponse` body.
fn token_of(reply: &Reply) -> Option<Vec<u8>> {
    Reader::new(&reply.body)
        .read_buffer()
        .expect("SetSASLResponse")
        .map(<[u8]>::to_vec)
}

/// Sends a SASL request with `body` and returns the reply.
async fn sasl(conn: &mut Conn, body: &[u8]) -> Reply {
    let xid = conn.xid();
    conn.write_all(&request_frame_raw(xid, SASL, body))
        .await
        .expect("send");
    conn.reply_to(xid).await
}

async fn sasl_server() -> server::RunningServer {
    let mut config = test_config();
    let jaas = config.data_dir.join("jaas.conf");
    std::fs::write(
        &jaas,
        "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  user_bob=\"bobsecret\";\n};\n",
    )
    .expect("write the JAAS file");
    config.sasl.jaas_login_file = Some(jaas);
    start(config).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn challenges_carry_fresh_nonces_and_bad_tokens_fail_the_connection_only() {
    let server = sasl_server().await;
    let addr = server.client_address;
    let mut nonces = Vec::new();
    for _ in 0..2 {
        let mut conn = Conn::session(addr).await;
        let reply = sasl(&mut conn, &sasl_body(Some(b""))).await;
        assert_eq!(reply.header.err, 0);
        assert_eq!(reply.header.zxid, 0, "ZooKeeper answers SASL with zxid 0");
        let challenge = String::from_utf8(token_of(&reply).expect("a challenge")).expect("text");
        assert!(
            challenge.starts_with("realm=\"zk-sasl-md5\",nonce=\"")
                && challenge.ends_with("\",charset=utf-8,algorithm=md5-sess"),
            "{challenge}"
        );
        nonces.push(challenge);
    }
    assert_ne!(nonces[0], nonces[1], "each exchange has its own nonce");

    let mut good = Conn::session(addr).await;
    good.round_trip("/before").await;

    // Garbage after the challenge: AUTHFAILED, then the connection closes.
    let mut bad = Conn::session(addr).await;
    assert_eq!(sasl(&mut bad, &sasl_body(Some(b""))).await.header.err, 0);
    let reply = sasl(&mut bad, &sasl_body(Some(b"\xff\xfe=,\"\\"))).await;
    assert_eq!(reply.header.err, ErrorCode::AuthFailed.code());
    bad.expect_closed().await;

    // A well-formed response that does not match: the same.
    let mut wrong = Conn::session(addr).await;
    assert_eq!(sasl(&mut wrong, &sasl_body(Some(b""))).await.header.err, 0);
    let response = b"username=\"bob\",realm=\"zk-sasl-md5\",nonce=\"x\",cnonce=\"y\",nc=00000001,\
                     qop=auth,digest-uri=\"zookeeper/zk-sasl-md5\",response=00000000000000000000000000000000";
    let reply = sasl(&mut wrong, &sasl_body(Some(response))).await;
    assert_eq!(reply.header.err, ErrorCode::AuthFailed.code());
    wrong.expect_closed().await;

    // A token over the 4096-byte bound, even as the first one.
    let mut huge = Conn::session(addr).await;
    let reply = sasl(&mut huge, &sasl_body(Some(&[b'a'; 5000]))).await;
    assert_eq!(reply.header.err, ErrorCode::AuthFailed.code());
    huge.expect_closed().await;

    // Bodies that are no GetSASLRequest: the connection closes without a reply.
    for body in [sasl_body(None), vec![0, 0, 0, 10, 1], vec![0xff]] {
        let mut malformed = Conn::session(addr).await;
        let xid = malformed.xid();
        malformed
            .write_all(&request_frame_raw(xid, SASL, &body))
            .await
            .expect("send");
        assert!(
            malformed.expect_closed().await.is_empty(),
            "no reply to {body:?}"
        );
    }

    good.round_trip("/after").await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_jaas_file_sasl_is_answered_without_a_token() {
    let server = start(test_config()).await;
    let mut conn = Conn::session(server.client_address).await;
    let reply = sasl(&mut conn, &sasl_body(Some(b""))).await;
    assert_eq!(reply.header.err, 0);
    assert_eq!(token_of(&reply), None);
    conn.round_trip("/still-served").await;
    server.shutdown().await;
}
