//! `meerkat data`: what an operator needs at 3 a.m. with a data dir — what is in it, whether
//! it is intact, and the one repair for a damaged log.

use clap::Subcommand;
use server::config::ServerConfig;
use std::path::{Path, PathBuf};
use storage::{inspect, Layout, RealFs};

#[derive(Subcommand)]
pub enum DataCommand {
    /// List snapshots and log segments with their zxid ranges and verify every checksum.
    /// Exits 1 if anything is damaged (a torn tail that recovery cuts is not damage).
    Inspect {
        /// A zoo.cfg (its dataDir and dataLogDir are used) or a data directory.
        target: PathBuf,
    },
    /// Cut a log segment at OFFSET (a damaged record), dropping it, everything after it, and
    /// every later segment. Transactions after the cut are lost on this server.
    Truncate {
        /// The zoo.cfg or data directory the segment belongs to.
        target: PathBuf,
        /// The segment file named in the error (wal-<zxid>.log).
        segment: PathBuf,
        /// The byte offset named in the error.
        offset: u64,
    },
}

pub fn run(command: DataCommand) -> anyhow::Result<()> {
    match command {
        DataCommand::Inspect { target } => {
            let layout = layout_of(&target)?;
            let report = inspect::inspect(&RealFs, &layout)?;
            print!("{}", report.render());
            if !report.is_healthy() {
                std::process::exit(1);
            }
            Ok(())
        }
        DataCommand::Truncate {
            target,
            segment,
            offset,
        } => {
            let layout = layout_of(&target)?;
            let _lock =
                storage::lock::DataDirLock::acquire_all(&[&layout.snap_dir, &layout.wal_dir])?;
            let removed = inspect::truncate_log(&RealFs, &layout, &segment, offset)?;
            println!("cut {} at offset {offset}", segment.display());
            for path in removed {
                println!("removed {}", path.display());
            }
            Ok(())
        }
    }
}

/// A zoo.cfg names both directories; a plain directory holds both.
fn layout_of(target: &Path) -> anyhow::Result<Layout> {
    if target.is_file() {
        let config = ServerConfig::from_file(target)?;
        Ok(Layout::new(&config.data_dir, &config.data_log_dir))
    } else {
        Ok(Layout::new(target, target))
    }
}
