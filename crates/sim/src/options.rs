//! Everything a run does is derived from its seed ("swarm" testing): cluster size, observers,
//! clients, delays, fsync latency, which fault kinds are on and how often they strike.

use crate::rng::SimRng;
use zab::Millis;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    Crash,
    CrashLeader,
    Partition,
    OneWay,
    Bridge,
    Clog,
    Pause,
    Wipe,
    PowerLoss,
    /// Crash the next learner that acknowledges NEWLEADER, before its disk settles
    /// (ZAB.md §9 fault schedule 2).
    CrashAfterSyncAck,
    /// The leader hands leadership over on purpose (`zab`'s `transfer.rs`).
    HandOver,
}

pub const FAULT_KINDS: [FaultKind; 11] = [
    FaultKind::CrashAfterSyncAck,
    FaultKind::Crash,
    FaultKind::CrashLeader,
    FaultKind::Partition,
    FaultKind::OneWay,
    FaultKind::Bridge,
    FaultKind::Clog,
    FaultKind::Pause,
    FaultKind::Wipe,
    FaultKind::PowerLoss,
    FaultKind::HandOver,
];

#[derive(Debug, Clone)]
pub struct SimOptions {
    pub seed: u64,
    pub servers: usize,
    pub observers: usize,
    pub clients: usize,
    pub net_delay_min_ms: Millis,
    pub net_delay_max_ms: Millis,
    pub fsync_min_ms: Millis,
    pub fsync_max_ms: Millis,
    pub faults: Vec<FaultKind>,
    pub fault_phase_ms: Millis,
    pub fault_interval_min_ms: Millis,
    pub fault_interval_max_ms: Millis,
    /// Committed entries a server keeps for DIFF (small values force SNAP syncs).
    pub committed_log_max: usize,
    /// Check on every commit that a quorum of disks holds it (ZAB.md §9 invariant 6). Off only
    /// to measure how fast the end-to-end checks alone catch a planted bug.
    pub check_quorum_durability: bool,
    /// A planted bug by name (needs the `planted-bugs` feature).
    pub bug: Option<String>,
    /// Diskless mode (DESIGN.md §5): no log, busy snapshots, failure checkpoints, full houses.
    pub diskless: bool,
    /// Diskless: a busy snapshot takes this long, plus `snapshot_ms_per_1000_txns` per thousand
    /// transactions in the tree's history, plus up to half the base again as noise.
    pub snapshot_base_ms: Millis,
    pub snapshot_ms_per_1000_txns: Millis,
    /// Diskless: after a busy snapshot that took t ms, the next may start t × this / 100 ms
    /// later (the server's `busySnapshotRest`, default 300; 0 is back to back).
    pub snapshot_rest_percent: u64,
    /// Print a readable trace of every event.
    pub verbose: bool,
}

impl SimOptions {
    /// Derives a run from `seed`; `servers` overrides the drawn cluster size.
    pub fn from_seed(seed: u64, servers: Option<usize>) -> SimOptions {
        let mut rng = SimRng::new(seed ^ 0x5157_0000);
        let servers = servers.unwrap_or_else(|| *rng.pick(&[3, 3, 5, 5, 7]).unwrap_or(&3));
        let observers = usize::from(rng.chance(0.25));
        let mut faults: Vec<FaultKind> = FAULT_KINDS
            .iter()
            .copied()
            .filter(|_| rng.chance(0.6))
            .collect();
        if faults.is_empty() {
            faults.push(FaultKind::CrashLeader);
        }
        let net_delay_min_ms = rng.range(0, 1);
        let fsync_min_ms = rng.range(0, 2);
        // Drawn from their own stream, so durable runs keep exactly the options they had.
        let mut snap_rng = SimRng::new(seed ^ 0xd15c_1e55);
        SimOptions {
            seed,
            servers,
            observers,
            clients: rng.range(2, 6) as usize,
            net_delay_min_ms,
            net_delay_max_ms: net_delay_min_ms + rng.range(1, 10),
            fsync_min_ms,
            fsync_max_ms: fsync_min_ms + rng.range(1, 8),
            faults,
            fault_phase_ms: rng.range(2000, 5000),
            fault_interval_min_ms: 50,
            fault_interval_max_ms: rng.range(200, 800),
            committed_log_max: if rng.chance(0.3) { 20 } else { 500 },
            check_quorum_durability: true,
            bug: None,
            diskless: false,
            snapshot_base_ms: snap_rng.range(5, 150),
            snapshot_ms_per_1000_txns: snap_rng.range(5, 50),
            snapshot_rest_percent: 300,
            verbose: false,
        }
    }

    /// A quiet run without faults (scenarios add their own).
    pub fn calm(seed: u64, servers: usize) -> SimOptions {
        SimOptions {
            faults: Vec::new(),
            fault_phase_ms: 0,
            observers: 0,
            clients: 3,
            ..SimOptions::from_seed(seed, Some(servers))
        }
    }
}
