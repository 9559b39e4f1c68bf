#!/usr/bin/env python3
"""Independent reference for `torchtrace diff` (docs/DEFINITIONS.md, "What changed (`diff`)").

stdlib only; it reuses the trace loading, context selection and innermost launch attribution of
scripts/reference.py (themselves written from the definitions) and computes the per-name tables,
graph replays and the exact summary from the definitions of diff:

  python3 scripts/reference_diff.py BASELINE CANDIDATE [--scope steps|trace] [--tokens N]...

Output: JSON on stdout with every name's calls, Σ duration (ns) and median (ns, exact string) per side,
the sides' totals, graph replays and signatures, the normalisation and the summary's exact parts.
"""

import argparse
import json
import os
import sys
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference as R  # noqa: E402


def median(vals):
    v = sorted(vals)
    n = len(v)
    return Fraction(v[n // 2]) if n % 2 else Fraction(v[n // 2 - 1] + v[n // 2], 2)


def side(path, scope, tokens):
    evs = R.complete_events(R.load_trace(path))
    label, _, selected, _ = R.select_contexts(evs)
    ledger = R.gpu_ledger(evs)
    if scope == "steps":
        works = R.attributed_works(selected, ledger, "auto")
        acts = [a for w in works for a in w["acts"]]
        launches = [l for w in works for l in w["launch_calls"]]
    else:
        # every GPU activity: a kernel/memcpy/memset with an integer correlation
        acts = [e for e in evs if R.act_kind(e) is not None and e.corr is not None]
        launches = ledger["launches"]
    ids = [a.idx for a in acts]
    assert len(ids) == len(set(ids)), "an activity counted twice"
    by = {}
    for a in acts:
        by.setdefault((R.act_kind(a), a.name), []).append(a.dur)
    names = {}
    for (kind, name), durs in by.items():
        names[(kind, name)] = {"calls": len(durs), "time_ns": sum(durs), "median": median(durs)}
    sigs = {}
    replays = 0
    for l in launches:
        if l.name.startswith(R.GRAPH_PREFIXES):
            members = sorted(ledger["acts"][l.idx], key=lambda a: (a.start, a.end, a.name))
            sig = tuple((R.act_kind(a), a.name) for a in members)
            sigs[sig] = sigs.get(sig, 0) + 1
            replays += 1
    tokens = R.resolve_tokens(path, tokens, None)
    return {"path": path, "context": label, "contexts": len(selected), "tokens": tokens,
            "names": names, "replays": replays, "sigs": sigs,
            "activities": len(acts), "total_ns": sum(a.dur for a in acts)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("baseline")
    ap.add_argument("candidate")
    ap.add_argument("--scope", choices=("steps", "trace"), default="steps")
    ap.add_argument("--tokens", type=int, action="append", default=[])
    a = ap.parse_args(argv)
    toks = a.tokens + [None] * (2 - len(a.tokens))
    b = side(a.baseline, a.scope, toks[0])
    c = side(a.candidate, a.scope, toks[1])
    if b["tokens"] and c["tokens"]:
        norm, nb, nc = "token", b["tokens"], c["tokens"]
    elif b["contexts"] and c["contexts"]:
        norm, nb, nc = "context", b["contexts"], c["contexts"]
    else:
        norm, nb, nc = "none", 1, 1
    kernels = []
    parts = {"a": 0, "b": 0, "added": 0, "removed": 0}
    for key in sorted(set(b["names"]) | set(c["names"])):
        rb, rc = b["names"].get(key), c["names"].get(key)
        status = "common" if rb and rc else ("added" if rc else "removed")
        cb, tb = (rb["calls"], rb["time_ns"]) if rb else (0, 0)
        cc, tc = (rc["calls"], rc["time_ns"]) if rc else (0, 0)
        delta = tc * nb - tb * nc  # units of 1/(nb*nc) ns
        if status == "common":
            # (a) call counts at the baseline's mean duration, rounded half to even to a unit
            ax = round(Fraction((cc * nb - cb * nc) * tb, cb))
            parts["a"] += ax
            parts["b"] += delta - ax
        elif status == "added":
            parts["added"] += tc * nb
        else:
            parts["removed"] += tb * nc
        fig = lambda r: None if r is None else {
            "calls": r["calls"], "time_ns": r["time_ns"], "median_ns": str(r["median"])}
        kernels.append({"kind": key[0], "name": key[1], "status": status,
                        "baseline": fig(rb), "candidate": fig(rc), "delta_units": delta})
    total = c["total_ns"] * nb - b["total_ns"] * nc
    assert parts["a"] + parts["b"] + parts["added"] - parts["removed"] == total

    def out_side(s):
        sig_lens = sum(len(k) * n for k, n in s["sigs"].items())
        return {"path": s["path"], "context": s["context"], "contexts": s["contexts"],
                "completion_tokens": s["tokens"], "activities": s["activities"], "total_ns": s["total_ns"],
                "graph_replays": s["replays"], "signatures": len(s["sigs"]),
                "activities_in_replays": sig_lens}

    only_b = sum(1 for k in b["sigs"] if k not in c["sigs"])
    only_c = sum(1 for k in c["sigs"] if k not in b["sigs"])
    doc = {"scope": a.scope, "normalisation": norm, "baseline": out_side(b), "candidate": out_side(c),
           "kernels": kernels, "only_baseline_signatures": only_b, "only_candidate_signatures": only_c,
           "summary": {"denominator": nb * nc, "total_units": total, "call_count_units": parts["a"],
                       "duration_units": parts["b"], "added_units": parts["added"],
                       "removed_units": parts["removed"]}}
    json.dump(doc, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
