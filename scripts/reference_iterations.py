#!/usr/bin/env python3
"""Independent reference for `torchtrace iterations` (issue 18), written from the
definitions in the issue / docs/DEFINITIONS.md, stdlib only (reuses reference.py's
exact JSON loading: µs text -> integer ns).

    python3 scripts/reference_iterations.py TRACE [TRACE2] [--tokens N ...] [--context NAME]

Prints a JSON document: per trace the iteration rows (exact ns), the per-token
figures, the graph figures; with two traces the comparison. Brute force on purpose
(every launch against every candidate range of its iteration), no sweep.
"""
import argparse
import json
import os
import sys
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference as R  # noqa: E402

SAMPLE = ["sample_tokens", "gpu_model_runner: sample", "gpu_model_runner: sample_tokens"]
DRAFT = ["propose_draft_token_ids", "proposer.propose", "gpu_model_runner: draft",
         "gpu_model_runner: propose_draft_token_ids"]
PHASES = ["forward", "sample", "draft", "other"]
GRAPH_LAUNCHES = ("cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch")


def name_in(names, name, py):
    if name in names:
        return True
    if py and "): " in name:
        return name[name.rfind("): ") + 3:] in names
    return False


def phase_of_range(e):
    if e.cat not in ("user_annotation", "python_function"):
        return None
    py = e.cat == "python_function"
    if name_in(DRAFT, e.name, py):
        return "draft"
    if name_in(SAMPLE, e.name, py):
        return "sample"
    return None


def fr(x):
    return None if x is None else float(x)


def one(path, tokens=None, context=None, context_regex=None):
    evs = R.complete_events(R.load_trace(path))
    label, pred, selected, _ = R.select_contexts(evs, context, context_regex)
    selected.sort(key=lambda e: (e.start, e.idx))
    led = R.gpu_ledger(evs)
    tokens = R.resolve_tokens(path, tokens, None)
    thread = lambda e: (e.pid, e.tid)
    bounds = {}
    for e in evs:
        if e.cat == "user_annotation" and (R.step_kind(e.name) is not None or pred(e.name)):
            bounds.setdefault(thread(e), []).append((e.start, e.idx))
    for v in bounds.values():
        v.sort()
    ranges = {}
    for e in evs:
        p = phase_of_range(e)
        if p:
            ranges.setdefault(thread(e), []).append((e, p))
    its = []
    for c in selected:
        later = [b for b in bounds.get(thread(c), []) if b > (c.start, c.idx)]
        its.append({"ctx": c, "end": later[0][0] if later else None})
    rows, replays = [], []
    for i, it in enumerate(its):
        c, end = it["ctx"], it["end"]
        ls = [l for l in led["thr"].get(thread(c), ([], []))[1]
              if l.start >= c.start and (end is None or l.start < end)]
        ph = {p: {"ivs": [], "kernels": 0, "memcpys": 0, "memsets": 0, "launches": 0,
                  "graph_launches": 0} for p in PHASES}
        allv, ctxv = [], []
        for l in ls:
            cands = [(c.start, -c.end, c.idx, "forward")] if c.start <= l.start < c.end else []
            cands += [(r.start, -r.end, r.idx, p) for r, p in ranges.get(thread(c), [])
                      if r.start <= l.start < r.end]
            phase = max(cands)[3] if cands else "other"
            graph = l.name.startswith(GRAPH_LAUNCHES)
            w = ph[phase]
            w["launches"] += 1
            w["graph_launches"] += int(graph)
            acts = led["acts"][l.idx]
            for a in acts:
                w[R.act_kind(a) + "s"] += 1
                w["ivs"].append((a.start, a.end))
                allv.append((a.start, a.end))
                if l.start < c.end:
                    ctxv.append((a.start, a.end))
            if graph:
                sig = sorted((a.start, a.end, a.name) for a in acts)
                replays.append({"it": i, "key": (l.start, l.idx), "sig": tuple(s[2] for s in sig),
                                "first": sig[0][0], "total": sum(a.end - a.start for a in acts),
                                "kernels": sum(1 for a in acts if R.act_kind(a) == "kernel")})
        busy = R.ulen(R.union(allv))
        row = {
            "start_ns": c.start,
            "wall_ns": None if end is None else end - c.start,
            "closed": end is not None,
            "gpu_busy_ns": busy,
            "gpu_idle_ns": (max(v[1] for v in allv) - min(v[0] for v in allv) - busy) if allv else None,
            "context_span_ns": (max(v[1] for v in ctxv) - min(v[0] for v in ctxv)) if ctxv else None,
            "phases": {},
        }
        for k in ("kernels", "memcpys", "memsets", "launches", "graph_launches"):
            row[k] = sum(ph[p][k] for p in PHASES)
        for p in PHASES:
            d = dict(ph[p])
            d["gpu_busy_ns"] = R.ulen(R.union(d.pop("ivs")))
            row["phases"][p] = d
        rows.append(row)
    n = len(rows)
    closed = [r for r in rows if r["closed"]]
    cn = len(closed)

    def per_tok(total):
        if not tokens or cn == 0:
            return None
        return Fraction(total * n, cn * tokens)

    def ms(q):
        return None if q is None else float(q / 1_000_000)

    S = lambda k: sum(r[k] or 0 for r in closed)
    per_token = {
        "wall_ms": ms(per_tok(S("wall_ns"))),
        "gpu_busy_ms": ms(per_tok(S("gpu_busy_ns"))),
        "gpu_idle_ms": ms(per_tok(S("gpu_idle_ns"))),
        "kernels": fr(per_tok(S("kernels"))),
        "launches": fr(per_tok(S("launches"))),
        "graph_launches": fr(per_tok(S("graph_launches"))),
        "phases": {p: {"gpu_busy_ms": ms(per_tok(sum(r["phases"][p]["gpu_busy_ns"] for r in closed))),
                       "kernels": fr(per_tok(sum(r["phases"][p]["kernels"] for r in closed)))}
                   for p in PHASES},
    }
    # Graphs: numbered by first appearance (launch ts, file order).
    replays.sort(key=lambda r: r["key"])
    num = {}
    for r in replays:
        r["g"] = num.setdefault(r["sig"], len(num))
    cl = [r for r in replays if rows[r["it"]]["closed"]]
    graphs = {"replays": len(cl), "distinct": len({r["g"] for r in cl}),
              "replays_per_token": fr(per_tok(len(cl))) if cl else None, "repeating": None}
    if cl:
        stats = {}
        for r in cl:
            s = stats.setdefault(r["g"], [set(), 0, 0])
            s[0].add(r["it"])
            s[1] += r["total"]
            s[2] += 1
        g = max(stats, key=lambda g: (len(stats[g][0]), stats[g][1], -g))
        mine = [r for r in cl if r["g"] == g]
        starts = sorted(r["first"] for r in mine)
        gaps = sorted(b - a for a, b in zip(starts, starts[1:]))
        med = None
        if gaps:
            k = len(gaps)
            med = Fraction(gaps[k // 2]) if k % 2 else Fraction(gaps[k // 2 - 1] + gaps[k // 2], 2)
        graphs["repeating"] = {"graph": g, "iterations": len(stats[g][0]), "replays": stats[g][2],
                               "replays_per_token": fr(per_tok(stats[g][2])),
                               "kernels_per_replay": mine[0]["kernels"], "cadence_ms_median": ms(med)}
    out = {"path": path, "context": label, "contexts": n, "iterations_closed": cn,
           "completion_tokens": tokens, "per_token": per_token, "graphs": graphs, "rows": rows}
    exact = {"n": n, "closed": cn, "tokens": tokens, "wall": S("wall_ns"), "busy": S("gpu_busy_ns"),
             "span": sum(r["context_span_ns"] or 0 for r in rows)}
    return out, exact


def compare(a, m):
    def q(x, k):
        if not x["tokens"] or not x["closed"]:
            return None
        return Fraction(x[k] * x["n"], x["closed"] * x["tokens"])

    def ratio(u, v):
        return None if u is None or v is None or v == 0 else float(u / v)

    tpi = lambda x: Fraction(x["tokens"], x["n"]) if x["tokens"] and x["n"] else None
    span = lambda x: Fraction(x["span"], x["tokens"]) if x["tokens"] else None
    return {"token_progress_ratio": ratio(tpi(m), tpi(a)), "s_wall": ratio(q(a, "wall"), q(m, "wall")),
            "s_busy": ratio(q(a, "busy"), q(m, "busy")), "s_context_correlation": ratio(span(a), span(m))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--tokens", type=int, action="append", default=[])
    ap.add_argument("--context")
    ap.add_argument("--context-regex")
    a = ap.parse_args()
    res = [one(p, a.tokens[i] if i < len(a.tokens) else None, a.context, a.context_regex)
           for i, p in enumerate(a.traces)]
    doc = {"traces": [r[0] for r in res],
           "comparison": compare(res[0][1], res[1][1]) if len(res) == 2 else None}
    json.dump(doc, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
