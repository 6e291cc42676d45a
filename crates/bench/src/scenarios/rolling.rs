//! A rolling restart under load, as an operator upgrades an ensemble: each member in turn
//! (followers first, the leader last) gets SIGTERM, is started again and waited for. Clients
//! are pinned two per member, each writing synchronously in a loop. Measured for each step,
//! over the clients of the members *not* being restarted: how many saw their connection
//! break, how many writes failed, and the longest time without a successful write. meerkat
//! holds its clients through the leader change and its leader hands over on SIGTERM
//! (docs/ensemble.md); ZooKeeper closes them.

use super::{durable_settings, launch, prepare, row, target_dir, Context, Outcome};
use crate::target::Launched;
use crate::wire::Session;
use proto::request::Request;
use proto::SetDataRequest;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Clients pinned to each member.
const CLIENTS_PER_MEMBER: usize = 2;

/// Bytes each write sets.
const VALUE_LEN: usize = 100;

/// A write that takes longer than this counts as a broken connection.
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// Session timeout the clients ask for: long enough that no session expires in a step.
const SESSION_TIMEOUT_MS: i32 = 30_000;

/// How long a restarted member may take to serve, and its own clients to write again.
const REJOIN_WAIT: Duration = Duration::from_secs(120);

/// How long a SIGTERMed server may take to exit (ZooKeeper's JVM shutdown included).
const EXIT_WAIT: Duration = Duration::from_secs(30);

/// Quiet time after each step, so that the next one starts from a steady ensemble.
const SETTLE: Duration = Duration::from_millis(300);

/// What one pinned client saw, as times.
#[derive(Default)]
struct Timeline {
    successes: Vec<Instant>,
    failures: Vec<Instant>,
    breaks: Vec<Instant>,
}

struct Pinned {
    member: usize,
    timeline: Arc<Mutex<Timeline>>,
}

/// One step's figures over the other members' clients.
#[derive(Debug, Clone, serde::Serialize)]
struct Step {
    member: usize,
    leader: bool,
    exit_ms: f64,
    breaks: usize,
    failures: usize,
    longest_gap_ms: f64,
}

pub async fn rolling_restart(ctx: &Context) -> anyhow::Result<Outcome> {
    let case = "SIGTERM, restart, catch up; leader last";
    let mut breaks = row(case, "broken connections, other members' clients", false);
    let mut failures = row(case, "failed writes, other members' clients", false);
    let mut gap_followers = row(case, "longest write gap ms, follower steps", false);
    let mut gap_leader = row(case, "longest write gap ms, leader step", false);
    let mut details = serde_json::Map::new();
    for target in ctx.real_targets() {
        ctx.step(format!("rolling restart on {}", target.name()));
        let dir = target_dir(ctx, "rolling-restart", target, "3");
        let mut server = launch(ctx, target, &dir, &durable_settings(&[])).await?;
        let paths: Vec<String> = (0..server.servers() * CLIENTS_PER_MEMBER)
            .map(|c| format!("/rolling-{c}"))
            .collect();
        let setup: Vec<(&str, usize)> = paths.iter().map(|p| (p.as_str(), VALUE_LEN)).collect();
        prepare(&server, &setup).await?;
        let stop = Arc::new(AtomicBool::new(false));
        let mut clients = Vec::new();
        let mut tasks = Vec::new();
        for (c, path) in paths.iter().enumerate() {
            let member = c % server.servers();
            let timeline = Arc::new(Mutex::new(Timeline::default()));
            clients.push(Pinned {
                member,
                timeline: timeline.clone(),
            });
            let (addr, path, stop) = (server.addrs[member], path.clone(), stop.clone());
            tasks.push(tokio::spawn(async move {
                write_loop(addr, path, stop, timeline).await
            }));
        }
        tokio::time::sleep(ctx.scale.warmup()).await;
        let steps = restart_each(&mut server, &clients).await;
        stop.store(true, Ordering::SeqCst);
        for task in tasks {
            let _ = task.await;
        }
        server.stop();
        let steps = steps?;
        let name = target.name();
        breaks.values.insert(
            name.into(),
            steps.iter().map(|s| s.breaks).sum::<usize>() as f64,
        );
        failures.values.insert(
            name.into(),
            steps.iter().map(|s| s.failures).sum::<usize>() as f64,
        );
        let worst = |leader: bool| {
            steps
                .iter()
                .filter(|s| s.leader == leader)
                .map(|s| s.longest_gap_ms)
                .fold(0.0, f64::max)
        };
        gap_followers.values.insert(name.into(), worst(false));
        gap_leader.values.insert(name.into(), worst(true));
        details.insert(name.into(), serde_json::to_value(&steps)?);
    }
    Ok(Outcome {
        rows: vec![breaks, failures, gap_followers, gap_leader],
        details: serde_json::Value::Object(details),
        plots: Vec::new(),
    })
}

/// Restarts every member in turn, the leader last; one [`Step`] each.
async fn restart_each(server: &mut Launched, clients: &[Pinned]) -> anyhow::Result<Vec<Step>> {
    let leader = server.leader(REJOIN_WAIT).await?;
    let mut order: Vec<usize> = (0..server.servers()).filter(|&m| m != leader).collect();
    order.push(leader);
    let mut steps = Vec::new();
    for member in order {
        let from = Instant::now();
        server.terminate(member, EXIT_WAIT).await?;
        let exit_ms = from.elapsed().as_secs_f64() * 1e3;
        server.restart(member)?;
        super::failures::wait_srvr(server.addrs[member], REJOIN_WAIT).await?;
        let serving = Instant::now();
        // Its own clients reconnect to it; the next step starts once they write again.
        while clients.iter().filter(|c| c.member == member).any(|c| {
            let t = c.timeline.lock().unwrap_or_else(|p| p.into_inner());
            !t.successes.iter().any(|&s| s > serving)
        }) {
            anyhow::ensure!(
                serving.elapsed() < REJOIN_WAIT,
                "member {member}'s clients did not write again"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(SETTLE).await;
        let to = Instant::now();
        let others = clients.iter().filter(|c| c.member != member);
        let mut step = Step {
            member,
            leader: member == leader,
            exit_ms,
            breaks: 0,
            failures: 0,
            longest_gap_ms: 0.0,
        };
        for client in others {
            let t = client.timeline.lock().unwrap_or_else(|p| p.into_inner());
            let inside = |at: &&Instant| **at >= from && **at <= to;
            step.breaks += t.breaks.iter().filter(inside).count();
            step.failures += t.failures.iter().filter(inside).count();
            step.longest_gap_ms = step
                .longest_gap_ms
                .max(longest_gap_ms(&t.successes, from, to));
        }
        tracing::info!(?step, "rolling restart step");
        steps.push(step);
    }
    Ok(steps)
}

/// The longest time inside [from, to] without a success.
fn longest_gap_ms(successes: &[Instant], from: Instant, to: Instant) -> f64 {
    let mut previous = from;
    let mut longest = Duration::ZERO;
    for &at in successes.iter().filter(|&&at| at >= from && at <= to) {
        longest = longest.max(at.duration_since(previous));
        previous = at;
    }
    longest.max(to.duration_since(previous)).as_secs_f64() * 1e3
}

/// One pinned client: synchronous setData in a loop on its member, a new session after a
/// break (the member may be down a while: retried every 10 ms).
async fn write_loop(
    addr: SocketAddr,
    path: String,
    stop: Arc<AtomicBool>,
    timeline: Arc<Mutex<Timeline>>,
) {
    let data = vec![b'r'; VALUE_LEN];
    while !stop.load(Ordering::SeqCst) {
        let Ok(Ok(mut session)) =
            tokio::time::timeout(REPLY_TIMEOUT, Session::open(addr, SESSION_TIMEOUT_MS)).await
        else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let mut xid = 1;
        while !stop.load(Ordering::SeqCst) {
            let request = Request::SetData(SetDataRequest {
                path: path.clone(),
                data: Some(data.clone()),
                version: -1,
            });
            let reply = tokio::time::timeout(REPLY_TIMEOUT, session.call(xid, &request)).await;
            xid += 1;
            let now = Instant::now();
            let mut t = timeline.lock().unwrap_or_else(|p| p.into_inner());
            match reply {
                Ok(Ok((header, _))) if header.err == 0 => t.successes.push(now),
                Ok(Ok(_)) => t.failures.push(now),
                _ => {
                    t.breaks.push(now);
                    break;
                }
            }
        }
    }
}
