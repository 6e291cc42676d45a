//! The meerkat server: the I/O shell around the data tree.
//!
//! # Layout
//! * [`config`]: zoo.cfg as Apache ZooKeeper reads it.
//! * [`listener`], [`connection`]: sockets, framing, flow control, batched writes.
//! * [`core`]: the single task that owns the tree, sessions and watches and answers requests in
//!   order; [`reads`] answers the requests that need no transaction.
//! * [`session_tracker`], [`watch_manager`], [`java_random`]: sessions' expiry, watches,
//!   ZooKeeper-compatible session passwords.
//! * [`four_letter`], [`stats`]: operators' view.
//! * [`peers`]: connections between ensemble members (FIFO frames, reconnects).
//! * [`metrics`], [`admin`]: the Prometheus endpoint and the AdminServer (HTTP).
//! * [`tls`]: TLS on the client port (`secureClientPort`, port unification, the `x509` scheme).
//! * [`limits`]: every bound, in one place.

pub mod admin;
pub mod config;
pub mod connection;
pub mod core;
pub mod four_letter;
pub mod java_random;
pub mod limits;
pub mod listener;
pub mod metrics;
pub mod peers;
mod reads;
pub mod replication;
mod replies;
pub mod session_tracker;
pub mod stats;
pub mod tls;
pub mod watch_manager;

use crate::config::ServerConfig;
use crate::connection::Shared;
use crate::core::{Core, CoreMsg};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Semaphore};

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

    /// Runs until the server stops. It stops by itself only on a fatal error (the log cannot
    /// be written), which is returned.
    pub async fn wait(self) -> Result<(), String> {
        let result = self
            .core_task
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
        Some(
            metrics::http::bind(address)
                .await
                .map_err(|source| StartError::Http {
                    what: "the AdminServer (admin.serverPort)",
                    address,
                    source,
                })?,
        )
    } else {
        None
    };
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
    });
    let permits = global_permits.clone();
    let outstanding = Arc::new(move || global_limit.saturating_sub(permits.available_permits()));
    let boot = membership
        .as_ref()
        .map(|_| zab_boot(&persistence, &recovered, config.diskless))
        .transpose()?;
    let mut core = Core::new(
        config.clone(),
        global_permits,
        outstanding,
        persistence,
        recovered,
        load_ms,
    );
    let mut peer_rx = None;
    if let (Some(membership), Some(boot)) = (membership, boot) {
        let (peer_tx, rx) = mpsc::channel(limits::PEER_EVENTS_QUEUE_LEN_MAX);
        let transport_config = membership.transport();
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
        let clock = std::time::Instant::now();
        // Room for every server's clients' writes in flight, so the backlog rarely forms.
        let in_flight = config.global_outstanding_limit.max(1) as usize * membership.members();
        let mut zab_config = membership.zab_config(config.tick_time_ms, in_flight);
        if config.diskless {
            zab_config.durability = zab::Durability::Diskless;
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
        let zab = zab::Zab::new(zab_config, boot, 0)?;
        let replica = replication::Replica::new(
            zab,
            transport,
            membership,
            clock,
            in_flight * 4 + 1024,
            progress_tx.clone(),
        );
        core.join_ensemble(replica);
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
        Some((listener, address)) => {
            let task = admin::serve(listener, shared.clone(), config.clone());
            accept_tasks.push(tokio::spawn(task));
            let url = &config.admin.command_url;
            tracing::info!(%address, "AdminServer at http://{address}{url}");
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
    })
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
    }
}

/// What Zab needs from disk: the epochs, and the log after the snapshot, unapplied.
fn zab_boot(
    persistence: &storage::Persistence,
    recovered: &storage::Recovered,
    diskless: bool,
) -> Result<zab::Boot, StartError> {
    let epochs = persistence.epochs()?;
    let snapshot_zxid = recovered.tree.last_processed_zxid();
    let (log, amnesia) = if diskless {
        diskless_boot_log(persistence, snapshot_zxid, epochs.accepted)
    } else {
        // A durable member keeps what it acknowledged in its log.
        (recovered.log.clone(), false)
    };
    // An amnesiac diskless server votes as what its snapshot holds: the state was applied
    // under the snapshot's epoch label, which may be older than the epoch file (DESIGN.md §5).
    let current_epoch = if amnesia {
        recovered.epoch_label.min(epochs.current)
    } else {
        epochs.current
    };
    let log = log
        .iter()
        .map(|txn| {
            Arc::new(zab::Entry {
                zxid: zab::Zxid::from_i64(txn.header.zxid),
                txn: txn.clone(),
                digest: None,
            })
        })
        .collect();
    Ok(zab::Boot {
        accepted_epoch: epochs.accepted,
        current_epoch,
        snapshot_zxid: zab::Zxid::from_i64(snapshot_zxid),
        log,
        amnesia,
        incarnation: incarnation(),
    })
}

/// A diskless member's state at boot: whole (with the proposals its failure checkpoint saved)
/// if the checkpoint is on disk, or amnesiac (DESIGN.md §5: it may have acknowledged what its
/// newest snapshot lacks, so it must not vote until a leader has brought it up to date). A
/// server that never took part in an epoch never acknowledged anything.
fn diskless_boot_log(
    persistence: &storage::Persistence,
    snapshot_zxid: i64,
    accepted_epoch: u32,
) -> (Vec<proto::txn::Txn>, bool) {
    match persistence.boot_checkpoint() {
        Ok(Some(checkpoint)) if checkpoint.snapshot_zxid > snapshot_zxid => {
            // The snapshot the checkpoint extends is damaged or gone: its proposals do not
            // follow on from the state loaded, so they cannot be trusted to complete it.
            tracing::error!(
                checkpoint_base = format!("{:#x}", checkpoint.snapshot_zxid),
                loaded = format!("{snapshot_zxid:#x}"),
                "diskless: the failure checkpoint extends a snapshot that did not load; treating this server as having lost what it acknowledged"
            );
            (Vec::new(), true)
        }
        Ok(Some(checkpoint)) => {
            let saved: Vec<_> = checkpoint
                .proposals
                .into_iter()
                .filter(|t| t.header.zxid > snapshot_zxid)
                .collect();
            tracing::info!(
                proposals = saved.len(),
                "diskless: a whole failure checkpoint is on disk; this server votes at once"
            );
            (saved, false)
        }
        Ok(None) if accepted_epoch == 0 => (Vec::new(), false),
        Ok(None) => {
            tracing::warn!(
                "diskless: no failure checkpoint (the server stopped without one); it may have \
                 acknowledged writes its snapshots lack, so it will not vote until a leader has \
                 brought it up to date"
            );
            (Vec::new(), true)
        }
        Err(e) => {
            tracing::error!(error = %e, "diskless: the failure checkpoint is damaged; treating this server as having lost what it acknowledged");
            (Vec::new(), true)
        }
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
        last_zxid = format!("{:#x}", recovered.last_zxid),
        nodes = recovered.tree.node_count(),
        sessions = recovered.tree.sessions().len(),
        ms = load_ms,
        "recovered the data tree"
    );
}

/// The core's loop: messages in arrival order, durability reports from the log writer, and a
/// tick for expiry. Ends only on a fatal storage error.
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
    loop {
        tokio::select! {
            biased;
            changed = progress.changed() => {
                if changed.is_err() {
                    core.fail("the log writer stopped".into());
                } else {
                    let report = progress.borrow_and_update().clone();
                    if ensemble {
                        core.on_log_durable(report.durable_zxid);
                    } else {
                        core.on_durable(report.durable_zxid);
                    }
                    if let Some(failure) = report.failure {
                        core.fail(failure);
                    }
                }
            }
            Some(event) = next_peer_event(&mut peer_rx) => core.on_peer_event(event),
            msg = rx.recv() => match msg {
                Some(msg) => core.handle(msg),
                None => return Ok(()),
            },
            _ = zab_tick.tick(), if ensemble => core.replica_tick(),
            _ = tick.tick() => core.tick(),
        }
        if let Some(fatal) = core.fatal.take() {
            return Err(fatal);
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use storage::faulty_fs::FaultyFs;

    fn diskless_persistence(fs: &FaultyFs) -> storage::Persistence {
        let options = storage::PersistenceOptions {
            layout: storage::Layout::new(std::path::Path::new("/d"), std::path::Path::new("/d")),
            force_sync: true,
            segment_bytes: 4096,
            snap_count: 1000,
            snap_retain_count: 3,
            purge_interval: std::time::Duration::ZERO,
            fsync_warn: std::time::Duration::from_secs(1),
            replay: storage::Replay::Collect,
            diskless: true,
            busy_snapshot_rest_percent: 0,
        };
        let (persistence, _) = storage::Persistence::open(
            Arc::new(fs.clone()),
            options,
            Box::new(|_| {}),
            Box::new(|_| {}),
        )
        .expect("open");
        persistence
    }

    #[test]
    fn a_checkpoint_is_trusted_only_on_top_of_the_snapshot_it_extends() {
        let fs = FaultyFs::new();
        let persistence = diskless_persistence(&fs);
        let layout = storage::Layout::new(std::path::Path::new("/d"), std::path::Path::new("/d"));
        storage::checkpoint::write(&fs, &layout, 0x1_0000_0005, &[]).expect("write");
        let (_, amnesia) = diskless_boot_log(&persistence, 0x1_0000_0005, 1);
        assert!(!amnesia, "the snapshot it extends loaded: whole");
        let (_, amnesia) = diskless_boot_log(&persistence, 0x1_0000_0009, 1);
        assert!(
            !amnesia,
            "a newer snapshot of the same history loaded: whole"
        );
        let (_, amnesia) = diskless_boot_log(&persistence, 0x1_0000_0002, 1);
        assert!(
            amnesia,
            "an older snapshot loaded: the checkpoint leaves a gap"
        );
    }
}
