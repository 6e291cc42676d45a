//! `sim`: run seeds of the deterministic simulator.
//!
//! ```text
//! sim --seeds N [--first S] [--servers K] [--bug NAME] [--diskless]   run N seeds
//! sim --seed S [--servers K] [--bug NAME] [--diskless]                 replay one seed
//! (with --diskless, `--snapshot-rest PERCENT` sets the busy snapshots' rest; default 300)
//! ```
//! `--diskless` runs the servers in diskless mode (DESIGN.md §5) under the diskless host
//! contract (`sim::diskless`), and adds the durability checks of `sim::durability`; the summary
//! then reports the writes lost at whole-ensemble power losses.
//! `--list` prints one line per seed; `--stop-at-first` stops at the first failing seed; `--no-durability-check` turns off the
//! per-commit quorum-durability invariant, to measure the end-to-end checks alone.
//! `--cluster` runs the simulator that runs the server's own replica and storage code
//! (`sim::cluster`) instead of the model; `--bug` then also takes the host's planted bugs;
//! `--force-snapshot-sync` makes every sync a SNAP (it reproduces an open durability bug, see
//! docs/verification.md, so it is off unless asked for).
//! With `--cluster`, `--read-only` turns on `readonlymode.enabled` in every server: members
//! cut off from their quorum serve read-only and refuse the simulated clients (which do not
//! ask for read-only), and stop when the election decides; every check still holds.
//! `--local-sessions` turns on `localSessionsEnabled` and `localSessionsUpgradingEnabled`:
//! new sessions are local, their ephemerals upgrade them, their closes are not replicated.
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
    diskless: bool,
    snapshot_rest: Option<u64>,
    cluster: bool,
    /// `--log`: the replicas' log lines on stderr (with `--cluster --seed S`).
    log: bool,
    /// `--force-snapshot-sync`: every sync is a SNAP (`zab::Config::force_snapshot_sync`) in
    /// every run, not only in the quarter of runs whose seed draws it.
    force_snapshot_sync: bool,
    /// `--reconfig` (cluster, durable): clients reconfigure in every run, not in a quarter.
    reconfig: bool,
    /// `--read-only`, `--local-sessions` (with `--cluster`).
    read_only: bool,
    local_sessions: bool,
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
        diskless: false,
        snapshot_rest: None,
        cluster: false,
        log: false,
        force_snapshot_sync: false,
        reconfig: false,
        read_only: false,
        local_sessions: false,
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
            "--diskless" => args.diskless = true,
            "--force-snapshot-sync" => args.force_snapshot_sync = true,
            "--reconfig" => args.reconfig = true,
            "--cluster" => args.cluster = true,
            "--read-only" => args.read_only = true,
            "--local-sessions" => args.local_sessions = true,
            "--log" => args.log = true,
            "--snapshot-rest" => {
                let pct = value("--snapshot-rest")?
                    .parse()
                    .map_err(|e| format!("{e}"))?;
                args.snapshot_rest = Some(pct);
            }
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

/// Writes lost in diskless runs, aggregated over seeds.
#[derive(Default)]
struct Losses {
    /// (lost txns, of which acknowledged to clients, span ms) per whole-ensemble power loss.
    power: Vec<(usize, usize, u64)>,
    /// The same for losses without a power loss (every server holding them crashed).
    other: Vec<(usize, usize, u64)>,
    revived: usize,
    full_house_ms: Vec<u64>,
    sessions_expired: usize,
    recovery_ms: Vec<u64>,
}

impl Losses {
    fn add(&mut self, report: &sim::RunReport) {
        for l in &report.losses {
            let row = (l.txns, l.acknowledged, l.span_ms);
            if l.after_power_loss {
                self.power.push(row);
            } else {
                self.other.push(row);
            }
        }
        self.revived += report.revived;
        self.full_house_ms
            .extend(report.full_house_ms.iter().copied());
        self.sessions_expired += report.sessions_expired;
        self.recovery_ms.extend(report.recovery_ms.iter().copied());
    }

    fn stats(rows: &[(usize, usize, u64)]) -> String {
        let mut txns: Vec<u64> = rows.iter().map(|r| r.0 as u64).collect();
        let mut spans: Vec<u64> = rows.iter().map(|r| r.2).collect();
        txns.sort_unstable();
        spans.sort_unstable();
        let acked: usize = rows.iter().map(|r| r.1).sum();
        format!(
            "events={} txns total={} median={} p99={} max={} (client-acknowledged {}); span median={}ms p99={}ms max={}ms",
            rows.len(),
            txns.iter().sum::<u64>(),
            percentile(&txns, 0.5),
            percentile(&txns, 0.99),
            txns.last().copied().unwrap_or(0),
            acked,
            percentile(&spans, 0.5),
            percentile(&spans, 0.99),
            spans.last().copied().unwrap_or(0)
        )
    }

    fn describe(&self) -> String {
        let mut fh = self.full_house_ms.clone();
        fh.sort_unstable();
        let mut rec = self.recovery_ms.clone();
        rec.sort_unstable();
        format!(
            "power-loss windows: {}\nother losses (no server holding them survived): {}; revived {}; sessions expired {}\nfull-house elections: {} (established after the last voter booted: median={}ms p99={}ms max={}ms)\nmeasured power-loss recovery (healthy network, all restarted at once): samples={} median={}ms p99={}ms max={}ms",
            Self::stats(&self.power),
            Self::stats(&self.other),
            self.revived,
            self.sessions_expired,
            fh.len(),
            percentile(&fh, 0.5),
            percentile(&fh, 0.99),
            fh.last().copied().unwrap_or(0),
            rec.len(),
            percentile(&rec, 0.5),
            percentile(&rec, 0.99),
            rec.last().copied().unwrap_or(0)
        )
    }

    fn summary(&self) -> String {
        let lost: usize = self.power.iter().map(|r| r.0).sum();
        let max = self.power.iter().map(|r| r.0).max().unwrap_or(0);
        let span = self.power.iter().map(|r| r.2).max().unwrap_or(0);
        format!(
            "power_losses={} lost_txns={lost} max_window_txns={max} max_window_ms={span}",
            self.power.len()
        )
    }
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
    if args.log {
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .without_time()
            .with_max_level(tracing::Level::DEBUG)
            .init();
    }
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
    if args.cluster {
        return run_cluster_seeds(&args, &seeds);
    }
    let verbose = args.one.is_some();
    let mut failures = 0u64;
    let mut ran = 0u64;
    let mut elections = Vec::new();
    let mut committed = 0usize;
    let mut losses = Losses::default();
    // A panic inside the protocol is a failure of that seed, not of the whole run.
    std::panic::set_hook(Box::new(|info| eprintln!("panic: {info}")));
    for seed in seeds {
        let mut opts = SimOptions::from_seed(seed, args.servers);
        opts.bug = args.bug.clone();
        opts.verbose = verbose;
        opts.check_quorum_durability = !args.end_to_end_only;
        opts.diskless = args.diskless;
        if let Some(pct) = args.snapshot_rest {
            opts.snapshot_rest_percent = pct;
        }
        let outcome = std::panic::catch_unwind(|| run(opts));
        ran += 1;
        match outcome {
            Ok(report) => {
                elections.extend(report.election_ms.iter().copied());
                committed += report.committed;
                losses.add(&report);
                if verbose || !report.failures.is_empty() || args.list {
                    let lost = if args.diskless {
                        let l: Vec<_> = report
                            .losses
                            .iter()
                            .map(|l| {
                                let pl = if l.after_power_loss { "P" } else { "" };
                                format!("{pl}{}/{}/{}ms", l.txns, l.acknowledged, l.span_ms)
                            })
                            .collect();
                        format!(" lost={l:?}")
                    } else {
                        String::new()
                    };
                    println!(
                        "seed {} servers={} ops={} committed={} events={} trace={:016x} election_ms={:?}{lost}",
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
                        "  reproduce: scripts/sim.sh --seed {seed}{}{}",
                        args.bug
                            .as_ref()
                            .map(|b| format!(" --bug {b}"))
                            .unwrap_or_default(),
                        if args.diskless { " --diskless" } else { "" }
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
    if args.diskless {
        println!("{}", losses.describe());
        println!(
            "sim: seeds={ran} failures={failures} mode=diskless {}",
            losses.summary()
        );
    } else {
        println!("sim: seeds={ran} failures={failures}");
    }
    if failures > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// `--cluster`: seeds of the simulator that runs the server's own code.
fn run_cluster_seeds(args: &Args, seeds: &[u64]) -> ExitCode {
    use sim::cluster::{run_cluster, ClusterOptions};
    std::panic::set_hook(Box::new(|info| eprintln!("panic: {info}")));
    let (mut ran, mut failures) = (0u64, 0u64);
    let (mut committed, mut answered, mut throttled, mut expired, mut crashes) = (0, 0, 0, 0, 0);
    let mut read_only_starts = 0;
    let mut stale = 0;
    // Diskless: (lost writes, span ms) per loss after a power loss, and the other losses.
    let mut power: Vec<(usize, u64)> = Vec::new();
    let mut other: Vec<(usize, u64)> = Vec::new();
    let (mut reconfigs, mut reconfigs_committed) = (0usize, 0usize);
    for &seed in seeds {
        let mut opts = ClusterOptions::from_seed(seed, args.servers, args.diskless);
        opts.node.bug = args.bug.clone();
        // The seed draws it for a quarter of the runs; the switch makes it every run.
        opts.node.force_snapshot_sync |= args.force_snapshot_sync;
        opts.node.reconfig |= args.reconfig && !args.diskless;
        opts.node.read_only = args.read_only;
        opts.node.local_sessions = args.local_sessions;
        let outcome = std::panic::catch_unwind(|| run_cluster(opts));
        ran += 1;
        match outcome {
            Ok(report) => {
                committed += report.committed;
                answered += report.answered;
                throttled += report.throttled;
                stale += report.stale_reports;
                expired += report.sessions_expired;
                read_only_starts += report.read_only_starts;
                crashes += report.crashes;
                reconfigs += report.reconfigs;
                reconfigs_committed += report.reconfigs_committed;
                for &(txns, span, after_power_loss) in &report.losses {
                    if after_power_loss {
                        power.push((txns, span));
                    } else {
                        other.push((txns, span));
                    }
                }
                if args.one.is_some() || args.list || !report.failures.is_empty() {
                    println!(
                        "seed {seed} servers={} ops={} answered={} committed={} throttled={} expired={} crashes={} events={}",
                        report.servers,
                        report.ops,
                        report.answered,
                        report.committed,
                        report.throttled,
                        report.sessions_expired,
                        report.crashes,
                        report.events
                    );
                }
                if !report.failures.is_empty() {
                    failures += 1;
                    for f in &report.failures {
                        println!("  FAIL seed {seed}: {f}");
                    }
                    let bug = args.bug.as_ref().map(|b| format!(" --bug {b}"));
                    println!(
                        "  reproduce: scripts/sim.sh --cluster{}{}{} --seed {seed}{}",
                        if args.diskless { " --diskless" } else { "" },
                        if args.read_only { " --read-only" } else { "" },
                        if args.local_sessions {
                            " --local-sessions"
                        } else {
                            ""
                        },
                        bug.unwrap_or_default()
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
    println!(
        "cluster: committed txns={committed} answered ops={answered} throttled={throttled} sessions expired={expired} crashes={crashes} stale durable reports={stale} reconfigs={reconfigs} (committed {reconfigs_committed})"
    );
    if args.read_only {
        println!("read-only: servers started serving read-only {read_only_starts} times");
    }
    if args.diskless {
        let describe = |rows: &[(usize, u64)]| {
            let mut txns: Vec<u64> = rows.iter().map(|r| r.0 as u64).collect();
            let mut spans: Vec<u64> = rows.iter().map(|r| r.1).collect();
            txns.sort_unstable();
            spans.sort_unstable();
            format!(
                "losses={} txns total={} median={} p99={} max={}; span median={}ms p99={}ms max={}ms",
                rows.len(),
                txns.iter().sum::<u64>(),
                percentile(&txns, 0.5),
                percentile(&txns, 0.99),
                txns.last().copied().unwrap_or(0),
                percentile(&spans, 0.5),
                percentile(&spans, 0.99),
                spans.last().copied().unwrap_or(0)
            )
        };
        println!("after a power loss: {}", describe(&power));
        println!("other (every holder crashed): {}", describe(&other));
        println!("sim: seeds={ran} failures={failures} mode=cluster-diskless");
    } else {
        println!("sim: seeds={ran} failures={failures} mode=cluster");
    }
    if failures > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
