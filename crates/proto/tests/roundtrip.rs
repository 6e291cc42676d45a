//! Property tests: every record round-trips, and decoding arbitrary bytes never panics.

use proptest::prelude::*;
use proto::multi::{MultiOp, MultiResult};
use proto::request::Request;
use proto::response::Response;
use proto::txn::{Txn, TxnBody, TxnHeader};
use proto::*;

fn path() -> impl Strategy<Value = String> {
    "(/[a-z0-9]{1,8}){1,4}"
}

fn data() -> impl Strategy<Value = Data> {
    proptest::option::of(proptest::collection::vec(any::<u8>(), 0..64))
}

fn acl() -> impl Strategy<Value = Vec<Acl>> {
    proptest::collection::vec(
        (0..32i32, "[a-z]{1,6}", "[a-z0-9:]{0,12}").prop_map(|(perms, scheme, id)| Acl {
            perms,
            id: Id {
                scheme: scheme.into(),
                id: id.into(),
            },
        }),
        0..4,
    )
}

fn stat() -> impl Strategy<Value = Stat> {
    (any::<[i64; 6]>(), any::<[i32; 5]>()).prop_map(|(l, i)| Stat {
        czxid: l[0],
        mzxid: l[1],
        ctime: l[2],
        mtime: l[3],
        version: i[0],
        cversion: i[1],
        aversion: i[2],
        ephemeral_owner: l[4],
        data_length: i[3],
        num_children: i[4],
        pzxid: l[5],
    })
}

fn create_request() -> impl Strategy<Value = CreateRequest> {
    (path(), data(), acl(), 0..7i32).prop_map(|(path, data, acl, flags)| CreateRequest {
        path,
        data,
        acl,
        flags,
    })
}

fn multi_op() -> impl Strategy<Value = MultiOp> {
    prop_oneof![
        create_request().prop_map(|req| MultiOp::Create {
            op: OpCode::Create,
            req
        }),
        create_request().prop_map(|req| MultiOp::Create {
            op: OpCode::Create2,
            req
        }),
        (path(), any::<i32>())
            .prop_map(|(path, version)| MultiOp::Delete(PathAndVersion { path, version })),
        (path(), any::<i32>())
            .prop_map(|(path, version)| MultiOp::Check(PathAndVersion { path, version })),
        (path(), data(), any::<i32>()).prop_map(|(path, data, version)| MultiOp::SetData(
            SetDataRequest {
                path,
                data,
                version
            }
        )),
    ]
}

fn request() -> impl Strategy<Value = Request> {
    prop_oneof![
        create_request().prop_map(|req| Request::Create {
            op: OpCode::CreateContainer,
            req
        }),
        (create_request(), any::<i64>()).prop_map(|(c, ttl)| Request::CreateTtl(
            CreateTtlRequest {
                path: c.path,
                data: c.data,
                acl: c.acl,
                flags: c.flags,
                ttl
            }
        )),
        (path(), any::<bool>())
            .prop_map(|(path, watch)| Request::GetData(PathAndWatch { path, watch })),
        (path(), any::<bool>())
            .prop_map(|(path, watch)| Request::GetChildren2(PathAndWatch { path, watch })),
        (path(), acl(), any::<i32>())
            .prop_map(|(path, acl, version)| Request::SetAcl(SetAclRequest { path, acl, version })),
        proptest::collection::vec(multi_op(), 0..6).prop_map(Request::Multi),
        (
            any::<i64>(),
            proptest::collection::vec(path(), 0..4),
            proptest::collection::vec(path(), 0..4)
        )
            .prop_map(|(z, a, b)| Request::SetWatches2(SetWatches2 {
                relative_zxid: z,
                data_watches: a.clone(),
                exist_watches: b.clone(),
                child_watches: a,
                persistent_watches: b,
                persistent_recursive_watches: vec![],
            })),
        ("[a-z]{1,8}", data()).prop_map(|(scheme, auth)| Request::Auth(AuthPacket {
            auth_type: 0,
            scheme,
            auth
        })),
        (path(), 0..2i32)
            .prop_map(|(path, mode)| Request::AddWatch(AddWatchRequest { path, mode })),
        Just(Request::WhoAmI),
    ]
}

fn encode_request(request: &Request) -> Vec<u8> {
    let mut w = Writer::new();
    request.encode_body(&mut w);
    w.into_inner()
}

proptest! {
    #[test]
    fn requests_round_trip(request in request()) {
        let bytes = encode_request(&request);
        let decoded = Request::decode(request.op_code().code(), &bytes).expect("decodes");
        prop_assert_eq!(&decoded, &request);
        prop_assert_eq!(encode_request(&decoded), bytes);
    }

    #[test]
    fn stat_is_68_bytes_and_round_trips(stat in stat()) {
        let bytes = stat.to_bytes();
        prop_assert_eq!(bytes.len(), 68);
        prop_assert_eq!(Stat::from_bytes(&bytes).expect("decodes"), stat);
    }

    #[test]
    fn multi_results_round_trip(results in proptest::collection::vec(prop_oneof![
        path().prop_map(MultiResult::Create),
        (path(), stat()).prop_map(|(p, s)| MultiResult::Create2(p, s)),
        Just(MultiResult::Delete),
        stat().prop_map(MultiResult::SetData),
        (-130..1i32).prop_map(MultiResult::Error),
        (data(), stat()).prop_map(|(d, s)| MultiResult::GetData(d, s)),
        proptest::collection::vec(path(), 0..3).prop_map(MultiResult::GetChildren),
    ], 0..6)) {
        let response = Response::Multi(results);
        let mut w = Writer::new();
        response.encode(&mut w);
        prop_assert_eq!(Response::decode(OpCode::Multi, w.as_slice()).expect("decodes"), response);
    }

    #[test]
    fn txns_round_trip(body in prop_oneof![
        create_request().prop_map(|c| TxnBody::Create(proto::txn::CreateTxn {
            path: c.path, data: c.data, acl: c.acl.into(), ephemeral: c.flags & 1 == 1, parent_cversion: c.flags })),
        path().prop_map(|path| TxnBody::Delete(proto::txn::DeleteTxn { path })),
        proptest::collection::vec(path(), 0..4).prop_map(|paths_to_delete|
            TxnBody::CloseSession(proto::txn::CloseSessionTxn { paths_to_delete })),
        proptest::collection::vec(path(), 0..4).prop_map(|paths| TxnBody::Multi(paths.into_iter()
            .map(|path| TxnBody::Delete(proto::txn::DeleteTxn { path })).collect())),
        (create_request(), any::<i64>()).prop_map(|(c, ttl)| TxnBody::CreateTtl(proto::txn::CreateTtlTxn {
            path: c.path, data: c.data, acl: c.acl.into(), parent_cversion: c.flags, ttl })),
        create_request().prop_map(|c| TxnBody::CreateContainer(proto::txn::CreateContainerTxn {
            path: c.path, data: c.data, acl: c.acl.into(), parent_cversion: c.flags })),
        (create_request(), any::<i32>()).prop_map(|(c, version)| TxnBody::Multi(vec![
            TxnBody::SetData(proto::txn::SetDataTxn { path: c.path.clone(), data: c.data, version }),
            TxnBody::SetAcl(proto::txn::SetAclTxn { path: c.path.clone(), acl: c.acl.into(), version }),
            TxnBody::Check(proto::txn::CheckVersionTxn { path: c.path, version }),
            TxnBody::Error(proto::txn::ErrorTxn { err: version }),
        ])),
        any::<i32>().prop_map(|timeout_ms| TxnBody::CreateSession(proto::txn::CreateSessionTxn { timeout_ms })),
    ], header in any::<(i64, i32, i64, i64)>()) {
        let header = TxnHeader { client_id: header.0, cxid: header.1, zxid: header.2, time: header.3, op_type: body.op_type() };
        let txn = Txn { header, body };
        let bytes = txn.to_bytes();
        // What buffers are sized by: exactly what encoding writes.
        prop_assert_eq!(txn.encoded_len(), bytes.len());
        prop_assert_eq!(Txn::from_bytes(&bytes).expect("decodes"), txn);
    }

    #[test]
    fn connect_request_mirrors_read_only_presence(ro in proptest::option::of(any::<bool>()), sid in any::<i64>()) {
        let req = ConnectRequest { protocol_version: 0, last_zxid_seen: 7, timeout_ms: 30000, session_id: sid, passwd: vec![1; 16], read_only: ro };
        prop_assert_eq!(ConnectRequest::from_bytes(&req.to_bytes()).expect("decodes"), req);
    }

    /// Arbitrary bytes under any op code: decoding returns a value or an error, never panics,
    /// and whatever decodes re-encodes to a prefix of the input.
    #[test]
    fn decoding_garbage_never_panics(op in -12..110i32, bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        if let Ok(request) = Request::decode(op, &bytes) {
            let again = encode_request(&request);
            prop_assert_eq!(Request::decode(op, &again).expect("re-decodes"), request);
        }
        if let Some(code) = OpCode::from_i32(op) {
            let _ = Response::decode(code, &bytes);
        }
        let _ = Txn::from_bytes(&bytes);
        let _ = ConnectRequest::from_bytes(&bytes);
        let _ = proto::frame::parse_frame(&bytes, 1024);
    }

    /// A vector length claiming far more elements than bytes is rejected before allocating.
    #[test]
    fn huge_vector_lengths_are_rejected(len in 1_000_000i32..i32::MAX) {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&len.to_be_bytes());
        prop_assert!(GetChildrenResponse::from_bytes(&bytes).is_err());
    }
}
