#!/usr/bin/env bash
# Apache ZooKeeper 3.9.3, the reference server, for tests and benchmarks.
#
#   scripts/zookeeper.sh classpath        fetch the jars once (Maven), print the class path
#   scripts/zookeeper.sh run ZOO_CFG      run a standalone or quorum server in the foreground
#                                         (exec: the caller's pid is the JVM's pid)
#
# Standalone if ZOO_CFG has no server.N lines, a quorum peer otherwise. The AdminServer is off;
# logs go to stderr at INFO (set ZK_LOG_LEVEL to change). SERVER_JVMFLAGS is passed to the JVM
# unquoted, as zkServer.sh passes it (e.g. -Djava.security.auth.login.config=JAAS_FILE).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$repo/compat/zookeeper"
lib="$dir/target/lib"

classpath() {
    if [ ! -f "$lib/.complete" ]; then
        (cd "$dir" && mvn -B -q --no-transfer-progress dependency:copy-dependencies \
            -DoutputDirectory="$lib" >&2)
        touch "$lib/.complete"
    fi
    local cp=""
    for jar in "$lib"/*.jar; do cp="${cp:+$cp:}$jar"; done
    printf '%s\n' "$cp"
}

case "${1:-}" in
    classpath)
        classpath
        ;;
    run)
        cfg="${2:?usage: zookeeper.sh run ZOO_CFG}"
        cp="$(classpath)"
        main=org.apache.zookeeper.server.ZooKeeperServerMain
        if grep -q '^server\.[0-9]' "$cfg"; then main=org.apache.zookeeper.server.quorum.QuorumPeerMain; fi
        # shellcheck disable=SC2086 # split into words, as zkServer.sh does
        exec java -Xmx${ZK_HEAP:-1g} ${SERVER_JVMFLAGS:-} \
            -Dzookeeper.admin.enableServer=false \
            -Dorg.slf4j.simpleLogger.defaultLogLevel="${ZK_LOG_LEVEL:-info}" \
            -Dorg.slf4j.simpleLogger.logFile=System.err \
            -cp "$cp" "$main" "$cfg"
        ;;
    *)
        echo "usage: $0 classpath | run ZOO_CFG" >&2
        exit 2
        ;;
esac
