//! The blocking wrapper: the same session used from plain threads, without a runtime of the
//! caller's own.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use client::blocking::Client;
use client::{acl, AddWatchMode, CreateMode, ErrorCode, EventType, Op, WatcherType};
use support::*;

#[test]
fn every_operation_through_the_blocking_client() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(start_meerkat());
    let address = addr(server.client_address);
    let zk = Client::connect(&address, config()).unwrap();
    let p = unique("blocking");
    let open = acl::open_unsafe();
    zk.create(&p, b"a", &open, CreateMode::Persistent).unwrap();
    assert_eq!(zk.get_data(&p).unwrap().0, b"a");
    let (_, _, watch) = zk.get_data_w(&p).unwrap();
    assert_eq!(zk.set_data(&p, b"b", 0).unwrap().version, 1);
    assert_eq!(watch.blocking_wait().event_type, EventType::NodeDataChanged);
    let (stat, exists) = zk.exists_w(&format!("{p}/k")).unwrap();
    assert!(stat.is_none());
    let mut recursive = zk.add_watch(&p, AddWatchMode::PersistentRecursive).unwrap();
    zk.create(&format!("{p}/k"), b"", &open, CreateMode::Ephemeral)
        .unwrap();
    assert_eq!(exists.blocking_wait().event_type, EventType::NodeCreated);
    let event = recursive.blocking_next().unwrap();
    assert_eq!(
        (event.event_type, event.path),
        (EventType::NodeCreated, format!("{p}/k"))
    );
    let (children, stat, _) = zk.get_children_w(&p).unwrap();
    assert_eq!((children, stat.num_children), (vec!["k".to_string()], 1));
    assert_eq!(zk.get_all_children_number(&p).unwrap(), 1);
    assert_eq!(zk.get_ephemerals(&p).unwrap(), vec![format!("{p}/k")]);
    zk.sync(&p).unwrap();
    zk.check_watches(&p, WatcherType::Children).unwrap();
    zk.remove_all_watches(&p, WatcherType::Any).unwrap();
    let results = zk
        .multi(&[Op::check(&p, 1), Op::set_data(&p, b"c", 1)])
        .unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(
        zk.multi_read(&[Op::GetData { path: p.clone() }])
            .unwrap()
            .len(),
        1
    );
    zk.add_auth("digest", b"u:p").unwrap();
    assert!(zk.who_am_i().unwrap().iter().any(|c| c.user == "u"));
    zk.set_acl(&format!("{p}/k"), &acl::creator_all(), -1)
        .unwrap();
    assert_eq!(zk.get_acl(&format!("{p}/k")).unwrap().0.len(), 1);
    assert_eq!(zk.delete(&p, -1).unwrap_err().code(), ErrorCode::NotEmpty);

    // Many threads share one session; each sees its own answers.
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let zk = zk.clone();
            let p = p.clone();
            std::thread::spawn(move || {
                for i in 0..50 {
                    let path = format!("{p}/t{t}-{i}");
                    zk.create(
                        &path,
                        path.as_bytes(),
                        &acl::open_unsafe(),
                        CreateMode::Persistent,
                    )
                    .unwrap();
                    assert_eq!(zk.get_data(&path).unwrap().0, path.as_bytes());
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(zk.get_all_children_number(&p).unwrap(), 1 + 8 * 50);
    // Dropping the last clone closes the session at once (40 s timeout: not by expiry).
    let long = config().with_session_timeout(std::time::Duration::from_secs(40));
    let short_lived = Client::connect(&address, long).unwrap();
    short_lived
        .create(&format!("{p}/mine"), b"", &open, CreateMode::Ephemeral)
        .unwrap();
    let (_, gone) = zk.exists_w(&format!("{p}/mine")).unwrap();
    drop(short_lived);
    assert_eq!(gone.blocking_wait().event_type, EventType::NodeDeleted);
    zk.close();
    assert_eq!(
        zk.exists("/").unwrap_err().code(),
        ErrorCode::SessionExpired
    );
    drop(server);
}
