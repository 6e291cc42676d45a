//! Every watch kind — data, exist, child (one-shot), persistent, persistent recursive — and
//! their removal, run the same way against meerkat and Apache ZooKeeper 3.9.3.

use super::*;
use client::{AddWatchMode, EventType, WatcherType};

pub async fn run_all(address: &str) {
    one_shot_watches(address).await;
    persistent_watches(address).await;
    recursive_watches(address).await;
    removing_watches(address).await;
}

pub async fn one_shot_watches(address: &str) {
    let zk = connect(address).await;
    let writer = connect(address).await;
    let p = unique("w1");

    // exists on a missing node: fires NodeCreated.
    let (stat, created) = zk.exists_w(&p).await.unwrap();
    assert_eq!(stat, None);
    writer
        .create(&p, b"", &acl::open_unsafe(), CreateMode::Persistent)
        .await
        .unwrap();
    let event = within("NodeCreated", created).await;
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NodeCreated, p.as_str())
    );
    assert!(event.zxid > 0);

    // getData: fires once on a change, not again.
    let (_, _, mut changed) = zk.get_data_w(&p).await.unwrap();
    writer.set_data(&p, b"1", -1).await.unwrap();
    // FIFO + watch order: once a later read returns, the event is already here.
    zk.sync(&p).await.unwrap();
    let event = changed
        .try_event()
        .expect("event before the read after the change");
    assert_eq!(event.event_type, EventType::NodeDataChanged);

    // getChildren: NodeChildrenChanged on a new child.
    let (_, _, kids) = zk.get_children_w(&p).await.unwrap();
    writer
        .create(
            &format!("{p}/k"),
            b"",
            &acl::open_unsafe(),
            CreateMode::Persistent,
        )
        .await
        .unwrap();
    assert_eq!(
        within("child event", kids).await.event_type,
        EventType::NodeChildrenChanged
    );

    // Deletion fires data and child watches with NodeDeleted.
    let (_, _, data_w) = zk.get_data_w(&format!("{p}/k")).await.unwrap();
    let (_, _, child_w) = zk.get_children_w(&format!("{p}/k")).await.unwrap();
    let (_, exist_w) = zk.exists_w(&format!("{p}/k")).await.unwrap();
    writer.delete(&format!("{p}/k"), -1).await.unwrap();
    for watch in [data_w, child_w, exist_w] {
        let event = within("NodeDeleted", watch).await;
        assert_eq!(event.event_type, EventType::NodeDeleted);
        assert_eq!(event.path, format!("{p}/k"));
    }
    // A failed getData leaves no watch.
    assert!(zk.get_data_w(&format!("{p}/gone")).await.is_err());
    zk.close().await;
    writer.close().await;
}

pub async fn persistent_watches(address: &str) {
    let zk = connect(address).await;
    let writer = connect(address).await;
    let p = unique("wp");
    let mut watch = zk.add_watch(&p, AddWatchMode::Persistent).await.unwrap();
    writer
        .create(&p, b"", &acl::open_unsafe(), CreateMode::Persistent)
        .await
        .unwrap();
    writer.set_data(&p, b"1", -1).await.unwrap();
    writer.set_data(&p, b"2", -1).await.unwrap();
    writer
        .create(
            &format!("{p}/c"),
            b"",
            &acl::open_unsafe(),
            CreateMode::Persistent,
        )
        .await
        .unwrap();
    writer
        .set_data(&format!("{p}/c"), b"not seen", -1)
        .await
        .unwrap();
    writer.delete(&format!("{p}/c"), -1).await.unwrap();
    writer.delete(&p, -1).await.unwrap();
    let mut types = Vec::new();
    while types.len() < 6 {
        let event = within("persistent events", watch.next())
            .await
            .expect("stream open");
        if event.event_type == EventType::None {
            continue;
        }
        assert_eq!(event.path, p);
        types.push(event.event_type);
    }
    assert_eq!(
        types,
        vec![
            EventType::NodeCreated,
            EventType::NodeDataChanged,
            EventType::NodeDataChanged,
            EventType::NodeChildrenChanged,
            EventType::NodeChildrenChanged,
            EventType::NodeDeleted,
        ]
    );
    zk.close().await;
    writer.close().await;
}

pub async fn recursive_watches(address: &str) {
    let zk = connect(address).await;
    let writer = connect(address).await;
    let p = unique("wr");
    mkdir(&writer, &p).await;
    let mut watch = zk
        .add_watch(&p, AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    writer
        .create(
            &format!("{p}/a"),
            b"",
            &acl::open_unsafe(),
            CreateMode::Persistent,
        )
        .await
        .unwrap();
    writer
        .create(
            &format!("{p}/a/b"),
            b"",
            &acl::open_unsafe(),
            CreateMode::Persistent,
        )
        .await
        .unwrap();
    writer
        .set_data(&format!("{p}/a/b"), b"x", -1)
        .await
        .unwrap();
    writer.delete(&format!("{p}/a/b"), -1).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 4 {
        let event = within("recursive events", watch.next())
            .await
            .expect("stream open");
        if event.event_type == EventType::None {
            continue;
        }
        seen.push((event.event_type, event.path));
    }
    assert_eq!(
        seen,
        vec![
            (EventType::NodeCreated, format!("{p}/a")),
            (EventType::NodeCreated, format!("{p}/a/b")),
            (EventType::NodeDataChanged, format!("{p}/a/b")),
            (EventType::NodeDeleted, format!("{p}/a/b")),
        ],
        "no NodeChildrenChanged for recursive watches"
    );
    zk.close().await;
    writer.close().await;
}

pub async fn removing_watches(address: &str) {
    let zk = connect(address).await;
    let p = unique("wrm");
    mkdir(&zk, &p).await;
    let (_, _, data_w) = zk.get_data_w(&p).await.unwrap();
    zk.check_watches(&p, WatcherType::Data).await.unwrap();
    assert_eq!(
        zk.check_watches(&p, WatcherType::Children)
            .await
            .expect_err("none")
            .code(),
        client::ErrorCode::NoWatcher
    );
    zk.remove_all_watches(&p, WatcherType::Data).await.unwrap();
    let event = within("removed", data_w).await;
    assert_eq!(event.event_type, EventType::DataWatchRemoved);
    assert_eq!(
        zk.remove_all_watches(&p, WatcherType::Data)
            .await
            .expect_err("gone")
            .code(),
        client::ErrorCode::NoWatcher
    );
    let mut persistent = zk.add_watch(&p, AddWatchMode::Persistent).await.unwrap();
    zk.remove_all_watches(&p, WatcherType::Persistent)
        .await
        .unwrap();
    let event = within("persistent removed", persistent.next())
        .await
        .expect("event");
    assert_eq!(event.event_type, EventType::PersistentWatchRemoved);
    assert_eq!(within("stream end", persistent.next()).await, None);
    zk.close().await;
}
