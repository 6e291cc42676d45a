//! Which keys exist: the ones meerkat reads ([`SETTINGS`]), the ZooKeeper 3.9 keys it knows but
//! does not implement ([`IGNORED`], [`IGNORED_PREFIXES`]), and the ones it refuses because
//! ignoring them would silently change the ensemble ([`REFUSED`], [`REFUSED_PREFIXES`]).
//!
//! ZooKeeper's `QuorumPeerConfig.parseProperties` handles a fixed set of keys and turns every
//! other one into the system property `zookeeper.<key>`; that is how `snapCount`, `forceSync` or
//! `4lw.commands.whitelist` work from zoo.cfg. Such keys (`system_property: true`) are also
//! accepted here in their `zookeeper.`-prefixed spelling.

/// A setting meerkat reads into [`super::ServerConfig`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Setting {
    TickTime,
    ClientPort,
    ClientPortAddress,
    DataDir,
    DataLogDir,
    MaxClientCnxns,
    MinSessionTimeout,
    MaxSessionTimeout,
    InitLimit,
    SyncLimit,
    SnapRetainCount,
    PurgeInterval,
    GlobalOutstandingLimit,
    JuteMaxBuffer,
    Whitelist,
    ExtendedTypes,
    EnforceQuota,
    SuperDigest,
    ContainerCheckInterval,
    ContainerMaxPerMinute,
    SnapCount,
    ForceSync,
    PreAllocSize,
    FsyncWarningThreshold,
    Diskless,
    PurgeTime,
    NumberToRetain,
    BusySnapshotRest,
    BusySnapshotMinRest,
    FailoverHold,
    ServerThreads,
    ReconfigEnabled,
    StandaloneEnabled,
    LocalSessions,
    LocalSessionsUpgrading,
    ReadOnlyMode,
}

pub(super) struct SettingKey {
    /// The spelling used in zoo.cfg and in messages about duplicates.
    pub(super) name: &'static str,
    pub(super) setting: Setting,
    /// ZooKeeper reads it as the system property `zookeeper.<name>`, so that spelling works too.
    pub(super) system_property: bool,
}

const fn key(name: &'static str, setting: Setting, system_property: bool) -> SettingKey {
    SettingKey {
        name,
        setting,
        system_property,
    }
}

/// Every key meerkat reads.
pub(super) const SETTINGS: &[SettingKey] = &[
    key("tickTime", Setting::TickTime, false),
    key("clientPort", Setting::ClientPort, false),
    key("clientPortAddress", Setting::ClientPortAddress, false),
    key("dataDir", Setting::DataDir, false),
    key("dataLogDir", Setting::DataLogDir, false),
    key("maxClientCnxns", Setting::MaxClientCnxns, false),
    key("minSessionTimeout", Setting::MinSessionTimeout, false),
    key("maxSessionTimeout", Setting::MaxSessionTimeout, false),
    key("initLimit", Setting::InitLimit, false),
    key("syncLimit", Setting::SyncLimit, false),
    key("autopurge.snapRetainCount", Setting::SnapRetainCount, false),
    key("autopurge.purgeInterval", Setting::PurgeInterval, false),
    key(
        "globalOutstandingLimit",
        Setting::GlobalOutstandingLimit,
        true,
    ),
    key("jute.maxbuffer", Setting::JuteMaxBuffer, true),
    key("4lw.commands.whitelist", Setting::Whitelist, true),
    key("extendedTypesEnabled", Setting::ExtendedTypes, true),
    key("enforceQuota", Setting::EnforceQuota, true),
    key(
        "DigestAuthenticationProvider.superDigest",
        Setting::SuperDigest,
        true,
    ),
    key(
        "znode.container.checkIntervalMs",
        Setting::ContainerCheckInterval,
        true,
    ),
    key(
        "znode.container.maxPerMinute",
        Setting::ContainerMaxPerMinute,
        true,
    ),
    key("snapCount", Setting::SnapCount, true),
    key("forceSync", Setting::ForceSync, true),
    key("preAllocSize", Setting::PreAllocSize, true),
    key(
        "fsync.warningthresholdms",
        Setting::FsyncWarningThreshold,
        true,
    ),
    // The diskless mode of the thesis (DESIGN.md §5), with the thesis's own key names.
    key("diskless", Setting::Diskless, false),
    key("PurgeTime", Setting::PurgeTime, false),
    key("NumberToRetain", Setting::NumberToRetain, false),
    // meerkat's own: how long busy snapshots rest between runs (docs/durability.md).
    key("busySnapshotRest", Setting::BusySnapshotRest, false),
    key("busySnapshotMinRestMs", Setting::BusySnapshotMinRest, false),
    // meerkat's own: how long a member without a leader holds its clients (docs/ensemble.md).
    key("failoverHoldMs", Setting::FailoverHold, false),
    key("serverThreads", Setting::ServerThreads, false),
    key("reconfigEnabled", Setting::ReconfigEnabled, false),
    key("standaloneEnabled", Setting::StandaloneEnabled, false),
    key("localSessionsEnabled", Setting::LocalSessions, false),
    key(
        "localSessionsUpgradingEnabled",
        Setting::LocalSessionsUpgrading,
        false,
    ),
    // ZooKeeper reads it only as the JVM flag `-Dreadonlymode.enabled=true` (also read from
    // SERVER_JVMFLAGS); meerkat takes it from zoo.cfg too.
    key("readonlymode.enabled", Setting::ReadOnlyMode, false),
];

/// How an ignored key's value is checked. ZooKeeper itself fails on a bad boolean or integer for
/// the keys `QuorumPeerConfig` parses, so meerkat does too; system-property keys are unchecked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Check {
    Any,
    Bool,
    Int,
    Long,
    /// `electionAlg`: only 3 (fast leader election) exists since ZooKeeper 3.6.
    ElectionAlg,
    /// `peerType`: participant or observer, any case.
    PeerType,
}

pub(super) struct IgnoredKey {
    pub(super) name: &'static str,
    pub(super) check: Check,
    /// The value meerkat behaves as if it had; with it the key is accepted without a warning.
    pub(super) matches_meerkat: Option<&'static str>,
}

const fn ignored(name: &'static str, check: Check, quiet: Option<&'static str>) -> IgnoredKey {
    IgnoredKey {
        name,
        check,
        matches_meerkat: quiet,
    }
}

/// ZooKeeper 3.9 keys meerkat accepts without implementing them: `QuorumPeerConfig`'s own keys
/// first, then the documented system-property keys (also accepted with `zookeeper.` prefix).
pub(super) const IGNORED: &[IgnoredKey] = &[
    ignored("observerMasterPort", Check::Int, None),
    ignored("clientPortListenBacklog", Check::Int, None),
    ignored("connectToLearnerMasterLimit", Check::Int, None),
    ignored("electionAlg", Check::ElectionAlg, Some("3")),
    ignored("quorumListenOnAllIPs", Check::Bool, Some("false")),
    ignored("peerType", Check::PeerType, Some("participant")),
    ignored("syncEnabled", Check::Bool, Some("true")),
    ignored("portUnification", Check::Bool, Some("false")),
    ignored("quorum.auth.enableSasl", Check::Bool, Some("false")),
    ignored("quorum.auth.serverRequireSasl", Check::Bool, Some("false")),
    ignored("quorum.auth.learnerRequireSasl", Check::Bool, Some("false")),
    ignored("quorum.auth.learner.saslLoginContext", Check::Any, None),
    ignored("quorum.auth.server.saslLoginContext", Check::Any, None),
    ignored("quorum.auth.kerberos.servicePrincipal", Check::Any, None),
    ignored("quorum.cnxn.threads.size", Check::Int, None),
    ignored("jvm.pause.info-threshold.ms", Check::Long, None),
    ignored("jvm.pause.warn-threshold.ms", Check::Long, None),
    ignored("jvm.pause.sleep.time.ms", Check::Long, None),
    ignored("jvm.pause.monitor", Check::Bool, Some("false")),
    ignored("multiAddress.enabled", Check::Bool, Some("false")),
    ignored("multiAddress.reachabilityCheckTimeoutMs", Check::Int, None),
    ignored("multiAddress.reachabilityCheckEnabled", Check::Bool, None),
    ignored("oraclePath", Check::Any, None),
    // System-property keys from the 3.9 administrator's guide.
    ignored("commitLogCount", Check::Any, None),
    ignored("snapSizeLimitInKb", Check::Any, None),
    ignored("txnLogSizeLimitInKb", Check::Any, None),
    ignored("maxCnxns", Check::Any, Some("0")),
    ignored("maxResponseCacheSize", Check::Any, None),
    ignored("maxGetChildrenResponseCacheSize", Check::Any, None),
    ignored("emulate353TTLNodes", Check::Any, Some("false")),
    ignored("watchManagerName", Check::Any, None),
    ignored("watcherCleanThreadsNum", Check::Any, None),
    ignored("watcherCleanThreshold", Check::Any, None),
    ignored("watcherCleanIntervalInSeconds", Check::Any, None),
    ignored("maxInProcessingDeadWatchers", Check::Any, None),
    ignored("bitHashCacheSize", Check::Any, None),
    ignored("fastleader.minNotificationInterval", Check::Any, None),
    ignored("fastleader.maxNotificationInterval", Check::Any, None),
    ignored("connectionMaxTokens", Check::Any, Some("0")),
    ignored("connectionTokenFillTime", Check::Any, None),
    ignored("connectionTokenFillCount", Check::Any, None),
    ignored("connectionFreezeTime", Check::Any, None),
    ignored("connectionDropIncrease", Check::Any, None),
    ignored("connectionDropDecrease", Check::Any, None),
    ignored("connectionDecreaseRatio", Check::Any, None),
    ignored("connection_throttle_weight_enabled", Check::Any, None),
    ignored(
        "connection_throttle_global_session_weight",
        Check::Any,
        None,
    ),
    ignored("connection_throttle_local_session_weight", Check::Any, None),
    ignored("connection_throttle_renew_session_weight", Check::Any, None),
    ignored("flushDelay", Check::Any, None),
    ignored("maxWriteQueuePollTime", Check::Any, None),
    ignored("maxBatchSize", Check::Any, None),
    ignored("requestThrottleLimit", Check::Any, Some("0")),
    ignored("requestThrottleStallTime", Check::Any, None),
    ignored("requestThrottleDropStale", Check::Any, None),
    ignored("requestStaleLatencyCheck", Check::Any, None),
    ignored("requestStaleConnectionCheck", Check::Any, None),
    ignored("request_throttler.shutdownTimeout", Check::Any, None),
    ignored("advancedFlowControlEnabled", Check::Any, None),
    ignored("enableEagerACLCheck", Check::Any, None),
    ignored("maxConcurrentSnapSyncs", Check::Any, None),
    ignored("maxConcurrentDiffSyncs", Check::Any, None),
    ignored("digest.enabled", Check::Any, Some("true")),
    ignored("snapshot.compression.method", Check::Any, None),
    ignored("snapshot.trust.empty", Check::Any, None),
    ignored("audit.enable", Check::Any, Some("false")),
    ignored("audit.impl.class", Check::Any, None),
    ignored("largeRequestMaxBytes", Check::Any, None),
    ignored("largeRequestThreshold", Check::Any, None),
    ignored("outstandingHandshake.limit", Check::Any, None),
    ignored(
        "netty.server.earlyDropSecureConnectionHandshakes",
        Check::Any,
        None,
    ),
    ignored("throttledOpWaitTime", Check::Any, None),
    ignored("learner.closeSocketAsync", Check::Any, None),
    ignored("leader.closeSocketAsync", Check::Any, None),
    ignored("learner.asyncSending", Check::Any, None),
    ignored(
        "forward_learner_requests_to_commit_processor_disabled",
        Check::Any,
        None,
    ),
    ignored("serializeLastProcessedZxid.enabled", Check::Any, None),
    ignored("maxTimeToWaitForEpoch", Check::Any, None),
    ignored("leaderServes", Check::Any, Some("yes")),
    ignored("cnxTimeout", Check::Any, None),
    ignored("quorumCnxnTimeoutMs", Check::Any, None),
    ignored("tcpKeepAlive", Check::Any, None),
    ignored("clientTcpKeepAlive", Check::Any, None),
    ignored("electionPortBindRetry", Check::Any, None),
    ignored("observer.reconnectDelayMs", Check::Any, None),
    ignored("observer.election.DelayMs", Check::Any, None),
    ignored(
        "DigestAuthenticationProvider.enabled",
        Check::Any,
        Some("true"),
    ),
    ignored(
        "DigestAuthenticationProvider.digestAlg",
        Check::Any,
        Some("SHA1"),
    ),
    ignored(
        "IPAuthenticationProvider.usexforwardedfor",
        Check::Any,
        None,
    ),
    ignored("ensembleAuthName", Check::Any, None),
    ignored(
        "follower.skipLearnerRequestToNextProcessor",
        Check::Any,
        None,
    ),
    ignored("jute.maxbuffer.extrasize", Check::Any, None),
    ignored("skipACL", Check::Any, Some("no")),
    ignored("nio.numSelectorThreads", Check::Any, None),
    ignored("nio.numWorkerThreads", Check::Any, None),
    ignored("commitProcessor.numWorkerThreads", Check::Any, None),
    ignored("commitProcessor.maxReadBatchSize", Check::Any, None),
    ignored("commitProcessor.maxCommitBatchSize", Check::Any, None),
    ignored("znode.container.maxNeverUsedIntervalMs", Check::Any, None),
    ignored("messageTracker.BufferSize", Check::Any, None),
    ignored("messageTracker.Enabled", Check::Any, None),
    ignored("datadir.autocreate", Check::Any, None),
    ignored("db.autocreate", Check::Any, None),
];

/// Families of ZooKeeper keys meerkat ignores with a warning (TLS, SASL, the Jetty admin
/// server, metrics providers, Kerberos).
pub(super) const IGNORED_PREFIXES: &[&str] = &[
    "admin.",
    "ssl.",
    "metricsProvider.",
    "quorum.auth.",
    "jvm.pause.",
    "multiAddress.",
    "kerberos.",
    "audit.",
    "netty.",
];

/// Keys refused outright, with the reason. Ignoring them would run a different ensemble from
/// the one the file describes (no servers, or majority instead of hierarchical quorums).
pub(super) const REFUSED: &[(&str, &str)] = &[];

/// Prefixes refused outright: hierarchical quorums.
pub(super) const REFUSED_PREFIXES: &[(&str, &str)] = &[
    (
        "group.",
        "hierarchical quorums (group.x/weight.x) are not supported",
    ),
    (
        "weight.",
        "hierarchical quorums (group.x/weight.x) are not supported",
    ),
];

/// Prefix of the Java system properties ZooKeeper turns unknown zoo.cfg keys into.
const SYSTEM_PROPERTY_PREFIX: &str = "zookeeper.";

/// The setting `key` names, directly or through its `zookeeper.` system-property spelling.
pub(super) fn setting_for(key: &str) -> Option<&'static SettingKey> {
    let unprefixed = key.strip_prefix(SYSTEM_PROPERTY_PREFIX);
    SETTINGS.iter().find(|known| {
        known.name == key || (known.system_property && unprefixed == Some(known.name))
    })
}

/// The ignored key `key` names, with or without `zookeeper.`.
pub(super) fn ignored_for(key: &str) -> Option<&'static IgnoredKey> {
    let unprefixed = key.strip_prefix(SYSTEM_PROPERTY_PREFIX).unwrap_or(key);
    IGNORED
        .iter()
        .find(|known| known.name == key || known.name == unprefixed)
}

/// Whether `key` belongs to an ignored family.
pub(super) fn has_ignored_prefix(key: &str) -> bool {
    let unprefixed = key.strip_prefix(SYSTEM_PROPERTY_PREFIX).unwrap_or(key);
    IGNORED_PREFIXES
        .iter()
        .any(|prefix| key.starts_with(prefix) || unprefixed.starts_with(prefix))
}

/// Why `key` is refused, if it is.
pub(super) fn refusal_for(key: &str) -> Option<&'static str> {
    let exact = REFUSED.iter().find(|(name, _)| *name == key);
    let family = REFUSED_PREFIXES
        .iter()
        .find(|(prefix, _)| key.starts_with(prefix));
    exact.or(family).map(|(_, reason)| *reason)
}

/// A known key equal to `key` but for ASCII case, to suggest when `key` is unknown.
pub(super) fn case_insensitive_match(key: &str) -> Option<&'static str> {
    let settings = SETTINGS.iter().map(|known| known.name);
    let ignored = IGNORED.iter().map(|known| known.name);
    settings
        .chain(ignored)
        .find(|name| name.eq_ignore_ascii_case(key))
}

/// Whether a key's value is a secret that must not be echoed (by the `conf` four-letter word,
/// logs, or the admin API): the super digest and TLS key/trust store passwords.
pub fn is_sensitive_key(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    ["password", "superdigest", "secret"]
        .iter()
        .any(|marker| lower.contains(marker))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_across_tables() {
        let mut seen = HashSet::new();
        let settings = SETTINGS.iter().map(|k| k.name);
        let ignored = IGNORED.iter().map(|k| k.name);
        let refused = REFUSED.iter().map(|(name, _)| *name);
        for name in settings.chain(ignored).chain(refused) {
            assert!(seen.insert(name), "{name} listed twice");
        }
    }

    #[test]
    fn system_property_spelling_only_for_system_property_keys() {
        assert_eq!(
            setting_for("zookeeper.snapCount").map(|k| k.setting),
            Some(Setting::SnapCount)
        );
        assert_eq!(
            setting_for("zookeeper.jute.maxbuffer").map(|k| k.setting),
            Some(Setting::JuteMaxBuffer)
        );
        assert!(setting_for("zookeeper.tickTime").is_none());
        assert!(setting_for("zookeeper.dataDir").is_none());
        assert!(setting_for("snapcount").is_none());
    }

    #[test]
    fn ignored_keys_and_families() {
        assert!(ignored_for("reconfigEnabled").is_none());
        assert!(ignored_for("zookeeper.skipACL").is_some());
        assert!(ignored_for("syncEnabled").is_some());
        assert!(has_ignored_prefix("admin.serverPort"));
        assert!(has_ignored_prefix("zookeeper.ssl.keyStore.location"));
        assert!(has_ignored_prefix("metricsProvider.httpPort"));
        assert!(!has_ignored_prefix("tickTime"));
    }

    #[test]
    fn refused_keys() {
        assert!(refusal_for("dynamicConfigFile").is_none());
        assert!(refusal_for("group.1").is_some());
        assert!(refusal_for("weight.2").is_some());
        assert!(refusal_for("groupie").is_none());
    }

    #[test]
    fn suggestions_ignore_case() {
        assert_eq!(case_insensitive_match("TICKTIME"), Some("tickTime"));
        assert_eq!(case_insensitive_match("forcesync"), Some("forceSync"));
        assert_eq!(case_insensitive_match("nothing"), None);
    }

    #[test]
    fn sensitive_keys() {
        assert!(is_sensitive_key("DigestAuthenticationProvider.superDigest"));
        assert!(is_sensitive_key("ssl.keyStore.password"));
        assert!(is_sensitive_key("zookeeper.ssl.quorum.trustStore.password"));
        assert!(!is_sensitive_key("tickTime"));
    }
}
