#!/usr/bin/env bash
# kazoo (Python) against meerkat and Apache ZooKeeper 3.9.3 configured identically: with
# use_ssl and the same TLS keys (compat/kazoo/tls_test.py), and with SASL DIGEST-MD5 and the
# same JAAS file (compat/kazoo/sasl_test.py); then kazoo's own SASL, auth and use_ssl tests
# against both (compat/kazoo/kazoo_suite.py). Installs compat/kazoo/requirements.txt (pinned)
# into a virtualenv under compat/kazoo/target; needs python3 with venv, openssl and Java.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

command -v openssl >/dev/null || { echo "compat-kazoo: openssl is needed to make test certificates" >&2; exit 1; }
cargo build -p meerkat
bin="${CARGO_TARGET_DIR:-$root/target}/debug/meerkat"

venv="$root/compat/kazoo/target/venv"
requirements="$root/compat/kazoo/requirements.txt"
# (Re)install when the pinned list changed since the last install.
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$requirements" "$venv/requirements.txt"; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q -r "$requirements"
    cp "$requirements" "$venv/requirements.txt"
fi
classpath="$("$root/scripts/zookeeper.sh" classpath)"
status=0
for test in tls_test.py sasl_test.py; do
    "$venv/bin/python" "$root/compat/kazoo/$test" --meerkat "$bin" \
        --zookeeper-script "$root/scripts/zookeeper.sh" || status=1
done

# kazoo's own tests, from the installed kazoo package, with kazoo's own harness (a 3-member
# ensemble it configures itself; compat/kazoo/kazoo_suite.py starts meerkat or ZooKeeper in
# place of its java command): its SASL DIGEST-MD5 tests, its digest-auth tests and its use_ssl
# test, and its dynamic reconfiguration tests (kazoo's harness sets reconfigEnabled=true and a
# superDigest). Not its GSSAPI tests: meerkat has no Kerberos (docs/operators.md).
# KAZOO_OWN_TESTS="test_client.py ..." runs other modules of kazoo's suite instead (all of
# test_client.py: about 90 s against ZooKeeper, 50 s against meerkat).
tests="$("$venv/bin/python" -c 'import kazoo.tests, os; print(os.path.dirname(kazoo.tests.__file__))')"
selection=(
    "$tests/test_sasl.py::TestLegacySASLDigestAuthentication"
    "$tests/test_sasl.py::TestSASLDigestAuthentication"
    "$tests/test_client.py::TestAuthentication"
    "$tests/test_client.py::TestSSLClient"
    "$tests/test_client.py::TestReconfig"
)
if [ -n "${KAZOO_OWN_TESTS:-}" ]; then
    selection=()
    for t in $KAZOO_OWN_TESTS; do selection+=("$tests/$t"); done
fi
for server in zookeeper meerkat; do
    echo "== kazoo's own tests against $server"
    KAZOO_SUITE_SERVER="$server" MEERKAT_BIN="$bin" ZOOKEEPER_CLASSPATH="$classpath" \
        ZOOKEEPER_VERSION=3.9.3 PYTHONPATH="$root/compat/kazoo" \
        "$venv/bin/python" -m pytest -p kazoo_suite -p no:cacheprovider -q -rA \
        --timeout 120 -W ignore::DeprecationWarning "${selection[@]}" || status=1
done
exit "$status"
