//! The load generator: `clients` sessions, each keeping up to `window` requests in flight
//! (window 1 = a synchronous client), for a fixed time. It records every request's latency and
//! its own CPU time, so a saturated generator is visible in the results.

use crate::wire::{encode_request, Session};
use hdrhistogram::Histogram;
use proto::request::Request;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// CPU the generator process used per second of wall time (1.0 = one core busy).
    pub generator_cpu: f64,
}

pub async fn run(addr: SocketAddr, spec: &LoadSpec) -> anyhow::Result<LoadResult> {
    let mut sessions = Vec::with_capacity(spec.clients);
    for _ in 0..spec.clients {
        sessions.push(Session::open(addr, 30_000).await?);
    }
    let start = Instant::now();
    let measure_from = start + spec.warmup;
    let end = measure_from + spec.duration;
    let cpu_before = crate::cpu::process_cpu_seconds();
    let mut tasks = Vec::new();
    for (c, session) in sessions.into_iter().enumerate() {
        let make = spec.make.clone();
        let window = spec.window.max(1);
        tasks.push(tokio::spawn(async move {
            client(session, c, window, make, measure_from, end).await
        }));
    }
    let mut histogram = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let (mut ops, mut errors) = (0, 0);
    for task in tasks {
        let r = task.await??;
        histogram.add(&r.histogram)?;
        ops += r.ops;
        errors += r.errors;
    }
    let cpu = crate::cpu::process_cpu_seconds() - cpu_before;
    let wall = start.elapsed().as_secs_f64();
    let seconds = spec.duration.as_secs_f64();
    Ok(LoadResult {
        ops,
        errors,
        seconds,
        ops_per_sec: ops as f64 / seconds,
        p50_us: histogram.value_at_quantile(0.5),
        p99_us: histogram.value_at_quantile(0.99),
        p999_us: histogram.value_at_quantile(0.999),
        max_us: histogram.max(),
        generator_cpu: cpu / wall,
    })
}

struct ClientResult {
    ops: u64,
    errors: u64,
    histogram: Histogram<u64>,
}

async fn client(
    mut session: Session,
    c: usize,
    window: usize,
    make: MakeRequest,
    measure_from: Instant,
    end: Instant,
) -> anyhow::Result<ClientResult> {
    use tokio::io::AsyncWriteExt;
    let mut histogram = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let (mut ops, mut errors) = (0u64, 0u64);
    let mut in_flight: VecDeque<(i32, Instant)> = VecDeque::with_capacity(window);
    let mut out = Vec::with_capacity(window * 512);
    let mut i = 0u64;
    let mut xid = 1i32;
    loop {
        let now = Instant::now();
        if now < end {
            while in_flight.len() < window {
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
        if sent_at >= measure_from && sent_at < end {
            ops += 1;
            if reply.err != 0 {
                errors += 1;
            }
            histogram.record(sent_at.elapsed().as_micros().max(1) as u64)?;
        }
    }
    Ok(ClientResult {
        ops,
        errors,
        histogram,
    })
}
