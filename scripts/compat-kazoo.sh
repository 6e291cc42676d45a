#!/usr/bin/env bash
# kazoo (Python) with use_ssl against meerkat and Apache ZooKeeper 3.9.3 with the same TLS
# keys (compat/kazoo/tls_test.py). Installs kazoo (pinned) into a virtualenv under
# compat/kazoo/target the first time; needs python3 with venv, openssl and Java.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

command -v openssl >/dev/null || { echo "compat-kazoo: openssl is needed to make test certificates" >&2; exit 1; }
cargo build -p meerkat
bin="${CARGO_TARGET_DIR:-$root/target}/debug/meerkat"

venv="$root/compat/kazoo/target/venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import kazoo' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q 'kazoo==2.11.0'
fi
"$root/scripts/zookeeper.sh" classpath >/dev/null
exec "$venv/bin/python" "$root/compat/kazoo/tls_test.py" --meerkat "$bin" \
    --zookeeper-script "$root/scripts/zookeeper.sh"
