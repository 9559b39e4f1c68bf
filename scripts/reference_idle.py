#!/usr/bin/env python3
"""Independent reference for `torchtrace idle` (issue 35), written from
shared/docs/VIEWS.md (rules C1-C8, I1-I6), stdlib only (json + gzip + decimal).

    python3 scripts/reference_idle.py TRACE [TRACE ...] [--kernel-wait-ns N]

Prints a JSON document {"traces": [...]}: per trace the devices (I4), the
streams with their queues (I2, I3, I5), the steps (I6: rows, pre, unattributed,
totals) and the counted notes. Times are integer ns from the decimal text of
ts/dur (C1). Brute force where it is cheap: unions by sorting, the per-step
queue by walking the whole step function.
"""
import argparse
import bisect
import gzip
import json
import re
import sys
from decimal import Decimal, ROUND_HALF_EVEN
from fractions import Fraction

ACT_KIND = {"kernel": "kernel", "Kernel": "kernel", "gpu_memcpy": "memcpy", "Memcpy": "memcpy",
            "gpu_memset": "memset", "Memset": "memset"}
RUNTIME = ("cuda_runtime", "cuda_driver", "Runtime")
COMM = re.compile(r"^(nccl|rccl)|cross_device_reduce|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all",
                  re.IGNORECASE)
VLLM = [re.compile(r"^execute_context_\d+\([^()]*\)_generation_\d+\([^()]*\)$"),
        re.compile(r"^execute_new_\d+_cached_\d+$"),
        re.compile(r"^execute_\d+_context_\d+\([^()]*\)_generation_\d+\([^()]*\)$")]
PROFILER_STEP = re.compile(r"^ProfilerStep#\d+$")
LIMIT = 1024


def ns(x):
    """C1: µs as written -> integer ns, half to even."""
    if isinstance(x, bool) or x is None:
        return None
    return int((Decimal(x) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def load(path):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        doc = json.loads(f.read(), parse_float=Decimal)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def rnd(num, den, places):
    """An exact fraction rounded half to even to `places` decimals, as a float."""
    if den == 0:
        return None
    q = round(Fraction(num, den) * 10 ** places)  # Fraction.__round__ is half to even
    return q / 10 ** places


def pct(num, den):
    return rnd(100 * num, den, 4)


def label(v):
    return str(v)


def order_key(v):
    """pid/tid order: integers numerically, before strings."""
    return (0, v, "") if isinstance(v, int) else (1, 0, str(v))


def union(ivs):
    out = []
    for s, e in sorted(ivs):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def length(u):
    return sum(e - s for s, e in u)


def inter_fast(a, b):
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def klass(a):
    """C6."""
    if a["kind"] != "kernel" or a["name"].startswith("Memcpy") or a["name"].startswith("Memset"):
        return "memory"
    return "comm" if COMM.search(a["name"]) else "compute"


def step_fn(changes):
    """I5: instants ascending with the value after each (changes at one instant together)."""
    by_t = {}
    for t, d in changes:
        by_t[t] = by_t.get(t, 0) + d
    pts, cur = [], 0
    for t in sorted(by_t):
        cur += by_t[t]
        pts.append((t, cur))
    return pts


def queue_stats(pts):
    s = {"max": 0, "min": 0, "integral_ns": 0, "window_ns": 0, "mean": None,
         "time_at_zero_ns": 0, "time_at_or_above_1024_ns": 0}
    if not pts:
        return s
    s["window_ns"] = pts[-1][0] - pts[0][0]
    if len(pts) == 1:
        s["max"] = s["min"] = pts[0][1]
        return s
    segs = [(pts[i][1], pts[i + 1][0] - pts[i][0]) for i in range(len(pts) - 1)]
    s["max"] = max(v for v, _ in segs)
    s["min"] = min(v for v, _ in segs)
    s["integral_ns"] = sum(v * d for v, d in segs)
    s["time_at_zero_ns"] = sum(d for v, d in segs if v == 0)
    s["time_at_or_above_1024_ns"] = sum(d for v, d in segs if v >= LIMIT)
    s["mean"] = rnd(s["integral_ns"], s["window_ns"], 6)
    return s


def value_at(pts, t):
    """The value at t: after the last instant <= t (0 before the first)."""
    k = bisect.bisect_right(pts, (t, float("inf")))
    return pts[k - 1][1] if k else 0


def queue_over(pts, lo, hi):
    """Max and time-weighted mean of the step function over [lo, hi)."""
    mx = value_at(pts, lo)
    if hi <= lo:
        return {"max": mx, "mean": None}
    a_, b_ = bisect.bisect_right(pts, (lo, float("inf"))), bisect.bisect_left(pts, (hi, float("-inf")))
    cuts = [lo] + [t for t, _ in pts[a_:b_]] + [hi]
    integral = 0
    for a, b in zip(cuts, cuts[1:]):
        v = value_at(pts, a)
        mx = max(mx, v)
        integral += v * (b - a)
    return {"max": mx, "mean": rnd(integral, hi - lo, 6)}


def empty_part():
    return {"activities": 0, "kernels": 0, "gpu_first_start_ns": None, "gpu_last_end_ns": None,
            "busy_ns": 0, "gpu_ns": 0, "host_wait_ns": 0, "kernel_wait_ns": 0, "other_ns": 0,
            "idle_ns": 0, "compute_ns": 0, "comm_ns": 0, "memory_ns": 0, "comm_comp_overlap_ns": 0,
            "comm_comp_overlap_pct": None}


def one(path, kw):
    events = load(path)
    counts = {k: 0 for k in ("negative_dur_clamped", "no_ts", "duplicate_runtime_correlation", "unlinked",
                             "activities_starting_before_launch", "overlapping", "zero_duration",
                             "single_activity_streams", "steps_without_gpu_work")}
    acts, owner_of, steps_v, steps_p = [], {}, [], []
    for idx, e in enumerate(events):
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat, name = e.get("cat"), e.get("name", "")
        args = e.get("args") or {}
        ts = ns(e.get("ts"))
        dur = ns(e.get("dur")) or 0
        if cat in ACT_KIND:
            if ts is None:
                counts["no_ts"] += 1
                continue
            if dur < 0:
                counts["negative_dur_clamped"] += 1
                dur = 0
            corr = args.get("correlation")
            corr = corr if isinstance(corr, int) and not isinstance(corr, bool) else None
            acts.append({"start": ts, "end": ts + dur, "idx": idx, "corr": corr, "name": name,
                         "kind": ACT_KIND[cat], "device": e.get("pid"), "stream": e.get("tid")})
        elif cat in RUNTIME and ts is not None:
            corr = args.get("correlation")
            if not isinstance(corr, int) or isinstance(corr, bool):
                continue
            # C3: the first in file order owns a correlation.
            if corr in owner_of:
                counts["duplicate_runtime_correlation"] += 1
            else:
                owner_of[corr] = {"ts": ts, "thread": (e.get("pid"), e.get("tid"))}
        if ts is not None and cat == "user_annotation" and any(r.match(name) for r in VLLM):
            steps_v.append((ts, idx, name, ts + max(dur, 0), (e.get("pid"), e.get("tid"))))
        if ts is not None and cat in ("user_annotation", "cpu_op", "Operator") and PROFILER_STEP.match(name):
            steps_p.append((ts, idx, name, ts + max(dur, 0), (e.get("pid"), e.get("tid"))))
    grammar, steps = ("vllm", steps_v) if steps_v else (("ProfilerStep", steps_p) if steps_p else (None, []))
    steps.sort(key=lambda s: (s[0], s[1]))
    # C8: windows [S_i.ts, S_{i+1}.ts) of the next step on the same thread.
    host_end = [None] * len(steps)
    for i, s in enumerate(steps):
        later = [t for t in steps[i + 1:] if t[4] == s[4]]
        if later:
            host_end[i] = later[0][0]
    for a in acts:
        a["call"] = owner_of.get(a["corr"]) if a["corr"] is not None else None
        if a["call"] is None:
            counts["unlinked"] += 1
            a["part"] = "unattributed"
        else:
            c = a["call"]
            mine = [i for i, s in enumerate(steps) if s[4] == c["thread"]]
            if not mine:
                a["part"] = "unattributed"
            else:
                holding = [i for i in mine if steps[i][0] <= c["ts"]]
                a["part"] = holding[-1] if holding else "pre"
            if a["start"] < c["ts"]:
                counts["activities_starting_before_launch"] += 1
        if a["end"] == a["start"]:
            counts["zero_duration"] += 1
        a["class"] = klass(a)
        a["gap"], a["cat"] = 0, None
    # I1-I3, I5: streams.
    lanes = {}
    for a in acts:
        lanes.setdefault((a["device"], a["stream"]), []).append(a)
    streams, fns = [], {}
    for key in sorted(lanes, key=lambda k: (order_key(k[0]), order_key(k[1]))):
        run = sorted(lanes[key], key=lambda a: (a["start"], a["end"], a["idx"]))
        s = {"device": label(key[0]), "stream": label(key[1]), "activities": len(run),
             "unlinked": sum(1 for a in run if a["call"] is None),
             "first_start_ns": run[0]["start"], "last_end_ns": max(a["end"] for a in run)}
        s["span_ns"] = s["last_end_ns"] - s["first_start_ns"]
        s["busy_ns"] = length(union([(a["start"], a["end"]) for a in run]))
        cat = {"host_wait": [0, 0], "kernel_wait": [0, 0], "other": [0, 0]}
        running_max = run[0]["end"]  # max end of the activities before k (I2)
        for k in range(1, len(run)):
            a, prev_end = run[k], running_max
            if a["start"] < prev_end:
                counts["overlapping"] += 1
            gap = max(0, a["start"] - prev_end)
            if gap > 0:
                if a["call"] is not None and a["call"]["ts"] > prev_end:
                    c = "host_wait"
                elif gap < kw:
                    c = "kernel_wait"
                else:
                    c = "other"
                cat[c][0] += gap
                cat[c][1] += 1
                a["gap"], a["cat"] = gap, c
            running_max = max(running_max, a["end"])
        s["idle_ns"] = sum(v[0] for v in cat.values())
        for c, (t, n) in cat.items():
            s[c + "_ns"], s[c + "_gaps"] = t, n
            s[c + "_pct_of_idle"] = pct(t, s["idle_ns"])
        assert s["idle_ns"] == s["span_ns"] - s["busy_ns"], "I2: gaps sum to span - busy"
        linked = [a for a in run if a["call"] is not None]
        inflight = step_fn([(a["call"]["ts"], 1) for a in linked] + [(a["end"], -1) for a in linked])
        pending = step_fn([(a["call"]["ts"], 1) for a in linked] + [(a["start"], -1) for a in linked])
        s["queue"] = {"in_flight": queue_stats(inflight), "pending": queue_stats(pending),
                      "activities_starting_before_launch": sum(1 for a in linked if a["start"] < a["call"]["ts"])}
        if len(run) == 1:
            counts["single_activity_streams"] += 1
        fns[key] = inflight
        streams.append(s)
    # I4: devices.
    devs = {}
    for a in acts:
        devs.setdefault(a["device"], []).append(a)
    devices, compute_of = [], {}
    tot_ov = tot_comm = 0
    for d in sorted(devs, key=order_key):
        run = devs[d]
        u = union([(a["start"], a["end"]) for a in run])
        span = u[-1][1] - u[0][0]
        busy = length(u)
        cu = union([(a["start"], a["end"]) for a in run if a["class"] == "compute"])
        mu = union([(a["start"], a["end"]) for a in run if a["class"] == "comm"])
        yu = union([(a["start"], a["end"]) for a in run if a["class"] == "memory"])
        compute_of[d] = cu
        ov = inter_fast(mu, cu)
        idle = span - busy
        devices.append({"device": label(d), "activities": len(run), "span_ns": span, "busy_ns": busy,
                        "idle_ns": idle, "compute_ns": length(cu), "comm_ns": length(mu),
                        "memory_ns": length(yu), "non_compute_ns": span - length(cu) - idle,
                        "comm_kernels": sum(1 for a in run if a["class"] == "comm"),
                        "comm_comp_overlap_ns": ov, "comm_comp_overlap_pct": pct(ov, length(mu)),
                        "idle_pct": pct(idle, span), "compute_pct": pct(length(cu), span)})
        tot_ov += ov
        tot_comm += length(mu)
    # I6: parts.
    def part(members):
        p = empty_part()
        if not members:
            return p
        p["activities"] = len(members)
        p["kernels"] = sum(1 for a in members if a["kind"] == "kernel")
        p["gpu_first_start_ns"] = min(a["start"] for a in members)
        p["gpu_last_end_ns"] = max(a["end"] for a in members)
        p["busy_ns"] = length(union([(a["start"], a["end"]) for a in members]))
        p["gpu_ns"] = sum(a["end"] - a["start"] for a in members)
        for c in ("host_wait", "kernel_wait", "other"):
            p[c + "_ns"] = sum(a["gap"] for a in members if a["cat"] == c)
        p["idle_ns"] = sum(a["gap"] for a in members)
        comm = ov = comp = mem = 0
        for d in {a["device"] for a in members}:
            def of(c):
                return union([(a["start"], a["end"]) for a in members if a["device"] == d and a["class"] == c])
            mu = of("comm")
            comm += length(mu)
            comp += length(of("compute"))
            mem += length(of("memory"))
            ov += inter_fast(mu, compute_of[d])
        p["compute_ns"], p["memory_ns"] = comp, mem
        p["comm_ns"], p["comm_comp_overlap_ns"] = comm, ov
        p["comm_comp_overlap_pct"] = pct(ov, comm)
        return p

    by_part = {}
    for a in acts:
        by_part.setdefault(a["part"], []).append(a)
    rows = []
    for i, s in enumerate(steps):
        members = by_part.get(i, [])
        row = {"index": i, "name": s[2], "host_start_ns": s[0], "host_end_ns": host_end[i],
               "annotation_end_ns": s[3]}
        row.update(part(members))
        q = {}
        for key in {(a["device"], a["stream"]) for a in members}:
            pts = fns[key]
            hi = host_end[i] if host_end[i] is not None else pts[-1][0]
            q[label(key[0]) + ":" + label(key[1])] = queue_over(pts, s[0], hi)
        row["queue_in_flight"] = q
        if not members:
            counts["steps_without_gpu_work"] += 1
        rows.append(row)
    pre, unatt = part(by_part.get("pre", [])), part(by_part.get("unattributed", []))
    totals = empty_part()
    everything = rows + [pre, unatt]
    for k in ("activities", "kernels", "busy_ns", "gpu_ns", "host_wait_ns", "kernel_wait_ns", "other_ns",
              "idle_ns", "compute_ns", "comm_ns", "memory_ns", "comm_comp_overlap_ns"):
        totals[k] = sum(p[k] for p in everything)
    firsts = [p["gpu_first_start_ns"] for p in everything if p["gpu_first_start_ns"] is not None]
    lasts = [p["gpu_last_end_ns"] for p in everything if p["gpu_last_end_ns"] is not None]
    totals["gpu_first_start_ns"] = min(firsts) if firsts else None
    totals["gpu_last_end_ns"] = max(lasts) if lasts else None
    totals["comm_comp_overlap_pct"] = pct(totals["comm_comp_overlap_ns"], totals["comm_ns"])
    for k in ("host_wait_ns", "kernel_wait_ns", "other_ns", "idle_ns"):
        assert totals[k] == sum(s[k] for s in streams), "I6: parts add up to the streams"
    return {"path": path, "units": "ns", "thresholds": {"kernel_wait_ns": kw, "queue_limit": LIMIT},
            "devices": devices, "comm_comp_overlap_pct": pct(tot_ov, tot_comm), "streams": streams,
            "steps": {"grammar": grammar, "window": "iteration", "count": len(steps), "rows": rows,
                      "pre": pre, "unattributed": unatt, "totals": totals},
            "counts": counts}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--kernel-wait-ns", type=int, default=30000)
    a = ap.parse_args()
    json.dump({"traces": [one(p, a.kernel_wait_ns) for p in a.traces]}, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
