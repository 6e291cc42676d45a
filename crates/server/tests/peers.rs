//! The connections between ensemble members, on real loopback sockets: every pair connects
//! once, frames arrive in order, a restarted member is reconnected, strangers are refused, and
//! a peer that stops reading has its connection broken instead of growing a queue.

use server::peers::{PeerEvent, Transport, TransportConfig, PEER_QUEUE_FRAMES};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(10);

fn free_addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], ports::free_port().expect("a free port")))
}

fn config(me: u64, addrs: &BTreeMap<u64, SocketAddr>, queue_frames: usize) -> TransportConfig {
    TransportConfig {
        me,
        listen: addrs[&me],
        peers: addrs
            .iter()
            .filter(|(s, _)| **s != me)
            .map(|(s, a)| (*s, *a))
            .collect(),
        queue_frames,
    }
}

async fn next(rx: &mut mpsc::Receiver<PeerEvent>) -> PeerEvent {
    tokio::time::timeout(WAIT, rx.recv())
        .await
        .expect("an event in time")
        .expect("transport alive")
}

/// Waits for `Up` of every sid in `peers`, in any order.
async fn all_up(rx: &mut mpsc::Receiver<PeerEvent>, peers: &[u64]) {
    let mut up: Vec<u64> = Vec::new();
    while up.len() < peers.len() {
        match next(rx).await {
            PeerEvent::Up(s) => up.push(s),
            other => panic!("expected Up, got {other:?}"),
        }
    }
    up.sort_unstable();
    assert_eq!(up, peers);
}

/// Servers 1 and 2 connected, each host's events in its own channel (server 2's holding at most
/// `events2`), both `Up` already taken.
async fn connected_pair(
    events2: usize,
) -> (
    Transport,
    Transport,
    mpsc::Receiver<PeerEvent>,
    mpsc::Receiver<PeerEvent>,
) {
    let addrs: BTreeMap<u64, SocketAddr> = (1..=2).map(|s| (s, free_addr())).collect();
    let (tx1, mut rx1) = mpsc::channel(1024);
    let (tx2, mut rx2) = mpsc::channel(events2);
    let t1 = Transport::start(config(1, &addrs, PEER_QUEUE_FRAMES), tx1)
        .await
        .expect("start");
    let t2 = Transport::start(config(2, &addrs, PEER_QUEUE_FRAMES), tx2)
        .await
        .expect("start");
    all_up(&mut rx1, &[2]).await;
    all_up(&mut rx2, &[1]).await;
    (t1, t2, rx1, rx2)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_connect_exchange_in_order_and_reconnect_after_a_restart() {
    let addrs: BTreeMap<u64, SocketAddr> = (1..=3).map(|s| (s, free_addr())).collect();
    let mut rxs = BTreeMap::new();
    let mut ts = BTreeMap::new();
    for s in 1..=3 {
        let (tx, rx) = mpsc::channel(1024);
        ts.insert(
            s,
            Transport::start(config(s, &addrs, PEER_QUEUE_FRAMES), tx)
                .await
                .expect("start"),
        );
        rxs.insert(s, rx);
    }
    for s in 1..=3u64 {
        let others: Vec<u64> = (1..=3).filter(|o| *o != s).collect();
        all_up(rxs.get_mut(&s).expect("rx"), &others).await;
    }
    // 1000 frames each way between 1 and 3 arrive complete and in order, sent in turns of
    // one to several frames (the core's turns).
    for i in 0..1000u32 {
        ts.get_mut(&1).expect("1").send(3, i.to_be_bytes().to_vec());
        ts.get_mut(&3)
            .expect("3")
            .send(1, (i + 5000).to_be_bytes().to_vec());
        if i % 7 < 3 {
            ts.values_mut().for_each(Transport::flush);
        }
    }
    ts.values_mut().for_each(Transport::flush);
    for (at, from, base) in [(3u64, 1u64, 0u32), (1, 3, 5000)] {
        for i in 0..1000u32 {
            assert_eq!(
                next(rxs.get_mut(&at).expect("rx")).await,
                PeerEvent::Frame(from, (i + base).to_be_bytes().to_vec().into())
            );
        }
    }
    // Server 2 dies: both others hear it; it comes back on the same port and is reconnected.
    ts.remove(&2).expect("2").shutdown().await;
    for s in [1u64, 3] {
        assert_eq!(next(rxs.get_mut(&s).expect("rx")).await, PeerEvent::Down(2));
    }
    // A dialer may still have reached the dying member in the instant before its tasks
    // ended: such a connection comes Up and goes Down again. Nothing else may happen.
    for s in [1u64, 3] {
        let rx = rxs.get_mut(&s).expect("rx");
        while let Ok(Some(event)) =
            tokio::time::timeout(Duration::from_millis(200), rx.recv()).await
        {
            assert!(
                matches!(event, PeerEvent::Up(2) | PeerEvent::Down(2)),
                "only a flap of the stopped member, got {event:?}"
            );
        }
    }
    let (tx, rx2) = mpsc::channel(1024);
    rxs.insert(2, rx2);
    ts.insert(
        2,
        Transport::start(config(2, &addrs, PEER_QUEUE_FRAMES), tx)
            .await
            .expect("restart"),
    );
    all_up(rxs.get_mut(&2).expect("rx"), &[1, 3]).await;
    for s in [1u64, 3] {
        assert_eq!(next(rxs.get_mut(&s).expect("rx")).await, PeerEvent::Up(2));
    }
    let t2 = ts.get_mut(&2).expect("2");
    t2.send(1, b"back".to_vec());
    t2.flush();
    assert_eq!(
        next(rxs.get_mut(&1).expect("rx")).await,
        PeerEvent::Frame(2, b"back".to_vec().into())
    );
    // Closing on purpose is reported like a break, and the pair reconnects.
    ts.get_mut(&1).expect("1").disconnect(3);
    assert_eq!(next(rxs.get_mut(&1).expect("rx")).await, PeerEvent::Down(3));
    assert_eq!(next(rxs.get_mut(&3).expect("rx")).await, PeerEvent::Down(1));
    assert_eq!(next(rxs.get_mut(&1).expect("rx")).await, PeerEvent::Up(3));
    assert_eq!(next(rxs.get_mut(&3).expect("rx")).await, PeerEvent::Up(1));
}

#[tokio::test]
async fn strangers_are_refused_without_an_event() {
    let addrs: BTreeMap<u64, SocketAddr> = (1..=2).map(|s| (s, free_addr())).collect();
    let (tx, mut rx) = mpsc::channel(16);
    let _t2 = Transport::start(config(2, &addrs, PEER_QUEUE_FRAMES), tx)
        .await
        .expect("start");
    // Not the protocol at all.
    let mut junk = tokio::net::TcpStream::connect(addrs[&2])
        .await
        .expect("connect");
    junk.write_all(b"\x00\x00\x00\x10GET / HTTP/1.1\r\n\r\n")
        .await
        .expect("write");
    // The right protocol, an id that is not a member.
    let mut stranger = tokio::net::TcpStream::connect(addrs[&2])
        .await
        .expect("connect");
    let mut hello = 16u32.to_be_bytes().to_vec();
    hello.extend_from_slice(b"MKPEER\x00\x01");
    hello.extend_from_slice(&9u64.to_be_bytes());
    stranger.write_all(&hello).await.expect("write");
    assert!(
        tokio::time::timeout(Duration::from_millis(500), rx.recv())
            .await
            .is_err(),
        "no event for strangers"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_stops_reading_is_disconnected_not_buffered_without_bound() {
    let addrs: BTreeMap<u64, SocketAddr> = (1..=2).map(|s| (s, free_addr())).collect();
    let (tx1, mut rx1) = mpsc::channel(16);
    // Server 2's host never reads its events: its reader stalls, TCP fills up.
    let (tx2, _rx2_never_read) = mpsc::channel(1);
    let mut t1 = Transport::start(config(1, &addrs, 8), tx1)
        .await
        .expect("start");
    let _t2 = Transport::start(config(2, &addrs, 8), tx2)
        .await
        .expect("start");
    all_up(&mut rx1, &[2]).await;
    let frame = vec![7u8; 1 << 20];
    let mut sent = 0;
    let down = loop {
        t1.send(2, frame.clone());
        t1.flush();
        sent += 1;
        if let Ok(Some(event)) = tokio::time::timeout(Duration::from_millis(5), rx1.recv()).await {
            break event;
        }
        assert!(
            sent < 2000,
            "sent {sent} MiB without the connection breaking"
        );
    };
    assert_eq!(down, PeerEvent::Down(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_still_being_made_keeps_its_place_and_an_abandoned_one_breaks_the_connection() {
    let (mut t1, _t2, _rx1, mut rx2) = connected_pair(1024).await;
    let (made, later) = tokio::sync::oneshot::channel();
    t1.send(2, b"first".to_vec());
    t1.send_later(2, later);
    t1.send(2, b"third".to_vec());
    t1.flush();
    // Nothing after the pending frame overtakes it while it is being made.
    assert_eq!(
        next(&mut rx2).await,
        PeerEvent::Frame(1, b"first".to_vec().into())
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(200), rx2.recv())
            .await
            .is_err(),
        "a frame overtook the one being made"
    );
    made.send(b"second".to_vec()).expect("send");
    assert_eq!(
        next(&mut rx2).await,
        PeerEvent::Frame(1, b"second".to_vec().into())
    );
    assert_eq!(
        next(&mut rx2).await,
        PeerEvent::Frame(1, b"third".to_vec().into())
    );
    // A frame whose maker gives up must not be skipped silently: the connection goes.
    let (abandoned, later) = tokio::sync::oneshot::channel::<Vec<u8>>();
    t1.send_later(2, later);
    drop(abandoned);
    assert_eq!(next(&mut rx2).await, PeerEvent::Down(1));
}

/// Frames sent while the peer's socket is full wait in the queue; frames of later turns queue
/// behind them (the core must not write past them), and every frame arrives whole and in order
/// once the peer reads again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_of_later_turns_wait_behind_a_full_socket_and_arrive_in_order() {
    const FRAMES: u32 = 600;
    // Server 2's host reads its events only later: its reader stalls, TCP fills up.
    let (mut t1, _t2, _rx1, mut rx2) = connected_pair(4).await;
    let frame = |i: u32| -> Vec<u8> {
        let mut f = vec![(i % 251) as u8; 64 << 10];
        f[..4].copy_from_slice(&i.to_be_bytes());
        f
    };
    let reader = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        for i in 0..FRAMES {
            assert_eq!(
                next(&mut rx2).await,
                PeerEvent::Frame(1, frame(i).into()),
                "frame {i}"
            );
        }
    });
    // Turns of one to four frames, over about a second: the first fill the socket, the later
    // ones come while the queue drains.
    let mut i = 0;
    while i < FRAMES {
        for _ in 0..(1 + i % 4).min(FRAMES - i) {
            t1.send(2, frame(i));
            i += 1;
        }
        t1.flush();
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    tokio::time::timeout(WAIT, reader)
        .await
        .expect("every frame in time")
        .expect("frames whole and in order");
}
