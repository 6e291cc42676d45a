#!/usr/bin/env bash
# Re-captures the ZooKeeper wire test vectors in crates/proto/tests/vectors/.
# Needs a JDK (17+), Maven and Python 3; Maven fetches ZooKeeper 3.9.3 and its
# dependencies. The old vectors are replaced only when the capture and the
# check both succeed.
# Usage: compat/capture/capture.sh [output-dir]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:-$repo/crates/proto/tests/vectors}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$here"
mvn -B -q -DskipTests package
mvn -B -q dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
timeout 300 java -cp "target/classes:$(cat target/classpath.txt)" meerkat.capture.Capture "$tmp"
python3 "$here/check_vectors.py" "$tmp"
mkdir -p "$out"
find "$out" -maxdepth 1 -name '*.txt' -delete
cp "$tmp"/*.txt "$out"/
echo "vectors written to $out"
