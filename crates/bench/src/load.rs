//! The load generator: `clients` sessions, each keeping up to `window` requests in flight
//! (window 1 = a synchronous client), for a fixed time. It records every request's latency,
//! throughput per second, and its own CPU time, so a saturated generator is visible in the
//! results.

use crate::wire::{encode_request, Session};
use hdrhistogram::Histogram;
use proto::request::Request;
use std::collections::VecDeque;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

/// Builds the i-th request of client `c`.
pub type MakeRequest = Arc<dyn Fn(usize, u64) -> Request + Send + Sync>;

#[derive(Clone)]
pub struct LoadSpec {
    pub clients: usize,
    pub window: usize,
    pub duration: Duration,
    pub warmup: Duration,
    pub make: MakeRequest,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct LoadResult {
    pub ops: u64,
    pub errors: u64,
    pub seconds: f64,
    pub ops_per_sec: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
    pub mean_us: f64,
    /// CPU the generator process used per second of wall time (1.0 = one core busy).
    pub generator_cpu: f64,
    /// Completed operations in each second of the measurement.
    pub timeline: Vec<u64>,
}

/// What one client measured.
pub struct ClientResult {
    pub ops: u64,
    pub errors: u64,
    pub histogram: Histogram<u64>,
    pub timeline: Vec<u64>,
}

impl ClientResult {
    pub fn new(measure: Duration) -> anyhow::Result<ClientResult> {
        Ok(ClientResult {
            ops: 0,
            errors: 0,
            histogram: Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?,
            timeline: vec![0; measure.as_secs().max(1) as usize],
        })
    }

    /// Counts one operation sent at `sent_at` if it was sent inside the measured window.
    pub fn record(
        &mut self,
        sent_at: Instant,
        window: (Instant, Instant),
        ok: bool,
    ) -> anyhow::Result<()> {
        let (from, end) = window;
        if sent_at >= from && sent_at < end {
            self.ops += 1;
            if !ok {
                self.errors += 1;
            }
            self.histogram
                .record(sent_at.elapsed().as_micros().max(1) as u64)?;
            let second = sent_at.duration_since(from).as_secs() as usize;
            if let Some(slot) = self.timeline.get_mut(second) {
                *slot += 1;
            }
        }
        Ok(())
    }
}

/// Opens `clients` sessions, client `c` on server `addrs[c % addrs.len()]` (each client talks
/// to one server, round-robin, as in the ZooKeeper paper's experiments), runs `body` on each
/// for warm-up + duration, and merges results.
pub async fn run_clients<F, Fut>(
    addrs: &[SocketAddr],
    clients: usize,
    warmup: Duration,
    duration: Duration,
    body: F,
) -> anyhow::Result<LoadResult>
where
    F: Fn(Session, usize, (Instant, Instant)) -> Fut,
    Fut: Future<Output = anyhow::Result<ClientResult>> + Send + 'static,
{
    anyhow::ensure!(!addrs.is_empty(), "no server to load");
    let mut sessions = Vec::with_capacity(clients);
    for c in 0..clients {
        sessions.push(Session::open(addrs[c % addrs.len()], 30_000).await?);
    }
    let start = Instant::now();
    let window = (start + warmup, start + warmup + duration);
    let cpu_before = crate::cpu::process_cpu_seconds();
    let tasks: Vec<_> = sessions
        .into_iter()
        .enumerate()
        .map(|(c, session)| tokio::spawn(body(session, c, window)))
        .collect();
    let mut histogram = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let (mut ops, mut errors) = (0, 0);
    let mut timeline = vec![0u64; duration.as_secs().max(1) as usize];
    for task in tasks {
        let r = task.await??;
        histogram.add(&r.histogram)?;
        ops += r.ops;
        errors += r.errors;
        for (total, n) in timeline.iter_mut().zip(&r.timeline) {
            *total += n;
        }
    }
    let cpu = crate::cpu::process_cpu_seconds() - cpu_before;
    let wall = start.elapsed().as_secs_f64();
    let seconds = duration.as_secs_f64();
    Ok(LoadResult {
        ops,
        errors,
        seconds,
        ops_per_sec: ops as f64 / seconds,
        p50_us: histogram.value_at_quantile(0.5),
        p99_us: histogram.value_at_quantile(0.99),
        p999_us: histogram.value_at_quantile(0.999),
        max_us: histogram.max(),
        mean_us: histogram.mean(),
        generator_cpu: cpu / wall,
        timeline,
    })
}

/// The common case: every client keeps `window` requests built by `make` in flight.
pub async fn run(addrs: &[SocketAddr], spec: &LoadSpec) -> anyhow::Result<LoadResult> {
    let (make, depth) = (spec.make.clone(), spec.window.max(1));
    run_clients(
        addrs,
        spec.clients,
        spec.warmup,
        spec.duration,
        move |session, c, window| pipelined(session, c, depth, make.clone(), window),
    )
    .await
}

/// Synchronous clients that together send `rate` requests per second built by `spec.make`
/// (an open schedule, each client on its own share of it), so that targets are compared at
/// equal work. A target that cannot keep up shows a lower `ops_per_sec`: sends missed by more
/// than one interval are skipped, not made up in a burst. `spec.window` is ignored.
pub async fn run_paced(
    addrs: &[SocketAddr],
    spec: &LoadSpec,
    rate: u32,
) -> anyhow::Result<LoadResult> {
    anyhow::ensure!(rate > 0, "a paced load needs a rate above 0");
    let make = spec.make.clone();
    let clients = spec.clients.max(1);
    // Each client sends every `interval`; client c starts c/clients of an interval late, so
    // the sends of all clients are spread evenly.
    let interval = Duration::from_secs_f64(clients as f64 / f64::from(rate));
    run_clients(
        addrs,
        clients,
        spec.warmup,
        spec.duration,
        move |session, c, window| {
            let offset = interval.mul_f64(c as f64 / clients as f64);
            paced(session, c, interval, offset, make.clone(), window)
        },
    )
    .await
}

async fn paced(
    mut session: Session,
    c: usize,
    interval: Duration,
    offset: Duration,
    make: MakeRequest,
    window: (Instant, Instant),
) -> anyhow::Result<ClientResult> {
    let end = window.1;
    let mut result = ClientResult::new(end.duration_since(window.0))?;
    let mut out = Vec::with_capacity(512);
    let mut next = Instant::now() + offset;
    let mut i = 0u64;
    let mut xid = 1i32;
    while next < end {
        tokio::time::sleep_until(next.into()).await;
        encode_request(&mut out, xid, &make(c, i));
        let sent_at = Instant::now();
        session.stream.write_all(&out).await?;
        out.clear();
        let reply = session.read_reply().await?;
        anyhow::ensure!(reply.xid == xid, "replies out of order");
        result.record(sent_at, window, reply.err == 0)?;
        xid = xid.wrapping_add(1).max(1);
        i += 1;
        next += interval;
        let now = Instant::now();
        if next + interval < now {
            next = now;
        }
    }
    Ok(result)
}

async fn pipelined(
    mut session: Session,
    c: usize,
    depth: usize,
    make: MakeRequest,
    window: (Instant, Instant),
) -> anyhow::Result<ClientResult> {
    let end = window.1;
    let mut result = ClientResult::new(end.duration_since(window.0))?;
    let mut in_flight: VecDeque<(i32, Instant)> = VecDeque::with_capacity(depth);
    let mut out = Vec::with_capacity(depth * 512);
    let mut i = 0u64;
    let mut xid = 1i32;
    loop {
        if Instant::now() < end {
            while in_flight.len() < depth {
                encode_request(&mut out, xid, &make(c, i));
                in_flight.push_back((xid, Instant::now()));
                xid = xid.wrapping_add(1).max(1);
                i += 1;
            }
            session.stream.write_all(&out).await?;
            out.clear();
        } else if in_flight.is_empty() {
            break;
        }
        let reply = session.read_reply().await?;
        let Some((sent_xid, sent_at)) = in_flight.pop_front() else {
            anyhow::bail!("a reply nobody asked for");
        };
        anyhow::ensure!(reply.xid == sent_xid, "replies out of order");
        result.record(sent_at, window, reply.err == 0)?;
    }
    Ok(result)
}

/// Paper Table 2's worker: a synchronous create, then an asynchronous delete of the same znode
/// (not waited for), and again. Only the creates are measured.
pub async fn create_then_delete(
    mut session: Session,
    c: usize,
    payload: usize,
    window: (Instant, Instant),
) -> anyhow::Result<ClientResult> {
    let end = window.1;
    let mut result = ClientResult::new(end.duration_since(window.0))?;
    let mut out = Vec::new();
    let mut xid = 1i32;
    let mut deletes_pending = 0usize;
    let mut i = 0u64;
    while Instant::now() < end {
        let path = format!("/bench/w{c}-{i}");
        i += 1;
        encode_request(
            &mut out,
            xid,
            &crate::scenarios::create_request(path.clone(), payload, 0),
        );
        let create_xid = xid;
        xid += 1;
        let sent_at = Instant::now();
        session.stream.write_all(&out).await?;
        out.clear();
        // Replies come in order: first the deletes still outstanding, then this create.
        loop {
            let reply = session.read_reply().await?;
            if reply.xid == create_xid {
                result.record(sent_at, window, reply.err == 0)?;
                break;
            }
            deletes_pending = deletes_pending.saturating_sub(1);
        }
        encode_request(
            &mut out,
            xid,
            &Request::Delete(proto::PathAndVersion { path, version: -1 }),
        );
        xid += 1;
        deletes_pending += 1;
        session.stream.write_all(&out).await?;
        out.clear();
    }
    while deletes_pending > 0 {
        session.read_reply().await?;
        deletes_pending -= 1;
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paced load never sends more than its schedule allows (the count of replies is
    /// bounded above by rate × time, whatever the machine's speed), and does send.
    #[tokio::test]
    async fn paced_load_keeps_to_its_schedule() {
        let null = crate::null_server::NullServer::start().await.expect("null");
        let make: MakeRequest = Arc::new(|_, _| {
            Request::GetData(proto::PathAndWatch {
                path: "/".into(),
                watch: false,
            })
        });
        let spec = LoadSpec {
            clients: 4,
            window: 1,
            duration: Duration::from_secs(1),
            warmup: Duration::from_millis(100),
            make,
        };
        let result = run_paced(&[null.addr], &spec, 200).await.expect("load");
        null.stop();
        assert!(result.ops > 0, "nothing was sent");
        // 200 per second for one second, plus one send per client at the window's edge.
        assert!(result.ops <= 200 + 4, "{} sends in one second", result.ops);
        assert_eq!(result.errors, 0);
    }
}
