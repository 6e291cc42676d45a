#!/usr/bin/env bash
# Differential compatibility suite (compat/java): the same scenarios run with
# Apache ZooKeeper's own Java client against a real ZooKeeper 3.9.3 server and
# against meerkat; their transcripts must match line by line.
#
# Needs JDK 17+, Maven and Rust. Maven fetches ZooKeeper and JUnit on first use.
# Extra arguments go to Maven, e.g.:
#   scripts/compat-java.sh -Dtest=WatchTest
#   scripts/compat-java.sh -Dtest='SessionTest#expiry'
# Transcripts: compat/java/target/transcripts/<scenario>.<server>.txt
# Server logs: compat/java/target/compat-servers/*/server.log
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
case "$target_dir" in /*) ;; *) target_dir="$repo/$target_dir" ;; esac

(cd "$repo" && cargo build -p meerkat)

cd "$repo/compat/java"
exec mvn -B --no-transfer-progress test -Dmeerkat.bin="$target_dir/debug/meerkat" "$@"
