//! A small DSL for scripted scenarios: a calm ensemble without random faults, where the test
//! crashes, partitions and writes at chosen moments.
#![allow(dead_code, clippy::unwrap_used)]

use sim::ops::{ClientOp, OpResult};
use sim::world::World;
use sim::SimOptions;
use zab::{Sid, Zxid};

pub fn ensemble(seed: u64, servers: usize) -> World {
    ensemble_with(seed, servers, None, 500)
}

/// An ensemble with a planted bug (by name) and a DIFF window of `committed_log_max`.
pub fn ensemble_with(
    seed: u64,
    servers: usize,
    bug: Option<&str>,
    committed_log_max: usize,
) -> World {
    let mut o = SimOptions::calm(seed, servers);
    o.bug = bug.map(str::to_string);
    o.net_delay_min_ms = 1;
    o.net_delay_max_ms = 1;
    o.fsync_min_ms = 5;
    o.fsync_max_ms = 5;
    o.committed_log_max = committed_log_max;
    o.clients = 2;
    let mut w = World::new(o);
    w.workload_on = false;
    w.torn_writes = false;
    w.boot_all();
    assert!(w.settle(2_000), "no leader: {}", w.describe());
    w
}

/// A diskless ensemble (DESIGN.md §5); busy snapshots take `snapshot_ms` (use a huge value to
/// keep every server on the snapshot it has).
pub fn diskless_ensemble(seed: u64, servers: usize, bug: Option<&str>, snapshot_ms: u64) -> World {
    let mut o = SimOptions::calm(seed, servers);
    o.bug = bug.map(str::to_string);
    o.diskless = true;
    o.net_delay_min_ms = 1;
    o.net_delay_max_ms = 1;
    o.snapshot_base_ms = snapshot_ms;
    o.snapshot_ms_per_1000_txns = 0;
    o.clients = 2;
    let mut w = World::new(o);
    w.workload_on = false;
    w.boot_all();
    assert!(w.settle(2_000), "no leader: {}", w.describe());
    w
}

pub fn run_for(w: &mut World, ms: u64) {
    let until = w.now + ms;
    w.run_until(until);
}

/// Writes a unique value to /k0 through `server`; the zxid if acknowledged.
pub fn write(w: &mut World, server: Sid, value: &str) -> Option<Zxid> {
    let i = w.submit(
        0,
        server,
        ClientOp::Set {
            key: 0,
            value: value.as_bytes().to_vec(),
            version: -1,
        },
    );
    run_for(w, 60);
    match w.history[i].result {
        Some(OpResult::Written { zxid, code: 0, .. }) => Some(zxid),
        _ => None,
    }
}

pub fn create(w: &mut World, server: Sid) -> Option<Zxid> {
    let i = w.submit(
        0,
        server,
        ClientOp::Create {
            key: 0,
            value: b"init".to_vec(),
        },
    );
    run_for(w, 60);
    match w.history[i].result {
        Some(OpResult::Written { zxid, .. }) => Some(zxid),
        _ => None,
    }
}

pub fn leader(w: &World) -> Sid {
    w.settled_leader_of_live().expect("a settled leader")
}

/// Brings everything back, lets it settle, runs every end-of-run check.
pub fn finish(w: &mut World) -> Vec<String> {
    w.net.heal();
    for sid in w.all_sids() {
        w.restart(sid);
    }
    if !w.settle(5_000) {
        let state = w.describe();
        w.fail(format!("did not settle: {state}"));
    }
    run_for(w, 200);
    w.final_checks();
    w.failures.clone()
}
