#!/usr/bin/env python3
"""Independent figures asserted by tests/it/attribution.rs (stdlib only; not reference.py).

Run from the repository root: python3 scripts/check_attribution.py"""
# Independent check (stdlib only, no reference.py): kernels attributed to selected contexts.
import gzip, json, sys, re
from decimal import Decimal
def ns(v): return int(Decimal(str(v)) * 1000)
def load(p):
    d = json.load(gzip.open(p), parse_float=Decimal)
    return d["traceEvents"] if isinstance(d, dict) else d
def run(path, pred, scope):
    ev = [e for e in load(path) if e.get("ph") == "X"]
    ctx = [e for e in ev if e.get("cat") == "user_annotation" and pred(e["name"])]
    launch = {}
    for e in ev:
        if e.get("cat") in ("cuda_runtime", "cuda_driver", "Runtime") and type((e.get("args") or {}).get("correlation")) is int:
            launch.setdefault(e["args"]["correlation"], e)
    kern = {}
    for e in ev:
        if e.get("cat") in ("kernel", "Kernel") and type((e.get("args") or {}).get("correlation")) is int:
            kern.setdefault(e["args"]["correlation"], []).append(e)
    per = [0] * len(ctx)
    graphs = [0] * len(ctx)
    for corr, l in launch.items():
        ks = kern.get(corr)
        if not ks: continue
        t = ns(l["ts"])
        best = None
        for i, c in enumerate(ctx):
            sc = scope(c["name"])
            if c["pid"] != l["pid"] or (sc == "thread" and c["tid"] != l["tid"]): continue
            s, e = ns(c["ts"]), ns(c["ts"]) + ns(c.get("dur", 0))
            if s <= t < e:
                key = (s, -e, i)
                if best is None or key > best[0]: best = (key, i)
        if best:
            per[best[1]] += len(ks)
            graphs[best[1]] += l["name"].startswith(("cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch"))
    return sum(per), sum(graphs), per
auto = lambda n: "process" if n.startswith("ProfilerStep#") else "thread"
th = lambda n: "thread"
print("sglang .", run("tests/data/tracelens_sglang_decode.json.gz", lambda n: True, auto)[:2])
import glob
for d in ("text_ar", "text_mtp"):
    p = glob.glob("tests/data/compiled/%s/*.gz" % d)[0]
    print(d, ".", run(p, lambda n: True, auto)[:2])
r = run("tests/data/hta_nccl_data.json.gz", lambda n: n.startswith("ProfilerStep#"), auto)
print("nccl ProfilerStep auto", r)
r = run("tests/data/hta_nccl_data.json.gz", lambda n: n.startswith("ProfilerStep#"), th)
print("nccl ProfilerStep thread", r)
from statistics import median
p = glob.glob("sample_traces/text_ar/*.gz")[0]
ev = [e for e in load(p) if e.get("ph") == "X"]
S = "execute_context_0(0)_generation_1(1)"
ctx = [e for e in ev if e.get("cat") == "user_annotation" and e["name"] == S]
acts = {}
for e in ev:
    if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and type((e.get("args") or {}).get("correlation")) is int:
        acts.setdefault(e["args"]["correlation"], []).append(e)
ls = [e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver") and type((e.get("args") or {}).get("correlation")) is int]
meds, olds = [], []
for c in ctx:
    s, en = ns(c["ts"]), ns(c["ts"]) + ns(c["dur"])
    mine = [l for l in ls if l["tid"] == c["tid"] and l["pid"] == c["pid"] and s <= ns(l["ts"]) < en and l["args"]["correlation"] in acts]
    q = [max(0, min(ns(a["ts"]) for a in acts[l["args"]["correlation"]]) - ns(l["ts"]) - ns(l["dur"])) for l in mine]
    o = [ns(a["ts"]) - ns(l["ts"]) for l in mine for a in acts[l["args"]["correlation"]]]
    meds.append(median(q)); olds.append(median(o))
print("text_ar queue delay median of medians ns", median(meds), "old", median(olds), len(ctx))
