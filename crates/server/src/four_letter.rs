//! Four-letter words on the client port (`FourLetterCommands`, `server/command/*`): a client
//! sends four ASCII bytes instead of a length-prefixed connect request, gets a text answer and
//! the connection is closed. Only whitelisted commands run (default: `srvr`).

use crate::connection::Shared;
use crate::core::{wall_ms, Core, CoreMsg};
use std::fmt::Write as _;
use tokio::io::AsyncWriteExt;

/// The ZooKeeper version meerkat answers as (clients parse it, e.g. kazoo's `server_version`).
pub const ZOOKEEPER_VERSION: &str = "3.9.3";

const COMMANDS: [&str; 18] = [
    "ruok", "srvr", "stat", "mntr", "conf", "envi", "cons", "dump", "wchs", "wchc", "wchp", "isro",
    "crst", "srst", "dirs", "gtmk", "stmk", "hash",
];

/// The command named by a connection's first four bytes, if they are one.
/// ZooKeeper's answer when the server is not running (no leader, or stopping).
const NOT_SERVING: &str = "This ZooKeeper instance is not currently serving requests\n";

pub fn command_in(first: &[u8]) -> Option<&'static str> {
    COMMANDS.iter().copied().find(|c| c.as_bytes() == first)
}

/// Answers one command and closes.
pub async fn serve(
    cmd: &'static str,
    peer: std::net::SocketAddr,
    mut wr: crate::connection::WriteHalf,
    shared: &Shared,
) {
    let text = if !shared.four_letter_words.allows(cmd) {
        tracing::debug!(cmd, "four-letter word not in the whitelist");
        format!("{cmd} is not executed because it is not in the whitelist.\n")
    } else if cmd == "ruok" {
        "imok".to_string()
    } else {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let msg = CoreMsg::FourLetter {
            command: cmd.to_string(),
            peer,
            reply: tx,
        };
        match shared.core_tx.send(msg).await {
            Ok(()) => rx.await.unwrap_or_default(),
            Err(_) => NOT_SERVING.to_string(),
        }
    };
    // The connection layer's own figures follow the core's (`metrics::connections`).
    let text = if cmd == "mntr" && text.starts_with("zk_") {
        text + &shared.connection_metrics.mntr_lines()
    } else {
        text
    };
    let _ = wr.write_all(text.as_bytes()).await;
    let _ = wr.shutdown().await;
}

/// Not a four-letter word: the AdminServer's question for `leader` and `zabstate`, answered
/// `<this server's id> <the leader's id or -1>`. The client port reads exactly four bytes, so
/// no client can ask it.
pub const LEADER_QUERY: &str = "meerkat:leader";

/// Runs a command against the core's state.
pub fn run(core: &mut Core, cmd: &str, asker: std::net::SocketAddr) -> String {
    // An ensemble member between leaders has no state to report, as in ZooKeeper.
    let needs_serving = matches!(
        cmd,
        "srvr" | "stat" | "mntr" | "cons" | "dump" | "wchs" | "wchc" | "wchp" | "hash"
    ) || cmd == LEADER_QUERY;
    let read_only = core.replica.serving_read_only();
    if needs_serving && !read_only && core.replica.ensemble.as_deref().is_some_and(|r| !r.serving) {
        return NOT_SERVING.to_string();
    }
    match cmd {
        "srvr" => srvr(core, None),
        "stat" => srvr(core, Some(asker)),
        "mntr" => mntr(core),
        "conf" => conf(core),
        "envi" => envi(),
        "cons" => cons(core, asker),
        "dump" => dump(core, asker),
        "wchs" => wchs(core),
        "wchc" => wchc(core),
        "wchp" => wchp(core),
        // `IsroCommand`: "null" while no server runs (a member between leaders, not read-only).
        "isro" => match core.replica.ensemble.as_deref() {
            _ if read_only => "ro".to_string(),
            Some(e) if !e.serving => "null".to_string(),
            _ => "rw".to_string(),
        },
        "crst" => {
            for c in core.replica.conns.values_mut() {
                c.stats.reset();
            }
            "Connection stats reset.\n".to_string()
        }
        "srst" => {
            core.replica.stats = Default::default();
            "Server stats reset.\n".to_string()
        }
        "dirs" => "datadir_size: 0\nlogdir_size: 0\n".to_string(),
        "gtmk" => "0\n".to_string(),
        "stmk" => "0\n".to_string(),
        "hash" => format!("{:x}\n", core.replica.tree.digest()),
        LEADER_QUERY => match core.replica.ensemble.as_deref() {
            Some(e) => {
                let leader = if e.is_leader() {
                    Some(e.me())
                } else {
                    e.remote_leader()
                };
                format!("{} {}\n", e.me(), leader.map_or(-1, |sid| sid as i64))
            }
            None => "0 -1\n".to_string(),
        },
        _ => format!("{cmd} is not a four-letter word meerkat knows.\n"),
    }
}

fn version_line() -> String {
    format!(
        "{ZOOKEEPER_VERSION}-meerkat-{}, built on unknown",
        env!("CARGO_PKG_VERSION")
    )
}

fn srvr(core: &Core, asker: Option<std::net::SocketAddr>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Zookeeper version: {}", version_line());
    if core.replica.serving_read_only() {
        out.push_str("READ-ONLY mode; serving only read-only clients\n");
    }
    if let Some(asker) = asker {
        out.push_str("Clients:\n");
        let _ = writeln!(out, " /{asker}[0](queued=0,recved=1,sent=0)");
        for c in core.replica.conns.values() {
            let _ = writeln!(
                out,
                " /{}[1](queued=0,recved={},sent={})",
                c.peer, c.stats.packets_received, c.stats.packets_sent
            );
        }
        out.push('\n');
    }
    let l = &core.replica.stats.latency;
    let _ = writeln!(
        out,
        "Latency min/avg/max: {}/{:.4}/{}",
        l.min_ms,
        l.avg(),
        l.max_ms
    );
    let _ = writeln!(out, "Received: {}", core.replica.stats.packets_received);
    let _ = writeln!(out, "Sent: {}", core.replica.stats.packets_sent);
    let _ = writeln!(out, "Connections: {}", core.replica.conns.len());
    let _ = writeln!(out, "Outstanding: {}", (core.outstanding)());
    let _ = writeln!(out, "Zxid: 0x{:x}", core.replica.last_zxid());
    let _ = writeln!(out, "Mode: {}", server_state(core));
    let _ = writeln!(out, "Node count: {}", node_count(core));
    if core.config.diskless {
        // Not in ZooKeeper's srvr; stated so nobody mistakes the mode at 3 a.m.
        out.push_str("Durability: diskless\n");
    }
    if let Some(r) = core.replica.ensemble.as_deref().filter(|r| r.is_leader()) {
        let s = &r.stats;
        let (min, max) = if s.proposals == 0 {
            (-1, -1)
        } else {
            (s.min_proposal_bytes as i64, s.max_proposal_bytes as i64)
        };
        let last = if s.proposals == 0 {
            -1
        } else {
            s.last_proposal_bytes as i64
        };
        let _ = writeln!(out, "Proposal sizes last/min/max: {last}/{min}/{max}");
    }
    out
}

/// `standalone`, or the member's role as ZooKeeper names it.
fn server_state(core: &Core) -> &'static str {
    match core.replica.ensemble.as_deref() {
        _ if core.replica.serving_read_only() => "read-only",
        None => "standalone",
        Some(r) => r.role_name(),
    }
}

/// ZooKeeper counts the root twice (its node map holds "" and "/").
fn node_count(core: &Core) -> usize {
    core.replica.tree.node_count() + 1
}

fn mntr(core: &Core) -> String {
    let l = &core.replica.stats.latency;
    let mut lines: Vec<(&str, String)> = vec![
        ("zk_version", version_line()),
        ("zk_server_state", server_state(core).into()),
        ("zk_avg_latency", format!("{:.4}", l.avg())),
        ("zk_max_latency", l.max_ms.to_string()),
        ("zk_min_latency", l.min_ms.to_string()),
        (
            "zk_packets_received",
            core.replica.stats.packets_received.to_string(),
        ),
        (
            "zk_packets_sent",
            core.replica.stats.packets_sent.to_string(),
        ),
        (
            "zk_num_alive_connections",
            core.replica.conns.len().to_string(),
        ),
        ("zk_outstanding_requests", (core.outstanding)().to_string()),
        ("zk_znode_count", node_count(core).to_string()),
        (
            "zk_watch_count",
            core.replica.watches.watch_count().to_string(),
        ),
        (
            "zk_ephemerals_count",
            core.replica.tree.ephemeral_count().to_string(),
        ),
        (
            "zk_approximate_data_size",
            core.replica.tree.approximate_data_size().to_string(),
        ),
        (
            "zk_global_sessions",
            core.replica.session_count().to_string(),
        ),
        // Local sessions and a read-only server's (`localSessionsEnabled`, read-only mode).
        (
            "zk_local_sessions",
            core.replica.local_session_count().to_string(),
        ),
        ("zk_uptime", core.uptime_ms().to_string()),
        ("zk_connection_drop_probability", "0.0".into()),
        (
            "zk_durability_mode",
            if core.config.diskless {
                "diskless"
            } else if core.config.force_sync {
                "durable"
            } else {
                "durable-no-fsync"
            }
            .into(),
        ),
    ];
    lines.extend(ensemble_metrics(core));
    lines.extend(storage_metrics(core));
    if let Some((open, max)) = file_descriptor_counts() {
        lines.push(("zk_open_file_descriptor_count", open.to_string()));
        lines.push(("zk_max_file_descriptor_count", max.to_string()));
    }
    let mut text: String = lines
        .into_iter()
        .map(|(k, v)| format!("{k}\t{v}\n"))
        .collect();
    text.push_str(&quota_metrics(core));
    text
}

/// ZooKeeper's per-namespace quota metrics as its default metrics provider prints gauge and
/// counter sets in `mntr`: `zk_<namespace>_<metric>` (the Prometheus endpoint turns them back
/// into `<metric>{key="<namespace>"}`).
fn quota_metrics(core: &Core) -> String {
    let quotas = core.replica.tree.namespace_quotas();
    let mut text = String::new();
    for (metric, values) in [
        (
            crate::metrics::prometheus::QUOTA_METRICS[0],
            &quotas.count_limit,
        ),
        (
            crate::metrics::prometheus::QUOTA_METRICS[1],
            &quotas.bytes_limit,
        ),
        (
            crate::metrics::prometheus::QUOTA_METRICS[2],
            &quotas.count_usage,
        ),
        (
            crate::metrics::prometheus::QUOTA_METRICS[3],
            &quotas.bytes_usage,
        ),
    ] {
        for (namespace, v) in values {
            text.push_str(&format!("zk_{namespace}_{metric}\t{v}\n"));
        }
    }
    for (namespace, n) in core.replica.quota_exceeded_counts() {
        text.push_str(&format!(
            "zk_{namespace}_{}\t{n}\n",
            crate::metrics::prometheus::QUOTA_METRICS[4]
        ));
    }
    text
}

/// A leader's learners and proposals, and every member's view of its ensemble, under
/// ZooKeeper's names (`zk_learners`, `zk_synced_followers`, `zk_pending_syncs`, …).
fn ensemble_metrics(core: &Core) -> Vec<(&'static str, String)> {
    let Some(r) = core.replica.ensemble.as_deref() else {
        return vec![
            ("zk_last_proposal_size", "-1".into()),
            ("zk_max_proposal_size", "-1".into()),
            ("zk_min_proposal_size", "-1".into()),
        ];
    };
    let s = &r.stats;
    let sized = |v: usize| {
        if s.proposals == 0 {
            "-1".to_string()
        } else {
            v.to_string()
        }
    };
    let mut lines = vec![
        ("zk_last_proposal_size", sized(s.last_proposal_bytes)),
        ("zk_max_proposal_size", sized(s.max_proposal_bytes)),
        ("zk_min_proposal_size", sized(s.min_proposal_bytes)),
        ("zk_pending_syncs", r.pending_syncs().to_string()),
        ("zk_quorum_size", r.zab.config().quorum_size().to_string()),
        ("zk_current_epoch", r.zab.current_epoch().to_string()),
        ("zk_accepted_epoch", r.zab.accepted_epoch().to_string()),
        ("zk_election_count", s.elections.to_string()),
        ("zk_last_election_ms", s.last_election_ms.to_string()),
        (
            "zk_full_house_elections",
            s.full_house_elections.to_string(),
        ),
        ("zk_digest_checks", s.digest_checks.to_string()),
        ("zk_forwarded_requests", s.forwarded.to_string()),
    ];
    if r.is_leader() {
        let learners = r.zab.learners();
        let synced = |observer: bool| {
            learners
                .iter()
                .filter(|l| l.synced && l.observer == observer)
                .count()
                .to_string()
        };
        lines.push(("zk_learners", learners.len().to_string()));
        lines.push(("zk_synced_followers", synced(false)));
        lines.push(("zk_synced_non_voting_followers", "0".into()));
        lines.push(("zk_synced_observers", synced(true)));
        lines.push(("zk_proposal_backlog", r.backlog_len().to_string()));
    }
    lines
}

/// The median of the latest observations in ms (ZooKeeper's `p50_` spelling of a summary's
/// percentile in `mntr`); `NaN` before the first, as Prometheus shows an empty summary.
fn median(value: Option<u64>, per_ms: f64) -> String {
    value.map_or_else(|| "NaN".into(), |v| format!("{:.3}", v as f64 / per_ms))
}

/// Storage figures under the names ZooKeeper's mntr uses for them (its `fsynctime` and
/// `snapshottime` summaries, in ms, and the start-up counters), so dashboards keep working.
fn storage_metrics(core: &Core) -> Vec<(&'static str, String)> {
    use std::sync::atomic::Ordering::Relaxed;
    let wal = core.replica.store.wal_stats();
    let fsyncs = wal.fsyncs.load(Relaxed);
    let fsync_sum_ms = wal.fsync_micros_total.load(Relaxed) as f64 / 1000.0;
    let fsync_min_ms = match wal.fsync_micros_min.load(Relaxed) {
        u64::MAX => 0,
        us => us / 1000,
    };
    let snaps = &core.replica.store.snapshot_stats;
    let taken = snaps.taken.load(Relaxed);
    let snap_sum = snaps.total_millis.load(Relaxed);
    let avg = |sum: f64, n: u64| if n == 0 { 0.0 } else { sum / n as f64 };
    vec![
        (
            "zk_avg_fsynctime",
            format!("{:.4}", avg(fsync_sum_ms, fsyncs)),
        ),
        ("zk_min_fsynctime", fsync_min_ms.to_string()),
        (
            "zk_max_fsynctime",
            (wal.fsync_micros_max.load(Relaxed) / 1000).to_string(),
        ),
        ("zk_cnt_fsynctime", fsyncs.to_string()),
        (
            "zk_p50_fsynctime",
            median(wal.fsync_recent_micros.quantile(0.5), 1000.0),
        ),
        ("zk_sum_fsynctime", format!("{}", fsync_sum_ms as u64)),
        (
            "zk_avg_snapshottime",
            format!("{:.4}", avg(snap_sum as f64, taken)),
        ),
        (
            "zk_max_snapshottime",
            snaps.max_millis.load(Relaxed).to_string(),
        ),
        ("zk_cnt_snapshottime", taken.to_string()),
        (
            "zk_p50_snapshottime",
            median(snaps.recent_millis.quantile(0.5), 1.0),
        ),
        ("zk_sum_snapshottime", snap_sum.to_string()),
        (
            "zk_startup_txns_loaded",
            core.replica.startup.txns_loaded.to_string(),
        ),
        (
            "zk_startup_snap_load_time",
            core.replica.startup.load_ms.to_string(),
        ),
        (
            "zk_meerkat_log_records",
            wal.records.load(Relaxed).to_string(),
        ),
        (
            "zk_meerkat_log_groups",
            wal.groups.load(Relaxed).to_string(),
        ),
    ]
}

fn file_descriptor_counts() -> Option<(usize, u64)> {
    let open = std::fs::read_dir("/proc/self/fd").ok()?.count();
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let max = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse().ok())?;
    Some((open, max))
}

fn conf(core: &Core) -> String {
    let c = &core.config;
    let mut out = String::new();
    let _ = writeln!(out, "clientPort={}", c.client_port);
    let _ = writeln!(out, "secureClientPort=-1");
    let _ = writeln!(out, "dataDir={}", c.data_dir.join("version-2").display());
    let _ = writeln!(out, "dataDirSize=0");
    let _ = writeln!(
        out,
        "dataLogDir={}",
        c.data_log_dir.join("version-2").display()
    );
    let _ = writeln!(out, "dataLogSize=0");
    let _ = writeln!(out, "tickTime={}", c.tick_time_ms);
    let _ = writeln!(out, "maxClientCnxns={}", c.max_client_cnxns);
    let _ = writeln!(out, "minSessionTimeout={}", c.min_session_timeout_ms);
    let _ = writeln!(out, "maxSessionTimeout={}", c.max_session_timeout_ms);
    let _ = writeln!(out, "clientPortListenBacklog=-1");
    let _ = writeln!(out, "serverId=0");
    out
}

fn envi() -> String {
    let mut out = String::from("Environment:\n");
    let _ = writeln!(out, "zookeeper.version={}", version_line());
    let _ = writeln!(out, "host.name={}", hostname());
    let _ = writeln!(out, "meerkat.version={}", env!("CARGO_PKG_VERSION"));
    let _ = writeln!(out, "os.name={}", std::env::consts::OS);
    let _ = writeln!(out, "os.arch={}", std::env::consts::ARCH);
    let _ = writeln!(out, "os.version={}", os_release());
    let _ = writeln!(
        out,
        "user.name={}",
        std::env::var("USER").unwrap_or_default()
    );
    let _ = writeln!(
        out,
        "user.home={}",
        std::env::var("HOME").unwrap_or_default()
    );
    if let Ok(dir) = std::env::current_dir() {
        let _ = writeln!(out, "user.dir={}", dir.display());
    }
    out
}

fn os_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map_or_else(|_| String::new(), |v| v.trim().to_string())
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map_or_else(|_| "localhost".into(), |h| h.trim().to_string())
}

fn cons(core: &Core, asker: std::net::SocketAddr) -> String {
    let mut out = String::new();
    let _ = writeln!(out, " /{asker}[0](queued=0,recved=1,sent=0)");
    for c in core.replica.conns.values() {
        let s = &c.stats;
        let _ = write!(
            out,
            " /{}[1](queued=0,recved={},sent={}",
            c.peer, s.packets_received, s.packets_sent
        );
        if let Some(sid) = c.session_id {
            let _ = write!(
                out,
                ",sid=0x{sid:x},lop={},est={},to={},lcxid=0x{:x},lzxid=0x{:x},lresp={},llat={},minlat={},avglat={:.0},maxlat={}",
                s.last_op,
                s.established_wall_ms,
                c.timeout_ms,
                s.last_cxid,
                s.last_zxid,
                s.last_response_wall_ms,
                s.last_latency_ms,
                s.latency.min_ms,
                s.latency.avg(),
                s.latency.max_ms
            );
        }
        out.push_str(")\n");
    }
    out.push('\n');
    out
}

fn dump(core: &Core, asker: std::net::SocketAddr) -> String {
    let mut out = String::from("SessionTracker dump:\n");
    let buckets: Vec<_> = core.replica.sessions.buckets().collect();
    let _ = writeln!(
        out,
        "Session Sets ({})/({}):",
        buckets.len(),
        core.replica.sessions.len()
    );
    let now_mono = core.uptime_ms() as i64;
    for (at, sessions) in buckets {
        let wall = wall_ms() + (*at as i64 - now_mono);
        let _ = writeln!(out, "{} expire at {}:", sessions.len(), java_date(wall));
        for s in sessions {
            let _ = writeln!(out, "\t0x{s:x}");
        }
    }
    out.push_str("ephemeral nodes dump:\n");
    let with: Vec<_> = core.replica.tree.sessions_with_ephemerals().collect();
    let _ = writeln!(out, "Sessions with Ephemerals ({}):", with.len());
    for (session, paths) in with {
        let _ = writeln!(out, "0x{session:x}:");
        for p in paths {
            let _ = writeln!(out, "\t{p}");
        }
    }
    out.push_str("Connections dump:\n");
    let total = core.replica.conns.len() + 1;
    let _ = writeln!(out, "Connections Sets (1)/({total}):");
    let _ = writeln!(out, "{total} expire at {}:", java_date(wall_ms()));
    let _ = writeln!(out, "\tip: /{asker} sessionId: 0x0");
    for c in core.replica.conns.values() {
        let _ = writeln!(
            out,
            "\tip: /{} sessionId: 0x{:x}",
            c.peer,
            c.session_id.unwrap_or(0)
        );
    }
    out
}

/// `java.util.Date.toString()` in UTC, e.g. `Sun Nov 22 07:21:09 UTC 2026`.
fn java_date(epoch_ms: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = epoch_ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{} {} {:02} {:02}:{:02}:{:02} UTC {}",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(month - 1) as usize],
        day,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        year
    )
}

fn session_label(core: &Core, conn: u64) -> String {
    core.replica
        .conns
        .get(&conn)
        .and_then(|c| c.session_id)
        .map_or_else(|| format!("conn{conn}"), |s| format!("0x{s:x}"))
}

fn wchs(core: &Core) -> String {
    let by_conn = core.replica.watches.by_connection();
    format!(
        "{} connections watching {} paths\nTotal watches:{}\n",
        by_conn.len(),
        core.replica.watches.path_count(),
        core.replica.watches.data_watch_count()
    )
}

fn wchc(core: &Core) -> String {
    let mut out = String::new();
    let mut by_conn: Vec<_> = core.replica.watches.by_connection().into_iter().collect();
    by_conn.sort();
    for (conn, paths) in by_conn {
        let _ = writeln!(out, "{}", session_label(core, conn));
        for p in paths {
            let _ = writeln!(out, "\t{p}");
        }
    }
    out
}

fn wchp(core: &Core) -> String {
    let mut out = String::new();
    let mut by_path: Vec<_> = core.replica.watches.by_path().into_iter().collect();
    by_path.sort();
    for (p, conns) in by_path {
        let _ = writeln!(out, "{p}");
        for conn in conns {
            let _ = writeln!(out, "\t{}", session_label(core, conn));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn java_date_format() {
        assert_eq!(super::java_date(0), "Thu Jan 01 00:00:00 UTC 1970");
        assert_eq!(
            super::java_date(1_795_332_069_000),
            "Sun Nov 22 07:21:09 UTC 2026"
        );
    }
}
