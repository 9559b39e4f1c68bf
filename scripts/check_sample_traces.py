#!/usr/bin/env python3
"""Sanity-check the traces written by gen_sample_traces.py (stdlib only).

Usage: python3 scripts/check_sample_traces.py sample_traces
"""
import collections
import glob
import gzip
import json
import os
import sys

EPS = 0.0015  # us; float slack for containment tests


def A(e):
    return e.get("args") or {}


def end(e):
    return e["ts"] + e.get("dur", 0)


def inside(child, parent):
    # pid only: python_function events may carry a different tid than cpu_op/user_annotation events
    return (child.get("pid") == parent.get("pid")
            and child["ts"] >= parent["ts"] - EPS and end(child) <= end(parent) + EPS)


def check(path):
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    ev = [e for e in doc["traceEvents"] if isinstance(e, dict)]
    for e in ev:
        if "ts" in e:
            e["ts"] = float(e["ts"])
        if "dur" in e:
            e["dur"] = float(e["dur"])
    by_cat = collections.defaultdict(list)
    for e in ev:
        by_cat[e.get("cat")].append(e)
    print(f"== {os.path.relpath(path)}  size={os.path.getsize(path)} bytes  events={len(ev)}")
    print("   top-level keys:", list(doc.keys()))
    print("   cats:", dict(collections.Counter(e.get("cat") for e in ev).most_common()))
    ua = by_cat["user_annotation"]
    gua = by_cat["gpu_user_annotation"]
    names = collections.Counter(e["name"] for e in ua)
    short = collections.Counter()
    for n, c in names.items():
        short["execute_context_1(*)_generation_0(0)" if n.startswith("execute_context_1(") else n] += c
    print("   user_annotation names:", dict(short))
    print(f"   gpu_user_annotation events: {len(gua)}")
    gua_by_ext = collections.defaultdict(list)
    for g in gua:
        gua_by_ext[(A(g).get("External id"), g["name"])].append(g)
    steps = [e for e in ua if e["name"].startswith("execute_")]
    decode = [e for e in steps if "_generation_1(" in e["name"]]
    prefill = [e for e in steps if e["name"].endswith("_generation_0(0)")]
    paired = [e for e in steps if gua_by_ext.get((A(e).get("External id"), e["name"]))]
    dpaired = [e for e in decode if gua_by_ext.get((A(e).get("External id"), e["name"]))]
    ppaired = [e for e in prefill if gua_by_ext.get((A(e).get("External id"), e["name"]))]
    two = [k for k, v in gua_by_ext.items() if len(v) > 1]
    print(f"   step annotations: {len(steps)} (decode {len(decode)}, prefill {len(prefill)}); "
          f"paired with gua: {len(paired)} (decode {len(dpaired)}/{len(decode)}, prefill {len(ppaired)}/{len(prefill)})")
    print(f"   contexts with >1 gua (two streams): {len(two)}; gua streams: "
          f"{dict(collections.Counter((g.get('pid'), g.get('tid')) for g in gua))}")
    # CUDA graph replay attribution
    rt = by_cat["cuda_runtime"] + by_cat["cuda_driver"]
    gk = collections.defaultdict(list)
    for k in by_cat["kernel"] + by_cat["gpu_memcpy"] + by_cat["gpu_memset"]:
        gk[A(k).get("correlation")].append(k)
    graph_launches = [r for r in rt if "GraphLaunch" in r["name"]]
    covered = 0
    n_graph_kernels = 0
    graph_kernels_with_ext = 0
    for s in decode:
        launches = [r for r in graph_launches if inside(r, s)]
        ks = [k for r in launches for k in gk.get(A(r).get("correlation"), [])]
        n_graph_kernels += len(ks)
        graph_kernels_with_ext += sum(1 for k in ks if A(k).get("External id") is not None)
        spans = gua_by_ext.get((A(s).get("External id"), s["name"]), [])
        ok = bool(launches) and bool(ks) and all(
            any(g.get("tid") == k.get("tid") and g["ts"] <= k["ts"] + EPS and end(k) <= end(g) + EPS for g in spans)
            for k in ks)
        covered += ok
    print(f"   graph launches: {len(graph_launches)}; decode steps whose graph kernels lie inside their gua: "
          f"{covered}/{len(decode)}; graph kernels {n_graph_kernels} (with External id: {graph_kernels_with_ext})")
    # python_function structure
    py = by_cat["python_function"]
    def ends(suffix):
        return [p for p in py if p["name"].endswith(suffix)]
    st, pdt, prop, em = ends("): sample_tokens"), ends("): propose_draft_token_ids"), ends("): propose"), ends("): execute_model")
    pp = [e for e in ua if e["name"] == "proposer.propose"]
    print(f"   python_function: {len(py)}; ): execute_model {len(em)}, ): sample_tokens {len(st)}, "
          f"): propose_draft_token_ids {len(pdt)}, ): propose {len(prop)}; proposer.propose annotations {len(pp)}")
    c1 = sum(1 for p in pdt if any(inside(p, s) for s in st))
    c2 = sum(1 for a in pp if any(inside(a, p) for p in pdt))
    c3 = sum(1 for p in prop if any(inside(p, a) for a in pp))
    print(f"   containment: propose_draft_token_ids in sample_tokens {c1}/{len(pdt)}; "
          f"proposer.propose in propose_draft_token_ids {c2}/{len(pp)}; ): propose in proposer.propose {c3}/{len(prop)}")
    st_in_step = sum(1 for s in st if any(s["ts"] >= u["ts"] and end(s) <= end(u) for u in steps))
    print(f"   sample_tokens inside a step annotation (should be 0): {st_in_step}")
    pp_gua = sum(1 for g in gua if g["name"] == "proposer.propose")
    print(f"   proposer.propose gua: {pp_gua}")
    seen = []
    for p in py:
        if ("vllm/" in p["name"] or "gen_sample_traces" in p["name"]) and p["name"] not in seen:
            seen.append(p["name"])
    print("   vllm python_function names (first 25):")
    for n in seen[:25]:
        print("     ", n)
    print("   pid/tid by cat:", {c: sorted({(str(e.get('pid')), str(e.get('tid'))) for e in by_cat[c]})[:4]
                                 for c in ("cpu_op", "user_annotation", "python_function", "cuda_runtime",
                                           "kernel", "gpu_memcpy", "gpu_user_annotation") if by_cat[c]})
    if st:
        print("   sample python_function args:", st[0].get("args"))
    if decode:
        print("   sample step ua:", {k: decode[0].get(k) for k in ("name", "ph", "pid", "tid", "ts", "dur", "args")})
        g = gua_by_ext.get((A(decode[0]).get("External id"), decode[0]["name"]), [])
        for x in g:
            print("   its gua:", {k: x.get(k) for k in ("name", "pid", "tid", "ts", "dur", "args")})


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "sample_traces"
    total = 0
    for path in sorted(glob.glob(os.path.join(root, "**", "*"), recursive=True)):
        if os.path.isfile(path):
            total += os.path.getsize(path)
            print(f"{os.path.getsize(path):>10}  {os.path.relpath(path, root)}")
    print(f"total {total} bytes")
    for path in sorted(glob.glob(os.path.join(root, "*", "*.pt.trace.json.gz"))):
        check(path)
    for path in sorted(glob.glob(os.path.join(root, "*", "*.summary.json"))):
        with open(path) as f:
            s = json.load(f)
        print(os.path.relpath(path, root), {k: s[k] for k in ("mode", "workload", "completion_tokens", "decode_steps",
                                                                "prefill_steps", "accepted_draft_tokens",
                                                                "draft_proposals", "tokens_per_step")})


if __name__ == "__main__":
    main()
