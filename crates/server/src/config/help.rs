//! The zoo.cfg reference printed by `meerkat server --help`.

/// Every key meerkat reads, its default and meaning, and how other keys are treated.
pub const HELP: &str = "\
CONFIGURATION FILE (zoo.cfg, read as Apache ZooKeeper 3.9 reads it)

Syntax: Java properties. One key=value (or key: value) per line. Lines starting
with # or ! are comments; there are no end-of-line comments. A trailing \\
continues a line. Keys are case-sensitive; if a key appears twice the last value
wins (with a warning).

Without a file, meerkat runs standalone on 127.0.0.1:2181 with dataDir
./meerkat-data and the defaults below. With a file, dataDir is required and the
client port listens on all interfaces unless clientPortAddress says otherwise.

KEY                              DEFAULT        MEANING
dataDir=DIR                      (required)     snapshots, and the transaction log unless dataLogDir is set
dataLogDir=DIR                   dataDir        transaction log directory (ideally its own device)
clientPort=PORT                  2181           port clients connect to
clientPortAddress=IP             0.0.0.0        address to listen on (127.0.0.1 without a file)
tickTime=MS                      3000           basic time unit; limits below are counted in ticks
minSessionTimeout=MS             2*tickTime     smallest session timeout granted; -1 = default
maxSessionTimeout=MS             20*tickTime    largest session timeout granted; -1 = default
maxClientCnxns=N                 60             concurrent connections per client IP; 0 = no limit
initLimit=TICKS                  (none)         time for a follower to connect and sync; required with 2+ participants
syncLimit=TICKS                  (none)         how far a follower may lag; required with 2+ participants
failoverHoldMs=MS                tickTime       how long a member without a leader holds its clients' connections
                                                and requests before closing them; 0 = close at once (ZooKeeper's way)
serverThreads=N                  CPUs           threads running connections, peers and the request core; servers
                                                sharing a machine: its cores divided among them (at least 1)
localSessionsEnabled=true|false  false          ensemble: new sessions live on their server only, without a Zab round
localSessionsUpgradingEnabled=true|false
                                 false          a local session creating an ephemeral becomes global first
                                                (else the create fails with EphemeralOnLocalSession)
readonlymode.enabled=true|false  false          a member without a quorum for max(2 s, tickTime) serves reads to
                                                read-only clients; also -Dreadonlymode.enabled=true in SERVER_JVMFLAGS
server.N=HOST:QUORUM_PORT:ELECTION_PORT[:participant|observer][;[HOST:]CLIENT_PORT]
                                 (none)         ensemble member N (N is in that server's dataDir/myid)
dynamicConfigFile=PATH           (none)         a file holding the server.N lines (ZooKeeper 3.5+'s zoo.cfg.dynamic.*)
reconfigEnabled=true|false       false          clients (the super user) may change the membership with reconfig
standaloneEnabled=true|false     true           a reconfiguration must leave at least two voters
autopurge.snapRetainCount=N      3              snapshots kept by the purge task; at least 3
autopurge.purgeInterval=HOURS    0              hours between purges; 0 = never purge
snapCount=N                    * 100000         transactions between snapshots, randomised per server in [N/2+1, N]
forceSync=yes|no               * yes            fsync the log before acknowledging; no risks losing acknowledged writes
diskless=true|false              false          no transaction log: replicas, busy snapshots and failure checkpoints
                                                keep acknowledged writes (see docs/durability.md for what can be lost)
PurgeTime=MS                     60000          diskless: interval between purges of old snapshots
NumberToRetain=N                 3              diskless: snapshots kept by each purge; at least 1
busySnapshotRest=PERCENT         300            diskless: after a busy snapshot of t ms, rest t × PERCENT/100 ms;
                                                0 = back to back (thesis), more = less CPU, a wider loss window
busySnapshotMinRestMs=MS         5              diskless: least rest after a delta batch (not with busySnapshotRest=0);
                                                at most 1000/MS fsyncs a second, a loss window up to MS wider
preAllocSize=KB                * 65536          transaction log files grow in blocks of this size; 0 = no preallocation
fsync.warningthresholdms=MS    * 1000           log a warning when an fsync takes longer
globalOutstandingLimit=N       * 1000           requests in flight before the server stops reading sockets
jute.maxbuffer=BYTES           * 1048575        largest request, response or znode data accepted
4lw.commands.whitelist=LIST    * srvr           four-letter words answered: comma or space separated, * = all;
                                                srvr is always on; names are case-sensitive
extendedTypesEnabled=BOOL      * false          allow TTL znodes
enforceQuota=BOOL              * false          creates and setData past a quota's hard limit (setquota -N/-B) fail with
                                                QuotaExceeded; also -Dzookeeper.enforceQuota=true in SERVER_JVMFLAGS
DigestAuthenticationProvider.superDigest=USER:DIGEST
                               * (unset)        the super user (digest auth) who bypasses ACLs
znode.container.checkIntervalMs=MS
                               * 60000          interval between container and TTL znode cleanup passes
znode.container.maxPerMinute=N * 10000          most container and TTL znodes deleted per minute

* may also be spelled with a zookeeper. prefix (the Java system property name),
  e.g. zookeeper.snapCount or zookeeper.jute.maxbuffer.

TLS ON THE CLIENT PORT (docs/operators.md)
secureClientPort=PORT            (none)         a TLS-only client port; without clientPort, the only one
secureClientPortAddress=IP       0.0.0.0        address of the TLS port
client.portUnification=BOOL    * false          clientPort takes TLS and plaintext clients alike
ssl.keyStore.location=FILE     * (none)         the server's key and certificate: .pem, .p12 or .jks
ssl.keyStore.password=SECRET   * (empty)        also ssl.keyStore.passwordPath=FILE
ssl.keyStore.type=TYPE         * by extension   PEM, PKCS12 or JKS
ssl.trustStore.location/password/passwordPath/type
                               * (none)         certificates that may sign client certificates
ssl.clientAuth=none|want|need  * need           ask clients for a certificate; need refuses those without
ssl.protocol=NAME              * TLSv1.3        the protocol when ssl.enabledProtocols is unset
ssl.enabledProtocols=LIST      * ssl.protocol   TLSv1.2 and/or TLSv1.3
ssl.ciphersuites=LIST          * all of rustls  Java (IANA) names; CBC suites are not offered
X509AuthenticationProvider.superUser=DN
                               * (unset)        a certificate subject that is super
Changed store files are picked up by the next handshake (client.certReload is implied).
sslQuorum=BOOL                   false          mutual TLS between ensemble members, with
                                                ssl.quorum.keyStore.* and ssl.quorum.trustStore.* (required),
                                                ssl.quorum.hostnameVerification (default true), .protocol, ...

SASL AND AUTHENTICATION (docs/operators.md)
jaasLoginFile=FILE               (none)         JAAS file with the Server section's DIGEST-MD5 users; also read
                                                from -Djava.security.auth.login.config=FILE in SERVER_JVMFLAGS
sasl.serverconfig=NAME         * Server         the JAAS section with the server's users
authProvider.N=CLASS           * (none)         ...auth.SASLAuthenticationProvider registers the sasl scheme
enforce.auth.enabled=BOOL      * false          refuse requests from connections without an enforced scheme
enforce.auth.schemes=LIST      * (none)         the schemes enforce.auth.enabled asks for, e.g. sasl,digest
sessionRequireClientSASLAuth=BOOL
                               * false          same as enforcing the sasl scheme
superUser=NAME                 * (none)         a SASL user that is super (also superUser.N)
SASLAuthenticationProvider.superPassword=SECRET
                               * (none)         the SASL user super's password
allowSaslFailedClients=BOOL    * false          keep a connection whose SASL failed (unless SASL is enforced)

METRICS AND ADMINSERVER (docs/operators.md)
metricsProvider.className=CLASS  (default)      ...prometheus.PrometheusMetricsProvider serves /metrics
metricsProvider.httpHost=IP      0.0.0.0        address of the Prometheus endpoint
metricsProvider.httpPort=PORT    7000           port of the Prometheus endpoint
admin.enableServer=BOOL        * false          the AdminServer (ZooKeeper 3.9's default is true)
admin.serverAddress=IP         * 0.0.0.0        its address
admin.serverPort=PORT          * 8080           its port
admin.commandURL=PATH          * /commands      its commands' base path
admin.forceHttps=BOOL          * false          HTTPS only, with the ssl.quorum.* stores
admin.portUnification=BOOL     * false          HTTPS and HTTP on the one port
admin.needClientAuth=BOOL      * false          HTTPS clients need a certificate ssl.quorum.trustStore trusts

OTHER ZOOKEEPER KEYS
Other ZooKeeper 3.9 keys (quorum.auth.*, kerberos.*, ssl.quorum.context.*,
skipACL, ...) are accepted and ignored with a warning; no warning when the value is what
meerkat does anyway (e.g. electionAlg=3). Their values
are still checked where ZooKeeper checks them (booleans, integers, electionAlg,
peerType). group.x/weight.x (hierarchical quorums) are refused. Unknown keys produce a warning naming the key and line.
";
