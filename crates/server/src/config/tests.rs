//! Tests of zoo.cfg reading as a whole: defaults, every key, precedence, errors, warnings.

use super::*;
use std::net::Ipv6Addr;

fn parse(text: &str) -> ServerConfig {
    ServerConfig::parse(text, "zoo.cfg").unwrap_or_else(|error| panic!("{error}"))
}

fn parse_err(text: &str) -> ConfigError {
    match ServerConfig::parse(text, "zoo.cfg") {
        Ok(config) => panic!("accepted: {config:?}"),
        Err(error) => error,
    }
}

/// `text` with a dataDir line prepended (line 1), so errors are on line 1 + n.
fn with_data_dir(text: &str) -> String {
    format!("dataDir=/var/lib/zk\n{text}")
}

fn warning_kinds(config: &ServerConfig) -> Vec<(usize, &str, &WarningKind)> {
    config
        .warnings
        .iter()
        .map(|w| (w.line, w.key.as_str(), &w.kind))
        .collect()
}

// ---- defaults -------------------------------------------------------------------------------

#[test]
fn embedded_default_is_standalone_on_localhost() {
    let config = ServerConfig::embedded_default();
    assert_eq!(
        config.client_address(),
        "127.0.0.1:2181".parse().expect("addr")
    );
    assert_eq!(config.data_dir, PathBuf::from("./meerkat-data"));
    assert_eq!(config.data_log_dir, config.data_dir);
    assert_eq!(config.tick_time_ms, 3000);
    assert_eq!(
        (config.min_session_timeout_ms, config.max_session_timeout_ms),
        (6000, 60000)
    );
    assert_eq!(config.max_client_cnxns, 60);
    assert_eq!(config.global_outstanding_limit, 1000);
    assert_eq!(config.jute_max_buffer, 1_048_575);
    assert_eq!(config.four_letter_words, FourLetterWhitelist::default());
    assert!(!config.extended_types_enabled);
    assert_eq!(config.super_digest, None);
    assert_eq!(config.container_check_interval_ms, 60_000);
    assert_eq!(config.container_max_per_minute, 10_000);
    assert_eq!(config.snap_count, 100_000);
    assert!(config.force_sync);
    assert_eq!(config.pre_alloc_size_kb, 65_536);
    assert_eq!(config.fsync_warning_threshold_ms, 1000);
    assert_eq!(config.autopurge_snap_retain_count, 3);
    assert_eq!(config.autopurge_purge_interval_hours, 0);
    assert_eq!((config.init_limit, config.sync_limit), (None, None));
    assert!(config.servers.is_empty() && config.entries.is_empty() && config.warnings.is_empty());
}

#[test]
fn file_with_only_data_dir_gets_zookeeper_defaults_on_all_interfaces() {
    let config = parse("dataDir=/var/lib/zk\n");
    let expected = ServerConfig {
        client_port_address: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        data_dir: PathBuf::from("/var/lib/zk"),
        data_log_dir: PathBuf::from("/var/lib/zk"),
        entries: vec![("dataDir".to_string(), "/var/lib/zk".to_string())],
        ..ServerConfig::embedded_default()
    };
    assert_eq!(config, expected);
    assert_eq!(
        config.client_address(),
        "0.0.0.0:2181".parse().expect("addr")
    );
}

#[test]
fn zookeeper_sample_config_reads_cleanly() {
    let sample = "\
# The number of milliseconds of each tick
tickTime=2000
# The number of ticks that the initial
# synchronization phase can take
initLimit=10
# The number of ticks that can pass between
# sending a request and getting an acknowledgement
syncLimit=5
# the directory where the snapshot is stored.
# do not use /tmp for storage, /tmp here is just
# example sakes.
dataDir=/tmp/zookeeper
# the port at which the clients will connect
clientPort=2181
# the maximum number of client connections.
# increase this if you need to handle more clients
#maxClientCnxns=60
#autopurge.snapRetainCount=3
#autopurge.purgeInterval=1

## Metrics Providers
#metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider
#metricsProvider.httpPort=7000
#metricsProvider.exportJvmInfo=true
";
    let config = parse(sample);
    assert_eq!(config.tick_time_ms, 2000);
    assert_eq!((config.init_limit, config.sync_limit), (Some(10), Some(5)));
    assert_eq!(config.data_dir, PathBuf::from("/tmp/zookeeper"));
    assert_eq!(
        config.client_address(),
        "0.0.0.0:2181".parse().expect("addr")
    );
    assert_eq!(
        (config.min_session_timeout_ms, config.max_session_timeout_ms),
        (4000, 40000)
    );
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    assert_eq!(config.entries.len(), 5);
}

// ---- every key ------------------------------------------------------------------------------

const EVERY_KEY: &str = "\
tickTime=1000
clientPort=2281
clientPortAddress=10.1.2.3
dataDir=/data/zk
dataLogDir=/log/zk
maxClientCnxns=0
minSessionTimeout=1500
maxSessionTimeout=90000
initLimit=10
syncLimit=5
autopurge.snapRetainCount=7
autopurge.purgeInterval=24
globalOutstandingLimit=5000
jute.maxbuffer=4194304
4lw.commands.whitelist=ruok, mntr
extendedTypesEnabled=true
DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=
znode.container.checkIntervalMs=1000
znode.container.maxPerMinute=50
snapCount=20000
forceSync=no
preAllocSize=1024
fsync.warningthresholdms=50
diskless=true
PurgeTime=5000
NumberToRetain=2
busySnapshotRest=50
busySnapshotMinRestMs=20
failoverHoldMs=1500
serverThreads=3
server.1=zk1:2888:3888
server.2=zk2:2888:3888
server.3=zk3:2888:3888
";

#[test]
fn every_key_is_read() {
    let config = parse(EVERY_KEY);
    assert_eq!(config.tick_time_ms, 1000);
    assert_eq!(
        config.client_address(),
        "10.1.2.3:2281".parse().expect("addr")
    );
    assert_eq!(config.data_dir, PathBuf::from("/data/zk"));
    assert_eq!(config.data_log_dir, PathBuf::from("/log/zk"));
    assert_eq!(config.max_client_cnxns, 0);
    assert_eq!(
        (config.min_session_timeout_ms, config.max_session_timeout_ms),
        (1500, 90000)
    );
    assert_eq!((config.init_limit, config.sync_limit), (Some(10), Some(5)));
    assert_eq!(config.autopurge_snap_retain_count, 7);
    assert_eq!(config.autopurge_purge_interval_hours, 24);
    assert_eq!(config.global_outstanding_limit, 5000);
    assert_eq!(config.jute_max_buffer, 4_194_304);
    assert!(config.four_letter_words.allows("ruok"));
    assert!(config.four_letter_words.allows("mntr"));
    assert!(!config.four_letter_words.allows("stat"));
    assert!(config.extended_types_enabled);
    assert_eq!(
        config.super_digest.as_deref(),
        Some("super:D/InIHSb7yEEbrWz8b9l71RjZJU=")
    );
    assert_eq!(config.container_check_interval_ms, 1000);
    assert_eq!(config.container_max_per_minute, 50);
    assert_eq!(config.snap_count, 20000);
    assert!(!config.force_sync);
    assert_eq!(config.pre_alloc_size_kb, 1024);
    assert_eq!(config.fsync_warning_threshold_ms, 50);
    assert!(config.diskless);
    assert_eq!(config.purge_time_ms, 5000);
    assert_eq!(config.number_to_retain, 2);
    assert_eq!(config.busy_snapshot_rest_percent, 50);
    assert_eq!(config.busy_snapshot_min_rest_ms, 20);
    assert_eq!(config.failover_hold_ms, Some(1500));
    assert_eq!(config.server_threads, Some(3));
    assert_eq!(config.servers.len(), 3);
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    assert_eq!(config.entries.len(), EVERY_KEY.lines().count());
    assert_eq!(
        config.entries[0],
        ("tickTime".to_string(), "1000".to_string())
    );
}

#[test]
fn system_property_keys_accept_the_zookeeper_prefix() {
    let prefixed = "\
dataDir=/d
zookeeper.globalOutstandingLimit=7
zookeeper.jute.maxbuffer=8
zookeeper.4lw.commands.whitelist=*
zookeeper.extendedTypesEnabled=TRUE
zookeeper.DigestAuthenticationProvider.superDigest=super:x
zookeeper.znode.container.checkIntervalMs=9
zookeeper.znode.container.maxPerMinute=10
zookeeper.snapCount=11
zookeeper.forceSync=no
zookeeper.preAllocSize=12
zookeeper.fsync.warningthresholdms=13
";
    let config = parse(prefixed);
    assert_eq!(config.global_outstanding_limit, 7);
    assert_eq!(config.jute_max_buffer, 8);
    assert!(config.four_letter_words.allows_all());
    assert!(config.extended_types_enabled);
    assert_eq!(config.super_digest.as_deref(), Some("super:x"));
    assert_eq!(config.container_check_interval_ms, 9);
    assert_eq!(config.container_max_per_minute, 10);
    assert_eq!(config.snap_count, 11);
    assert!(!config.force_sync);
    assert_eq!(config.pre_alloc_size_kb, 12);
    assert_eq!(config.fsync_warning_threshold_ms, 13);
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
}

#[test]
fn quorum_peer_keys_have_no_zookeeper_prefix_spelling() {
    let config = parse(&with_data_dir("zookeeper.tickTime=5000\n"));
    assert_eq!(config.tick_time_ms, 3000);
    assert!(matches!(
        warning_kinds(&config).as_slice(),
        [(2, "zookeeper.tickTime", WarningKind::UnknownKey { .. })]
    ));
}

#[test]
fn both_spellings_of_one_key_are_duplicates_and_the_last_wins() {
    let config = parse(&with_data_dir(
        "jute.maxbuffer=100\nzookeeper.jute.maxbuffer=200\n",
    ));
    assert_eq!(config.jute_max_buffer, 200);
    assert_eq!(
        warning_kinds(&config),
        vec![(
            3,
            "zookeeper.jute.maxbuffer",
            &WarningKind::Duplicate { previous_line: 2 }
        )]
    );
}

#[test]
fn client_port_address_forms() {
    let v6 = parse(&with_data_dir("clientPortAddress=[::1]\nclientPort=2182\n"));
    assert_eq!(
        v6.client_address(),
        SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), 2182)
    );
    let local = parse(&with_data_dir("clientPortAddress=localhost\n"));
    assert_eq!(
        local.client_address(),
        "127.0.0.1:2181".parse().expect("addr")
    );
    // Without clientPort meerkat keeps 2181 where ZooKeeper would refuse the file.
    let no_port = parse(&with_data_dir("clientPortAddress=192.168.1.5\n"));
    assert_eq!(
        no_port.client_address(),
        "192.168.1.5:2181".parse().expect("addr")
    );
}

#[test]
fn four_letter_whitelist_forms() {
    let all = parse(&with_data_dir("4lw.commands.whitelist=*\n"));
    assert!(all.four_letter_words.allows("dump"));
    let listed = parse(&with_data_dir("4lw.commands.whitelist=ruok, srvr ,mntr\n"));
    let names: Vec<&str> = listed.four_letter_words.commands().collect();
    assert_eq!(names, ["mntr", "ruok", "srvr"]);
    let empty = parse(&with_data_dir("4lw.commands.whitelist=\n"));
    assert_eq!(empty.four_letter_words, FourLetterWhitelist::default());
    let continued = parse(&with_data_dir("4lw.commands.whitelist=ruok,\\\n    stat\n"));
    assert!(continued.four_letter_words.allows("stat"));
}

// ---- precedence -----------------------------------------------------------------------------

#[test]
fn session_timeouts_derive_from_tick_time_read_later() {
    let config = parse("minSessionTimeout=-1\nmaxSessionTimeout=-1\ndataDir=/d\ntickTime=500\n");
    assert_eq!(
        (config.min_session_timeout_ms, config.max_session_timeout_ms),
        (1000, 10000)
    );
    let absent = parse("dataDir=/d\ntickTime=100\n");
    assert_eq!(
        (absent.min_session_timeout_ms, absent.max_session_timeout_ms),
        (200, 2000)
    );
}

#[test]
fn explicit_bound_keeps_its_value_and_the_other_derives() {
    let config = parse("minSessionTimeout=2500\ndataDir=/d\ntickTime=1000\n");
    assert_eq!(
        (config.min_session_timeout_ms, config.max_session_timeout_ms),
        (2500, 20000)
    );
}

#[test]
fn minus_one_after_an_explicit_bound_restores_the_default() {
    let config = parse(&with_data_dir(
        "maxSessionTimeout=5000\nmaxSessionTimeout=-1\n",
    ));
    assert_eq!(config.max_session_timeout_ms, 60000);
}

#[test]
fn huge_tick_time_saturates_derived_bounds_at_java_int_max() {
    let config = parse(&with_data_dir("tickTime=2147483647\n"));
    assert_eq!(config.min_session_timeout_ms, i32::MAX as u32);
    assert_eq!(config.max_session_timeout_ms, i32::MAX as u32);
}

#[test]
fn min_above_max_is_an_error_at_the_later_explicit_line() {
    let error = parse_err(&with_data_dir(
        "minSessionTimeout=40000\nmaxSessionTimeout=30000\n",
    ));
    assert_eq!(
        error.to_string(),
        "zoo.cfg:3: minSessionTimeout (40000 ms) must not be larger than maxSessionTimeout (30000 ms)"
    );
    assert!(matches!(error, ConfigError::Rejected { ref key, .. } if key == "maxSessionTimeout"));
    // Against a derived maximum, and with tickTime read afterwards.
    let derived = parse_err("minSessionTimeout=50000\ndataDir=/d\ntickTime=2000\n");
    assert_eq!(derived.line(), Some(1));
    assert!(derived.to_string().contains("(40000 ms)"), "{derived}");
}

#[test]
fn data_log_dir_defaults_to_data_dir_in_any_order() {
    let config = parse("dataLogDir=/log\ndataDir=/data\n");
    assert_eq!(config.data_log_dir, PathBuf::from("/log"));
    let default = parse("dataDir=/data\n");
    assert_eq!(default.data_log_dir, PathBuf::from("/data"));
}

// ---- errors ---------------------------------------------------------------------------------

#[test]
fn error_message_names_file_line_key_and_value() {
    let text = "# c\n# c\n# c\n# c\n# c\ndataDir=/d\ntickTime=abc\n";
    assert_eq!(
        parse_err(text).to_string(),
        r#"zoo.cfg:7: invalid value "abc" for tickTime: expected a positive integer no larger than 2147483647"#
    );
}

#[test]
fn invalid_values_are_errors_naming_key_and_line() {
    let cases = [
        ("tickTime=0", "tickTime"),
        ("tickTime=-5", "tickTime"),
        ("clientPort=65536", "clientPort"),
        ("clientPort=0", "clientPort"),
        ("clientPort=http", "clientPort"),
        ("clientPortAddress=zk.example.com", "clientPortAddress"),
        ("dataLogDir=", "dataLogDir"),
        ("maxClientCnxns=-1", "maxClientCnxns"),
        ("minSessionTimeout=-2", "minSessionTimeout"),
        ("maxSessionTimeout=1.5", "maxSessionTimeout"),
        ("initLimit=0", "initLimit"),
        ("syncLimit=five", "syncLimit"),
        ("autopurge.snapRetainCount=-3", "autopurge.snapRetainCount"),
        ("autopurge.purgeInterval=1h", "autopurge.purgeInterval"),
        ("globalOutstandingLimit=0", "globalOutstandingLimit"),
        ("jute.maxbuffer=1M", "jute.maxbuffer"),
        ("extendedTypesEnabled=yes", "extendedTypesEnabled"),
        (
            "DigestAuthenticationProvider.superDigest=nocolon",
            "DigestAuthenticationProvider.superDigest",
        ),
        (
            "znode.container.checkIntervalMs=0",
            "znode.container.checkIntervalMs",
        ),
        (
            "znode.container.maxPerMinute=0",
            "znode.container.maxPerMinute",
        ),
        ("snapCount=-1", "snapCount"),
        ("forceSync=NO", "forceSync"),
        ("forceSync=false", "forceSync"),
        ("zookeeper.forceSync=maybe", "zookeeper.forceSync"),
        ("preAllocSize=-1", "preAllocSize"),
        ("fsync.warningthresholdms=soon", "fsync.warningthresholdms"),
        ("server.1=zk1:2888", "server.1"),
        ("standaloneEnabled=maybe", "standaloneEnabled"),
        ("serverThreads=0", "serverThreads"),
        ("serverThreads=1025", "serverThreads"),
        ("busySnapshotMinRestMs=-1", "busySnapshotMinRestMs"),
        ("busySnapshotMinRestMs=60001", "busySnapshotMinRestMs"),
        ("secureClientPort=x", "secureClientPort"),
        ("electionAlg=1", "electionAlg"),
        ("peerType=leader", "peerType"),
    ];
    for (line, key) in cases {
        let error = parse_err(&format!("dataDir=/d\n# comment\n{line}\n"));
        let message = error.to_string();
        assert!(
            matches!(&error, ConfigError::InvalidValue { key: k, line: 3, .. } if k == key),
            "{line}: {message}"
        );
        assert!(
            message.starts_with("zoo.cfg:3: invalid value "),
            "{message}"
        );
        assert!(message.contains(key), "{message}");
    }
}

#[test]
fn values_out_of_java_int_range_are_refused() {
    let error = parse_err(&with_data_dir("snapCount=2147483648\n"));
    assert_eq!(error.line(), Some(2));
    let error = parse_err(&with_data_dir("preAllocSize=9007199254740992\n"));
    assert_eq!(error.line(), Some(2));
}

#[test]
fn missing_data_dir_is_an_error() {
    let error = parse_err("tickTime=2000\nclientPort=2181\n");
    assert!(matches!(error, ConfigError::Missing { key: "dataDir", .. }));
    assert_eq!(
        error.to_string(),
        "zoo.cfg: dataDir is not set: a configuration file must say where to keep snapshots"
    );
    assert!(matches!(
        parse_err(""),
        ConfigError::Missing { key: "dataDir", .. }
    ));
    assert!(parse_err("dataDir=\n").line() == Some(1));
}

#[test]
fn refused_features_are_errors() {
    // A dynamic configuration file that cannot be read stops the server, naming it.
    let dynamic = parse_err(&with_data_dir(
        "dynamicConfigFile=/nonexistent/zoo.cfg.dynamic\n",
    ));
    assert!(
        dynamic
            .to_string()
            .starts_with("zoo.cfg:2: dynamicConfigFile /nonexistent/zoo.cfg.dynamic: "),
        "{dynamic}"
    );
    let group = parse_err(&with_data_dir("group.1=1:2:3\n"));
    assert!(
        group.to_string().starts_with("zoo.cfg:2: group.1: "),
        "{group}"
    );
    let multi = parse_err(&with_data_dir("server.1=a:1:2|b:1:2\n"));
    assert_eq!(multi.line(), Some(2));
}

#[test]
fn syntax_errors_carry_the_line() {
    let error = parse_err("dataDir=/d\n\nfoo=\\uXYZW\n");
    assert!(
        matches!(error, ConfigError::Syntax { line: 3, .. }),
        "{error}"
    );
    assert!(
        error.to_string().starts_with("zoo.cfg:3: malformed"),
        "{error}"
    );
}

// ---- warnings -------------------------------------------------------------------------------

#[test]
fn unknown_keys_warn_with_key_and_line() {
    let config = parse(&with_data_dir("foo.bar=1\nticktime=2000\n"));
    assert_eq!(
        warning_kinds(&config),
        vec![
            (2, "foo.bar", &WarningKind::UnknownKey { suggestion: None }),
            (
                3,
                "ticktime",
                &WarningKind::UnknownKey {
                    suggestion: Some("tickTime")
                }
            ),
        ]
    );
    assert_eq!(config.tick_time_ms, 3000);
    assert_eq!(
        config.warnings[0].to_string(),
        r#"zoo.cfg:2: unknown key "foo.bar" ignored"#
    );
}

#[test]
fn unsupported_zookeeper_keys_warn_unless_meerkat_already_behaves_so() {
    let text = "\
quorum.auth.enableSasl=true
admin.serverPort=8080
ssl.quorum.context.supplier.class=x.Y
authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider
metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider
quorum.auth.serverRequireSasl=true
syncEnabled=true
quorum.auth.serverRequireSasl=FALSE
electionAlg=3
quorumListenOnAllIPs=false
peerType=participant
";
    let config = parse(&with_data_dir(text));
    let unsupported: Vec<usize> = config
        .warnings
        .iter()
        .filter(|w| w.kind == WarningKind::Unsupported)
        .map(|w| w.line)
        .collect();
    assert_eq!(unsupported, vec![2, 4, 7]);
    assert!(config.warnings[0]
        .to_string()
        .contains("quorum.auth.enableSasl is a ZooKeeper setting meerkat does not support yet"));
    assert_eq!(config.entries.len(), 12);
}

#[test]
fn reconfiguration_keys_are_read() {
    let config = parse(&with_data_dir(
        "reconfigEnabled=true\nstandaloneEnabled=false\n",
    ));
    assert!(config.reconfig_enabled && !config.standalone_enabled);
    let defaults = parse(&with_data_dir(""));
    assert!(!defaults.reconfig_enabled && defaults.standalone_enabled);
}

#[test]
fn zookeeper_adjustments_are_notices() {
    let config = parse(&with_data_dir("autopurge.snapRetainCount=1\nsnapCount=0\n"));
    assert_eq!(config.autopurge_snap_retain_count, 3);
    assert_eq!(config.snap_count, 2);
    assert_eq!(config.warnings.len(), 2);
    assert_eq!(
        config.warnings[0].to_string(),
        "zoo.cfg:2: autopurge.snapRetainCount: 1 is below the minimum; using 3"
    );
}

#[test]
fn relative_data_dir_gets_a_notice_unless_marked() {
    let relative = parse("dataDir=data\n");
    assert!(matches!(
        warning_kinds(&relative).as_slice(),
        [(1, "dataDir", WarningKind::Notice { .. })]
    ));
    assert!(parse("dataDir=./data\n").warnings.is_empty());
}

#[test]
fn duplicate_keys_warn_and_the_last_value_wins() {
    let config = parse(&with_data_dir("tickTime=1000\ntickTime=2000\n"));
    assert_eq!(config.tick_time_ms, 2000);
    assert_eq!(config.entries.len(), 3);
    assert_eq!(
        warning_kinds(&config),
        vec![(3, "tickTime", &WarningKind::Duplicate { previous_line: 2 })]
    );
}

#[test]
fn entries_keep_file_order_and_every_line() {
    let config = parse("b : 2\ndataDir=/d\nunknown=x\nb=3\n");
    let keys: Vec<&str> = config.entries.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["b", "dataDir", "unknown", "b"]);
    assert_eq!(config.entries[0].1, "2");
}

// ---- server lines ---------------------------------------------------------------------------

const ENSEMBLE: &str = "\
dataDir=/d
initLimit=10
syncLimit=5
server.3=zk3:2888:3888;10.0.0.3:2181
server.1=zk1:2888:3888:participant;2181
server.2=zk2:2888:3888
server.4=zk4:2888:3888:observer
";

#[test]
fn server_lines_are_parsed_and_sorted_by_id() {
    let config = parse(ENSEMBLE);
    let ids: Vec<u64> = config.servers.iter().map(|s| s.id).collect();
    assert_eq!(ids, [1, 2, 3, 4]);
    let [one, two, three, four] = config.servers.as_slice() else {
        panic!("four servers");
    };
    assert_eq!(
        one.client,
        Some(HostPort {
            host: "0.0.0.0".to_string(),
            port: 2181
        })
    );
    assert_eq!(one.line, 5);
    assert_eq!(two.client, None);
    assert_eq!(two.role, ServerRole::Participant);
    assert_eq!(
        three.client,
        Some(HostPort {
            host: "10.0.0.3".to_string(),
            port: 2181
        })
    );
    assert_eq!(four.role, ServerRole::Observer);
    assert_eq!((four.quorum_port, four.election_port), (2888, 3888));
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
}

#[test]
fn server_line_errors_name_the_key_and_line() {
    let error = parse_err(&with_data_dir("server.1=zk1:2888:2888\n"));
    assert_eq!(
        error.to_string(),
        r#"zoo.cfg:2: invalid value "zk1:2888:2888" for server.1: quorum port and election port must differ (both 2888)"#
    );
    let bad_id = parse_err(&with_data_dir("server.one=zk1:2888:3888\n"));
    assert_eq!(
        bad_id.to_string(),
        "zoo.cfg:2: server.one: the server id must be a non-negative integer"
    );
}

#[test]
fn duplicate_server_ids_warn_and_the_last_wins() {
    let config = parse(&with_data_dir("server.1=a:1:2\nserver.01=b:1:2\n"));
    assert_eq!(config.servers.len(), 1);
    assert_eq!(config.servers[0].host, "b");
    assert_eq!(
        warning_kinds(&config),
        vec![
            (3, "server.01", &WarningKind::Duplicate { previous_line: 2 }),
            (
                3,
                "server.1",
                &WarningKind::Notice {
                    message:
                        "only one server is listed; meerkat runs standalone, as ZooKeeper does"
                            .to_string()
                }
            ),
        ]
    );
}

#[test]
fn a_quorum_needs_init_and_sync_limits() {
    let servers = "server.1=a:1:2\nserver.2=b:1:2\nserver.3=c:1:2\n";
    let error = parse_err(&with_data_dir(servers));
    assert!(
        matches!(
            error,
            ConfigError::Missing {
                key: "initLimit",
                ..
            }
        ),
        "{error}"
    );
    let error = parse_err(&with_data_dir(&format!("initLimit=5\n{servers}")));
    assert!(
        matches!(
            error,
            ConfigError::Missing {
                key: "syncLimit",
                ..
            }
        ),
        "{error}"
    );
    assert!(ServerConfig::parse(
        &with_data_dir(&format!("initLimit=5\nsyncLimit=2\n{servers}")),
        "z"
    )
    .is_ok());
}

#[test]
fn observers_need_a_quorum() {
    let alone = parse_err(&with_data_dir("server.1=a:1:2:observer\n"));
    assert!(
        alone
            .to_string()
            .starts_with("zoo.cfg:2: server.1: observers need"),
        "{alone}"
    );
    let one = parse_err(&with_data_dir("server.1=a:1:2\nserver.2=b:1:2:observer\n"));
    assert_eq!(one.line(), Some(3));
}

#[test]
fn small_or_even_ensembles_get_notices() {
    let two = parse(&with_data_dir(
        "initLimit=1\nsyncLimit=1\nserver.1=a:1:2\nserver.2=b:1:2\n",
    ));
    assert!(matches!(
        warning_kinds(&two).as_slice(),
        [(4, "server.1", WarningKind::Notice { .. })]
    ));
    let four = parse(&with_data_dir(
        "initLimit=1\nsyncLimit=1\nserver.1=a:1:2\nserver.2=b:1:2\nserver.3=c:1:2\nserver.4=d:1:2\n",
    ));
    assert_eq!(four.warnings.len(), 1);
    let three = parse(&with_data_dir(
        "initLimit=1\nsyncLimit=1\nserver.1=a:1:2\nserver.2=b:1:2\nserver.3=c:1:2\n",
    ));
    assert!(three.warnings.is_empty());
}

// ---- files ----------------------------------------------------------------------------------

/// A file under the system temp dir, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, contents: &[u8]) -> Self {
        let path =
            std::env::temp_dir().join(format!("meerkat-config-test-{}-{name}", std::process::id()));
        std::fs::write(&path, contents).expect("write temp file");
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn from_file_reads_and_names_the_file() {
    let file = TempFile::new("ok.cfg", b"dataDir=/d\ntickTime=1234\n");
    let config = ServerConfig::from_file(&file.0).expect("valid file");
    assert_eq!(config.tick_time_ms, 1234);
    let bad = TempFile::new("bad.cfg", b"dataDir=/d\ntickTime=x\n");
    let error = ServerConfig::from_file(&bad.0).expect_err("invalid");
    assert!(
        error
            .to_string()
            .starts_with(&format!("{}:2: ", bad.0.display())),
        "{error}"
    );
}

#[test]
fn missing_file_is_an_io_error_naming_the_path() {
    let path = std::env::temp_dir().join("meerkat-config-test-does-not-exist.cfg");
    let error = ServerConfig::from_file(&path).expect_err("missing");
    assert!(matches!(error, ConfigError::Io { .. }));
    assert!(error.to_string().contains("does-not-exist.cfg"), "{error}");
}

#[test]
fn non_utf8_files_are_read_as_latin1() {
    let file = TempFile::new("latin1.cfg", b"dataDir=/donn\xe9es\n");
    let config = ServerConfig::from_file(&file.0).expect("valid file");
    assert_eq!(config.data_dir, PathBuf::from("/donn\u{e9}es"));
}

#[test]
fn a_leading_byte_order_mark_is_ignored() {
    let config = parse("\u{feff}tickTime=2000\ndataDir=/d\n");
    assert_eq!(config.tick_time_ms, 2000);
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
}

// ---- help -----------------------------------------------------------------------------------

#[test]
fn help_lists_every_key_meerkat_reads() {
    for known in keys::SETTINGS {
        assert!(HELP.contains(known.name), "HELP lacks {}", known.name);
    }
    assert!(HELP.contains("server.N="));
    assert!(HELP.lines().all(|line| line.len() <= 120));
}

// ---- robustness -----------------------------------------------------------------------------

/// xorshift64*: deterministic, dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        let index = usize::try_from(self.next() % items.len() as u64).unwrap_or(0);
        items[index]
    }
}

const KEY_PIECES: &[&str] = &[
    "tickTime",
    "dataDir",
    "dataLogDir",
    "clientPort",
    "clientPortAddress",
    "minSessionTimeout",
    "maxSessionTimeout",
    "initLimit",
    "syncLimit",
    "server.1",
    "server.2",
    "server.3",
    "server.",
    "server.x",
    "snapCount",
    "zookeeper.",
    "forceSync",
    "4lw.commands.whitelist",
    "jute.maxbuffer",
    "electionAlg",
    "peerType",
    "standaloneEnabled",
    "group.1",
    "admin.serverPort",
    "autopurge.snapRetainCount",
    "preAllocSize",
    "DigestAuthenticationProvider.superDigest",
    "",
    "#",
    "!",
    " ",
    "\\",
    "é",
    "\u{0}",
    "\u{feff}",
    "x",
];

const VALUE_PIECES: &[&str] = &[
    "0",
    "1",
    "-1",
    "2181",
    "65536",
    "2147483648",
    "99999999999999999999999",
    "abc",
    "yes",
    "no",
    "true",
    "*",
    ",",
    "h:1:2",
    "h:2888:3888",
    ":observer",
    ":participant",
    ";2181",
    ";h:2181",
    "[",
    "]",
    "[::1]",
    ";",
    "|",
    ":",
    "=",
    " ",
    "\t",
    "\\",
    "\\u",
    "\\uD800",
    "\\u00e9",
    "\\uZZZZ",
    "é",
    "\u{0}",
    "#",
    "/tmp/zk",
    "::",
    "\u{10ffff}",
];

const SEPARATORS: &[&str] = &["=", ":", " ", "", " = ", "\t:", "=="];
const LINE_ENDS: &[&str] = &["\n", "\r\n", "\r", "\\\n", "\n\n", ""];

fn random_config(rng: &mut Rng) -> String {
    let mut text = String::new();
    if rng.next() & 1 == 0 {
        text.push_str("dataDir=/d\n");
    }
    for _ in 0..rng.next() % 12 {
        for _ in 0..1 + rng.next() % 2 {
            text.push_str(rng.pick(KEY_PIECES));
        }
        text.push_str(rng.pick(SEPARATORS));
        for _ in 0..rng.next() % 4 {
            text.push_str(rng.pick(VALUE_PIECES));
        }
        text.push_str(rng.pick(LINE_ENDS));
    }
    text
}

#[test]
fn garbage_never_panics() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..20_000 {
        let text = random_config(&mut rng);
        match ServerConfig::parse(&text, "fuzz.cfg") {
            Ok(config) => {
                accepted += 1;
                assert!(config.min_session_timeout_ms <= config.max_session_timeout_ms);
                assert!(config.client_port > 0);
                assert!(config.autopurge_snap_retain_count >= 3);
            }
            Err(error) => {
                refused += 1;
                assert!(error.to_string().starts_with("fuzz.cfg"), "{error}");
            }
        }
    }
    // Both paths must be exercised for the test to mean anything.
    assert!(
        accepted > 1000 && refused > 1000,
        "{accepted} accepted, {refused} refused"
    );
}

#[test]
fn random_characters_never_panic() {
    let mut rng = Rng(42);
    let alphabet: Vec<char> = "ab=:\\u#! \t\r\n;|[]0123456789-.é\u{0}\u{7f}\u{2028}"
        .chars()
        .collect();
    for _ in 0..5_000 {
        let length = rng.next() % 200;
        let text: String = (0..length)
            .map(|_| alphabet[usize::try_from(rng.next() % alphabet.len() as u64).unwrap_or(0)])
            .collect();
        let _ = ServerConfig::parse(&text, "noise");
        let _ = ServerConfig::parse(&format!("dataDir=/d\nserver.1={text}"), "noise");
        let _ = ServerLine::parse(1, &text, 1);
        let _ = FourLetterWhitelist::parse(&text);
    }
}

#[test]
fn tls_keys_are_read_with_zookeeper_defaults() {
    let config = parse(&with_data_dir(
        "secureClientPort=2281\nsecureClientPortAddress=127.0.0.1\n\
         ssl.keyStore.location=/k.p12\nzookeeper.ssl.keyStore.password=pw\n\
         ssl.trustStore.location=/t.pem\nssl.trustStore.type=pem\n\
         ssl.enabledProtocols=TLSv1.2, TLSv1.3\nserverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n",
    ));
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    let tls = &config.tls;
    assert_eq!(
        config.secure_client_address(),
        Some("127.0.0.1:2281".parse().expect("address"))
    );
    assert!(
        !config.client_port_open,
        "secureClientPort alone: no plaintext port"
    );
    assert_eq!(tls.client_auth, ClientAuth::Need, "ZooKeeper's default");
    assert!(tls.hostname_verification);
    let key_store = tls.key_store.as_ref().expect("key store");
    assert_eq!(key_store.path, std::path::PathBuf::from("/k.p12"));
    assert_eq!(key_store.password, "pw");
    assert_eq!(key_store.store_type, None);
    let trust_store = tls.trust_store.as_ref().expect("trust store");
    assert_eq!(trust_store.store_type.as_deref(), Some("PEM"));
    assert_eq!(trust_store.password, "");
    assert_eq!(
        tls.enabled_protocols,
        Some(vec!["TLSv1.2".to_string(), "TLSv1.3".to_string()])
    );
}

#[test]
fn tls_needs_a_key_store_and_valid_values() {
    let error = parse_err("dataDir=/d\nsecureClientPort=2281\n");
    assert!(
        matches!(
            error,
            ConfigError::Missing {
                key: "ssl.keyStore.location",
                ..
            }
        ),
        "{error}"
    );
    let error = parse_err("dataDir=/d\nclient.portUnification=true\n");
    assert!(matches!(error, ConfigError::Missing { .. }), "{error}");
    for (line, key) in [
        ("ssl.clientAuth=sometimes", "ssl.clientAuth"),
        ("ssl.keyStore.type=BCFKS", "ssl.keyStore.type"),
        (
            "zookeeper.ssl.trustStore.type=XML",
            "zookeeper.ssl.trustStore.type",
        ),
        ("client.portUnification=yes", "client.portUnification"),
    ] {
        let error = parse_err(&format!("dataDir=/d\n{line}\n"));
        assert!(
            matches!(&error, ConfigError::InvalidValue { key: k, line: 2, .. } if k == key),
            "{line}: {error}"
        );
    }
}

#[test]
fn admin_https_takes_the_quorum_stores() {
    let config = parse(&with_data_dir(
        "admin.enableServer=true\nadmin.forceHttps=true\nadmin.needClientAuth=true\n\
         ssl.quorum.keyStore.location=/q.p12\nssl.quorum.trustStore.location=/t.p12\n",
    ));
    assert!(config.admin.force_https && config.admin.need_client_auth);
    assert!(config.admin.serves_https());
    let tls = crate::admin::tls_settings(&config);
    assert_eq!(tls.client_auth, ClientAuth::Need);
    assert_eq!(tls.key_store.map(|s| s.path), Some("/q.p12".into()));
    let error = parse_err("dataDir=/d\nadmin.enableServer=true\nadmin.portUnification=true\n");
    assert!(
        matches!(
            error,
            ConfigError::Missing {
                key: "ssl.quorum.keyStore.location",
                ..
            }
        ),
        "{error}"
    );
    let error = parse_err(
        "dataDir=/d\nadmin.enableServer=true\nadmin.forceHttps=true\n\
         admin.needClientAuth=true\nssl.quorum.keyStore.location=/q.p12\n",
    );
    assert!(
        matches!(
            error,
            ConfigError::Missing {
                key: "ssl.quorum.trustStore.location",
                ..
            }
        ),
        "{error}"
    );
    // An AdminServer that is off needs no stores, whatever its HTTPS keys say.
    let config = parse(&with_data_dir("admin.forceHttps=true\n"));
    assert!(!config.admin.enabled);
}

#[test]
fn both_client_ports_and_unknown_tls_tuning() {
    let config = parse(&with_data_dir(
        "clientPort=2181\nsecureClientPort=2281\nssl.keyStore.location=/k.jks\n\
         ssl.clientAuth=WANT\nssl.crl=true\nssl.sslProvider=OPENSSL\n",
    ));
    assert!(config.client_port_open);
    assert_eq!(config.tls.client_auth, ClientAuth::Want);
    let unsupported: Vec<&str> = config
        .warnings
        .iter()
        .filter(|w| w.kind == WarningKind::Unsupported)
        .map(|w| w.key.as_str())
        .collect();
    assert_eq!(unsupported, vec!["ssl.crl"]);
}

/// `enforceQuota` in zoo.cfg (either spelling) decides; without it `-Dzookeeper.enforceQuota`
/// in the JVM flags does, read as Java's `Boolean.parseBoolean`; the default is off.
#[test]
fn enforce_quota_from_zoo_cfg_or_jvm_flags() {
    let plain = parse("dataDir=/d\n");
    assert_eq!(plain.enforce_quota, None);
    assert!(!enforce_quota(&plain, None));
    assert!(enforce_quota(
        &plain,
        Some("-Xmx1g -Dzookeeper.enforceQuota=TRUE")
    ));
    assert!(!enforce_quota(&plain, Some("-Dzookeeper.enforceQuota=yes")));
    let on = parse("dataDir=/d\nenforceQuota=true\n");
    assert_eq!(on.enforce_quota, Some(true));
    let off = parse("dataDir=/d\nzookeeper.enforceQuota=false\n");
    assert!(!enforce_quota(&off, Some("-Dzookeeper.enforceQuota=true")));
    assert!(on.warnings.is_empty(), "{:?}", on.warnings);
    let err = parse_err(&with_data_dir("enforceQuota=maybe\n"));
    assert!(err.to_string().contains("enforceQuota"), "{err}");
}

#[test]
fn the_server_lines_of_a_dynamic_config_file_are_read() {
    let dir = tempfile::tempdir().expect("dir");
    let dynamic = dir.path().join("zoo.cfg.dynamic.100000000");
    std::fs::write(
        &dynamic,
        "server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181\nserver.2=127.0.0.1:2889:3889\n\
         server.3=127.0.0.1:2890:3890:observer\n",
    )
    .expect("write");
    let config = parse(&with_data_dir(&format!(
        "initLimit=5\nsyncLimit=2\ndynamicConfigFile={}\n",
        dynamic.display()
    )));
    let ids: Vec<u64> = config.servers.iter().map(|s| s.id).collect();
    assert_eq!(ids, [1, 2, 3]);
    assert_eq!(config.servers[2].role, ServerRole::Observer);
    std::fs::write(&dynamic, "server.1=127.0.0.1:2888:3888\nversion=1\n").expect("write");
    let text = with_data_dir(&format!("dynamicConfigFile={}\n", dynamic.display()));
    let error = parse_err(&text);
    assert!(
        error.to_string().contains("shouldn't have version inside"),
        "{error}"
    );
}

#[test]
fn local_sessions_and_read_only_mode_are_read() {
    let config = parse(&with_data_dir(
        "localSessionsEnabled=true\nlocalSessionsUpgradingEnabled=TRUE\nreadonlymode.enabled=True\n",
    ));
    assert!(config.local_sessions_enabled);
    assert!(config.local_sessions_upgrading_enabled);
    assert!(config.read_only_mode_enabled);
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    let config = parse(&with_data_dir("readonlymode.enabled=yes\n"));
    assert!(
        !config.read_only_mode_enabled,
        "Boolean.getBoolean: only \"true\" is true"
    );
    let defaults = parse(&with_data_dir(""));
    assert!(!defaults.local_sessions_enabled);
    assert!(!defaults.local_sessions_upgrading_enabled);
    assert!(!defaults.read_only_mode_enabled);
    let err = parse_err(&with_data_dir("localSessionsEnabled=maybe\n"));
    assert!(err.to_string().contains("localSessionsEnabled"), "{err}");
}
