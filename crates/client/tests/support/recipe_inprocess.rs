//! The recipes that need no separate processes to show their behaviour: several sessions in
//! one process, against any server.

use super::*;
use client::recipes::{
    config_watch::ConfigWatch, group::Group, rendezvous, rw_lock::ReadWriteLock,
};

pub async fn run_all(address: &str) {
    read_write_lock(address).await;
    group_membership(address).await;
    configuration(address).await;
    rendezvous_meets(address).await;
}

/// Readers share the lock; a writer waits for them; a reader queued behind a writer waits for
/// the writer.
pub async fn read_write_lock(address: &str) {
    let path = unique("rw");
    let (a, b, c, d) = (
        connect(address).await,
        connect(address).await,
        connect(address).await,
        connect(address).await,
    );
    let r1 = ReadWriteLock::new(&a, &path).read().await.unwrap();
    let r2 = ReadWriteLock::new(&b, &path).read().await.unwrap();
    let writer_lock = ReadWriteLock::new(&c, &path);
    let mut writer = tokio::spawn(async move { writer_lock.write().await });
    // Wait until the writer's node is queued, then queue a reader behind it.
    within("writer queued", async {
        loop {
            if a.get_children(&path).await.unwrap().0.len() == 3 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let reader_lock = ReadWriteLock::new(&d, &path);
    let mut late_reader = tokio::spawn(async move { reader_lock.read().await });
    within("late reader queued", async {
        loop {
            if a.get_children(&path).await.unwrap().0.len() == 4 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    // Nothing can finish while both readers hold: check through a sync round trip on each
    // waiter's session that neither task completed.
    c.sync("/").await.unwrap();
    d.sync("/").await.unwrap();
    assert!(!writer.is_finished(), "writer must wait for readers");
    assert!(!late_reader.is_finished(), "reader behind a writer waits");
    r1.release().await.unwrap();
    r2.release().await.unwrap();
    let w = within("writer", &mut writer).await.unwrap().unwrap();
    d.sync("/").await.unwrap();
    assert!(
        !late_reader.is_finished(),
        "reader still waits for the writer"
    );
    w.release().await.unwrap();
    let r3 = within("late reader", &mut late_reader)
        .await
        .unwrap()
        .unwrap();
    r3.release().await.unwrap();
    for zk in [a, b, c, d] {
        zk.close().await;
    }
}

pub async fn group_membership(address: &str) {
    let path = unique("group");
    let observer = connect(address).await;
    let m1 = connect(address).await;
    let m2 = connect(address).await;
    let group = Group::new(&observer, &path);
    Group::new(&m1, &path)
        .join("alpha", b"host-a:1", false)
        .await
        .unwrap();
    let (members, watch) = group.members_w().await.unwrap();
    assert_eq!(members, vec!["alpha"]);
    let member = Group::new(&m2, &path)
        .join("beta-", b"host-b:2", true)
        .await
        .unwrap();
    assert!(member.starts_with(&format!("{path}/beta-")));
    within("membership change", watch).await;
    assert_eq!(group.members().await.unwrap().len(), 2);
    assert_eq!(group.member_data("alpha").await.unwrap(), b"host-a:1");
    // A member whose session ends leaves by itself.
    let (_, watch) = group.members_w().await.unwrap();
    m1.close().await;
    within("member left", watch).await;
    assert_eq!(group.members().await.unwrap().len(), 1);
    m2.close().await;
    observer.close().await;
}

pub async fn configuration(address: &str) {
    let path = unique("config");
    let admin = connect(address).await;
    let reader = connect(address).await;
    let mut config = ConfigWatch::new(&reader, &path);
    assert_eq!(config.current().await.unwrap(), None);
    ConfigWatch::publish(&admin, &path, b"v1").await.unwrap();
    let (data, _) = within("first config", config.changed())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(data, b"v1");
    ConfigWatch::publish(&admin, &path, b"v2").await.unwrap();
    ConfigWatch::publish(&admin, &path, b"v3").await.unwrap();
    let (data, stat) = within("newer config", config.changed())
        .await
        .unwrap()
        .unwrap();
    // It may skip v2, never v3: the watch leads to a read of the newest.
    assert!(data == b"v3" || data == b"v2", "{data:?}");
    if data == b"v2" {
        let (data, _) = within("newest config", config.changed())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(data, b"v3");
    } else {
        assert_eq!(stat.version, 2);
    }
    admin.close().await;
    reader.close().await;
}

pub async fn rendezvous_meets(address: &str) {
    let path = unique("rendezvous");
    let starter = connect(address).await;
    rendezvous::create(&starter, &path).await.unwrap();
    let worker = connect(address).await;
    let p = path.clone();
    let waiting = tokio::spawn(async move { rendezvous::wait(&worker, &p).await });
    let master = connect(address).await;
    rendezvous::publish(&master, &path, b"master at 10.0.0.1:7000")
        .await
        .unwrap();
    let info = within("rendezvous", waiting).await.unwrap().unwrap();
    assert_eq!(info, b"master at 10.0.0.1:7000");
    starter.close().await;
    master.close().await;
}
