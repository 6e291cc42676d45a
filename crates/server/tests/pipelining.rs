//! Pipelined requests: replies come back in request order with non-decreasing zxids, and a watch
//! event is delivered before any reply that reflects the change it reports.

mod support;

use proto::response::Response;
use proto::watch::EventType;
use proto::OpCode;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const REQUESTS: usize = 500;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pipelined_requests_are_answered_in_order_with_events_first() {
    let server = start(test_config()).await;
    let mut conn = Conn::session(server.client_address).await;
    assert_eq!(conn.call(&create("/w", b"v0", 0)).await.header.err, 0);

    // 500 requests in one write, none read until all are sent: creates, getData of what was just
    // created, a watch on /w, a change to /w, and reads of /w after it.
    // Odd positions, so that every even position creates the node the next one reads.
    let (watch_at, change_at) = (11, 251);
    let mut ops = Vec::with_capacity(REQUESTS);
    let mut bytes = Vec::new();
    for i in 0..REQUESTS {
        let request = match i {
            _ if i == watch_at => get_data("/w", true),
            _ if i == change_at => set_data("/w", b"v1", 0),
            _ if i > change_at && i % 50 == 1 => get_data("/w", false),
            _ if i % 2 == 0 => create(&format!("/n{i:03}"), format!("d{i}").as_bytes(), 0),
            _ => get_data(&format!("/n{:03}", i - 1), false),
        };
        let xid = conn.xid();
        bytes.extend_from_slice(&request_frame(xid, &request));
        ops.push((xid, request));
    }
    conn.write_all(&bytes).await.expect("send all requests");

    // Read everything back: one reply per request plus exactly one event.
    let mut last_zxid = i64::MIN;
    let mut event_seen_at = None;
    let mut next = 0usize;
    for _ in 0..REQUESTS + 1 {
        let reply = conn.read_reply().await;
        assert!(
            reply.header.zxid >= last_zxid,
            "zxid went back from {last_zxid:#x} to {:#x}",
            reply.header.zxid
        );
        last_zxid = reply.header.zxid;
        if reply.is_event() {
            assert!(event_seen_at.is_none(), "a second event");
            let event = reply.event();
            assert_eq!(event.event_type, EventType::NodeDataChanged as i32);
            assert_eq!(event.path, "/w");
            event_seen_at = Some(next);
            continue;
        }
        let (xid, request) = &ops[next];
        assert_eq!(reply.header.xid, *xid, "reply {next} out of order");
        assert_eq!(reply.header.err, 0, "request {next}: {request:?}");
        match request.op_code() {
            OpCode::GetData => {
                let Response::GetData(r) = reply.response(OpCode::GetData) else {
                    unreachable!()
                };
                let expected = if next == watch_at {
                    b"v0".to_vec()
                } else if next > change_at && next % 50 == 1 {
                    // A read after the change sees it, and the event came before it.
                    assert!(
                        event_seen_at.is_some(),
                        "read {next} sees v1 before the event"
                    );
                    b"v1".to_vec()
                } else {
                    format!("d{}", next - 1).into_bytes()
                };
                assert_eq!(r.data, Some(expected), "getData {next}");
            }
            OpCode::SetData => {
                assert_eq!(
                    event_seen_at,
                    Some(change_at),
                    "event precedes the setData reply"
                );
            }
            _ => {}
        }
        next += 1;
    }
    assert_eq!(next, REQUESTS);
    assert_eq!(event_seen_at, Some(change_at));
    server.shutdown().await;
}

/// The change comes from another client: the watcher's reads of /w, pipelined in bursts while
/// the change happens, never show the new data before the event has arrived.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn watch_event_arrives_before_a_read_that_sees_another_clients_change() {
    let server = start(test_config()).await;
    let addr = server.client_address;
    let mut watcher = Conn::session(addr).await;
    let mut writer = Conn::session(addr).await;
    assert_eq!(writer.call(&create("/x", b"old", 0)).await.header.err, 0);
    assert_eq!(watcher.call(&get_data("/x", true)).await.header.err, 0);

    let change = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let reply = writer.call(&set_data("/x", b"new", -1)).await;
        assert_eq!(reply.header.err, 0);
        writer
    });

    let mut saw_new = false;
    for _burst in 0..200 {
        let mut xids = Vec::new();
        let mut bytes = Vec::new();
        for _ in 0..20 {
            let xid = watcher.xid();
            bytes.extend_from_slice(&request_frame(xid, &get_data("/x", false)));
            xids.push(xid);
        }
        watcher.write_all(&bytes).await.expect("send burst");
        for xid in xids {
            let reply = watcher.reply_to(xid).await;
            let Response::GetData(r) = reply.response(OpCode::GetData) else {
                unreachable!()
            };
            if r.data.as_deref() == Some(b"new".as_slice()) {
                assert_eq!(
                    watcher.events.len(),
                    1,
                    "a read saw the change before its NodeDataChanged event"
                );
                saw_new = true;
            } else {
                assert!(
                    watcher.events.is_empty(),
                    "event before the change is visible"
                );
            }
        }
        if saw_new {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    assert!(saw_new, "the change never became visible");
    assert_eq!(watcher.events[0].path, "/x");
    assert_eq!(
        watcher.events[0].event_type,
        EventType::NodeDataChanged as i32
    );
    change.await.expect("writer task");
    server.shutdown().await;
}

/// More requests in flight than the server takes from one connection at a time (it stops
/// reading, then resumes as replies are written): all are answered, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn more_pipelined_requests_than_the_in_flight_bound_are_all_answered() {
    const MANY: i32 = 5000;
    let server = start(test_config()).await;
    let conn = Conn::session(server.client_address).await;
    let (mut rd, mut wr) = conn.stream.into_split();
    let writer = tokio::spawn(async move {
        let mut bytes = Vec::new();
        for xid in 1..=MANY {
            bytes.extend_from_slice(&request_frame(xid, &get_data("/zookeeper", false)));
        }
        tokio::time::timeout(std::time::Duration::from_secs(30), wr.write_all(&bytes))
            .await
            .expect("writes complete while replies are read")
            .expect("write");
        wr
    });
    let mut buf = Vec::new();
    read_replies_in_order(&mut rd, &mut buf, MANY, |_| {}).await;
    let _wr = writer.await.expect("writer task");
    server.shutdown().await;
}

/// Reads replies with xids 1 to `last`, in that order and without errors, checking each with
/// `check`; what was read beyond them stays in `buf`.
async fn read_replies_in_order(
    rd: &mut (impl AsyncReadExt + Unpin),
    buf: &mut Vec<u8>,
    last: i32,
    check: impl Fn(&Reply),
) {
    let mut expected = 1;
    while expected <= last {
        while expected <= last {
            let Some(payload) = take_frame(buf) else {
                break;
            };
            let reply = Reply::parse(&payload);
            assert_eq!(reply.header.xid, expected, "reply out of order");
            assert_eq!(reply.header.err, 0);
            check(&reply);
            expected += 1;
        }
        if expected > last {
            break;
        }
        let n = tokio::time::timeout(IO_TIMEOUT, rd.read_buf(buf))
            .await
            .unwrap_or_else(|_| panic!("no reply after xid {}", expected - 1))
            .expect("read");
        assert_ne!(n, 0, "closed after {} replies", expected - 1);
    }
}

/// Removes one frame's payload from the front of `buf`, if a whole one is there.
fn take_frame(buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    if buf.len() < 4 {
        return None;
    }
    let len = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if buf.len() < 4 + len {
        return None;
    }
    let payload = buf[4..4 + len].to_vec();
    buf.drain(..4 + len);
    Some(payload)
}

/// Many sessions pipelining reads and writes at once: each session's replies stay in its
/// request order even when its reads wait behind another session's writes in the log queue.
/// (Found by the read-ratio benchmark: a read of a session whose own parked writes were all
/// applied could overtake that session's read still parked behind another session's write.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_session_keeps_its_order_while_others_write() {
    const SESSIONS: usize = 16;
    const PER_SESSION: usize = 300;
    let server = start(test_config()).await;
    let addr = server.client_address;
    let tasks: Vec<_> = (0..SESSIONS)
        .map(|s| {
            tokio::spawn(async move {
                let mut conn = Conn::session(addr).await;
                let path = format!("/s{s}");
                assert_eq!(conn.call(&create(&path, b"", 0)).await.header.err, 0);
                let mut bytes = Vec::new();
                let mut xids = Vec::new();
                for i in 0..PER_SESSION {
                    // Mostly reads, with writes sprinkled in, as in the read-ratio mix.
                    let request = if i % 3 == 0 {
                        set_data(&path, format!("{i}").as_bytes(), -1)
                    } else {
                        get_data(&path, false)
                    };
                    let xid = conn.xid();
                    bytes.extend_from_slice(&request_frame(xid, &request));
                    xids.push(xid);
                    // One request per write, so reads keep arriving while fsyncs run.
                    conn.write_all(&bytes).await.expect("send");
                    bytes.clear();
                    if i % 16 == 15 {
                        tokio::time::sleep(std::time::Duration::from_micros(200)).await;
                    }
                }
                conn.write_all(&bytes).await.expect("send");
                for xid in xids {
                    // reply_to fails on any other xid: a FIFO violation.
                    assert_eq!(conn.reply_to(xid).await.header.err, 0);
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("session kept its order");
    }
    server.shutdown().await;
}

/// A client that stops reading for a while, then reads everything while it keeps asking: its
/// replies fill the socket, so the server's direct writes come up short and the rest waits in
/// the connection's queue; replies made while that queue drains must queue behind it, and
/// direct writes resume once it is written. Every reply arrives whole and in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_stay_whole_and_in_order_when_the_socket_fills_and_drains() {
    const PAUSED: i32 = 300;
    const READING: i32 = 300;
    const DATA: usize = 64 << 10;
    let server = start(test_config()).await;
    let mut setup = Conn::session(server.client_address).await;
    let data: Vec<u8> = (0..DATA).map(|i| (i % 251) as u8).collect();
    assert_eq!(setup.call(&create("/wide", &data, 0)).await.header.err, 0);
    let conn = Conn::session(server.client_address).await;
    let (mut rd, mut wr) = conn.stream.into_split();
    let asker = tokio::spawn(async move {
        let mut xid = 0;
        let mut burst = |n: i32| {
            let mut bytes = Vec::new();
            for _ in 0..n {
                xid += 1;
                bytes.extend_from_slice(&request_frame(xid, &get_data("/wide", false)));
            }
            bytes
        };
        // 300 × 64 KiB of replies (about 19 MiB: more than loopback buffers, less than the
        // server's per-connection outbound limit) while nobody reads...
        for _ in 0..3 {
            wr.write_all(&burst(PAUSED / 3))
                .await
                .expect("requests written");
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        }
        // ...then more, a few at a time, while the reader drains the first ones.
        for _ in 0..READING / 5 {
            wr.write_all(&burst(5)).await.expect("requests written");
            tokio::time::sleep(std::time::Duration::from_millis(3)).await;
        }
        wr
    });
    tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
    let mut buf = Vec::new();
    read_replies_in_order(&mut rd, &mut buf, PAUSED + READING, |reply| {
        match reply.response(OpCode::GetData) {
            Response::GetData(r) => assert!(
                r.data.as_deref() == Some(&data[..]),
                "reply {} damaged",
                reply.header.xid
            ),
            other => panic!("expected getData, got {other:?}"),
        }
    })
    .await;
    let _wr = asker.await.expect("asking task");
    server.shutdown().await;
}
