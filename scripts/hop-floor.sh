#!/usr/bin/env bash
# The floor of one synchronous request on this machine, for docs/perf.md: a server that does no
# work, in its own process, standalone and as the leader of three (scripts/hop-floor.c).
#
#   scripts/hop-floor.sh [REQUESTS]     default 50000 of each, after 2000 to warm up
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
requests="${1:-50000}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
gcc -O2 -Wall -Wextra -o "$out/hop-floor" "$here/hop-floor.c"
"$out/hop-floor" standalone "$requests"
"$out/hop-floor" leader "$requests"
