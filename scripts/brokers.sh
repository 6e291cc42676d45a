#!/usr/bin/env bash
# The message brokers `meerkat bench queue-vs-brokers` compares the znode queue with (thesis
# Fig. 5.7), and the job that drives them, all from Maven Central (compat/brokers).
#
#   scripts/brokers.sh classpath                 fetch the jars and build the job once, print
#                                                the class path
#   scripts/brokers.sh kafka-format ID CONFIG    format a KRaft node's log dirs for cluster ID
#   scripts/brokers.sh kafka-run CONFIG          run a Kafka node in the foreground (exec: the
#                                                caller's pid is the JVM's pid)
#   scripts/brokers.sh artemis-run BROKER_XML    run an ActiveMQ Artemis broker (ArtemisNode)
#                                                in the foreground (exec, as kafka-run)
#   scripts/brokers.sh job ARGS...               run the producer/consumer job (QueueJob)
#
# Logs: warnings and errors, to stderr. Heap per JVM: BROKER_HEAP (default 512m).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$repo/compat/brokers"
lib="$dir/target/lib"
classes="$dir/target/classes"

classpath() {
    # Rebuilt when a source or the pom is newer than the last build.
    if [ ! -f "$lib/.complete" ] || [ -n "$(find "$dir/src" "$dir/pom.xml" -newer "$lib/.complete" -print -quit)" ]; then
        (cd "$dir" && mvn -B -q --no-transfer-progress package dependency:copy-dependencies \
            -DincludeScope=runtime -DoutputDirectory="$lib" >&2)
        touch "$lib/.complete"
    fi
    local cp="$classes"
    for jar in "$lib"/*.jar; do cp="$cp:$jar"; done
    printf '%s\n' "$cp"
}

java_with() {
    local cp
    cp="$(classpath)"
    exec java -Xmx"${BROKER_HEAP:-512m}" -Dlog4j.configuration="file:$classes/log4j.properties" \
        -cp "$cp" "$@"
}

case "${1:-}" in
    classpath)
        classpath
        ;;
    kafka-format)
        java_with kafka.tools.StorageTool format --ignore-formatted \
            -t "${2:?usage: brokers.sh kafka-format ID CONFIG}" -c "${3:?usage: brokers.sh kafka-format ID CONFIG}"
        ;;
    kafka-run)
        java_with kafka.Kafka "${2:?usage: brokers.sh kafka-run CONFIG}"
        ;;
    artemis-run)
        java_with meerkat.ArtemisNode "${2:?usage: brokers.sh artemis-run BROKER_XML}"
        ;;
    job)
        shift
        java_with meerkat.QueueJob "$@"
        ;;
    *)
        echo "usage: $0 classpath | kafka-format ID CONFIG | kafka-run CONFIG | artemis-run BROKER_XML | job ARGS..." >&2
        exit 2
        ;;
esac
