//! One simulated run: a safety phase with faults, then a liveness phase on a healed network
//! (with one measured leader crash), then the end-of-run checks.

use crate::client_checker::{check_history, CommitTree};
use crate::ops::OpResult;
use crate::options::SimOptions;
use crate::world::World;
use zab::{Millis, Zab};

/// Time allowed for the ensemble to settle after the network heals.
pub const SETTLE_MS_MAX: Millis = 10_000;

#[derive(Debug, Clone)]
pub struct RunReport {
    pub seed: u64,
    pub servers: usize,
    pub failures: Vec<String>,
    pub trace_hash: u64,
    pub election_ms: Vec<Millis>,
    pub committed: usize,
    pub ops: usize,
    pub events: u64,
    /// Diskless: committed writes lost legitimately, one entry per establishment that lost
    /// some (and one per whole-ensemble power loss, even if it lost nothing).
    pub losses: Vec<LossSummary>,
    /// Diskless: lost writes a later leader had after all.
    pub revived: usize,
    /// Diskless: per full-house establishment, ms since the last voter booted.
    pub full_house_ms: Vec<Millis>,
    /// Diskless: client sessions expired because the history they saw was lost.
    pub sessions_expired: usize,
    /// Diskless: ms from restarting every server after the liveness phase's power loss to an
    /// established leader.
    pub recovery_ms: Vec<Millis>,
}

/// One loss event of a diskless run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LossSummary {
    /// Committed transactions lost.
    pub txns: usize,
    /// Of which a client had been told they succeeded.
    pub acknowledged: usize,
    /// From the commit of the oldest lost write to the failure.
    pub span_ms: Millis,
    pub after_power_loss: bool,
}

impl World {
    /// Runs until every live server serves the same established leader, or `limit` passes.
    pub fn settle(&mut self, limit: Millis) -> bool {
        self.settle_without(limit, None)
    }

    /// Like [`World::settle`], but the settled leader must lead an epoch after `old_epoch`.
    pub fn settle_without(&mut self, limit: Millis, old_epoch: Option<u32>) -> bool {
        let deadline = self.now + limit;
        while self.now < deadline {
            let epoch =
                |w: &World, l: zab::Sid| w.server(l).zab.as_ref().map_or(0, Zab::current_epoch);
            if self
                .settled_leader_of_live()
                .is_some_and(|l| old_epoch.is_none_or(|old| epoch(self, l) > old))
            {
                return true;
            }
            self.run_until(self.now + 10);
        }
        false
    }

    pub fn settled_leader_of_live(&self) -> Option<zab::Sid> {
        let mut leader = None;
        let mut live = 0;
        for s in self.servers.iter() {
            let Some(zab) = s.zab.as_ref() else { continue };
            live += 1;
            if !zab.is_serving() {
                return None;
            }
            let l = zab.leader()?;
            if *leader.get_or_insert(l) != l {
                return None;
            }
        }
        (live > 0).then_some(leader).flatten()
    }

    /// One line per server: role, epochs, log, for failure messages.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for s in &self.servers {
            match &s.zab {
                Some(z) => out.push_str(&format!(
                    "[s{} {:?} leader={:?} acc={} cur={} last={} durable={} delivered={} recovering={} round={}] ",
                    s.sid,
                    z.role(),
                    z.leader(),
                    z.accepted_epoch(),
                    z.current_epoch(),
                    z.last_logged(),
                    z.durable(),
                    z.delivered(),
                    z.is_recovering(),
                    z.round()
                )),
                None => out.push_str(&format!("[s{} down] ", s.sid)),
            }
        }
        out
    }

    pub fn boot_all(&mut self) {
        for sid in self.all_sids() {
            self.restart(sid);
        }
    }

    /// Heals everything and checks that the service comes back and converges.
    pub fn liveness_phase(&mut self) {
        self.crash_after_sync_ack = false;
        self.nemesis_on = false;
        self.net.heal();
        for sid in self.all_sids() {
            self.unpause(sid);
        }
        for sid in self.all_sids() {
            self.restart(sid);
        }
        let healed_at = self.now;
        if !self.settle(SETTLE_MS_MAX) {
            let state = self.describe();
            self.fail(format!(
                "liveness: no settled leader {SETTLE_MS_MAX} ms after heal: {state}"
            ));
            return;
        }
        // Measured election: crash the leader of a healthy ensemble.
        self.run_until(self.now + 300);
        let settled = self.settle(SETTLE_MS_MAX);
        if let Some(leader) = self.settled_leader_of_live().filter(|_| settled) {
            self.leader_loss = Some((self.now, None));
            let old_epoch = self.server(leader).zab.as_ref().map(Zab::current_epoch);
            self.crash(leader);
            if !self.settle_without(SETTLE_MS_MAX, old_epoch) {
                let state = self.describe();
                self.fail(format!(
                    "liveness: no new leader after the measured crash of {leader}: {state}"
                ));
                return;
            }
            self.leader_loss = None;
            self.restart(leader);
            if !self.settle(SETTLE_MS_MAX) {
                self.fail("liveness: old leader did not rejoin".into());
                return;
            }
        }
        if self.opts.diskless && !self.measure_power_loss_recovery() {
            return;
        }
        // Longer than a client's timeout, so a client stuck on a dead connection still gets
        // to write after the heal.
        self.run_until(self.now + 2 * crate::client::CLIENT_TIMEOUT_MS);
        self.workload_on = false;
        self.run_until(self.now + 2500);
        let wrote = self.history.iter().any(|op| {
            op.invoked_at >= healed_at
                && op.op.is_write()
                && matches!(op.result, Some(OpResult::Written { .. }))
        });
        if !wrote && !self.clients.is_empty() {
            self.fail("liveness: no write committed after heal".into());
        }
        let delivered: Vec<_> = self
            .servers
            .iter()
            .filter_map(|s| s.zab.as_ref().map(Zab::delivered))
            .collect();
        if delivered.windows(2).any(|w| w[0] != w[1]) {
            self.fail(format!("liveness: servers did not converge: {delivered:?}"));
        }
    }

    /// Diskless: a whole-ensemble power loss on a healthy ensemble, every server restarted at
    /// once; measures the time until a leader (normally a full house's) is established. The
    /// window it loses is judged like any other. False if the ensemble did not come back.
    fn measure_power_loss_recovery(&mut self) -> bool {
        self.run_until(self.now + 200);
        self.durability.power_loss_at.get_or_insert(self.now);
        self.trace.line(self.now, "measured power loss");
        for sid in self.all_sids() {
            self.crash(sid);
        }
        let restarted_at = self.now;
        for sid in self.all_sids() {
            self.restart(sid);
        }
        if !self.settle(SETTLE_MS_MAX) {
            let state = self.describe();
            self.fail(format!(
                "liveness: no leader {SETTLE_MS_MAX} ms after a power loss: {state}"
            ));
            return false;
        }
        if let Some((_, _, at)) = self.checker.leaders.values().max_by_key(|l| l.2) {
            self.recovery_samples.push(at - restarted_at);
        }
        true
    }

    pub fn final_checks(&mut self) {
        let disks = self.final_disks();
        self.checker.finish(&disks);
        let mut found = std::mem::take(&mut self.checker.failures);
        let order = CommitTree {
            committed: &self.checker.committed,
            lost: &self.checker.lost,
            parents: &self.checker.parents,
        };
        found.extend(check_history(&self.history, &order));
        for f in found {
            self.fail(f);
        }
    }

    fn loss_summaries(&self) -> Vec<LossSummary> {
        let told: std::collections::BTreeSet<zab::Zxid> = self
            .history
            .iter()
            .filter_map(|op| match &op.result {
                Some(OpResult::Written { zxid, .. }) => Some(*zxid),
                _ => None,
            })
            .collect();
        self.durability
            .losses
            .iter()
            .map(|l| LossSummary {
                txns: l.zxids.len(),
                acknowledged: l.zxids.iter().filter(|z| told.contains(z)).count(),
                span_ms: l.span_ms,
                after_power_loss: l.after_power_loss,
            })
            .collect()
    }

    pub fn report(&self) -> RunReport {
        RunReport {
            losses: self.loss_summaries(),
            revived: self.checker.revived,
            full_house_ms: self.full_house_samples.clone(),
            sessions_expired: self.sessions_expired,
            recovery_ms: self.recovery_samples.clone(),
            seed: self.opts.seed,
            servers: self.opts.servers,
            failures: self.failures.clone(),
            trace_hash: self.trace.hash(),
            election_ms: self.election_samples.clone(),
            committed: self.checker.committed.len(),
            ops: self.history.len(),
            events: self.events,
        }
    }
}

/// Runs one seed from start to finish.
pub fn run(opts: SimOptions) -> RunReport {
    let mut w = World::new(opts);
    w.trace
        .note(0, &format!("SEED={} {:?}", w.opts.seed, w.opts));
    w.boot_all();
    w.start_clients();
    let fault_end = w.opts.fault_phase_ms;
    while w.now < fault_end && w.failures.is_empty() {
        let gap = w
            .rng
            .range(w.opts.fault_interval_min_ms, w.opts.fault_interval_max_ms);
        w.run_until((w.now + gap).min(fault_end));
        if w.now >= fault_end {
            break;
        }
        let kinds = w.opts.faults.clone();
        if let Some(&kind) = w.rng.pick(&kinds) {
            w.inject(kind);
        }
    }
    if w.failures.is_empty() {
        w.liveness_phase();
    }
    w.final_checks();
    w.report()
}
