#!/usr/bin/env python3
"""Check the CUDA-graph capture + replay traces written by gen_graph_traces.py (stdlib only).

For each run folder (<root>/<workload>_<mode>/: one worker trace, its summary, capture_traces/):

* capture side: in every capture trace, the capture region(s) = the runtime/driver calls on the
  thread of a ``cudaStreamBeginCapture`` up to its ``cudaStreamEndCapture``; the captured launches
  are the kernel launches (``*LaunchKernel*``), async memcpy and memset calls among them (graph
  launches excluded); the region takes batch size, mode and subsystem from execution_details.json
  and from the enclosing ``[speculator_]capture_<bs>_<MODE>`` annotation (which must agree).
* replay side: every ``cudaGraphLaunch`` of the worker trace and its GPU activities (kernel,
  gpu_memcpy, gpu_memset with the launch's correlation), in GPU order (ts). A replay inside
  ``proposer.propose`` is the speculator's, with batch size = the smallest captured speculator
  size >= 1 (one request); any other replay is the decoder's, with batch size = the smallest
  captured decoder size >= the tokens of its step annotation
  ``execute_context_<n>(<tok>)_generation_<n>(<tok>)``.
* check: each replay's activity count equals the captured launch count of the region of that
  subsystem and batch size, and the kinds agree position by position (kernel / memcpy / memset).

Prints a markdown report; ``--write-readme README.md`` puts it between the
``<!-- check_graph_traces:begin -->`` and ``<!-- check_graph_traces:end -->`` lines.
Exit status 1 if a replay does not match. Usage:

    python3 scripts/check_graph_traces.py sample_traces [--write-readme sample_traces/GRAPHS.md]
"""
import argparse
import collections
import glob
import gzip
import json
import os
import re
import sys

EPS = 0.0015  # us; float slack for containment tests
GPU_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
RUNTIME_CATS = ("cuda_runtime", "cuda_driver")
ANNOT_RE = re.compile(r"^(?:([a-z]+)_)?capture_(\d+)_([A-Z_]+)$")
STEP_RE = re.compile(r"^execute_context_(\d+)\((\d+)\)_generation_(\d+)\((\d+)\)$")
SHAPE_KEYS = ("Input Dims", "Input type", "Input Strides", "Concrete Inputs")


def A(e):
    return e.get("args") or {}


def end(e):
    return e["ts"] + e.get("dur", 0)


def load(path):
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    ev = [e for e in doc["traceEvents"] if isinstance(e, dict)]
    for e in ev:
        for k in ("ts", "dur"):
            if k in e:
                e[k] = float(e[k])
    return doc, ev


def launch_kind(name):
    """kernel / memcpy / memset for a launch call that puts work into a graph, else None."""
    n = name.lower()
    if "graphlaunch" in n:
        return None
    if "launchkernel" in n or "launchcooperativekernel" in n:
        return "kernel"
    if "memcpy" in n and "async" in n:
        return "memcpy"
    if "memset" in n and "async" in n:
        return "memset"
    return None


def innermost(e, candidates):
    best = None
    for c in candidates:
        if c.get("tid") == e.get("tid") and c["ts"] <= e["ts"] + EPS and end(e) <= end(c) + EPS:
            if best is None or c.get("dur", 0) <= best.get("dur", 0):
                best = c
    return best


def capture_regions(path, detail):
    doc, ev = load(path)
    rt = sorted((e for e in ev if e.get("cat") in RUNTIME_CATS and e.get("ph") == "X"), key=lambda e: e["ts"])
    cpu_ops = [e for e in ev if e.get("cat") == "cpu_op"]
    ua = [e for e in ev if e.get("cat") == "user_annotation"]
    regions = []
    for b in (e for e in rt if e["name"] in ("cudaStreamBeginCapture", "hipStreamBeginCapture")):
        ends = [e for e in rt if e["name"] in ("cudaStreamEndCapture", "hipStreamEndCapture")
                and e.get("tid") == b.get("tid") and e["ts"] >= b["ts"]]
        if not ends:
            continue
        en = ends[0]
        inside = [e for e in rt if e.get("tid") == b.get("tid") and b["ts"] < e["ts"] < en["ts"]]
        launches = [e for e in inside if launch_kind(e["name"])]
        annots = [u for u in ua if ANNOT_RE.match(u["name"]) and u["ts"] <= b["ts"] + EPS and end(en) <= end(u) + EPS]
        m = ANNOT_RE.match(annots[0]["name"]) if annots else None
        launchers = collections.Counter()
        for e in launches:
            op = innermost(e, cpu_ops)
            launchers[(op["name"] if op else "-", e["name"])] += 1
        regions.append({
            "file": os.path.basename(path),
            "annotation": annots[0]["name"] if annots else None,
            "subsystem": detail.get("subsystem", "decoder"),
            "batch_size": detail["batch_size"],
            "mode": detail["mode"],
            "annotation_agrees": bool(m) and int(m.group(2)) == detail["batch_size"] and m.group(3) == detail["mode"]
            and (m.group(1) or "decoder") == detail.get("subsystem", "decoder"),
            "launches": [launch_kind(e["name"]) for e in launches],
            "with_external_id": sum(1 for e in launches if "External id" in A(e)),
            "launch_names": collections.Counter(e["name"] for e in launches),
            "other_calls": collections.Counter(e["name"] for e in inside if not launch_kind(e["name"])),
            "launchers": launchers,
        })
    shapes = {k: sum(1 for e in cpu_ops if k in A(e)) for k in SHAPE_KEYS}
    info = {
        "file": os.path.basename(path),
        "size": os.path.getsize(path),
        "events": len(ev),
        "cpu_ops": len(cpu_ops),
        "shapes": shapes,
        "python_function": sum(1 for e in ev if e.get("cat") == "python_function"),
        "record_shapes": doc.get("record_shapes"),
        "with_stack": doc.get("with_stack"),
        "gpu_activities": sum(1 for e in ev if e.get("cat") in GPU_CATS),
        "regions": len(regions),
    }
    return regions, info


def check_run(run_dir):
    out = []
    ok = True
    traces = sorted(glob.glob(os.path.join(run_dir, "*.pt.trace.json.gz")))
    assert len(traces) == 1, traces
    trace = traces[0]
    with open(trace[: -len(".pt.trace.json.gz")] + ".summary.json") as f:
        summary = json.load(f)
    cap_dir = os.path.join(run_dir, "capture_traces")
    with open(os.path.join(cap_dir, "execution_details.json")) as f:
        details = json.load(f)
    regions, infos = [], []
    for d in details:
        r, info = capture_regions(os.path.join(cap_dir, d["file"]), d)
        regions += r
        infos.append((d, info))
    name = os.path.basename(run_dir.rstrip("/"))
    out.append(f"### `{name}/`\n")
    out.append(f"Device {summary['device']}, torch {summary['torch_version']} (CUDA {summary['cuda_version']}); "
               f"{summary['num_requests']} requests, {summary['completion_tokens']} completion tokens, "
               f"{summary['prefill_steps']} prefill + {summary['decode_steps']} decode steps, "
               f"{summary['draft_proposals']} draft proposals.\n")
    out.append("| capture file | subsystem | bs | mode | annotation | size | regions | captured launches | "
               "cpu_ops (with Input Dims / Input type / Input Strides) | python_function | GPU activities that ran |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    by_key = collections.defaultdict(list)
    for reg in regions:
        by_key[(reg["subsystem"], reg["batch_size"])].append(reg)
        if not reg["annotation_agrees"]:
            ok = False
            out.append(f"- MISMATCH: {reg['file']}: annotation {reg['annotation']} vs execution_details")
    for d, info in infos:
        regs = [r for r in regions if r["file"] == d["file"]]
        s = info["shapes"]
        out.append(f"| `capture_traces/{d['file']}` | {d.get('subsystem', 'decoder')} | {d['batch_size']} | {d['mode']} | "
                   f"`{regs[0]['annotation'] if regs else '-'}` | {info['size'] // 1024} KiB | {info['regions']} | "
                   f"{', '.join(str(len(r['launches'])) for r in regs)} | {info['cpu_ops']} ({s['Input Dims']} / "
                   f"{s['Input type']} / {s['Input Strides']}) | {info['python_function']} | {info['gpu_activities']} |")
        if info["regions"] != 1:
            ok = False
    out.append("")
    names = collections.Counter()
    others = collections.Counter()
    for reg in regions:
        names.update(reg["launch_names"])
        others.update(reg["other_calls"])
    out.append("Launch calls inside the capture regions (all files): "
               + ", ".join(f"`{n}` {c}" for n, c in names.most_common()) + ".")
    out.append(f"Captured launches with an `External id` (link to their cpu_op): "
               f"{sum(r['with_external_id'] for r in regions)} of {sum(len(r['launches']) for r in regions)}.")
    out.append("Other runtime/driver calls inside them: "
               + ", ".join(f"`{n}` {c}" for n, c in others.most_common()) + ".")
    first = min(regions, key=lambda r: (r["subsystem"], r["batch_size"]))
    out.append(f"Launchers in `{first['file']}` ({first['subsystem']}, bs {first['batch_size']}; innermost cpu_op → launch call): "
               + ", ".join(f"`{op}` → `{call}` {c}" for (op, call), c in sorted(first["launchers"].items(), key=lambda kv: -kv[1]))
               + ".")
    same = collections.defaultdict(set)
    for reg in regions:
        same[reg["subsystem"]].add(tuple(reg["launches"]))
    for sub, seqs in sorted(same.items()):
        out.append(f"{sub}: {len([r for r in regions if r['subsystem'] == sub])} regions, "
                   f"{len(seqs)} distinct launch-kind sequence(s) (lengths {sorted(len(s) for s in seqs)}).")
    out.append("")

    # replay side
    doc, ev = load(trace)
    rt = [e for e in ev if e.get("cat") in RUNTIME_CATS and e.get("ph") == "X"]
    ua = [e for e in ev if e.get("cat") == "user_annotation"]
    cpu_ops = [e for e in ev if e.get("cat") == "cpu_op"]
    acts = collections.defaultdict(list)
    for e in ev:
        if e.get("cat") in GPU_CATS and "correlation" in A(e):
            acts[A(e)["correlation"]].append(e)
    launches = sorted((e for e in rt if e["name"] in ("cudaGraphLaunch", "hipGraphLaunch")), key=lambda e: e["ts"])
    sizes = {sub: sorted({r["batch_size"] for r in regions if r["subsystem"] == sub}) for sub in same}
    graph_keys = collections.Counter()
    rows = collections.Counter()
    n_activities = 0
    for gl in launches:
        a = sorted(acts.get(A(gl).get("correlation"), []), key=lambda e: e["ts"])
        n_activities += len(a)
        for e in a:
            for k in ("graph id", "graph node id"):
                if k in A(e):
                    graph_keys[k] += 1
        enclosing = [u for u in ua if u.get("pid") == gl.get("pid") and u["ts"] <= gl["ts"] + EPS and end(gl) <= end(u) + EPS]
        if any(u["name"] == "proposer.propose" for u in enclosing):
            sub, tokens, why = "speculator", 1, "in proposer.propose, 1 request"
        else:
            steps = [u for u in enclosing if STEP_RE.match(u["name"])]
            if not steps:
                ok = False
                rows[("decoder", None, len(a), "no step annotation", False)] += 1
                continue
            m = STEP_RE.match(steps[0]["name"])
            sub, tokens, why = "decoder", int(m.group(2)) + int(m.group(4)), f"step `{steps[0]['name']}`"
        bs = next((b for b in sizes.get(sub, []) if b >= tokens), None)
        cands = by_key.get((sub, bs), [])
        kinds = [GPU_CATS[e["cat"]] for e in a]
        match = len(cands) == 1 and cands[0]["launches"] == kinds
        ok &= match
        rows[(sub, bs, len(a), why, match)] += 1
    s = {k: sum(1 for e in cpu_ops if k in A(e)) for k in SHAPE_KEYS}
    out.append(f"Worker trace `{name}/{os.path.basename(trace)}` ({os.path.getsize(trace) // 1024} KiB; "
               f"record_shapes={doc.get('record_shapes')}, with_stack={doc.get('with_stack')}): "
               f"{len(launches)} `cudaGraphLaunch` → {n_activities} GPU activities; {len(cpu_ops)} cpu_ops, "
               f"{s['Input Dims']} with `Input Dims`, {s['Input type']} with `Input type`, {s['Input Strides']} with "
               f"`Input Strides`, {s['Concrete Inputs']} with `Concrete Inputs`. Replayed activities with `graph id` / "
               f"`graph node id`: {graph_keys['graph id']} / {graph_keys['graph node id']}.\n")
    out.append("| replays | subsystem | why | graph bs | activities per replay | captured launches (region of that bs) | "
               "equal count and kinds in order |")
    out.append("|---|---|---|---|---|---|---|")
    for (sub, bs, n, why, match), c in sorted(rows.items(), key=lambda kv: (kv[0][0], str(kv[0][3]))):
        cap = ", ".join(str(len(r["launches"])) for r in by_key.get((sub, bs), [])) or "none"
        out.append(f"| {c} | {sub} | {why} | {bs} | {n} | {cap} | {'yes' if match else 'NO'} |")
    out.append("")
    return ok, out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root")
    ap.add_argument("--write-readme")
    args = ap.parse_args()
    ok = True
    lines = []
    for run_dir in sorted(glob.glob(os.path.join(args.root, "*_*/"))):
        if not os.path.isdir(os.path.join(run_dir, "capture_traces")):
            continue
        run_ok, out = check_run(run_dir)
        ok &= run_ok
        lines += out
    lines.append(f"Result: {'every replay matches its region' if ok else 'MISMATCHES FOUND'}.")
    text = "\n".join(lines)
    print(text)
    if args.write_readme:
        with open(args.write_readme) as f:
            readme = f.read()
        b, e = "<!-- check_graph_traces:begin -->", "<!-- check_graph_traces:end -->"
        i, j = readme.index(b) + len(b), readme.index(e)
        with open(args.write_readme, "w") as f:
            f.write(readme[:i] + "\n" + text + "\n" + readme[j:])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
