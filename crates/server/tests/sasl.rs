//! SASL (op 102) over a real socket: a whole DIGEST-MD5 exchange (meerkat's test client,
//! `sasl::digest_md5_client`) with the `sasl` ACL scheme and `enforce.auth` from a zoo.cfg; bad
//! input: what a connection gets for garbage, an oversized token, a body that is no
//! `GetSASLRequest`, and from a server without a JAAS file; other clients keep being served.
//! The exchange with real clients is in compat/java (`SaslTest`) and compat/kazoo
//! (`sasl_test.py`).

mod sasl_support;
mod support;

use proto::jute::{Reader, Writer};
use proto::{ErrorCode, OpCode};
use sasl_support::*;
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
    config.sasl.jaas_login_file = Some(write_jaas(&config.data_dir));
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exchange_gives_the_sasl_identity_its_acl_and_enforce_auth_holds() {
    let dir = fresh_data_dir();
    let jaas = write_jaas(&dir);
    let text = format!(
        "dataDir={}\nclientPort={}\nclientPortAddress=127.0.0.1\npreAllocSize=1024\n\
         jaasLoginFile={}\n\
         authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n\
         enforce.auth.enabled=true\nenforce.auth.schemes=sasl,digest\n",
        dir.join("data").display(),
        ports::free_port().expect("a free port"),
        jaas.display()
    );
    let config = server::config::ServerConfig::parse(&text, "zoo.cfg").expect("valid zoo.cfg");
    assert_eq!(config.sasl.enforce_auth_schemes, ["sasl", "digest"]);
    let server = start(config).await;
    let addr = server.client_address;

    let mut bob = Conn::session(addr).await;
    assert_eq!(sasl_authenticate(&mut bob, "bob", "bobsecret").await, 0);
    let reply = bob
        .call(&create_with_acl("/bob", b"bob's", "sasl", "bob"))
        .await;
    assert_eq!(reply.header.err, 0);
    assert_eq!(bob.call(&get_data("/bob", false)).await.header.err, 0);

    let mut alice = Conn::session(addr).await;
    assert_eq!(
        sasl_authenticate(&mut alice, "alice", "alicesecret").await,
        0
    );
    let reply = alice.call(&get_data("/bob", false)).await;
    assert_eq!(reply.header.err, ErrorCode::NoAuth.code());

    // Unauthenticated: the first request is refused and the connection closed.
    let mut anonymous = Conn::session(addr).await;
    let reply = anonymous.call(&get_data("/", false)).await;
    assert_eq!(
        reply.header.err,
        ErrorCode::SessionClosedRequireSaslAuth.code()
    );
    anonymous.expect_closed().await;

    // A wrong password: SESSIONCLOSEDREQUIRESASLAUTH (SASL is enforced), and closed.
    let mut wrong = Conn::session(addr).await;
    assert_eq!(
        sasl_authenticate(&mut wrong, "bob", "not-bobs").await,
        ErrorCode::SessionClosedRequireSaslAuth.code()
    );
    wrong.expect_closed().await;

    // digest is enforced too: a digest identity is enough.
    let mut digest = Conn::session(addr).await;
    let auth = proto::request::Request::Auth(proto::AuthPacket {
        auth_type: 0,
        scheme: "digest".into(),
        auth: Some(b"carol:pw".to_vec()),
    });
    digest
        .write_all(&request_frame(-4, &auth))
        .await
        .expect("send auth");
    assert_eq!(digest.reply_to(-4).await.header.err, 0);
    assert_eq!(digest.call(&get_data("/", false)).await.header.err, 0);

    bob.round_trip("/bob-again").await;
    server.shutdown().await;
}
