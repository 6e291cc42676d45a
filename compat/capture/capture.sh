#!/usr/bin/env bash
# Re-captures the ZooKeeper wire test vectors in crates/proto/tests/vectors/.
# Needs a JDK (17+) and Maven; Maven fetches ZooKeeper 3.9.3 and its dependencies.
# Usage: compat/capture/capture.sh [output-dir]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:-$repo/crates/proto/tests/vectors}"
cd "$here"
mvn -B -q -DskipTests package
mvn -B -q dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
# Stale captures from an earlier run would mix with the new ones.
mkdir -p "$out"
find "$out" -maxdepth 1 -name '*.txt' -delete
timeout 300 java -cp "target/classes:$(cat target/classpath.txt)" meerkat.capture.Capture "$out"
python3 "$here/check_vectors.py" "$out"
