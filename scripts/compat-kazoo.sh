#!/usr/bin/env bash
# kazoo (Python) against meerkat and Apache ZooKeeper 3.9.3 configured identically: with
# use_ssl and the same TLS keys (compat/kazoo/tls_test.py), and with SASL DIGEST-MD5 and the
# same JAAS file (compat/kazoo/sasl_test.py). Installs kazoo and pure-sasl (pinned) into a
# virtualenv under compat/kazoo/target the first time; needs python3 with venv, openssl and Java.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

command -v openssl >/dev/null || { echo "compat-kazoo: openssl is needed to make test certificates" >&2; exit 1; }
cargo build -p meerkat
bin="${CARGO_TARGET_DIR:-$root/target}/debug/meerkat"

venv="$root/compat/kazoo/target/venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import kazoo, puresasl' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q 'kazoo==2.11.0' 'pure-sasl==0.6.2'
fi
"$root/scripts/zookeeper.sh" classpath >/dev/null
status=0
for test in tls_test.py sasl_test.py; do
    "$venv/bin/python" "$root/compat/kazoo/$test" --meerkat "$bin" \
        --zookeeper-script "$root/scripts/zookeeper.sh" || status=1
done
exit "$status"
