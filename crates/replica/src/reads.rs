//! Requests answered from the local tree without a transaction (`FinalRequestProcessor`):
//! reads, sync, ping, watch management, whoAmI. Each returns the encoded reply frame or the
//! error code ZooKeeper gives, after checking in ZooKeeper's order (existence, then ACL).

use crate::replica::{Replica, WatchKind};
use crate::replies::reply_frame;
use crate::store::Store;
use crate::watch_manager::ConnId;
use proto::jute::{Record, Writer};
use proto::multi::{MultiOp, MultiResult};
use proto::request::Request;
use proto::response::Response;
use proto::watch::{perms, AddWatchMode, EventType, WatcherType};
use proto::*;
use tree::acl::check_acl;

/// Events a setWatches replay sends carry zxid −1, as ZooKeeper's do.
const REPLAY_EVENT_ZXID: i64 = -1;

pub(crate) fn execute<S: Store>(
    replica: &mut Replica<S>,
    conn: ConnId,
    xid: i32,
    zxid: i64,
    request: &Request,
) -> Result<Vec<u8>, ErrorCode> {
    let empty = || Ok(reply_frame(xid, zxid, 0, None));
    match request {
        Request::Ping => empty(),
        Request::Sync(r) => Ok(reply_frame(
            xid,
            zxid,
            0,
            Some(&Response::Sync(r.path.clone())),
        )),
        Request::Exists(r) => exists(replica, conn, xid, zxid, r),
        Request::GetData(r) => {
            let node = readable(replica, conn, &r.path)?;
            let stat = node.stat();
            let frame = replica.reply_with(xid, zxid, |w| {
                w.write_buffer(node.data);
                stat.encode(w);
            });
            if r.watch {
                replica.register_watch(conn, &r.path, WatchKind::Data);
            }
            Ok(frame)
        }
        Request::GetChildren(r) | Request::GetChildren2(r) => {
            let node = readable(replica, conn, &r.path)?;
            let stat = node.stat();
            let with_stat = matches!(request, Request::GetChildren2(_));
            let frame = replica.reply_with(xid, zxid, |w| {
                w.write_i32(node.children.len() as i32);
                for name in node.children.keys() {
                    w.write_ustring(name);
                }
                if with_stat {
                    stat.encode(w);
                }
            });
            if r.watch {
                replica.register_watch(conn, &r.path, WatchKind::Child);
            }
            Ok(frame)
        }
        Request::GetAcl(r) => {
            let node = replica.tree.get(&r.path).ok_or(ErrorCode::NoNode)?;
            check_acl(
                node.acl,
                perms::READ | perms::ADMIN,
                &replica.auth_ids(conn),
            )?;
            let body = Response::GetAcl(GetAclResponse {
                acl: node.acl.to_vec(),
                stat: node.stat(),
            });
            Ok(reply_frame(xid, zxid, 0, Some(&body)))
        }
        Request::GetAllChildrenNumber(r) => {
            readable(replica, conn, &r.path)?;
            let count = replica
                .tree
                .descendant_count(&r.path)
                .ok_or(ErrorCode::NoNode)?;
            Ok(reply_frame(
                xid,
                zxid,
                0,
                Some(&Response::GetAllChildrenNumber(count as i32)),
            ))
        }
        Request::GetEphemerals(r) => {
            let prefix = r.path.trim();
            let all = prefix.is_empty() || prefix == "/";
            let session = replica.session_of(conn);
            let ephemerals = replica
                .tree
                .ephemerals(session)
                .filter(|p| all || p.starts_with(&r.path))
                .map(str::to_string)
                .collect();
            Ok(reply_frame(
                xid,
                zxid,
                0,
                Some(&Response::GetEphemerals(GetEphemeralsResponse {
                    ephemerals,
                })),
            ))
        }
        Request::MultiRead(ops) => Ok(multi_read(replica, conn, xid, zxid, ops)),
        Request::AddWatch(r) => {
            let mode = AddWatchMode::from_i32(r.mode).ok_or(ErrorCode::BadArguments)?;
            replica.register_watch(conn, &r.path, WatchKind::Persistent(mode));
            Ok(reply_frame(xid, zxid, 0, Some(&Response::AddWatch)))
        }
        Request::CheckWatches(r) | Request::RemoveWatches(r) => {
            let kind = WatcherType::from_i32(r.watcher_type).ok_or(ErrorCode::BadArguments)?;
            let remove = matches!(request, Request::RemoveWatches(_));
            if replica.remove_watch(conn, &r.path, kind, remove) {
                empty()
            } else {
                Err(ErrorCode::NoWatcher)
            }
        }
        Request::SetWatches(w) => {
            let none: Vec<String> = Vec::new();
            set_watches(
                replica,
                conn,
                w.relative_zxid,
                [
                    &w.data_watches,
                    &w.exist_watches,
                    &w.child_watches,
                    &none,
                    &none,
                ],
            );
            empty()
        }
        Request::SetWatches2(w) => {
            let lists = [
                &w.data_watches,
                &w.exist_watches,
                &w.child_watches,
                &w.persistent_watches,
                &w.persistent_recursive_watches,
            ];
            set_watches(replica, conn, w.relative_zxid, lists);
            empty()
        }
        Request::WhoAmI => {
            let client_info = replica
                .auth_ids(conn)
                .iter()
                .cloned()
                .map(|id| ClientInfo {
                    user: user_name(&id),
                    auth_scheme: id.scheme.into_owned(),
                })
                .collect();
            Ok(reply_frame(
                xid,
                zxid,
                0,
                Some(&Response::WhoAmI(WhoAmIResponse { client_info })),
            ))
        }
        _ => Err(ErrorCode::Unimplemented),
    }
}

/// The node at `path` if it exists and the connection may read it.
fn readable<'c, S: Store>(
    replica: &'c Replica<S>,
    conn: ConnId,
    node_path: &str,
) -> Result<tree::node::NodeView<'c>, ErrorCode> {
    let node = replica.tree.get(node_path).ok_or(ErrorCode::NoNode)?;
    check_acl(node.acl, perms::READ, &replica.auth_ids(conn))?;
    Ok(node)
}

/// exists registers its watch even when the node is missing (so the client hears NodeCreated).
fn exists<S: Store>(
    replica: &mut Replica<S>,
    conn: ConnId,
    xid: i32,
    zxid: i64,
    r: &PathAndWatch,
) -> Result<Vec<u8>, ErrorCode> {
    if r.path.contains('\0') {
        return Err(ErrorCode::BadArguments);
    }
    if let Some(node) = replica.tree.get(&r.path) {
        check_acl(node.acl, perms::READ, &replica.auth_ids(conn))?;
    }
    if r.watch {
        replica.register_watch(conn, &r.path, WatchKind::Data);
    }
    let stat = replica.tree.stat(&r.path).ok_or(ErrorCode::NoNode)?;
    Ok(reply_frame(xid, zxid, 0, Some(&Response::Stat(stat))))
}

fn multi_read<S: Store>(
    replica: &mut Replica<S>,
    conn: ConnId,
    xid: i32,
    zxid: i64,
    ops: &[MultiOp],
) -> Vec<u8> {
    let results: Vec<MultiResult> = ops
        .iter()
        .map(|op| {
            let node = match readable(replica, conn, op.path()) {
                Ok(node) => node,
                Err(code) => return MultiResult::Error(code.code()),
            };
            match op {
                MultiOp::GetData(_) => MultiResult::GetData(node.data_vec(), node.stat()),
                _ => {
                    MultiResult::GetChildren(node.children.keys().map(|k| k.to_string()).collect())
                }
            }
        })
        .collect();
    let mut w = Writer::new();
    Response::Multi(results).encode(&mut w);
    let body = w.into_inner();
    replica.reply_with(xid, zxid, |w| w.write_raw(&body))
}

/// Re-registers a reconnecting client's watches; a watch whose node changed after
/// `relative_zxid` fires at once instead (`DataTree.setWatches`).
fn set_watches<S: Store>(
    replica: &mut Replica<S>,
    conn: ConnId,
    relative_zxid: i64,
    lists: [&Vec<String>; 5],
) {
    let [data, exist, child, persistent, recursive] = lists;
    for p in data {
        match replica.tree.get(p).map(|n| n.stat.mzxid) {
            None => replica.queue_event(conn, REPLAY_EVENT_ZXID, EventType::NodeDeleted, p),
            Some(mzxid) if mzxid > relative_zxid => {
                replica.queue_event(conn, REPLAY_EVENT_ZXID, EventType::NodeDataChanged, p)
            }
            Some(_) => replica.register_watch(conn, p, WatchKind::Data),
        }
    }
    for p in exist {
        if replica.tree.get(p).is_some() {
            replica.queue_event(conn, REPLAY_EVENT_ZXID, EventType::NodeCreated, p);
        } else {
            replica.register_watch(conn, p, WatchKind::Data);
        }
    }
    for p in child {
        match replica.tree.get(p).map(|n| n.stat.pzxid) {
            None => replica.queue_event(conn, REPLAY_EVENT_ZXID, EventType::NodeDeleted, p),
            Some(pzxid) if pzxid > relative_zxid => {
                replica.queue_event(conn, REPLAY_EVENT_ZXID, EventType::NodeChildrenChanged, p)
            }
            Some(_) => replica.register_watch(conn, p, WatchKind::Child),
        }
    }
    for p in persistent {
        replica.register_watch(conn, p, WatchKind::Persistent(AddWatchMode::Persistent));
    }
    for p in recursive {
        replica.register_watch(
            conn,
            p,
            WatchKind::Persistent(AddWatchMode::PersistentRecursive),
        );
    }
}

/// The user name whoAmI reports for an identity (`AuthUtil.getUser`): the digest's user part,
/// the ip itself, and "" for schemes without a provider (such as `super`).
fn user_name(id: &Id) -> String {
    match id.scheme.as_ref() {
        "digest" => id.id.split(':').next().unwrap_or_default().to_string(),
        // `AuthenticationProvider.getUserName` is the id itself for these (sasl included).
        "ip" | "x509" | "sasl" => id.id.to_string(),
        _ => String::new(),
    }
}
