#!/usr/bin/env python3
"""Check the torch.compile traces written by `gen_sample_traces.py --compile` (stdlib only).

For every `<dir>/*/*.pt.trace.json.gz` (with its `.summary.json` beside it) it prints
the figures tests/data/compiled/README.md quotes and checks:

1. step annotations (user_annotation `execute_*`) and their gpu_user_annotations
   (same name and `External id`): none at all where the summary's `compile_scopes`
   is "vllm"; where it is "none", at least one per step, and every GPU activity the
   step's launches reach lies inside one of the step's own gpu_user_annotations;
2. every kernel / gpu_memcpy / gpu_memset has a `correlation` that a cuda_runtime or
   cuda_driver event carries;
3. the launch ledger: the cuda_runtime/cuda_driver events on the step annotation's
   pid and tid with start <= ts < end reach kernels (by `correlation`) in every step.

Times are parsed from the decimal text into integer nanoseconds.
Exit status 1 if a check fails.

Usage: python3 scripts/check_compiled_traces.py tests/data/compiled
"""
import collections
import decimal
import glob
import gzip
import json
import os
import statistics
import sys

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
CFG = "## Call CompiledFxGraph"


def ns(v):
    if v is None:
        return 0
    return int(decimal.Decimal(v) * 1000) if not isinstance(v, int) else v * 1000


def A(e):
    return e.get("args") or {}


def load(path):
    with gzip.open(path, "rt") as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    ev = []
    for e in doc["traceEvents"]:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        e["t0"] = ns(e.get("ts"))
        e["t1"] = e["t0"] + ns(e.get("dur"))
        ev.append(e)
    return doc, ev


def short(name):
    if name.startswith("execute_") and name.endswith("_generation_0(0)"):
        return "execute_context_1(*)_generation_0(0)"
    if name.startswith(CFG):
        return CFG + " <key> ##"
    return name


def med(xs):
    return round(statistics.median(xs) / 1000, 1) if xs else None


def check(path):
    failures = []
    summ_path = path[: -len(".pt.trace.json.gz")] + ".summary.json"
    summ = json.load(open(summ_path)) if os.path.exists(summ_path) else {}
    style = summ.get("compile_scopes")
    doc, ev = load(path)
    by_cat = collections.defaultdict(list)
    for e in ev:
        by_cat[e.get("cat")].append(e)
    print(f"== {os.path.relpath(path)}")
    print(f"   size {os.path.getsize(path)} bytes; X events {len(ev)}; summary: mode={summ.get('mode')} "
          f"workload={summ.get('workload')} compile_scopes={style} completion_tokens={summ.get('completion_tokens')} "
          f"prefill_steps={summ.get('prefill_steps')} decode_steps={summ.get('decode_steps')} "
          f"accepted_draft_tokens={summ.get('accepted_draft_tokens')} draft_proposals={summ.get('draft_proposals')} "
          f"torch={summ.get('torch_version')} device={summ.get('device')}")
    print("   cats:", dict(collections.Counter(e.get("cat") for e in ev).most_common()))
    ua, gua = by_cat["user_annotation"], by_cat["gpu_user_annotation"]
    print("   user_annotation names:", dict(collections.Counter(short(e["name"]) for e in ua).most_common()))
    print("   gpu_user_annotation names:", dict(collections.Counter(short(e["name"]) for e in gua).most_common()))
    gua_by_ext = collections.defaultdict(list)
    for g in gua:
        gua_by_ext[(A(g).get("External id"), g["name"])].append(g)
    steps = sorted((e for e in ua if e["name"].startswith("execute_")), key=lambda e: e["t0"])
    cfg = [e for e in ev if e["name"].startswith(CFG) and e.get("cat") in ("cpu_op", "user_annotation")]
    cfg_in_steps = [c for c in cfg if any(c.get("pid") == s.get("pid") and c.get("tid") == s.get("tid")
                                          and s["t0"] <= c["t0"] and c["t1"] <= s["t1"] for s in steps)]
    cfg_gua = [g for g in gua if g["name"].startswith(CFG)]
    regions = [e for e in ev if e["name"].startswith("Torch-Compiled Region")]
    print(f"   '## Call CompiledFxGraph <key> ##' ranges: {len(cfg)} (cat {dict(collections.Counter(c.get('cat') for c in cfg))}, "
          f"{len({c['name'] for c in cfg})} keys), {len(cfg_in_steps)} inside step annotations; their "
          f"gpu_user_annotations: {len(cfg_gua)}; 'Torch-Compiled Region' ranges: {len(regions)} "
          f"(cat {dict(collections.Counter(c.get('cat') for c in regions))})")

    # ---- launches <-> GPU activities by correlation
    launches = by_cat["cuda_runtime"] + by_cat["cuda_driver"]
    corr = collections.defaultdict(list)
    for r in launches:
        c = A(r).get("correlation")
        if c is not None:
            corr[c].append(r)
    dup = sum(1 for v in corr.values() if len(v) > 1)
    acts = collections.defaultdict(list)
    unmatched = collections.Counter()
    for cat in GPU_CATS:
        for k in by_cat[cat]:
            c = A(k).get("correlation")
            acts[c].append(k)
            if c is None or c not in corr:
                unmatched[cat] += 1
    n_gpu = {cat: len(by_cat[cat]) for cat in GPU_CATS}
    graph_launches = [r for r in launches if "GraphLaunch" in r["name"]]
    print(f"   GPU activities {n_gpu}; without a cuda_runtime/cuda_driver event of the same correlation: "
          f"{dict(unmatched) or 0}; correlations on >1 launch event: {dup}")
    cfg_ext = {A(c).get("External id") for c in cfg}
    print(f"   cudaGraphLaunch: {len(graph_launches)} (kernels they reach: "
          f"{sum(1 for r in graph_launches for k in acts.get(A(r).get('correlation'), []) if k.get('cat') == 'kernel')}); "
          f"kernels whose External id is a CompiledFxGraph range's: "
          f"{sum(1 for k in by_cat['kernel'] if A(k).get('External id') in cfg_ext)} of {len(by_cat['kernel'])}")
    if unmatched:
        failures.append(f"{sum(unmatched.values())} GPU activities have no launch event")

    # ---- the ledger, per step
    rows = collections.defaultdict(lambda: collections.defaultdict(list))
    tot = collections.Counter()
    outside_gua = 0
    no_kernel_steps = []
    for s in steps:
        name = short(s["name"])
        mine = gua_by_ext.get((A(s).get("External id"), s["name"]), [])
        inside = [r for r in launches if r.get("pid") == s.get("pid") and r.get("tid") == s.get("tid")
                  and s["t0"] <= r["t0"] < s["t1"]]
        reached = [k for r in inside for k in acts.get(A(r).get("correlation"), [])]
        kernels = [k for k in reached if k.get("cat") == "kernel"]
        busy = sum(k["t1"] - k["t0"] for k in reached)
        span = (max(k["t1"] for k in reached) - min(k["t0"] for k in reached)) if reached else 0
        n_graph = sum(1 for r in inside if "GraphLaunch" in r["name"])
        outside_gua += sum(1 for k in reached if not any(
            g.get("tid") == k.get("tid") and g["t0"] <= k["t0"] and k["t1"] <= g["t1"] for g in mine))
        row = rows[name]
        for key, val in (("gua", len(mine)), ("launch_events", len(inside)),
                         ("launches_reaching", sum(1 for r in inside if acts.get(A(r).get("correlation")))),
                         ("kernels", len(kernels)), ("memcpy", sum(1 for k in reached if k.get("cat") == "gpu_memcpy")),
                         ("graph_launches", n_graph), ("busy", busy), ("span", span), ("cpu", s["t1"] - s["t0"])):
            row[key].append(val)
            tot[key] += val
        if not kernels:
            no_kernel_steps.append(s["name"])
    print(f"   step annotations: {len(steps)}; with a gpu_user_annotation: {sum(1 for s in steps if gua_by_ext.get((A(s).get('External id'), s['name'])))}; "
          f"gpu_user_annotations of steps: {tot['gua']}")
    print(f"   launch ledger over all steps: launch events {tot['launch_events']}, reaching GPU work "
          f"{tot['launches_reaching']}, kernels reached {tot['kernels']}, memcpy reached {tot['memcpy']}, "
          f"graph launches {tot['graph_launches']}; steps reaching no kernel: {len(no_kernel_steps)}; "
          f"reached activities outside the step's own gpu_user_annotation: {outside_gua}")
    print("   per step name: count | gua/step | launch events | launches reaching | kernels | memcpy | graph launches"
          " | median CPU span us | median GPU busy us (ledger) | median GPU span us (ledger)")
    for name, row in sorted(rows.items()):
        n = len(row["cpu"])
        print(f"     {name}: {n} | {sum(row['gua'])}/{n} | {sum(row['launch_events'])} | {sum(row['launches_reaching'])} | "
              f"{sum(row['kernels'])} | {sum(row['memcpy'])} | {sum(row['graph_launches'])} | {med(row['cpu'])} | "
              f"{med(row['busy'])} | {med(row['span'])}")
    launch_names = collections.Counter(r["name"] for s in steps for r in launches
                                       if r.get("pid") == s.get("pid") and r.get("tid") == s.get("tid")
                                       and s["t0"] <= r["t0"] < s["t1"])
    print("   launch-event names inside steps:", dict(launch_names.most_common()))

    if not steps:
        failures.append("no step annotations")
    if no_kernel_steps:
        failures.append(f"{len(no_kernel_steps)} steps reach no kernel: {no_kernel_steps[:3]}")
    with_gua = sum(1 for s in steps if gua_by_ext.get((A(s).get("External id"), s["name"])))
    if style == "vllm" and with_gua:
        failures.append(f"{with_gua} step annotations have a gpu_user_annotation")
    if style == "none" and (with_gua != len(steps) or outside_gua):
        failures.append(f"{with_gua}/{len(steps)} step annotations have a gpu_user_annotation; "
                        f"{outside_gua} reached activities lie outside them")
    if style not in ("vllm", "none"):
        failures.append(f"summary has no compile_scopes (vllm/none): {style!r}")
    if not cfg:
        failures.append("no CompiledFxGraph annotations")
    for f in failures:
        print("   FAIL:", f)
    if not failures:
        print("   OK")
    return failures


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "tests/data/compiled"
    paths = sorted(glob.glob(os.path.join(root, "*", "*.pt.trace.json.gz")))
    total = sum(os.path.getsize(p) for p in glob.glob(os.path.join(root, "**", "*"), recursive=True)
                if os.path.isfile(p))
    print(f"{len(paths)} traces under {root}; all files {total} bytes")
    failures = [f for p in paths for f in check(p)]
    if not paths or failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
