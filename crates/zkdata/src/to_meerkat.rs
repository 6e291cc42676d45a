//! The restored ZooKeeper state as a meerkat tree: every znode with its data, ACL and
//! persisted stat as ZooKeeper stores them (meerkat shows clients the same Stat from them), and
//! the live sessions with their timeouts.

use crate::error::{Result, ZkDataError};
use crate::progress::{Progress, Stage};
use crate::restore::Restored;
use crate::zk_tree::ZkNode;
use std::collections::HashMap;
use tree::acl::AclList;
use tree::digest::NodeDigest;
use tree::{DataTree, TreeLoader};

/// Builds meerkat's tree, consuming the restored ZooKeeper tree (each node is freed once
/// copied, which keeps the peak memory near one tree). `/zookeeper/config`, which 3.4
/// snapshots lack and meerkat always has, is added when missing (with ZooKeeper's read-only
/// ACL and aversion −1); one ZooKeeper filled is emptied: the configuration is the
/// ensemble's own, not data. ZooKeeper rewrites the node from its configuration files at every
/// start; meerkat's first leader writes its zoo.cfg members there, and a member whose node is
/// filled takes its members from it, so ZooKeeper's old addresses must not come along.
pub fn to_meerkat(restored: &mut Restored, progress: Progress<'_>) -> Result<DataTree> {
    let zk = std::mem::take(&mut restored.tree);
    let total = zk.node_count() as u64;
    let zk_acls = zk.acls.clone();
    let needs_config = zk
        .find("/zookeeper")
        .is_some_and(|_| zk.find("/zookeeper/config").is_none());
    let mut loader = TreeLoader::new();
    let mut digest = NodeDigest::default();
    let mut acls: HashMap<i64, AclList> = HashMap::new();
    let mut failure: Option<ZkDataError> = None;
    let mut done = 0u64;
    let config = ZkNode {
        data: Some(Box::from(&b""[..])),
        acl: 0,
        stat: proto::StatPersisted {
            aversion: -1,
            ..proto::StatPersisted::default()
        },
        children: Default::default(),
    };
    let read_only = [proto::Acl {
        perms: proto::watch::perms::READ,
        id: proto::Id {
            scheme: "world".into(),
            id: "anyone".into(),
        },
    }];
    let snapshot = restored.snapshot.clone();
    let mut add = |loader: &mut TreeLoader,
                   acls: &mut HashMap<i64, AclList>,
                   path: &str,
                   node: &ZkNode,
                   acl_override: Option<&[proto::Acl]>|
     -> Result<()> {
        let acl = match acl_override {
            Some(list) => loader.intern_acl(list),
            None => match acls.get(&node.acl) {
                Some(acl) => acl.clone(),
                None => {
                    let list = zk_acls.get(node.acl).ok_or_else(|| ZkDataError::Invalid {
                        path: snapshot.clone(),
                        detail: format!(
                            "node {path} refers to ACL {} which the snapshot's ACL cache lacks",
                            node.acl
                        ),
                    })?;
                    let acl = loader.intern_acl(&list);
                    acls.insert(node.acl, acl.clone());
                    acl
                }
            },
        };
        digest.add(path, node.data.as_deref(), &node.stat);
        loader.add_node_shared(path, node.data.as_deref(), acl, node.stat.clone())?;
        Ok(())
    };
    zk.drain(|path, node| {
        if failure.is_some() {
            return;
        }
        // `/zookeeper/config` goes before `/zookeeper/quota` in name order.
        if needs_config && path == "/zookeeper/quota" {
            let added = add(
                &mut loader,
                &mut acls,
                "/zookeeper/config",
                &config,
                Some(&read_only),
            );
            if let Err(e) = added {
                failure = Some(e);
                return;
            }
        }
        let added = if path == "/zookeeper/config" {
            add(&mut loader, &mut acls, path, &config, Some(&read_only))
        } else {
            add(&mut loader, &mut acls, path, &node, None)
        };
        if let Err(e) = added {
            failure = Some(e);
        }
        done += 1;
        if done.is_multiple_of(16_384) {
            progress(Stage::Convert, done, total);
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    progress(Stage::Convert, total, total);
    for (&id, &timeout) in &restored.sessions {
        loader.add_session(id, timeout);
    }
    Ok(loader.finish(restored.last_zxid, digest.value())?)
}
