//! Reconnection with requests in flight: the session survives, answers stay in request order,
//! each request is answered exactly once, and watches come back through setWatches.

use super::fault_proxy::FaultProxy;
use super::*;
use client::{AddWatchMode, ErrorCode, EventType, SessionState};

/// Checks that `results` (set_data on one node, from one session) are successes, then
/// ConnectionLoss, then successes again (calls that waited for the next connection): answers in
/// request order. Successes before the break have versions `base + 1, base + 2, ...`; those
/// after it have consecutive versions above every earlier one. Returns (ok before, lost, ok
/// after).
pub fn ok_then_connection_loss(
    results: &[client::Result<client::Stat>],
    base: i32,
) -> (usize, usize, usize) {
    let before = results.iter().take_while(|r| r.is_ok()).count();
    let lost = results[before..].iter().take_while(|r| r.is_err()).count();
    let after = results.len() - before - lost;
    for (i, r) in results.iter().enumerate() {
        match r {
            Ok(stat) if i < before => {
                assert_eq!(
                    stat.version,
                    base + i as i32 + 1,
                    "answer {i} belongs to request {i}"
                )
            }
            Ok(stat) => {
                assert!(i >= before + lost, "request {i}: success among failures");
                assert!(
                    stat.version > base + before as i32,
                    "request {i} ran after the others"
                );
                if i > before + lost {
                    let prev = results[i - 1].as_ref().map(|s| s.version).unwrap_or(0);
                    assert_eq!(
                        stat.version,
                        prev + 1,
                        "request {i} in order after {}",
                        i - 1
                    );
                }
            }
            Err(e) => {
                assert!(
                    i >= before && i < before + lost,
                    "request {i}: failure among successes"
                );
                assert_eq!(e.code(), ErrorCode::ConnectionLoss, "request {i}: {e}");
            }
        }
    }
    (before, lost, after)
}

async fn wait_state(
    zk: &client::Client,
    events: &mut tokio::sync::broadcast::Receiver<SessionState>,
    want: SessionState,
) {
    within("session state", async {
        loop {
            if zk.state() == want {
                return;
            }
            match events.recv().await {
                Ok(s) if s == want => return,
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("session events ended: {e}"),
            }
        }
    })
    .await
}

/// Requests in flight when a connection breaks, against any server behind a fault proxy.
pub async fn cut_with_requests_in_flight(server: std::net::SocketAddr) {
    let proxy = FaultProxy::start(server).await;
    let zk = connect(&addr(proxy.address)).await;
    let other = connect(&addr(server)).await;
    let session = zk.session_id();
    let p = unique("cut");
    mkdir(&zk, &p).await;
    zk.create(
        &format!("{p}/eph"),
        b"",
        &acl::open_unsafe(),
        CreateMode::Ephemeral,
    )
    .await
    .unwrap();
    let (_, _, mut data_watch) = zk.get_data_w(&p).await.unwrap();
    let mut persistent = zk.add_watch(&p, AddWatchMode::Persistent).await.unwrap();
    let mut events = zk.session_events();

    // 1. Answers lost: the server executes 20 writes, the client never hears back.
    proxy.silence_replies(true);
    let lost = (0..20).map(|_| {
        let (zk, p) = (zk.clone(), p.clone());
        async move { zk.set_data(&p, b"lost", -1).await }
    });
    let lost = tokio::spawn(ops_suite::futures_join_all(lost.collect::<Vec<_>>()));
    within("the server to apply the unanswered writes", async {
        loop {
            if other.exists(&p).await.unwrap().map(|s| s.version) == Some(20) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let last_zxid_before_break = zk.info().last_zxid;
    // 2. Requests never delivered: silence both ways and queue 30 more.
    proxy.silence(true);
    let undelivered = (0..30).map(|_| {
        let (zk, p) = (zk.clone(), p.clone());
        async move { zk.set_data(&p, b"undelivered", -1).await }
    });
    let undelivered = tokio::spawn(ops_suite::futures_join_all(undelivered.collect::<Vec<_>>()));
    // All 30 must be written into the silence before it ends (a setData frame of this path is
    // at least 35 bytes); one yield was not enough on a loaded machine.
    let sent_at_least = 30 * (35 + p.len());
    within("the 30 requests to be sent into the silence", async {
        while proxy.silenced_request_bytes() < sent_at_least {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    // 3. A change while the client cannot hear: replayed by setWatches after reconnecting.
    let away = other.set_data(&p, b"while away", -1).await.unwrap();
    // Its notification to `zk` (xid -1, then its zxid) is sent after `other`'s answer; wait
    // until the proxy has dropped it, or lifting the silence could let it through live.
    let notification: Vec<u8> =
        [(-1i32).to_be_bytes().as_slice(), &away.mzxid.to_be_bytes()].concat();
    within("the change's notification to be dropped", async {
        while !proxy.silenced_replies_contain(&notification) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    proxy.silence(false);
    proxy.silence_replies(false);
    proxy.cut();

    let lost = within("lost answers", lost).await.unwrap();
    assert_eq!(
        ok_then_connection_loss(&lost, 0),
        (0, 20, 0),
        "every unanswered write reports ConnectionLoss"
    );
    let undelivered = within("undelivered answers", undelivered).await.unwrap();
    // Written into the silence: ConnectionLoss; called after the break: done later, in order.
    let (before, _, delivered) = ok_then_connection_loss(&undelivered, 21);
    assert_eq!(before, 0, "nothing got through the silenced connection");
    wait_state(&zk, &mut events, SessionState::Connected).await;
    assert_eq!(zk.session_id(), session, "the session survived");
    // The reconnection carried the session, its password and the last zxid the client saw.
    let requests = proxy.connect_requests();
    assert_eq!(requests.len(), 2, "one first connection, one reconnection");
    assert_eq!((requests[0].session_id, requests[0].last_zxid_seen), (0, 0));
    assert_eq!(requests[1].session_id, session);
    assert_eq!(requests[1].passwd, zk.info().password);
    assert_eq!(requests[1].last_zxid_seen, last_zxid_before_break);
    assert!(last_zxid_before_break > 0);
    assert!(
        zk.exists(&format!("{p}/eph")).await.unwrap().is_some(),
        "ephemeral kept"
    );

    // Nothing was executed twice: 20 lost + the other client's write + what got through.
    let (data, stat) = zk.get_data(&p).await.unwrap();
    assert_eq!(stat.version, 21 + delivered as i32);
    if delivered == 0 {
        assert_eq!(data, b"while away");
    }
    // The one-shot watch armed before the break fired exactly once, replayed with zxid −1.
    let event = within("replayed data watch", &mut data_watch).await;
    assert_eq!(event.event_type, EventType::NodeDataChanged);
    assert!(data_watch.try_event().is_none());
    // The persistent watch is re-registered: one change now gives exactly one event.
    zk.set_data(&p, b"after", -1).await.unwrap();
    zk.sync(&p).await.unwrap();
    let mut changes = 0;
    while let Some(event) = persistent.try_next() {
        if event.event_type == EventType::NodeDataChanged && event.zxid > 0 {
            changes += 1;
        }
    }
    assert_eq!(
        changes,
        1 + delivered,
        "one event per write after reconnecting"
    );
    zk.close().await;
    other.close().await;
}

/// More armed watches than fit one setWatches batch (128 KiB of paths): after a reconnection
/// every one of them still fires.
pub async fn many_watches_survive_reconnect(server: std::net::SocketAddr) {
    let proxy = FaultProxy::start(server).await;
    let zk = connect(&addr(proxy.address)).await;
    let writer = connect(&addr(server)).await;
    let dir = unique("many");
    mkdir(&writer, &dir).await;
    let n = 300;
    let name = |i: usize| format!("{dir}/{}{i:04}", "w".repeat(500));
    let creates = (0..n).map(|i| {
        let (writer, path) = (writer.clone(), name(i));
        async move {
            writer
                .create(&path, b"", &acl::open_unsafe(), CreateMode::Persistent)
                .await
        }
    });
    for r in ops_suite::futures_join_all(creates.collect::<Vec<_>>()).await {
        r.unwrap();
    }
    let mut watches = Vec::new();
    for i in 0..n {
        watches.push(zk.get_data_w(&name(i)).await.unwrap().2);
    }
    let mut events = zk.session_events();
    proxy.cut();
    wait_state(&zk, &mut events, SessionState::Disconnected).await;
    wait_state(&zk, &mut events, SessionState::Connected).await;
    zk.sync("/").await.unwrap();
    assert_eq!(proxy.connect_requests().len(), 2, "reconnected once");
    let sets = (0..n).map(|i| {
        let (writer, path) = (writer.clone(), name(i));
        async move { writer.set_data(&path, b"x", -1).await }
    });
    for r in ops_suite::futures_join_all(sets.collect::<Vec<_>>()).await {
        r.unwrap();
    }
    for watch in watches {
        let event = within("re-registered watch", watch).await;
        assert_eq!(event.event_type, EventType::NodeDataChanged);
    }
    zk.close().await;
    writer.close().await;
}

/// A server that stops answering is given up after 2/3 of the session timeout and the client
/// moves to the next server of its connect string; the session survives.
pub async fn silent_server_fails_over(server: std::net::SocketAddr) {
    let first = FaultProxy::start(server).await;
    let second = FaultProxy::start(server).await;
    let zk = connect(&format!("{},{}", first.address, second.address)).await;
    assert_eq!(zk.info().server, first.address.to_string());
    let session = zk.session_id();
    let p = unique("failover");
    zk.create(&p, b"", &acl::open_unsafe(), CreateMode::Ephemeral)
        .await
        .unwrap();
    let mut events = zk.session_events();
    first.silence(true);
    first.refuse(true);
    wait_state(&zk, &mut events, SessionState::Disconnected).await;
    wait_state(&zk, &mut events, SessionState::Connected).await;
    assert_eq!(zk.info().server, second.address.to_string());
    assert_eq!(zk.session_id(), session);
    assert!(zk.exists(&p).await.unwrap().is_some());
    zk.close().await;
}

/// An idle session stays alive on pings alone (no request for several session timeouts).
pub async fn idle_session_is_kept_alive_by_pings(server: std::net::SocketAddr) {
    let zk = connect(&addr(server)).await;
    let observer = connect(&addr(server)).await;
    let p = unique("idle");
    zk.create(&p, b"", &acl::open_unsafe(), CreateMode::Ephemeral)
        .await
        .unwrap();
    let mut events = zk.session_events();
    tokio::time::sleep(SESSION_TIMEOUT * 2).await;
    assert!(events.try_recv().is_err(), "no state change while idle");
    assert_eq!(zk.state(), SessionState::Connected);
    assert!(
        observer.exists(&p).await.unwrap().is_some(),
        "session still alive"
    );
    zk.close().await;
    observer.close().await;
}

/// A client kept away longer than its session timeout learns on reconnection that the session
/// expired: an Expired event, armed watches resolve, every call fails with SessionExpired.
pub async fn expiry_is_reported(server: std::net::SocketAddr) {
    let proxy = FaultProxy::start(server).await;
    let zk = connect(&addr(proxy.address)).await;
    let observer = connect(&addr(server)).await;
    let p = unique("expire");
    zk.create(&p, b"", &acl::open_unsafe(), CreateMode::Ephemeral)
        .await
        .unwrap();
    let (_, watch) = zk.exists_w(&format!("{p}-never")).await.unwrap();
    let mut events = zk.session_events();
    proxy.refuse(true);
    proxy.cut();
    let (_, gone) = observer.exists_w(&p).await.unwrap();
    let event = within("the server to expire the session", gone).await;
    assert_eq!(event.event_type, EventType::NodeDeleted);
    proxy.refuse(false);
    wait_state(&zk, &mut events, SessionState::Expired).await;
    let event = within("armed watch resolves", watch).await;
    assert_eq!(
        (event.event_type, event.state),
        (EventType::None, client::KeeperState::Expired)
    );
    let err = zk.exists("/").await.expect_err("expired");
    assert_eq!(err.code(), ErrorCode::SessionExpired);
    observer.close().await;
}
