//! Random swarm runs as cargo tests: a few hundred seeds must pass, a seed must replay
//! exactly, elections must be fast, and (with `planted-bugs`) every planted bug must be caught.
#![allow(clippy::unwrap_used)]

use sim::{run, SimOptions};

fn run_seed(seed: u64, servers: Option<usize>, bug: Option<&str>) -> sim::RunReport {
    let mut o = SimOptions::from_seed(seed, servers);
    o.bug = bug.map(str::to_string);
    run(o)
}

fn run_diskless(seed: u64, bug: Option<&str>) -> sim::RunReport {
    let mut o = SimOptions::from_seed(seed, None);
    o.bug = bug.map(str::to_string);
    o.diskless = true;
    run(o)
}

#[test]
fn diskless_random_seeds_pass() {
    let mut failed = Vec::new();
    let mut power_losses = 0;
    for seed in 1..=60 {
        let r = run_diskless(seed, None);
        power_losses += r.losses.iter().filter(|l| l.after_power_loss).count();
        if !r.failures.is_empty() {
            failed.push((seed, r.failures));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
    assert!(
        power_losses > 10,
        "too few power losses judged: {power_losses}"
    );
}

#[test]
fn a_diskless_seed_replays_exactly() {
    for seed in [8, 312] {
        let a = run_diskless(seed, None);
        let b = run_diskless(seed, None);
        assert_eq!(
            a.trace_hash, b.trace_hash,
            "seed {seed} is not deterministic"
        );
        assert_eq!(a.losses, b.losses);
    }
}

#[test]
fn random_seeds_pass() {
    let mut failed = Vec::new();
    for seed in 1..=120 {
        let r = run_seed(seed, None, None);
        if !r.failures.is_empty() {
            failed.push((seed, r.failures));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

#[test]
fn every_cluster_size_passes() {
    for servers in [3, 5, 7] {
        for seed in 1000..1020 {
            let r = run_seed(seed, Some(servers), None);
            assert!(
                r.failures.is_empty(),
                "seed {seed} x{servers}: {:#?}",
                r.failures
            );
            assert!(r.committed > 0, "seed {seed}: nothing committed");
        }
    }
}

#[test]
fn a_seed_replays_exactly() {
    for seed in [7, 42, 1234] {
        let a = run_seed(seed, None, None);
        let b = run_seed(seed, None, None);
        assert_eq!(
            a.trace_hash, b.trace_hash,
            "seed {seed} is not deterministic"
        );
        assert_eq!(a.events, b.events);
        assert_eq!(a.committed, b.committed);
    }
    assert_ne!(
        run_seed(1, None, None).trace_hash,
        run_seed(2, None, None).trace_hash
    );
}

#[test]
fn elections_take_under_200ms_of_simulated_time() {
    for servers in [3, 5, 7] {
        let mut samples: Vec<u64> = (1..=30)
            .flat_map(|seed| run_seed(seed, Some(servers), None).election_ms)
            .collect();
        samples.sort_unstable();
        assert!(
            samples.len() >= 25,
            "too few measured elections: {}",
            samples.len()
        );
        let median = samples[samples.len() / 2];
        assert!(median < 200, "x{servers}: median election {median} ms");
    }
}

#[cfg(feature = "planted-bugs")]
#[test]
fn every_planted_bug_is_caught() {
    for bug in zab::PlantedBug::ALL {
        if bug.needs_membership_changes() {
            continue;
        }
        if bug.must_stay_harmless() {
            let failed =
                (1..=200).find(|&seed| !run_seed(seed, None, Some(bug.name())).failures.is_empty());
            assert_eq!(failed, None, "{} must stay harmless", bug.name());
            continue;
        }
        let caught =
            (1..=400).find(|&seed| !run_seed(seed, None, Some(bug.name())).failures.is_empty());
        assert!(
            caught.is_some(),
            "{} was not caught in 400 seeds",
            bug.name()
        );
    }
}

/// The planted bugs that mean something without a log (the others only move a disk write
/// that diskless mode does not make) must be caught in diskless mode too.
#[cfg(feature = "planted-bugs")]
#[test]
fn diskless_planted_bugs_are_caught() {
    for bug in ["vote-after-amnesia", "commit-without-quorum"] {
        let caught = (1..=400).find(|&seed| !run_diskless(seed, Some(bug)).failures.is_empty());
        assert!(
            caught.is_some(),
            "{bug} was not caught in 400 diskless seeds"
        );
    }
}
