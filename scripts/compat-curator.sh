#!/usr/bin/env bash
# Apache Curator (InterProcessMutex) in a small process, for the lock interop test
# (crates/client/tests/curator_interop.rs).
#
#   scripts/compat-curator.sh build                  fetch Curator (Maven) and compile, once
#   scripts/compat-curator.sh run CONNECT LOCK_PATH  run the lock holder (exec: pid is the JVM's)
#   scripts/compat-curator.sh latch CONNECT PATH ID  run a LeaderLatch candidate (exec, likewise)
#   scripts/compat-curator.sh classpath              print the class path (Curator, ZooKeeper 3.9.3
#                                                    client and zkCli), e.g. for ZooKeeperMain
#
# Both read commands on stdin and print what happens (see the classes' docs).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$repo/compat/curator"

build() {
    # One build at a time: tests start several holders at once.
    mkdir -p "$dir/target"
    exec 9>"$dir/target/.build.lock"
    flock 9
    # Rebuilt when the pom or a source file changed since the last build.
    if [ ! -f "$dir/target/.complete" ] || [ "$dir/pom.xml" -nt "$dir/target/.complete" ] \
        || [ -n "$(find "$dir/src" -newer "$dir/target/.complete" -print -quit)" ]; then
        rm -rf "$dir/target/lib"
        (cd "$dir" && mvn -B -q --no-transfer-progress package dependency:copy-dependencies \
            -DoutputDirectory="$dir/target/lib" >&2)
        touch "$dir/target/.complete"
    fi
    flock -u 9
}

case "${1:-}" in
    build)
        build
        ;;
    classpath)
        build
        cp="$dir/target/classes"
        for jar in "$dir"/target/lib/*.jar; do cp="$cp:$jar"; done
        printf '%s\n' "$cp"
        ;;
    run | latch)
        build
        cp="$dir/target/classes"
        for jar in "$dir"/target/lib/*.jar; do cp="$cp:$jar"; done
        main=meerkat.compat.CuratorLock
        if [ "$1" = latch ]; then main=meerkat.compat.CuratorLatch; fi
        shift
        : "${1:?connect string}" "${2:?path}"
        exec java -Xmx256m -Dorg.slf4j.simpleLogger.defaultLogLevel=error \
            -Dorg.slf4j.simpleLogger.logFile=System.err \
            -cp "$cp" "$main" "$@"
        ;;
    *)
        echo "usage: $0 build | classpath | run CONNECT LOCK_PATH | latch CONNECT PATH ID" >&2
        exit 2
        ;;
esac
