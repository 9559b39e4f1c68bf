#!/usr/bin/env python3
"""Hostile shapes for the memory bounds (issue 59), built from a real trace.

    hostile_memory.py steps   SRC OUT.pt.trace.json.gz --count N
    hostile_memory.py streams SRC OUT.pt.trace.json.gz --count N
    hostile_memory.py traces  SRC OUTDIR --count N [--steps K]

SRC is a real vLLM worker trace (e.g. sample_traces/text_ar/*.pt.trace.json.gz).
Its metadata and its first decode step's annotation, `cudaLaunchKernel` call
and kernel are the templates, kept field for field (names, args); only times,
correlation and External ids change:

- `steps`: N decode steps of one launch and one kernel each (the shape of a
  7 MB gzip trace of 400 k tiny steps);
- `streams`: one step whose N kernels each run on a stream of their own (N
  single-activity streams);
- `traces`: N copies of SRC cut to its first K steps (default 2), or with
  `--tiny` of K tiny steps (the `steps` shape), each with its summary, named
  as vLLM's rank files are (many tiny traces for `batch`).

`bench/memory.sh` runs every analysis on them and prints peak RSS.
"""
import argparse, copy, gzip, json, os, shutil
from decimal import Decimal


def load(src):
    with gzip.open(src, "rt") as f:
        return json.load(f, parse_float=Decimal)


def templates(doc):
    ev = doc["traceEvents"]
    ann = next(e for e in ev if e.get("cat") == "user_annotation" and "generation_1" in e["name"])
    call = next(e for e in ev if e.get("cat") == "cuda_runtime" and e["name"] == "cudaLaunchKernel")
    ker = next(e for e in ev if e.get("cat") == "kernel" and e["args"].get("correlation") == call["args"]["correlation"])
    return ann, call, ker


def us(ns):
    return Decimal(ns) / Decimal(1000)


def write(doc, events, out):
    doc = dict(doc)
    doc["traceEvents"] = events
    with gzip.open(out, "wt", compresslevel=6) as f:
        json.dump(doc, f, separators=(",", ":"), default=str)


def step_events(ann, call, ker, i, t0, stream=None, kernels=1):
    """Step i at t0 (ns): its annotation, then per kernel a launch and the kernel."""
    out = []
    a = copy.deepcopy(ann)
    a["ts"], a["dur"] = us(t0), us(1000 + 2000 * kernels)
    a["args"]["External id"] = 10 * i + 1
    out.append(a)
    for k in range(kernels):
        corr = 1000 + i * kernels + k
        c = copy.deepcopy(call)
        c["ts"], c["dur"] = us(t0 + 100 + 2000 * k), us(500)
        c["args"]["correlation"] = corr
        c["args"]["External id"] = 10 * i + 2
        g = copy.deepcopy(ker)
        g["ts"], g["dur"] = us(t0 + 700 + 2000 * k), us(800)
        g["args"]["correlation"] = corr
        g["args"]["External id"] = 10 * i + 2
        if stream is not None:
            g["tid"] = stream + k
            g["args"]["stream"] = stream + k
        out += [c, g]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shape", choices=["steps", "streams", "traces"])
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--tiny", action="store_true", help="traces: each of K tiny steps (the `steps` shape), not a cut of SRC")
    a = ap.parse_args()
    doc = load(a.src)
    ann, call, ker = templates(doc)
    t0 = int(Decimal(ann["ts"]) * 1000)
    if a.shape == "steps":
        ev = []
        for i in range(a.count):
            ev += step_events(ann, call, ker, i, t0 + 4000 * i)
        write(doc, ev, a.out)
    elif a.shape == "streams":
        write(doc, step_events(ann, call, ker, 0, t0, stream=100, kernels=a.count), a.out)
    else:
        os.makedirs(a.out, exist_ok=True)
        ev = doc["traceEvents"]
        anns = sorted(
            (e for e in ev if e.get("cat") == "user_annotation" and "_generation_" in e.get("name", "")),
            key=lambda e: e["ts"],
        )
        cut = anns[a.steps]["ts"] if len(anns) > a.steps else None
        small = [e for e in ev if cut is None or not isinstance(e.get("ts"), Decimal) or e["ts"] < cut]
        if a.tiny:
            small = [x for i in range(a.steps) for x in step_events(ann, call, ker, i, t0 + 4000 * i)]
        base = os.path.basename(a.src).split(".")[0]
        summary = a.src.replace(".pt.trace.json.gz", ".summary.json")
        # one text, each copy with its own traceName (identical bytes would be
        # deduplicated by batch)
        text = json.dumps(dict(doc, traceEvents=small, traceName="@@NAME@@"), separators=(",", ":"), default=str)
        for i in range(a.count):
            name = f"{base.replace('rank0', 'rank%d' % i)}.{1000 + i}.pt.trace.json.gz"
            with gzip.open(os.path.join(a.out, name), "wt", compresslevel=1) as f:
                f.write(text.replace("@@NAME@@", f"/tmp/copy{i}.json"))
            if os.path.exists(summary):
                shutil.copy(summary, os.path.join(a.out, name.replace(".pt.trace.json.gz", ".summary.json")))

if __name__ == "__main__":
    main()
