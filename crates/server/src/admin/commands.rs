//! ZooKeeper 3.9's AdminServer commands (`server/admin/Commands.java`): names, aliases and the
//! JSON fields of each. Every answer ends with `"command"` (the primary name) and `"error"`
//! (null on success), as ZooKeeper's `CommandResponse` does.
//!
//! Values come from the four-letter words' text, asked of the core with the same message the
//! client port uses, so this module reads no core state. Fields ZooKeeper has that mean nothing
//! for meerkat keep ZooKeeper's name with a neutral value (`fsync_threshold_exceed_count` 0,
//! `interest_ops` 1, client response sizes -1 as ZooKeeper reports them before any response).

use super::text::{self, blocks, conn_line, object, pairs, scalar, session_id, srvr_field};
use crate::config::ServerConfig;
use crate::config::{HostPort, ServerRole};
use crate::connection::Shared;
use crate::metrics::ask;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// One command: its names (primary first), whether it needs a serving server.
pub struct Command {
    pub names: &'static [&'static str],
    pub server_required: bool,
}

const fn command(names: &'static [&'static str], server_required: bool) -> Command {
    Command {
        names,
        server_required,
    }
}

/// Every command of ZooKeeper 3.9.3, in its registration order.
pub const COMMANDS: &[Command] = &[
    command(&["connection_stat_reset", "crst"], true),
    command(&["configuration", "conf", "config"], true),
    command(&["connections", "cons"], true),
    command(&["hash"], true),
    command(&["dirs"], true),
    command(&["dump"], true),
    command(&["environment", "env", "envi"], false),
    command(&["get_trace_mask", "gtmk"], false),
    command(&["initial_configuration", "icfg"], true),
    command(&["is_read_only", "isro"], true),
    command(&["last_snapshot", "lsnp"], true),
    command(&["leader", "lead"], true),
    command(&["monitor", "mntr"], false),
    command(&["observer_connection_stat_reset", "orst"], true),
    command(&["restore", "rest"], true),
    command(&["ruok"], true),
    command(&["set_trace_mask", "stmk"], false),
    command(&["snapshot", "snap"], true),
    command(&["server_stats", "srvr"], true),
    command(&["stats", "stat"], true),
    command(&["stat_reset", "srst"], true),
    command(&["observers", "obsr"], true),
    command(&["system_properties", "sysp"], false),
    command(&["voting_view"], true),
    command(&["watches", "wchc"], true),
    command(&["watches_by_path", "wchp"], true),
    command(&["watch_summary", "wchs"], true),
    command(&["zabstate"], false),
];

/// The command a URL names, by any of its names.
pub fn find(name: &str) -> Option<&'static Command> {
    COMMANDS.iter().find(|c| c.names.contains(&name))
}

/// What every command can use.
pub struct Context {
    pub shared: Arc<Shared>,
    pub config: Arc<ServerConfig>,
}

const NOT_SERVING: &str = "This ZooKeeper instance is not currently serving requests";

/// Runs `name` and returns ZooKeeper's JSON for it.
pub async fn run(name: &str, ctx: &Context) -> Value {
    let Some(command) = find(name) else {
        return json!({ "command": name, "error": format!("Unknown command: {name}") });
    };
    let primary = command.names[0];
    let mut out = match answer(primary, ctx).await {
        Ok(fields) => fields,
        Err(error) => {
            let mut m = Map::new();
            m.insert("error".into(), json!(error));
            m.insert("command".into(), json!(primary));
            return Value::Object(m);
        }
    };
    out.insert("command".into(), json!(primary));
    out.insert("error".into(), Value::Null);
    Value::Object(out)
}

async fn four(ctx: &Context, cmd: &str) -> Result<String, String> {
    let text = ask(&ctx.shared, cmd)
        .await
        .ok_or_else(|| "the server is shutting down".to_string())?;
    if text.trim_end() == NOT_SERVING {
        return Err(NOT_SERVING.to_string());
    }
    Ok(text)
}

async fn answer(primary: &str, ctx: &Context) -> Result<Map<String, Value>, String> {
    if let Some(fields) = statistics(primary, ctx).await {
        return fields;
    }
    if let Some(fields) = sessions_and_watches(primary, ctx).await {
        return fields;
    }
    if let Some(fields) = server_and_ensemble(primary, ctx).await {
        return fields;
    }
    Err(format!("Unknown command: {primary}"))
}

/// ruok, the server's statistics, connections, mntr, conf and envi; `None` for a command of
/// another group.
async fn statistics(primary: &str, ctx: &Context) -> Option<Result<Map<String, Value>, String>> {
    let fields = async {
        Ok(Some(match primary {
            "ruok" => {
                four(ctx, "srvr").await?;
                Map::new()
            }
            "server_stats" => server_stats(ctx).await?,
            "stats" => {
                let mut m = server_stats(ctx).await?;
                let stat = four(ctx, "stat").await?;
                let clients: Vec<Value> = stat
                    .lines()
                    .filter_map(conn_line)
                    .filter(is_client)
                    .map(|c| Value::Object(brief_connection(&c)))
                    .collect();
                m.insert("connections".into(), Value::Array(clients));
                m.insert("secure_connections".into(), json!([]));
                m
            }
            "connections" => {
                let cons = four(ctx, "cons").await?;
                let clients: Vec<Value> = cons
                    .lines()
                    .filter_map(conn_line)
                    .filter(is_client)
                    .map(|c| Value::Object(full_connection(&c)))
                    .collect();
                object([
                    ("connections", Value::Array(clients)),
                    ("secure_connections", json!([])),
                ])
            }
            "monitor" => monitor(ctx).await?,
            "configuration" => configuration(ctx).await?,
            "environment" => {
                let envi = four(ctx, "envi").await?;
                pairs(&envi, '=').map(|(k, v)| (k, json!(v))).collect_map()
            }
            _ => return Ok(None),
        }))
    };
    fields.await.transpose()
}

/// dump, the watch commands, isro, the resets, dirs, hash, trace masks and the zoo.cfg
/// views; `None` for a command of another group.
async fn sessions_and_watches(
    primary: &str,
    ctx: &Context,
) -> Option<Result<Map<String, Value>, String>> {
    let fields = async {
        Ok(Some(match primary {
            "dump" => dump(ctx).await?,
            "watch_summary" => {
                let wchs = four(ctx, "wchs").await?;
                let numbers: Vec<i64> = wchs
                    .split(|c: char| !c.is_ascii_digit())
                    .filter_map(|n| n.parse().ok())
                    .collect();
                let at = |i: usize| json!(numbers.get(i).copied().unwrap_or(0));
                object([
                    ("num_connections", at(0)),
                    ("num_paths", at(1)),
                    ("num_total_watches", at(2)),
                ])
            }
            "watches" => {
                let wchc = four(ctx, "wchc").await?;
                let by_session: Map<String, Value> = blocks(&wchc)
                    .into_iter()
                    .map(|(s, paths)| {
                        let id = session_id(s).map_or_else(|| s.to_string(), |i| i.to_string());
                        (id, json!(paths))
                    })
                    .collect();
                object([("session_id_to_watched_paths", Value::Object(by_session))])
            }
            "watches_by_path" => {
                let wchp = four(ctx, "wchp").await?;
                let by_path: Map<String, Value> = blocks(&wchp)
                    .into_iter()
                    .map(|(p, sessions)| {
                        let ids: Vec<Value> = sessions
                            .iter()
                            .map(|s| session_id(s).map_or_else(|| json!(s), |i| json!(i)))
                            .collect();
                        (p.to_string(), Value::Array(ids))
                    })
                    .collect();
                object([("path_to_session_ids", Value::Object(by_path))])
            }
            "is_read_only" => {
                let isro = four(ctx, "isro").await?;
                object([("read_only", json!(isro.trim() == "ro"))])
            }
            "connection_stat_reset" => {
                four(ctx, "crst").await?;
                Map::new()
            }
            "stat_reset" => {
                four(ctx, "srst").await?;
                Map::new()
            }
            "observer_connection_stat_reset" => Map::new(),
            "dirs" => {
                let (data, log) = dir_sizes(&ctx.config);
                object([("datadir_size", json!(data)), ("logdir_size", json!(log))])
            }
            "hash" => object([("digests", json!([]))]),
            "get_trace_mask" | "set_trace_mask" => object([("tracemask", json!(0))]),
            "initial_configuration" => {
                let mut text = String::new();
                for (k, v) in &ctx.config.entries {
                    let v = if crate::config::is_sensitive_key(k) {
                        "********"
                    } else {
                        v
                    };
                    text.push_str(&format!("{k}={v}\n"));
                }
                object([("initial_configuration", json!(text))])
            }
            "system_properties" => ctx
                .config
                .entries
                .iter()
                .filter(|(k, _)| !crate::config::is_sensitive_key(k))
                .map(|(k, v)| (k.as_str(), json!(v)))
                .collect_map(),
            _ => return Ok(None),
        }))
    };
    fields.await.transpose()
}

/// leader, observers, zabstate, voting_view, last_snapshot, and the snapshot commands meerkat
/// lacks; `None` for a command of another group.
async fn server_and_ensemble(
    primary: &str,
    ctx: &Context,
) -> Option<Result<Map<String, Value>, String>> {
    let fields = async {
        Ok(Some(match primary {
            "leader" => {
                let mntr = four(ctx, "mntr").await?;
                let state = mntr_value(&mntr, "zk_server_state").unwrap_or_default();
                if state == "standalone" {
                    return Err("server is not initialized".into());
                }
                // QuorumPeer.getLeaderId and getLeaderAddress: the leader's quorum host
                // strings as its server.N line has them, joined by '|'.
                let (_, leader_id) = ids(ctx).await?;
                let leader_ip = ctx
                    .config
                    .servers
                    .iter()
                    .find(|line| i64::try_from(line.id).ok() == Some(leader_id))
                    .map_or(String::new(), |line| line.host.clone());
                object([
                    ("is_leader", json!(state == "leader")),
                    ("leader_id", json!(leader_id)),
                    ("leader_ip", json!(leader_ip)),
                ])
            }
            "observers" => {
                let mntr = four(ctx, "mntr").await?;
                let synced = mntr_value(&mntr, "zk_synced_observers")
                    .and_then(|v| v.parse::<i64>().ok())
                    .unwrap_or(0);
                object([
                    ("synced_observers", json!(synced)),
                    ("observers", json!([])),
                ])
            }
            "zabstate" => {
                let mntr = four(ctx, "mntr").await.unwrap_or_default();
                let state = mntr_value(&mntr, "zk_server_state").unwrap_or_default();
                let (voting, zab) = match state.as_str() {
                    "leader" | "follower" => (true, "broadcast"),
                    "observer" => (false, "broadcast"),
                    "standalone" => (false, ""),
                    _ => (!ctx.config.servers.is_empty(), "election"),
                };
                if zab == "broadcast" {
                    serving_zabstate(ctx, &state, voting).await?
                } else {
                    object([("voting", json!(voting)), ("zabstate", json!(zab))])
                }
            }
            "voting_view" => {
                // VotingViewCommand.QuorumServerView, for the voting members only.
                let view: Map<String, Value> = ctx
                    .config
                    .servers
                    .iter()
                    .filter(|line| line.role == ServerRole::Participant)
                    .map(|line| {
                        let client = line
                            .client
                            .as_ref()
                            .map_or(String::new(), |c| c.to_string());
                        let view = object([
                            (
                                "server_addresses",
                                json!([host_port(&line.host, line.quorum_port)]),
                            ),
                            (
                                "election_addresses",
                                json!([host_port(&line.host, line.election_port)]),
                            ),
                            ("client_address", json!(client)),
                            ("learner_type", json!("participant")),
                        ]);
                        (line.id.to_string(), Value::Object(view))
                    })
                    .collect();
                object([("current_config", Value::Object(view))])
            }
            "last_snapshot" => {
                // ZooKeeper's LastSnapshotCommand: Long.toHexString(zxid) (no 0x, no padding;
                // -1 prints as 16 f's) and seconds since the epoch, -1 without a snapshot.
                let (zxid, seconds) = last_snapshot(&ctx.config).unwrap_or((-1, -1));
                object([
                    ("zxid", json!(format!("{:x}", zxid as u64))),
                    ("timestamp", json!(seconds)),
                ])
            }
            "snapshot" | "restore" => {
                return Err(format!(
                    "{primary} is not available in meerkat (ZooKeeper disables it by default too)"
                ))
            }
            _ => return Ok(None),
        }))
    };
    fields.await.transpose()
}

/// This server's id and the leader's (-1 without one), from the core.
async fn ids(ctx: &Context) -> Result<(i64, i64), String> {
    let answer = four(ctx, crate::four_letter::LEADER_QUERY).await?;
    let mut words = answer.split_whitespace().map(|w| w.parse::<i64>().ok());
    match (words.next().flatten(), words.next().flatten()) {
        (Some(me), Some(leader)) => Ok((me, leader)),
        _ => Err(format!("unexpected answer to the leader query: {answer:?}")),
    }
}

fn host_port(host: &str, port: u16) -> String {
    HostPort {
        host: host.to_string(),
        port,
    }
    .to_string()
}

/// ZabStateCommand's fields for a member that serves: its id and addresses (each peer address
/// as Jackson writes ZooKeeper's `MultipleAddresses` bean), its last zxid split into epoch and
/// counter, and the state.
async fn serving_zabstate(
    ctx: &Context,
    state: &str,
    voting: bool,
) -> Result<Map<String, Value>, String> {
    let (me, _) = ids(ctx).await?;
    let line = ctx
        .config
        .servers
        .iter()
        .find(|line| i64::try_from(line.id).ok() == Some(me))
        .ok_or_else(|| format!("no server.{me} line"))?;
    let srvr = four(ctx, "srvr").await?;
    let zxid = srvr_field(&srvr, "Zxid")
        .and_then(|z| i64::from_str_radix(z.trim_start_matches("0x"), 16).ok())
        .unwrap_or(0);
    let client = line.client.as_ref().map_or_else(
        || {
            host_port(
                &ctx.config.client_port_address.to_string(),
                ctx.config.client_port,
            )
        },
        |c| c.to_string(),
    );
    Ok(object([
        ("myid", json!(me)),
        ("is_leader", json!(state == "leader")),
        (
            "quorum_address",
            multiple_addresses(&line.host, line.quorum_port),
        ),
        (
            "election_address",
            multiple_addresses(&line.host, line.election_port),
        ),
        ("client_address", json!(client)),
        ("voting", json!(voting)),
        ("last_zxid", json!(format!("0x{zxid:x}"))),
        ("zab_epoch", json!(zxid >> 32)),
        ("zab_counter", json!(zxid & 0xffff_ffff)),
        ("zabstate", json!("broadcast")),
    ]))
}

/// A one-address `MultipleAddresses` as ZooKeeper's AdminServer serializes it.
fn multiple_addresses(host: &str, port: u16) -> Value {
    let address = host_port(host, port);
    Value::Object(object([
        ("empty", json!(false)),
        ("all_addresses", json!([address])),
        ("wildcard_addresses", json!([format!("0.0.0.0:{port}")])),
        ("all_ports", json!([port])),
        ("all_host_strings", json!([host])),
        ("reachable_address", json!(address)),
        ("all_reachable_addresses", json!([address])),
        ("all_reachable_addresses_or_all", json!([address])),
        ("reachable_or_one", json!(address)),
        ("one", json!(address)),
    ]))
}

/// The newest snapshot in the data dir: its zxid (from its name) and the seconds since the
/// epoch of its modification time, which ZooKeeper reports for the snapshot it restored from
/// (`FileSnap.deserialize`: `lastModified() / 1000`) and about equals for one it wrote.
fn last_snapshot(config: &ServerConfig) -> Option<(i64, i64)> {
    let dir = storage::Layout::new(&config.data_dir, &config.data_log_dir).snap_dir;
    let (zxid, path) = std::fs::read_dir(&dir)
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let zxid = storage::layout::parse_snap_name(entry.file_name().to_str()?)?;
            Some((zxid, entry.path()))
        })
        .max_by_key(|(zxid, _)| *zxid)?;
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    let seconds = modified
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs();
    Some((zxid, i64::try_from(seconds).ok()?))
}

trait CollectMap<'a> {
    fn collect_map(self) -> Map<String, Value>;
}

impl<'a, I: Iterator<Item = (&'a str, Value)>> CollectMap<'a> for I {
    fn collect_map(self) -> Map<String, Value> {
        object(self)
    }
}

fn mntr_value(mntr: &str, key: &str) -> Option<String> {
    pairs(mntr, '\t')
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.to_string())
}

fn client_response() -> Value {
    json!({ "last_buffer_size": -1, "min_buffer_size": -1, "max_buffer_size": -1 })
}

/// `srvr` as ZooKeeper's `server_stats` command gives it.
async fn server_stats(ctx: &Context) -> Result<Map<String, Value>, String> {
    let srvr = four(ctx, "srvr").await?;
    let mntr = four(ctx, "mntr").await?;
    let m = |key: &str| mntr_value(&mntr, key).map_or(json!(0), |v| scalar(&v));
    let (data, log) = dir_sizes(&ctx.config);
    let zxid = srvr_field(&srvr, "Zxid")
        .and_then(|z| i64::from_str_radix(z.trim_start_matches("0x"), 16).ok())
        .unwrap_or(0);
    let avg: f64 = mntr_value(&mntr, "zk_avg_latency")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    let stats = object([
        ("packets_sent", m("zk_packets_sent")),
        ("packets_received", m("zk_packets_received")),
        ("fsync_threshold_exceed_count", json!(0)),
        ("client_response_stats", client_response()),
        ("uptime", m("zk_uptime")),
        ("data_dir_size", json!(data)),
        ("log_dir_size", json!(log)),
        ("provider_null", json!(false)),
        ("last_processed_zxid", json!(zxid)),
        ("outstanding_requests", m("zk_outstanding_requests")),
        ("server_state", m("zk_server_state")),
        ("avg_latency", json!(avg)),
        ("max_latency", m("zk_max_latency")),
        ("min_latency", m("zk_min_latency")),
        (
            "num_alive_client_connections",
            m("zk_num_alive_connections"),
        ),
        ("auth_failed_count", m("zk_auth_failed_count")),
        (
            "non_mtlsremote_conn_count",
            m("zk_non_mtls_remote_conn_count"),
        ),
        (
            "non_mtlslocal_conn_count",
            m("zk_non_mtls_local_conn_count"),
        ),
    ]);
    let version = srvr_field(&srvr, "Zookeeper version").unwrap_or_default();
    let node_count = srvr_field(&srvr, "Node count").map_or(json!(0), scalar);
    let read_only = srvr_field(&srvr, "Mode") == Some("read-only");
    Ok(object([
        ("version", json!(version)),
        ("read_only", json!(read_only)),
        ("server_stats", Value::Object(stats)),
        ("client_response", client_response()),
        ("node_count", node_count),
    ]))
}

fn field<'a>(c: &text::ConnLine<'a>, key: &str) -> Option<&'a str> {
    c.fields.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

fn num(c: &text::ConnLine<'_>, key: &str) -> Value {
    field(c, key).map_or(json!(0), scalar)
}

fn hex(c: &text::ConnLine<'_>, key: &str) -> Value {
    json!(field(c, key).and_then(session_id).unwrap_or(0))
}

/// The four-letter words list the asking connection too; the AdminServer asks as nobody.
fn is_client(c: &text::ConnLine<'_>) -> bool {
    !c.address.starts_with("0.0.0.0:0")
}

fn brief_connection(c: &text::ConnLine<'_>) -> Map<String, Value> {
    object([
        ("remote_socket_address", json!(c.address)),
        ("interest_ops", json!(c.interest_ops)),
        ("outstanding_requests", num(c, "queued")),
        ("packets_received", num(c, "recved")),
        ("packets_sent", num(c, "sent")),
    ])
}

/// A `cons` line as ZooKeeper's `connections` command gives it (`ServerCnxn.getConnectionInfo`).
fn full_connection(c: &text::ConnLine<'_>) -> Map<String, Value> {
    let mut m = brief_connection(c);
    if field(c, "sid").is_some() {
        m.insert("session_id".into(), hex(c, "sid"));
        m.insert(
            "last_operation".into(),
            json!(field(c, "lop").unwrap_or("NA")),
        );
        m.insert("established".into(), num(c, "est"));
        m.insert("session_timeout".into(), num(c, "to"));
        m.insert("last_cxid".into(), hex(c, "lcxid"));
        m.insert("last_zxid".into(), hex(c, "lzxid"));
        m.insert("last_response_time".into(), num(c, "lresp"));
        m.insert("last_latency".into(), num(c, "llat"));
        m.insert("min_latency".into(), num(c, "minlat"));
        m.insert("avg_latency".into(), num(c, "avglat"));
        m.insert("max_latency".into(), num(c, "maxlat"));
    }
    m
}

/// `mntr` as ZooKeeper's `monitor` command gives it: the keys without `zk_`.
async fn monitor(ctx: &Context) -> Result<Map<String, Value>, String> {
    let mntr = four(ctx, "mntr").await?;
    Ok(pairs(&mntr, '\t')
        .map(|(k, v)| (k.strip_prefix("zk_").unwrap_or(k), scalar(v)))
        .collect_map())
}

/// `conf` as ZooKeeper's `configuration` command gives it: the same keys in snake case.
async fn configuration(ctx: &Context) -> Result<Map<String, Value>, String> {
    let conf = four(ctx, "conf").await?;
    let skip = ["secureClientPort", "dataDirSize", "dataLogSize"];
    Ok(pairs(&conf, '=')
        .filter(|(k, _)| !skip.contains(k))
        .map(|(k, v)| (snake_case(k), scalar(v)))
        .collect())
}

fn snake_case(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 4);
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `dump` as ZooKeeper's JSON: expiry bucket (epoch ms) to session ids, session id to its
/// ephemeral paths; ids in decimal.
async fn dump(ctx: &Context) -> Result<Map<String, Value>, String> {
    let dump = four(ctx, "dump").await?;
    let sessions_part = dump
        .split("ephemeral nodes dump:")
        .next()
        .unwrap_or_default();
    let ephemeral_part = dump
        .split("ephemeral nodes dump:")
        .nth(1)
        .and_then(|rest| rest.split("Connections dump:").next())
        .unwrap_or_default();
    let mut expiry = Map::new();
    for (head, ids) in blocks(sessions_part) {
        let Some((_, date)) = head.split_once(" expire at ") else {
            continue;
        };
        let Some(at) = text::java_date_ms(date) else {
            continue;
        };
        let ids: Vec<i64> = ids.iter().filter_map(|s| session_id(s)).collect();
        expiry.insert(at.to_string(), json!(ids));
    }
    let ephemerals: Map<String, Value> = blocks(ephemeral_part)
        .into_iter()
        .filter_map(|(s, paths)| Some((session_id(s)?.to_string(), json!(paths))))
        .collect();
    Ok(object([
        ("expiry_time_to_session_ids", Value::Object(expiry)),
        ("session_id_to_ephemeral_paths", Value::Object(ephemerals)),
    ]))
}

/// Bytes under the data dir and the log dir (ZooKeeper's `dirs`), bounded in entries walked.
fn dir_sizes(config: &ServerConfig) -> (u64, u64) {
    (dir_size(&config.data_dir), dir_size(&config.data_log_dir))
}

fn dir_size(root: &std::path::Path) -> u64 {
    const ENTRIES_MAX: usize = 100_000;
    let mut total = 0;
    let mut stack = vec![root.to_path_buf()];
    let mut seen = 0;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > ENTRIES_MAX {
                return total;
            }
            match entry.metadata() {
                Ok(m) if m.is_dir() => stack.push(entry.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_snapshot_is_the_newest_snapshot_file_by_zxid() {
        let dir = tempfile::tempdir().expect("dir");
        let text = format!("dataDir={}\nclientPort=2181\n", dir.path().display());
        let config = ServerConfig::parse(&text, "zoo.cfg").expect("zoo.cfg");
        assert_eq!(last_snapshot(&config), None, "no meerkat-1 directory yet");
        let layout = storage::Layout::new(&config.data_dir, &config.data_log_dir);
        std::fs::create_dir_all(&layout.snap_dir).expect("mkdir");
        assert_eq!(last_snapshot(&config), None, "no snapshot yet");
        for zxid in [0x1_0000_0005_i64, 0x2_0000_0001, 0x1_0000_0009] {
            std::fs::write(layout.snap_path(zxid), b"x").expect("write");
        }
        std::fs::write(layout.snap_dir.join("snap-zz.snap.tmp"), b"x").expect("write");
        let (zxid, seconds) = last_snapshot(&config).expect("a snapshot");
        assert_eq!(zxid, 0x2_0000_0001);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs() as i64;
        assert!(
            (now - 60..=now + 1).contains(&seconds),
            "{seconds} vs {now}"
        );
        assert_eq!(format!("{:x}", zxid as u64), "200000001");
        assert_eq!(format!("{:x}", -1_i64 as u64), "ffffffffffffffff");
    }
}
