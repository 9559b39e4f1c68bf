#!/usr/bin/env python3
"""Independent reference for `torchtrace ranks` (docs/DEFINITIONS.md, "Ranks of a run (`ranks`)").

stdlib only; it reuses the trace loading, context selection and innermost launch attribution of
scripts/reference.py (themselves written from the definitions) and computes, from the definitions
of ranks, for the traces of ONE run given in rank order:

  python3 scripts/reference_ranks.py TRACE_RANK0 TRACE_RANK1 ... [--align auto|none]
                                     [--k 10] [--floor-us 100] [--floor-share 50] [--tokens N]
                                     [--context NAME | --context-regex RE]

Output: JSON on stdout with each rank's clock offset, the aligned decode steps (straggler, delay,
per-rank wait and arrival delay), the flagged stragglers, the threshold and per-rank totals.
All times are integer ns; medians of the offsets are lower medians (integers).
"""

import argparse
import json
import os
import re
import sys
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference as R  # noqa: E402

COMM = re.compile(
    r"nccl|rccl|cross_device_reduce|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|custom_?ar\b",
    re.IGNORECASE,
)
MIN_MATCHED = 8
MAX_SPREAD_NS = 20_000


def lower_median(vals):
    v = sorted(vals)
    return v[(len(v) - 1) // 2]


def exact_median(vals):
    v = sorted(vals)
    n = len(v)
    return Fraction(v[n // 2]) if n % 2 else Fraction(v[n // 2 - 1] + v[n // 2], 2)


def rank_steps(path, context=None, context_regex=None):
    """(decode steps, boundary steps) of one rank: each a dict with name, cpu start/end, GPU span and
    the collectives (start, end) of its attributed GPU work, sorted by (start, end)."""
    evs = R.complete_events(R.load_trace(path))
    _, pred, selected, _ = R.select_contexts(evs, context, context_regex)
    sel_lanes = {(c.pid, c.tid) for c in selected}
    boundary = [e for e in evs if e.cat == "user_annotation" and not pred(e.name)
                and R.step_kind(e.name) is not None and (e.pid, e.tid) in sel_lanes]
    steps = sorted(selected + boundary, key=lambda c: (c.start, c.idx))
    works = R.attributed_works(steps, R.gpu_ledger(evs), "auto")
    dec, bnd = [], []
    for c, w in zip(steps, works):
        colls = sorted((a.start, a.end) for a in w["acts"] if COMM.search(a.name))
        row = {"name": c.name, "cpu_start": c.start, "cpu_end": c.end,
               "gpu_span": w["span"], "colls": colls}
        (dec if pred(c.name) else bnd).append(row)
    return dec, bnd


def aligned(per_rank):
    """Steps aligned by ordinal while the names agree."""
    n = min(len(s) for s in per_rank)
    for i in range(n):
        if len({s[i]["name"] for s in per_rank}) > 1:
            return i
    return n


def offsets(per_rank, n, align):
    out = []
    for r in range(len(per_rank)):
        d = []
        for i in range(n):
            m = min(len(s[i]["colls"]) for s in per_rank)
            for k in range(m):
                d.append(per_rank[r][i]["colls"][k][1] - per_rank[0][i]["colls"][k][1])
        if not d:
            out.append({"offset": 0, "spread": None, "matched": 0, "credible": False, "applied": False})
            continue
        off = lower_median(d)
        spread = lower_median([abs(x - off) for x in d])
        credible = r == 0 or (len(d) >= MIN_MATCHED and spread <= MAX_SPREAD_NS)
        applied = align == "auto" and credible and r != 0
        out.append({"offset": off, "spread": spread, "matched": len(d), "credible": credible,
                    "applied": applied})
    return out


def step_figures(per_rank, i, offs):
    ranks = range(len(per_rank))
    shift = [o["offset"] if o["applied"] else 0 for o in offs]
    m = min(len(per_rank[r][i]["colls"]) for r in ranks)
    wait = [0] * len(per_rank)
    late = [0] * len(per_rank)
    imposed = [0] * len(per_rank)
    for k in range(m):
        s = [per_rank[r][i]["colls"][k][0] - shift[r] for r in ranks]
        hi, lo = max(s), min(s)
        last = s.index(hi)  # ties: the lowest rank
        imposed[last] += hi - lo
        for r in ranks:
            wait[r] += hi - s[r]
            late[r] += s[r] - lo
    strag = None
    delay = 0
    if m and len(per_rank) > 1:
        strag = max(ranks, key=lambda r: (imposed[r], -r))
        delay = max(wait[r] for r in ranks if r != strag)
    return {"step": i, "name": per_rank[0][i]["name"], "collectives": m, "straggler": strag,
            "delay": delay, "wait": wait, "arrival": late,
            "cpu_start": [per_rank[r][i]["cpu_start"] - shift[r] for r in ranks],
            "gpu_span": [per_rank[r][i]["gpu_span"] for r in ranks],
            "in_collectives": [sum(e - s for s, e in per_rank[r][i]["colls"][:m]) for r in ranks]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--align", default="auto", choices=["auto", "none"])
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--floor-us", type=int, default=100)
    ap.add_argument("--floor-share", type=int, default=50, help="percent of the median decode-step GPU span")
    ap.add_argument("--tokens", type=int)
    ap.add_argument("--context")
    ap.add_argument("--context-regex")
    a = ap.parse_args()
    got = [rank_steps(p, a.context, a.context_regex) for p in a.traces]
    dec = [g[0] for g in got]
    bnd = [g[1] for g in got]
    n = aligned(dec)
    offs = offsets(dec, n, a.align)
    steps = [step_figures(dec, i, offs) for i in range(n)]
    nb = aligned(bnd)
    bsteps = [step_figures(bnd, i, offs) for i in range(nb)]
    delays = [s["delay"] for s in steps]
    med = exact_median(delays) if delays else Fraction(0)
    mad = exact_median([abs(d - med) for d in delays]) if delays else Fraction(0)
    spans = [x for s in steps for x in s["gpu_span"] if x is not None]
    span_med = exact_median(spans) if spans else Fraction(0)
    thr = max(Fraction(a.floor_us * 1000), span_med * a.floor_share / 100, med + a.k * mad)
    flagged = [s["step"] for s in steps if s["delay"] > thr]
    tokens = a.tokens
    if tokens is None:
        sp = R.summary_path(a.traces[0])
        tokens = R.read_tokens(sp) if sp else None
    per_rank = []
    for r in range(len(dec)):
        w = sum(s["wait"][r] for s in steps)
        span = sum(s["gpu_span"][r] or 0 for s in steps)
        per_rank.append({"rank": r, "wait": w, "gpu_span": span,
                         "wait_per_token": str(Fraction(w, tokens)) if tokens else None,
                         "wait_share": str(Fraction(w, span)) if span else None,
                         "straggler_steps": sum(1 for s in steps if s["straggler"] == r
                                                and s["step"] in flagged)})
    print(json.dumps({"decode_steps": [len(d) for d in dec], "aligned": n,
                      "boundary_steps": [len(b) for b in bnd], "boundary_aligned": nb,
                      "offsets": offs, "threshold": str(thr), "median_step_span": str(span_med), "median_delay": str(med),
                      "mad_delay": str(mad), "flagged": flagged, "tokens": tokens,
                      "per_rank": per_rank, "steps": steps, "boundary": bsteps}, separators=(",", ":")))


if __name__ == "__main__":
    main()
