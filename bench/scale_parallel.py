#!/usr/bin/env python3
"""../shared/tools/scale_trace.py on every core: the same trace, sooner.

    bench/scale_parallel.py IN.pt.trace.json.gz OUT.pt.trace.json.gz --copies K [--jobs N]

Writes the same JSON text as scale_trace.py (byte for byte once
decompressed: same copies, shifts, id offsets and number forms), as one gzip
member per slice of copies, compressed side by side by N processes (default:
every core) and concatenated; gzip readers (zcat, flate2's MultiGzDecoder)
read the members as one stream. The 4.60 GB trace takes minutes with
scale_trace.py, so a lent machine's time went into building it; for
bench/ledger.sh: SCALE=bench/scale_parallel.py. Same arguments, so either
script serves.
"""
import argparse
import gzip
import json
import os
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from decimal import Decimal

NUM = re.compile(r'"@@(-?\d+(?:\.\d+)?)"')
ID_KEYS = ("External id", "correlation", "Python id", "Python parent id")


def fmt_us(d):
    return format(d.quantize(Decimal("0.001")), "f")


def load(src):
    op = gzip.open if src.endswith(".gz") else open
    with op(src, "rt") as f:
        doc = json.load(f, parse_float=Decimal)
    ev = doc.pop("traceEvents")
    ts = [e["ts"] for e in ev if isinstance(e.get("ts"), Decimal) and e.get("ph") == "X"]
    ends = [e["ts"] + e.get("dur", 0) for e in ev if isinstance(e.get("ts"), Decimal) and e.get("ph") == "X"]
    span = (max(ends) - min(ts)) + Decimal(1000)
    max_id = 0
    for e in ev:
        for k in ID_KEYS:
            v = e.get("args", {}).get(k)
            if isinstance(v, int):
                max_id = max(max_id, v)
        if isinstance(e.get("id"), int):
            max_id = max(max_id, e["id"])
    return doc, ev, span, max_id + 1


def event_text(e, c, shift, stride):
    """One event of copy c, as scale_trace.py writes it (None: left out)."""
    if e.get("ph") == "M" and c > 0:
        return None
    e2 = dict(e)
    if isinstance(e2.get("ts"), Decimal):
        e2["ts"] = "@@" + fmt_us(e2["ts"] + shift)
    if isinstance(e2.get("dur"), Decimal):
        e2["dur"] = "@@" + fmt_us(e2["dur"])
    if isinstance(e2.get("id"), int):
        e2["id"] = e2["id"] + stride * c
    if "args" in e2:
        args = dict(e2["args"])
        for k in ID_KEYS:
            if isinstance(args.get(k), int) and args[k] > 0:
                args[k] = args[k] + stride * c
        e2["args"] = args
    return NUM.sub(r"\1", json.dumps(e2, default=lambda d: "@@" + fmt_us(d)))


def slice_member(args):
    """Copies [lo, hi) as one gzip member in `part`; copy 0's first event
    has no separator before it (scale_trace.py's `first`)."""
    src, lo, hi, part = args
    _, ev, span, stride = load(src)
    first = lo == 0
    with gzip.open(part, "wt", compresslevel=6) as out:
        for c in range(lo, hi):
            shift = span * c
            for e in ev:
                s = event_text(e, c, shift, stride)
                if s is None:
                    continue
                out.write(("" if first else ",\n") + "  " + s)
                first = False
    return part


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--copies", type=int, required=True)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    doc, _, _, _ = load(a.src)
    jobs = max(1, min(a.jobs, a.copies))
    cuts = [a.copies * k // jobs for k in range(jobs + 1)]
    parts = [f"{a.dst}.part{k}" for k in range(jobs)]
    head = "{" + "".join(json.dumps(k) + ": " + json.dumps(v, default=str) + ", " for k, v in doc.items())
    head += '"traceEvents": [\n'
    try:
        with ProcessPoolExecutor(jobs) as pool:
            list(pool.map(slice_member, [(a.src, cuts[k], cuts[k + 1], parts[k]) for k in range(jobs)]))
        with open(a.dst, "wb") as out:
            out.write(gzip.compress(head.encode(), compresslevel=6))
            for p in parts:
                with open(p, "rb") as f:
                    while chunk := f.read(1 << 20):
                        out.write(chunk)
            out.write(gzip.compress(b"\n]}\n", compresslevel=6))
    finally:
        for p in parts:
            if os.path.exists(p):
                os.remove(p)


if __name__ == "__main__":
    sys.exit(main())
