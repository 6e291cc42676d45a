//! `sim`: run seeds of the deterministic simulator.
//!
//! ```text
//! sim --seeds N [--first S] [--servers K] [--bug NAME]   run N seeds
//! sim --seed S [--servers K] [--bug NAME]                 replay one seed with a readable trace
//! ```
//! `--list` prints one line per seed; `--stop-at-first` stops at the first failing seed; `--no-durability-check` turns off the
//! per-commit quorum-durability invariant, to measure the end-to-end checks alone.
//! The last line is always `sim: seeds=N failures=F`; the exit code is non-zero when F > 0.

use sim::{run, SimOptions};
use std::process::ExitCode;

struct Args {
    seeds: u64,
    first: u64,
    one: Option<u64>,
    servers: Option<usize>,
    bug: Option<String>,
    stop_at_first: bool,
    end_to_end_only: bool,
    list: bool,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        seeds: 100,
        first: 1,
        one: None,
        servers: None,
        bug: None,
        stop_at_first: false,
        end_to_end_only: false,
        list: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--seeds" => args.seeds = value("--seeds")?.parse().map_err(|e| format!("{e}"))?,
            "--first" => args.first = value("--first")?.parse().map_err(|e| format!("{e}"))?,
            "--seed" => args.one = Some(value("--seed")?.parse().map_err(|e| format!("{e}"))?),
            "--servers" => {
                let k: usize = value("--servers")?.parse().map_err(|e| format!("{e}"))?;
                if ![3, 5, 7].contains(&k) {
                    return Err("--servers must be 3, 5 or 7".into());
                }
                args.servers = Some(k);
            }
            "--bug" => args.bug = Some(value("--bug")?),
            "--stop-at-first" => args.stop_at_first = true,
            "--no-durability-check" => args.end_to_end_only = true,
            "--list" => args.list = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("sim: {e}");
            println!("sim: seeds=0 failures=1");
            return ExitCode::FAILURE;
        }
    };
    #[cfg(not(feature = "planted-bugs"))]
    if args.bug.is_some() {
        eprintln!("sim: --bug needs the planted-bugs feature");
        println!("sim: seeds=0 failures=1");
        return ExitCode::FAILURE;
    }
    let seeds: Vec<u64> = match args.one {
        Some(s) => vec![s],
        None => (args.first..args.first + args.seeds).collect(),
    };
    let verbose = args.one.is_some();
    let mut failures = 0u64;
    let mut ran = 0u64;
    let mut elections = Vec::new();
    let mut committed = 0usize;
    // A panic inside the protocol is a failure of that seed, not of the whole run.
    std::panic::set_hook(Box::new(|info| eprintln!("panic: {info}")));
    for seed in seeds {
        let mut opts = SimOptions::from_seed(seed, args.servers);
        opts.bug = args.bug.clone();
        opts.verbose = verbose;
        opts.check_quorum_durability = !args.end_to_end_only;
        let outcome = std::panic::catch_unwind(|| run(opts));
        ran += 1;
        match outcome {
            Ok(report) => {
                elections.extend(report.election_ms.iter().copied());
                committed += report.committed;
                if verbose || !report.failures.is_empty() || args.list {
                    println!(
                        "seed {} servers={} ops={} committed={} events={} trace={:016x} election_ms={:?}",
                        seed,
                        report.servers,
                        report.ops,
                        report.committed,
                        report.events,
                        report.trace_hash,
                        report.election_ms
                    );
                }
                if !report.failures.is_empty() {
                    failures += 1;
                    for f in &report.failures {
                        println!("  FAIL seed {seed}: {f}");
                    }
                    println!(
                        "  reproduce: scripts/sim.sh --seed {seed}{}",
                        args.bug
                            .as_ref()
                            .map(|b| format!(" --bug {b}"))
                            .unwrap_or_default()
                    );
                }
            }
            Err(_) => {
                failures += 1;
                println!("  FAIL seed {seed}: panicked");
            }
        }
        if failures > 0 && args.stop_at_first {
            break;
        }
    }
    elections.sort_unstable();
    println!(
        "elections: samples={} median={}ms p99={}ms max={}ms; committed txns={}",
        elections.len(),
        percentile(&elections, 0.5),
        percentile(&elections, 0.99),
        elections.last().copied().unwrap_or(0),
        committed
    );
    println!("sim: seeds={ran} failures={failures}");
    if failures > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
