//! `meerkat`: the command-line entry point: server, data-dir tools, cli, bench and ensemble.

mod data;
mod ensemble;
mod recover_quorum;
mod thread_cache;
mod zookeeper_data;

use anyhow::Context;
use clap::{Parser, Subcommand};
use server::config::ServerConfig;
use std::path::PathBuf;

mod cli;

#[derive(Parser)]
#[command(
    name = "meerkat",
    version,
    about = "A ZooKeeper-compatible coordination service"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a server. Without CONFIG: standalone on 127.0.0.1:2181 with data in ./meerkat-data.
    #[command(after_long_help = server::config::HELP)]
    Server {
        /// A zoo.cfg, read as Apache ZooKeeper reads it (see --help for every key).
        config: Option<PathBuf>,
        /// Diskless mode, as `diskless=true` in the zoo.cfg: no transaction log; durability
        /// from the replicas, busy snapshots and failure checkpoints (docs/durability.md).
        #[arg(long)]
        diskless: bool,
    },
    /// Inspect or repair a data dir; import from or export to Apache ZooKeeper.
    #[command(subcommand)]
    Data(data::DataCommand),
    /// Run a benchmark against meerkat, Apache ZooKeeper 3.9.3 and a null server, side by side.
    Bench(bench::BenchArgs),
    /// A local ensemble in one command: `up -n 3`, `status`, `down` (data dirs, configs, pids
    /// and logs under --dir, default ./meerkat-ensemble).
    #[command(subcommand)]
    Ensemble(ensemble::EnsembleCommand),
    /// A zkCli-style shell: `meerkat cli [-server HOSTS] [COMMAND ARGS...]`. With a command, runs
    /// it and exits with zkCli's codes (0 done, 1 failed, 127 unknown command, 2 bad
    /// invocation); without, an interactive shell with history and completion.
    #[command(disable_help_flag = true)]
    Cli {
        /// `-server host:port[,host:port...][/chroot]` (default 127.0.0.1:2181), then the command.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // Before any thread starts: this may replace the process (see thread_cache).
    let cache_sized = match cli.command {
        Command::Server { .. } => thread_cache::resize_by_reexec(),
        _ => Ok(()),
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MEERKAT_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    if let Err(why) = cache_sized {
        tracing::warn!(%why, "glibc's per-thread cache keeps its default size (slower under load)");
    }
    match cli.command {
        Command::Server { config, diskless } => run_server(config, diskless),
        Command::Data(command) => data::run(command),
        Command::Bench(args) => run_bench(args),
        Command::Ensemble(command) => ensemble::run(command),
        Command::Cli { args } => std::process::exit(cli::main(args)),
    }
}

fn run_server(path: Option<PathBuf>, diskless: bool) -> anyhow::Result<()> {
    let mut config = match &path {
        None => ServerConfig::embedded_default(),
        Some(path) => match ServerConfig::from_file(path) {
            Ok(config) => config,
            Err(e) => {
                eprintln!("meerkat: {e}");
                std::process::exit(2);
            }
        },
    };
    config.diskless |= diskless;
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("cannot create data directory {}", config.data_dir.display()))?;
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = config.server_threads {
        builder.worker_threads(threads as usize);
    }
    let runtime = builder.enable_all().build()?;
    tracing::info!(
        threads = runtime.metrics().num_workers(),
        from = if config.server_threads.is_some() {
            "serverThreads"
        } else {
            "the CPUs"
        },
        "threads for connections, peers and the core"
    );
    runtime.block_on(async {
        let hand_over_within = std::time::Duration::from_millis(
            server::limits::hand_over_within_ms(config.tick_time_ms),
        );
        let mut running = match server::start(config).await {
            Ok(running) => running,
            Err(e) => {
                tracing::error!("cannot start: {e}");
                std::process::exit(1);
            }
        };
        // SIGTERM is how init systems and `meerkat ensemble down` stop a server: say so in the
        // log, as for Ctrl-C, instead of vanishing without a line.
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let terminated = tokio::select! {
            result = running.wait() => {
                if let Err(e) = result {
                    tracing::error!("server stopped: {e}");
                    std::process::exit(1);
                }
                false
            }
            _ = tokio::signal::ctrl_c() => {
                tracing::info!("interrupted; shutting down");
                false
            }
            _ = terminate.recv() => true,
        };
        if terminated {
            // A planned stop: a leader first hands over to its most up-to-date follower, so
            // the ensemble needs no election timeout (docs/ensemble.md).
            match running.hand_over_leadership(hand_over_within).await {
                Ok(successor) => {
                    // The ABDICATE must reach every follower: one that missed it would wait
                    // out its timeout and could elect another server than the successor.
                    running
                        .wait_peers_drained(std::time::Duration::from_secs(1))
                        .await;
                    tracing::info!(
                        successor,
                        "terminated (SIGTERM); handed leadership over, shutting down"
                    )
                }
                Err(why) => tracing::info!(%why, "terminated (SIGTERM); shutting down"),
            }
        }
        Ok(())
    })
}

fn run_bench(args: bench::BenchArgs) -> anyhow::Result<()> {
    let programs = bench::target::Programs::locate()?;
    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(bench::run(&args, programs, command_line))?;
    Ok(())
}
