//! Ensemble members in one process, over real loopback sockets and real data dirs: election,
//! writes forwarded to the leader, reads on every member, sync, sessions that move between
//! members, and a member that restarts and catches up (DIFF after a few writes, SNAP after
//! more than the leader keeps in memory). Real processes and faults are in the meerkat
//! crate's `ensemble` test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod sasl_support;
mod support;

use proto::request::Request;
use proto::response::Response;
use proto::{ConnectRequest, ErrorCode, OpCode, PathRecord};
use sasl_support::*;
use server::config::ServerConfig;
use server::RunningServer;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use support::*;

/// How long an ensemble may take to elect and serve; generous for a loaded CI machine.
const SERVING_WITHIN: Duration = Duration::from_secs(20);

/// How long a member without a leader holds its clients: far above an election on a loaded
/// machine (the default, one 100 ms tick here, would let a slow election close them).
const FAILOVER_HOLD_MS: u64 = 2_000;

/// Logs of the members, shown for a failing test (`RUST_LOG=debug` for more).
fn init_logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_test_writer()
        .try_init();
}

fn free_port() -> u16 {
    ports::free_port().expect("a free port")
}

/// The configuration of an ensemble of `n` members on loopback, one data dir each.
struct Ensemble {
    dirs: Vec<PathBuf>,
    client_ports: Vec<u16>,
    lines: String,
    /// More zoo.cfg lines for every member.
    extra: String,
    /// Each member's AdminServer port, when they have one.
    admin_ports: Vec<u16>,
}

impl Ensemble {
    fn new(n: usize) -> Ensemble {
        Ensemble::with_observers(n, 0)
    }

    /// `voters` participants, then `observers` observers.
    fn with_observers(voters: usize, observers: usize) -> Ensemble {
        let n = voters + observers;
        init_logs();
        let mut lines = String::new();
        let mut dirs = Vec::new();
        let mut client_ports = Vec::new();
        for sid in 1..=n {
            let client = free_port();
            let role = if sid > voters { ":observer" } else { "" };
            lines.push_str(&format!(
                "server.{sid}=127.0.0.1:{}:{}{role};127.0.0.1:{client}\n",
                free_port(),
                free_port()
            ));
            let dir = fresh_data_dir();
            std::fs::write(dir.join("myid"), format!("{sid}\n")).unwrap();
            dirs.push(dir);
            client_ports.push(client);
        }
        Ensemble {
            dirs,
            client_ports,
            lines,
            extra: String::new(),
            admin_ports: Vec::new(),
        }
    }

    fn diskless(n: usize) -> Ensemble {
        let mut ensemble = Ensemble::new(n);
        ensemble.extra = "diskless=true\n".into();
        ensemble
    }

    fn config(&self, sid: usize) -> ServerConfig {
        let dir = &self.dirs[sid - 1];
        let admin = match self.admin_ports.get(sid - 1) {
            Some(port) => format!(
                "admin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort={port}\n"
            ),
            None => String::new(),
        };
        let text = format!(
            "tickTime=100\ninitLimit=20\nsyncLimit=5\nfailoverHoldMs={FAILOVER_HOLD_MS}\ndataDir={}\nclientPort={}\nclientPortAddress=127.0.0.1\npreAllocSize=1024\nmaxSessionTimeout=60000\n4lw.commands.whitelist=*\n{}{}{admin}",
            dir.display(),
            self.client_ports[sid - 1],
            self.lines,
            self.extra
        );
        ServerConfig::parse(&text, "zoo.cfg").expect("valid zoo.cfg")
    }

    fn address(&self, sid: usize) -> SocketAddr {
        format!("127.0.0.1:{}", self.client_ports[sid - 1])
            .parse()
            .unwrap()
    }

    async fn start(&self, sid: usize) -> RunningServer {
        // While a member is down, its ports are free, and its peers' dials to it can draw one
        // of them as their own ephemeral port for an instant: retry as an operator would.
        let mut attempts = 0;
        loop {
            match server::start(self.config(sid)).await {
                Ok(running) => return running,
                Err(
                    server::StartError::PeerListen { source, .. }
                    | server::StartError::Listen { source, .. },
                ) if source.kind() == std::io::ErrorKind::AddrInUse && attempts < 50 => {
                    attempts += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("member {sid} starts: {e:?}"),
            }
        }
    }

    async fn start_all(&self) -> Vec<Option<RunningServer>> {
        let mut servers = Vec::new();
        for sid in 1..=self.dirs.len() {
            servers.push(Some(self.start(sid).await));
        }
        servers
    }
}

/// A session on `addr` once the member serves (it closes clients until a leader is
/// established).
async fn serving_session(addr: SocketAddr) -> Conn {
    let deadline = Instant::now() + SERVING_WITHIN;
    loop {
        if let Ok(stream) = tokio::net::TcpStream::connect(addr).await {
            drop(stream);
            let mut conn = Conn::open(addr).await;
            if conn.handshake(&new_session_request()).await.is_ok() {
                return conn;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{addr} did not serve within {SERVING_WITHIN:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn four_letter(addr: SocketAddr, word: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(word.as_bytes()).await.unwrap();
    let mut out = String::new();
    tokio::time::timeout(IO_TIMEOUT, stream.read_to_string(&mut out))
        .await
        .expect("four-letter answer in time")
        .unwrap();
    out
}

async fn mode(addr: SocketAddr) -> String {
    four_letter(addr, "srvr")
        .await
        .lines()
        .find_map(|l| l.strip_prefix("Mode: ").map(str::to_string))
        .unwrap_or_default()
}

async fn current_epoch(addr: SocketAddr) -> i64 {
    four_letter(addr, "mntr")
        .await
        .lines()
        .find_map(|l| l.strip_prefix("zk_current_epoch\t"))
        .and_then(|v| v.parse().ok())
        .expect("zk_current_epoch in mntr")
}

/// A new session from a client that claims to have seen `zxid`.
async fn connect_having_seen(addr: SocketAddr, zxid: i64) -> Result<proto::ConnectResponse, ()> {
    reconnect_having_seen(addr, &new_session_request(), zxid).await
}

/// `session` (a connect request naming a session, or a new one) from a client that claims to
/// have seen `zxid`.
async fn reconnect_having_seen(
    addr: SocketAddr,
    session: &ConnectRequest,
    zxid: i64,
) -> Result<proto::ConnectResponse, ()> {
    let mut conn = Conn::open(addr).await;
    let request = ConnectRequest {
        last_zxid_seen: zxid,
        ..session.clone()
    };
    conn.handshake(&request).await.map_err(|_| ())
}

/// A zxid far beyond anything written, in `epoch`.
fn far_zxid(epoch: i64) -> i64 {
    (epoch << 32) | 0xffff_0000
}

fn sync(path: &str) -> Request {
    Request::Sync(PathRecord { path: path.into() })
}

/// After a sync, the member's data for `path`, or the error code.
async fn read_after_sync(conn: &mut Conn, path: &str) -> Result<Vec<u8>, i32> {
    let synced = conn.call(&sync("/")).await;
    assert_eq!(synced.header.err, 0, "sync");
    assert_eq!(synced.response(OpCode::Sync), Response::Sync("/".into()));
    let reply = conn.call(&get_data(path, false)).await;
    if reply.header.err != 0 {
        return Err(reply.header.err);
    }
    match reply.response(OpCode::GetData) {
        Response::GetData(r) => Ok(r.data.unwrap_or_default()),
        other => panic!("unexpected getData body {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_members_elect_one_leader_and_every_member_takes_writes_and_reads() {
    let ensemble = Ensemble::new(3);
    let servers = ensemble.start_all().await;
    let mut sessions = Vec::new();
    for sid in 1..=3 {
        sessions.push(serving_session(ensemble.address(sid)).await);
    }
    let mut modes = Vec::new();
    for sid in 1..=3 {
        modes.push(mode(ensemble.address(sid)).await);
    }
    modes.sort();
    assert_eq!(modes, ["follower", "follower", "leader"], "one leader");
    // Writes through every member, pipelined: FIFO per session holds across forwarding.
    for (i, conn) in sessions.iter_mut().enumerate() {
        let mut xids = Vec::new();
        for k in 0..20 {
            let path = format!("/m{i}-{k}");
            xids.push(conn.send(&create(&path, path.as_bytes(), 0)).await);
        }
        for xid in xids {
            let reply = conn.reply_to(xid).await;
            assert_eq!(reply.header.err, 0, "create through member {}", i + 1);
        }
    }
    // Every member has every write after a sync.
    for conn in sessions.iter_mut() {
        for i in 0..3 {
            for k in 0..20 {
                let path = format!("/m{i}-{k}");
                assert_eq!(
                    read_after_sync(conn, &path).await,
                    Ok(path.as_bytes().to_vec())
                );
            }
        }
    }
    // A read right after the session's own write sees it, on any member.
    for (i, conn) in sessions.iter_mut().enumerate() {
        let path = format!("/ryw{i}");
        let w = conn.send(&create(&path, b"mine", 0)).await;
        let r = conn.send(&get_data(&path, false)).await;
        assert_eq!(conn.reply_to(w).await.header.err, 0);
        let read = conn.reply_to(r).await;
        assert_eq!(read.header.err, 0, "read-your-write on member {}", i + 1);
    }
    for s in servers.into_iter().flatten() {
        s.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_moves_to_another_member_with_its_ephemerals_and_the_old_one_gets_session_moved()
{
    let ensemble = Ensemble::new(3);
    let servers = ensemble.start_all().await;
    let mut on_one = serving_session(ensemble.address(1)).await;
    let created = on_one
        .call(&create("/eph", b"owned", 1 /* ephemeral */))
        .await;
    assert_eq!(created.header.err, 0);
    let session = on_one.session.clone().unwrap();
    // The client moves to member 2 with its session id and password.
    let mut on_two = serving_session(ensemble.address(2)).await;
    drop(on_two);
    on_two = Conn::open(ensemble.address(2)).await;
    let moved = on_two
        .handshake(&ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: created.header.zxid,
            timeout_ms: session.timeout_ms,
            session_id: session.session_id,
            passwd: session.passwd.clone(),
            read_only: Some(false),
        })
        .await
        .expect("reconnect");
    assert_eq!(moved.session_id, session.session_id, "same session");
    assert!(moved.timeout_ms > 0, "the session is alive");
    match on_two
        .call(&get_data("/eph", false))
        .await
        .response(OpCode::GetData)
    {
        Response::GetData(r) => {
            assert_eq!(r.stat.ephemeral_owner, session.session_id, "still owned");
        }
        other => panic!("unexpected {other:?}"),
    }
    // The old connection's writes go through a server the session left: SessionMoved.
    let stale = on_one.call(&create("/stale", b"", 0)).await;
    assert_eq!(stale.header.err, ErrorCode::SessionMoved.code());
    // A wrong password is refused as expired (by a member that serves: one still joining
    // holds the handshake, and closes it if it has no leader within the hold).
    drop(serving_session(ensemble.address(3)).await);
    let mut thief = Conn::open(ensemble.address(3)).await;
    let refused = thief
        .handshake(&ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout_ms: session.timeout_ms,
            session_id: session.session_id,
            passwd: vec![7; 16],
            read_only: Some(false),
        })
        .await
        .expect("an answer");
    assert_eq!(refused.timeout_ms, 0, "expired");
    // Closing the session on member 2 removes the ephemeral everywhere.
    let closed = on_two.call(&Request::CloseSession).await;
    assert_eq!(closed.header.err, 0);
    let mut observer = serving_session(ensemble.address(3)).await;
    assert_eq!(
        read_after_sync(&mut observer, "/eph").await,
        Err(ErrorCode::NoNode.code())
    );
    for s in servers.into_iter().flatten() {
        s.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_restarted_after_few_or_many_writes_catches_up() {
    let ensemble = Ensemble::new(3);
    let mut servers = ensemble.start_all().await;
    let mut writer = serving_session(ensemble.address(1)).await;
    // Pick a follower to stop, so the ensemble keeps its leader.
    let mut follower = 0;
    for sid in 1..=3 {
        if mode(ensemble.address(sid)).await == "follower" {
            follower = sid;
        }
    }
    assert_ne!(follower, 0, "a follower");
    let writer_sid = if follower == 1 { 2 } else { 1 };
    if writer_sid != 1 {
        writer = serving_session(ensemble.address(writer_sid)).await;
    }
    // Few writes while it is down (DIFF), then many (more than the leader's in-memory history
    // of 500 committed proposals: SNAP).
    for (round, count) in [(0, 30), (1, 1500)] {
        servers[follower - 1].take().unwrap().shutdown().await;
        let mut xids = Vec::new();
        for k in 0..count {
            let path = format!("/r{round}-{k}");
            xids.push(writer.send(&create(&path, b"x", 0)).await);
            if xids.len() >= 64 {
                let xid = xids.remove(0);
                assert_eq!(writer.reply_to(xid).await.header.err, 0);
            }
        }
        for xid in xids {
            assert_eq!(writer.reply_to(xid).await.header.err, 0);
        }
        servers[follower - 1] = Some(ensemble.start(follower).await);
        let mut back = serving_session(ensemble.address(follower)).await;
        for k in [0, count / 2, count - 1] {
            let path = format!("/r{round}-{k}");
            assert_eq!(
                read_after_sync(&mut back, &path).await,
                Ok(b"x".to_vec()),
                "{path} on the restarted member after round {round}"
            );
        }
        let count_on = |text: String| {
            text.lines()
                .find_map(|l| l.strip_prefix("zk_znode_count\t").map(str::to_string))
                .unwrap_or_default()
        };
        let leader_count = count_on(four_letter(ensemble.address(writer_sid), "mntr").await);
        let back_count = count_on(four_letter(ensemble.address(follower), "mntr").await);
        assert_eq!(
            back_count, leader_count,
            "same znode count after round {round}"
        );
    }
    for s in servers.into_iter().flatten() {
        s.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_expires_only_sessions_no_member_heard_from() {
    let ensemble = Ensemble::new(3);
    let servers = ensemble.start_all().await;
    let mut follower = 0;
    for sid in 1..=3 {
        let _ = serving_session(ensemble.address(sid)).await;
        if mode(ensemble.address(sid)).await == "follower" {
            follower = sid;
        }
    }
    assert_ne!(follower, 0);
    // A 1 s session on a follower, kept alive by pings for three timeouts: the follower's
    // reports keep the leader from expiring it.
    let mut short = Conn::open(ensemble.address(follower)).await;
    let mut request = new_session_request();
    request.timeout_ms = 1000;
    let session = short.handshake(&request).await.expect("session");
    assert_eq!(session.timeout_ms, 1000);
    let created = short.call(&create("/short-lived", b"", 1)).await;
    assert_eq!(created.header.err, 0);
    let alive_until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < alive_until {
        assert_eq!(short.call(&Request::Ping).await.header.err, 0);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let still = short.call(&set_data("/short-lived", b"alive", -1)).await;
    assert_eq!(
        still.header.err, 0,
        "an active session on a follower lives on"
    );
    // Silence: the leader expires it, and its ephemeral goes on every member.
    drop(short);
    let mut watcher = serving_session(ensemble.address(follower)).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match read_after_sync(&mut watcher, "/short-lived").await {
            Err(code) if code == ErrorCode::NoNode.code() => break,
            _ => {}
        }
        assert!(
            Instant::now() < deadline,
            "the silent session was not expired"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for s in servers.into_iter().flatten() {
        s.shutdown().await;
    }
}

/// Rewrites a stopped member's newest state with one extra znode at the same zxid: a replica
/// whose tree silently diverged (a bug, a bad disk) while its zxid says it is in step.
fn diverge_offline(data_dir: &std::path::Path) {
    use proto::txn::{CreateTxn, Txn, TxnBody, TxnHeader};
    let fs = storage::RealFs;
    let layout = storage::Layout::new(data_dir, data_dir);
    let recovered = storage::recovery::recover(&fs, &layout).expect("recover the member");
    let mut tree = recovered.tree;
    let zxid = tree.last_processed_zxid();
    let txn = Txn {
        header: TxnHeader {
            client_id: 0,
            cxid: 0,
            zxid,
            time: 0,
            op_type: OpCode::Create.code(),
        },
        body: TxnBody::Create(CreateTxn {
            path: "/diverged".into(),
            data: Some(b"only here".to_vec()),
            acl: open_acl().into(),
            ephemeral: false,
            parent_cversion: 0,
        }),
    };
    tree.apply(&txn, &mut Vec::new());
    assert_eq!(
        tree.last_processed_zxid(),
        zxid,
        "same zxid, different tree"
    );
    storage::snapshot_file::write(
        &fs,
        &layout,
        &tree.freeze(),
        storage::snapshot_file::Stamp {
            created_ms: 0,
            generation: recovered.generation,
            label: recovered.epoch_label,
        },
    )
    .expect("write the doctored snapshot");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_whose_tree_diverged_stops_serving_at_the_next_digest_check() {
    let ensemble = Ensemble::new(3);
    let mut servers = ensemble.start_all().await;
    let mut follower = 0;
    for sid in 1..=3 {
        let _ = serving_session(ensemble.address(sid)).await;
        if mode(ensemble.address(sid)).await == "follower" {
            follower = sid;
        }
    }
    let other = (1..=3).find(|&s| s != follower).unwrap();
    let mut writer = serving_session(ensemble.address(other)).await;
    assert_eq!(writer.call(&create("/before", b"", 0)).await.header.err, 0);
    let _ = read_after_sync(
        &mut serving_session(ensemble.address(follower)).await,
        "/before",
    )
    .await;
    servers[follower - 1].take().unwrap().shutdown().await;
    diverge_offline(&ensemble.dirs[follower - 1]);
    servers[follower - 1] = Some(ensemble.start(follower).await);
    // It rejoins by DIFF (its zxid is current) and serves, until the next commit's digest
    // exposes it.
    drop(serving_session(ensemble.address(follower)).await);
    let deadline = Instant::now() + SERVING_WITHIN;
    let mut k = 0;
    loop {
        k += 1;
        assert_eq!(
            writer
                .call(&create(&format!("/after{k}"), b"", 0))
                .await
                .header
                .err,
            0,
            "the healthy majority keeps taking writes"
        );
        let srvr = four_letter(ensemble.address(follower), "srvr").await;
        if srvr.contains("not currently serving") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the diverged member still serves: {srvr}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // It stays out: a client cannot get a session from it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut refused = Conn::open(ensemble.address(follower)).await;
    let answer = refused.handshake(&new_session_request()).await;
    assert!(
        answer.is_err(),
        "a halted member refuses clients: {answer:?}"
    );
    for s in servers.into_iter().flatten() {
        s.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observer_serves_reads_and_writes_but_never_votes() {
    let ensemble = Ensemble::with_observers(3, 1);
    let mut servers = ensemble.start_all().await;
    let mut on_observer = serving_session(ensemble.address(4)).await;
    assert_eq!(mode(ensemble.address(4)).await, "observer");
    assert_eq!(
        on_observer
            .call(&create("/via-observer", b"o", 0))
            .await
            .header
            .err,
        0
    );
    let mut on_voter = serving_session(ensemble.address(1)).await;
    assert_eq!(
        read_after_sync(&mut on_voter, "/via-observer").await,
        Ok(b"o".to_vec())
    );
    let leader_mntr = {
        let mut found = String::new();
        for sid in 1..=3 {
            if mode(ensemble.address(sid)).await == "leader" {
                found = four_letter(ensemble.address(sid), "mntr").await;
            }
        }
        found
    };
    assert!(
        leader_mntr.contains("zk_synced_observers\t1"),
        "{leader_mntr}"
    );
    assert!(
        leader_mntr.contains("zk_synced_followers\t2"),
        "{leader_mntr}"
    );
    // Two voters down: the observer and one voter are no quorum, so nothing is served.
    let mut down = 0;
    for sid in 1..=3 {
        if down < 2 && mode(ensemble.address(sid)).await != "leader" {
            servers[sid - 1].take().unwrap().shutdown().await;
            down += 1;
        }
    }
    let deadline = Instant::now() + SERVING_WITHIN;
    while !four_letter(ensemble.address(4), "srvr")
        .await
        .contains("not currently serving")
    {
        assert!(
            Instant::now() < deadline,
            "an observer plus one voter kept serving"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for s in servers.into_iter().flatten() {
        s.shutdown().await;
    }
}

/// Every member's znode count and digest (`mntr`, `hash`), once all serve and agree.
async fn converged(ensemble: &Ensemble, members: &[usize]) -> (String, String) {
    let deadline = Instant::now() + SERVING_WITHIN;
    loop {
        let mut seen = Vec::new();
        for &sid in members {
            let mntr = four_letter(ensemble.address(sid), "mntr").await;
            let count = mntr
                .lines()
                .find_map(|l| l.strip_prefix("zk_znode_count\t").map(str::to_string))
                .unwrap_or_default();
            let hash = four_letter(ensemble.address(sid), "hash").await;
            seen.push((count, hash));
        }
        if !seen[0].0.is_empty() && seen.iter().all(|s| *s == seen[0]) {
            return seen.swap_remove(0);
        }
        assert!(
            Instant::now() < deadline,
            "members did not converge: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Writes `count` znodes under `prefix` through `conn`; all must be acknowledged.
async fn write_many(conn: &mut Conn, prefix: &str, count: usize) -> Vec<String> {
    let mut paths = Vec::new();
    let mut xids = Vec::new();
    for k in 0..count {
        let path = format!("{prefix}{k}");
        xids.push(conn.send(&create(&path, path.as_bytes(), 0)).await);
        paths.push(path);
    }
    for xid in xids {
        assert_eq!(conn.reply_to(xid).await.header.err, 0);
    }
    paths
}

async fn leader_of(ensemble: &Ensemble, members: &[usize]) -> usize {
    let deadline = Instant::now() + SERVING_WITHIN;
    loop {
        for &sid in members {
            if mode(ensemble.address(sid)).await == "leader" {
                return sid;
            }
        }
        assert!(Instant::now() < deadline, "no leader among {members:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diskless_members_write_no_log_and_keep_every_acknowledged_write_through_restarts() {
    let ensemble = Ensemble::diskless(3);
    let mut servers = ensemble.start_all().await;
    let all = [1, 2, 3];
    let mut acked = Vec::new();
    let mut round = 0;
    // Thesis Alg. 5.2: restart a follower, kill the leader, restart it, restart both
    // followers; after each step every member agrees and has every acknowledged write.
    // Both followers restart amnesiac (no checkpoint: they were stopped, not failed over),
    // so the leader is the only whole voter: only a full house can elect (DESIGN.md §5).
    let steps: [&str; 4] = ["follower", "leader", "both-followers", "final"];
    for step in steps {
        let leader = leader_of(&ensemble, &all).await;
        let mut writer = serving_session(ensemble.address(leader)).await;
        round += 1;
        acked.extend(write_many(&mut writer, &format!("/s{round}-"), 40).await);
        // The writer's session and an ephemeral of it, for the lost-writes rule below.
        if step == "both-followers" {
            let eph = writer.send(&create("/lost-session-eph", b"", 1)).await;
            assert_eq!(writer.reply_to(eph).await.header.err, 0);
        }
        let writer_session = writer.session.clone().map(|s| ConnectRequest {
            session_id: s.session_id,
            passwd: s.passwd,
            ..new_session_request()
        });
        drop(writer);
        let followers: Vec<usize> = all.iter().copied().filter(|&s| s != leader).collect();
        let victims: Vec<usize> = match step {
            "follower" => vec![followers[0]],
            "leader" => vec![leader],
            "both-followers" => followers.clone(),
            _ => vec![],
        };
        for &sid in &victims {
            servers[sid - 1].take().unwrap().shutdown().await;
        }
        if step == "both-followers" {
            // Let the leader lose its quorum and write its failure checkpoint first, so that
            // the followers come back to an election rather than to an established leader.
            let deadline = Instant::now() + SERVING_WITHIN;
            while mode(ensemble.address(leader)).await == "leader" {
                assert!(Instant::now() < deadline, "the leader kept leading alone");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        for &sid in &victims {
            servers[sid - 1] = Some(ensemble.start(sid).await);
        }
        let (count, digest) = converged(&ensemble, &all).await;
        if step == "both-followers" {
            let mut full_houses = 0;
            for &sid in &all {
                let mntr = four_letter(ensemble.address(sid), "mntr").await;
                full_houses += mntr
                    .lines()
                    .find_map(|l| l.strip_prefix("zk_full_house_elections\t"))
                    .and_then(|v| v.parse::<u64>().ok())
                    .expect("zk_full_house_elections in mntr");
            }
            // No write since the election: this epoch has no transaction yet. A client that
            // saw more of the previous epoch than the ensemble now holds saw lost writes (here
            // it only claims to): its session is expired rather than refused forever. One
            // that saw more of the current epoch is only ahead of this member, and is refused
            // as in durable mode.
            // The session named is ended at once, its ephemeral with it (the client was told
            // it expired), not at its 30 s timeout; it reconnects through a follower, which
            // asks the leader.
            let epoch = current_epoch(ensemble.address(leader)).await;
            let session = writer_session.expect("the writer had a session");
            let expired = reconnect_having_seen(
                ensemble.address(followers[0]),
                &session,
                far_zxid(epoch - 1),
            )
            .await
            .expect("an answer, not a closed connection");
            assert_eq!((expired.timeout_ms, expired.session_id), (0, 0), "expired");
            let mut reader = serving_session(ensemble.address(followers[1])).await;
            let deadline = Instant::now() + Duration::from_secs(10);
            while read_after_sync(&mut reader, "/lost-session-eph")
                .await
                .is_ok()
            {
                assert!(
                    Instant::now() < deadline,
                    "the expired session's ephemeral outlived it"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(
                connect_having_seen(ensemble.address(leader), far_zxid(epoch))
                    .await
                    .is_err(),
                "refused"
            );
            assert_eq!(
                full_houses, 1,
                "one whole voter of three: a full house elected"
            );
        }
        let mut reader = serving_session(ensemble.address(followers[0])).await;
        for path in &acked {
            assert_eq!(
                read_after_sync(&mut reader, path).await,
                Ok(path.as_bytes().to_vec()),
                "{path} after step {step}"
            );
        }
        eprintln!("after {step}: {count} znodes, digest {}", digest.trim());
    }
    // Thesis Alg. 5.1: snapshots and epoch files only, no transaction log. A busy snapshot after
    // the first appends what changed to the delta file of the newest full snapshot (no
    // acknowledgement waits for it), so delta files are snapshots too.
    for dir in &ensemble.dirs {
        let files: Vec<String> = std::fs::read_dir(dir.join("meerkat-1"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        assert!(
            // snap-*.tmp is a busy snapshot being written; LOCK is the data dir's lock.
            files.iter().all(|f| f.starts_with("snap-")
                || f.starts_with("delta-")
                || f == "acceptedEpoch"
                || f == "currentEpoch"
                || f == "checkpoint"
                || f == "LOCK"),
            "a diskless member wrote more than snapshots and epochs: {files:?}"
        );
        assert!(files.iter().any(|f| f.starts_with("snap-")), "{files:?}");
    }
    for s in servers.into_iter().flatten() {
        s.shutdown().await;
    }
}

/// SASL on every member of an ensemble: an identity proved on a follower travels with the
/// writes it forwards, so the leader's prep checks a `sasl` ACL against it; a client of another
/// member with another identity, and one without, get NoAuth.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sasl_identity_proved_on_a_follower_travels_with_its_forwarded_writes() {
    let mut ensemble = Ensemble::new(3);
    let jaas = write_jaas(&ensemble.dirs[0]);
    ensemble.extra = format!(
        "jaasLoginFile={}\nauthProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n",
        jaas.display()
    );
    let servers = ensemble.start_all().await;
    let mut sessions = Vec::new();
    for sid in 1..=3 {
        sessions.push(serving_session(ensemble.address(sid)).await);
    }
    let mut follower = None;
    let mut leader = None;
    for sid in 1..=3 {
        match mode(ensemble.address(sid)).await.as_str() {
            "leader" => leader = Some(sid),
            "follower" if follower.is_none() => follower = Some(sid),
            _ => {}
        }
    }
    let (follower, leader) = (follower.expect("a follower"), leader.expect("a leader"));
    let other = (1..=3)
        .find(|&sid| sid != follower && sid != leader)
        .expect("a third member");
    let mut bob = sessions.remove(follower - 1);
    assert_eq!(sasl_authenticate(&mut bob, "bob", "bobsecret").await, 0);
    let created = bob
        .call(&create_with_acl("/bob", b"v1", "sasl", "bob"))
        .await;
    assert_eq!(
        created.header.err, 0,
        "create with a sasl ACL through a follower"
    );
    let set = bob.call(&set_data("/bob", b"v2", -1)).await;
    assert_eq!(
        set.header.err, 0,
        "the leader checks WRITE against sasl:bob"
    );
    assert_eq!(read_after_sync(&mut bob, "/bob").await, Ok(b"v2".to_vec()));

    let mut alice = serving_session(ensemble.address(leader)).await;
    assert_eq!(
        sasl_authenticate(&mut alice, "alice", "alicesecret").await,
        0
    );
    let set = alice.call(&set_data("/bob", b"alice's", -1)).await;
    assert_eq!(set.header.err, ErrorCode::NoAuth.code());
    let mut anonymous = serving_session(ensemble.address(other)).await;
    assert_eq!(
        read_after_sync(&mut anonymous, "/bob").await,
        Err(ErrorCode::NoAuth.code())
    );
    for s in servers.into_iter().flatten() {
        s.shutdown().await;
    }
}

/// An HTTP/1.1 request to an AdminServer; the whole answer (headers and body).
async fn admin_request(port: u16, method: &str, command: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("admin connects");
    let request = format!(
        "{method} /commands/{command} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    tcp.write_all(request.as_bytes())
        .await
        .expect("request sent");
    let mut out = Vec::new();
    tokio::time::timeout(SERVING_WITHIN, tcp.read_to_end(&mut out))
        .await
        .expect("admin answers in time")
        .expect("admin answer read");
    String::from_utf8_lossy(&out).into_owned()
}

/// A planned hand-over, asked through the AdminServer (POST only) and through the running
/// server (as SIGTERM does): the leader names its successor, which leads next; the old leader
/// follows it; a follower refuses; every member still takes writes and has them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_hands_over_to_its_successor_on_request() {
    let mut ensemble = Ensemble::new(3);
    ensemble.admin_ports = (0..3).map(|_| free_port()).collect();
    let servers = ensemble.start_all().await;
    let mut sessions = Vec::new();
    for sid in 1..=3 {
        sessions.push(serving_session(ensemble.address(sid)).await);
    }
    let first = leader_of(&ensemble, &[1, 2, 3]).await;
    let follower = if first == 1 { 2 } else { 1 };
    let answer = admin_request(
        ensemble.admin_ports[follower - 1],
        "POST",
        "leadership_handover",
    )
    .await;
    assert!(
        answer.contains("not an established leader"),
        "a follower refuses: {answer}"
    );
    let answer = admin_request(
        ensemble.admin_ports[first - 1],
        "GET",
        "leadership_handover",
    )
    .await;
    assert!(
        answer.starts_with("HTTP/1.1 405"),
        "GET changes nothing: {answer}"
    );
    assert_eq!(mode(ensemble.address(first)).await, "leader");

    let answer = admin_request(
        ensemble.admin_ports[first - 1],
        "POST",
        "leadership_handover",
    )
    .await;
    assert!(answer.contains("\"error\": null"), "{answer}");
    let successor: usize = answer
        .split("\"successor\": ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no successor in {answer}"));
    assert_ne!(successor, first);
    assert_eq!(leader_of(&ensemble, &[1, 2, 3]).await, successor);
    let deadline = Instant::now() + SERVING_WITHIN;
    while mode(ensemble.address(first)).await != "follower" {
        assert!(Instant::now() < deadline, "the old leader follows");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // And once more through the running server, as SIGTERM asks.
    let running = servers[successor - 1].as_ref().expect("the successor runs");
    let next = running
        .hand_over_leadership(Duration::from_secs(2))
        .await
        .expect("the successor hands over too");
    assert_ne!(next as usize, successor);
    assert_eq!(leader_of(&ensemble, &[1, 2, 3]).await, next as usize);

    // The sessions were held, not dropped: each still writes, and every member has it all.
    for (i, conn) in sessions.iter_mut().enumerate() {
        let path = format!("/after-hand-over-{i}");
        let xid = conn.send(&create(&path, b"", 0)).await;
        assert_eq!(conn.reply_to(xid).await.header.err, 0, "member {}", i + 1);
    }
    for conn in sessions.iter_mut() {
        for i in 0..3 {
            let path = format!("/after-hand-over-{i}");
            assert_eq!(read_after_sync(conn, &path).await, Ok(Vec::new()));
        }
    }
    for s in servers.into_iter().flatten() {
        s.shutdown().await;
    }
}

/// Quotas on an ensemble (`enforceQuota=true`): every member keeps the stats node as it
/// applies, a write through a follower past a hard limit is refused by the leader's prep, and a
/// member restarted after more writes than the leader keeps in memory (SNAP) knows the quota
/// again and keeps counting alike: stats, node count and digest equal on every member.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quotas_are_kept_alike_on_every_member_and_enforced_through_a_follower() {
    let mut ensemble = Ensemble::new(3);
    ensemble.extra = "enforceQuota=true\n".into();
    let mut servers = ensemble.start_all().await;
    let leader = leader_of(&ensemble, &[1, 2, 3]).await;
    let mut followers = (1..=3).filter(|&s| s != leader);
    let (follower, stopped) = (followers.next().unwrap(), followers.next().unwrap());
    let mut conn = serving_session(ensemble.address(follower)).await;
    // As zkCli's `setquota -N 50 /q` writes it.
    for (path, data) in [
        ("/q", ""),
        ("/zookeeper/quota/q", ""),
        (
            "/zookeeper/quota/q/zookeeper_limits",
            "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=50",
        ),
        ("/zookeeper/quota/q/zookeeper_stats", "count=0,bytes=0"),
    ] {
        let reply = conn.call(&create(path, data.as_bytes(), 0)).await;
        assert_eq!(reply.header.err, 0, "create {path}");
    }
    let paths = write_many(&mut conn, "/q/k", 49).await;
    let mut bytes: usize = paths.iter().map(String::len).sum();
    let refused = conn.call(&create("/q/over", b"", 0)).await;
    assert_eq!(
        refused.header.err,
        ErrorCode::QuotaExceeded.code(),
        "the 51st node under /q"
    );
    let stats_path = "/zookeeper/quota/q/zookeeper_stats";
    for sid in 1..=3 {
        let mut c = serving_session(ensemble.address(sid)).await;
        assert_eq!(
            read_after_sync(&mut c, stats_path).await,
            Ok(format!("count=50,bytes={bytes}").into_bytes()),
            "stats on member {sid}"
        );
    }
    // A follower misses 1,500 writes (a SNAP when it comes back), some of them under /q.
    servers[stopped - 1].take().unwrap().shutdown().await;
    write_many(&mut conn, "/outside-", 1500).await;
    for path in &paths[..10] {
        let delete = Request::Delete(proto::PathAndVersion {
            path: path.clone(),
            version: -1,
        });
        assert_eq!(conn.call(&delete).await.header.err, 0, "delete {path}");
        bytes -= path.len();
    }
    servers[stopped - 1] = Some(ensemble.start(stopped).await);
    // Through the member that came back: its own writes under /q count on every member.
    let mut back = serving_session(ensemble.address(stopped)).await;
    let reply = back.call(&set_data("/q", b"0123456789", -1)).await;
    assert_eq!(reply.header.err, 0, "setData /q");
    bytes += 10;
    let more = write_many(&mut back, "/q/again-", 10).await;
    bytes += more.iter().map(String::len).sum::<usize>();
    let refused = back.call(&create("/q/over", b"", 0)).await;
    assert_eq!(refused.header.err, ErrorCode::QuotaExceeded.code());
    converged(&ensemble, &[1, 2, 3]).await;
    for sid in 1..=3 {
        let mut c = serving_session(ensemble.address(sid)).await;
        assert_eq!(
            read_after_sync(&mut c, stats_path).await,
            Ok(format!("count=50,bytes={bytes}").into_bytes()),
            "stats on member {sid} after the restart"
        );
    }
    for s in servers.into_iter().flatten() {
        s.shutdown().await;
    }
}
