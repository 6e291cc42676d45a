//! Dynamic reconfiguration on the replica's side (Zab's side is `zab::membership` and its
//! activation): the leader's preparation of a `reconfig` request, in the order and with the
//! errors of ZooKeeper 3.9's `PrepRequestProcessor`; the first configuration an ensemble
//! writes to `/zookeeper/config`; and the addresses of the members, for the host.
//!
//! A reconfiguration is a transaction of op type `reconfig` whose body is a `setData` of
//! `/zookeeper/config` (version −1, as ZooKeeper writes it) with the new configuration's text,
//! whose `version=` is the transaction's own zxid.

use super::server_spec::{parse_server_key, ConfigText, ServerSpec};
use super::state::Work;
use crate::output::Output;
use crate::replica::Replica;
use crate::store::Store;
use proto::error_code::ErrorCode;
use proto::records::ReconfigRequest;
use proto::txn::{SetDataTxn, Txn, TxnBody, TxnHeader};
use proto::watch::perms;
use proto::Id;
use std::collections::{BTreeMap, BTreeSet};
use zab::membership::{CONFIG_NODE, RECONFIG_OP};
use zab::{Membership, Sid, Zxid};

/// The configuration a tree's `/zookeeper/config` holds, if it holds one (a server booting
/// after a reconfiguration takes its members from there, not from its configuration file).
pub fn config_of_tree(tree: &tree::DataTree) -> Option<ConfigText> {
    let data = tree.get(CONFIG_NODE)?.data.filter(|d| !d.is_empty())?;
    let config = ConfigText::parse(std::str::from_utf8(data).ok()?).ok()?;
    (!config.members.is_empty()).then_some(config)
}

/// Everything a reconfiguration's preparation needs besides the replica.
pub(crate) struct ReconfigCall<'a> {
    pub session_id: i64,
    pub xid: i32,
    pub zxid: i64,
    pub time_ms: i64,
    pub auth_ids: &'a [Id],
    pub request: &'a ReconfigRequest,
}

impl<S: Store> Replica<S> {
    /// The leader's transaction for a `reconfig` request: the new configuration, or the error
    /// ZooKeeper gives, checked in ZooKeeper's order.
    pub(crate) fn prepare_reconfig(&mut self, call: ReconfigCall<'_>) -> Txn {
        let config = match self.check_reconfig(&call) {
            Ok(config) => config,
            Err(code) => {
                tracing::info!(error = ?code, "reconfig refused");
                return super::requests::error_txn(
                    call.session_id,
                    call.xid,
                    call.zxid,
                    call.time_ms,
                    code,
                );
            }
        };
        tracing::info!(zxid = format!("{:#x}", call.zxid), config = %config.render().replace('\n', " "), "reconfig proposed");
        config_txn(call.session_id, call.xid, call.zxid, call.time_ms, &config)
    }

    fn check_reconfig(&self, call: &ReconfigCall<'_>) -> Result<ConfigText, ErrorCode> {
        if !self.settings.reconfig_enabled {
            return Err(ErrorCode::ReconfigDisabled);
        }
        let ensemble = self.ensemble.as_deref().ok_or(ErrorCode::Unimplemented)?;
        let zab = &ensemble.zab;
        if zab.config().pending.is_some() {
            return Err(ErrorCode::ReconfigInProgress);
        }
        let last_seen = zab.last_seen_version();
        let from = call.request.cur_config_id;
        if from != -1 && from != last_seen.as_i64() {
            tracing::info!(
                from = format!("{from:#x}"),
                last_seen = %last_seen,
                "reconfig from a configuration that is not the last one seen"
            );
            return Err(ErrorCode::BadVersion);
        }
        let current = self.active_config_text();
        let mut next = match &call.request.new_members {
            Some(members) => {
                ConfigText::parse(members).map_err(|e| bad_arguments(&e.to_string()))?
            }
            None => incremental(&current, call.request)?,
        };
        next.version = Zxid::from_i64(call.zxid);
        let voters: BTreeSet<Sid> = next.voters().collect();
        // ZooKeeper's standaloneEnabled (default true) demands two voters.
        let voters_min = if self.settings.standalone_enabled {
            2
        } else {
            1
        };
        if voters.len() < voters_min {
            return Err(bad_arguments(
                "Reconfig failed - new configuration must include at least 2 followers",
            ));
        }
        if !zab.is_quorum_synced(&voters) {
            tracing::warn!(
                ?voters,
                "Reconfig failed - there must be a connected and synced quorum in new configuration"
            );
            return Err(ErrorCode::NewConfigNoQuorum);
        }
        // WRITE on /zookeeper/config, which only the super user has (meerkat has no skipACL).
        let node = self.tree.get(CONFIG_NODE).ok_or(ErrorCode::NoNode)?;
        tree::acl::check_acl(node.acl, perms::WRITE, call.auth_ids)?;
        Ok(next)
    }

    /// The configuration `/zookeeper/config` holds, or the one from the configuration file
    /// while it holds none.
    pub(crate) fn active_config_text(&self) -> ConfigText {
        config_of_tree(&self.tree).unwrap_or_else(|| self.settings.initial_config.clone())
    }

    /// A new leader of an ensemble whose `/zookeeper/config` is still empty writes the
    /// configuration file's members there first, as ZooKeeper 3.5+ fills it in every ensemble.
    pub(crate) fn queue_initial_config(&mut self) {
        let empty = self
            .tree
            .get(CONFIG_NODE)
            .is_none_or(|n| n.data.is_none_or(<[u8]>::is_empty));
        if !empty || self.settings.initial_config.members.is_empty() {
            return;
        }
        if let Some(ensemble) = self.ensemble() {
            ensemble.backlog.push_front(Work::InitialConfig);
        }
    }

    /// The transaction of [`Replica::queue_initial_config`]'s work.
    pub(crate) fn prepare_initial_config(&mut self, zxid: i64, time_ms: i64) -> Txn {
        let mut config = self.settings.initial_config.clone();
        config.version = Zxid::from_i64(zxid);
        config_txn(0, 0, zxid, time_ms, &config)
    }

    /// Keeps the members' addresses from a configuration text this server saw (a proposal, a
    /// delivered transaction, its tree).
    pub(crate) fn learn_addresses(&mut self, txn: &Txn) {
        if txn.header.op_type != RECONFIG_OP {
            return;
        }
        let TxnBody::SetData(set) = &txn.body else {
            return;
        };
        let Some(text) = set
            .data
            .as_deref()
            .and_then(|d| std::str::from_utf8(d).ok())
        else {
            return;
        };
        if let (Ok(config), Some(ensemble)) =
            (ConfigText::parse(text), self.ensemble.as_deref_mut())
        {
            ensemble.addresses.extend(config.members);
        }
    }

    /// Zab's configurations changed: the members to reach are those of both.
    pub(crate) fn members_changed(&mut self, active: &Membership, pending: Option<&Membership>) {
        let text = self.active_config_text();
        let active_text =
            (text.version == active.version && !text.members.is_empty()).then(|| text.clone());
        let from_tree = text.members;
        let Some(ensemble) = self.ensemble.as_deref_mut() else {
            return;
        };
        for (sid, spec) in from_tree {
            ensemble.addresses.entry(sid).or_insert(spec);
        }
        let me = ensemble.me;
        let wanted: BTreeSet<Sid> = [active]
            .into_iter()
            .chain(pending)
            .flat_map(|m| m.voters.iter().chain(m.observers.iter()).copied())
            .filter(|&s| s != me)
            .collect();
        let peers: BTreeMap<Sid, ServerSpec> = wanted
            .iter()
            .filter_map(|sid| ensemble.addresses.get(sid).map(|s| (*sid, s.clone())))
            .collect();
        for sid in &wanted {
            if !ensemble.peers.contains(sid) {
                ensemble.peers.push(*sid);
            }
        }
        ensemble.outbox.push(Output::Members {
            peers,
            active: active_text,
        });
    }
}

/// An incremental change: the last configuration minus the leaving, plus the joining
/// (replacing a member with the same id).
fn incremental(current: &ConfigText, request: &ReconfigRequest) -> Result<ConfigText, ErrorCode> {
    let mut next = current.clone();
    if let Some(leaving) = &request.leaving_servers {
        for sid in leaving.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let sid: Sid = sid
                .parse()
                .map_err(|_| bad_arguments("Reconfiguration failed"))?;
            next.members.remove(&sid);
        }
    }
    if let Some(joining) = &request.joining_servers {
        for joiner in joining.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let parts: Vec<&str> = joiner.split('=').collect();
            let [key, spec] = parts.as_slice() else {
                return Err(bad_arguments("Wrong format of server string"));
            };
            let sid = parse_server_key(key).map_err(|e| bad_arguments(&e.to_string()))?;
            let spec = ServerSpec::parse(spec).map_err(|e| bad_arguments(&e.to_string()))?;
            if spec.client.is_none() {
                return Err(bad_arguments(
                    "Wrong format of server string - each server should have 3 ports specified",
                ));
            }
            let clash = next
                .members
                .iter()
                .any(|(other, s)| *other != sid && spec.clashes_with(s));
            if clash {
                return Err(bad_arguments("Reconfiguration failed"));
            }
            next.members.insert(sid, spec);
        }
    }
    Ok(next)
}

fn bad_arguments(why: &str) -> ErrorCode {
    tracing::info!(why, "reconfig: bad arguments");
    ErrorCode::BadArguments
}

/// The reconfiguration transaction that installs `config`.
fn config_txn(session_id: i64, cxid: i32, zxid: i64, time_ms: i64, config: &ConfigText) -> Txn {
    Txn {
        header: TxnHeader {
            client_id: session_id,
            cxid,
            zxid,
            time: time_ms,
            op_type: RECONFIG_OP,
        },
        body: TxnBody::SetData(SetDataTxn {
            path: CONFIG_NODE.to_string(),
            data: Some(config.render().into_bytes()),
            version: -1,
        }),
    }
}
