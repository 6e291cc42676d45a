//! `meerkat bench`: the papers' experiments against meerkat, Apache ZooKeeper 3.9.3 and a
//! `null` server, in one invocation, reported side by side with ratios (DESIGN.md §9).
//!
//! # Layout
//! * [`target`], [`null_server`]: starting and stopping the servers under test.
//! * [`wire`], [`load`]: a pipelined load generator that speaks the protocol itself.
//! * [`scenarios`]: the experiments; [`report`]: table and JSON; [`cpu`]: /proc accounting.

pub mod cpu;
pub mod load;
pub mod null_server;
pub mod report;
pub mod scenarios;
pub mod target;
pub mod wire;

use report::Report;
use scenarios::{Context, Scale};
use std::path::PathBuf;
use target::{Programs, Target};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    /// Thesis Fig. 5.1: 1 and 60 synchronous clients creating 281-byte ephemeral-sequential
    /// znodes, forceSync=yes on both servers.
    SyncCreate,
    /// Group commit: 8 clients with 32 creates each in flight, forceSync=yes.
    GroupCommit,
    /// Thesis Table A.4: snapshot write and load time for 10k, 100k, 1M znodes of 300 bytes.
    Snapshot,
    /// Restart time with 10k and 100k (--full: also 1M) znodes, and a synchronous client's p99
    /// while snapshots run.
    Restart,
}

#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    #[arg(value_enum)]
    pub scenario: Scenario,
    /// Which servers to run against (meerkat, zookeeper and null when "all").
    #[arg(long, default_value = "all")]
    pub target: String,
    /// The papers' sizes and durations (default: quick sizes for a small machine).
    #[arg(long)]
    pub full: bool,
    /// Seconds-long sizes, to check the bench itself works.
    #[arg(long, hide = true)]
    pub tiny: bool,
    /// Where JSON results go.
    #[arg(long, default_value = "bench-results")]
    pub out: PathBuf,
    /// Scratch space for the servers' data dirs.
    #[arg(long, default_value = "target/bench-work")]
    pub work_dir: PathBuf,
}

fn targets(spec: &str) -> anyhow::Result<Vec<Target>> {
    use clap::ValueEnum;
    if spec == "all" {
        return Ok(vec![Target::Meerkat, Target::ZooKeeper, Target::Null]);
    }
    spec.split(',')
        .map(|t| Target::from_str(t.trim(), true).map_err(|e| anyhow::anyhow!("--target {t}: {e}")))
        .collect()
}

/// Runs one scenario and prints its table; returns the report (also written as JSON).
pub async fn run(
    args: &BenchArgs,
    programs: Programs,
    command_line: String,
) -> anyhow::Result<Report> {
    let ctx = Context {
        programs,
        targets: targets(&args.target)?,
        work_dir: args.work_dir.clone(),
        scale: Scale {
            full: args.full,
            tiny: args.tiny,
        },
    };
    let (name, (rows, details)) = match args.scenario {
        Scenario::SyncCreate => {
            let cases: &[(&str, usize, usize)] = if args.tiny {
                &[("1 client", 1, 1), ("4 clients", 4, 1)]
            } else {
                &[("1 client", 1, 1), ("60 clients", 60, 1)]
            };
            (
                "sync-create",
                scenarios::creates(&ctx, "sync-create", cases, 3, 281).await?,
            )
        }
        Scenario::GroupCommit => (
            "group-commit",
            scenarios::creates(
                &ctx,
                "group-commit",
                &[("8 clients x 32 in flight", 8, 32)],
                2,
                281,
            )
            .await?,
        ),
        Scenario::Snapshot => {
            let sizes: &[usize] = if args.tiny {
                &[1_000, 10_000]
            } else {
                &[10_000, 100_000, 1_000_000]
            };
            ("snapshot", scenarios::snapshot_times(&ctx, sizes)?)
        }
        Scenario::Restart => {
            let sizes: &[usize] = if args.tiny {
                &[2_000]
            } else if args.full {
                &[10_000, 100_000, 1_000_000]
            } else {
                &[10_000, 100_000]
            };
            ("restart", scenarios::restart(&ctx, sizes).await?)
        }
    };
    let report = Report {
        scenario: name.into(),
        command: command_line,
        date: report::today(),
        machine: report::machine(),
        rows,
        details,
    };
    print!("{}", report.table());
    let path = report.write_json(&args.out)?;
    println!("results: {}", path.display());
    Ok(report)
}
