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
    /// Make a meerkat data dir from a stopped Apache ZooKeeper's (3.4-3.9): the newest valid
    /// snapshot plus the logs after it, replayed as ZooKeeper replays them on restart, digests
    /// checked. The ZooKeeper directories are only read. Nothing is written to MEERKAT_DATADIR
    /// unless the whole import succeeds.
    #[command(
        override_usage = "meerkat data import --from-zookeeper ZK_DATADIR [--zk-datalogdir DIR] [--dry-run] MEERKAT_DATADIR"
    )]
    Import {
        /// ZooKeeper's dataDir (holding version-2/snapshot.*), or its zoo.cfg (dataDir and
        /// dataLogDir are read from it).
        #[arg(long = "from-zookeeper", value_name = "ZK_DATADIR")]
        from_zookeeper: PathBuf,
        /// ZooKeeper's dataLogDir, when it is not the dataDir.
        #[arg(long = "zk-datalogdir", value_name = "DIR")]
        zk_datalogdir: Option<PathBuf>,
        /// Read and verify everything, write nothing.
        #[arg(long)]
        dry_run: bool,
        /// The meerkat dataDir to create the data in (it must not hold meerkat data yet), or
        /// the meerkat server's zoo.cfg.
        #[arg(value_name = "MEERKAT_DATADIR")]
        meerkat_datadir: Option<PathBuf>,
    },
    /// After losing a quorum for good: make this stopped server (and the survivors named in
    /// --members) a new, smaller ensemble. Everything this server logged becomes committed;
    /// writes acknowledged only by the lost members are gone. Run it on the most up-to-date
    /// survivor (--compare checks that against the others' data dirs), start it, then the
    /// other survivors: they take its configuration and sync from it.
    #[command(
        override_usage = "meerkat data recover-quorum ZOO_CFG [--members 1,2] [--compare DIR_OR_CFG]... --yes"
    )]
    RecoverQuorum {
        /// This server's zoo.cfg (dataDir, dataLogDir, myid, the members' addresses).
        zoo_cfg: PathBuf,
        /// The ids of the new ensemble's voters, this server's among them (default: it alone).
        #[arg(long, value_delimiter = ',')]
        members: Vec<u64>,
        /// Another survivor's data dir or zoo.cfg: refuse unless this server is at least as
        /// up to date as it.
        #[arg(long)]
        compare: Vec<PathBuf>,
        /// Do it (without it, only what would be done is printed).
        #[arg(long)]
        yes: bool,
    },
    /// Write a meerkat data dir's state as a ZooKeeper snapshot that Apache ZooKeeper 3.9 starts
    /// from (the way back). The meerkat server must be stopped.
    #[command(override_usage = "meerkat data export --to-zookeeper MEERKAT_DATADIR ZK_DATADIR")]
    Export {
        /// Required, to make the direction plain.
        #[arg(long = "to-zookeeper", required = true)]
        to_zookeeper: bool,
        /// A zoo.cfg or the meerkat data directory.
        #[arg(value_name = "MEERKAT_DATADIR")]
        meerkat_datadir: PathBuf,
        /// ZooKeeper's dataDir to create version-2/ in (it must not have one yet).
        #[arg(value_name = "ZK_DATADIR")]
        zk_datadir: PathBuf,
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
        DataCommand::Import {
            from_zookeeper,
            zk_datalogdir,
            dry_run,
            meerkat_datadir,
        } => crate::zookeeper_data::import(
            &from_zookeeper,
            zk_datalogdir.as_deref(),
            meerkat_datadir.as_deref(),
            dry_run,
        ),
        DataCommand::RecoverQuorum {
            zoo_cfg,
            members,
            compare,
            yes,
        } => crate::recover_quorum::run(&zoo_cfg, &members, &compare, yes),
        DataCommand::Export {
            to_zookeeper: _,
            meerkat_datadir,
            zk_datadir,
        } => crate::zookeeper_data::export(&layout_of(&meerkat_datadir)?, &zk_datadir),
    }
}

/// A zoo.cfg names both directories; a plain directory holds both.
pub(crate) fn layout_of(target: &Path) -> anyhow::Result<Layout> {
    if target.is_file() {
        let config = ServerConfig::from_file(target)?;
        Ok(Layout::new(&config.data_dir, &config.data_log_dir))
    } else {
        Ok(Layout::new(target, target))
    }
}
