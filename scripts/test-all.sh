#!/usr/bin/env bash
# Runs every test of the project: Rust unit/property/integration tests, then the compatibility
# suites with Apache ZooKeeper's Java client and go-zookeeper against a real meerkat server.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --all-targets
