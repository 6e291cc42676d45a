//! The configuration the replica decides with (the host reads it from zoo.cfg).

#[derive(Debug, Clone)]
pub struct Settings {
    pub tick_time_ms: u32,
    pub min_session_timeout_ms: u32,
    pub max_session_timeout_ms: u32,
    /// `zookeeper.extendedTypesEnabled`: TTL nodes.
    pub extended_types_enabled: bool,
    /// `zookeeper.enforceQuota`: writes past a quota's hard limit fail with QuotaExceeded.
    pub enforce_quota: bool,
    /// `DigestAuthenticationProvider.superDigest`.
    pub super_digest: Option<String>,
    /// `znode.container.checkIntervalMs`.
    pub container_check_interval_ms: u64,
    /// `znode.container.maxPerMinute`.
    pub container_max_per_minute: u32,
    /// `znode.container.maxNeverUsedIntervalMs` (0: never-used containers are kept).
    pub container_max_never_used_ms: i64,
    /// The schemes of `enforce.auth.schemes` while `enforce.auth.enabled` (or `sasl` with
    /// `sessionRequireClientSASLAuth`); empty when authentication is not enforced.
    pub enforce_auth_schemes: Vec<String>,
    /// `authProvider.N` registered `SASLAuthenticationProvider`: `sasl` ACLs are valid.
    pub sasl_provider: bool,
    /// `zookeeper.allowSaslFailedClients`: a failed SASL exchange keeps the connection unless
    /// SASL is enforced.
    pub allow_sasl_failed_clients: bool,
    /// How long an ensemble member without a leader holds its clients' connections and
    /// requests before it closes them (see `ensemble::hold`); about a tick by default.
    pub failover_hold_ms: u64,
    /// `reconfigEnabled`: the `reconfig` operation is allowed.
    pub reconfig_enabled: bool,
    /// `standaloneEnabled`: a reconfiguration must leave at least two voters.
    pub standalone_enabled: bool,
    /// The members the configuration file lists, written to `/zookeeper/config` by the first
    /// leader of an ensemble (empty for a standalone server).
    pub initial_config: crate::ensemble::server_spec::ConfigText,
    /// `localSessionsEnabled`: an ensemble member creates new sessions locally, without a
    /// Zab round (see [`crate::local_sessions`]).
    pub local_sessions_enabled: bool,
    /// `localSessionsUpgradingEnabled`: a local session that creates an ephemeral is made
    /// global first; without it the create fails with EphemeralOnLocalSession.
    pub local_sessions_upgrading_enabled: bool,
    /// `readonlymode.enabled`: a member cut off from its quorum serves reads to clients that
    /// accept a read-only server (see [`crate::read_only`]).
    pub read_only_mode_enabled: bool,
    /// Output [`crate::Output::Observed`] for a checker (the simulator).
    pub observe: bool,
    /// A deliberately wrong variant, for the simulator to catch.
    #[cfg(feature = "planted-bugs")]
    pub planted_bug: Option<crate::planted::HostBug>,
}

impl Settings {
    /// Whether the planted bug `bug` is on (always false without the feature).
    #[cfg(feature = "planted-bugs")]
    pub(crate) fn bug(&self, bug: crate::planted::HostBug) -> bool {
        self.planted_bug == Some(bug)
    }
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            tick_time_ms: 2000,
            min_session_timeout_ms: 4000,
            max_session_timeout_ms: 40000,
            extended_types_enabled: false,
            enforce_quota: false,
            super_digest: None,
            container_check_interval_ms: 60_000,
            container_max_per_minute: 10_000,
            container_max_never_used_ms: 0,
            enforce_auth_schemes: Vec::new(),
            sasl_provider: false,
            allow_sasl_failed_clients: false,
            failover_hold_ms: 2000,
            reconfig_enabled: false,
            standalone_enabled: true,
            initial_config: Default::default(),
            local_sessions_enabled: false,
            local_sessions_upgrading_enabled: false,
            read_only_mode_enabled: false,
            observe: false,
            #[cfg(feature = "planted-bugs")]
            planted_bug: None,
        }
    }
}
