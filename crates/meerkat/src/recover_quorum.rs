//! `meerkat data recover-quorum`: turning the survivors of an ensemble that lost its quorum for
//! good into a new, smaller one (as etcd's `--force-new-cluster` and ClickHouse Keeper's
//! recovery mode do).
//!
//! On the chosen survivor, stopped: its state is recovered with every logged transaction
//! applied (what it logged becomes committed, as a leader's initial history would), and a
//! configuration transaction naming the new voters is applied on top at the first zxid of an
//! epoch above every one this server knew. That state is written as the only snapshot of a
//! fresh data dir, with both epoch files at that epoch; the old data dir is kept beside it.
//! Started first, the server leads the new configuration (it holds the newest epoch); other
//! survivors learn the configuration from its election notifications (a newer committed
//! version is adopted) and sync from it by SNAP, losing whatever they logged beyond it.
//!
//! What may be lost, said before anything is written: writes acknowledged by the lost members
//! and never logged here. `--compare` reads the other survivors' data dirs and refuses to go on
//! if one of them is further ahead, so that the most up-to-date survivor is the one recovered.

use anyhow::{bail, Context};
use replica::ensemble::server_spec::{ConfigText, ServerSpec};
use server::config::ServerConfig;
use std::path::{Path, PathBuf};
use storage::{epoch, Layout, RealFs};
use zab::membership::{CONFIG_NODE, RECONFIG_OP};
use zab::Zxid;

/// How far a data dir got: its epochs and the last transaction it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Standing {
    current_epoch: u32,
    last: Zxid,
}

pub fn run(zoo_cfg: &Path, members: &[u64], compare: &[PathBuf], yes: bool) -> anyhow::Result<()> {
    let config = ServerConfig::from_file(zoo_cfg)?;
    let layout = Layout::new(&config.data_dir, &config.data_log_dir);
    let me = read_myid(&config.data_dir)?;
    let members: Vec<u64> = if members.is_empty() {
        vec![me]
    } else {
        members.to_vec()
    };
    if !members.contains(&me) {
        bail!("--members {members:?} must name this server ({me}): it is the one recovered");
    }
    let lock = storage::lock::DataDirLock::acquire_all(&[&layout.snap_dir, &layout.wal_dir])
        .context("the server must be stopped")?;
    let recovered = storage::recovery::recover(&RealFs, &layout)?;
    let epochs = epoch::read(&RealFs, &layout)?;
    let mut tree = recovered.tree;
    let own = Standing {
        current_epoch: epochs.current,
        last: Zxid::from_i64(tree.last_processed_zxid()),
    };
    println!(
        "server {me}: currentEpoch {}, last transaction {:#x}",
        own.current_epoch,
        own.last.as_i64()
    );
    for other in compare {
        let layout = crate::data::layout_of(other)?;
        let theirs = Standing {
            current_epoch: epoch::read(&RealFs, &layout)?.current,
            last: Zxid::from_i64(
                storage::recovery::recover(&RealFs, &layout)?
                    .tree
                    .last_processed_zxid(),
            ),
        };
        println!(
            "{}: currentEpoch {}, last transaction {:#x}",
            other.display(),
            theirs.current_epoch,
            theirs.last.as_i64()
        );
        if theirs > own {
            bail!(
                "{} is further ahead than this server (currentEpoch {}, {:#x}): recover that one \
                 instead, or writes it holds are lost",
                other.display(),
                theirs.current_epoch,
                theirs.last.as_i64()
            );
        }
    }
    let known = replica::ensemble::reconfig::config_of_tree(&tree)
        .map(|c| c.members)
        .unwrap_or_else(|| server::initial_config(&config).members);
    let mut next = ConfigText::default();
    for sid in &members {
        let spec = known
            .get(sid)
            .with_context(|| format!("server {sid} is in no configuration this server knows"))?;
        next.members.insert(
            *sid,
            ServerSpec {
                observer: false,
                ..spec.clone()
            },
        );
    }
    let new_epoch = epochs.accepted.max(epochs.current).max(own.last.epoch()) + 1;
    next.version = Zxid::new(new_epoch, 0);
    println!(
        "WARNING: the new ensemble is {members:?}. Everything server {me} logged up to {:#x} \
         becomes committed; writes acknowledged only by the servers left out, after what this \
         server holds, are LOST. Other survivors give up what they logged beyond it.",
        own.last.as_i64()
    );
    println!(
        "new configuration (version {:#x}):\n{}",
        next.version.as_i64(),
        next.render()
    );
    if !yes {
        println!("nothing written: run again with --yes to do it");
        return Ok(());
    }
    let txn = proto::txn::Txn {
        header: proto::txn::TxnHeader {
            client_id: 0,
            cxid: 0,
            zxid: next.version.as_i64(),
            time: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64),
            op_type: RECONFIG_OP,
        },
        body: proto::txn::TxnBody::SetData(proto::txn::SetDataTxn {
            path: CONFIG_NODE.to_string(),
            data: Some(next.render().into_bytes()),
            version: -1,
        }),
    };
    tree.apply(&txn, &mut Vec::new());
    drop(lock);
    let kept = set_aside(&layout)?;
    let written = zkdata::meerkat_dir::write(&tree, &config.data_dir)?;
    if layout.wal_dir != layout.snap_dir {
        std::fs::create_dir_all(&layout.wal_dir)?;
    }
    println!(
        "wrote {} ({} bytes)",
        written.snapshot.display(),
        written.bytes
    );
    for path in kept {
        println!("the old data is kept in {}", path.display());
    }
    println!(
        "start server {me} first, then the other survivors of {members:?}; servers left out \
         must not be started with their old data"
    );
    Ok(())
}

fn read_myid(data_dir: &Path) -> anyhow::Result<u64> {
    let path = data_dir.join("myid");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    text.trim()
        .parse()
        .with_context(|| format!("{} holds no server id", path.display()))
}

/// Renames the data dir's `meerkat-1` directories aside (kept, never deleted).
fn set_aside(layout: &Layout) -> anyhow::Result<Vec<PathBuf>> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut kept = Vec::new();
    for dir in [&layout.snap_dir, &layout.wal_dir] {
        if dir.exists() {
            let aside = dir.with_extension(format!("before-recovery-{stamp}"));
            std::fs::rename(dir, &aside)
                .with_context(|| format!("cannot move {} aside", dir.display()))?;
            kept.push(aside);
        }
    }
    Ok(kept)
}
