#!/usr/bin/env bash
# Builds meerkat and runs the go-zookeeper compatibility tests against it.
# The tests start and stop the server themselves (see compat/go).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

cargo build -p meerkat
bin="${CARGO_TARGET_DIR:-$root/target}/debug/meerkat"
if [ ! -x "$bin" ]; then
    echo "compat-go: $bin was not built" >&2
    exit 1
fi

cd "$root/compat/go"
# -count=1: never reuse cached results, the server binary may have changed.
# ZK_SCRIPT: the failover test prints Apache ZooKeeper's run beside meerkat's.
MEERKAT_BIN="$bin" ZK_SCRIPT="$root/scripts/zookeeper.sh" go test -count=1 -timeout 20m ./...
