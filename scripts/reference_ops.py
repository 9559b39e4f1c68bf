#!/usr/bin/env python3
"""Independent reference for `torchtrace ops` (issue 34), written from
shared/docs/VIEWS.md rules C1-C7 and O1-O9 (and I2-I3 for the GPU idle figures),
stdlib only, not from the Rust code.

    python3 scripts/reference_ops.py TRACE [TRACE ...]

Prints {"traces": [{"units", "thresholds", "input", "summary", "ops"}, ...]}: the
fields of `torchtrace ops -f json` that are figures, exact integer ns.

Different algorithms on purpose: where the Rust code answers containment with
max-trees and inclusive time with an offline Fenwick sweep, this walks each
thread in time order with the list of ops still open and looks at every one of
them (quadratic in nesting depth, fine on real traces).
"""
import gzip
import json
import re
import sys
from decimal import Decimal, ROUND_HALF_EVEN
from fractions import Fraction

HOST = ("cpu_op", "user_annotation", "python_function", "Operator")  # C2
SCOPES = ("cpu_op", "user_annotation", "Operator")  # C2: RecordFunction scopes
RUNTIME = ("cuda_runtime", "cuda_driver", "Runtime")
KINDS = {"kernel": "kernel", "Kernel": "kernel", "gpu_memcpy": "memcpy", "Memcpy": "memcpy",
         "gpu_memset": "memset", "Memset": "memset"}
SHORT_CPU, LONG_RUNTIME, LONG_DELAY = 50_000, 50_000, 100_000  # O6
NO_OP = "(no enclosing op)"


def ns(v):
    """C1: decimal µs text -> integer ns, half to even."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int):
        return v * 1000
    if isinstance(v, (Decimal, float, str)):
        try:
            d = Decimal(str(v)) * 1000
        except Exception:
            return None
        return int(d.to_integral_value(rounding=ROUND_HALF_EVEN))
    return None


def load(path):
    op = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with op(path, "rb") as f:
        doc = json.load(f, parse_float=Decimal)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def round_half_even(fr):
    return round(fr)  # Fraction.__round__ is half to even


def ratio6(num, den):
    if den == 0:
        return None
    return round_half_even(Fraction(num, den) * 10 ** 6) / 10 ** 6


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if n == 0:
        return None
    if n % 2:
        return xs[n // 2]
    return round_half_even(Fraction(xs[n // 2 - 1] + xs[n // 2], 2))


class E:
    __slots__ = ("cls", "cat", "name", "lane", "ts", "end", "dur", "idx", "corr", "kind",
                 "finished", "row", "acts", "owner", "parent", "launcher", "top")


def events(raw, counts):
    host, calls, acts = [], [], []
    for i, e in enumerate(raw):
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat = e.get("cat")
        if cat in HOST:
            cls = "host"
        elif cat in RUNTIME:
            cls = "call"
        elif cat in KINDS:
            cls = "act"
        else:
            continue
        ts = ns(e.get("ts"))
        if ts is None:
            counts["no_ts"] += 1
            continue
        d = ns(e.get("dur"))
        if d is not None and d < 0:
            counts["negative_dur_clamped"] += 1
        args = e.get("args") or {}
        x = E()
        x.cls, x.cat, x.name, x.idx = cls, cat, e.get("name", ""), i
        x.ts, x.dur = ts, max(d or 0, 0)
        x.end = x.ts + x.dur
        c = args.get("correlation")
        x.corr = c if isinstance(c, int) and not isinstance(c, bool) else None
        if cls == "act":
            dev = args.get("device", e.get("pid"))
            st = args.get("stream", e.get("tid"))
            x.lane = (json.dumps(dev), json.dumps(st))
            x.kind = KINDS[cat]
            acts.append(x)
        else:
            x.lane = (json.dumps(e.get("pid")), json.dumps(e.get("tid")))
            if cls == "host":
                if args.get("finished") is False or d is None:
                    counts["unfinished_host_ops"] += 1
                host.append(x)
            else:
                calls.append(x)
    return host, calls, acts


def sync_like(c):
    """C7."""
    if "Synchronize" in c.name:
        return True
    if re.match(r"^(cuda|hip|cu)Memcpy", c.name) and "Async" not in c.name:
        return True
    return any(a.kind == "memcpy" and "Pageable" in a.name for a in c.acts)


def new_row(cat, name):
    r = {k: 0 for k in (
        "calls", "cpu_total_ns", "cpu_self_ns", "sync_ns", "host_ns", "runtime_self_ns",
        "launches_self", "graph_launches_self", "kernels_self", "memcpys_self", "memsets_self",
        "gpu_self_ns", "launches_total", "activities_total", "gpu_total_ns", "activities_top",
        "gpu_top_ns", "short_gpu_self", "long_runtime_self", "long_launch_delay_self",
        "launch_latency_ns_sum", "launch_latency_ns_median", "queue_delay_ns_sum",
        "first_launch_delay_ns_sum", "first_launch_delay_n")}
    r["cat"], r["name"], r["launch_bound"], r["_lat"] = cat, name, None, []
    return r


def stats(vals, queue=False):
    out = {"sum": sum(vals),
           "mean": round_half_even(Fraction(sum(vals), len(vals))) if vals else None,
           "median": median(vals), "min": min(vals) if vals else None,
           "max": max(vals) if vals else None}
    if queue:
        out["negative"] = sum(1 for v in vals if v < 0)
        out["sum_clipped"] = sum(max(v, 0) for v in vals)
    return out


def launch_stats(ls):
    return {
        "launches": len(ls), "activities": sum(len(l["call"].acts) for l in ls),
        "cpu_ns": sum(l["cpu"] for l in ls), "gpu_ns": sum(l["gpu"] for l in ls),
        "launch_latency_ns": stats([l["lat"] for l in ls]),
        "queue_delay_ns": stats([l["queue"] for l in ls], queue=True),
        "short_gpu": sum(1 for l in ls if l["cpu"] <= SHORT_CPU and l["gpu"] < l["cpu"]),
        "gpu_shorter_than_cpu": sum(1 for l in ls if l["gpu"] < l["cpu"]),
        "long_runtime": sum(1 for l in ls if l["cpu"] > LONG_RUNTIME),
        "long_launch_delay": sum(1 for l in ls if l["queue"] > LONG_DELAY),
    }


def union_len(ivs):
    total, cur = 0, None
    for s, e in sorted(ivs):
        if cur is None or s > cur[1]:
            if cur:
                total += cur[1] - cur[0]
            cur = [s, e]
        else:
            cur[1] = max(cur[1], e)
    if cur:
        total += cur[1] - cur[0]
    return total


def one(path):
    counts = {"no_ts": 0, "negative_dur_clamped": 0, "duplicate_runtime_correlation": 0,
              "unlinked_activities": 0, "unfinished_host_ops": 0}
    host, calls, acts = events(load(path), counts)
    # C3: the first runtime call in file order owns a correlation.
    owner = {}
    for c in calls:
        c.acts = []
        if c.corr is not None:
            if c.corr in owner:
                counts["duplicate_runtime_correlation"] += 1
            else:
                owner[c.corr] = c
    for a in acts:
        a.owner = owner.get(a.corr) if a.corr is not None else None
        if a.owner is None:
            counts["unlinked_activities"] += 1
        else:
            a.owner.acts.append(a)
    rows = {}

    def row_of(cat, name):
        if (cat, name) not in rows:
            rows[(cat, name)] = new_row(cat, name)
        return rows[(cat, name)]

    for o in host:
        o.row = row_of(o.cat, o.name)
        o.parent = None
    # Per thread: ops in key order (C4), calls by ts; a sweep with the open ops.
    lanes = {}
    for o in host:
        lanes.setdefault(o.lane, ([], []))[0].append(o)
    for c in calls:
        lanes.setdefault(c.lane, ([], []))[1].append(c)
    inside = {}  # call -> list of enclosing ops (key order)
    children = {}
    for lane, (ops, cs) in lanes.items():
        ops.sort(key=lambda o: (o.ts, -o.end, o.idx))
        seq = [(o.ts, 0, k, o) for k, o in enumerate(ops)] + \
              [(c.ts, 1, k, c) for k, c in enumerate(cs)]
        seq.sort(key=lambda t: (t[0], t[1], t[2]))
        open_ops = []
        for ts, what, _, x in seq:
            open_ops = [o for o in open_ops if o.end >= ts]
            enc = [o for o in open_ops if o.end >= x.end]
            if what == 0:
                x.parent = enc[-1] if enc else None
                if x.parent is not None:
                    children.setdefault(id(x.parent), []).append((x.ts, x.end))
                x.row["calls"] += 1
                if not any(o.row is x.row for o in enc):
                    x.row["cpu_total_ns"] += x.dur  # O5: outermost of its name
                open_ops.append(x)
            else:
                inside[id(x)] = enc
                x.launcher = enc[-1] if enc else None  # O2
                scopes = [o for o in enc if o.cat in SCOPES]
                x.top = scopes[0] if scopes else x.launcher  # O4
                if x.launcher is not None:
                    children.setdefault(id(x.launcher), []).append((x.ts, x.end))
    for o in host:
        o.row["cpu_self_ns"] += o.dur - union_len(children.get(id(o), []))
    launches, first_self = [], {}
    without_op = 0
    for c in calls:
        r = c.launcher.row if c.launcher is not None else row_of(None, NO_OP)
        r["runtime_self_ns"] += c.dur
        sync = sync_like(c)
        enc_rows = []
        for o in inside[id(c)]:
            if not any(x is o.row for x in enc_rows):
                enc_rows.append(o.row)
        if sync:
            for rr in enc_rows:
                rr["sync_ns"] += c.dur
        if not c.acts:
            continue
        first = min(c.acts, key=lambda a: (a.ts, a.end, a.idx))
        graph = re.search("GraphLaunch", c.name) is not None
        kinds = [a.kind for a in c.acts]
        kind = "graph" if graph else ("memcpy" if all(k == "memcpy" for k in kinds) else
                                      "memset" if all(k == "memset" for k in kinds) else "kernel")
        gpu = sum(a.dur for a in c.acts)
        l = {"call": c, "cpu": c.dur, "gpu": gpu, "lat": first.ts - c.ts,
             "queue": first.ts - c.end, "kind": kind}
        launches.append(l)
        r["launches_self"] += 1
        r["graph_launches_self"] += int(graph)
        for k in ("kernel", "memcpy", "memset"):
            r[k + "s_self"] += kinds.count(k)
        r["gpu_self_ns"] += gpu
        r["short_gpu_self"] += int(l["cpu"] <= SHORT_CPU and gpu < l["cpu"])
        r["long_runtime_self"] += int(l["cpu"] > LONG_RUNTIME)
        r["long_launch_delay_self"] += int(l["queue"] > LONG_DELAY)
        r["launch_latency_ns_sum"] += l["lat"]
        r["queue_delay_ns_sum"] += l["queue"]
        r["_lat"].append(l["lat"])
        if c.launcher is None:
            without_op += 1
            r["launches_total"] += 1
            r["activities_total"] += len(c.acts)
            r["gpu_total_ns"] += gpu
        else:
            k = id(c.launcher)
            first_self[k] = (min(first_self[k][0], c.ts), c.launcher) if k in first_self \
                else (c.ts, c.launcher)
        for rr in enc_rows:  # O3: once per name
            rr["launches_total"] += 1
            rr["activities_total"] += len(c.acts)
            rr["gpu_total_ns"] += gpu
        t = c.top.row if c.top is not None else r
        t["activities_top"] += len(c.acts)
        t["gpu_top_ns"] += gpu
    for t, o in first_self.values():
        o.row["first_launch_delay_ns_sum"] += t - o.ts
        o.row["first_launch_delay_n"] += 1
    out_rows = []
    for r in rows.values():
        r["host_ns"] = r["cpu_total_ns"] - r["sync_ns"]
        r["launch_bound"] = (r["gpu_total_ns"] < r["host_ns"]) if r["activities_total"] > 0 else None
        r["launch_latency_ns_median"] = median(r.pop("_lat"))
        out_rows.append(r)
    out_rows.sort(key=lambda r: (-r["gpu_self_ns"], -r["gpu_total_ns"], -r["cpu_total_ns"],
                                 r["cat"] or "", r["name"]))

    # O9.
    s = {"host_ops": len(host), "runtime_calls": len(calls), "launches": len(launches),
         "graph_launches": sum(1 for l in launches if l["kind"] == "graph"),
         "activities": len(acts),
         "activities_linked": sum(1 for a in acts if a.owner is not None),
         "kernels": sum(1 for a in acts if a.kind == "kernel"),
         "memcpys": sum(1 for a in acts if a.kind == "memcpy"),
         "memsets": sum(1 for a in acts if a.kind == "memset"),
         "graph_kernels": sum(len(l["call"].acts) for l in launches if l["kind"] == "graph"),
         "launches_without_op": without_op,
         "gpu_ns": sum(a.dur for a in acts),
         "gpu_linked_ns": sum(a.dur for a in acts if a.owner is not None)}
    s["activities_unlinked"] = s["activities"] - s["activities_linked"]
    s["gpu_unlinked_ns"] = s["gpu_ns"] - s["gpu_linked_ns"]
    s["launch_stats"] = launch_stats(launches)
    s["launch_stats_by_kind"] = {k: launch_stats([l for l in launches if l["kind"] == k])
                                 for k in ("kernel", "graph", "memcpy", "memset")}
    top_total = sum(r["gpu_top_ns"] for r in out_rows)
    bound = [r for r in out_rows if r["launch_bound"] is True and r["gpu_top_ns"] > 0]
    s["launch_bound_gpu_share"] = ratio6(sum(r["gpu_top_ns"] for r in bound), top_total)
    bound = sorted(bound, key=lambda r: -r["gpu_top_ns"])  # stable: O1 order on ties
    s["launch_bound_top_ops"] = [r["name"] for r in bound[:10]]
    launching = {l["call"].lane for l in launches}
    window = blocked = 0
    for lane in launching:
        ops, cs = lanes[lane]
        xs = ops + cs
        window += max(x.end for x in xs) - min(x.ts for x in xs)
        blocked += union_len([(c.ts, c.end) for c in cs if sync_like(c)])
    s["host_window_ns"], s["host_blocked_ns"] = window, blocked
    s["host_busy_ns"] = window - blocked
    s["host_busy_per_gpu"] = ratio6(window - blocked, s["gpu_linked_ns"])
    # I2-I3 over all streams.
    streams = {}
    for a in acts:
        streams.setdefault(a.lane, []).append(a)
    idle = wait = 0
    for v in streams.values():
        v.sort(key=lambda a: (a.ts, a.end, a.idx))
        prev_end = v[0].end
        for a in v[1:]:
            gap = max(0, a.ts - prev_end)
            if gap > 0:
                idle += gap
                if a.owner is not None and a.owner.ts > prev_end:
                    wait += gap
            prev_end = max(prev_end, a.end)
    s["gpu_idle_ns"], s["gpu_host_wait_ns"] = idle, wait
    s["host_wait_share_of_idle"] = ratio6(wait, idle)
    if not acts:
        s["verdict"] = None
    elif s["host_busy_ns"] > s["gpu_linked_ns"] and 2 * wait > idle:
        s["verdict"] = "launch-bound"
    else:
        s["verdict"] = "not launch-bound"
    return {"units": "ns",
            "thresholds": {"short_gpu_cpu_max_ns": SHORT_CPU, "long_runtime_ns": LONG_RUNTIME,
                           "long_launch_delay_ns": LONG_DELAY},
            "input": counts, "summary": s, "ops": out_rows}


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    json.dump({"traces": [one(p) for p in argv]}, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
