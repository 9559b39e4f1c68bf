#!/usr/bin/env python3
"""Independent reference for `torchtrace memory`, written from docs/VIEWS.md
(rules C1, C2, C4, C5, C8, M1-M6), stdlib only (json + gzip + decimal).

    python3 scripts/reference_memory.py TRACE [TRACE ...] [--top N] [--timeline N]

Prints a JSON document {"traces": [...]} with, per trace, the devices and
their figures under the names `torchtrace memory -f json` uses. Brute force
where it is cheap: the innermost enclosing host op of each allocation by
scanning every op of its thread, the step rows by scanning every event.
"""
import argparse
import gzip
import json
import re
from decimal import Decimal, ROUND_HALF_EVEN
from fractions import Fraction

HOST = ("cpu_op", "user_annotation", "python_function", "Operator")
VLLM = [re.compile(r"^execute_context_\d+\([^()]*\)_generation_\d+\([^()]*\)$"),
        re.compile(r"^execute_new_\d+_cached_\d+$"),
        re.compile(r"^execute_\d+_context_\d+\([^()]*\)_generation_\d+\([^()]*\)$")]
PROFILER_STEP = re.compile(r"^ProfilerStep#\d+$")


def ns(x):
    """C1: µs as written -> integer ns, half to even."""
    if isinstance(x, bool) or x is None:
        return None
    return int((Decimal(x) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def integer(v):
    """An integer arg (JSON integers only)."""
    if isinstance(v, bool) or not isinstance(v, int):
        return None
    return v


def load(path):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        doc = json.loads(f.read(), parse_float=Decimal)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def label(v):
    return str(v)


def device_label(t, i):
    return {0: "cpu", 1: f"cuda:{i}", 6: f"hip:{i}"}.get(t, f"type{t}:{i}")


def mean6(num, den):
    if den == 0:
        return None
    return round(Fraction(num, den) * 10 ** 6) / 10 ** 6


def generation_tokens(name):
    """The generation tokens a vLLM step name says (draft tokens included):
    the number in the generation parentheses of the context/generation form."""
    m = re.match(r"^execute_context_\d+\([^()]*\)_generation_\d+\(([0-9]+)\)$", name)
    if not m or int(m.group(1)) >= 2 ** 64:
        return None
    return int(m.group(1))


def steps_of(events):
    """C8: vLLM step annotations, else ProfilerStep#N, sorted by (ts, index)."""
    def pick(test, cats):
        out = []
        for i, e in enumerate(events):
            if e.get("ph") == "X" and e.get("cat") in cats and isinstance(e.get("name"), str) \
                    and test(e["name"]) and ns(e.get("ts")) is not None:
                out.append((ns(e["ts"]), i, e["name"], (label(e.get("pid")), label(e.get("tid")))))
        return out
    wins = pick(lambda n: any(r.match(n) for r in VLLM), ("user_annotation",))
    grammar = "vllm"
    if not wins:
        grammar = "ProfilerStep"
        wins = pick(lambda n: PROFILER_STEP.match(n) is not None, ("user_annotation", "cpu_op", "Operator"))
    wins.sort()
    ends = []
    for k, w in enumerate(wins):
        nxt = next((v[0] for v in wins[k + 1:] if v[3] == w[3]), None)
        ends.append(nxt)
    return (grammar if wins else None), wins, ends


def holders(rows, top):
    by = {}
    for cat, name, b in rows:
        h = by.setdefault((cat, name), {"cat": cat, "name": name, "bytes": 0, "allocations": 0})
        h["bytes"] += b
        h["allocations"] += 1
    out = sorted(by.values(), key=lambda h: (-h["bytes"], -h["allocations"], h["cat"], h["name"]))
    if top and len(out) > top:
        rest = out[top:]
        out = out[:top] + [{"cat": "", "name": f"(others) {len(rest)} holders",
                            "bytes": sum(h["bytes"] for h in rest),
                            "allocations": sum(h["allocations"] for h in rest)}]
    return out


def analyze(path, top, npoints):
    events = load(path)
    mem = []
    ops = {}  # lane -> [(ts, end, index, cat, name)]
    malformed = 0
    for i, e in enumerate(events):
        if not isinstance(e, dict):
            continue
        if e.get("name") == "[memory]":
            a = e.get("args") or {}
            ts = ns(e.get("ts"))
            b, t, d = integer(a.get("Bytes")), integer(a.get("Device Type")), integer(a.get("Device Id"))
            if ts is None or b is None or t is None or d is None:
                malformed += 1
                continue
            mem.append({"ts": ts, "i": i, "bytes": b, "ta": integer(a.get("Total Allocated")),
                        "tr": integer(a.get("Total Reserved")), "addr": integer(a.get("Addr")),
                        "dev": (t, d), "lane": (label(e.get("pid")), label(e.get("tid")))})
        elif e.get("ph") == "X" and e.get("cat") in HOST and ns(e.get("ts")) is not None:
            ts = ns(e["ts"])
            dur = max(ns(e.get("dur")) or 0, 0)
            ops.setdefault((label(e.get("pid")), label(e.get("tid"))), []).append(
                (ts, ts + dur, i, e["cat"], e.get("name")))
    grammar, wins, ends = steps_of(events)
    out = {"path": path, "step_grammar": grammar, "counts": {"memory_events": len(mem), "malformed": malformed},
           "devices": []}
    any_module = any(o[4].startswith("nn.Module: ") for v in ops.values() for o in v if isinstance(o[4], str))

    def innermost(lane, t, module):
        best = None
        for o in ops.get(lane, []):
            if module and not (isinstance(o[4], str) and o[4].startswith("nn.Module: ")):
                continue
            if o[0] <= t <= o[1]:
                key = (o[0], -o[1], o[2])
                if best is None or key > best[0]:
                    best = (key, o)
        if best is None:
            return ("", "(no module)" if module else "(no host op)")
        return (best[1][3], best[1][4])

    for dev in sorted({m["dev"] for m in mem}):
        ev = sorted((m for m in mem if m["dev"] == dev), key=lambda m: (m["ts"], m["i"]))
        absolute = all(m["ta"] is not None for m in ev)
        start = ev[0]["ta"] - ev[0]["bytes"] if absolute else 0
        levels, level = [], start
        for m in ev:
            level = m["ta"] if absolute else level + m["bytes"]
            levels.append(level)
        peak = max(levels)
        p = levels.index(peak)
        mism = sum(1 for k in range(1, len(ev)) if absolute and ev[k]["ta"] != ev[k - 1]["ta"] + ev[k]["bytes"])
        # M3: lives
        lives, live = [], {}
        earlier = [0, 0]
        noaddr = freenoaddr = reused = sizemis = 0
        for k, m in enumerate(ev):
            if m["bytes"] > 0:
                if m["addr"] is None:
                    noaddr += 1
                    continue
                if m["addr"] in live:
                    lives[live[m["addr"]]][1] = k
                    reused += 1
                live[m["addr"]] = len(lives)
                lives.append([k, None])
            elif m["bytes"] < 0:
                if m["addr"] is None:
                    freenoaddr += 1
                    continue
                j = live.pop(m["addr"], None)
                if j is None:
                    earlier[0] += 1
                    earlier[1] += -m["bytes"]
                else:
                    lives[j][1] = k
                    if ev[lives[j][0]]["bytes"] != -m["bytes"]:
                        sizemis += 1
        at_peak = [a for a, e in lives if a <= p and (e is None or e > p)]
        never = [a for a, e in lives if e is None]
        held = sum(ev[a]["bytes"] for a in at_peak)
        rs = [m["tr"] for m in ev if m["tr"] is not None]

        def rows(idx, module):
            return holders([(*innermost(ev[a]["lane"], ev[a]["ts"], module), ev[a]["bytes"]) for a in idx], top)
        steps = []
        for k, (w, end) in enumerate(zip(wins, ends)):
            inside = [j for j, m in enumerate(ev) if m["ts"] >= w[0] and (end is None or m["ts"] < end)]
            before = [j for j, m in enumerate(ev) if m["ts"] < w[0]]
            sb = levels[before[-1]] if before else start
            eb = levels[inside[-1]] if inside else sb
            steps.append({"index": k, "name": w[2], "start_ns": w[0], "end_ns": end,
                          "tokens": generation_tokens(w[2]),
                          "events": len(inside),
                          "allocations": sum(1 for j in inside if ev[j]["bytes"] > 0),
                          "frees": sum(1 for j in inside if ev[j]["bytes"] < 0),
                          "bytes_allocated": sum(ev[j]["bytes"] for j in inside if ev[j]["bytes"] > 0),
                          "bytes_freed": -sum(ev[j]["bytes"] for j in inside if ev[j]["bytes"] < 0),
                          "start_bytes": sb, "high_water_bytes": max([sb] + [levels[j] for j in inside]),
                          "end_bytes": eb, "net_bytes": eb - sb})
        d = {
            "device": device_label(*dev), "device_type": dev[0], "device_id": dev[1],
            "levels": "total_allocated" if absolute else "running_sum",
            "events": len(ev), "allocations": sum(1 for m in ev if m["bytes"] > 0),
            "frees": sum(1 for m in ev if m["bytes"] < 0),
            "first_ts_ns": ev[0]["ts"], "last_ts_ns": ev[-1]["ts"],
            "bytes_allocated": sum(m["bytes"] for m in ev if m["bytes"] > 0),
            "bytes_freed": -sum(m["bytes"] for m in ev if m["bytes"] < 0),
            "baseline_bytes": start if absolute else None,
            "peak_allocated_bytes": peak, "peak_ts_ns": ev[p]["ts"], "final_allocated_bytes": levels[-1],
            "peak_reserved_bytes": max(rs) if rs else None,
            "reserved_at_peak_bytes": ev[p]["tr"],
            "reserved_minus_allocated_at_peak_bytes": ev[p]["tr"] - peak if ev[p]["tr"] is not None else None,
            "held_at_peak_bytes": held, "held_at_peak_allocations": len(at_peak),
            "before_trace_bytes": peak - held if absolute else None,
            "at_peak": rows(at_peak, False),
            "at_peak_by_module": rows(at_peak, True) if any_module else [],
            "never_freed_bytes": sum(ev[a]["bytes"] for a in never), "never_freed_allocations": len(never),
            "never_freed": rows(never, False),
            "frees_of_earlier_allocations": earlier[0], "bytes_freed_of_earlier_allocations": earlier[1],
            "allocations_without_addr": noaddr, "frees_without_addr": freenoaddr, "reused_live_addresses": reused,
            "free_size_mismatches": sizemis, "total_mismatches": mism,
            "steps": steps,
        }
        if npoints:
            width = ev[-1]["ts"] - ev[0]["ts"] + 1
            pts = {}
            for m, lv in zip(ev, levels):
                k = (m["ts"] - ev[0]["ts"]) * npoints // width
                q = pts.setdefault(k, {"ts_ns": ev[0]["ts"] + k * width // npoints,
                                       "allocated_bytes": lv, "reserved_bytes": m["tr"]})
                q["allocated_bytes"] = max(q["allocated_bytes"], lv)
                if m["tr"] is not None:
                    q["reserved_bytes"] = m["tr"] if q["reserved_bytes"] is None else max(q["reserved_bytes"], m["tr"])
            d["timeline"] = [pts[k] for k in sorted(pts)]
        out["devices"].append(d)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--timeline", type=int, default=0)
    a = ap.parse_args()
    print(json.dumps({"traces": [analyze(p, a.top, a.timeline) for p in a.traces]}, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
