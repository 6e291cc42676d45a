//! One run of the replica simulator: a fault phase under load, then a liveness phase on a
//! healed network, then the end-of-run checks (Zab's properties, the clients' guarantees,
//! convergence of every replica's tree).

use super::client::TIMEOUT_MS;
use super::world::{ClusterOptions, ClusterWorld};
use crate::client_checker::{check_history, CommitTree};
use crate::ops::{ClientOp, OpResult};
use zab::Millis;

/// Time allowed for the ensemble to settle after the network heals.
pub const SETTLE_MS_MAX: Millis = 10_000;

#[derive(Debug, Clone)]
pub struct ClusterReport {
    pub seed: u64,
    pub servers: usize,
    pub failures: Vec<String>,
    /// Transactions in the committed order.
    pub committed: usize,
    /// Client operations, and those answered.
    pub ops: usize,
    pub answered: usize,
    /// Requests the leader refused with THROTTLEDOP.
    pub throttled: usize,
    /// Durability reports that reached the replica naming a zxid its log no longer holds.
    pub stale_reports: usize,
    pub sessions_expired: usize,
    /// Times a server started serving read-only.
    pub read_only_starts: usize,
    /// Closes of local sessions, answered by their server alone.
    pub local_closes: usize,
    pub crashes: usize,
    pub events: u64,
    /// Diskless: (committed writes lost, ms from the oldest one's commit to the failure,
    /// after a whole-ensemble power loss) per loss.
    pub losses: Vec<(usize, Millis, bool)>,
    /// Reconfigurations clients asked for, and those committed.
    pub reconfigs: usize,
    pub reconfigs_committed: usize,
}

pub fn run_cluster(opts: ClusterOptions) -> ClusterReport {
    let fault_phase_ms = opts.fault_phase_ms;
    let mut w = ClusterWorld::new(opts);
    for sid in w.sids() {
        w.boot(sid);
    }
    w.start_clients();
    w.nemesis_on = true;
    w.schedule_fault();
    w.run_until(fault_phase_ms);
    liveness_phase(&mut w);
    w.check_executed_once();
    w.checker.finish(&[]);
    let mut failures = std::mem::take(&mut w.failures);
    failures.extend(w.checker.failures.iter().cloned());
    let order = CommitTree {
        committed: &w.checker.committed,
        lost: &w.checker.lost,
        parents: &w.checker.parents,
    };
    failures.extend(check_history(&w.history, &order));
    ClusterReport {
        seed: w.opts.seed,
        servers: w.opts.servers,
        failures,
        committed: w.checker.committed.len(),
        reconfigs: w
            .history
            .iter()
            .filter(|op| matches!(op.op, ClientOp::Reconfig { .. }))
            .count(),
        reconfigs_committed: w
            .history
            .iter()
            .filter(|op| {
                matches!(op.op, ClientOp::Reconfig { .. })
                    && matches!(op.result, Some(OpResult::Written { code: 0, .. }))
            })
            .count(),
        ops: w.history.len(),
        answered: w.history.iter().filter(|op| op.result.is_some()).count(),
        throttled: w.throttled,
        stale_reports: w.stale_reports,
        sessions_expired: w.sessions_expired,
        read_only_starts: w.read_only_starts,
        local_closes: w.local_closes.len(),
        crashes: w.crashes,
        events: w.events,
        losses: w
            .durability
            .losses
            .iter()
            .map(|l| (l.zxids.len(), l.span_ms, l.after_power_loss))
            .collect(),
    }
}

/// Heals everything, restarts every node and checks that the service comes back, takes
/// writes and converges.
fn liveness_phase(w: &mut ClusterWorld) {
    w.nemesis_on = false;
    w.net.heal();
    w.resume_all();
    for sid in w.sids() {
        w.restart(sid);
    }
    let healed_at = w.now;
    let deadline = w.now + SETTLE_MS_MAX;
    while w.settled_leader().is_none() && w.now < deadline {
        w.run_until(w.now + 10);
    }
    if w.settled_leader().is_none() {
        let state = w.describe();
        w.fail(format!(
            "liveness: no settled leader {SETTLE_MS_MAX} ms after heal: {state}"
        ));
        return;
    }
    // Longer than a client's timeout, so a client stuck on a dead connection writes again.
    w.run_until(w.now + 2 * TIMEOUT_MS);
    // From here the ensemble is healthy and stays so: every request gets an answer, and no
    // client has to give up on a silent server (a request dropped silently shows up here).
    let stable_from = w.now;
    w.run_until(w.now + 2 * TIMEOUT_MS);
    w.workload_on = false;
    // Idle clients do not ping: every session must end within its timeout (and a tick).
    w.run_until(w.now + 2_500 + 2 * super::client::SESSION_TIMEOUT_MS as Millis);
    let silent: Vec<usize> = w
        .hang_ups
        .iter()
        .filter(|&&(_, op)| op != usize::MAX && w.history[op].invoked_at >= stable_from)
        .map(|&(_, op)| op)
        .collect();
    if let Some(&op) = silent.first() {
        let what = format!("{:?}", w.history[op].op);
        w.fail(format!(
            "liveness: a healthy ensemble never answered op {op} ({what}); {} such",
            silent.len()
        ));
    }

    let wrote = w.history.iter().any(|op| {
        op.invoked_at >= healed_at
            && op.op.is_write()
            && matches!(op.result, Some(OpResult::Written { .. }))
    });
    if !wrote && !w.clients.is_empty() {
        w.fail("liveness: no write committed after heal".into());
    }
    // Every client is connected and busy: no session of theirs may expire.
    let expired = w.expiries.iter().filter(|&&t| t >= stable_from).count();
    if expired > 0 {
        w.fail(format!(
            "sessions: {expired} sessions of active clients expired in a healthy ensemble"
        ));
    }
    // No session outlives its idle client: each was closed or expired by the leader.
    let left: Vec<i64> = w
        .nodes
        .iter()
        .filter_map(|n| n.replica.as_ref())
        .flat_map(|r| r.tree.sessions().keys().copied().collect::<Vec<_>>())
        .collect();
    if !left.is_empty() {
        let mut left = left;
        left.sort_unstable();
        left.dedup();
        w.fail(format!(
            "sessions: {} sessions outlived their idle clients: {left:x?}",
            left.len()
        ));
    }
    let states = w.applied_states();
    if states
        .windows(2)
        .any(|p| (p[0].1, p[0].2) != (p[1].1, p[1].2))
    {
        w.fail(format!("liveness: replicas did not converge: {states:?}"));
    }
}
