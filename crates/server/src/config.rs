//! Server configuration: the embedded default, or a `zoo.cfg` read as Apache ZooKeeper 3.9 reads
//! it, so an existing ZooKeeper configuration file starts meerkat unchanged.
//!
//! # What is read, and how it matches ZooKeeper
//!
//! * **Syntax** is `java.util.Properties` ([`properties`]): `key=value`, `key: value` or
//!   `key value`; `#`/`!` comment lines (no end-of-line comments); backslash continuation and
//!   escapes. Keys and values are trimmed as ZooKeeper trims them. Duplicate keys: the last
//!   value wins, as in a `Properties` table, with a warning.
//! * **Keys** ([`keys`]): the ones `QuorumPeerConfig.parseProperties` handles (tickTime,
//!   dataDir, clientPort, session timeouts, initLimit, server.N, autopurge.*, ...) and the ones
//!   ZooKeeper reads as `zookeeper.<key>` system properties (snapCount, forceSync, preAllocSize,
//!   globalOutstandingLimit, 4lw.commands.whitelist, jute.maxbuffer, ...). The latter are also
//!   accepted with their `zookeeper.` prefix. [`HELP`] lists them all with defaults.
//! * **Derived values** are computed after the whole file is read, as ZooKeeper does: session
//!   timeout bounds default to 2 and 20 ticks even when `tickTime` comes after them, and
//!   `dataLogDir` defaults to `dataDir`.
//! * **Errors** ([`ConfigError`]) name the file, line and key: a value that is not a number, a
//!   negative where none is allowed, a port outside 1-65535, min above max session timeout, an
//!   unparsable `server.N` line, a missing `dataDir`. meerkat is stricter than ZooKeeper where
//!   ZooKeeper silently falls back to a default on garbage (`snapCount=abc`, `forceSync=NO`).
//! * **Warnings** ([`ConfigWarning`]) do not stop the server: unknown keys (ZooKeeper would set an
//!   unused system property), ZooKeeper keys meerkat does not implement yet (TLS, SASL, admin
//!   server, metrics providers, ...; quiet when the value is what meerkat does anyway), values
//!   ZooKeeper also adjusts (`autopurge.snapRetainCount` below 3), duplicates. The caller
//!   displays them.
//! * **Refused** ZooKeeper features, because ignoring them would run a different ensemble than
//!   the file describes: `dynamicConfigFile`, hierarchical quorums (`group.x`, `weight.x`),
//!   multiple addresses per server (`|`).
//!
//! Deliberate differences beyond strictness: `clientPort` defaults to 2181 (ZooKeeper requires
//! it or a client port in the server's own `server.N` line); `clientPortAddress` and `server.N`
//! hosts are not resolved (IP literals or `localhost` only for the former); `jute.maxbuffer` and
//! `znode.container.*` work from zoo.cfg, where ZooKeeper only honours them as JVM flags;
//! the four-letter-word whitelist also splits on whitespace.

mod admin;
mod error;
mod help;
mod keys;
mod metrics;
mod properties;
mod reader;
mod sasl;
mod server_line;
mod tls;
pub(crate) mod values;
mod whitelist;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

pub use admin::AdminSettings;
pub use error::{ConfigError, ConfigWarning, WarningKind};
pub use help::HELP;
pub use keys::is_sensitive_key;
pub use metrics::{MetricsSettings, PROMETHEUS_PROVIDER};
pub use sasl::{sasl_settings_with_jvm_flags, SaslSettings, KNOWN_PROVIDERS};
pub use server_line::{HostPort, ServerLine, ServerRole};
pub use tls::{ClientAuth, QuorumTlsSettings, StoreLocation, TlsSettings};
pub use whitelist::FourLetterWhitelist;

/// ZooKeeper's code default (`ZooKeeperServer.DEFAULT_TICK_TIME`); the sample zoo.cfg says 2000.
pub const DEFAULT_TICK_TIME_MS: u32 = 3000;
pub const DEFAULT_CLIENT_PORT: u16 = 2181;
pub const DEFAULT_DATA_DIR: &str = "./meerkat-data";
pub const DEFAULT_MAX_CLIENT_CNXNS: u32 = 60;
pub const DEFAULT_GLOBAL_OUTSTANDING_LIMIT: u32 = 1000;
/// Just under 1 MiB, as in ZooKeeper.
pub const DEFAULT_JUTE_MAX_BUFFER: u32 = 0xfffff;
pub const DEFAULT_CONTAINER_CHECK_INTERVAL_MS: u64 = 60_000;
pub const DEFAULT_CONTAINER_MAX_PER_MINUTE: u32 = 10_000;
pub const DEFAULT_SNAP_COUNT: u64 = 100_000;
pub const DEFAULT_PRE_ALLOC_SIZE_KB: u64 = 65_536;
pub const DEFAULT_FSYNC_WARNING_THRESHOLD_MS: u64 = 1000;
pub const DEFAULT_AUTOPURGE_SNAP_RETAIN_COUNT: u32 = 3;
pub const DEFAULT_PURGE_TIME_MS: u64 = 60_000;
pub const DEFAULT_NUMBER_TO_RETAIN: u32 = 3;
pub const DEFAULT_BUSY_SNAPSHOT_REST_PERCENT: u32 = 300;
pub const DEFAULT_BUSY_SNAPSHOT_MIN_REST_MS: u64 = storage::DELTA_REST_MIN_MS;

/// Everything the server needs from its configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub tick_time_ms: u32,
    pub client_port: u16,
    /// False when a zoo.cfg sets `secureClientPort` and no `clientPort`: no plaintext port.
    pub client_port_open: bool,
    /// TLS on the client port (`secureClientPort`, `client.portUnification`, `ssl.*`).
    pub tls: TlsSettings,
    /// TLS between ensemble members (`sslQuorum`, `ssl.quorum.*`).
    pub quorum_tls: QuorumTlsSettings,
    /// The Prometheus endpoint (`metricsProvider.*`).
    pub metrics: MetricsSettings,
    /// The AdminServer (`admin.*`).
    pub admin: AdminSettings,
    /// SASL and authentication (`jaasLoginFile`, `authProvider.N`, `enforce.auth.*`, ...).
    pub sasl: SaslSettings,
    /// 127.0.0.1 for the embedded default; 0.0.0.0 for a zoo.cfg without `clientPortAddress`.
    pub client_port_address: IpAddr,
    pub data_dir: PathBuf,
    pub data_log_dir: PathBuf,
    /// Per client IP; 0 = unlimited.
    pub max_client_cnxns: u32,
    pub min_session_timeout_ms: u32,
    pub max_session_timeout_ms: u32,
    pub global_outstanding_limit: u32,
    pub jute_max_buffer: u32,
    pub four_letter_words: FourLetterWhitelist,
    /// TTL znodes allowed.
    pub extended_types_enabled: bool,
    /// `enforceQuota` (`zookeeper.enforceQuota`) when zoo.cfg sets it: writes past a quota's
    /// hard limit fail with QuotaExceeded. Unset, `-Dzookeeper.enforceQuota` in
    /// `SERVER_JVMFLAGS` decides (see [`enforce_quota`]), else it is off.
    pub enforce_quota: Option<bool>,
    /// `DigestAuthenticationProvider.superDigest`: `super:base64(sha1(super:password))`.
    pub super_digest: Option<String>,
    pub container_check_interval_ms: u64,
    pub container_max_per_minute: u32,
    pub snap_count: u64,
    pub force_sync: bool,
    pub pre_alloc_size_kb: u64,
    pub fsync_warning_threshold_ms: u64,
    /// At least 3.
    pub autopurge_snap_retain_count: u32,
    /// 0 = never purge.
    pub autopurge_purge_interval_hours: u32,
    /// In ticks; required once two or more participants are listed.
    pub init_limit: Option<u32>,
    /// `diskless=true`: no transaction log; durability from the replicas, busy snapshots and
    /// failure checkpoints (DESIGN.md §5, docs/durability.md).
    pub diskless: bool,
    /// Diskless: milliseconds between purges of old snapshots (the thesis's `PurgeTime`).
    pub purge_time_ms: u64,
    /// Diskless: snapshots kept by each purge, at least 1 (the thesis's `NumberToRetain`).
    pub number_to_retain: u32,
    /// Diskless: a busy snapshot that took t ms is followed by a rest of t × this / 100 ms
    /// (`busySnapshotRest`, meerkat's own key).
    pub busy_snapshot_rest_percent: u32,
    /// Diskless: the least rest after a busy snapshot's delta batch, in ms, unless
    /// `busySnapshotRest` is 0 (`busySnapshotMinRestMs`, meerkat's own key). It caps the
    /// fsyncs busy snapshots make at 1000 / this a second and widens the power-loss window
    /// by at most this much.
    pub busy_snapshot_min_rest_ms: u64,
    /// How long an ensemble member without a leader holds its clients' connections and
    /// requests before closing them (`failoverHoldMs`, meerkat's own key; `None`: one
    /// tickTime). See docs/ensemble.md.
    pub failover_hold_ms: Option<u64>,
    /// Threads that run the client connections, the peer links and the request core
    /// (`serverThreads`, meerkat's own key; `None`: one per CPU the process may use). Servers
    /// sharing a machine do better with their share of its cores: fewer threads to wake.
    pub server_threads: Option<u32>,
    /// `reconfigEnabled`: clients may reconfigure the ensemble.
    pub reconfig_enabled: bool,
    /// `standaloneEnabled`: a reconfiguration must leave two voters.
    pub standalone_enabled: bool,
    /// `localSessionsEnabled`: ensemble members create new sessions locally (docs/ensemble.md).
    pub local_sessions_enabled: bool,
    /// `localSessionsUpgradingEnabled`: a local session creating an ephemeral becomes global.
    pub local_sessions_upgrading_enabled: bool,
    /// `readonlymode.enabled` (zoo.cfg, or `-Dreadonlymode.enabled=true` in SERVER_JVMFLAGS):
    /// a member cut off from its quorum serves reads to read-only clients.
    pub read_only_mode_enabled: bool,
    pub sync_limit: Option<u32>,
    /// The `server.N` lines, sorted by id.
    pub servers: Vec<ServerLine>,
    /// Every key=value as read, in file order, for the `conf` four-letter word. Check
    /// [`is_sensitive_key`] before echoing a value.
    pub entries: Vec<(String, String)>,
    /// For the caller to display; none of them stopped the server.
    pub warnings: Vec<ConfigWarning>,
    /// The zoo.cfg this was read from, if any: the dynamic configuration files are written
    /// beside it.
    pub file: Option<std::path::PathBuf>,
}

impl ServerConfig {
    /// Standalone on 127.0.0.1:2181 with data in `./meerkat-data`; ZooKeeper's defaults otherwise.
    pub fn embedded_default() -> Self {
        let data_dir = PathBuf::from(DEFAULT_DATA_DIR);
        Self {
            tick_time_ms: DEFAULT_TICK_TIME_MS,
            client_port: DEFAULT_CLIENT_PORT,
            client_port_open: true,
            tls: TlsSettings::default(),
            metrics: MetricsSettings::default(),
            quorum_tls: QuorumTlsSettings::default(),
            admin: AdminSettings::default(),
            sasl: SaslSettings::default(),
            client_port_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            data_log_dir: data_dir.clone(),
            data_dir,
            max_client_cnxns: DEFAULT_MAX_CLIENT_CNXNS,
            min_session_timeout_ms: 2 * DEFAULT_TICK_TIME_MS,
            max_session_timeout_ms: 20 * DEFAULT_TICK_TIME_MS,
            global_outstanding_limit: DEFAULT_GLOBAL_OUTSTANDING_LIMIT,
            jute_max_buffer: DEFAULT_JUTE_MAX_BUFFER,
            four_letter_words: FourLetterWhitelist::default(),
            extended_types_enabled: false,
            enforce_quota: None,
            super_digest: None,
            container_check_interval_ms: DEFAULT_CONTAINER_CHECK_INTERVAL_MS,
            container_max_per_minute: DEFAULT_CONTAINER_MAX_PER_MINUTE,
            snap_count: DEFAULT_SNAP_COUNT,
            force_sync: true,
            pre_alloc_size_kb: DEFAULT_PRE_ALLOC_SIZE_KB,
            fsync_warning_threshold_ms: DEFAULT_FSYNC_WARNING_THRESHOLD_MS,
            autopurge_snap_retain_count: DEFAULT_AUTOPURGE_SNAP_RETAIN_COUNT,
            autopurge_purge_interval_hours: 0,
            init_limit: None,
            sync_limit: None,
            diskless: false,
            purge_time_ms: DEFAULT_PURGE_TIME_MS,
            number_to_retain: DEFAULT_NUMBER_TO_RETAIN,
            busy_snapshot_rest_percent: DEFAULT_BUSY_SNAPSHOT_REST_PERCENT,
            busy_snapshot_min_rest_ms: DEFAULT_BUSY_SNAPSHOT_MIN_REST_MS,
            failover_hold_ms: None,
            server_threads: None,
            reconfig_enabled: false,
            standalone_enabled: true,
            local_sessions_enabled: false,
            local_sessions_upgrading_enabled: false,
            read_only_mode_enabled: false,
            servers: Vec::new(),
            entries: Vec::new(),
            file: None,
            warnings: Vec::new(),
        }
    }

    /// Reads a zoo.cfg. Messages name the file as `path` displays.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Io`] when the file cannot be read; otherwise as [`ServerConfig::parse`].
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let origin = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| ConfigError::Io {
            origin: origin.clone(),
            source,
        })?;
        let mut config = Self::parse(&decode(bytes), &origin)?;
        config.file = Some(path.to_path_buf());
        Ok(config)
    }

    /// Parses zoo.cfg text; `origin` names it in errors and warnings.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming `origin`, the line and the key for broken syntax, an invalid or
    /// conflicting value, a refused feature, or a missing required key (`dataDir`; `initLimit`
    /// and `syncLimit` once two or more participants are listed).
    pub fn parse(text: &str, origin: &str) -> Result<Self, ConfigError> {
        // A byte-order mark (Windows editors) would otherwise stick to the first key.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let entries = properties::read_entries(text).map_err(|error| ConfigError::Syntax {
            origin: origin.to_string(),
            line: error.line,
            message: error.message,
        })?;
        reader::build(entries, origin)
    }

    /// Where the client listener binds.
    pub fn client_address(&self) -> SocketAddr {
        SocketAddr::new(self.client_port_address, self.client_port)
    }

    /// Where the TLS-only client listener binds, if there is one.
    pub fn secure_client_address(&self) -> Option<SocketAddr> {
        let port = self.tls.secure_client_port?;
        let ip = self
            .tls
            .secure_client_port_address
            .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        Some(SocketAddr::new(ip, port))
    }
}

/// Reads Java properties text (for example a zkCli `-client-configuration` file): the
/// key/value pairs in file order.
///
/// # Errors
///
/// The line and reason of a syntax error.
pub fn read_properties(text: &str) -> Result<Vec<(String, String)>, (usize, String)> {
    properties::read_entries(text)
        .map(|entries| entries.into_iter().map(|e| (e.key, e.value)).collect())
        .map_err(|e| (e.line, e.message))
}

/// UTF-8 when valid; otherwise ISO-8859-1, the encoding `Properties.load(InputStream)` assumes.
fn decode(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes)
        .unwrap_or_else(|error| error.into_bytes().into_iter().map(char::from).collect())
}

#[cfg(test)]
mod tests;

/// Whether quotas are enforced: zoo.cfg's `enforceQuota` if set (ZooKeeper turns it into the
/// system property, over any `-D` flag), else `-Dzookeeper.enforceQuota` in the JVM flags
/// (`SERVER_JVMFLAGS`), read as Java's `Boolean.parseBoolean` does; off by default.
pub fn enforce_quota(config: &ServerConfig, jvm_flags: Option<&str>) -> bool {
    config.enforce_quota.unwrap_or_else(|| {
        jvm_flags
            .and_then(|flags| ::sasl::jvm_flags::system_property(flags, "zookeeper.enforceQuota"))
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    })
}
