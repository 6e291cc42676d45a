//! Random swarm runs as cargo tests: a few hundred seeds must pass, a seed must replay
//! exactly, elections must be fast, and (with `planted-bugs`) every planted bug must be caught.
#![allow(clippy::unwrap_used)]

use sim::{run, SimOptions};

fn run_seed(seed: u64, servers: Option<usize>, bug: Option<&str>) -> sim::RunReport {
    let mut o = SimOptions::from_seed(seed, servers);
    o.bug = bug.map(str::to_string);
    run(o)
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
        let caught =
            (1..=400).find(|&seed| !run_seed(seed, None, Some(bug.name())).failures.is_empty());
        assert!(
            caught.is_some(),
            "{} was not caught in 400 seeds",
            bug.name()
        );
    }
}
