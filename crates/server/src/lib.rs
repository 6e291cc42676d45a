//! The meerkat server: the I/O shell around the [`replica`], which decides everything.
//!
//! # Layout
//! * [`config`]: zoo.cfg as Apache ZooKeeper reads it.
//! * [`listener`], [`connection`]: sockets, framing, flow control, batched writes.
//! * [`core`]: the single task that owns the replica, feeds it inputs with the time and
//!   executes its outputs.
//! * [`four_letter`]: operators' view; [`metrics`], [`admin`]: the Prometheus endpoint and the
//!   AdminServer (HTTP).
//! * [`tls`]: TLS on the client port (`secureClientPort`, port unification, the `x509` scheme).
//! * [`sasl`]: SASL DIGEST-MD5 on the client port (the JAAS login, each connection's exchange).
//! * [`peers`]: connections between ensemble members (FIFO frames, reconnects);
//!   [`replication`]: `myid` and the `server.N` lines.
//! * [`limits`]: every bound of the shell, in one place.

pub mod admin;
pub mod config;
pub mod connection;
pub mod core;
pub mod four_letter;
pub mod limits;
pub mod listener;
pub mod metrics;
pub mod peers;
pub mod replication;
pub mod sasl;
pub mod shared_socket;
pub mod tls;

use crate::config::{SaslSettings, ServerConfig};
use crate::connection::Shared;
use crate::core::{Core, CoreMsg};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Semaphore};

/// The JVM flag that turns read-only mode on in ZooKeeper (`-Dreadonlymode.enabled=true`).
const READ_ONLY_PROPERTY: &str = "readonlymode.enabled";

/// A server started with [`start`]: where it listens, and how to stop it.
pub struct RunningServer {
    /// The plaintext (or unified) client port; the TLS one when there is no other.
    pub client_address: SocketAddr,
    /// The TLS-only client port (`secureClientPort`), if any.
    pub secure_client_address: Option<SocketAddr>,
    /// The Prometheus endpoint (`metricsProvider.httpPort`), if on.
    pub metrics_address: Option<SocketAddr>,
    /// The AdminServer (`admin.serverPort`), if on.
    pub admin_address: Option<SocketAddr>,
    core_task: tokio::task::JoinHandle<Result<(), String>>,
    accept_tasks: Vec<tokio::task::JoinHandle<()>>,
    core_tx: mpsc::Sender<CoreMsg>,
}

impl RunningServer {
    /// Stops accepting and processing; open connections end when their tasks see the core gone.
    /// Returns at once; the data dir is released shortly after (see [`RunningServer::shutdown`]).
    pub fn stop(self) {
        self.accept_tasks.iter().for_each(|t| t.abort());
        self.core_task.abort();
    }

    /// Stops like [`RunningServer::stop`] and waits until the log writer has written and synced
    /// what it was given and the data dir is free for another server.
    pub async fn shutdown(self) {
        self.accept_tasks.iter().for_each(|t| t.abort());
        self.core_task.abort();
        let _ = self.core_task.await;
    }

    /// If this server leads an ensemble, hands leadership over to its most up-to-date
    /// follower (docs/ensemble.md, "Leadership hand-over") and returns the successor once it is
    /// taking over; otherwise, or when the hand-over cannot complete within `within`, why not.
    pub async fn hand_over_leadership(&self, within: std::time::Duration) -> Result<u64, String> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let msg = CoreMsg::HandOver {
            within_ms: within.as_millis() as u64,
            reply,
        };
        self.core_tx
            .send(msg)
            .await
            .map_err(|_| "the server core has stopped".to_string())?;
        answer
            .await
            .map_err(|_| "the server core has stopped".to_string())?
    }

    /// Waits (at most `within`) until every frame queued for a peer has left: after a
    /// hand-over, so the ABDICATE reaches every follower before the process exits.
    pub async fn wait_peers_drained(&self, within: std::time::Duration) {
        let (reply, answer) = tokio::sync::oneshot::channel();
        if self
            .core_tx
            .send(CoreMsg::PeerQueues { reply })
            .await
            .is_err()
        {
            return;
        }
        if let Ok(Some(queues)) = answer.await {
            queues.drained(within).await;
        }
    }

    /// Runs until the server stops. It stops by itself only on a fatal error (the log cannot
    /// be written), which is returned.
    pub async fn wait(&mut self) -> Result<(), String> {
        let result = (&mut self.core_task)
            .await
            .unwrap_or_else(|e| Err(format!("server core ended: {e}")));
        self.accept_tasks.iter().for_each(|t| t.abort());
        result
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot listen on {address}: {source}")]
    Listen {
        address: SocketAddr,
        source: std::io::Error,
    },
    #[error("{0}")]
    Storage(#[from] storage::StorageError),
    #[error("{0}")]
    Lock(#[from] storage::lock::LockError),
    #[error("{0}")]
    Membership(#[from] replication::MembershipError),
    #[error("cannot listen for ensemble peers on {address}: {source}")]
    PeerListen {
        address: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot start Zab: {0}")]
    Zab(#[from] zab::ZabError),
    #[error("cannot listen for {what} on {address}: {source}")]
    Http {
        what: &'static str,
        address: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot set up TLS between ensemble members (ssl.quorum.*): {0}")]
    QuorumTls(tls::TlsError),
    #[error("cannot set up TLS on the client port: {0}")]
    Tls(#[from] tls::TlsError),
    #[error("cannot set up SASL: {0}")]
    Sasl(#[from] sasl::SaslLoginError),
    #[error("cannot set up HTTPS for the AdminServer (admin.forceHttps / admin.portUnification, with the ssl.quorum.* stores): {0}")]
    AdminTls(tls::TlsError),
}

/// The AdminServer's HTTPS, loaded from the quorum stores when asked for.
fn admin_https(config: &ServerConfig) -> Result<metrics::http::Https, StartError> {
    use metrics::http::Https;
    if !config.admin.serves_https() {
        return Ok(Https::Off);
    }
    let tls =
        Arc::new(tls::ServerTls::new(&admin::tls_settings(config)).map_err(StartError::AdminTls)?);
    Ok(if config.admin.force_https {
        Https::Only(tls)
    } else {
        Https::Unified(tls)
    })
}

/// What persistence reports to the core from its writer thread.
#[derive(Debug, Clone, Default)]
pub(crate) struct LogProgress {
    pub durable_zxid: i64,
    pub failure: Option<String>,
}

/// Recovers the data dir, binds the client port and starts serving. Must be called inside a
/// tokio runtime.
pub async fn start(config: ServerConfig) -> Result<RunningServer, StartError> {
    // Two or more server.N lines make an ensemble; otherwise standalone, as in ZooKeeper.
    let membership = if config.servers.len() >= 2 {
        Some(replication::Membership::read(&config)?)
    } else {
        None
    };
    let admin_listener = if config.admin.enabled {
        let address = SocketAddr::new(config.admin.address, config.admin.port);
        let https = admin_https(&config)?;
        let (listener, address) =
            metrics::http::bind(address)
                .await
                .map_err(|source| StartError::Http {
                    what: "the AdminServer (admin.serverPort)",
                    address,
                    source,
                })?;
        Some((listener, address, https))
    } else {
        None
    };
    let jvm_flags = std::env::var(sasl::SERVER_JVMFLAGS).ok();
    let mut config = config;
    // ZooKeeper reads `readonlymode.enabled` only as a JVM flag (`Boolean.getBoolean`).
    if let Some(value) = jvm_flags
        .as_deref()
        .and_then(|flags| ::sasl::jvm_flags::system_property(flags, READ_ONLY_PROPERTY))
    {
        config.read_only_mode_enabled = value.eq_ignore_ascii_case("true");
    }
    if config.read_only_mode_enabled {
        // As ZooKeeper's `FourLetterCommands`: clients look for a read-write server with it.
        config.four_letter_words.allow("isro");
    }
    if let Some(flags) = jvm_flags.as_deref().filter(|f| f.contains("-Dzookeeper.")) {
        // The SASL keys may come as system properties in SERVER_JVMFLAGS too (zoo.cfg wins).
        let (settings, warnings) = config::sasl_settings_with_jvm_flags(&config.entries, flags)
            .map_err(sasl::SaslLoginError::Enforce)?;
        for warning in warnings.iter().filter(|w| w.starts_with("zookeeper.")) {
            tracing::warn!("{}: {warning}", sasl::SERVER_JVMFLAGS);
        }
        let jaas_login_file = settings
            .jaas_login_file
            .clone()
            .or(config.sasl.jaas_login_file.take());
        config.sasl = SaslSettings {
            jaas_login_file,
            ..settings
        };
        // ZooKeeper's super user is a system property too (zoo.cfg wins).
        if config.super_digest.is_none() {
            let property = "zookeeper.DigestAuthenticationProvider.superDigest";
            if let Some(value) = ::sasl::jvm_flags::system_property(flags, property) {
                match config::values::super_digest(value) {
                    Ok(digest) => config.super_digest = Some(digest),
                    Err(e) => tracing::warn!("{}: {property}: {e}", sasl::SERVER_JVMFLAGS),
                }
            }
        }
    }
    // An enforced scheme without a provider stops the server, as in ZooKeeper (checked here,
    // not when zoo.cfg is read, because a provider may come from SERVER_JVMFLAGS).
    config
        .sasl
        .check_providers()
        .map_err(sasl::SaslLoginError::Enforce)?;
    let sasl_login = sasl::SaslLogin::load(&config.sasl, jvm_flags.as_deref())?.map(Arc::new);
    if let Some(login) = &sasl_login {
        tracing::info!(jaas = %login.path.display(), section = %config.sasl.server_section, users = login.user_count(), enforced = ?config.sasl.enforce_auth_schemes, "SASL DIGEST-MD5 on the client port");
    }
    let config = Arc::new(config);
    let layout = storage::Layout::new(&config.data_dir, &config.data_log_dir);
    let locks = storage::lock::DataDirLock::acquire_all(&[&layout.snap_dir, &layout.wal_dir])?;
    let (progress_tx, progress_rx) = tokio::sync::watch::channel(LogProgress::default());
    let progress_tx = Arc::new(progress_tx);
    let mut options = persistence_options(&config, layout);
    if membership.is_some() {
        // The log may end with proposals that were never committed: Zab decides.
        options.replay = storage::Replay::Collect;
    }
    let recovery_started = std::time::Instant::now();
    let (persistence, recovered) = {
        let (durable_tx, failure_tx) = (progress_tx.clone(), progress_tx.clone());
        tokio::task::spawn_blocking(move || {
            storage::Persistence::open(
                Arc::new(storage::RealFs),
                options,
                Box::new(move |zxid| {
                    durable_tx.send_modify(|p| p.durable_zxid = zxid);
                }),
                Box::new(move |e| {
                    failure_tx.send_modify(|p| p.failure = Some(e.to_string()));
                }),
            )
        })
        .await
        .map_err(|e| storage::StorageError::Replay {
            path: config.data_dir.clone(),
            offset: 0,
            detail: format!("recovery thread failed: {e}"),
        })??
    };
    let mut persistence = persistence;
    // A report from before TRUNC or SNAP names entries the log no longer holds: lowered at the
    // cut, before anything is appended again.
    let cut = progress_tx.clone();
    persistence.on_log_cut(Box::new(move |zxid| {
        cut.send_modify(|p| p.durable_zxid = p.durable_zxid.min(zxid));
    }));
    let load_ms = recovery_started.elapsed().as_millis() as u64;
    log_recovery(&recovered, load_ms);
    let listeners = bind_client_ports(&config, membership.as_ref()).await?;
    let metrics_listener = if config.metrics.prometheus {
        let address = SocketAddr::new(config.metrics.http_host, config.metrics.http_port);
        Some(
            metrics::http::bind(address)
                .await
                .map_err(|source| StartError::Http {
                    what: "the Prometheus endpoint (metricsProvider.httpPort)",
                    address,
                    source,
                })?,
        )
    } else {
        None
    };
    let global_limit = config.global_outstanding_limit.max(1) as usize;
    let global_permits = Arc::new(Semaphore::new(global_limit));
    let (core_tx, core_rx) = mpsc::channel(limits::CORE_QUEUE_LEN_MAX);
    let shared = Arc::new(Shared {
        core_tx,
        global_permits: global_permits.clone(),
        jute_max_buffer: config.jute_max_buffer as usize,
        four_letter_words: config.four_letter_words.clone(),
        next_conn: std::sync::atomic::AtomicU64::new(1),
        connection_metrics: metrics::connections::ConnectionMetrics::default(),
        sasl: sasl_login,
    });
    let permits = global_permits.clone();
    let outstanding = Arc::new(move || global_limit.saturating_sub(permits.available_permits()));
    let boot = membership
        .as_ref()
        .map(|_| replica::boot::zab_boot(&persistence, &recovered, config.diskless, incarnation()))
        .transpose()?;
    // After a reconfiguration the members are the ones /zookeeper/config names, not zoo.cfg's.
    let tree_config = replica::ensemble::reconfig::config_of_tree(&recovered.tree);
    let clock = std::time::Instant::now();
    let now = replica::Now {
        mono_ms: 0,
        wall_ms: core::wall_ms(),
    };
    let replica = replica::Replica::new(
        replica_settings(&config, jvm_flags.as_deref()),
        persistence,
        recovered,
        load_ms,
        now,
    );
    let mut core = Core::new(replica, config.clone(), global_permits, outstanding, clock);
    let mut peer_rx = None;
    if let (Some(membership), Some(boot)) = (membership, boot) {
        let (peer_tx, rx) = mpsc::channel(limits::PEER_EVENTS_QUEUE_LEN_MAX);
        let mut transport_config = membership.transport();
        if let Some(tree_config) = &tree_config {
            for (sid, spec) in &tree_config.members {
                if *sid == membership.me || transport_config.peers.contains_key(sid) {
                    continue;
                }
                match (spec.host.as_str(), spec.quorum_port).to_socket_addrs() {
                    Ok(mut addrs) => {
                        if let Some(addr) = addrs.next() {
                            transport_config.peers.insert(*sid, addr);
                        }
                    }
                    Err(e) => {
                        tracing::warn!(peer = sid, error = %e, "cannot resolve a member of the configuration")
                    }
                }
            }
        }
        let quorum_tls = if config.quorum_tls.enabled {
            tracing::info!("sslQuorum=true: peer connections are mutual TLS");
            Some(peers::QuorumTls::new(&config.quorum_tls).map_err(StartError::QuorumTls)?)
        } else {
            None
        };
        let transport =
            peers::Transport::start_with_tls(transport_config.clone(), peer_tx, quorum_tls)
                .await
                .map_err(|source| StartError::PeerListen {
                    address: transport_config.listen,
                    source,
                })?;
        // Room for every server's clients' writes in flight, so the backlog rarely forms.
        let in_flight = config.global_outstanding_limit.max(1) as usize * membership.members();
        let mut zab_config = membership.zab_config(config.tick_time_ms, in_flight);
        if config.diskless {
            zab_config.durability = zab::Durability::Diskless;
        }
        if let Some(tree_config) = &tree_config {
            let m = tree_config.membership();
            zab_config.voters = m.voters;
            zab_config.observers = m.observers;
            zab_config.version = m.version;
        }
        tracing::info!(
            me = membership.me,
            voters = ?zab_config.voters,
            observers = ?zab_config.observers,
            peers = %transport.local_addr,
            accepted_epoch = boot.accepted_epoch,
            current_epoch = boot.current_epoch,
            logged = boot.log.len(),
            "joining the ensemble"
        );
        let zab = zab::Zab::new(zab_config, boot, core.now().mono_ms)?;
        let peers = transport_config.peers.keys().copied().collect();
        let ensemble = replica::ensemble::Ensemble::new(
            zab,
            membership.me,
            peers,
            in_flight * 4 + 1024,
            core.now().mono_ms,
        );
        core.join_ensemble(transport, ensemble);
        peer_rx = Some(rx);
    }
    let mode = if peer_rx.is_some() {
        "ensemble"
    } else {
        "standalone"
    };
    if config.diskless && peer_rx.is_none() {
        tracing::warn!(
            "diskless=true on a standalone server: no transaction log and no replicas, so \
             acknowledged writes after the last completed snapshot are LOST if this process \
             stops. Diskless mode is meant for ensembles (docs/durability.md)"
        );
    }
    let core_task = tokio::spawn(run_core(
        core,
        core_rx,
        progress_rx,
        peer_rx,
        config.tick_time_ms,
        locks,
    ));
    let client_address = listeners.client_address();
    let secure_client_address = listeners.secure.as_ref().map(|(_, a)| *a);
    let mut accept_tasks = listeners.spawn(&shared, config.max_client_cnxns);
    let metrics_address = match metrics_listener {
        Some((listener, address)) => {
            let task = metrics::serve_prometheus(listener, shared.clone());
            accept_tasks.push(tokio::spawn(task));
            tracing::info!(%address, "Prometheus metrics at http://{address}/metrics");
            Some(address)
        }
        None => None,
    };
    let admin_address = match admin_listener {
        Some((listener, address, https)) => {
            let scheme = match &https {
                metrics::http::Https::Off => "http",
                metrics::http::Https::Only(_) => "https",
                metrics::http::Https::Unified(_) => "http(s)",
            };
            let task = admin::serve(listener, https, shared.clone(), config.clone());
            accept_tasks.push(tokio::spawn(task));
            let url = &config.admin.command_url;
            tracing::info!(%address, "AdminServer at {scheme}://{address}{url}");
            Some(address)
        }
        None => None,
    };
    tracing::info!(
        address = %client_address,
        secure_address = ?secure_client_address,
        mode,
        durability = if config.diskless {
            "diskless (busy snapshots and failure checkpoints, no transaction log)"
        } else if config.force_sync {
            "durable"
        } else {
            "durable, forceSync=no (NOT crash-safe)"
        },
        data_dir = %config.data_dir.display(),
        data_log_dir = %config.data_log_dir.display(),
        "meerkat serving"
    );
    Ok(RunningServer {
        client_address,
        secure_client_address,
        metrics_address,
        admin_address,
        core_task,
        accept_tasks,
        core_tx: shared.core_tx.clone(),
    })
}

/// What the replica decides with, from zoo.cfg (and the system properties of `SERVER_JVMFLAGS`
/// that ZooKeeper would read).
fn replica_settings(config: &ServerConfig, jvm_flags: Option<&str>) -> replica::Settings {
    let enforce_quota = config::enforce_quota(config, jvm_flags);
    if enforce_quota {
        tracing::info!("zookeeper.enforceQuota = true, Quota Enforce enables");
    }
    replica::Settings {
        tick_time_ms: config.tick_time_ms,
        min_session_timeout_ms: config.min_session_timeout_ms,
        max_session_timeout_ms: config.max_session_timeout_ms,
        extended_types_enabled: config.extended_types_enabled,
        enforce_quota,
        super_digest: config.super_digest.clone(),
        container_check_interval_ms: config.container_check_interval_ms,
        failover_hold_ms: config
            .failover_hold_ms
            .unwrap_or(u64::from(config.tick_time_ms)),
        local_sessions_enabled: config.local_sessions_enabled,
        local_sessions_upgrading_enabled: config.local_sessions_upgrading_enabled,
        read_only_mode_enabled: config.read_only_mode_enabled,
        container_max_per_minute: config.container_max_per_minute,
        // `znode.container.maxNeverUsedIntervalMs` (default 0: never-used containers are kept).
        container_max_never_used_ms: config
            .entries
            .iter()
            .rev()
            .find(|(k, _)| k == "znode.container.maxNeverUsedIntervalMs")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0),
        enforce_auth_schemes: config.sasl.enforce_auth_schemes.clone(),
        allow_sasl_failed_clients: config.sasl.allow_failed_clients,
        sasl_provider: config.sasl.provider_schemes.iter().any(|s| s == "sasl"),
        reconfig_enabled: config.reconfig_enabled,
        standalone_enabled: config.standalone_enabled,
        initial_config: initial_config(config),
        ..replica::Settings::default()
    }
}

/// The `server.N` lines as `/zookeeper/config` shows them (empty for a standalone server).
pub fn initial_config(config: &ServerConfig) -> replica::ensemble::server_spec::ConfigText {
    use replica::ensemble::server_spec::{ConfigText, ServerSpec};
    let members = config
        .servers
        .iter()
        .map(|line| {
            let spec = ServerSpec {
                host: line.host.clone(),
                quorum_port: line.quorum_port,
                election_port: line.election_port,
                observer: line.role == config::ServerRole::Observer,
                client: line.client.as_ref().map(|c| (c.host.clone(), c.port)),
            };
            (line.id, spec)
        })
        .collect();
    ConfigText {
        members,
        version: zab::Zxid::ZERO,
    }
}

/// The client listeners: plaintext (or unified) and TLS-only, each with what it speaks.
struct ClientListeners {
    plain: Option<(TcpListener, SocketAddr, listener::Security)>,
    secure: Option<(TcpListener, SocketAddr)>,
    tls: Option<Arc<tls::ServerTls>>,
}

impl ClientListeners {
    fn client_address(&self) -> SocketAddr {
        match (&self.plain, &self.secure) {
            (Some((_, address, _)), _) | (None, Some((_, address))) => *address,
            // bind_client_ports opens at least one.
            (None, None) => SocketAddr::from(([0, 0, 0, 0], 0)),
        }
    }

    fn spawn(self, shared: &Arc<Shared>, max_per_address: u32) -> Vec<tokio::task::JoinHandle<()>> {
        let mut tasks = Vec::with_capacity(2);
        if let Some((listener, _, security)) = self.plain {
            let task = listener::accept_loop(listener, shared.clone(), max_per_address, security);
            tasks.push(tokio::spawn(task));
        }
        if let (Some((listener, _)), Some(tls)) = (self.secure, self.tls) {
            let security = listener::Security::Tls(tls);
            let task = listener::accept_loop(listener, shared.clone(), max_per_address, security);
            tasks.push(tokio::spawn(task));
        }
        tasks
    }
}

async fn bind(address: SocketAddr) -> Result<(TcpListener, SocketAddr), StartError> {
    let listener = TcpListener::bind(address)
        .await
        .map_err(|source| StartError::Listen { address, source })?;
    let local = listener
        .local_addr()
        .map_err(|source| StartError::Listen { address, source })?;
    Ok((listener, local))
}

/// Loads TLS (when asked for) and binds `clientPort` (or the `server.N` line's client port) and
/// `secureClientPort`. A zoo.cfg with only `secureClientPort` has no plaintext port.
async fn bind_client_ports(
    config: &ServerConfig,
    membership: Option<&replication::Membership>,
) -> Result<ClientListeners, StartError> {
    let tls = if config.tls.serves_tls() {
        Some(Arc::new(tls::ServerTls::new(&config.tls)?))
    } else {
        None
    };
    let member_port = membership.and_then(|m| m.client);
    let plain_address = member_port.or_else(|| {
        (config.client_port_open || config.secure_client_address().is_none())
            .then(|| config.client_address())
    });
    let plain = match plain_address {
        Some(address) => {
            let (listener, local) = bind(address).await?;
            let security = match (&tls, config.tls.port_unification) {
                (Some(tls), true) => listener::Security::Unified(tls.clone()),
                _ => listener::Security::Plaintext,
            };
            Some((listener, local, security))
        }
        None => None,
    };
    let secure = match config.secure_client_address() {
        Some(address) => Some(bind(address).await?),
        None => None,
    };
    Ok(ClientListeners { plain, secure, tls })
}

fn persistence_options(
    config: &ServerConfig,
    layout: storage::Layout,
) -> storage::PersistenceOptions {
    storage::PersistenceOptions {
        layout,
        force_sync: config.force_sync,
        segment_bytes: config.pre_alloc_size_kb.saturating_mul(1024).max(4096),
        snap_count: config.snap_count.max(2),
        // Diskless uses the thesis's keys: NumberToRetain snapshots, purged every PurgeTime.
        snap_retain_count: if config.diskless {
            config.number_to_retain.max(1) as usize
        } else {
            config.autopurge_snap_retain_count as usize
        },
        purge_interval: if config.diskless {
            std::time::Duration::from_millis(config.purge_time_ms.max(1))
        } else {
            std::time::Duration::from_secs(u64::from(config.autopurge_purge_interval_hours) * 3600)
        },
        fsync_warn: std::time::Duration::from_millis(config.fsync_warning_threshold_ms),
        replay: storage::Replay::ApplyAll,
        diskless: config.diskless,
        busy_snapshot_rest_percent: config.busy_snapshot_rest_percent,
        delta_rest_min_ms: config.busy_snapshot_min_rest_ms,
        execution: Default::default(),
    }
}

/// A number unique to this boot of this server.
fn incarnation() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 40)
}

fn log_recovery(recovered: &storage::Recovered, load_ms: u64) {
    for (path, why) in &recovered.skipped_snapshots {
        tracing::error!(path = %path.display(), why, "a damaged snapshot was skipped");
    }
    if let Some((path, offset, bytes)) = &recovered.truncated_tail {
        tracing::warn!(path = %path.display(), offset, bytes, "a torn record at the end of the log was cut off");
    }
    tracing::info!(
        snapshot = recovered
            .snapshot
            .as_ref()
            .map_or("none".to_string(), |(p, _)| p.display().to_string()),
        replayed = recovered.replayed,
        delta_txns = recovered.deltas,
        last_zxid = format!("{:#x}", recovered.last_zxid),
        nodes = recovered.tree.node_count(),
        sessions = recovered.tree.sessions().len(),
        ms = load_ms,
        "recovered the data tree"
    );
}

/// The core's loop: messages in arrival order, durability reports from the log writer, and a
/// tick for expiry. Ends only on a fatal storage error.
///
/// A turn handles the input that woke the loop and then every input already waiting (up to
/// [`limits::CORE_TURN_INPUTS_MAX`]), and ends by sending the turn's peer frames together: under
/// load one write per peer carries many proposals, acks and commits; with one request in
/// flight the frames leave at once.
///
/// Under load (the last turn held [`limits::CORE_GATHER_AFTER_INPUTS`] inputs or more) a turn
/// first yields once: the connection and peer tasks that are ready read their sockets before
/// the turn gathers, instead of the core running after each one that hands it a single input
/// (the runtime runs a task just woken next).
async fn run_core(
    mut core: Core,
    mut rx: mpsc::Receiver<CoreMsg>,
    mut progress: tokio::sync::watch::Receiver<LogProgress>,
    mut peer_rx: Option<mpsc::Receiver<peers::PeerEvent>>,
    tick_ms: u32,
    _locks: storage::lock::DataDirLock,
) -> Result<(), String> {
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(
        u64::from(tick_ms.clamp(1, 1000)) / 2 + 1,
    ));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Zab's timers (election re-sends, pings, limits) need a finer clock than the tick.
    let mut zab_tick = tokio::time::interval(limits::ZAB_TICK);
    zab_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let ensemble = peer_rx.is_some();
    let mut last_turn_inputs = 0;
    loop {
        tokio::select! {
            biased;
            changed = progress.changed() => {
                if changed.is_err() {
                    core.replica.fail("the log writer stopped".into());
                } else {
                    on_progress(&mut core, &mut progress);
                }
            }
            Some(event) = next_peer_event(&mut peer_rx) => core.on_peer_event(event),
            msg = rx.recv() => match msg {
                Some(msg) => core.handle(msg),
                None => return Ok(()),
            },
            _ = zab_tick.tick(), if ensemble => core.zab_tick(),
            _ = tick.tick() => core.tick(),
        }
        if last_turn_inputs >= limits::CORE_GATHER_AFTER_INPUTS {
            tokio::task::yield_now().await;
        }
        let mut turn_inputs = 1;
        while turn_inputs < limits::CORE_TURN_INPUTS_MAX {
            if core.replica.fatal.is_some() {
                break;
            }
            if progress.has_changed().unwrap_or(false) {
                on_progress(&mut core, &mut progress);
            } else if let Some(event) = peer_rx.as_mut().and_then(|rx| rx.try_recv().ok()) {
                core.on_peer_event(event);
            } else if let Ok(msg) = rx.try_recv() {
                core.handle(msg);
            } else {
                break;
            }
            turn_inputs += 1;
        }
        last_turn_inputs = turn_inputs;
        core.flush();
        if let Some(fatal) = core.replica.fatal.take() {
            return Err(fatal);
        }
    }
}

fn on_progress(core: &mut Core, progress: &mut tokio::sync::watch::Receiver<LogProgress>) {
    let report = progress.borrow_and_update().clone();
    core.on_progress(report);
}

/// The next event of the peer transport; pending forever for a standalone server.
async fn next_peer_event(
    rx: &mut Option<mpsc::Receiver<peers::PeerEvent>>,
) -> Option<peers::PeerEvent> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
