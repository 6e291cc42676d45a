//! meerkat's client over TLS to a meerkat server with `secureClientPort` and
//! `ssl.clientAuth=need`: the x509 identity in ACLs and whoAmI, a plaintext client refused on
//! the TLS port, an expired and an untrusted client certificate refused with a log line saying
//! why (rustls presents the certificate it is given, unlike Java's key manager, so the server
//! really sees the untrusted one), and a trust store replaced on disk picked up.
//!
//! Certificates are made by the test (rcgen); no private key is committed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use client::{Acl, Client, ClientConfig, CreateMode, ErrorCode, Id, StoreLocation, TlsConfig};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use server::config::{ClientAuth, ServerConfig};
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// One attribute: rcgen chooses the encoding order of several (Java's printing of that order
/// is covered by the server's unit tests and the Java differential suite).
const CLIENT_DN: &str = "CN=rust-client";

/// Server log lines, captured for the checks that a refusal says why.
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

fn log_has(needle: &str) -> bool {
    String::from_utf8_lossy(&log().0.lock().unwrap()).contains(needle)
}

struct Ca(CertifiedIssuer<'static, KeyPair>);

impl Ca {
    fn new(cn: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        Ca(CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap())
    }

    fn pem(&self) -> String {
        self.0.pem()
    }

    /// A PEM key store (key, then chain) for a leaf valid for 127.0.0.1 / localhost.
    fn leaf(&self, dn: &[(DnType, &str)], expired: bool) -> String {
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        for (kind, value) in dn {
            params.distinguished_name.push(kind.clone(), *value);
        }
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        if expired {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.0).unwrap();
        format!("{}{}{}", key.serialize_pem(), cert.pem(), self.pem())
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    let tmp = dir.join(format!("{name}.tmp"));
    std::fs::write(&tmp, text).unwrap();
    // One step, so the server never reads half a file.
    std::fs::rename(&tmp, &path).unwrap();
    path
}

struct Fixture {
    dir: tempfile::TempDir,
    secure: SocketAddr,
    plain: SocketAddr,
    _server: server::RunningServer,
}

impl Fixture {
    fn store(&self, name: &str) -> StoreLocation {
        StoreLocation::new(self.dir.path().join(name))
    }

    fn tls(&self, key_store: Option<&str>) -> ClientConfig {
        let mut tls = TlsConfig::new(self.store("ca.pem"));
        if let Some(key_store) = key_store {
            tls = tls.with_key_store(self.store(key_store));
        }
        support::config()
            .with_connect_timeout(Duration::from_secs(3))
            .with_tls(&tls)
            .expect("client stores load")
    }
}

async fn start(cas: &[&Ca], trusted: &Ca) -> Fixture {
    log();
    let dir = tempfile::tempdir().unwrap();
    let (server_ca, client_ca, rogue_ca) = (cas[0], cas[1], cas[2]);
    let server_store = server_ca.leaf(&[(DnType::CommonName, "server")], false);
    write(dir.path(), "server.pem", &server_store);
    write(dir.path(), "ca.pem", &server_ca.pem());
    write(dir.path(), "trust.pem", &trusted.pem());
    let client_dn = [(DnType::CommonName, "rust-client")];
    write(dir.path(), "client.pem", &client_ca.leaf(&client_dn, false));
    write(dir.path(), "expired.pem", &client_ca.leaf(&client_dn, true));
    write(
        dir.path(),
        "rogue.pem",
        &rogue_ca.leaf(&[(DnType::CommonName, "rogue")], false),
    );

    let data = dir.path().join("data");
    let mut config = ServerConfig::embedded_default();
    config.data_dir = data.clone();
    config.data_log_dir = data;
    config.pre_alloc_size_kb = 1024;
    config.client_port = ports::free_port().unwrap();
    config.client_port_address = IpAddr::V4(Ipv4Addr::LOCALHOST);
    config.tls.secure_client_port = Some(ports::free_port().unwrap());
    config.tls.secure_client_port_address = Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
    config.tls.key_store = Some(StoreLocation::new(dir.path().join("server.pem")));
    config.tls.trust_store = Some(StoreLocation::new(dir.path().join("trust.pem")));
    config.tls.client_auth = ClientAuth::Need;
    config.four_letter_words = server::config::FourLetterWhitelist::parse("*");
    let server = server::start(config)
        .await
        .expect("meerkat starts with TLS");
    Fixture {
        secure: server.secure_client_address.expect("a secure port"),
        plain: server.client_address,
        dir,
        _server: server,
    }
}

async fn refused(address: SocketAddr, config: ClientConfig) {
    match Client::connect(&address.to_string(), config).await {
        Err(e) => assert_eq!(e.code(), ErrorCode::ConnectionLoss, "{e}"),
        Ok(c) => panic!("expected no session, got 0x{:x}", c.session_id()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_x509_identity_refusals_and_reload() {
    let server_ca = Ca::new("server CA");
    let client_ca = Ca::new("client CA");
    let rogue_ca = Ca::new("rogue CA");
    let f = start(&[&server_ca, &client_ca, &rogue_ca], &client_ca).await;

    // A trusted certificate: its subject, as Java prints it, is the x509 identity.
    let zk = Client::connect(&f.secure.to_string(), f.tls(Some("client.pem")))
        .await
        .expect("TLS session");
    let ids: Vec<String> = zk
        .who_am_i()
        .await
        .unwrap()
        .into_iter()
        .map(|c| format!("{}:{}", c.auth_scheme, c.user))
        .collect();
    assert!(ids.contains(&format!("x509:{CLIENT_DN}")), "{ids:?}");
    let mine = [Acl {
        perms: proto::watch::perms::ALL,
        id: Id {
            scheme: "x509".into(),
            id: CLIENT_DN.into(),
        },
    }];
    zk.create("/mine", b"secret", &mine, CreateMode::Persistent)
        .await
        .unwrap();
    assert_eq!(zk.get_data("/mine").await.unwrap().0, b"secret");
    let plain = support::connect(&f.plain.to_string()).await;
    let denied = plain.get_data("/mine").await.expect_err("no x509 identity");
    assert_eq!(
        denied.code(),
        ErrorCode::NoAuth,
        "the plaintext port beside it works, without the identity"
    );

    // Refusals, each with a log line saying why.
    refused(
        f.secure,
        support::config().with_connect_timeout(Duration::from_secs(3)),
    )
    .await;
    assert!(
        log_has("TLS handshake failed"),
        "plaintext on the TLS port is logged"
    );
    refused(f.secure, f.tls(Some("expired.pem"))).await;
    assert!(
        log_has("certificate expired"),
        "the log says the certificate expired"
    );
    refused(f.secure, f.tls(Some("rogue.pem"))).await;
    assert!(
        log_has("UnknownIssuer"),
        "the log says the issuer is unknown"
    );
    refused(f.secure, f.tls(None)).await;
    assert!(
        log_has("peer sent no certificates"),
        "the log says none was sent"
    );

    // mntr counts them under ZooKeeper's names.
    let plain_address = f.plain;
    let mntr = tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let mut s = std::net::TcpStream::connect(plain_address).unwrap();
        s.write_all(b"mntr").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text
    })
    .await
    .unwrap();
    let value = |key: &str| -> u64 {
        mntr.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}\t")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{key} in mntr:\n{mntr}"))
    };
    assert!(value("zk_unsuccessful_handshake") >= 4, "{mntr}");
    assert!(value("zk_auth_failed_count") >= 4, "{mntr}");
    assert!(value("zk_non_mtls_local_conn_count") >= 2, "{mntr}");

    // The trust store replaced on disk: the rogue CA's client gets in, with no restart.
    write(
        f.dir.path(),
        "trust.pem",
        &format!("{}{}", client_ca.pem(), rogue_ca.pem()),
    );
    let rogue = Client::connect(&f.secure.to_string(), f.tls(Some("rogue.pem")))
        .await
        .expect("the new trust store is used");
    assert!(log_has("reloaded"));
    rogue.close().await;
    zk.close().await;
}
