//! Running the peer connections. One task per peer owns that peer's connection life cycle,
//! so everything it reports — up, frames, down — reaches the host in order.

use super::framing::{read_peer_frame, write_frame, FRAME_MAX};
use super::handshake;
use super::peer_frame::PeerFrame;
use super::tls::{PeerStream, QuorumTls};
use super::Sid;
use crate::shared_socket::DirectPath;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, Notify};

/// Frames queued to one peer at most (then the connection is broken, see [`super`]).
pub const PEER_QUEUE_FRAMES: usize = 16_384;
const DIAL_BACKOFF_MIN: Duration = Duration::from_millis(20);
const DIAL_BACKOFF_MAX: Duration = Duration::from_millis(500);

#[derive(Debug, Clone)]
pub struct TransportConfig {
    pub me: Sid,
    /// Where this server accepts peers (its quorum port).
    pub listen: SocketAddr,
    /// Every other member and its quorum address.
    pub peers: BTreeMap<Sid, SocketAddr>,
    /// Frames queued per peer at most ([`PEER_QUEUE_FRAMES`] unless a test needs fewer).
    pub queue_frames: usize,
}

/// What the transport tells its host, in order per peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerEvent {
    Up(Sid),
    Frame(Sid, PeerFrame),
    /// The connection broke or was closed; nothing more comes from it.
    Down(Sid),
}

/// One queued item: frames ready to go (length prefixes included, a turn's worth), or one
/// frame's payload still being made elsewhere (a snapshot being encoded). Items after a
/// pending one wait for it, so the peer sees them in the order they were queued.
pub enum Outgoing {
    Framed(Vec<u8>),
    Pending(oneshot::Receiver<Vec<u8>>),
}

/// The live connection to one peer, if any.
#[derive(Default)]
struct Slot {
    tx: Option<mpsc::Sender<Outgoing>>,
    /// The core's direct way onto a plaintext connection.
    direct: Option<DirectPath>,
    /// Items queued on `tx` and not yet written by the connection task.
    backlog: Arc<AtomicUsize>,
    close: Arc<Notify>,
}

pub struct Transport {
    slots: Slots,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    pub local_addr: SocketAddr,
    /// Where the accept loop hands each member's inbound connections; grows when a
    /// reconfiguration adds members.
    inbound: Inbound,
    me: Sid,
    queue_frames: usize,
    events: mpsc::Sender<PeerEvent>,
    tls: Option<QuorumTls>,
    /// Frames of the core's current turn, per peer, framed; they leave at [`Transport::flush`].
    turn: HashMap<Sid, Vec<u8>, tree::keyed_hasher::KeyedHasher>,
}

/// Each peer's connection slot.
type Slots = HashMap<Sid, Arc<Mutex<Slot>>, tree::keyed_hasher::KeyedHasher>;

type Inbound = Arc<Mutex<HashMap<Sid, mpsc::Sender<PeerStream>>>>;

impl Transport {
    /// Binds the listen address and starts one task per peer. Events go to `events`, which
    /// should be bounded: a slow host slows the peers down (TCP backpressure) instead of
    /// growing memory.
    pub async fn start(
        config: TransportConfig,
        events: mpsc::Sender<PeerEvent>,
    ) -> std::io::Result<Transport> {
        Self::start_with_tls(config, events, None).await
    }

    /// [`Transport::start`], every connection in mutual TLS when `tls` is given.
    pub async fn start_with_tls(
        config: TransportConfig,
        events: mpsc::Sender<PeerEvent>,
        tls: Option<QuorumTls>,
    ) -> std::io::Result<Transport> {
        let listener = TcpListener::bind(config.listen).await?;
        let local_addr = listener.local_addr()?;
        let inbound: Inbound = Arc::new(Mutex::new(HashMap::new()));
        let mut transport = Transport {
            slots: HashMap::default(),
            tasks: Vec::new(),
            local_addr,
            inbound: inbound.clone(),
            me: config.me,
            queue_frames: config.queue_frames.max(1),
            events,
            tls: tls.clone(),
            turn: HashMap::default(),
        };
        for (&sid, &addr) in &config.peers {
            transport.add_peer(sid, addr);
        }
        transport
            .tasks
            .push(tokio::spawn(accept_loop(listener, config.me, inbound, tls)));
        Ok(transport)
    }

    /// Starts reaching `sid` at `addr` (a member a reconfiguration added); a member already
    /// known keeps its connection.
    pub fn add_peer(&mut self, sid: Sid, addr: SocketAddr) {
        if sid == self.me || self.slots.contains_key(&sid) {
            return;
        }
        let slot = Arc::new(Mutex::new(Slot::default()));
        self.slots.insert(sid, slot.clone());
        let (inbound_tx, inbound_rx) = mpsc::channel(1);
        self.inbound
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(sid, inbound_tx);
        let dial = (self.me < sid).then_some(addr);
        self.tasks.push(tokio::spawn(peer_task(
            self.me,
            sid,
            dial,
            self.queue_frames,
            inbound_rx,
            slot,
            self.events.clone(),
            self.tls.clone(),
        )));
    }

    /// Adds a frame for `to` to this turn; it leaves at the next [`Transport::flush`].
    /// Without a connection then, it is dropped (the host has been told the peer is down); if
    /// the peer's queue is full, the connection is broken.
    pub fn send(&mut self, to: Sid, frame: Vec<u8>) {
        if frame.len() > FRAME_MAX {
            tracing::error!(
                peer = to,
                bytes = frame.len(),
                "a frame over the peer frame limit; breaking the connection"
            );
            self.disconnect(to);
            return;
        }
        let bytes = self.turn.entry(to).or_default();
        bytes.extend_from_slice(&(frame.len() as u32).to_be_bytes());
        bytes.extend_from_slice(&frame);
    }

    /// Queues a frame that is still being made, after this turn's frames for `to`: it goes
    /// out when `frame` delivers it, and everything queued after it waits. If the sender is
    /// dropped, the connection is broken (the peer would otherwise miss a message).
    pub fn send_later(&mut self, to: Sid, frame: oneshot::Receiver<Vec<u8>>) {
        if let Some(bytes) = self.turn.get_mut(&to) {
            flush_to(to, bytes, &self.slots);
        }
        if let Some(slot) = self.slots.get(&to) {
            queue(to, &mut lock(slot), Outgoing::Pending(frame));
        }
    }

    /// Sends this turn's frames: written at once by the caller where the connection is
    /// plaintext and its task has nothing unwritten (no queue hop, no task wake-up), queued
    /// as one item otherwise or for what the socket did not take.
    pub fn flush(&mut self) {
        for (&to, bytes) in self.turn.iter_mut() {
            flush_to(to, bytes, &self.slots);
        }
    }

    /// A handle that tells when every frame queued so far has left for its peer.
    pub fn queues(&self) -> PeerQueues {
        PeerQueues(self.slots.values().cloned().collect())
    }

    /// Breaks the connection to `peer` (it will be re-established); this turn's frames for
    /// it are dropped with it.
    pub fn disconnect(&mut self, peer: Sid) {
        if let Some(bytes) = self.turn.get_mut(&peer) {
            bytes.clear();
        }
        if let Some(slot) = self.slots.get(&peer) {
            let mut slot = lock(slot);
            slot.tx = None;
            slot.close.notify_one();
        }
    }

    /// Stops every connection task (also done on drop).
    pub fn stop(self) {}

    /// Stops every connection task and waits until they are gone, so the listen port is free
    /// and no connection of this transport can still be accepted or served.
    pub async fn shutdown(mut self) {
        let tasks = std::mem::take(&mut self.tasks);
        for t in &tasks {
            t.abort();
        }
        for t in tasks {
            let _ = t.await;
        }
    }
}

impl Drop for Transport {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// The peers' outbound queues, for a server about to exit (see [`Transport::queues`]).
pub struct PeerQueues(Vec<Arc<Mutex<Slot>>>);

impl std::fmt::Debug for PeerQueues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PeerQueues({} peers)", self.0.len())
    }
}

impl PeerQueues {
    /// Waits until every live connection's queue is empty (its writer took every frame) and a
    /// moment more for the writes themselves, or until `within` has passed: a leader that
    /// handed over exits only once its ABDICATE is on its way to every follower.
    pub async fn drained(&self, within: Duration) {
        let deadline = tokio::time::Instant::now() + within;
        let empty = |slot: &Arc<Mutex<Slot>>| {
            let slot = lock(slot);
            slot.tx.is_none() || slot.backlog.load(Ordering::Acquire) == 0
        };
        while !self.0.iter().all(empty) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Sends `to` the frames of this turn in `bytes` (see [`Transport::flush`]), leaving `bytes`
/// empty.
fn flush_to(to: Sid, bytes: &mut Vec<u8>, slots: &Slots) {
    if bytes.is_empty() {
        return;
    }
    let Some(slot) = slots.get(&to) else {
        tracing::warn!(
            peer = to,
            "dropping frames for a server that is not a member"
        );
        bytes.clear();
        return;
    };
    let mut slot = lock(slot);
    if slot.tx.is_none() {
        bytes.clear();
        return;
    }
    let written = match &slot.direct {
        Some(direct) if direct.is_clear() => direct.write_now(bytes),
        _ => 0,
    };
    if written == bytes.len() {
        // All out: the buffer (and its allocation) serves the next turn.
        bytes.clear();
        return;
    }
    let rest = if written == 0 {
        std::mem::take(bytes)
    } else {
        let rest = bytes[written..].to_vec();
        bytes.clear();
        rest
    };
    queue(to, &mut slot, Outgoing::Framed(rest));
}

/// Hands an item to the connection task; a full queue breaks the connection.
fn queue(to: Sid, slot: &mut Slot, item: Outgoing) {
    let Some(tx) = &slot.tx else {
        return;
    };
    // Counted before the task can see it, so the task's count never goes below zero and the
    // core does not write past it.
    slot.backlog.fetch_add(1, Ordering::AcqRel);
    if let Err(e) = tx.try_send(item) {
        slot.backlog.fetch_sub(1, Ordering::AcqRel);
        if let mpsc::error::TrySendError::Full(_) = e {
            tracing::warn!(
                peer = to,
                "peer is not keeping up (outbound queue full); breaking the connection"
            );
            slot.tx = None;
            slot.direct = None;
            slot.close.notify_one();
        }
    }
}

fn lock(slot: &Mutex<Slot>) -> std::sync::MutexGuard<'_, Slot> {
    slot.lock().unwrap_or_else(|p| p.into_inner())
}

async fn accept_loop(listener: TcpListener, me: Sid, inbound: Inbound, tls: Option<QuorumTls>) {
    // Handshakes run beside the loop but belong to it: when the transport stops, a handshake
    // still in flight must not complete and hand a dialer a connection nobody serves.
    let mut handshakes = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            Some(_) = handshakes.join_next(), if !handshakes.is_empty() => continue,
        };
        let Ok((stream, addr)) = accepted else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let (inbound, tls) = (inbound.clone(), tls.clone());
        handshakes.spawn(async move {
            let _ = stream.set_nodelay(true);
            let is_member = |sid| {
                inbound
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .contains_key(&sid)
            };
            let accepted = match tls {
                None => {
                    let mut stream = stream;
                    handshake::accept(&mut stream, me, is_member)
                        .await
                        .map(|sid| (sid, PeerStream::Plain(stream)))
                        .map_err(|e| e.to_string())
                }
                Some(tls) => accept_tls(&tls, addr, stream, me, is_member).await,
            };
            match accepted {
                Ok((sid, stream)) => {
                    let tx = inbound
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get(&sid)
                        .cloned();
                    if let Some(tx) = tx {
                        let _ = tx.send(stream).await;
                    }
                }
                Err(e) => tracing::warn!(%addr, error = %e, "refused a peer connection"),
            }
        });
    }
}

/// The acceptor's TLS handshake, then the meerkat one inside it.
async fn accept_tls(
    tls: &QuorumTls,
    addr: SocketAddr,
    stream: TcpStream,
    me: Sid,
    is_member: impl Fn(Sid) -> bool,
) -> Result<(Sid, PeerStream), String> {
    let mut stream = tokio::time::timeout(handshake::HANDSHAKE_TIMEOUT, tls.accept(addr, stream))
        .await
        .map_err(|_| "TLS handshake not finished in time".to_string())?
        .map_err(|e| format!("TLS: {e}"))?;
    let sid = handshake::accept(&mut stream, me, is_member)
        .await
        .map_err(|e| e.to_string())?;
    Ok((sid, PeerStream::Tls(stream)))
}

/// The dialer's TLS handshake, then the meerkat one inside it.
async fn dial_tls(
    tls: &QuorumTls,
    addr: SocketAddr,
    stream: TcpStream,
    me: Sid,
    sid: Sid,
) -> Result<PeerStream, String> {
    let mut stream = tokio::time::timeout(handshake::HANDSHAKE_TIMEOUT, tls.connect(addr, stream))
        .await
        .map_err(|_| "TLS handshake not finished in time".to_string())?
        .map_err(|e| format!("TLS: {e}"))?;
    handshake::dial(&mut stream, me, sid)
        .await
        .map_err(|e| e.to_string())?;
    Ok(PeerStream::Tls(stream))
}

/// Owns the connection to `sid` for the server's lifetime: establish, serve, report, repeat.
#[allow(clippy::too_many_arguments)] // the task's whole state, passed once at spawn
async fn peer_task(
    me: Sid,
    sid: Sid,
    dial: Option<SocketAddr>,
    queue: usize,
    mut inbound: mpsc::Receiver<PeerStream>,
    slot: Arc<Mutex<Slot>>,
    events: mpsc::Sender<PeerEvent>,
    tls: Option<QuorumTls>,
) {
    let mut next: Option<PeerStream> = None;
    loop {
        let stream = match next.take() {
            Some(s) => s,
            None => match dial {
                Some(addr) => dial_until_up(me, sid, addr, tls.as_ref()).await,
                None => match inbound.recv().await {
                    Some(s) => s,
                    None => return,
                },
            },
        };
        let (tx, rx) = mpsc::channel(queue);
        let (read_half, write_half, direct) = stream.split();
        let backlog = Arc::new(AtomicUsize::new(0));
        let close = {
            let mut s = lock(&slot);
            s.tx = Some(tx);
            s.direct = direct.map(|socket| DirectPath::new(socket, backlog.clone()));
            s.backlog = backlog.clone();
            s.close = Arc::new(Notify::new());
            s.close.clone()
        };
        if events.send(PeerEvent::Up(sid)).await.is_err() {
            return;
        }
        tracing::info!(peer = sid, "peer connection up");
        let halves = (read_half, write_half);
        next = serve(sid, halves, rx, &backlog, &close, &mut inbound, &events).await;
        {
            let mut s = lock(&slot);
            s.tx = None;
            s.direct = None;
        }
        tracing::info!(peer = sid, "peer connection down");
        if events.send(PeerEvent::Down(sid)).await.is_err() {
            return;
        }
    }
}

async fn dial_until_up(me: Sid, sid: Sid, addr: SocketAddr, tls: Option<&QuorumTls>) -> PeerStream {
    let mut backoff = DIAL_BACKOFF_MIN;
    loop {
        if let Ok(mut stream) = TcpStream::connect(addr).await {
            let _ = stream.set_nodelay(true);
            let dialed = match tls {
                None => handshake::dial(&mut stream, me, sid)
                    .await
                    .map(|()| PeerStream::Plain(stream))
                    .map_err(|e| e.to_string()),
                Some(tls) => dial_tls(tls, addr, stream, me, sid).await,
            };
            match dialed {
                Ok(stream) => return stream,
                Err(e) => tracing::warn!(peer = sid, %addr, error = %e, "peer handshake failed"),
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(DIAL_BACKOFF_MAX);
    }
}

/// Runs one connection until it breaks, is closed, or a newer one from the same peer arrives
/// (returned, to be served next).
async fn serve(
    sid: Sid,
    (read_half, write_half): (
        Box<dyn tokio::io::AsyncRead + Send + Unpin>,
        Box<dyn tokio::io::AsyncWrite + Send + Unpin>,
    ),
    mut rx: mpsc::Receiver<Outgoing>,
    backlog: &AtomicUsize,
    close: &Notify,
    inbound: &mut mpsc::Receiver<PeerStream>,
    events: &mpsc::Sender<PeerEvent>,
) -> Option<PeerStream> {
    // Buffered: under load many frames arrive per read, not one read per length and body.
    let mut read_half = tokio::io::BufReader::with_capacity(64 << 10, read_half);
    let writer = async move {
        let mut w = BufWriter::with_capacity(64 << 10, write_half);
        // Items taken and not yet flushed to the socket.
        let mut taken = 0;
        while let Some(outgoing) = rx.recv().await {
            taken += 1;
            let frame = match outgoing {
                Outgoing::Framed(bytes) => {
                    if w.write_all(&bytes).await.is_err() {
                        return;
                    }
                    None
                }
                Outgoing::Pending(made) => {
                    // What is buffered goes out now, not after the wait.
                    if w.flush().await.is_err() {
                        return;
                    }
                    match made.await {
                        Ok(frame) => Some(frame),
                        Err(_) => {
                            tracing::warn!(
                                peer = sid,
                                "a frame being made was abandoned; breaking the connection"
                            );
                            return;
                        }
                    }
                }
            };
            if let Some(frame) = frame {
                if write_frame(&mut w, &frame).await.is_err() {
                    return;
                }
            }
            // Batch what is already queued into one write; once it is out, the core may
            // write directly again.
            if rx.is_empty() {
                if w.flush().await.is_err() {
                    return;
                }
                backlog.fetch_sub(taken, Ordering::AcqRel);
                taken = 0;
            }
        }
    };
    let reader = async {
        loop {
            match read_peer_frame(&mut read_half).await {
                Ok(frame) => {
                    if events.send(PeerEvent::Frame(sid, frame)).await.is_err() {
                        return;
                    }
                }
                Err(e) => {
                    tracing::debug!(peer = sid, error = %e, "peer connection ended");
                    return;
                }
            }
        }
    };
    tokio::select! {
        _ = writer => None,
        _ = reader => None,
        _ = close.notified() => None,
        newer = inbound.recv() => newer,
    }
}
