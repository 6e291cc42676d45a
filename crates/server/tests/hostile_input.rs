//! Bad and hostile input over a real socket: oversized and negative frame lengths, malformed
//! records, unknown op codes, invalid paths. Each case checks what the offending connection gets
//! and that other clients keep being served.

mod support;

use proto::request::Request;
use proto::response::Response;
use proto::{ErrorCode, OpCode, PathAndVersion, PathAndWatch};
use support::*;

/// Builds the raw bytes of a length prefix.
fn length(len: i32) -> [u8; 4] {
    len.to_be_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frame_over_jute_maxbuffer_closes_only_that_connection() {
    let mut config = test_config();
    config.jute_max_buffer = 1024;
    let server = start(config).await;
    let addr = server.client_address;

    let mut good = Conn::session(addr).await;
    good.round_trip("/before").await;

    // A frame at exactly the limit is accepted (ZooKeeper rejects only len > maxBuffer).
    let header_and_envelope = request_frame(1, &create("/big", &[], 0)).len() - 4;
    let data = vec![7u8; 1024 - header_and_envelope];
    let exact = create("/big", &data, 0);
    let xid = good.xid();
    let bytes = request_frame(xid, &exact);
    assert_eq!(bytes.len(), 4 + 1024);
    good.write_all(&bytes).await.expect("send");
    let reply = good.reply_to(xid).await;
    assert_eq!(
        reply.header.err, 0,
        "a 1024-byte frame with jute.maxbuffer=1024"
    );

    // Before the handshake: a length of 2000 > 1024.
    let mut bad = Conn::open(addr).await;
    bad.write_all(&length(2000)).await.expect("send length");
    assert!(
        bad.expect_closed().await.is_empty(),
        "no answer to a Len error"
    );

    // After the handshake: 1025 bytes announced and sent.
    let mut bad = Conn::session(addr).await;
    let mut bytes = length(1025).to_vec();
    bytes.extend_from_slice(&[0u8; 1025]);
    let _ = bad.write_all(&bytes).await;
    assert!(
        bad.expect_closed().await.is_empty(),
        "no reply to an oversized frame"
    );

    // Negative lengths, before and after the handshake.
    for len in [-1, i32::MIN] {
        let mut bad = Conn::open(addr).await;
        bad.write_all(&length(len)).await.expect("send length");
        assert!(bad.expect_closed().await.is_empty(), "length {len}");
        let mut bad = Conn::session(addr).await;
        bad.write_all(&length(len)).await.expect("send length");
        assert!(bad.expect_closed().await.is_empty(), "length {len}");
    }

    // The well-behaved client connected before is still served, and so is a new one.
    good.round_trip("/after").await;
    let mut late = Conn::session(addr).await;
    late.round_trip("/late").await;
    server.shutdown().await;
}

/// meerkat closes a connection whose record does not decode. Apache ZooKeeper 3.9.3 does so for
/// a bad connect request or request header, but answers a request *body* that does not decode
/// with MarshallingError (−5) and keeps the connection (`PrepRequestProcessor.pRequestHelper`,
/// `FinalRequestProcessor.processRequest`: `catch (Exception e)`). Closing is the stricter choice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_records_close_the_connection_and_the_server_keeps_serving() {
    let server = start(test_config()).await;
    let addr = server.client_address;
    let mut good = Conn::session(addr).await;
    good.round_trip("/before").await;

    // A connect request cut after the session id (no password).
    let mut full = Vec::new();
    full.extend_from_slice(&0i32.to_be_bytes()); // protocolVersion
    full.extend_from_slice(&0i64.to_be_bytes()); // lastZxidSeen
    full.extend_from_slice(&30_000i32.to_be_bytes()); // timeOut
    full.extend_from_slice(&0i64.to_be_bytes()); // sessionId
    let mut bad = Conn::open(addr).await;
    bad.write_all(&frame(&full[..20])).await.expect("send");
    assert!(bad.expect_closed().await.is_empty(), "truncated connect");

    // A connect request whose password claims more bytes than the frame holds.
    let mut lying = full.clone();
    lying.extend_from_slice(&1000i32.to_be_bytes());
    lying.extend_from_slice(&[0u8; 16]);
    let mut bad = Conn::open(addr).await;
    bad.write_all(&frame(&lying)).await.expect("send");
    assert!(bad.expect_closed().await.is_empty(), "password overrun");

    // After the handshake: a frame too short for a request header.
    let mut bad = Conn::session(addr).await;
    bad.write_all(&frame(&[0, 0, 1])).await.expect("send");
    bad.expect_closed().await;

    // After the handshake: create whose path length runs past the frame.
    let mut body = Vec::new();
    body.extend_from_slice(&i32::MAX.to_be_bytes());
    body.extend_from_slice(b"/garbage");
    let mut bad = Conn::session(addr).await;
    bad.write_all(&request_frame_raw(1, OpCode::Create.code(), &body))
        .await
        .expect("send");
    let leftover = bad.expect_closed().await;
    assert!(
        leftover.is_empty(),
        "no reply before the close: {leftover:?}"
    );

    // After the handshake: create with a valid path and then nothing (no data, acl, flags).
    let mut body = Vec::new();
    body.extend_from_slice(&2i32.to_be_bytes());
    body.extend_from_slice(b"/x");
    let mut bad = Conn::session(addr).await;
    bad.write_all(&request_frame_raw(1, OpCode::Create.code(), &body))
        .await
        .expect("send");
    bad.expect_closed().await;

    // Nothing of the garbage was created, and everyone else is still served.
    let exists = good
        .call(&Request::Exists(PathAndWatch {
            path: "/x".into(),
            watch: false,
        }))
        .await;
    assert_eq!(exists.header.err, ErrorCode::NoNode.code());
    good.round_trip("/after").await;
    let mut late = Conn::session(addr).await;
    late.round_trip("/late").await;
    server.shutdown().await;
}

/// meerkat answers Unimplemented and keeps serving the connection. Apache ZooKeeper 3.9.3
/// (`ZooKeeperServer.submitRequestNow` → `UnimplementedRequestProcessor`) answers Unimplemented
/// with zxid −1 and then closes the connection (`sendCloseSession`); the session survives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_op_code_is_unimplemented_and_the_connection_stays_usable() {
    let server = start(test_config()).await;
    let mut conn = Conn::session(server.client_address).await;
    for op in [999, 10, 23, 99, 108, i32::MAX, -100] {
        let xid = conn.xid();
        conn.write_all(&request_frame_raw(xid, op, b"\0\0\0\x02/x"))
            .await
            .expect("send");
        let reply = conn.reply_to(xid).await;
        assert_eq!(reply.header.err, ErrorCode::Unimplemented.code(), "op {op}");
        assert!(reply.body.is_empty(), "error replies have no body");
        // The next request on the same connection is answered.
        conn.round_trip(&format!("/after{}", op.unsigned_abs()))
            .await;
    }
    server.shutdown().await;
}

/// Paths no ZooKeeper client would send (the Java client validates them first), sent raw.
///
/// Expected codes follow Apache ZooKeeper 3.9.3, `PrepRequestProcessor`:
/// * create: `validatePathForCreate` refuses only a path without `/` or with a NUL
///   (BadArguments); then the parent (everything before the last `/`, looked up verbatim) must
///   exist (NoNode); only then is the full path (with any sequence suffix) checked with
///   `PathUtils.validatePath` (BadArguments). So `a/b` and `/a//b` give NoNode, `/a/` and `/a/.`
///   BadArguments, and a sequential create of `/a/` is valid (`/a/0000000000`).
/// * setData: `validatePath` first, so every invalid path is BadArguments.
/// * delete: `getParentPathAndValidate` (no slash, NUL: BadArguments), then parent and node are
///   looked up verbatim (NoNode).
/// * getData, exists (`FinalRequestProcessor`): a verbatim lookup in the node map, so NoNode (exists
///   first refuses a NUL with BadArguments). The node map holds the root under both `/` and `""`.
///
/// "Verbatim" matters: ZooKeeper's `DataTree` is a map from the exact path string, so `a`, `/a/`
/// and `//a` never name the znode `/a`.
async fn invalid_path_server() -> (server::RunningServer, Conn) {
    let server = start(test_config()).await;
    let mut conn = Conn::session(server.client_address).await;
    let created = conn.call(&create("/a", b"", 0)).await;
    assert_eq!(created.header.err, 0);
    (server, conn)
}

/// Checks every case and fails once, listing all mismatches.
async fn expect_codes(conn: &mut Conn, what: &str, cases: &[(Request, &str, i32)]) {
    let mut wrong = Vec::new();
    for (request, path, expected) in cases {
        let reply = conn.call(request).await;
        if reply.header.err != *expected {
            wrong.push(format!(
                "{what} {path:?}: expected {expected}, got {}",
                reply.header.err
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_paths_in_create_get_zookeeper_error_codes() {
    let (server, mut conn) = invalid_path_server().await;
    let bad_args = ErrorCode::BadArguments.code();
    let no_node = ErrorCode::NoNode.code();
    let cases: Vec<(Request, &str, i32)> = [
        ("a", bad_args),
        ("", bad_args),
        ("/a/", bad_args),
        ("/a/.", bad_args),
        ("/a/..", bad_args),
        ("/a/./b", no_node),
        ("/a/b\0c", bad_args),
        ("/a/b\u{1}", bad_args),
        ("/", ErrorCode::NodeExists.code()),
        // The parent is looked up verbatim: "a" and "/a/" are not /a.
        ("a/b", no_node),
        ("/a//b", no_node),
    ]
    .into_iter()
    .map(|(path, code)| (create(path, b"x", 0), path, code))
    .collect();
    expect_codes(&mut conn, "create", &cases).await;

    // Sequential: the suffix makes `/a/` a valid name.
    let reply = conn.call(&create("/a/", b"x", 2)).await;
    assert_eq!(reply.header.err, 0, "sequential create of /a/");
    assert_eq!(
        reply.response(OpCode::Create),
        Response::Create("/a/0000000000".into())
    );
    // Only the sequential node was created under /a.
    let children = conn
        .call(&Request::GetChildren(PathAndWatch {
            path: "/a".into(),
            watch: false,
        }))
        .await;
    match children.response(OpCode::GetChildren) {
        Response::GetChildren(c) => assert_eq!(c.children, vec!["0000000000".to_string()]),
        other => panic!("unexpected {other:?}"),
    }
    conn.round_trip("/still-fine").await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_paths_in_set_data_are_bad_arguments() {
    let (server, mut conn) = invalid_path_server().await;
    let invalid = [
        "a/b", "a", "", "/a/", "/a//b", "//a", "/a/.", "/a/..", "/a/b\0c", "/a/\u{1}",
    ];
    let cases: Vec<(Request, &str, i32)> = invalid
        .into_iter()
        .map(|path| {
            (
                set_data(path, b"y", -1),
                path,
                ErrorCode::BadArguments.code(),
            )
        })
        .collect();
    expect_codes(&mut conn, "setData", &cases).await;
    let a = conn.call(&get_data("/a", false)).await;
    match a.response(OpCode::GetData) {
        Response::GetData(r) => assert_eq!(r.stat.version, 0, "/a unchanged"),
        other => panic!("unexpected {other:?}"),
    }
    conn.round_trip("/still-fine").await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_paths_in_reads_are_no_node() {
    let (server, mut conn) = invalid_path_server().await;
    let no_node = ErrorCode::NoNode.code();
    let mut cases: Vec<(Request, &str, i32)> = Vec::new();
    // ZooKeeper's node map also holds the root under "" (that is why it counts the root twice),
    // so "" is the one non-canonical path that names a znode.
    let paths = [
        ("", 0),
        ("a", no_node),
        ("a/b", no_node),
        ("/a/", no_node),
        ("//a", no_node),
        ("/a//", no_node),
        ("/a/.", no_node),
        ("/a/..", no_node),
    ];
    for (path, expected) in paths {
        cases.push((get_data(path, false), path, expected));
        let exists = Request::Exists(PathAndWatch {
            path: path.into(),
            watch: false,
        });
        cases.push((exists, path, expected));
    }
    let exists_nul = Request::Exists(PathAndWatch {
        path: "/a\0".into(),
        watch: false,
    });
    cases.push((exists_nul, "/a\\0", ErrorCode::BadArguments.code()));
    expect_codes(&mut conn, "read", &cases).await;
    conn.round_trip("/still-fine").await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_of_a_non_canonical_path_deletes_nothing() {
    let (server, mut conn) = invalid_path_server().await;
    let no_node = ErrorCode::NoNode.code();
    let bad_args = ErrorCode::BadArguments.code();
    let cases: Vec<(Request, &str, i32)> = [
        ("a", bad_args),
        ("/a/", no_node),
        ("//a", no_node),
        ("/a/.", no_node),
    ]
    .into_iter()
    .map(|(path, code)| {
        let delete = Request::Delete(PathAndVersion {
            path: path.into(),
            version: -1,
        });
        (delete, path, code)
    })
    .collect();
    expect_codes(&mut conn, "delete", &cases).await;
    let a = conn.call(&get_data("/a", false)).await;
    assert_eq!(a.header.err, 0, "/a still exists");
    conn.round_trip("/still-fine").await;
    server.shutdown().await;
}
