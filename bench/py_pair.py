#!/usr/bin/env python3
"""The baseline a user writes: json.load the whole trace, then pair CPU
user_annotation events with their gpu_user_annotation twins by External id.

    python3 bench/py_pair.py TRACE.pt.trace.json[.gz]

Prints, per step name, the contexts, pairs and median GPU span (ms).
"""
import gzip
import json
import statistics
import sys
from collections import defaultdict


def main(path):
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    with (gzip.open(path, "rb") if gz else open(path, "rb")) as f:
        doc = json.load(f)
    cpu = []
    gpu = defaultdict(list)
    for e in doc["traceEvents"]:
        if e.get("ph") != "X":
            continue
        cat = e.get("cat")
        if cat == "user_annotation":
            cpu.append(e)
        elif cat == "gpu_user_annotation":
            ext = e.get("args", {}).get("External id")
            gpu[(e["name"], ext)].append(e)
    spans = defaultdict(list)
    contexts = defaultdict(int)
    for e in cpu:
        contexts[e["name"]] += 1
        g = gpu.get((e["name"], e.get("args", {}).get("External id")))
        if g:
            start = min(x["ts"] for x in g)
            end = max(x["ts"] + x.get("dur", 0) for x in g)
            spans[e["name"]].append(end - start)
    for name, n in sorted(contexts.items(), key=lambda kv: -kv[1]):
        s = spans.get(name, [])
        med = statistics.median(s) / 1000 if s else float("nan")
        print(f"{name}\tcontexts {n}\tpairs {len(s)}\tGPU span median {med:.3f} ms")


if __name__ == "__main__":
    main(sys.argv[1])
