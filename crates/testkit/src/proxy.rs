//! A fault-injecting TCP proxy for the links between ensemble members.
//!
//! A [`Proxy`] listens on a loopback port and forwards every connection to one target. The test
//! decides what the link does:
//!
//! | call | existing connections | new connections |
//! |---|---|---|
//! | [`Proxy::heal`] (the start state) | forwarded | forwarded |
//! | [`Proxy::block`] | closed at once | accepted and held: no bytes pass, nothing is closed |
//! | [`Proxy::block_refusing`] | closed at once | accepted and closed at once |
//! | [`Proxy::blackhole`] | kept open, every byte dropped | accepted and held |
//!
//! `heal` closes every connection that lost bytes (held or blackholed ones), because a byte
//! stream with a hole in it cannot be resumed; the ends reconnect, as they would after a real
//! partition long enough to break TCP. [`Proxy::set_delay`] delays every chunk by a fixed time in
//! both directions, in order, without limiting throughput.
//!
//! A proxy may also rewrite the first bytes a connecting peer sends
//! ([`Proxy::set_first_bytes_rewriter`]), for handshakes that carry an address the other side
//! connects back to (ZooKeeper's election handshake does; see
//! [`crate::ensemble::layout::zookeeper_election_handshake`]).
//!
//! Everything is bounded: at most [`CONNECTIONS_MAX`] connections at once (more are closed), and
//! each direction holds at most [`CHUNKS_IN_FLIGHT_MAX`] delayed chunks of at most
//! [`CHUNK_BYTES_MAX`] bytes (the reader waits when the writer is behind).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio::time::Instant;

/// Connections one proxy carries at once; more are closed on accept.
pub const CONNECTIONS_MAX: usize = 256;
/// Bytes read from one side in one go.
pub const CHUNK_BYTES_MAX: usize = 16 * 1024;
/// Chunks waiting for their delay to pass, per direction of a connection.
pub const CHUNKS_IN_FLIGHT_MAX: usize = 256;
/// Bytes a first-bytes rewriter may ask to see before it must decide.
pub const FIRST_BYTES_MAX: usize = 4096;
/// How long the proxy tries to reach its target for one connection.
const TARGET_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

const MODE_OPEN: u8 = 0;
const MODE_BLOCKED: u8 = 1;
const MODE_REFUSING: u8 = 2;
const MODE_BLACKHOLE: u8 = 3;

/// What a first-bytes rewriter decides about the bytes a peer sent first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rewrite {
    /// Not enough bytes to decide yet.
    NeedMore,
    /// Forward the bytes unchanged.
    Keep,
    /// Replace the first `consumed` bytes by `with`.
    Replace { consumed: usize, with: Vec<u8> },
}

/// Looks at the first bytes a peer sent on a new connection.
pub type FirstBytesRewriter = Arc<dyn Fn(&[u8]) -> Rewrite + Send + Sync>;

/// A proxy from `address` (loopback, a free port) to `target`. Dropping it closes the listener
/// and every connection.
pub struct Proxy {
    address: SocketAddr,
    target: SocketAddr,
    shared: Arc<Shared>,
    accept_task: AbortHandle,
}

struct Shared {
    mode: AtomicU8,
    delay_us: AtomicU64,
    connections: Mutex<Vec<Connection>>,
    accepted_count: AtomicUsize,
    rewriter: Mutex<Option<FirstBytesRewriter>>,
}

/// One accepted connection: its task, and whether it has lost bytes (then `heal` closes it).
struct Connection {
    task: AbortHandle,
    lossy: Arc<AtomicBool>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards to `target`. Must be called inside a tokio
    /// runtime; the proxy's tasks run on it.
    pub async fn start(target: SocketAddr) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let shared = Arc::new(Shared {
            mode: AtomicU8::new(MODE_OPEN),
            delay_us: AtomicU64::new(0),
            connections: Mutex::new(Vec::new()),
            accepted_count: AtomicUsize::new(0),
            rewriter: Mutex::new(None),
        });
        let accept_task =
            tokio::spawn(accept_loop(listener, target, shared.clone())).abort_handle();
        Ok(Proxy {
            address,
            target,
            shared,
            accept_task,
        })
    }

    /// Where peers connect.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Where the proxy forwards to.
    pub fn target(&self) -> SocketAddr {
        self.target
    }

    /// Connections accepted since the start (held and refused ones included).
    pub fn accepted_count(&self) -> usize {
        self.shared.accepted_count.load(Ordering::SeqCst)
    }

    /// Closes every connection now; new ones are accepted and held silent until [`Self::heal`].
    pub fn block(&self) {
        self.shared.mode.store(MODE_BLOCKED, Ordering::SeqCst);
        self.close_connections(|_| true);
    }

    /// Closes every connection now; new ones are closed as soon as they are accepted.
    pub fn block_refusing(&self) {
        self.shared.mode.store(MODE_REFUSING, Ordering::SeqCst);
        self.close_connections(|_| true);
    }

    /// Keeps connections open but drops every byte in both directions (a silent partition);
    /// new connections are held.
    pub fn blackhole(&self) {
        self.shared.mode.store(MODE_BLACKHOLE, Ordering::SeqCst);
        for connection in self.lock_connections().iter() {
            connection.lossy.store(true, Ordering::SeqCst);
        }
    }

    /// Forwards again; connections that lost bytes while blocked are closed.
    pub fn heal(&self) {
        self.shared.mode.store(MODE_OPEN, Ordering::SeqCst);
        self.close_connections(|c| c.lossy.load(Ordering::SeqCst));
    }

    /// Delays every chunk by `delay` in both directions (zero: no delay).
    pub fn set_delay(&self, delay: Duration) {
        let us = delay.as_micros().min(u128::from(u64::MAX)) as u64;
        self.shared.delay_us.store(us, Ordering::SeqCst);
    }

    /// Passes the first bytes of every later connection (peer to target) through `rewriter`
    /// before forwarding them (undelayed); it sees at most [`FIRST_BYTES_MAX`] bytes.
    pub fn set_first_bytes_rewriter(&self, rewriter: FirstBytesRewriter) {
        *self
            .shared
            .rewriter
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(rewriter);
    }

    fn lock_connections(&self) -> std::sync::MutexGuard<'_, Vec<Connection>> {
        self.shared
            .connections
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn close_connections(&self, which: impl Fn(&Connection) -> bool) {
        self.lock_connections().retain(|connection| {
            if which(connection) {
                connection.task.abort();
                false
            } else {
                true
            }
        });
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept_task.abort();
        self.close_connections(|_| true);
    }
}

async fn accept_loop(listener: TcpListener, target: SocketAddr, shared: Arc<Shared>) {
    // Ends when the proxy is dropped (the task is aborted) or the listener fails.
    while let Ok((peer, _)) = listener.accept().await {
        shared.accepted_count.fetch_add(1, Ordering::SeqCst);
        let mode = shared.mode.load(Ordering::SeqCst);
        if mode == MODE_REFUSING {
            drop(peer);
            continue;
        }
        let mut connections = shared
            .connections
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        connections.retain(|c| !c.task.is_finished());
        if connections.len() >= CONNECTIONS_MAX {
            drop(peer);
            continue;
        }
        let lossy = Arc::new(AtomicBool::new(mode != MODE_OPEN));
        let task = tokio::spawn(carry(peer, target, shared.clone(), lossy.clone()));
        connections.push(Connection {
            task: task.abort_handle(),
            lossy,
        });
    }
}

/// One connection: held silent if it was born lossy, otherwise forwarded both ways until either
/// side closes (then both are closed).
async fn carry(
    mut peer: TcpStream,
    target: SocketAddr,
    shared: Arc<Shared>,
    lossy: Arc<AtomicBool>,
) {
    if lossy.load(Ordering::SeqCst) {
        discard_until_closed(peer).await;
        return;
    }
    let rewriter = shared
        .rewriter
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone();
    let first = match rewriter {
        Some(rewriter) => match first_bytes(&mut peer, &*rewriter).await {
            Some(bytes) => bytes,
            None => return,
        },
        None => Vec::new(),
    };
    let Ok(Ok(mut server)) =
        tokio::time::timeout(TARGET_CONNECT_TIMEOUT, TcpStream::connect(target)).await
    else {
        return;
    };
    if server.write_all(&first).await.is_err() {
        return;
    }
    let _ = peer.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (peer_read, peer_write) = peer.into_split();
    let (server_read, server_write) = server.into_split();
    tokio::select! {
        () = pump(peer_read, server_write, &shared, &lossy) => {}
        () = pump(server_read, peer_write, &shared, &lossy) => {}
    }
}

/// Reads until `rewriter` decides, and returns the bytes to forward first; `None` if the peer
/// closed or failed before anything was decided.
async fn first_bytes(
    peer: &mut TcpStream,
    rewriter: &(dyn Fn(&[u8]) -> Rewrite + Send + Sync),
) -> Option<Vec<u8>> {
    let mut seen = Vec::new();
    let mut buf = vec![0u8; FIRST_BYTES_MAX];
    loop {
        match rewriter(&seen) {
            Rewrite::Keep => return Some(seen),
            Rewrite::Replace { consumed, with } => {
                let mut bytes = with;
                bytes.extend_from_slice(&seen[consumed.min(seen.len())..]);
                return Some(bytes);
            }
            Rewrite::NeedMore if seen.len() >= FIRST_BYTES_MAX => return Some(seen),
            Rewrite::NeedMore => {}
        }
        let room = FIRST_BYTES_MAX - seen.len();
        match peer.read(&mut buf[..room]).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
}

async fn discard_until_closed(mut peer: TcpStream) {
    let mut buf = vec![0u8; CHUNK_BYTES_MAX];
    while let Ok(n) = peer.read(&mut buf).await {
        if n == 0 {
            return;
        }
    }
}

/// One direction: chunks are read, stamped with the time they may be written, and written in
/// order once that time comes. Returns when either side fails or closes.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    shared: &Shared,
    lossy: &AtomicBool,
) {
    let (queue_tx, mut queue_rx) = mpsc::channel::<(Instant, Vec<u8>)>(CHUNKS_IN_FLIGHT_MAX);
    let reader = async move {
        let mut buf = vec![0u8; CHUNK_BYTES_MAX];
        loop {
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if shared.mode.load(Ordering::SeqCst) == MODE_BLACKHOLE {
                lossy.store(true, Ordering::SeqCst);
            }
            if lossy.load(Ordering::SeqCst) {
                continue;
            }
            let delay = Duration::from_micros(shared.delay_us.load(Ordering::SeqCst));
            if queue_tx
                .send((Instant::now() + delay, buf[..n].to_vec()))
                .await
                .is_err()
            {
                return;
            }
        }
    };
    let writer = async move {
        while let Some((due, chunk)) = queue_rx.recv().await {
            tokio::time::sleep_until(due).await;
            if lossy.load(Ordering::SeqCst) {
                continue;
            }
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
    };
    // The reader ends on EOF; the writer then drains what is queued and ends too.
    tokio::join!(reader, writer);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// An echo server on a free loopback port.
    async fn echo_server() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let (mut r, mut w) = socket.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        address
    }

    /// Sends `text` and reads the same number of bytes back, or None within `limit`.
    async fn round_trip(stream: &mut TcpStream, text: &[u8], limit: Duration) -> Option<Vec<u8>> {
        stream.write_all(text).await.ok()?;
        let mut back = vec![0u8; text.len()];
        match tokio::time::timeout(limit, stream.read_exact(&mut back)).await {
            Ok(Ok(_)) => Some(back),
            _ => None,
        }
    }

    /// True if the peer closed the connection within `limit`.
    async fn closed_within(stream: &mut TcpStream, limit: Duration) -> bool {
        let mut buf = [0u8; 16];
        matches!(
            tokio::time::timeout(limit, stream.read(&mut buf)).await,
            Ok(Ok(0)) | Ok(Err(_))
        )
    }

    const SHORT: Duration = Duration::from_millis(300);
    const LONG: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn forwards_both_ways() {
        let proxy = Proxy::start(echo_server().await).await.unwrap();
        let mut stream = TcpStream::connect(proxy.address()).await.unwrap();
        let big = vec![7u8; 3 * CHUNK_BYTES_MAX + 5];
        assert_eq!(round_trip(&mut stream, &big, LONG).await.unwrap(), big);
        assert_eq!(proxy.accepted_count(), 1);
    }

    #[tokio::test]
    async fn block_closes_connections_and_holds_new_ones_until_heal() {
        let proxy = Proxy::start(echo_server().await).await.unwrap();
        let mut before = TcpStream::connect(proxy.address()).await.unwrap();
        assert!(round_trip(&mut before, b"ping", LONG).await.is_some());
        proxy.block();
        assert!(
            closed_within(&mut before, LONG).await,
            "existing connection closed"
        );
        let mut during = TcpStream::connect(proxy.address()).await.unwrap();
        assert!(
            round_trip(&mut during, b"ping", SHORT).await.is_none(),
            "held"
        );
        proxy.heal();
        assert!(
            closed_within(&mut during, LONG).await,
            "held connection closed by heal"
        );
        let mut after = TcpStream::connect(proxy.address()).await.unwrap();
        assert_eq!(
            round_trip(&mut after, b"pong", LONG).await.unwrap(),
            b"pong"
        );
    }

    #[tokio::test]
    async fn block_refusing_closes_new_connections_at_once() {
        let proxy = Proxy::start(echo_server().await).await.unwrap();
        proxy.block_refusing();
        let mut during = TcpStream::connect(proxy.address()).await.unwrap();
        assert!(closed_within(&mut during, LONG).await);
        proxy.heal();
        let mut after = TcpStream::connect(proxy.address()).await.unwrap();
        assert!(round_trip(&mut after, b"x", LONG).await.is_some());
    }

    #[tokio::test]
    async fn blackhole_keeps_connections_open_but_silent() {
        let proxy = Proxy::start(echo_server().await).await.unwrap();
        let mut stream = TcpStream::connect(proxy.address()).await.unwrap();
        assert!(round_trip(&mut stream, b"one", LONG).await.is_some());
        proxy.blackhole();
        assert!(
            round_trip(&mut stream, b"two", SHORT).await.is_none(),
            "silent"
        );
        proxy.heal();
        assert!(
            closed_within(&mut stream, LONG).await,
            "a lossy stream is closed on heal"
        );
        let mut after = TcpStream::connect(proxy.address()).await.unwrap();
        assert!(round_trip(&mut after, b"three", LONG).await.is_some());
    }

    #[tokio::test]
    async fn delay_applies_each_way_and_keeps_order() {
        let proxy = Proxy::start(echo_server().await).await.unwrap();
        proxy.set_delay(Duration::from_millis(100));
        let mut stream = TcpStream::connect(proxy.address()).await.unwrap();
        let started = std::time::Instant::now();
        let text: Vec<u8> = (0..200u8).collect();
        for chunk in text.chunks(20) {
            stream.write_all(chunk).await.unwrap();
        }
        let mut back = vec![0u8; text.len()];
        stream.read_exact(&mut back).await.unwrap();
        assert_eq!(back, text);
        assert!(
            started.elapsed() >= Duration::from_millis(200),
            "{:?}",
            started.elapsed()
        );
        proxy.set_delay(Duration::ZERO);
        assert!(round_trip(&mut stream, b"fast", SHORT).await.is_some());
    }

    #[tokio::test]
    async fn rewrites_the_first_bytes_once() {
        let proxy = Proxy::start(echo_server().await).await.unwrap();
        proxy.set_first_bytes_rewriter(Arc::new(|seen: &[u8]| {
            if seen.len() < 5 {
                Rewrite::NeedMore
            } else if seen.starts_with(b"hello") {
                Rewrite::Replace {
                    consumed: 5,
                    with: b"HI".to_vec(),
                }
            } else {
                Rewrite::Keep
            }
        }));
        let mut stream = TcpStream::connect(proxy.address()).await.unwrap();
        stream.write_all(b"hel").await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        stream.write_all(b"lo world").await.unwrap();
        let mut back = vec![0u8; 8];
        stream.read_exact(&mut back).await.unwrap();
        assert_eq!(back, b"HI world");
        assert_eq!(
            round_trip(&mut stream, b"hello", LONG).await.unwrap(),
            b"hello",
            "only the first bytes"
        );
        let mut other = TcpStream::connect(proxy.address()).await.unwrap();
        assert_eq!(
            round_trip(&mut other, b"other", LONG).await.unwrap(),
            b"other"
        );
    }

    #[tokio::test]
    async fn drop_closes_everything() {
        let proxy = Proxy::start(echo_server().await).await.unwrap();
        let address = proxy.address();
        let mut stream = TcpStream::connect(address).await.unwrap();
        assert!(round_trip(&mut stream, b"x", LONG).await.is_some());
        drop(proxy);
        assert!(closed_within(&mut stream, LONG).await);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            TcpStream::connect(address).await.is_err(),
            "listener closed"
        );
    }
}
