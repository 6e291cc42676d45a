#!/usr/bin/env bash
# Deterministic simulation of meerkat ensembles (crates/sim): the real zab + tree code over a
# simulated network, clock and disk with faults drawn from each seed.
#
#   scripts/sim.sh --seeds N [--first S] [--servers K] [--bug NAME]   run N seeds
#   scripts/sim.sh --seed S [--servers K] [--bug NAME]                replay one seed, readable trace
#   scripts/sim.sh --all-bugs [--seeds N]                             every planted bug must be caught
#
# The last line is `sim: seeds=N failures=F`; the exit code is non-zero when F > 0 (for
# --all-bugs: when some planted bug was NOT caught). Release build; respects CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."

target_dir="${CARGO_TARGET_DIR:-target}"
cargo build --quiet --release -p sim --features planted-bugs >&2
bin="$target_dir/release/sim"

if [[ "${1:-}" == "--all-bugs" ]]; then
    shift
    seeds=2000
    if [[ "${1:-}" == "--seeds" ]]; then seeds="$2"; shift 2; fi
    missed=0
    total=0
    for bug in ack-before-persist commit-without-quorum skip-truncate newleader-before-durable vote-after-amnesia; do
        total=$((total + 1))
        # --stop-at-first: one failing seed proves the simulator catches the bug.
        if out=$("$bin" --seeds "$seeds" --bug "$bug" --stop-at-first "$@"); then
            echo "bug $bug: NOT caught in $seeds seeds"
            missed=$((missed + 1))
        else
            first=$(grep -m1 -o 'FAIL seed [0-9]*' <<<"$out" | grep -o '[0-9]*$' || true)
            echo "bug $bug: caught (first failing seed ${first:-?})"
        fi
    done
    echo "sim: bugs=$total missed=$missed"
    [[ $missed -eq 0 ]]
    exit
fi

exec "$bin" "$@"
