//! Every operation of DESIGN.md §1, run the same way against meerkat and Apache ZooKeeper 3.9.3.
//! Each scenario works under its own top-level path.

use super::*;
use client::op::{Op, OpResult};
use client::{ErrorCode, SessionState};

pub async fn run_all(address: &str) {
    create_kinds(address).await;
    read_write_versions(address).await;
    delete_rules(address).await;
    children_and_counts(address).await;
    acls_and_digest_auth(address).await;
    multi_and_multi_read(address).await;
    chroot_paths(address).await;
    pipelined_requests_answer_in_order(address).await;
    sync_and_who_am_i(address).await;
    invalid_paths_are_refused_locally(address).await;
    auth_failure_ends_the_session(address).await;
    close_removes_ephemerals(address).await;
    dropping_the_last_handle_closes_the_session(address).await;
}

pub async fn dropping_the_last_handle_closes_the_session(address: &str) {
    let observer = connect(address).await;
    // 40 s: longer than WAIT, so only an explicit close can remove the ephemeral in time.
    let long = config().with_session_timeout(Duration::from_secs(40));
    let zk = client::Client::connect(address, long).await.unwrap();
    let p = unique("drop");
    zk.create(&p, b"", &acl::open_unsafe(), CreateMode::Ephemeral)
        .await
        .unwrap();
    let (_, gone) = observer.exists_w(&p).await.unwrap();
    let clone = zk.clone();
    drop(zk);
    assert!(
        clone.exists(&p).await.unwrap().is_some(),
        "a clone keeps the session"
    );
    drop(clone);
    // No close() call: the driver closes the session itself when the last handle goes.
    let event = within("ephemeral deleted when the last handle went", gone).await;
    assert_eq!(event.event_type, client::EventType::NodeDeleted);
    observer.close().await;
}

fn code<T: std::fmt::Debug>(r: client::Result<T>) -> ErrorCode {
    r.expect_err("an error").code()
}

pub async fn create_kinds(address: &str) {
    let zk = connect(address).await;
    let root = unique("create");
    let (path, stat) = zk
        .create(&root, b"root", &acl::open_unsafe(), CreateMode::Persistent)
        .await
        .unwrap();
    assert_eq!(path, root);
    assert_eq!(
        (stat.version, stat.data_length, stat.ephemeral_owner),
        (0, 4, 0)
    );

    let (eph, stat) = zk
        .create(
            &format!("{root}/e"),
            b"",
            &acl::open_unsafe(),
            CreateMode::Ephemeral,
        )
        .await
        .unwrap();
    assert_eq!(stat.ephemeral_owner, zk.session_id());
    assert_eq!(
        code(
            zk.create(
                &format!("{eph}/child"),
                b"",
                &acl::open_unsafe(),
                CreateMode::Persistent
            )
            .await
        ),
        ErrorCode::NoChildrenForEphemerals
    );

    let (seq1, _) = zk
        .create(
            &format!("{root}/s-"),
            b"",
            &acl::open_unsafe(),
            CreateMode::PersistentSequential,
        )
        .await
        .unwrap();
    let (seq2, _) = zk
        .create(
            &format!("{root}/s-"),
            b"",
            &acl::open_unsafe(),
            CreateMode::EphemeralSequential,
        )
        .await
        .unwrap();
    let suffix = |p: &str| p.rsplit('-').next().unwrap().to_string();
    assert_eq!(suffix(&seq1).len(), 10);
    assert!(suffix(&seq1) < suffix(&seq2), "{seq1} before {seq2}");
    // The counter is the parent's cversion: two creates before (e, s-1).
    assert_eq!(suffix(&seq1), "0000000001");

    let (_, stat) = zk
        .create(
            &format!("{root}/c"),
            b"",
            &acl::open_unsafe(),
            CreateMode::Container,
        )
        .await
        .unwrap();
    assert_eq!(stat.ephemeral_owner, 0, "containers report owner 0");
    let (_, stat) = zk
        .create(
            &format!("{root}/ttl"),
            b"x",
            &acl::open_unsafe(),
            CreateMode::PersistentWithTtl(60_000),
        )
        .await
        .unwrap();
    assert_eq!(stat.ephemeral_owner, 0, "TTL znodes report owner 0");
    let (ttl_seq, _) = zk
        .create(
            &format!("{root}/ttl-"),
            b"x",
            &acl::open_unsafe(),
            CreateMode::PersistentSequentialWithTtl(60_000),
        )
        .await
        .unwrap();
    assert!(ttl_seq.starts_with(&format!("{root}/ttl-")));
    assert_eq!(
        code(
            zk.create(&root, b"", &acl::open_unsafe(), CreateMode::Persistent)
                .await
        ),
        ErrorCode::NodeExists
    );
    assert_eq!(
        code(
            zk.create(
                &format!("{root}/no/parent"),
                b"",
                &acl::open_unsafe(),
                CreateMode::Persistent
            )
            .await
        ),
        ErrorCode::NoNode
    );
    // Java null data is stored and read back as null.
    zk.create_nullable(
        &format!("{root}/null"),
        None,
        &acl::open_unsafe(),
        CreateMode::Persistent,
    )
    .await
    .unwrap();
    let (data, stat) = zk.get_data_raw(&format!("{root}/null")).await.unwrap();
    assert_eq!((data, stat.data_length), (None, 0));
    zk.close().await;
}

pub async fn read_write_versions(address: &str) {
    let zk = connect(address).await;
    let p = unique("rw");
    zk.create(&p, b"one", &acl::open_unsafe(), CreateMode::Persistent)
        .await
        .unwrap();
    let (data, stat) = zk.get_data(&p).await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (b"one".as_slice(), 0));
    let stat = zk.set_data(&p, b"two", 0).await.unwrap();
    assert_eq!(stat.version, 1);
    assert_eq!(
        code(zk.set_data(&p, b"three", 0).await),
        ErrorCode::BadVersion
    );
    let stat = zk.set_data(&p, b"three", -1).await.unwrap();
    assert_eq!(stat.version, 2);
    assert_eq!(zk.exists(&p).await.unwrap().map(|s| s.version), Some(2));
    assert_eq!(zk.exists(&format!("{p}-missing")).await.unwrap(), None);
    let err = zk
        .get_data(&format!("{p}-missing"))
        .await
        .expect_err("missing");
    assert_eq!(err.code(), ErrorCode::NoNode);
    assert_eq!(err.path(), format!("{p}-missing"));
    assert_eq!(
        err.to_string(),
        format!("KeeperErrorCode = NoNode for {p}-missing")
    );
    assert_eq!(
        code(zk.set_data(&format!("{p}-missing"), b"", -1).await),
        ErrorCode::NoNode
    );
    zk.close().await;
}

pub async fn delete_rules(address: &str) {
    let zk = connect(address).await;
    let p = unique("del");
    mkdir(&zk, &p).await;
    mkdir(&zk, &format!("{p}/kid")).await;
    assert_eq!(code(zk.delete(&p, -1).await), ErrorCode::NotEmpty);
    assert_eq!(
        code(zk.delete(&format!("{p}/kid"), 5).await),
        ErrorCode::BadVersion
    );
    zk.delete(&format!("{p}/kid"), 0).await.unwrap();
    zk.delete(&p, -1).await.unwrap();
    assert_eq!(code(zk.delete(&p, -1).await), ErrorCode::NoNode);
    zk.close().await;
}

pub async fn children_and_counts(address: &str) {
    let zk = connect(address).await;
    let p = unique("kids");
    mkdir(&zk, &p).await;
    for name in ["a", "b", "c"] {
        mkdir(&zk, &format!("{p}/{name}")).await;
    }
    mkdir(&zk, &format!("{p}/a/x")).await;
    zk.create(
        &format!("{p}/b/e"),
        b"",
        &acl::open_unsafe(),
        CreateMode::Ephemeral,
    )
    .await
    .unwrap();
    let (mut children, stat) = zk.get_children(&p).await.unwrap();
    children.sort();
    assert_eq!(children, vec!["a", "b", "c"]);
    assert_eq!(stat.num_children, 3);
    assert_eq!(stat.cversion, 3);
    assert_eq!(zk.get_all_children_number(&p).await.unwrap(), 5);
    assert_eq!(
        zk.get_ephemerals(&p).await.unwrap(),
        vec![format!("{p}/b/e")]
    );
    assert_eq!(
        zk.get_ephemerals("/").await.unwrap(),
        vec![format!("{p}/b/e")]
    );
    assert_eq!(
        code(zk.get_children(&format!("{p}/none")).await),
        ErrorCode::NoNode
    );
    zk.close().await;
}

pub async fn acls_and_digest_auth(address: &str) {
    let owner = connect(address).await;
    owner.add_auth("digest", b"alice:secret").await.unwrap();
    let p = unique("acl");
    owner
        .create(&p, b"private", &acl::creator_all(), CreateMode::Persistent)
        .await
        .unwrap();
    let (acl_list, stat) = owner.get_acl(&p).await.unwrap();
    assert_eq!(
        acl_list,
        vec![acl::acl(31, "digest", &acl::digest_id("alice:secret"))]
    );
    assert_eq!(stat.aversion, 0);

    let stranger = connect(address).await;
    assert_eq!(code(stranger.get_data(&p).await), ErrorCode::NoAuth);
    assert_eq!(
        stranger
            .get_data(&p)
            .await
            .expect_err("no auth")
            .to_string(),
        format!("KeeperErrorCode = NoAuth for {p}")
    );
    stranger.add_auth("digest", b"alice:secret").await.unwrap();
    assert_eq!(stranger.get_data(&p).await.unwrap().0, b"private");

    let read_only = acl::read_unsafe();
    assert_eq!(
        code(owner.set_acl(&p, &read_only, 3).await),
        ErrorCode::BadVersion
    );
    let stat = owner.set_acl(&p, &read_only, 0).await.unwrap();
    assert_eq!(stat.aversion, 1);
    // Without ADMIN permission the ACL check fails before the version check.
    assert_eq!(
        code(owner.set_acl(&p, &read_only, 0).await),
        ErrorCode::NoAuth
    );
    assert_eq!(code(owner.set_data(&p, b"w", -1).await), ErrorCode::NoAuth);
    // An ACL naming `auth` with no authenticated identity is invalid.
    let anonymous = connect(address).await;
    assert_eq!(
        code(
            anonymous
                .create(
                    &format!("{p}-x"),
                    b"",
                    &acl::creator_all(),
                    CreateMode::Persistent
                )
                .await
        ),
        ErrorCode::InvalidAcl
    );
    for zk in [owner, stranger, anonymous] {
        zk.close().await;
    }
}

pub async fn multi_and_multi_read(address: &str) {
    let zk = connect(address).await;
    let p = unique("multi");
    let results = zk
        .multi(&[
            Op::create(&p, b"", acl::open_unsafe(), CreateMode::Persistent),
            Op::create(
                &format!("{p}/a"),
                b"1",
                acl::open_unsafe(),
                CreateMode::Persistent,
            ),
            Op::set_data(&format!("{p}/a"), b"2", 0),
            Op::check(&format!("{p}/a"), 1),
        ])
        .await
        .unwrap();
    assert_eq!(results.len(), 4);
    assert!(matches!(&results[0], OpResult::Create { path, .. } if *path == p));
    assert!(matches!(&results[2], OpResult::SetData(stat) if stat.version == 1));
    assert_eq!(results[3], OpResult::Check);

    // Containers and TTL znodes inside a multi (op codes 19 and 21 in the request).
    let results = zk
        .multi(&[
            Op::create(
                &format!("{p}/c"),
                b"",
                acl::open_unsafe(),
                CreateMode::Container,
            ),
            Op::create(
                &format!("{p}/t"),
                b"",
                acl::open_unsafe(),
                CreateMode::PersistentWithTtl(60_000),
            ),
        ])
        .await
        .unwrap();
    assert!(matches!(&results[0], OpResult::Create { path, .. } if *path == format!("{p}/c")));
    assert!(matches!(&results[1], OpResult::Create { path, .. } if *path == format!("{p}/t")));
    let (_, stat) = zk.get_data(&format!("{p}/c")).await.unwrap();
    assert_eq!(stat.ephemeral_owner, 0);

    // A failing multi applies nothing and reports the failing op.
    let err = zk
        .multi(&[
            Op::create(
                &format!("{p}/b"),
                b"",
                acl::open_unsafe(),
                CreateMode::Persistent,
            ),
            Op::delete(&format!("{p}/a"), 7),
        ])
        .await
        .expect_err("bad version");
    assert_eq!(err.code(), ErrorCode::BadVersion);
    assert_eq!(err.path(), format!("{p}/a"));
    assert_eq!(zk.exists(&format!("{p}/b")).await.unwrap(), None);

    let results = zk
        .multi_read(&[
            Op::GetData {
                path: format!("{p}/a"),
            },
            Op::GetChildren { path: p.clone() },
            Op::GetData {
                path: format!("{p}/none"),
            },
        ])
        .await
        .unwrap();
    assert!(matches!(&results[0], OpResult::GetData(data, _) if data == b"2"));
    match &results[1] {
        OpResult::GetChildren(children) => {
            // The server's order is unspecified (ZooKeeper's is a hash set's).
            let mut children = children.clone();
            children.sort();
            assert_eq!(children, vec!["a", "c", "t"]);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(matches!(&results[2], OpResult::Error(e) if e.code() == ErrorCode::NoNode));
    zk.close().await;
}

pub async fn chroot_paths(address: &str) {
    let zk = connect(address).await;
    let root = unique("chroot");
    mkdir(&zk, &root).await;
    let jailed = connect(&format!("{address}{root}")).await;
    let (path, _) = jailed
        .create(
            "/inside-",
            b"",
            &acl::open_unsafe(),
            CreateMode::EphemeralSequential,
        )
        .await
        .unwrap();
    assert!(path.starts_with("/inside-"), "{path} is a client path");
    assert!(zk.exists(&format!("{root}{path}")).await.unwrap().is_some());
    let (children, _) = jailed.get_children("/").await.unwrap();
    assert_eq!(children.len(), 1);
    assert_eq!(
        jailed.get_ephemerals("/").await.unwrap(),
        vec![path.clone()]
    );
    let (_, _, watch) = jailed.get_data_w(&path).await.unwrap();
    zk.set_data(&format!("{root}{path}"), b"x", -1)
        .await
        .unwrap();
    let event = within("chroot watch", watch).await;
    assert_eq!(event.path, path, "events carry client paths");
    let err = jailed.get_data("/missing").await.expect_err("missing");
    assert_eq!(err.path(), "/missing");
    jailed.close().await;
    zk.close().await;
}

/// Many requests in flight on one session: the server runs them in order, and each answer
/// reaches the request it belongs to.
pub async fn pipelined_requests_answer_in_order(address: &str) {
    let zk = connect(address).await;
    let p = unique("pipeline");
    mkdir(&zk, &p).await;
    let n = 2000;
    let writes = (0..n).map(|i| {
        let zk = zk.clone();
        let p = p.clone();
        async move { zk.set_data(&p, format!("{i}").as_bytes(), -1).await }
    });
    let results = futures_join_all(writes).await;
    for (i, result) in results.into_iter().enumerate() {
        assert_eq!(
            result.unwrap().version,
            i as i32 + 1,
            "answer {i} is for request {i}"
        );
    }
    // A write followed at once by reads: FIFO order means every read sees the write.
    let zk2 = zk.clone();
    let p2 = p.clone();
    let (set, get) = tokio::join!(zk.set_data(&p, b"last", -1), async move {
        zk2.get_data(&p2).await
    });
    assert_eq!(set.unwrap().version, n + 1);
    assert_eq!(get.unwrap().0, b"last");
    zk.close().await;
}

/// Polls futures in order, like `futures::future::join_all`, so they are submitted in order.
pub async fn futures_join_all<F: std::future::Future>(
    futures: impl IntoIterator<Item = F>,
) -> Vec<F::Output> {
    let handles: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut out = Vec::with_capacity(handles.len());
    let mut slots: Vec<Option<F::Output>> = handles.iter().map(|_| None).collect();
    let mut handles: Vec<Option<std::pin::Pin<Box<F>>>> = handles.into_iter().map(Some).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (slot, handle) in slots.iter_mut().zip(handles.iter_mut()) {
            if let Some(f) = handle {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        *slot = Some(v);
                        *handle = None;
                    }
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    for slot in slots {
        out.push(slot.expect("completed"));
    }
    out
}

pub async fn sync_and_who_am_i(address: &str) {
    let zk = connect(address).await;
    zk.sync("/").await.unwrap();
    let before = zk.who_am_i().await.unwrap();
    assert!(before.iter().all(|c| c.auth_scheme != "digest"));
    assert!(before.iter().any(|c| c.auth_scheme == "ip"), "{before:?}");
    zk.add_auth("digest", b"bob:pw").await.unwrap();
    let after = zk.who_am_i().await.unwrap();
    assert!(
        after
            .iter()
            .any(|c| c.auth_scheme == "digest" && c.user == "bob"),
        "{after:?}"
    );
    zk.close().await;
}

pub async fn invalid_paths_are_refused_locally(address: &str) {
    let zk = connect(address).await;
    for bad in ["", "x", "/a/", "//a", "/a/../b"] {
        let err = zk.get_data(bad).await.expect_err("invalid");
        assert_eq!(err.code(), ErrorCode::BadArguments, "{bad:?}");
    }
    assert_eq!(zk.state(), SessionState::Connected);
    zk.close().await;
}

pub async fn auth_failure_ends_the_session(address: &str) {
    let zk = connect(address).await;
    let mut events = zk.session_events();
    let err = zk
        .add_auth("no-such-scheme", b"x")
        .await
        .expect_err("refused");
    assert_eq!(err.code(), ErrorCode::AuthFailed);
    let state = within("auth failed event", async {
        loop {
            match events.recv().await {
                Ok(SessionState::AuthFailed) => return SessionState::AuthFailed,
                Ok(_) => {}
                Err(e) => panic!("session events ended: {e}"),
            }
        }
    })
    .await;
    assert_eq!(state, SessionState::AuthFailed);
    assert_eq!(code(zk.exists("/").await), ErrorCode::AuthFailed);
}

pub async fn close_removes_ephemerals(address: &str) {
    let observer = connect(address).await;
    let zk = connect(address).await;
    let p = unique("close");
    zk.create(&p, b"", &acl::open_unsafe(), CreateMode::Ephemeral)
        .await
        .unwrap();
    let (_, watch) = observer.exists_w(&p).await.unwrap();
    zk.close().await;
    assert_eq!(zk.state(), SessionState::Closed);
    assert_eq!(code(zk.exists("/").await), ErrorCode::SessionExpired);
    let event = within("ephemeral deleted on close", watch).await;
    assert_eq!(event.event_type, client::EventType::NodeDeleted);
    observer.close().await;
}
