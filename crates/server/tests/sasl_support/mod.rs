//! SASL helpers for the socket-level tests (apart from `support`, which the meerkat crate's
//! tests share): a JAAS file, one SASL request, and a whole DIGEST-MD5 exchange.

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use crate::support::{request_frame_raw, Conn};
use proto::jute::{Reader, Writer};
use proto::request::Request;
use proto::{Acl, CreateRequest, Id, OpCode};

/// A JAAS file with the DIGEST-MD5 users bob (`bobsecret`) and alice (`alicesecret`), in `dir`.
pub fn write_jaas(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("jaas.conf");
    std::fs::write(
        &path,
        "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  \
         user_bob=\"bobsecret\"\n  user_alice=\"alicesecret\";\n};\n",
    )
    .expect("write the JAAS file");
    path
}

/// A SASL request (op 102) with `token`; the reply's error and `SetSASLResponse` token.
pub async fn sasl_step(conn: &mut Conn, token: &[u8]) -> (i32, Option<Vec<u8>>) {
    let mut w = Writer::new();
    w.write_buffer(Some(token));
    let xid = conn.xid();
    conn.write_all(&request_frame_raw(xid, OpCode::Sasl.code(), w.as_slice()))
        .await
        .expect("send a SASL request");
    let reply = conn.reply_to(xid).await;
    let token = Reader::new(&reply.body)
        .read_buffer()
        .expect("SetSASLResponse")
        .map(<[u8]>::to_vec);
    (reply.header.err, token)
}

/// A whole DIGEST-MD5 exchange as ZooKeeper's Java client runs it; the error of the step that
/// failed, or 0.
pub async fn sasl_authenticate(conn: &mut Conn, user: &str, password: &str) -> i32 {
    let (err, challenge) = sasl_step(conn, b"").await;
    if err != 0 {
        return err;
    }
    let response = sasl::digest_md5_client::respond(
        &challenge.expect("a challenge"),
        user,
        password,
        "zookeeper/zk-sasl-md5",
        "test-cnonce",
    )
    .expect("a DIGEST-MD5 challenge");
    let (err, last) = sasl_step(conn, &response.token).await;
    if err == 0 {
        response
            .check_server(&last.expect("rspauth"))
            .expect("the server proves it knows the password");
    }
    err
}

/// A create with one ACL entry `scheme:id` holding every permission.
pub fn create_with_acl(path: &str, data: &[u8], scheme: &str, id: &str) -> Request {
    Request::Create {
        op: OpCode::Create,
        req: CreateRequest {
            path: path.into(),
            data: Some(data.to_vec()),
            acl: vec![Acl {
                perms: proto::watch::perms::ALL,
                id: Id {
                    scheme: scheme.to_string().into(),
                    id: id.to_string().into(),
                },
            }],
            flags: 0,
        },
    }
}
