//! Clients that send requests and never read the replies. The server must bound what it holds
//! for them (close them or stop reading from them, so TCP pushes back) and keep serving everyone
//! else promptly.

mod support;

use std::time::{Duration, Instant};
use support::*;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// The tests in this file measure the process's peak memory and compete for the server's
/// global request slots; they run one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How long the server may take to either close a slow reader or push back on it.
const SETTLE: Duration = Duration::from_secs(10);

/// `VmHWM` (peak resident set) of this process, in KiB, where /proc is available.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `count` getData requests for `path`, xids from 1.
fn get_data_burst(path: &str, count: usize, first_xid: i32) -> Vec<u8> {
    let mut bytes = Vec::new();
    for i in 0..count {
        bytes.extend_from_slice(&request_frame(first_xid + i as i32, &get_data(path, false)));
    }
    bytes
}

/// How a never-reading connection ended up.
#[derive(Debug, PartialEq, Eq)]
enum SlowOutcome {
    /// The server closed it (writes fail).
    Closed,
    /// Writes stopped completing: the server stopped reading, TCP pushes back.
    Blocked,
}

/// Keeps sending getData requests on a connection that never reads, until a write fails or
/// stalls for two seconds; panics if neither happens within [`SETTLE`].
async fn push_until_closed_or_blocked(stream: &mut TcpStream, path: &str) -> SlowOutcome {
    let deadline = Instant::now() + SETTLE;
    let chunk = get_data_burst(path, 1000, 1_000_000);
    while Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_secs(2), stream.write_all(&chunk)).await {
            Err(_) => return SlowOutcome::Blocked,
            Ok(Err(_)) => return SlowOutcome::Closed,
            Ok(Ok(())) => {}
        }
    }
    panic!("the server kept reading from a client that never reads for {SETTLE:?}");
}

/// The bound on a well-behaved client's round trip while slow readers are connected (below
/// [`IO_TIMEOUT`], so that this, not a read timeout, reports the failure).
const PROMPT: Duration = Duration::from_secs(4);

/// Ten round trips of a well-behaved client, each within [`PROMPT`]; on failure, the message
/// carries the server's `mntr` outstanding-request count when four-letter words are enabled.
async fn prompt_round_trips(conn: &mut Conn, tag: &str) {
    for i in 0..10 {
        let path = format!("/{tag}{i}");
        if tokio::time::timeout(PROMPT, conn.round_trip(&path))
            .await
            .is_err()
        {
            let addr = conn.stream.peer_addr().expect("peer");
            panic!(
                "round trip {i} of another client took over {PROMPT:?}; server outstanding \
                 requests: {}",
                outstanding_requests(addr).await
            );
        }
    }
}

/// `zk_outstanding_requests` from `mntr` (or why it is not known).
async fn outstanding_requests(addr: std::net::SocketAddr) -> String {
    let mut conn = Conn::open(addr).await;
    if conn.write_all(b"mntr").await.is_err() {
        return "unknown".into();
    }
    let text = String::from_utf8_lossy(&conn.expect_closed().await).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix("zk_outstanding_requests\t"))
        .map_or_else(|| format!("unknown ({})", text.trim()), str::to_string)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slow_reader_of_large_replies_is_bounded_and_others_are_served() {
    let _serial = SERIAL.lock().await;
    let mut config = test_config();
    config.four_letter_words = server::config::FourLetterWhitelist::parse("mntr");
    let server = start(config).await;
    let addr = server.client_address;
    let mut other = Conn::session(addr).await;
    let big = vec![0x5au8; 512 << 10];
    assert_eq!(other.call(&create("/big", &big, 0)).await.header.err, 0);
    let peak_before = peak_rss_kib();

    // 2,000 getData of a 512 KiB node (1 GiB of replies), never read.
    let slow = Conn::session(addr).await;
    let mut stream = slow.stream;
    let burst = get_data_burst("/big", 2000, 1);
    let sender = tokio::spawn(async move {
        let sent = tokio::time::timeout(SETTLE, stream.write_all(&burst)).await;
        (stream, sent)
    });

    // Meanwhile another client is answered promptly.
    prompt_round_trips(&mut other, "during").await;

    let (mut stream, sent) = sender.await.expect("sender task");
    let outcome = match sent {
        Err(_) => SlowOutcome::Blocked,
        Ok(Err(_)) => SlowOutcome::Closed,
        Ok(Ok(())) => push_until_closed_or_blocked(&mut stream, "/big").await,
    };
    println!("slow reader of 512 KiB replies: {outcome:?}");

    prompt_round_trips(&mut other, "after").await;
    let mut late = Conn::session(addr).await;
    late.round_trip("/late").await;

    // Memory: the replies asked for add up to 1 GiB; the server must hold far less.
    if let (Some(before), Some(after)) = (peak_before, peak_rss_kib()) {
        let grown_mib = after.saturating_sub(before) / 1024;
        println!("peak RSS grew by {grown_mib} MiB");
        assert!(grown_mib < 512, "peak RSS grew by {grown_mib} MiB");
    }
    drop(stream);
    server.shutdown().await;
}

/// Replies small enough that a never-reading client is not cut off (1,000 × 32 KiB is under the
/// per-connection output bound) but too large for the socket buffers: each such client keeps up
/// to a thousand requests unanswered. Several of them must not use up the server's global
/// outstanding-request slots and starve everyone else.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn several_slow_readers_of_medium_replies_do_not_starve_other_clients() {
    let _serial = SERIAL.lock().await;
    let mut config = test_config();
    config.four_letter_words = server::config::FourLetterWhitelist::parse("mntr");
    let server = start(config).await;
    let addr = server.client_address;
    let mut other = Conn::session(addr).await;
    let medium = vec![0x33u8; 32 << 10];
    assert_eq!(
        other.call(&create("/medium", &medium, 0)).await.header.err,
        0
    );

    let mut slow_streams = Vec::new();
    for _ in 0..3 {
        let slow = Conn::session(addr).await;
        let mut stream = slow.stream;
        let burst = get_data_burst("/medium", 2000, 1);
        slow_streams.push(tokio::spawn(async move {
            let sent = tokio::time::timeout(SETTLE, stream.write_all(&burst)).await;
            (stream, sent.is_ok_and(|r| r.is_ok()))
        }));
    }
    let mut streams = Vec::new();
    for task in slow_streams {
        streams.push(task.await.expect("sender task"));
    }
    // Give the server time to take in what it will take in from them.
    tokio::time::sleep(Duration::from_millis(500)).await;

    prompt_round_trips(&mut other, "during").await;
    let mut late = Conn::session(addr).await;
    prompt_round_trips(&mut late, "late").await;

    for (stream, _) in &mut streams {
        let outcome = push_until_closed_or_blocked(stream, "/medium").await;
        println!("slow reader of 32 KiB replies: {outcome:?}");
    }
    drop(streams);
    server.shutdown().await;
}
