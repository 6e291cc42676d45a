//! The AdminServer over HTTPS, as ZooKeeper 3.9's `JettyAdminServer` serves it with the
//! `ssl.quorum.*` stores: `admin.forceHttps` (HTTPS only), `admin.portUnification` (HTTPS and
//! plain HTTP on one port) and `admin.needClientAuth` (a client certificate the quorum trust
//! store accepts). Real sockets on loopback, a real rustls client, real certificates made by
//! the test (rcgen); no private key is committed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use server::config::ServerConfig;
use std::net::SocketAddr;
use std::sync::Arc;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn ca(cn: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, cn);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

/// A certificate for 127.0.0.1 signed by `issuer`, with its key.
fn leaf(issuer: &CertifiedIssuer<'static, KeyPair>) -> (rcgen::Certificate, KeyPair) {
    let params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, issuer).unwrap();
    (cert, key)
}

struct Pki {
    ca: CertifiedIssuer<'static, KeyPair>,
    dir: std::path::PathBuf,
}

impl Pki {
    fn new() -> Self {
        let dir = fresh_data_dir();
        let ca = ca("admin test CA");
        std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
        let (cert, key) = leaf(&ca);
        std::fs::write(
            dir.join("server.pem"),
            format!("{}{}", key.serialize_pem(), cert.pem()),
        )
        .unwrap();
        Self { ca, dir }
    }

    fn config(&self, lines: &str) -> ServerConfig {
        let mut config = test_config();
        let extra = ServerConfig::parse(
            &format!(
                "dataDir=/unused\nadmin.enableServer=true\n{lines}\n\
                 ssl.quorum.keyStore.location={}\nssl.quorum.trustStore.location={}\n",
                self.dir.join("server.pem").display(),
                self.dir.join("ca.pem").display()
            ),
            "zoo.cfg",
        )
        .unwrap();
        config.admin = extra.admin;
        config.admin.address = "127.0.0.1".parse().unwrap();
        config.admin.port = 0;
        config.quorum_tls = extra.quorum_tls;
        assert!(config.quorum_tls.key_store.is_some() && config.quorum_tls.trust_store.is_some());
        config
    }

    /// A client that trusts the test CA, presenting a certificate of `issuer` if given.
    fn client(&self, issuer: Option<&CertifiedIssuer<'static, KeyPair>>) -> rustls::ClientConfig {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.ca.der().clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
        match issuer {
            None => builder.with_no_client_auth(),
            Some(issuer) => {
                let (cert, key) = leaf(issuer);
                let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
                builder
                    .with_client_auth_cert(vec![CertificateDer::from(cert.der().to_vec())], key)
                    .unwrap()
            }
        }
    }
}

const GET_RUOK: &[u8] =
    b"GET /commands/ruok HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";

/// The whole HTTP response (status line, headers, body), or why there is none.
async fn https_get(address: SocketAddr, client: rustls::ClientConfig) -> Result<String, String> {
    let tcp = TcpStream::connect(address)
        .await
        .map_err(|e| e.to_string())?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client));
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let mut tls = tokio::time::timeout(IO_TIMEOUT, connector.connect(name, tcp))
        .await
        .map_err(|_| "handshake timed out".to_string())?
        .map_err(|e| e.to_string())?;
    tls.write_all(GET_RUOK).await.map_err(|e| e.to_string())?;
    read_all(&mut tls).await
}

async fn http_get(address: SocketAddr) -> Result<String, String> {
    let mut tcp = TcpStream::connect(address)
        .await
        .map_err(|e| e.to_string())?;
    tcp.write_all(GET_RUOK).await.map_err(|e| e.to_string())?;
    read_all(&mut tcp).await
}

async fn read_all(stream: &mut (impl AsyncReadExt + Unpin)) -> Result<String, String> {
    let mut out = Vec::new();
    match tokio::time::timeout(IO_TIMEOUT, stream.read_to_end(&mut out)).await {
        Ok(Ok(_)) => Ok(String::from_utf8_lossy(&out).into_owned()),
        Ok(Err(e)) if out.is_empty() => Err(e.to_string()),
        Ok(Err(_)) => Ok(String::from_utf8_lossy(&out).into_owned()),
        Err(_) => Err("no answer in time".into()),
    }
}

fn is_ruok_json(response: &str) -> bool {
    response.starts_with("HTTP/1.1 200")
        && response.contains("application/json")
        && response.contains("\"command\": \"ruok\"")
}

#[tokio::test]
async fn force_https_serves_https_and_refuses_plain_http() {
    let pki = Pki::new();
    let server = start(pki.config("admin.forceHttps=true")).await;
    let admin = server.admin_address.expect("AdminServer on");
    let answer = https_get(admin, pki.client(None)).await.unwrap();
    assert!(is_ruok_json(&answer), "{answer}");
    // A plain HTTP request on the HTTPS-only port gets no HTTP answer.
    let plain = http_get(admin).await;
    assert!(
        !plain.as_deref().unwrap_or("").starts_with("HTTP/"),
        "{plain:?}"
    );
    server.stop();
}

#[tokio::test]
async fn port_unification_serves_both_on_one_port() {
    let pki = Pki::new();
    let server = start(pki.config("admin.portUnification=true")).await;
    let admin = server.admin_address.expect("AdminServer on");
    let secure = https_get(admin, pki.client(None)).await.unwrap();
    assert!(is_ruok_json(&secure), "{secure}");
    let plain = http_get(admin).await.unwrap();
    assert!(is_ruok_json(&plain), "{plain}");
    server.stop();
}

#[tokio::test]
async fn need_client_auth_refuses_clients_without_a_trusted_certificate() {
    let pki = Pki::new();
    let server = start(pki.config("admin.forceHttps=true\nadmin.needClientAuth=true")).await;
    let admin = server.admin_address.expect("AdminServer on");
    let trusted = https_get(admin, pki.client(Some(&pki.ca))).await.unwrap();
    assert!(is_ruok_json(&trusted), "{trusted}");
    let anonymous = https_get(admin, pki.client(None)).await;
    assert!(
        !anonymous.as_deref().unwrap_or("").starts_with("HTTP/"),
        "{anonymous:?}"
    );
    let stranger = ca("some other CA");
    let untrusted = https_get(admin, pki.client(Some(&stranger))).await;
    assert!(
        !untrusted.as_deref().unwrap_or("").starts_with("HTTP/"),
        "{untrusted:?}"
    );
    server.stop();
}

#[test]
fn a_missing_quorum_key_store_stops_the_start_with_the_key_named() {
    let error = ServerConfig::parse(
        "dataDir=/d\nadmin.enableServer=true\nadmin.forceHttps=true\n",
        "zoo.cfg",
    )
    .unwrap_err();
    assert!(
        error.to_string().contains("ssl.quorum.keyStore.location"),
        "{error}"
    );
}
