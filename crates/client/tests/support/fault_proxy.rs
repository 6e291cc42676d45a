//! A TCP proxy between a client and a server that a test can use to break connections
//! (`cut`: close every connection now) or to silence them (`silence`: keep them open but pass
//! no bytes either way, as a hung server or a partition would).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

#[derive(Clone)]
pub struct FaultProxy {
    pub address: SocketAddr,
    shared: Arc<Shared>,
}

struct Shared {
    target: Mutex<SocketAddr>,
    connections: Mutex<Vec<AbortHandle>>,
    silent: AtomicBool,
    replies_silent: AtomicBool,
    refusing: AtomicBool,
    /// The first bytes each connection's client sent (its ConnectRequest).
    first_bytes: Mutex<Vec<Vec<u8>>>,
    accepted: std::sync::atomic::AtomicUsize,
    /// Bytes from clients dropped while silenced (how a test knows its requests were sent).
    silenced_request_bytes: std::sync::atomic::AtomicUsize,
    /// Bytes from servers dropped while silenced, in the order read (how a test knows a
    /// notification reached the proxy and was lost, rather than still being on its way).
    silenced_replies: Mutex<Vec<u8>>,
}

impl FaultProxy {
    pub async fn start(target: SocketAddr) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("addr");
        let shared = Arc::new(Shared {
            target: Mutex::new(target),
            connections: Mutex::new(Vec::new()),
            silent: AtomicBool::new(false),
            replies_silent: AtomicBool::new(false),
            refusing: AtomicBool::new(false),
            first_bytes: Mutex::new(Vec::new()),
            accepted: Default::default(),
            silenced_request_bytes: Default::default(),
            silenced_replies: Default::default(),
        });
        let accept_shared = shared.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                accept_shared.accepted.fetch_add(1, Ordering::SeqCst);
                if accept_shared.refusing.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let target = *accept_shared.target.lock().unwrap();
                let shared = accept_shared.clone();
                let task = tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(target).await else {
                        return;
                    };
                    let (cr, cw) = client.into_split();
                    let (sr, sw) = server.into_split();
                    tokio::join!(
                        pump(cr, sw, shared.clone(), false),
                        pump(sr, cw, shared, true)
                    );
                });
                accept_shared
                    .connections
                    .lock()
                    .unwrap()
                    .push(task.abort_handle());
            }
        });
        FaultProxy { address, shared }
    }

    /// Closes every connection through the proxy now (new ones are still accepted).
    pub fn cut(&self) {
        for handle in self.shared.connections.lock().unwrap().drain(..) {
            handle.abort();
        }
    }

    /// Stops (or resumes) passing bytes on every connection, without closing any.
    pub fn silence(&self, silent: bool) {
        self.shared.silent.store(silent, Ordering::SeqCst);
    }

    /// Stops (or resumes) passing the server's bytes to the client only: requests still
    /// arrive and execute, their answers are lost.
    pub fn silence_replies(&self, silent: bool) {
        self.shared.replies_silent.store(silent, Ordering::SeqCst);
    }

    /// While refusing, new connections are closed as soon as they are accepted.
    pub fn refuse(&self, refusing: bool) {
        self.shared.refusing.store(refusing, Ordering::SeqCst);
    }

    /// Points new connections at another server.
    pub fn retarget(&self, target: SocketAddr) {
        *self.shared.target.lock().unwrap() = target;
    }

    /// The ConnectRequest of every connection so far, in order (decoded from the first bytes
    /// the client sent).
    pub fn connect_requests(&self) -> Vec<proto::ConnectRequest> {
        use proto::Record;
        self.shared
            .first_bytes
            .lock()
            .unwrap()
            .iter()
            .filter_map(|bytes| {
                let len = i32::from_be_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
                proto::ConnectRequest::from_bytes(bytes.get(4..4 + len)?).ok()
            })
            .collect()
    }

    /// Bytes clients sent that were dropped while the proxy was silenced.
    pub fn silenced_request_bytes(&self) -> usize {
        self.shared.silenced_request_bytes.load(Ordering::SeqCst)
    }

    /// Whether the server's bytes dropped while silenced hold `needle` (say, the header of a
    /// notification with a known zxid).
    pub fn silenced_replies_contain(&self, needle: &[u8]) -> bool {
        let dropped = self.shared.silenced_replies.lock().unwrap();
        dropped.windows(needle.len()).any(|window| window == needle)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }
}

/// The most bytes of dropped replies kept for `silenced_replies_contain`.
const SILENCED_REPLIES_LIMIT: usize = 16 * 1024 * 1024;

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    shared: Arc<Shared>,
    is_reply: bool,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut first = !is_reply;
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if first {
            shared.first_bytes.lock().unwrap().push(buf[..n].to_vec());
            first = false;
        }
        // While silenced, bytes read are dropped: the peer sees a hung connection.
        if shared.silent.load(Ordering::SeqCst)
            || (is_reply && shared.replies_silent.load(Ordering::SeqCst))
        {
            if is_reply {
                let mut dropped = shared.silenced_replies.lock().unwrap();
                // A test's silences are short; the cap only keeps a runaway one bounded.
                if dropped.len() + n <= SILENCED_REPLIES_LIMIT {
                    dropped.extend_from_slice(&buf[..n]);
                }
            } else if shared.silent.load(Ordering::SeqCst) {
                shared.silenced_request_bytes.fetch_add(n, Ordering::SeqCst);
            }
            continue;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
