//! `meerkat`: the command-line entry point (server today; cli, bench and ensemble to come).

use anyhow::Context;
use clap::{Parser, Subcommand};
use server::config::ServerConfig;
use std::path::PathBuf;

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
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MEERKAT_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match cli.command {
        Command::Server { config } => run_server(config),
    }
}

fn run_server(path: Option<PathBuf>) -> anyhow::Result<()> {
    let config = match &path {
        None => ServerConfig::embedded_default(),
        Some(path) => match ServerConfig::from_file(path) {
            Ok(config) => config,
            Err(e) => {
                eprintln!("meerkat: {e}");
                std::process::exit(2);
            }
        },
    };
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("cannot create data directory {}", config.data_dir.display()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let running = server::start(config)
            .await
            .context("cannot start the client listener")?;
        tokio::select! {
            _ = running.wait() => {}
            _ = tokio::signal::ctrl_c() => tracing::info!("interrupted; shutting down"),
        }
        Ok(())
    })
}
