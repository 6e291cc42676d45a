//! A load generator that outlives server failures (paper Fig. 8). Each client keeps `window`
//! requests in flight on one server. When its connection breaks, or a reply takes longer than
//! [`REPLY_TIMEOUT`], it forgets what was in flight (counted as lost) and opens a new session
//! on the next server, round-robin, until one accepts, pausing between failed attempts with a
//! backoff as real clients do (a storm of reconnections would slow the servers it measures).
//! Completed requests are counted by the time they completed, in [`BIN`]-wide bins, so the
//! timeline shows each dip and recovery. The clients run until the scenario calls
//! [`Marks::stop`], so the failures' schedule can follow what actually happened.
//!
//! It also answers the question the failures scenario asks: how long after the leader was
//! killed did the first write that was sent after the kill succeed?

use crate::load::MakeRequest;
use crate::wire::{encode_request, Session};
use proto::request::Request;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

/// Width of one timeline bin.
pub const BIN: Duration = Duration::from_millis(250);

/// A reply slower than this means the server is gone or stuck: the client moves on.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(3);

/// Longest wait for a TCP connect plus the session handshake.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Pause after a first failed connection attempt; doubled after each further failure up to
/// [`RETRY_PAUSE_MAX`], so clients do not spin while no server serves.
const RETRY_PAUSE_MIN: Duration = Duration::from_millis(10);
const RETRY_PAUSE_MAX: Duration = Duration::from_millis(160);

/// Most timeline bins kept (an hour), so a run that is never stopped cannot grow without bound.
const BINS_MAX: usize = 3600 * 4;

/// Sessions the generator opens are abandoned when their server dies; they expire this soon.
const SESSION_TIMEOUT_MS: i32 = 10_000;

/// Instants the scenario shares with its clients.
pub struct Marks {
    /// Where the timeline starts.
    pub start: Instant,
    /// When the leader was killed, once it was.
    pub leader_killed: OnceLock<Instant>,
    /// When the clients were told to stop.
    stopped: OnceLock<Instant>,
}

impl Marks {
    pub fn new() -> Marks {
        Marks::after(Duration::ZERO)
    }

    /// A timeline that starts `warmup` from now (clients start at once; what completes before
    /// the start is not counted).
    pub fn after(warmup: Duration) -> Marks {
        Marks {
            start: Instant::now() + warmup,
            leader_killed: OnceLock::new(),
            stopped: OnceLock::new(),
        }
    }

    /// Ends the timeline: clients send nothing more, and what completes later is not counted.
    pub fn stop(&self) {
        let _ = self.stopped.set(Instant::now());
    }

    fn stopping(&self) -> bool {
        self.stopped.get().is_some()
    }

    /// Seconds since the start.
    pub fn seconds(&self, at: Instant) -> f64 {
        at.duration_since(self.start).as_secs_f64()
    }
}

impl Default for Marks {
    fn default() -> Self {
        Marks::new()
    }
}

#[derive(Clone)]
pub struct FailoverSpec {
    pub clients: usize,
    pub window: usize,
    pub make: MakeRequest,
}

/// What the clients measured together.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FailoverResult {
    pub bin_ms: u64,
    /// From the start of the timeline to the stop.
    pub seconds: f64,
    /// Completed requests per second in each bin.
    pub ops_per_sec: Vec<f64>,
    pub completed: u64,
    /// Requests answered with an error code.
    pub errors: u64,
    /// Requests in flight when their connection broke or timed out.
    pub lost: u64,
    /// New sessions opened after a connection broke.
    pub reconnects: u64,
    /// From the leader's kill to the first successful write sent after it.
    pub leader_kill_to_write_ms: Option<f64>,
    /// Connections that broke (or timed out) after the leader's kill: what clients see as
    /// Disconnected.
    pub disconnects_after_leader_kill: u64,
    /// The longest time one client went without a successful write, across the leader's
    /// kill: over every client, and over the clients whose connection survived it.
    pub longest_write_gap_ms: Option<f64>,
    pub longest_write_gap_kept_ms: Option<f64>,
}

impl FailoverResult {
    /// Mean throughput over the bins from `from` to `to` seconds.
    pub fn mean_ops_per_sec(&self, from: f64, to: f64) -> f64 {
        let bin = self.bin_ms as f64 / 1000.0;
        let picked: Vec<f64> = self
            .ops_per_sec
            .iter()
            .enumerate()
            .filter(|(i, _)| *i as f64 * bin >= from && (*i + 1) as f64 * bin <= to)
            .map(|(_, &v)| v)
            .collect();
        if picked.is_empty() {
            0.0
        } else {
            picked.iter().sum::<f64>() / picked.len() as f64
        }
    }
}

/// What one client measured.
struct ClientTally {
    bins: Vec<u64>,
    completed: u64,
    errors: u64,
    lost: u64,
    reconnects: u64,
    first_write_after_kill: Option<Instant>,
    disconnects_after_kill: u64,
    last_write_ok: Option<Instant>,
    longest_gap_after_kill: Option<Duration>,
}

/// Runs `spec` against `addrs` (client `c` starts on server `c % n`) from now until
/// [`Marks::stop`] is called.
pub async fn run(
    addrs: &[SocketAddr],
    spec: &FailoverSpec,
    marks: Arc<Marks>,
) -> anyhow::Result<FailoverResult> {
    anyhow::ensure!(!addrs.is_empty(), "no server to load");
    let addrs: Arc<[SocketAddr]> = addrs.into();
    let tasks: Vec<_> = (0..spec.clients)
        .map(|c| {
            let (addrs, marks, spec) = (addrs.clone(), marks.clone(), spec.clone());
            tokio::spawn(async move { client(&addrs, c, &spec, &marks).await })
        })
        .collect();
    let mut total: Vec<u64> = Vec::new();
    let mut result = FailoverResult {
        bin_ms: BIN.as_millis() as u64,
        seconds: 0.0,
        ops_per_sec: Vec::new(),
        completed: 0,
        errors: 0,
        lost: 0,
        reconnects: 0,
        leader_kill_to_write_ms: None,
        disconnects_after_leader_kill: 0,
        longest_write_gap_ms: None,
        longest_write_gap_kept_ms: None,
    };
    let mut first_write: Option<Instant> = None;
    for task in tasks {
        let tally = task.await??;
        if total.len() < tally.bins.len() {
            total.resize(tally.bins.len(), 0);
        }
        for (t, n) in total.iter_mut().zip(&tally.bins) {
            *t += n;
        }
        result.completed += tally.completed;
        result.errors += tally.errors;
        result.lost += tally.lost;
        result.reconnects += tally.reconnects;
        result.disconnects_after_leader_kill += tally.disconnects_after_kill;
        if let Some(gap) = tally.longest_gap_after_kill {
            let ms = gap.as_secs_f64() * 1e3;
            let max = |v: Option<f64>| Some(v.map_or(ms, |v: f64| v.max(ms)));
            result.longest_write_gap_ms = max(result.longest_write_gap_ms);
            if tally.disconnects_after_kill == 0 {
                result.longest_write_gap_kept_ms = max(result.longest_write_gap_kept_ms);
            }
        }
        first_write = match (first_write, tally.first_write_after_kill) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    if let Some(stopped) = marks.stopped.get() {
        result.seconds = marks.seconds(*stopped);
        // The last bin is only partly inside the timeline.
        total.truncate((result.seconds * 1000.0) as usize / BIN.as_millis() as usize);
    }
    let per_second = 1000.0 / BIN.as_millis() as f64;
    result.ops_per_sec = total.iter().map(|&n| n as f64 * per_second).collect();
    if let (Some(killed), Some(write)) = (marks.leader_killed.get(), first_write) {
        result.leader_kill_to_write_ms = Some(write.duration_since(*killed).as_secs_f64() * 1e3);
    }
    Ok(result)
}

/// One client: sessions on server after server until the end.
async fn client(
    addrs: &[SocketAddr],
    c: usize,
    spec: &FailoverSpec,
    marks: &Marks,
) -> anyhow::Result<ClientTally> {
    let mut tally = ClientTally {
        bins: Vec::new(),
        completed: 0,
        errors: 0,
        lost: 0,
        reconnects: 0,
        first_write_after_kill: None,
        disconnects_after_kill: 0,
        last_write_ok: None,
        longest_gap_after_kill: None,
    };
    let mut server = c % addrs.len();
    let mut counter = 0u64;
    let mut connected_before = false;
    let mut pause = RETRY_PAUSE_MIN;
    while !marks.stopping() {
        let opened = tokio::time::timeout(
            CONNECT_TIMEOUT,
            Session::open(addrs[server], SESSION_TIMEOUT_MS),
        )
        .await;
        let Ok(Ok(session)) = opened else {
            server = (server + 1) % addrs.len();
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(RETRY_PAUSE_MAX);
            continue;
        };
        pause = RETRY_PAUSE_MIN;
        if connected_before {
            tally.reconnects += 1;
        }
        connected_before = true;
        let mut driver = Driver {
            c,
            spec,
            marks,
            counter: &mut counter,
            tally: &mut tally,
        };
        if driver.drive(session).await {
            server = (server + 1) % addrs.len();
        }
    }
    Ok(tally)
}

/// A client's requests on one session.
struct Driver<'a> {
    c: usize,
    spec: &'a FailoverSpec,
    marks: &'a Marks,
    /// Requests built so far by this client (the `i` of `make(c, i)`).
    counter: &'a mut u64,
    tally: &'a mut ClientTally,
}

impl Driver<'_> {
    /// Keeps the window full until the stop; true if the connection broke first.
    async fn drive(&mut self, mut session: Session) -> bool {
        let depth = self.spec.window.max(1);
        let mut in_flight: VecDeque<(i32, Instant, bool)> = VecDeque::with_capacity(depth);
        let mut out = Vec::with_capacity(depth * 1200);
        let mut xid = 1i32;
        loop {
            if !self.marks.stopping() {
                while in_flight.len() < depth {
                    let request = (self.spec.make)(self.c, *self.counter);
                    *self.counter += 1;
                    encode_request(&mut out, xid, &request);
                    in_flight.push_back((xid, Instant::now(), is_write(&request)));
                    xid = xid.wrapping_add(1).max(1);
                }
                if session.stream.write_all(&out).await.is_err() {
                    self.tally.lost += in_flight.len() as u64;
                    self.broke();
                    return true;
                }
                out.clear();
            } else if in_flight.is_empty() {
                return false;
            }
            let reply = tokio::time::timeout(REPLY_TIMEOUT, session.read_reply()).await;
            let matched = match (reply, in_flight.front()) {
                (Ok(Ok(r)), Some(&(sent_xid, _, _))) if r.xid == sent_xid => Some(r),
                _ => None,
            };
            let Some(reply) = matched else {
                self.tally.lost += in_flight.len() as u64;
                self.broke();
                return true;
            };
            if let Some((_, sent_at, write)) = in_flight.pop_front() {
                self.record(sent_at, write, reply.err == 0);
            }
        }
    }

    /// The connection broke or timed out.
    fn broke(&mut self) {
        if self.marks.leader_killed.get().is_some() && !self.marks.stopping() {
            self.tally.disconnects_after_kill += 1;
        }
    }

    fn record(&mut self, sent_at: Instant, write: bool, ok: bool) {
        if !ok {
            self.tally.errors += 1;
            return;
        }
        let now = Instant::now();
        if write && !self.marks.stopping() {
            let killed = self.marks.leader_killed.get().copied();
            if let (Some(killed), Some(last)) = (killed, self.tally.last_write_ok) {
                if now >= killed {
                    let gap = now.duration_since(last);
                    let longest = self.tally.longest_gap_after_kill.get_or_insert(gap);
                    *longest = (*longest).max(gap);
                }
            }
            self.tally.last_write_ok = Some(now);
        }
        if now < self.marks.start || self.marks.stopping() {
            return;
        }
        self.tally.completed += 1;
        let bin = (now.duration_since(self.marks.start).as_millis() / BIN.as_millis()) as usize;
        if bin < BINS_MAX {
            if self.tally.bins.len() <= bin {
                self.tally.bins.resize(bin + 1, 0);
            }
            self.tally.bins[bin] += 1;
        }
        let after_kill = self
            .marks
            .leader_killed
            .get()
            .is_some_and(|killed| sent_at >= *killed);
        if write && after_kill && self.tally.first_write_after_kill.is_none() {
            self.tally.first_write_after_kill = Some(now);
        }
    }
}

fn is_write(request: &Request) -> bool {
    matches!(
        request,
        Request::SetData(_) | Request::Create { .. } | Request::Delete(_)
    )
}
