#!/usr/bin/env python3
"""The disk's floor under a durable write, for docs/perf.md.

Latency: fdatasync after a 300-byte write into a preallocated file, with 1, 2 and 3 writers at
once (each its own file and thread), as a leader and two followers on one disk make them.
CPU: what one fdatasync costs the process, after a 1.5 kB append that grows the file against
one into preallocated space (one write a millisecond, the rate of a quiet server's batches).

    scripts/fsync-floor.py [DIR]      default: a temporary directory under the current one
"""

import os
import sys
import tempfile
import threading
import time

WRITES = 2000
SIZE = 16 << 20


def latencies(path, out):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.posix_fallocate(fd, 0, SIZE)
        os.fsync(fd)
        taken = []
        for i in range(WRITES):
            os.pwrite(fd, b"x" * 300, i * 300)
            started = time.perf_counter()
            os.fdatasync(fd)
            taken.append(time.perf_counter() - started)
        out.append(sorted(taken))
    finally:
        os.close(fd)


def cpu_per_fdatasync(path, preallocated, rounds=1000):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        if preallocated:
            os.posix_fallocate(fd, 0, SIZE)
        os.fsync(fd)
        idle = 0.0
        busy = 0.0
        for i in range(rounds):
            started = time.process_time()
            os.pwrite(fd, b"x" * 1500, i * 1500)
            time.sleep(0.001)
            idle += time.process_time() - started
        for i in range(rounds, 2 * rounds):
            started = time.process_time()
            os.pwrite(fd, b"x" * 1500, i * 1500)
            os.fdatasync(fd)
            time.sleep(0.001)
            busy += time.process_time() - started
        return (busy - idle) / rounds * 1e6
    finally:
        os.close(fd)


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else "."
    with tempfile.TemporaryDirectory(prefix="fsync-floor-", dir=base) as work:
        for writers in (1, 2, 3):
            out = []
            threads = [
                threading.Thread(target=latencies, args=(os.path.join(work, f"w{i}"), out))
                for i in range(writers)
            ]
            started = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.perf_counter() - started
            p50 = sorted(lat[len(lat) // 2] for lat in out)[len(out) // 2] * 1e6
            p90 = sorted(lat[len(lat) * 9 // 10] for lat in out)[len(out) // 2] * 1e6
            print(
                f"{writers} writer(s) at once: fdatasync p50 {p50:.0f} us, p90 {p90:.0f} us, "
                f"{writers * WRITES / elapsed:.0f} fdatasyncs/s in all"
            )
        for preallocated in (False, True):
            cpu = cpu_per_fdatasync(os.path.join(work, "cpu"), preallocated)
            kind = "into preallocated space" if preallocated else "growing the file"
            print(f"CPU per fdatasync after a 1.5 kB write {kind}: {cpu:.0f} us")


if __name__ == "__main__":
    main()
