#!/usr/bin/env python3
"""Independent check of `ops`' graph figures by module path (issue 57), stdlib only.

For one run folder (a worker trace with `capture_traces/` beside it, vLLM's layout as in
sample_traces/text_graphs_{ar,mtp}/), apart from torchtrace's code:

- each capture region: the runtime/driver calls on the thread of a `cudaStreamBeginCapture`
  up to its `cudaStreamEndCapture`; its captured launches (kernel launches, async memcpy/memset)
  in start order, each with its module path: the `nn.Module: X` python_function events on
  the same thread that enclose the call, outermost first, joined by `/`; and its launcher:
  the innermost cpu_op enclosing the call;
- each replay: the GPU activities of a `cudaGraphLaunch` (same correlation) in start order;
  its region: the capture of its subsystem (`proposer.propose` around the launch: speculator,
  else decoder) whose batch size is the smallest captured one >= the step's scheduled
  tokens (speculator: the one region of as many launches), equal in count;
- the k-th activity's dur goes to the k-th captured launch's (subsystem, module) and
  (subsystem, launcher).

Prints JSON: completion tokens (the summary beside), totals per subsystem, per module path and
per launcher op (ns), for the tests to hold.

    python3 scripts/check_graph_modules.py sample_traces/text_graphs_mtp
"""

import glob
import gzip
import json
import os
import re
import sys
from collections import defaultdict

LAUNCH = re.compile(r"(Launch.*Kernel|Memcpy.*Async|Memset.*Async)")


def ns(x):
    """Decimal µs text (3 decimals) to integer ns, as the tools read it."""
    s = repr(x) if isinstance(x, float) else str(x)
    if "." in s:
        a, b = s.split(".")
        b = (b + "000")[:3]
        return int(a) * 1000 + (int(b) if not a.startswith("-") else -int(b))
    return int(s) * 1000


def load(path):
    with gzip.open(path, "rt") as f:
        return json.load(f)["traceEvents"]


def regions(path, detail):
    ev = load(path)
    runtime = [e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X"]
    mods = [e for e in ev if e.get("cat") == "python_function" and e["name"].startswith("nn.Module: ")]
    ops = [e for e in ev if e.get("cat") == "cpu_op"]
    out = []
    by_tid = defaultdict(list)
    for e in runtime:
        by_tid[e["tid"]].append(e)
    for tid, calls in by_tid.items():
        calls.sort(key=lambda e: ns(e["ts"]))
        cur = None
        for c in calls:
            if c["name"].endswith("StreamBeginCapture"):
                cur = []
            elif c["name"].endswith("StreamEndCapture"):
                if cur is not None:
                    out.append(cur)
                cur = None
            elif cur is not None and LAUNCH.search(c["name"]) and "GraphLaunch" not in c["name"]:
                ts, end = ns(c["ts"]), ns(c["ts"]) + ns(c["dur"])
                around = [m for m in mods if m["tid"] == tid and ns(m["ts"]) <= ts and end <= ns(m["ts"]) + ns(m["dur"])]
                around.sort(key=lambda m: (ns(m["ts"]), -ns(m["dur"])))
                path_ = "/".join(m["name"][len("nn.Module: "):] for m in around)
                inner = [o for o in ops if o["tid"] == tid and ns(o["ts"]) <= ts and end <= ns(o["ts"]) + ns(o["dur"])]
                inner.sort(key=lambda o: (ns(o["ts"]), -ns(o["dur"])))
                cur.append((path_, inner[-1]["name"] if inner else None))
    assert len(out) == 1, (path, len(out))
    return {"batch": detail["batch_size"], "subsystem": detail.get("subsystem", "decoder"), "launches": out[0]}


def main(run):
    details = json.load(open(os.path.join(run, "capture_traces", "execution_details.json")))
    regs = [regions(os.path.join(run, "capture_traces", d["file"]), d) for d in details]
    (trace,) = [p for p in glob.glob(os.path.join(run, "*.pt.trace.json.gz"))]
    (summary,) = glob.glob(os.path.join(run, "*.summary.json"))
    tokens = json.load(open(summary))["completion_tokens"]
    ev = load(trace)
    launches = [e for e in ev if e.get("cat") == "cuda_runtime" and e["name"] == "cudaGraphLaunch"]
    acts = defaultdict(list)
    for e in ev:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            acts[e["args"]["correlation"]].append(e)
    anns = [e for e in ev if e.get("cat") == "user_annotation"]
    per_sub = defaultdict(int)
    per_mod = defaultdict(int)
    per_op = defaultdict(int)
    replays = 0
    for g in launches:
        a = sorted(acts.get(g["args"]["correlation"], []), key=lambda e: (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])))
        if not a:
            continue
        replays += 1
        ts = ns(g["ts"])
        around = [x for x in anns if x["tid"] == g["tid"] and ns(x["ts"]) <= ts <= ns(x["ts"]) + ns(x["dur"])]
        if any(x["name"] == "proposer.propose" for x in around):
            cands = [r for r in regs if r["subsystem"] == "speculator" and len(r["launches"]) == len(a)]
            assert len(cands) == 1, len(cands)
        else:
            (step,) = [x for x in around if x["name"].startswith("execute_")]
            tok = sum(int(n) for n in re.findall(r"\((\d+)\)", step["name"]))
            sizes = sorted(r["batch"] for r in regs if r["subsystem"] == "decoder" and r["batch"] >= tok)
            cands = [r for r in regs if r["subsystem"] == "decoder" and r["batch"] == sizes[0]]
        (r,) = cands
        assert len(r["launches"]) == len(a)
        for (mod, op), e in zip(r["launches"], a):
            d = ns(e["dur"])
            per_sub[r["subsystem"]] += d
            per_mod[f'{r["subsystem"]} {mod}'] += d
            per_op[f'{r["subsystem"]} {op}'] += d
    print(json.dumps({
        "completion_tokens": tokens,
        "replays": replays,
        "by_subsystem": dict(sorted(per_sub.items())),
        "by_module": dict(sorted(per_mod.items(), key=lambda kv: -kv[1])),
        "by_op": dict(sorted(per_op.items(), key=lambda kv: -kv[1])),
    }, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
