#!/usr/bin/env bash
# Runs every test of the project: the Rust workspace (unit, property, vector, crash and
# real-socket tests), the Zab simulator (random seeds and planted bugs), then the
# compatibility suites with go-zookeeper and with Apache ZooKeeper's own Java client against a
# real meerkat server (the Java suite also runs against a real ZooKeeper 3.9.3
# and compares the two).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check, clippy"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings

echo "== cargo test"
cargo test --workspace --all-targets

echo "== Zab in the deterministic simulator: 2,000 seeds and every planted bug, in durable and in diskless mode"
cargo clippy -p zab -p sim --all-targets --features sim/planted-bugs -- -D warnings
cargo test -p sim --features planted-bugs
./scripts/sim.sh --both --seeds 2000
./scripts/sim.sh --both --all-bugs

echo "== the simulator that runs the server's own replica and storage: 5,000 seeds and every planted bug, Zab's and the host's, in durable and in diskless mode"
./scripts/sim.sh --both --seeds 5000 --cluster
./scripts/sim.sh --both --all-bugs --seeds 1000 --cluster

echo "== go-zookeeper against meerkat"
./scripts/compat-go.sh

echo "== the ensemble fault scenarios against Apache ZooKeeper 3.9.3 (the reference for meerkat's runs above)"
cargo test -p meerkat --test ensemble zookeeper -- --ignored

echo "== the config-service example's end-to-end test against Apache ZooKeeper 3.9.3"
cargo test -p config-service --test config_service zookeeper -- --ignored

echo "== bench queue-vs-brokers, tiny, with Apache Kafka and ActiveMQ Artemis (from Maven Central)"
cargo test -p meerkat --test bench_smoke brokers -- --ignored

echo "== kazoo with use_ssl and with SASL DIGEST-MD5, and kazoo's own SASL/auth/use_ssl tests: meerkat and ZooKeeper 3.9.3 configured identically"
./scripts/compat-kazoo.sh

echo "== a real Prometheus server (Debian's package, installed if absent) scrapes meerkat"
prometheus_bin="$(./scripts/prometheus.sh)"
MEERKAT_PROMETHEUS="$prometheus_bin" cargo test -p meerkat --test prometheus -- --ignored

echo "== Apache ZooKeeper's Java client: meerkat and ZooKeeper 3.9.3 side by side"
./scripts/compat-java.sh
