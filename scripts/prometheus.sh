#!/usr/bin/env bash
# A real Prometheus server for the metrics test: Debian's `prometheus` package, installed with
# apt-get when it is absent. Prints the binary's path. Exits non-zero, saying why, when it
# cannot be had: the test that needs it then fails instead of passing without it.
set -euo pipefail

bin="$(command -v prometheus || true)"
if [ -z "$bin" ]; then
    echo "prometheus is not installed; installing Debian's package" >&2
    if [ "$(id -u)" -ne 0 ]; then
        echo "cannot install prometheus: apt-get needs root (install the 'prometheus' package)" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2 || true
    # --no-install-recommends: the server binary only, no node exporter; the package's service
    # is not started here (policy-rc.d may forbid it; the test runs its own server).
    apt-get install -y -q --no-install-recommends prometheus >&2
    bin="$(command -v prometheus || true)"
fi
if [ -z "$bin" ]; then
    echo "prometheus could not be installed" >&2
    exit 1
fi
printf '%s\n' "$bin"
