#!/usr/bin/env bash
# One synchronous client's creates through the leader of three servers, as the kernel sees them:
# records 0.2 s of system calls and scheduler events of the three servers and the load
# generator during `meerkat bench sync-create --servers 3` (its 1-client phase), then prints a
# stretch of it with the threads named: C (the client), L (the leader), F1 and F2. For
# docs/perf.md (Issue 19, tenth pass). Needs perf (Debian: linux-perf) and a release build.
#
#   scripts/one-write-timeline.sh [TARGET] [EVENTS]   default meerkat-diskless, 150 events
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
target="${1:-meerkat-diskless}"
events="${2:-150}"
bin="${CARGO_TARGET_DIR:-$root/target}/release/meerkat"
command -v perf >/dev/null || { echo "one-write-timeline: perf is needed (apt-get install linux-perf)" >&2; exit 1; }
out="$(mktemp -d)"
bench_pid=""
cleanup() {
    [ -n "$bench_pid" ] && kill "$bench_pid" 2>/dev/null || true
    rm -rf "$out"
}
trap cleanup EXIT

"$bin" bench sync-create --servers 3 --target "$target" --out "$out/results" \
    --work-dir "$out/work" > "$out/bench.log" 2>&1 &
bench_pid=$!
generator=$bench_pid
servers=""
for _ in $(seq 1 300); do
    servers="$(pgrep -f "$out/work/sync-create/1-client/$target/server" | paste -sd, || true)"
    [ "$(echo "$servers" | tr ',' '\n' | grep -c .)" -ge 3 ] && break
    sleep 0.1
done
[ -n "$servers" ] || { echo "one-write-timeline: the servers did not start" >&2; cat "$out/bench.log" >&2; exit 1; }
sleep 2 # past the warm-up
perf record -q -m 64M -o "$out/trace.data" \
    -e 'raw_syscalls:sys_enter,raw_syscalls:sys_exit,sched:sched_switch,sched:sched_wakeup' \
    -p "$servers,$bench_pid" -- sleep 0.2 > /dev/null 2>&1
perf script -i "$out/trace.data" -F comm,pid,tid,cpu,time,event,trace > "$out/trace.txt" 2>/dev/null
wait "$bench_pid" || true
bench_pid=""
grep -E "1 client .*p50" "$out/bench.log" || true

python3 - "$out/trace.txt" "$generator" "$events" <<'PY'
import collections, re, sys

path, generator, events = sys.argv[1], sys.argv[2], int(sys.argv[3])
line_re = re.compile(r"\s*(\S.*?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)")
rows = [m.groups() for m in map(line_re.match, open(path)) if m]
# Each process's busiest thread is the one that matters (one runtime thread a server here);
# of the servers, the leader sends the most (proposals, replies, commits).
busiest = collections.Counter()
sends = collections.Counter()
for comm, pid, tid, cpu, ts, ev, tr in rows:
    busiest[(pid, tid)] += 1
    if ev == "raw_syscalls:sys_enter" and tr.split()[1] == "44":
        sends[pid] += 1
main = {}
for (pid, tid), _ in busiest.most_common():
    main.setdefault(pid, tid)
servers = sorted((p for p in main if p != generator), key=lambda p: -sends[p])
names = {main[generator]: "C ", main[servers[0]]: "L "}
for i, pid in enumerate(servers[1:3]):
    names[main[pid]] = f"F{i + 1}"
calls = {"0": "read", "1": "write", "44": "sendto", "45": "recvfrom", "232": "epoll_wait",
         "202": "futex", "20": "writev", "281": "epoll_pwait"}
out, t0 = [], None
for comm, pid, tid, cpu, ts, ev, tr in rows[len(rows) // 2:]:
    who = names.get(tid)
    t = float(ts) * 1e6
    if ev == "raw_syscalls:sys_enter" and who:
        text = f"{who} > {calls.get(tr.split()[1], tr.split()[1])}"
    elif ev == "raw_syscalls:sys_exit" and who:
        text = f"{who} < {calls.get(tr.split()[1], tr.split()[1])} = {tr.split('=')[-1].strip()}"
    elif ev == "sched:sched_switch":
        m = re.search(r"prev_pid=(\d+).*prev_state=(\S+) ==> next_comm=(\S+) next_pid=(\d+)", tr)
        if not (names.get(m.group(1)) or names.get(m.group(4))):
            continue
        text = f"cpu{int(cpu)} {names.get(m.group(1), m.group(1))}({m.group(2)}) -> {names.get(m.group(4), m.group(3))}"
    elif ev == "sched:sched_wakeup" and who:
        woken = re.search(r"pid=(\d+)", tr).group(1)
        text = f"{who} wakes {names.get(woken, woken)}"
    else:
        continue
    t0 = t if t0 is None else t0
    out.append(f"{t - t0:9.1f} µs  [cpu{int(cpu)}] {text}")
    if len(out) >= events:
        break
print("\n".join(out))
PY
