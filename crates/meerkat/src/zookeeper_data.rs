//! `meerkat data import --from-zookeeper` and `meerkat data export --to-zookeeper`: moving a
//! ZooKeeper ensemble's state in and out (docs/migration.md). The work is in the `zkdata`
//! crate; this is the operator's side: arguments, a progress bar, a summary.

use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::time::Instant;
use zkdata::Stage;

/// Draws one bar per stage on a terminal (nothing otherwise: the summary says it all).
struct Bar {
    bar: Option<(Stage, ProgressBar)>,
}

impl Bar {
    fn new() -> Bar {
        Bar { bar: None }
    }

    fn update(&mut self, stage: Stage, done: u64, total: u64) {
        if self.bar.as_ref().map(|(s, _)| *s) != Some(stage) {
            self.finish();
            let bar = ProgressBar::new(total);
            let (label, unit) = match stage {
                Stage::Snapshot => ("reading snapshot", "{bytes}/{total_bytes}"),
                Stage::Log => ("replaying logs  ", "{bytes}/{total_bytes}"),
                Stage::Convert => ("building tree   ", "{pos}/{len} znodes"),
                Stage::Write => ("writing         ", "{pos}/{len} znodes"),
            };
            let template = format!("{label} [{{bar:40}}] {unit} {{elapsed}}");
            if let Ok(style) = ProgressStyle::with_template(&template) {
                bar.set_style(style.progress_chars("=> "));
            }
            self.bar = Some((stage, bar));
        }
        if let Some((_, bar)) = &self.bar {
            if total > 0 {
                bar.set_length(total);
            }
            bar.set_position(done);
        }
    }

    fn finish(&mut self) {
        if let Some((_, bar)) = self.bar.take() {
            bar.finish();
        }
    }
}

/// A zoo.cfg names a dataDir and a dataLogDir; a directory is both.
fn dirs_of(target: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    if target.is_file() {
        let config = server::config::ServerConfig::from_file(target)?;
        Ok((config.data_dir, config.data_log_dir))
    } else {
        Ok((target.to_path_buf(), target.to_path_buf()))
    }
}

pub fn import(
    zk_source: &Path,
    zk_data_log_dir: Option<&Path>,
    meerkat_target: Option<&Path>,
    dry_run: bool,
) -> anyhow::Result<()> {
    let started = Instant::now();
    // ZooKeeper's zoo.cfg or its dataDir (with --zk-datalogdir when separate).
    let (zk_data_dir, zk_cfg_log_dir) = dirs_of(zk_source)?;
    let zk_data_log_dir = zk_data_log_dir
        .map(Path::to_path_buf)
        .or_else(|| (zk_cfg_log_dir != zk_data_dir).then_some(zk_cfg_log_dir));
    // meerkat's zoo.cfg or its dataDir; a separate dataLogDir must not hold a meerkat log yet.
    let meerkat_data_dir = match meerkat_target {
        Some(target) => {
            let (data_dir, log_dir) = dirs_of(target)?;
            zkdata::meerkat_dir::check_target(&data_dir)?;
            if log_dir != data_dir {
                zkdata::meerkat_dir::check_target(&log_dir)?;
            }
            Some(data_dir)
        }
        None if dry_run => None,
        None => anyhow::bail!("MEERKAT_DATADIR is required unless --dry-run is given"),
    };
    let meerkat_data_dir = meerkat_data_dir.as_deref();
    let source = zkdata::locate(&zk_data_dir, zk_data_log_dir.as_deref())?;
    let mut bar = Bar::new();
    let mut progress = |stage, done, total| bar.update(stage, done, total);
    let mut restored = zkdata::restore(&source, &mut progress)?;
    let tree = zkdata::to_meerkat::to_meerkat(&mut restored, &mut progress)?;
    bar.finish();
    print_report(&source, &restored);
    let summary = format!(
        "znodes: {}  sessions: {} ({} ephemerals)  last zxid: {:#x}",
        tree.node_count(),
        tree.sessions().len(),
        tree.ephemeral_count(),
        tree.last_processed_zxid(),
    );
    match meerkat_data_dir {
        Some(dir) if !dry_run => {
            let written = zkdata::meerkat_dir::write(&tree, dir)?;
            println!(
                "wrote {} ({} bytes)",
                written.snapshot.display(),
                written.bytes
            );
            println!("{summary}  time: {:.2} s", started.elapsed().as_secs_f64());
            if dir.join("myid").exists() {
                // Empty members outvote this one if a majority of them runs before it joins.
                println!(
                    "this data dir has a myid: in an ensemble, either copy {} to every other \
                     member's dataDir, or start this member before the empty ones \
                     (docs/migration.md)",
                    written.dir.display()
                );
            }
        }
        _ => {
            println!("{summary}  time: {:.2} s", started.elapsed().as_secs_f64());
            println!("dry run: the ZooKeeper data reads back whole; nothing was written");
        }
    }
    Ok(())
}

pub fn export(layout: &storage::Layout, zk_data_dir: &Path) -> anyhow::Result<()> {
    let started = Instant::now();
    let _lock = storage::lock::DataDirLock::acquire_all(&[&layout.snap_dir, &layout.wal_dir])?;
    let recovered = storage::recovery::recover(&storage::RealFs, layout)?;
    let tree = recovered.tree;
    let mut bar = Bar::new();
    let mut progress = |stage, done, total| bar.update(stage, done, total);
    let exported = zkdata::export::export(&tree, zk_data_dir, &mut progress)?;
    bar.finish();
    println!(
        "wrote {} ({} bytes)",
        exported.snapshot.display(),
        exported.written.bytes
    );
    println!(
        "znodes: {}  sessions: {}  last zxid: {:#x}  digest: {:#x}  time: {:.2} s",
        exported.written.nodes,
        exported.written.sessions,
        exported.written.zxid,
        exported.written.digest,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// What the restore did: snapshots skipped, tails cut, files read, digests compared.
fn print_report(source: &zkdata::Source, restored: &zkdata::Restored) {
    for (path, why) in &restored.skipped_snapshots {
        println!("skipped {}: {why}", path.display());
    }
    for (path, offset, why) in &restored.torn {
        println!(
            "cut {} at byte offset {offset}: {why} (as ZooKeeper cuts it)",
            path.display()
        );
    }
    let snapshot_name = restored
        .snapshot
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    println!(
        "read {} ({snapshot_name}) and {} log file(s): {} transaction(s) replayed after zxid {:#x}",
        source.snap_dir.display(),
        restored.logs_read.len(),
        restored.txns_replayed,
        restored.snapshot_zxid,
    );
    match (
        restored.snapshot_digest_checked,
        restored.snapshot_digest_unreached,
    ) {
        (Some(zxid), _) => println!(
            "digest: the snapshot's matches at zxid {zxid:#x}; {} logged digest(s) match",
            restored.txn_digests_checked
        ),
        (None, Some(zxid)) => println!(
            "digest: the logs never reach the snapshot digest's zxid {zxid:#x}, so it was not \
             compared (ZooKeeper warns about this too)"
        ),
        (None, None) => println!(
            "digest: none in the snapshot; {} logged digest(s) match",
            restored.txn_digests_checked
        ),
    }
    if !restored.dead_sessions.is_empty() {
        println!(
            "removed the ephemerals of {} session(s) that had ended, as ZooKeeper does at start-up",
            restored.dead_sessions.len()
        );
    }
}
