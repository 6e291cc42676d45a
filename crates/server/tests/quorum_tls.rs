//! Quorum TLS (`sslQuorum=true`, `ssl.quorum.*`): three members in one process over real
//! loopback sockets whose peer connections are mutual TLS. Two trusted members elect a leader
//! and replicate writes; a member whose certificate a CA they do not trust signed is refused,
//! with the reason in the log, until it restarts with a trusted certificate, joins and catches
//! up; then the leader is stopped and the other two elect a new one and take writes.
//!
//! Certificates are made by the test (rcgen); no private key is committed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use server::config::{ServerConfig, StoreLocation};
use server::RunningServer;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use support::*;

const WITHIN: Duration = Duration::from_secs(30);

#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn log() -> &'static Log {
    static LOG: OnceLock<Log> = OnceLock::new();
    LOG.get_or_init(|| {
        let log = Log::default();
        let writer = log.clone();
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .with_writer(move || writer.clone())
            .init();
        log
    })
}

/// Whether one log line contains every one of `needles`.
fn log_has(needles: &[&str]) -> bool {
    String::from_utf8_lossy(&log().0.lock().unwrap())
        .lines()
        .any(|line| needles.iter().all(|n| line.contains(n)))
}

fn ca(cn: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, cn);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

/// A PEM key store for a member on 127.0.0.1, signed by `issuer`.
fn member_store(dir: &Path, name: &str, issuer: &CertifiedIssuer<'static, KeyPair>) -> PathBuf {
    let params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, issuer).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("{}{}", key.serialize_pem(), cert.pem())).unwrap();
    path
}

struct Members {
    dirs: Vec<PathBuf>,
    client_ports: Vec<u16>,
    lines: String,
    trust: PathBuf,
    /// zoo.cfg lines every member gets besides the common ones.
    extra: String,
}

impl Members {
    fn new(trust: PathBuf) -> Self {
        let (mut dirs, mut client_ports, mut lines) = (Vec::new(), Vec::new(), String::new());
        for sid in 1..=3 {
            let client = ports::free_port().unwrap();
            let (q, e) = (ports::free_port().unwrap(), ports::free_port().unwrap());
            lines.push_str(&format!(
                "server.{sid}=127.0.0.1:{q}:{e};127.0.0.1:{client}\n"
            ));
            let dir = fresh_data_dir();
            std::fs::write(dir.join("myid"), format!("{sid}\n")).unwrap();
            dirs.push(dir);
            client_ports.push(client);
        }
        Members {
            dirs,
            client_ports,
            lines,
            trust,
            extra: String::new(),
        }
    }

    fn config(&self, sid: usize, key_store: &Path) -> ServerConfig {
        let text = format!(
            "tickTime=100\ninitLimit=20\nsyncLimit=5\ndataDir={}\nclientPort={}\n\
             clientPortAddress=127.0.0.1\npreAllocSize=1024\n4lw.commands.whitelist=*\n\
             sslQuorum=true\nssl.quorum.keyStore.location={}\nssl.quorum.trustStore.location={}\n{}{}",
            self.dirs[sid - 1].display(),
            self.client_ports[sid - 1],
            key_store.display(),
            self.trust.display(),
            self.lines,
            self.extra
        );
        let config = ServerConfig::parse(&text, "zoo.cfg").expect("valid zoo.cfg");
        assert!(config.quorum_tls.enabled);
        assert_eq!(
            config.quorum_tls.key_store,
            Some(StoreLocation::new(key_store))
        );
        config
    }

    fn address(&self, sid: usize) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.client_ports[sid - 1]))
    }

    async fn start(&self, sid: usize, key_store: &Path) -> RunningServer {
        let mut attempts = 0;
        loop {
            match server::start(self.config(sid, key_store)).await {
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
}

async fn four_letter(addr: SocketAddr, word: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut stream) = tokio::net::TcpStream::connect(addr).await else {
        return String::new();
    };
    let _ = stream.write_all(word.as_bytes()).await;
    let mut out = String::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut out)).await;
    out
}

async fn mode(addr: SocketAddr) -> String {
    four_letter(addr, "srvr")
        .await
        .lines()
        .find_map(|l| l.strip_prefix("Mode: ").map(str::to_string))
        .unwrap_or_default()
}

/// Waits (bounded) until `sid` is a leader or follower; returns which.
async fn serving(members: &Members, sid: usize) -> String {
    let deadline = Instant::now() + WITHIN;
    loop {
        let m = mode(members.address(sid)).await;
        if m == "leader" || m == "follower" {
            return m;
        }
        assert!(Instant::now() < deadline, "member {sid} does not serve");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn session(addr: SocketAddr) -> Conn {
    let deadline = Instant::now() + WITHIN;
    loop {
        let mut conn = Conn::open(addr).await;
        if conn.handshake(&new_session_request()).await.is_ok() {
            return conn;
        }
        assert!(Instant::now() < deadline, "no session on {addr}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn write(conn: &mut Conn, path: &str) {
    let xid = conn.send(&create(path, path.as_bytes(), 0)).await;
    assert_eq!(conn.reply_to(xid).await.header.err, 0, "create {path}");
}

async fn reads(conn: &mut Conn, path: &str) -> bool {
    let sync = conn
        .send(&proto::request::Request::Sync(proto::PathRecord {
            path: path.to_string(),
        }))
        .await;
    let _ = conn.reply_to(sync).await;
    let xid = conn.send(&get_data(path, false)).await;
    conn.reply_to(xid).await.header.err == 0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_talk_mutual_tls_and_refuse_an_untrusted_member() {
    log();
    let dir = tempfile::tempdir().unwrap();
    let trusted = ca("ensemble CA");
    let rogue = ca("rogue CA");
    let trust = dir.path().join("ca.pem");
    std::fs::write(&trust, trusted.pem()).unwrap();
    let good = member_store(dir.path(), "member.pem", &trusted);
    let bad = member_store(dir.path(), "rogue.pem", &rogue);
    let members = Members::new(trust);

    let mut servers = vec![
        Some(members.start(1, &good).await),
        Some(members.start(2, &good).await),
        Some(members.start(3, &bad).await),
    ];
    serving(&members, 1).await;
    serving(&members, 2).await;
    let mut conn = session(members.address(1)).await;
    write(&mut conn, "/over-tls").await;
    let mut on_two = session(members.address(2)).await;
    assert!(reads(&mut on_two, "/over-tls").await, "replicated over TLS");

    // The untrusted member is refused, and the log says why: the trusted members dialing it
    // reject its certificate, and it rejects theirs' as it does not trust their CA either.
    let deadline = Instant::now() + WITHIN;
    while !log_has(&["peer handshake failed", "peer=3", "UnknownIssuer"]) {
        assert!(
            Instant::now() < deadline,
            "no refusal of the rogue member logged"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_ne!(mode(members.address(3)).await, "leader");
    assert_ne!(mode(members.address(3)).await, "follower");

    // With a trusted certificate it joins and catches up.
    if let Some(s) = servers[2].take() {
        s.shutdown().await;
    }
    servers[2] = Some(members.start(3, &good).await);
    serving(&members, 3).await;
    let mut on_three = session(members.address(3)).await;
    assert!(
        reads(&mut on_three, "/over-tls").await,
        "caught up over TLS"
    );

    // The leader stops: the other two elect a new one over TLS and take writes.
    let mut leader = 0;
    for sid in 1..=3 {
        if mode(members.address(sid)).await == "leader" {
            leader = sid;
        }
    }
    assert!(leader > 0, "one leader");
    if let Some(s) = servers[leader - 1].take() {
        s.shutdown().await;
    }
    let rest: Vec<usize> = (1..=3).filter(|&s| s != leader).collect();
    let deadline = Instant::now() + WITHIN;
    loop {
        let mut modes = Vec::new();
        for &sid in &rest {
            modes.push(mode(members.address(sid)).await);
        }
        modes.sort();
        if modes == ["follower", "leader"] {
            break;
        }
        assert!(Instant::now() < deadline, "no new leader: {modes:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut conn = session(members.address(rest[0])).await;
    write(&mut conn, "/after-failover").await;
    let mut other = session(members.address(rest[1])).await;
    assert!(reads(&mut other, "/after-failover").await);
    for s in servers.into_iter().flatten() {
        s.shutdown().await;
    }
}

/// `sslQuorumReloadCertFiles=true`: a member refused for its certificate joins, without a
/// restart, once its key store file is replaced by one a trusted CA signed (its next dial and
/// accept use the new file, as ZooKeeper's reloading `QuorumX509Util` does).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_quorum_key_store_is_used_without_a_restart() {
    log();
    let dir = tempfile::tempdir().unwrap();
    let trusted = ca("reload CA");
    let rogue = ca("reload rogue CA");
    let trust = dir.path().join("ca.pem");
    std::fs::write(&trust, trusted.pem()).unwrap();
    let good = member_store(dir.path(), "member.pem", &trusted);
    let third = member_store(dir.path(), "third.pem", &rogue);
    let mut members = Members::new(trust);
    members.extra = "sslQuorumReloadCertFiles=true\n".to_string();
    assert!(members.config(3, &third).quorum_tls.reload_cert_files);

    let servers = vec![
        members.start(1, &good).await,
        members.start(2, &good).await,
        members.start(3, &third).await,
    ];
    serving(&members, 1).await;
    serving(&members, 2).await;
    let mut conn = session(members.address(1)).await;
    write(&mut conn, "/before-reload").await;
    // Refused while its certificate is the rogue CA's: give the others time to dial it.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let refused = mode(members.address(3)).await;
    assert!(
        refused != "leader" && refused != "follower",
        "the untrusted member joined: {refused}"
    );

    // Replaced the way operators' tooling does: a new file renamed over the old one.
    let fresh = member_store(dir.path(), "third.new.pem", &trusted);
    std::fs::rename(&fresh, &third).unwrap();
    serving(&members, 3).await;
    let mut on_three = session(members.address(3)).await;
    assert!(
        reads(&mut on_three, "/before-reload").await,
        "caught up over the reloaded certificate"
    );
    assert!(log_has(&[
        "quorum TLS key or trust store changed on disk: reloaded"
    ]));
    for s in servers {
        s.shutdown().await;
    }
}
