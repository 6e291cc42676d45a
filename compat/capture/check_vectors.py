#!/usr/bin/env python3
"""Sanity-checks ZooKeeper wire vector files and prints frame counts per op.

Each non-comment line is `C|S <op> <hex>`: hex must be valid lowercase, a
request's header type must equal <op>, a reply's xid must match an earlier
request with that op, events must carry xid -1, and the first frame in each
direction must be the `connect` record.
"""
import collections
import pathlib
import re
import struct
import sys

HEX = re.compile(r"^(?:[0-9a-f]{2})*$")
SPECIAL = {-2: "11", -4: "100"}


def check_file(path, totals):
    errors = []
    counts = collections.Counter()
    xid_op = {}
    first = {"C": True, "S": True}
    for no, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split(" ")
        where = f"{path.name}:{no}"
        if len(parts) != 3 or parts[0] not in ("C", "S"):
            errors.append(f"{where}: malformed line")
            continue
        d, op, hx = parts
        if not HEX.match(hx):
            errors.append(f"{where}: bad hex")
            continue
        b = bytes.fromhex(hx)
        counts[f"{d} {op}"] += 1
        totals[f"{d} {op}"] += 1
        if first[d]:
            first[d] = False
            if op != "connect":
                errors.append(f"{where}: first {d} frame is not connect")
            # ConnectRequest: 4+8+4+8+(4+16)[+1]; ConnectResponse: 4+4+8+(4+16)[+1]
            lens = (44, 45) if d == "C" else (36, 37)
            if len(b) not in lens:
                errors.append(f"{where}: connect record has unexpected length {len(b)}")
            continue
        if op == "connect":
            errors.append(f"{where}: connect after the first frame")
            continue
        if d == "C":
            if len(b) < 8:
                errors.append(f"{where}: request shorter than its header")
                continue
            xid, typ = struct.unpack(">ii", b[:8])
            if str(typ) != op:
                errors.append(f"{where}: header type {typ} != op {op}")
            xid_op[xid] = op
            if xid in SPECIAL and SPECIAL[xid] != op:
                errors.append(f"{where}: xid {xid} used for op {op}")
            if xid == -8 and op not in ("101", "105"):
                errors.append(f"{where}: xid -8 used for op {op}")
        else:
            if len(b) < 16:
                errors.append(f"{where}: reply shorter than its header")
                continue
            xid, _zxid, err = struct.unpack(">iqi", b[:16])
            if op == "event":
                if xid != -1:
                    errors.append(f"{where}: event with xid {xid}")
                if err != 0 or len(b) < 28:
                    errors.append(f"{where}: malformed event")
            elif xid_op.get(xid) != op:
                errors.append(f"{where}: reply xid {xid} does not match a request with op {op}")
            elif err != 0 and len(b) != 16:
                errors.append(f"{where}: error reply carries a body")
    return counts, errors


def main():
    d = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    files = sorted(d.glob("*.txt"))
    if not files:
        print(f"no vector files in {d}")
        return 1
    totals = collections.Counter()
    all_errors = []
    for f in files:
        counts, errors = check_file(f, totals)
        all_errors += errors
        summary = ", ".join(f"{k}:{v}" for k, v in sorted(counts.items(), key=lambda kv: kv[0]))
        print(f"{f.name}: {sum(counts.values())} frames [{summary}]")
    print("totals:", ", ".join(f"{k}:{v}" for k, v in sorted(totals.items())))
    for e in all_errors:
        print("ERROR", e)
    print(f"{len(files) - len({e.split(':')[0] for e in all_errors})} passed, "
          f"{len({e.split(':')[0] for e in all_errors})} failed")
    return 1 if all_errors else 0


if __name__ == "__main__":
    sys.exit(main())
