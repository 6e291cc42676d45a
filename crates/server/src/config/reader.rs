//! Turns the entries of a zoo.cfg into a [`ServerConfig`], in file order.
//!
//! Values that depend on other keys (session timeout bounds from tickTime, dataLogDir from
//! dataDir) are derived only after the whole file is read. ZooKeeper reads a `Properties` hash
//! table in no particular order and derives them afterwards too, so `tickTime` may come after
//! `minSessionTimeout` and still count.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};

use super::error::{ConfigError, ConfigWarning, WarningKind};
use super::keys::{self, Check, IgnoredKey, Setting};
use super::properties::RawEntry;
use super::sasl::SaslKeys;
use super::server_line::{ServerLine, ServerRole};
use super::tls::{Outcome, TlsKeys};
use super::values::{self, JAVA_INT_MAX, JAVA_LONG_MAX};
use super::{FourLetterWhitelist, ServerConfig};

/// ZooKeeper's floor for `autopurge.snapRetainCount` (`QuorumPeerConfig.MIN_SNAP_RETAIN_COUNT`).
const SNAP_RETAIN_COUNT_MIN: u32 = 3;
/// ZooKeeper's floor for `snapCount` (`ZooKeeperServer.getSnapCount`).
const SNAP_COUNT_MIN: u64 = 2;
/// Session timeout bounds default to these multiples of tickTime.
const MIN_SESSION_TIMEOUT_TICKS: u64 = 2;
const MAX_SESSION_TIMEOUT_TICKS: u64 = 20;

/// Reads `entries` (from `origin`) into a configuration.
pub(super) fn build(entries: Vec<RawEntry>, origin: &str) -> Result<ServerConfig, ConfigError> {
    let mut reader = Reader::new(origin);
    for entry in entries {
        reader.read(entry)?;
    }
    reader.finish()
}

struct Reader<'a> {
    origin: &'a str,
    config: ServerConfig,
    /// Setting name → line it was first set on, to report duplicates and detect presence.
    first_lines: HashMap<&'static str, usize>,
    /// Explicit session timeout bounds and their lines; `None` means derive from tickTime.
    min_session_timeout: Option<(u32, usize)>,
    max_session_timeout: Option<(u32, usize)>,
    tls: TlsKeys,
    sasl: SaslKeys,
}

impl<'a> Reader<'a> {
    fn new(origin: &'a str) -> Self {
        let mut config = ServerConfig::embedded_default();
        // With a file, ZooKeeper binds clientPort on every interface unless told otherwise.
        config.client_port_address = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
        Self {
            origin,
            config,
            first_lines: HashMap::new(),
            min_session_timeout: None,
            max_session_timeout: None,
            tls: TlsKeys::default(),
            sasl: SaslKeys::default(),
        }
    }

    fn read(&mut self, entry: RawEntry) -> Result<(), ConfigError> {
        let key = entry.key.as_str();
        if let Some(id) = key.strip_prefix("server.") {
            self.read_server(id, &entry)?;
        } else if key == "dynamicConfigFile" {
            self.read_dynamic_config_file(&entry)?;
        } else if let Some(known) = keys::setting_for(key) {
            self.note_duplicate(known.name, &entry);
            self.read_setting(known.setting, &entry)?;
        } else if self.read_tls(&entry)? || self.read_metrics(&entry)? || self.read_sasl(&entry)? {
            // A TLS, metrics or SASL key, read or warned about.
        } else if let Some(reason) = keys::refusal_for(key) {
            return Err(self.rejected(entry.line, key, format!("{key}: {reason}")));
        } else if let Some(ignored) = keys::ignored_for(key) {
            self.read_ignored(ignored, &entry)?;
        } else if keys::has_ignored_prefix(key) {
            self.warn(entry.line, key, WarningKind::Unsupported);
        } else {
            let suggestion = keys::case_insensitive_match(key);
            self.warn(entry.line, key, WarningKind::UnknownKey { suggestion });
        }
        self.config.entries.push((entry.key, entry.value));
        Ok(())
    }

    /// ZooKeeper 3.5+'s `dynamicConfigFile`: the `server.N` lines live in that file (written
    /// by ZooKeeper as `zoo.cfg.dynamic.<version>`). They are read as if they were here;
    /// after a reconfiguration meerkat takes its members from `/zookeeper/config` instead.
    fn read_dynamic_config_file(&mut self, entry: &RawEntry) -> Result<(), ConfigError> {
        let path = entry.value.trim();
        let origin = self.origin;
        let rejected = |message: String| ConfigError::Rejected {
            origin: origin.to_string(),
            line: entry.line,
            key: entry.key.clone(),
            message,
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| rejected(format!("dynamicConfigFile {path}: {e}")))?;
        let entries = super::properties::read_entries(&text)
            .map_err(|e| rejected(format!("dynamicConfigFile {path}: {e:?}")))?;
        for dynamic in entries {
            match dynamic.key.strip_prefix("server.") {
                Some(id) => {
                    let located = RawEntry {
                        line: entry.line,
                        ..dynamic.clone()
                    };
                    self.read_server(id, &located)?;
                }
                // ZooKeeper refuses a version inside the file (it is in the file's name).
                None if dynamic.key == "version" => {
                    return Err(rejected(format!(
                        "dynamicConfigFile {path}: dynamic file shouldn't have version inside"
                    )))
                }
                None => {
                    return Err(rejected(format!(
                        "dynamicConfigFile {path}: {} is not a server.N line",
                        dynamic.key
                    )))
                }
            }
        }
        Ok(())
    }

    fn read_setting(&mut self, setting: Setting, entry: &RawEntry) -> Result<(), ConfigError> {
        let value = entry.value.as_str();
        let result = match setting {
            Setting::MinSessionTimeout => values::session_timeout(value)
                .map(|bound| self.min_session_timeout = bound.map(|ms| (ms, entry.line))),
            Setting::MaxSessionTimeout => values::session_timeout(value)
                .map(|bound| self.max_session_timeout = bound.map(|ms| (ms, entry.line))),
            _ => assign(&mut self.config, setting, value),
        };
        result.map_err(|reason| {
            ConfigError::invalid_value(self.origin, entry.line, &entry.key, value, reason)
        })?;
        self.adjust(setting, entry);
        Ok(())
    }

    /// Corrections ZooKeeper makes with a warning rather than an error, and path hints.
    fn adjust(&mut self, setting: Setting, entry: &RawEntry) {
        let config = &mut self.config;
        let message = match setting {
            Setting::SnapRetainCount
                if config.autopurge_snap_retain_count < SNAP_RETAIN_COUNT_MIN =>
            {
                config.autopurge_snap_retain_count = SNAP_RETAIN_COUNT_MIN;
                format!(
                    "{} is below the minimum; using {SNAP_RETAIN_COUNT_MIN}",
                    entry.value
                )
            }
            Setting::SnapCount if config.snap_count < SNAP_COUNT_MIN => {
                config.snap_count = SNAP_COUNT_MIN;
                format!(
                    "{} is below the minimum; using {SNAP_COUNT_MIN}",
                    entry.value
                )
            }
            Setting::DataDir | Setting::DataLogDir if is_unmarked_relative(&entry.value) => {
                relative_path_hint(&entry.value)
            }
            _ => return,
        };
        self.warn(entry.line, &entry.key, WarningKind::Notice { message });
    }

    /// Reads a TLS key; false when `entry` is not one.
    fn read_tls(&mut self, entry: &RawEntry) -> Result<bool, ConfigError> {
        let outcome = self.tls.read(&entry.key, &entry.value).map_err(|reason| {
            ConfigError::invalid_value(self.origin, entry.line, &entry.key, &entry.value, reason)
        })?;
        match outcome {
            Outcome::NotMine => return Ok(false),
            Outcome::Read | Outcome::Ignored { quiet: true } => {}
            Outcome::Ignored { quiet: false } => {
                self.warn(entry.line, &entry.key, WarningKind::Unsupported);
            }
        }
        Ok(true)
    }

    /// Reads a SASL or authentication key; false when `entry` is not one.
    fn read_sasl(&mut self, entry: &RawEntry) -> Result<bool, ConfigError> {
        let outcome = self
            .sasl
            .read(&entry.key, &entry.value, entry.line)
            .map_err(|reason| {
                ConfigError::invalid_value(
                    self.origin,
                    entry.line,
                    &entry.key,
                    &entry.value,
                    reason,
                )
            })?;
        match outcome {
            super::sasl::Outcome::NotMine => Ok(false),
            super::sasl::Outcome::Read => Ok(true),
            super::sasl::Outcome::UnknownProvider(message) => {
                self.warn(entry.line, &entry.key, WarningKind::Notice { message });
                Ok(true)
            }
        }
    }

    /// Reads a `metricsProvider.*` or `admin.*` key; false when `entry` is not one.
    fn read_metrics(&mut self, entry: &RawEntry) -> Result<bool, ConfigError> {
        let metrics = super::metrics::read(&mut self.config.metrics, &entry.key, &entry.value);
        let read = match metrics {
            Ok(None) => super::admin::read(&mut self.config.admin, &entry.key, &entry.value),
            other => other,
        }
        .map_err(|reason| {
            ConfigError::invalid_value(self.origin, entry.line, &entry.key, &entry.value, reason)
        })?;
        match read {
            None => Ok(false),
            Some(true) => Ok(true),
            Some(false) => {
                self.warn(entry.line, &entry.key, WarningKind::Unsupported);
                Ok(true)
            }
        }
    }

    fn read_ignored(&mut self, ignored: &IgnoredKey, entry: &RawEntry) -> Result<(), ConfigError> {
        let value = entry.value.as_str();
        let checked = match ignored.check {
            Check::Any => Ok(()),
            Check::Bool => values::java_bool(value).map(drop),
            Check::Int => values::java_int(value).map(drop),
            Check::Long => values::java_long(value).map(drop),
            Check::ElectionAlg => match values::java_int(value) {
                Ok(3) => Ok(()),
                _ => Err("only 3 (fast leader election) exists since ZooKeeper 3.6".to_string()),
            },
            Check::PeerType => match value.to_ascii_lowercase().as_str() {
                "participant" | "observer" => Ok(()),
                _ => Err("expected participant or observer".to_string()),
            },
        };
        checked.map_err(|reason| {
            ConfigError::invalid_value(self.origin, entry.line, &entry.key, value, reason)
        })?;
        let quiet = ignored
            .matches_meerkat
            .is_some_and(|meerkat| same_value(value, meerkat));
        if !quiet {
            self.warn(entry.line, &entry.key, WarningKind::Unsupported);
        }
        Ok(())
    }

    fn read_server(&mut self, id_text: &str, entry: &RawEntry) -> Result<(), ConfigError> {
        let Ok(id) = id_text.parse::<u64>() else {
            let message = format!(
                "{}: the server id must be a non-negative integer",
                entry.key
            );
            return Err(self.rejected(entry.line, &entry.key, message));
        };
        let server = ServerLine::parse(id, &entry.value, entry.line).map_err(|reason| {
            ConfigError::invalid_value(self.origin, entry.line, &entry.key, &entry.value, reason)
        })?;
        let servers = &mut self.config.servers;
        match servers.iter().position(|known| known.id == id) {
            None => servers.push(server),
            Some(index) => {
                let previous_line = servers[index].line;
                servers[index] = server;
                self.warn(
                    entry.line,
                    &entry.key,
                    WarningKind::Duplicate { previous_line },
                );
            }
        }
        Ok(())
    }

    fn finish(mut self) -> Result<ServerConfig, ConfigError> {
        if !self.first_lines.contains_key("dataDir") {
            return Err(ConfigError::Missing {
                origin: self.origin.to_string(),
                key: "dataDir",
                why: "a configuration file must say where to keep snapshots",
            });
        }
        if !self.first_lines.contains_key("dataLogDir") {
            self.config.data_log_dir = self.config.data_dir.clone();
        }
        self.finish_session_timeouts()?;
        self.finish_servers()?;
        self.finish_tls()?;
        let sasl = std::mem::take(&mut self.sasl);
        self.config.sasl = sasl
            .finish(false)
            .map_err(|(line, key, message)| self.rejected(line, key, message))?;
        Ok(self.config)
    }

    /// A TLS listener needs the server's certificate; `secureClientPort` without `clientPort`
    /// leaves no plaintext port, as in ZooKeeper.
    fn finish_tls(&mut self) -> Result<(), ConfigError> {
        let mut keys = std::mem::take(&mut self.tls);
        let quorum = keys.finish_quorum();
        let tls = keys.finish();
        if quorum.enabled && (quorum.key_store.is_none() || quorum.trust_store.is_none()) {
            return Err(ConfigError::Missing {
                origin: self.origin.to_string(),
                key: "ssl.quorum.keyStore.location / ssl.quorum.trustStore.location",
                why: "sslQuorum=true makes every peer connection mutual TLS, which needs this \
                      server's certificate and the certificates that sign its peers'",
            });
        }
        let admin = &self.config.admin;
        if admin.enabled && admin.serves_https() && quorum.key_store.is_none() {
            return Err(ConfigError::Missing {
                origin: self.origin.to_string(),
                key: "ssl.quorum.keyStore.location",
                why: "admin.forceHttps and admin.portUnification serve the AdminServer over \
                      HTTPS with the quorum's certificate, as ZooKeeper does",
            });
        }
        if admin.enabled && admin.need_client_auth && quorum.trust_store.is_none() {
            return Err(ConfigError::Missing {
                origin: self.origin.to_string(),
                key: "ssl.quorum.trustStore.location",
                why: "admin.needClientAuth checks HTTPS clients' certificates against the \
                      quorum trust store",
            });
        }
        self.config.quorum_tls = quorum;
        if tls.serves_tls() && tls.key_store.is_none() {
            return Err(ConfigError::Missing {
                origin: self.origin.to_string(),
                key: "ssl.keyStore.location",
                why: "secureClientPort and client.portUnification serve TLS, which needs the \
                      server's certificate and private key",
            });
        }
        if tls.secure_client_port.is_some() && !self.first_lines.contains_key("clientPort") {
            self.config.client_port_open = false;
        }
        self.config.tls = tls;
        Ok(())
    }

    fn finish_session_timeouts(&mut self) -> Result<(), ConfigError> {
        let tick = u64::from(self.config.tick_time_ms);
        let derived =
            |ticks: u64| u32::try_from((tick * ticks).min(JAVA_INT_MAX)).unwrap_or(u32::MAX);
        let min = self
            .min_session_timeout
            .map_or_else(|| derived(MIN_SESSION_TIMEOUT_TICKS), |(ms, _)| ms);
        let max = self
            .max_session_timeout
            .map_or_else(|| derived(MAX_SESSION_TIMEOUT_TICKS), |(ms, _)| ms);
        if min > max {
            // Point at whichever explicit bound comes last: reading down, it made the conflict.
            let explicit = [
                self.min_session_timeout
                    .map(|(_, line)| (line, "minSessionTimeout")),
                self.max_session_timeout
                    .map(|(_, line)| (line, "maxSessionTimeout")),
            ];
            let (line, key) = explicit
                .into_iter()
                .flatten()
                .max()
                .unwrap_or((0, "minSessionTimeout"));
            let message = format!(
                "minSessionTimeout ({min} ms) must not be larger than maxSessionTimeout ({max} ms)"
            );
            return Err(self.rejected(line, key, message));
        }
        self.config.min_session_timeout_ms = min;
        self.config.max_session_timeout_ms = max;
        Ok(())
    }

    /// Checks the ensemble as a whole, as ZooKeeper's `parseDynamicConfig`/`checkValidity` do.
    fn finish_servers(&mut self) -> Result<(), ConfigError> {
        self.config.servers.sort_by_key(|server| server.id);
        let servers = &self.config.servers;
        let participants = servers.iter().filter(|s| s.role == ServerRole::Participant);
        let participant_count = participants.clone().count();
        let first_observer = servers.iter().find(|s| s.role == ServerRole::Observer);
        if let (Some(observer), 0 | 1) = (first_observer, participant_count) {
            let key = format!("server.{}", observer.id);
            let message = format!("{key}: observers need a quorum of at least 2 participants");
            return Err(self.rejected(observer.line, &key, message));
        }
        let Some(first) = participants.min_by_key(|s| s.line) else {
            return Ok(());
        };
        let (line, key) = (first.line, format!("server.{}", first.id));
        let notice = match participant_count {
            1 => Some("only one server is listed; meerkat runs standalone, as ZooKeeper does"),
            2 => Some("2 participants tolerate no failure; use at least 3"),
            count if count % 2 == 0 => {
                Some("an even number of participants tolerates no more failures than one fewer")
            }
            _ => None,
        };
        if let Some(message) = notice {
            let message = message.to_string();
            self.warn(line, &key, WarningKind::Notice { message });
        }
        if participant_count >= 2 {
            self.require_for_quorum("initLimit")?;
            self.require_for_quorum("syncLimit")?;
        }
        Ok(())
    }

    fn require_for_quorum(&self, key: &'static str) -> Result<(), ConfigError> {
        if self.first_lines.contains_key(key) {
            return Ok(());
        }
        Err(ConfigError::Missing {
            origin: self.origin.to_string(),
            key,
            why: "it is required when server.N lines list 2 or more participants",
        })
    }

    /// Records where `name` was first set; warns when it is set again (the last value wins).
    fn note_duplicate(&mut self, name: &'static str, entry: &RawEntry) {
        if let Some(&previous_line) = self.first_lines.get(name) {
            self.warn(
                entry.line,
                &entry.key,
                WarningKind::Duplicate { previous_line },
            );
        } else {
            self.first_lines.insert(name, entry.line);
        }
    }

    fn warn(&mut self, line: usize, key: &str, kind: WarningKind) {
        self.config.warnings.push(ConfigWarning {
            origin: self.origin.to_string(),
            line,
            key: key.to_string(),
            kind,
        });
    }

    fn rejected(&self, line: usize, key: &str, message: String) -> ConfigError {
        ConfigError::Rejected {
            origin: self.origin.to_string(),
            line,
            key: key.to_string(),
            message,
        }
    }
}

/// Stores a setting that depends on nothing else. Session timeouts are handled by the caller.
fn assign(config: &mut ServerConfig, setting: Setting, value: &str) -> Result<(), String> {
    use Setting as S;
    match setting {
        S::TickTime => config.tick_time_ms = values::positive_int(value)?,
        S::ClientPort => config.client_port = values::port(value)?,
        S::ClientPortAddress => config.client_port_address = values::ip_address(value)?,
        S::DataDir => config.data_dir = values::directory(value)?,
        S::DataLogDir => config.data_log_dir = values::directory(value)?,
        S::MaxClientCnxns => config.max_client_cnxns = values::non_negative_int(value)?,
        S::MinSessionTimeout | S::MaxSessionTimeout => {}
        S::InitLimit => config.init_limit = Some(values::positive_int(value)?),
        S::SyncLimit => config.sync_limit = Some(values::positive_int(value)?),
        S::SnapRetainCount => config.autopurge_snap_retain_count = values::non_negative_int(value)?,
        S::PurgeInterval => {
            config.autopurge_purge_interval_hours = values::non_negative_int(value)?
        }
        S::GlobalOutstandingLimit => config.global_outstanding_limit = values::positive_int(value)?,
        S::JuteMaxBuffer => config.jute_max_buffer = values::positive_int(value)?,
        S::Whitelist => config.four_letter_words = FourLetterWhitelist::parse(value),
        S::ExtendedTypes => config.extended_types_enabled = values::java_bool(value)?,
        S::EnforceQuota => config.enforce_quota = Some(values::java_bool(value)?),
        S::SuperDigest => config.super_digest = Some(values::super_digest(value)?),
        S::ContainerCheckInterval => {
            config.container_check_interval_ms = u64::from(values::positive_int(value)?);
        }
        S::ContainerMaxPerMinute => config.container_max_per_minute = values::positive_int(value)?,
        S::SnapCount => config.snap_count = u64::from(values::non_negative_int(value)?),
        S::ForceSync => config.force_sync = values::yes_no(value)?,
        // Kilobytes; ZooKeeper multiplies by 1024 in a long, which must not overflow.
        S::PreAllocSize => {
            config.pre_alloc_size_kb = values::non_negative_long(value, JAVA_LONG_MAX / 1024)?;
        }
        S::FsyncWarningThreshold => {
            config.fsync_warning_threshold_ms = values::non_negative_long(value, JAVA_LONG_MAX)?;
        }
        S::Diskless => config.diskless = values::java_bool(value)?,
        S::PurgeTime => config.purge_time_ms = u64::from(values::positive_int(value)?),
        S::NumberToRetain => config.number_to_retain = values::positive_int(value)?,
        S::BusySnapshotRest => config.busy_snapshot_rest_percent = values::non_negative_int(value)?,
        S::BusySnapshotMinRest => config.busy_snapshot_min_rest_ms = values::rest_ms(value)?,
        S::FailoverHold => {
            config.failover_hold_ms = Some(u64::from(values::non_negative_int(value)?))
        }
        S::ServerThreads => config.server_threads = Some(values::thread_count(value)?),
        S::ReconfigEnabled => config.reconfig_enabled = values::java_bool(value)?,
        S::StandaloneEnabled => config.standalone_enabled = values::java_bool(value)?,
        S::LocalSessions => config.local_sessions_enabled = values::java_bool(value)?,
        S::LocalSessionsUpgrading => {
            config.local_sessions_upgrading_enabled = values::java_bool(value)?
        }
        // Java's `Boolean.getBoolean`: "true" in any case is true, anything else false.
        S::ReadOnlyMode => config.read_only_mode_enabled = value.eq_ignore_ascii_case("true"),
    }
    Ok(())
}

/// Whether an ignored key's value equals what meerkat does anyway (`TRUE` = `true`, `+3` = `3`).
fn same_value(value: &str, meerkat: &str) -> bool {
    if value.eq_ignore_ascii_case(meerkat) {
        return true;
    }
    match (values::java_long(value), values::java_long(meerkat)) {
        (Ok(left), Ok(right)) => left == right,
        _ => false,
    }
}

fn relative_path_hint(path: &str) -> String {
    format!(
        "{path:?} is relative to the working directory; write ./{path} to show that is intended"
    )
}

/// ZooKeeper warns about relative data directories unless they start with `./`.
fn is_unmarked_relative(path: &str) -> bool {
    !std::path::Path::new(path).is_absolute() && !path.starts_with("./")
}
