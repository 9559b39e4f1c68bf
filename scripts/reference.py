#!/usr/bin/env python3
"""Independent reference implementation of docs/DEFINITIONS.md (stdlib only).

Used once to freeze the expected values asserted by the Rust tests
(tests/data/expected/, see COMMANDS.md there).  Clarity over speed: every time
value is an exact integer number of nanoseconds, every statistic an exact
Fraction; floats appear only when writing the output.

Subcommands:
  pair TRACE [TRACE2] [--context NAME | --context-regex RE] [--tokens N]... [--summary FILE]...
  hierarchy TRACE [--chain "a>b>c"]... [--any-thread] [--category CAT]...
  pair ... [--gpu-span auto|annotation|correlation]   (default auto)
  kernels TRACE [TRACE2] [--context NAME | --context-regex RE] [--tokens N]... [--summary FILE]... [--top N]
  timeline TRACE...            (exact-ns GPU timeline vs TraceLens-style float µs; a cross-check)
  spancheck TRACE... [--context NAME | --context-regex RE]   (annotation vs correlation GPU spans)
  overlaps TRACE...            (partial-overlap count, a MANIFEST cross-check)
  --self-test                  (hand-made timelines; also cross-checks sweep vs brute force)
"""

import argparse
import bisect
import gzip
import json
import os
import random
import re
import sys
from decimal import Decimal, Context, ROUND_HALF_EVEN
from fractions import Fraction

# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------

_DEC_CTX = Context(prec=400, rounding=ROUND_HALF_EVEN, Emax=999999, Emin=-999999)
_NS_PER_US = Decimal(1000)


def to_ns(v):
    """JSON number (int, or Decimal holding the exact text) in µs -> int ns.

    Returns None for anything that is not a JSON number (missing, null, string, bool)."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v * 1000
    if isinstance(v, Decimal):
        if not v.is_finite():
            return None
        x = _DEC_CTX.multiply(v, _NS_PER_US)  # exact: prec 400 digits
        return int(x.quantize(Decimal(1), rounding=ROUND_HALF_EVEN, context=_DEC_CTX))
    return None


def load_trace(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw.decode("utf-8"), parse_float=Decimal, parse_int=int)
    if isinstance(doc, list):  # bare event array (legal Chrome trace form)
        events = doc
    else:
        events = doc.get("traceEvents") or []
    return events


class Ev:
    __slots__ = ("idx", "name", "cat", "pid", "tid", "start", "end", "dur", "ext_id", "args", "corr")

    def __init__(self, idx, name, cat, pid, tid, start, dur, ext_id, corr=None):
        self.idx = idx          # position in traceEvents (file order)
        self.corr = corr        # args.correlation when it is a JSON integer, else None
        self.name = name
        self.cat = cat
        self.pid = pid
        self.tid = tid
        self.start = start
        self.dur = dur
        self.end = start + dur
        self.ext_id = ext_id

    def __repr__(self):
        return "Ev(%d %r %s..%s)" % (self.idx, self.name, self.start, self.end)


def jkey(v):
    """Hashable key for a JSON scalar that keeps 1 and "1" apart (missing == null)."""
    if v is None:
        return ("null", None)
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, (int, Decimal)):
        return ("num", v)
    if isinstance(v, str):
        return ("str", v)
    return ("other", json.dumps(v, sort_keys=True, default=str))


def complete_events(events):
    """All ph == "X" events with a numeric ts (missing dur -> 0), in file order."""
    out = []
    for i, e in enumerate(events):
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        start = to_ns(e.get("ts"))
        if start is None:
            continue  # no usable timestamp: not taken into account
        dur = to_ns(e.get("dur"))
        if dur is None:
            dur = 0
        name = e.get("name")
        if not isinstance(name, str):
            name = "" if name is None else str(name)
        cat = e.get("cat")
        args = e.get("args")
        ext = None
        if isinstance(args, dict) and "External id" in args:
            ext = args["External id"]
        corr = None
        if isinstance(args, dict):
            c = args.get("correlation")
            if isinstance(c, int) and not isinstance(c, bool):
                corr = c  # a JSON integer literal only (5.0 parses as Decimal: not an integer)
        out.append(Ev(i, name, cat, jkey(e.get("pid")), jkey(e.get("tid")), start, dur,
                      None if ext is None else jkey(ext), corr))
    return out


# ---------------------------------------------------------------------------
# Statistics (exact)
# ---------------------------------------------------------------------------

def quantile(sorted_vals, p):
    """numpy 'linear': rank = p*(n-1), interpolate between closest ranks. p a Fraction."""
    n = len(sorted_vals)
    rank = p * (n - 1)
    lo = rank.numerator // rank.denominator
    hi = lo if rank == lo else lo + 1
    frac = rank - lo
    return Fraction(sorted_vals[lo]) + (Fraction(sorted_vals[hi]) - sorted_vals[lo]) * frac


def stats(vals):
    """Exact stats of a list of ints (ns). None for an empty list."""
    if not vals:
        return None
    s = sorted(vals)
    n = len(s)
    if n % 2:
        med = Fraction(s[n // 2])
    else:
        med = Fraction(s[n // 2 - 1] + s[n // 2], 2)
    return {
        "median": med,
        "mean": Fraction(sum(s), n),
        "p10": quantile(s, Fraction(1, 10)),
        "p90": quantile(s, Fraction(9, 10)),
        "min": Fraction(s[0]),
        "max": Fraction(s[-1]),
        "sum": Fraction(sum(s)),
    }


def frac_str(q):
    """Exact decimal text of a Fraction when it terminates, else 'p/q'."""
    q = Fraction(q)
    d = q.denominator
    k2 = k5 = 0
    while d % 2 == 0:
        d //= 2
        k2 += 1
    while d % 5 == 0:
        d //= 5
        k5 += 1
    if d != 1:
        return "%d/%d" % (q.numerator, q.denominator)
    k = max(k2, k5)
    scaled = q * (10 ** k)
    assert scaled.denominator == 1
    n = scaled.numerator
    sign = "-" if n < 0 else ""
    digits = str(abs(n))
    if k == 0:
        return sign + digits
    digits = digits.rjust(k + 1, "0")
    return sign + digits[:-k] + "." + digits[-k:]


def ms(q):
    return None if q is None else float(Fraction(q) / 10**6)


def stats_ms(st):
    return None if st is None else {k: ms(v) for k, v in st.items()}


def stats_ns(st):
    return None if st is None else {k: frac_str(v) for k, v in st.items()}


def fl(q):
    return None if q is None else float(q)


# ---------------------------------------------------------------------------
# pair
# ---------------------------------------------------------------------------

_D = r"([0-9]+)"
_P = r"\(([^()]*)\)"
STEP_GRAMMARS = [
    # vLLM 0.14+: execute_context_<a>(<b>)_generation_<m>(<n>)
    (re.compile(r"execute_context_" + _D + _P + r"_generation_" + _D + _P), 1, 3),
    # vLLM 0.12-0.13: execute_new_<n>_cached_<m>
    (re.compile(r"execute_new_" + _D + r"_cached_" + _D), 1, 2),
    # 0.28+ detailed: execute_<t>_context_<a>(...)_generation_<m>(...)
    (re.compile(r"execute_" + _D + r"_context_" + _D + _P + r"_generation_" + _D + _P), 2, 4),
]


def step_kind(name):
    """None if not a recognised vLLM step name; else True (pure decode) / False."""
    for rx, gi_ctx, gi_gen in STEP_GRAMMARS:
        m = rx.fullmatch(name)
        if m:
            return int(m.group(gi_ctx)) == 0 and int(m.group(gi_gen)) >= 1
    return None


def summary_path(trace_path):
    for suf in (".pt.trace.json.gz", ".pt.trace.json"):
        if trace_path.endswith(suf):
            return trace_path[: -len(suf)] + ".summary.json"
    return None


def read_tokens(summary_file):
    try:
        with open(summary_file) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    if isinstance(doc, dict):
        v = doc.get("completion_tokens")
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    return None


def select_contexts(evs, context=None, context_regex=None):
    """The `pair` selection. Returns (label, pred, selected CPU annotations in file order, step_names)."""
    cpu = [e for e in evs if e.cat == "user_annotation"]
    step_names = {}
    decode_counts = {}
    for e in cpu:
        k = step_kind(e.name)
        if k is None:
            continue
        step_names[e.name] = step_names.get(e.name, 0) + 1
        if k:
            decode_counts[e.name] = decode_counts.get(e.name, 0) + 1

    if context is not None:
        label = context
        pred = lambda n: n == context
    elif context_regex is not None:
        label = context_regex
        rx = re.compile(context_regex)
        pred = lambda n: rx.search(n) is not None
    else:
        if decode_counts:
            best = min(decode_counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]
            label = best
            pred = lambda n: n == best
        else:
            label = None
            pred = lambda n: False

    selected = [e for e in cpu if pred(e.name)]
    return label, pred, selected, step_names


def resolve_tokens(path, tokens, summary):
    if tokens is None:
        sp = summary if summary is not None else summary_path(path)
        if sp is not None:
            tokens = read_tokens(sp)
    return tokens


GPU_SPAN_MODES = ("auto", "annotation", "correlation")


def pair_one(path, context=None, context_regex=None, tokens=None, summary=None, gpu_span="annotation",
             evs=None):
    """`pair` for one trace. gpu_span: where a context's GPU span comes from (DEFINITIONS.md,
    `pair --gpu-span`). The CLI default is auto; the function default (annotation) is the
    behaviour the pre---gpu-span frozen files were made with."""
    assert gpu_span in GPU_SPAN_MODES
    if evs is None:
        evs = complete_events(load_trace(path))
    gpu = [e for e in evs if e.cat == "gpu_user_annotation"]
    label, pred, selected, step_names = select_contexts(evs, context, context_regex)

    gpu_by_key = {}
    for g in gpu:
        if g.ext_id is None:
            continue
        gpu_by_key.setdefault((g.name, g.ext_id), []).append(g)

    cpu_keys = set()
    paired = []  # (cpu event, [gpu events])
    ann = {}     # cpu idx -> [gpu events] (paired contexts)
    multi = 0
    for c in selected:
        if c.ext_id is None:
            continue  # an annotation without External id never pairs
        cpu_keys.add((c.name, c.ext_id))
        gs = gpu_by_key.get((c.name, c.ext_id), [])
        if gs:
            paired.append((c, gs))
            ann[c.idx] = gs
            if len(gs) > 1:
                multi += 1
    gpu_unpaired = sum(1 for g in gpu if pred(g.name) and (g.ext_id is None or (g.name, g.ext_id) not in cpu_keys))

    # measured contexts: (cpu event, GPU span ns, source), in file order of the CPU annotations
    ledger = gpu_ledger(evs) if gpu_span != "annotation" else None
    works = attributed_works(selected, ledger) if ledger is not None else [None] * len(selected)
    measured = []
    for c, w in zip(selected, works):
        if gpu_span in ("annotation", "auto") and c.idx in ann:
            gs = ann[c.idx]
            measured.append((c, max(g.end for g in gs) - min(g.start for g in gs), "annotation"))
            continue
        if gpu_span in ("correlation", "auto"):
            if w["acts"]:
                measured.append((c, w["span"], "correlation"))
    if gpu_span == "annotation":
        assert [m[0] for m in measured] == [c for c, _ in paired]

    cpu_spans = [c.dur for c, _, _ in measured]
    gpu_spans = [sp for _, sp, _ in measured]
    cst, gst = stats(cpu_spans), stats(gpu_spans)

    tokens = resolve_tokens(path, tokens, summary)
    P = Fraction(tokens, len(measured)) if (tokens is not None and measured) else None
    per_tok = (Fraction(sum(gpu_spans), 10**6) / tokens) if (tokens and measured) else None

    res = {
        "path": path,
        "context": label,
        "contexts": len(selected),
        "pairs": len(paired),
        "cpu_unpaired": len(selected) - len(paired),
        "gpu_unpaired": gpu_unpaired,
        "multi_stream_pairs": multi,
        "measured": len(measured),
        "gpu_span_sources": {
            "annotation": sum(1 for m in measured if m[2] == "annotation"),
            "correlation": sum(1 for m in measured if m[2] == "correlation"),
        },
        "completion_tokens": tokens,
        "tokens_per_context": fl(P),
        "cpu_span_ms": stats_ms(cst),
        "gpu_span_ms": stats_ms(gst),
        "gpu_span_per_token_ms": fl(per_tok),
        "cpu_span_ns": stats_ns(cst),
        "gpu_span_ns": stats_ns(gst),
        "step_names": dict(sorted(step_names.items())),
    }
    exact = {"P": P, "per_tok": per_tok, "gmed": gst and gst["median"], "cmed": cst and cst["median"]}
    return res, exact


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return Fraction(a) / Fraction(b)


def cmd_pair(a):
    if len(a.traces) > 2:
        sys.exit("pair: at most two traces")
    out, exacts = [], []
    for i, p in enumerate(a.traces):
        tok = a.tokens[i] if a.tokens and i < len(a.tokens) else None
        summ = a.summary[i] if a.summary and i < len(a.summary) else None
        r, x = pair_one(p, a.context, a.context_regex, tok, summ, a.gpu_span)
        out.append(r)
        exacts.append(x)
    comp = None
    if len(out) == 2:
        b, c = exacts
        s_ctx = ratio(b["per_tok"], c["per_tok"])
        red = None
        if b["P"] is not None and c["P"] is not None and c["P"] != 0:
            red = (1 - b["P"] / c["P"]) * 100
        comp = {
            "baseline": out[0]["path"],
            "candidate": out[1]["path"],
            "s_context": fl(s_ctx),
            "context_reduction_pct": fl(red),
            "gpu_span_median_ratio": fl(ratio(c["gmed"], b["gmed"])),
            "cpu_span_median_ratio": fl(ratio(c["cmed"], b["cmed"])),
        }
    return {"traces": out, "comparison": comp}


# ---------------------------------------------------------------------------
# GPU work by launch correlation (kernels, pair --gpu-span) and the GPU timeline
# ---------------------------------------------------------------------------

LAUNCH_CATS = ("cuda_runtime", "cuda_driver", "Runtime")
ACT_KIND = {"kernel": "kernel", "Kernel": "kernel", "gpu_memcpy": "memcpy", "Memcpy": "memcpy",
            "gpu_memset": "memset", "Memset": "memset"}
GRAPH_PREFIXES = ("cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch")


def act_kind(e):
    """'kernel' / 'memcpy' / 'memset' for a GPU activity category, else None."""
    return ACT_KIND.get(e.cat) if isinstance(e.cat, str) else None


def is_launch(e):
    return isinstance(e.cat, str) and e.cat in LAUNCH_CATS and e.corr is not None


def gpu_ledger(evs):
    """Launch calls joined to their GPU activities by correlation.

    acts: launch idx -> its activities (file order); thr: (pid, tid) -> (sorted ts, launch calls sorted
    by (ts, file order)) for the launch calls with >= 1 activity."""
    launch_of = {}
    for e in evs:
        if is_launch(e):
            launch_of.setdefault(e.corr, e)  # shared correlation: the first launch call in file order
    acts = {}
    for e in evs:
        if act_kind(e) is not None and e.corr is not None:
            l = launch_of.get(e.corr)
            if l is not None:
                acts.setdefault(l.idx, []).append(e)
    thr = {}
    for l in launch_of.values():
        if l.idx in acts:
            thr.setdefault((l.pid, l.tid), []).append(l)
    for k, ls in thr.items():
        ls.sort(key=lambda l: (l.start, l.idx))
        thr[k] = ([l.start for l in ls], ls)
    working = sorted((l for l in launch_of.values() if l.idx in acts), key=lambda l: l.idx)
    return {"acts": acts, "thr": thr, "launches": working}


def union(iv):
    """Sorted disjoint union of (start, end) intervals; touching or overlapping ones merge."""
    out = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return [tuple(x) for x in out]


def ulen(iv):
    return sum(e - s for s, e in union(iv))


def median_of(vals):
    return stats(vals)["median"]


def context_work(c, ledger):
    """The GPU work held by context c alone (a CPU range): launch calls on c's (pid, tid) with
    c.start <= ts < c.end. `attributed_works` gives each launch call to one context."""
    got = ledger["thr"].get((c.pid, c.tid))
    ls = []
    if got:
        starts, launches = got
        ls = launches[bisect.bisect_left(starts, c.start):bisect.bisect_left(starts, c.end)]
    return work_from(ls, ledger)


def scope_of(c, scope):
    """The launch scope of context c: auto = process for ProfilerStep#N, thread otherwise."""
    if scope == "auto":
        return "process" if c.name.startswith("ProfilerStep#") else "thread"
    return scope


def holds(c, sc, l):
    """Does context c (scope sc) hold launch call l?"""
    return (l.pid == c.pid and (sc == "process" or l.tid == c.tid)
            and c.start <= l.start < c.end)


def attributed_works(ctxs, ledger, scope="auto"):
    """Each launch call with >= 1 activity goes to the innermost context holding it: the latest
    start, then the earliest end, then the later in file order. Plain loops (launches x contexts of
    its pid): the reference trades speed for obviousness."""
    scs = [scope_of(c, scope) for c in ctxs]
    by_pid = {}
    for i, c in enumerate(ctxs):
        by_pid.setdefault(jkey(c.pid), []).append(i)
    owned = [[] for _ in ctxs]
    for l in ledger["launches"]:
        best = None
        for i in by_pid.get(jkey(l.pid), []):
            c = ctxs[i]
            if holds(c, scs[i], l):
                key = (c.start, -c.end, c.idx)
                if best is None or key > best[0]:
                    best = (key, i)
        if best is not None:
            owned[best[1]].append(l)
    out = []
    for i, ls in enumerate(owned):
        ls.sort(key=lambda l: (l.start, l.idx))
        w = work_from(ls, ledger)
        w["scope"] = scs[i]
        out.append(w)
    return out


def work_from(ls, ledger):
    """Counts, span, busy and latencies of the launch calls ls (each with >= 1 activity)."""
    pairs = [(a, l) for l in ls for a in ledger["acts"][l.idx]]
    acts = [a for a, _ in pairs]
    w = {
        "launch_calls": ls,
        "acts": acts,
        "launches": len(ls),
        "graph_launches": sum(1 for l in ls if l.name.startswith(GRAPH_PREFIXES)),
        "kernels": sum(1 for a in acts if act_kind(a) == "kernel"),
        "memcpys": sum(1 for a in acts if act_kind(a) == "memcpy"),
        "memsets": sum(1 for a in acts if act_kind(a) == "memset"),
        "span": None, "busy": None, "idle": None, "latency": None, "to_start": None,
    }
    if acts:
        w["span"] = max(a.end for a in acts) - min(a.start for a in acts)
        w["busy"] = ulen([(a.start, a.end) for a in acts])
        w["idle"] = w["span"] - w["busy"]
        # queue delay per launch call: first activity start - call end, clipped at 0
        w["latency"] = median_of([max(0, min(a.start for a in ledger["acts"][l.idx]) - l.end) for l in ls])
        w["to_start"] = median_of([a.start - l.start for a, l in pairs])
    return w


def context_work_bf(c, evs):
    """context_work's counts, span, busy and latency straight from the definitions (quadratic; self-test)."""
    launch_calls = [e for e in evs if is_launch(e)]
    acts = []
    ls = []
    for l in launch_calls:
        if not (l.pid == c.pid and l.tid == c.tid and c.start <= l.start < c.end):
            continue
        first = min((x for x in launch_calls if x.corr == l.corr), key=lambda x: x.idx)
        if first is not l:
            continue
        mine = [a for a in evs if act_kind(a) is not None and a.corr == l.corr]
        if mine:
            ls.append((l, mine))
            acts.extend((a, l) for a in mine)
    res = {"launches": len(ls),
           "graph_launches": sum(1 for l, _ in ls if l.name.startswith(GRAPH_PREFIXES)),
           "kernels": sum(1 for a, _ in acts if act_kind(a) == "kernel"),
           "memcpys": sum(1 for a, _ in acts if act_kind(a) == "memcpy"),
           "memsets": sum(1 for a, _ in acts if act_kind(a) == "memset"),
           "span": None, "busy": None, "latency": None, "to_start": None}
    if acts:
        res["span"] = max(a.end for a, _ in acts) - min(a.start for a, _ in acts)
        # busy by elementary segments
        pts = sorted({x for a, _ in acts for x in (a.start, a.end)})
        res["busy"] = sum(y - x for x, y in zip(pts, pts[1:])
                          if any(a.start <= x and y <= a.end for a, _ in acts))
        res["latency"] = median_of([max(0, min(a.start for a in mine) - l.end) for l, mine in ls])
        res["to_start"] = median_of([a.start - l.start for a, l in acts])
    return res


def timeline_sets(evs):
    """(computation, communication, memcpy) intervals of every GPU activity of the trace."""
    comp, comm, mcpy = [], [], []
    for e in evs:
        k = act_kind(e)
        if k is None:
            continue
        if k == "memcpy":
            mcpy.append((e.start, e.end))
        elif "nccl" in e.name:
            comm.append((e.start, e.end))
        else:
            comp.append((e.start, e.end))
    return comp, comm, mcpy


def timeline_exact(comp, comm, mcpy):
    """Exact-ns timeline by one sweep over elementary segments (independent of TraceLens's merge/subtract)."""
    alls = comp + comm + mcpy
    if not alls:
        return None
    delta = {}
    for cat, iv in ((0, comp), (1, comm), (2, mcpy)):
        for s, e in iv:
            if e > s:
                delta.setdefault(s, [0, 0, 0])[cat] += 1
                delta.setdefault(e, [0, 0, 0])[cat] -= 1
    busy = compute = xcomm = xmem = 0
    cnt = [0, 0, 0]
    xs = sorted(delta)
    for x, y in zip(xs, xs[1:]):
        for i in range(3):
            cnt[i] += delta[x][i]
        L = y - x
        if cnt[0] or cnt[1] or cnt[2]:
            busy += L
        if cnt[0]:
            compute += L
        elif cnt[1]:
            xcomm += L
        elif cnt[2]:
            xmem += L
    total = max(e for _, e in alls) - min(s for s, _ in alls)
    r = {"total": total, "busy": busy, "idle": total - busy, "compute": compute,
         "exposed_comm": xcomm, "exposed_memcpy": xmem}
    assert r["compute"] + r["exposed_comm"] + r["exposed_memcpy"] + r["idle"] == r["total"]
    assert busy == ulen(alls) and compute == ulen(comp)
    return r


TIMELINE_KEYS = ("total", "busy", "idle", "compute", "exposed_comm", "exposed_memcpy")


def timeline_ms(tl):
    return {k + "_ms": (None if tl is None else ms(tl[k])) for k in TIMELINE_KEYS}


# --- TraceLens GPUEventAnalyser mirror on float µs (a cross-check, not a torchtrace figure) ---

def tl_float_events(path):
    """GPU activities as TraceLens reads them: json.load floats, t_end = ts + dur in float µs.
    Same event set as the exact timeline (ph X; dur missing -> 0)."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw.decode("utf-8"))
    events = doc if isinstance(doc, list) else (doc.get("traceEvents") or [])
    comp, comm, mcpy = [], [], []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat = e.get("cat")
        kind = ACT_KIND.get(cat) if isinstance(cat, str) else None
        ts = e.get("ts")
        if kind is None or isinstance(ts, bool) or not isinstance(ts, (int, float)):
            continue
        dur = e.get("dur")
        if isinstance(dur, bool) or not isinstance(dur, (int, float)):
            dur = 0
        iv = (ts, ts + dur)
        name = e.get("name") if isinstance(e.get("name"), str) else ""
        if kind == "memcpy":
            mcpy.append(iv)
        elif "nccl" in name:
            comm.append(iv)
        else:
            comp.append(iv)
    return comp, comm, mcpy


def _tl_merge(iv):
    if not iv:
        return []
    iv = sorted(iv, key=lambda x: x[0])
    out = [iv[0]]
    for s, e in iv[1:]:
        ls, le = out[-1]
        if s <= le:
            out[-1] = (ls, max(le, e))
        else:
            out.append((s, e))
    return out


def _tl_subtract(sub, iv):
    """iv minus sub (both merged & sorted), TraceLens's two-pointer walk."""
    res = []
    j = 0
    for bs, be in iv:
        cur = bs
        while j < len(sub) and sub[j][1] <= bs:
            j += 1
        k = j
        while k < len(sub) and sub[k][0] < be:
            a0, a1 = sub[k]
            if a0 > cur:
                res.append((cur, min(be, a0)))
            cur = max(cur, a1)
            if cur >= be:
                break
            k += 1
        if cur < be:
            res.append((cur, be))
    return res


def timeline_float_us(comp, comm, mcpy):
    alls = _tl_merge(comp + comm + mcpy)
    if not alls:
        return None
    cu, mu, pu = _tl_merge(comp), _tl_merge(comm), _tl_merge(mcpy)
    total = alls[-1][1] - alls[0][0]
    busy = sum(e - s for s, e in alls)
    return {
        "total": total,
        "busy": busy,
        "idle": total - busy,
        "compute": sum(e - s for s, e in cu),
        "exposed_comm": sum(e - s for s, e in _tl_subtract(cu, mu)),
        "exposed_memcpy": sum(e - s for s, e in _tl_subtract(mu, _tl_subtract(cu, pu))),
    }


def cmd_timeline(a):
    """Exact-ns timeline vs the TraceLens-style float-µs one, per trace."""
    out = []
    for p in a.traces:
        ex = timeline_exact(*timeline_sets(complete_events(load_trace(p))))
        fv = timeline_float_us(*tl_float_events(p))
        row = {"path": p, "exact_ms": timeline_ms(ex),
               "float_ms": {k + "_ms": (None if fv is None else fv[k] / 1e3) for k in TIMELINE_KEYS}}
        if ex is not None and fv is not None:
            diffs = {k + "_ms": abs(float(Fraction(ex[k], 10**6) - Fraction(fv[k]) / 1000)) for k in TIMELINE_KEYS}
            row["abs_diff_ms"] = diffs
            row["max_abs_diff_ms"] = max(diffs.values())
        else:
            assert ex is None and fv is None
            row["abs_diff_ms"] = None
            row["max_abs_diff_ms"] = None
        out.append(row)
    return {"traces": out}


# --- kernels ---

def stats_c(vals, conv):
    """Stats with a count, each value through conv; None for an empty set."""
    st = stats(vals)
    if st is None:
        return None
    d = {"count": len(vals)}
    d.update({k: conv(v) for k, v in st.items()})
    return d


def ns_str(q):
    return None if q is None else frac_str(q)


def kernels_one(path, context=None, context_regex=None, tokens=None, summary=None, top=10,
                launch_scope="auto"):
    evs = complete_events(load_trace(path))
    label, _, selected, _ = select_contexts(evs, context, context_regex)
    ledger = gpu_ledger(evs)
    works = list(zip(selected, attributed_works(selected, ledger, launch_scope)))
    busy_ctx = [(c, w) for c, w in works if w["acts"]]

    tokens = resolve_tokens(path, tokens, summary)
    spans = [w["span"] for _, w in busy_ctx]
    busys = [w["busy"] for _, w in busy_ctx]
    nkern = sum(w["kernels"] for _, w in busy_ctx)
    if tokens:
        kpt = Fraction(nkern, tokens)
        span_pt = Fraction(sum(spans), 10**6) / tokens
        busy_pt = Fraction(sum(busys), 10**6) / tokens
    else:
        kpt = span_pt = busy_pt = None

    # top kernels: each kernel activity is in one context at most
    seen = {}
    for _, w in busy_ctx:
        for a in w["acts"]:
            if act_kind(a) == "kernel":
                assert a.idx not in seen
                seen[a.idx] = a
    by_name = {}
    for a in seen.values():
        by_name.setdefault(a.name, []).append(a.dur)
    sum_busy = sum(busys)
    rows = []
    for name, durs in by_name.items():
        tot = sum(durs)
        rows.append((-tot, name, {
            "name": name,
            "calls": len(durs),
            "calls_per_context": fl(Fraction(len(durs), len(busy_ctx))),
            "total_ms": ms(tot),
            "share_pct": fl(Fraction(tot * 100, sum_busy)) if sum_busy else None,
            "median_us": fl(median_of(durs) / 1000),
        }))
    rows.sort(key=lambda r: (r[0], r[1]))
    top_rows = [r[2] for r in rows[:top]]

    per_ctx = []
    for c, w in sorted(works, key=lambda cw: (cw[0].start, cw[0].idx)):
        per_ctx.append({
            "start_ns": c.start,
            "cpu_ns": c.dur,
            "launches": w["launches"],
            "graph_launches": w["graph_launches"],
            "kernels": w["kernels"],
            "gpu_span_ns": w["span"],
            "gpu_busy_ns": w["busy"],
            "launch_latency_ns": ns_str(w["latency"]),
            "launch_to_activity_start_ns": ns_str(w["to_start"]),
            "launch_scope": w["scope"],
        })

    res = {
        "path": path,
        "context": label,
        "contexts": len(selected),
        "contexts_with_gpu_work": len(busy_ctx),
        "completion_tokens": tokens,
        "launches": sum(w["launches"] for _, w in works),
        "graph_launches": sum(w["graph_launches"] for _, w in works),
        "kernels": sum(w["kernels"] for _, w in works),
        "memcpys": sum(w["memcpys"] for _, w in works),
        "memsets": sum(w["memsets"] for _, w in works),
        "kernels_per_context": stats_c([w["kernels"] for _, w in busy_ctx], fl),
        "kernels_per_token": fl(kpt),
        "gpu_span_ms": stats_c(spans, ms),
        "gpu_busy_ms": stats_c(busys, ms),
        "gpu_idle_ms": stats_c([w["idle"] for _, w in busy_ctx], ms),
        "launch_latency_ms": stats_c([w["latency"] for _, w in busy_ctx], ms),
        "launch_to_activity_start_ms": stats_c([w["to_start"] for _, w in busy_ctx], ms),
        "launch_scope": scope_label(launch_scope, [w["scope"] for _, w in works]),
        "gpu_span_per_token_ms": fl(span_pt),
        "gpu_busy_per_token_ms": fl(busy_pt),
        "top_kernels": top_rows,
        "timeline": timeline_ms(timeline_exact(*timeline_sets(evs))),
        "per_context": per_ctx,
    }
    return res, {"kpt": kpt, "span_pt": span_pt, "busy_pt": busy_pt}


def scope_label(scope, scs):
    """The launch scope as reported: the one given, or what auto resolved to."""
    if scope != "auto":
        return scope
    p = sum(1 for s in scs if s == "process")
    if p == 0:
        return "thread"
    if p == len(scs):
        return "process"
    return "auto (thread: %d, process: %d)" % (len(scs) - p, p)


def cmd_kernels(a):
    if len(a.traces) > 2:
        sys.exit("kernels: at most two traces")
    out, exacts = [], []
    for i, p in enumerate(a.traces):
        tok = a.tokens[i] if a.tokens and i < len(a.tokens) else None
        summ = a.summary[i] if a.summary and i < len(a.summary) else None
        r, x = kernels_one(p, a.context, a.context_regex, tok, summ, a.top, a.launch_scope)
        out.append(r)
        exacts.append(x)
    comp = None
    if len(out) == 2:
        b, c = exacts
        comp = {
            "baseline": out[0]["path"],
            "candidate": out[1]["path"],
            "s_context_correlation": fl(ratio(b["span_pt"], c["span_pt"])),
            "s_context_busy": fl(ratio(b["busy_pt"], c["busy_pt"])),
            "kernels_per_token_ratio": fl(ratio(c["kpt"], b["kpt"])),
        }
    return {"traces": out, "comparison": comp}


def cmd_spancheck(a):
    """Per selected context: annotation GPU span minus correlation GPU span (a cross-check)."""
    out = []
    for p in a.traces:
        evs = complete_events(load_trace(p))
        _, _, selected, _ = select_contexts(evs, a.context, a.context_regex)
        gpu = {}
        for g in evs:
            if g.cat == "gpu_user_annotation" and g.ext_id is not None:
                gpu.setdefault((g.name, g.ext_id), []).append(g)
        ledger = gpu_ledger(evs)
        diffs = {}
        only_ann = only_corr = neither = 0
        start_diffs, end_diffs = {}, {}
        for c in selected:
            gs = gpu.get((c.name, c.ext_id), []) if c.ext_id is not None else []
            w = context_work(c, ledger)
            if gs and w["acts"]:
                d = (max(g.end for g in gs) - min(g.start for g in gs)) - w["span"]
                diffs[d] = diffs.get(d, 0) + 1
                ds = min(a.start for a in w["acts"]) - min(g.start for g in gs)
                de = max(g.end for g in gs) - max(a.end for a in w["acts"])
                start_diffs[ds] = start_diffs.get(ds, 0) + 1
                end_diffs[de] = end_diffs.get(de, 0) + 1
            elif gs:
                only_ann += 1
            elif w["acts"]:
                only_corr += 1
            else:
                neither += 1
        out.append({"path": p, "contexts": len(selected),
                    "annotation_minus_correlation_ns": {str(k): v for k, v in sorted(diffs.items())},
                    "corr_start_minus_ann_start_ns": {str(k): v for k, v in sorted(start_diffs.items())},
                    "ann_end_minus_corr_end_ns": {str(k): v for k, v in sorted(end_diffs.items())},
                    "annotation_only": only_ann, "correlation_only": only_corr, "neither": neither})
    return {"traces": out}


# ---------------------------------------------------------------------------
# hierarchy
# ---------------------------------------------------------------------------

DEFAULT_CHAIN = "sample_tokens>propose_draft_token_ids>proposer.propose"
DEFAULT_CATS = ["cpu_op", "user_annotation", "python_function", "Operator"]


def element_matcher(elem):
    rx = re.compile(elem[3:]) if elem.startswith("re:") else None

    def match(e):
        if e.name == elem:
            return True
        if e.cat == "python_function":
            pos = e.name.rfind("): ")
            if pos >= 0 and e.name[pos + 3:] == elem:
                return True
        if rx is not None and rx.search(e.name) is not None:
            return True
        return False
    return match


def lies_in(c, p, any_thread):
    """Definition: child c lies in parent p."""
    return (p is not c and (any_thread or (p.pid == c.pid and p.tid == c.tid))
            and p.start <= c.start and c.end <= p.end)


# --- brute force (the definitions, literally) ---

def bf_contained(children, parents, any_thread):
    by_thr = group(parents, any_thread)
    return [any(lies_in(c, p, any_thread) for p in by_thr.get(tkey(c, any_thread), ())) for c in children]


def bf_has_child(parents, children, any_thread):
    by_thr = group(children, any_thread)
    return [any(lies_in(c, p, any_thread) for c in by_thr.get(tkey(p, any_thread), ())) for p in parents]


def bf_outermost(evs, any_thread):
    by_thr = group(evs, any_thread)
    res = []
    for c in evs:
        nested = False
        for p in by_thr.get(tkey(c, any_thread), ()):
            if lies_in(c, p, any_thread):
                if p.start == c.start and p.end == c.end and p.idx > c.idx:
                    continue  # identical interval: the earlier one is outer
                nested = True
                break
        res.append(not nested)
    return res


def tkey(e, any_thread):
    return None if any_thread else (e.pid, e.tid)


def group(evs, any_thread):
    d = {}
    for e in evs:
        d.setdefault(tkey(e, any_thread), []).append(e)
    return d


# --- sweep versions (same answers, O(n log n)); cross-checked against brute force ---

def sw_contained(children, parents, any_thread):
    out = {}
    for k, ps in group(parents, any_thread).items():
        ps = sorted(ps, key=lambda e: e.start)
        starts = [p.start for p in ps]
        top2 = []  # prefix: two largest (end, idx) with distinct idx
        cur = []
        for p in ps:
            cur = sorted(cur + [(p.end, p.idx)], reverse=True)[:2]
            top2.append(cur)
        out[k] = (starts, top2)
    res = []
    for c in children:
        got = out.get(tkey(c, any_thread))
        ok = False
        if got:
            starts, top2 = got
            j = bisect.bisect_right(starts, c.start)
            if j:
                cand = [t for t in top2[j - 1] if t[1] != c.idx]
                ok = bool(cand) and cand[0][0] >= c.end
        res.append(ok)
    return res


def sw_has_child(parents, children, any_thread):
    out = {}
    for k, cs in group(children, any_thread).items():
        cs = sorted(cs, key=lambda e: e.start)
        starts = [c.start for c in cs]
        bot2 = [None] * len(cs)  # suffix: two smallest (end, idx)
        cur = []
        for i in range(len(cs) - 1, -1, -1):
            cur = sorted(cur + [(cs[i].end, cs[i].idx)])[:2]
            bot2[i] = cur
        out[k] = (starts, bot2)
    res = []
    for p in parents:
        got = out.get(tkey(p, any_thread))
        ok = False
        if got:
            starts, bot2 = got
            j = bisect.bisect_left(starts, p.start)
            if j < len(starts):
                cand = [t for t in bot2[j] if t[1] != p.idx]
                ok = bool(cand) and cand[0][0] <= p.end
        res.append(ok)
    return res


def sw_outermost(evs, any_thread):
    nested = {}
    for k, es in group(evs, any_thread).items():
        # order (start asc, end desc, file order asc): c is nested iff an earlier one ends >= c.end
        es = sorted(es, key=lambda e: (e.start, -e.end, e.idx))
        maxend = None
        for e in es:
            nested[e.idx] = maxend is not None and maxend >= e.end
            maxend = e.end if maxend is None else max(maxend, e.end)
    return [not nested[e.idx] for e in evs]


BF_LIMIT = 30_000_000  # pair comparisons above which the brute force is skipped


def pair_work(a, b, any_thread):
    ga, gb = group(a, any_thread), group(b, any_thread)
    return sum(len(v) * len(gb.get(k, ())) for k, v in ga.items())


def contained(children, parents, any_thread, check=True):
    r = sw_contained(children, parents, any_thread)
    if check and pair_work(children, parents, any_thread) <= BF_LIMIT:
        assert r == bf_contained(children, parents, any_thread), "sweep/brute-force mismatch (contained)"
    return r


def has_child(parents, children, any_thread, check=True):
    r = sw_has_child(parents, children, any_thread)
    if check and pair_work(parents, children, any_thread) <= BF_LIMIT:
        assert r == bf_has_child(parents, children, any_thread), "sweep/brute-force mismatch (has_child)"
    return r


def outermost(evs, any_thread, check=True):
    r = sw_outermost(evs, any_thread)
    if check and pair_work(evs, evs, any_thread) <= BF_LIMIT:
        assert r == bf_outermost(evs, any_thread), "sweep/brute-force mismatch (outermost)"
    return r


def analyse_chain(cands, chain, any_thread, check=True):
    matched = [[e for e in cands if element_matcher(el)(e)] for el in chain]
    links = []
    for i in range(len(chain) - 1):
        P, C = matched[i], matched[i + 1]
        cin = contained(C, P, any_thread, check)
        hc = has_child(P, C, any_thread, check)
        n_in = sum(cin)
        links.append({
            "parent": chain[i],
            "child": chain[i + 1],
            "children": len(C),
            "contained": n_in,
            "uncontained": len(C) - n_in,
            "parents_without_child": sum(1 for h in hc if not h),
        })
    funcs = []
    for el, evs in zip(chain, matched):
        outer = outermost(evs, any_thread, check)
        durs = [e.dur for e, o in zip(evs, outer) if o]
        st = stats(durs)
        funcs.append({
            "name": el,
            "calls": len(evs),
            "outermost_calls": len(durs),
            "median_ms": ms(st["median"]) if st else None,
            "mean_ms": ms(st["mean"]) if st else None,
            "p90_ms": ms(st["p90"]) if st else None,
            "min_ms": ms(st["min"]) if st else None,
            "max_ms": ms(st["max"]) if st else None,
            "total_ms": ms(st["sum"]) if st else None,
        })
    return {"chain": chain, "links": links, "functions": funcs}


def cmd_hierarchy(a):
    chains = a.chain or [DEFAULT_CHAIN]
    cats = a.category or DEFAULT_CATS
    out = []
    for p in a.traces:
        evs = complete_events(load_trace(p))
        cands = [e for e in evs if e.cat in cats]
        out.append({
            "path": p,
            "chains": [analyse_chain(cands, [x.strip() for x in ch.split(">")], a.any_thread, not a.no_check)
                       for ch in chains],
        })
    return {"traces": out}


# ---------------------------------------------------------------------------
# overlaps (MANIFEST cross-check)
# ---------------------------------------------------------------------------

def partial_overlaps(evs):
    """Counts, per definition, X events (all categories) that partially overlap another
    X event on the same (pid, tid).

    pairwise:   events E for which some P on the same thread has P.start < E.start < P.end < E.end
                (E starts strictly inside P and ends strictly after it).
    stack:      a nesting-stack sweep in (start asc, end desc, file order) order; pop entries
                ending <= E.start; E counts when the stack top ends before E ends (E is
                pushed anyway). This is the 'badly nested' count a tree builder sees.
    stack_skip: as stack, but a badly nested E is not pushed."""
    res = {}
    thr = group(evs, False)
    # pairwise
    n = 0
    for es in thr.values():
        es = sorted(es, key=lambda e: e.start)
        ends = []  # sorted ends of events with start < current start
        i = 0
        while i < len(es):
            j = i
            while j < len(es) and es[j].start == es[i].start:
                j += 1
            for e in es[i:j]:
                k = bisect.bisect_right(ends, e.start)
                if k < len(ends) and ends[k] < e.end:
                    n += 1
            for e in es[i:j]:
                bisect.insort(ends, e.end)
            i = j
    res["pairwise"] = n
    for skip in (False, True):
        n = 0
        for es in thr.values():
            es = sorted(es, key=lambda e: (e.start, -e.end, e.idx))
            stack = []
            for e in es:
                while stack and stack[-1].end <= e.start:
                    stack.pop()
                if stack and stack[-1].end < e.end:
                    n += 1
                    if skip:
                        continue
                stack.append(e)
        res["stack_skip" if skip else "stack"] = n
    return res


def cmd_overlaps(a):
    out = []
    for p in a.traces:
        evs = complete_events(load_trace(p))
        out.append({"path": p, "x_events": len(evs), "partial_overlaps": partial_overlaps(evs)})
    return {"traces": out}


# ---------------------------------------------------------------------------
# self-test
# ---------------------------------------------------------------------------

def _mk(events):
    doc = {"traceEvents": events}
    return complete_events(json.loads(json.dumps(doc), parse_float=Decimal)["traceEvents"])


def self_test():
    # --- time parsing ---
    assert to_ns(Decimal("5106297913320.790")) == 5106297913320790
    assert to_ns(Decimal("1.0005")) == 1000      # tie -> even
    assert to_ns(Decimal("1.0015")) == 1002      # tie -> even
    assert to_ns(Decimal("1.00151")) == 1002
    assert to_ns(Decimal("-2.5")) == -2500
    assert to_ns(Decimal("1.5E+3")) == 1500000
    assert to_ns(Decimal("-0.0005")) == 0
    assert to_ns(7) == 7000 and to_ns(None) is None and to_ns(True) is None

    # --- stats ---
    st = stats([1, 2, 3, 4])
    assert st["median"] == Fraction(5, 2) and st["p10"] == Fraction(13, 10) and st["p90"] == Fraction(37, 10)
    assert frac_str(Fraction(5, 2)) == "2.5" and frac_str(Fraction(1, 3)) == "1/3" and frac_str(Fraction(-1, 4)) == "-0.25"
    assert stats([]) is None and stats([7])["p90"] == 7

    # --- step grammars ---
    assert step_kind("execute_context_0(0)_generation_1(3)") is True
    assert step_kind("execute_context_1(96)_generation_0(0)") is False
    assert step_kind("execute_context_1(888_788544)_generation_0(0)") is False
    assert step_kind("execute_new_0_cached_4") is True and step_kind("execute_new_1_cached_4") is False
    assert step_kind("execute_new_0_cached_0") is False
    assert step_kind("execute_12_context_0(sq0sk0)_generation_4(sq1sk9)") is True
    assert step_kind("xexecute_new_0_cached_4") is None and step_kind("execute_model") is None

    # --- containment edge cases ---
    X = lambda name, ts, dur=None, tid=1, pid=1, cat="cpu_op": dict(
        {"ph": "X", "cat": cat, "name": name, "ts": ts, "pid": pid, "tid": tid}, **({} if dur is None else {"dur": dur}))
    evs = _mk([
        X("C", 5.0, 1.0),                 # 0 child BEFORE its parent in file order, inside P1
        X("P", 4.0, 6.0),                 # 1 P1 [4,10]
        X("C", 4.0, 2.0),                 # 2 equal start with P1
        X("C", 8.0, 2.0),                 # 3 equal end with P1 (10)
        X("C", 9.0),                      # 4 zero-length, no dur
        X("C", 10.0, 0.0),                # 5 zero-length at P1's end -> inside
        X("C", 4.0, 6.0),                 # 6 identical interval to P1 -> inside
        X("C", 5.0, 1.0, tid=2),          # 7 other thread -> not inside
        X("C", 9.5, 1.0),                 # 8 partial overlap (ends 10.5) -> not inside
        X("P", 20.0, 1.0),                # 9 P2 without children
        X("C", 3.999, 0.002),             # 10 starts 1 ns before P1 -> not inside
        X("C", 5.0, 1.0, tid="1"),        # 11 tid "1" != tid 1 -> not inside
    ])
    P = [e for e in evs if e.name == "P"]
    C = [e for e in evs if e.name == "C"]
    for at in (False,):
        cin = contained(C, P, at)
        assert cin == [True, True, True, True, True, True, False, False, False, False], cin
        assert has_child(P, C, at) == [True, False]
    assert contained(C, P, True) == [True, True, True, True, True, True, True, False, False, True]

    # outermost with identical intervals: earlier in file order is outer
    evs = _mk([
        X("f", 1.0, 5.0),        # 0 outer
        X("f", 1.0, 5.0),        # 1 identical -> nested
        X("f", 2.0, 1.0),        # 2 nested
        X("f", 1.0, 5.0, tid=2), # 3 other thread -> outermost
        X("f", 5.0, 2.0),        # 4 partial overlap with 0 -> outermost
        X("f", 6.0, 0.0),        # 5 zero-length inside 4 -> nested
        X("f", 7.0, 0.0),        # 6 zero-length at end of 4 -> nested
        X("f", 7.0, 0.0),        # 7 identical zero-length -> nested
    ])
    assert outermost(evs, False) == [True, False, False, True, True, False, False, False]

    # python_function function-part matching and re: elements; self-exclusion in a>a chains
    evs = _mk([
        X("vllm/v1/worker/gpu_worker.py(10): sample_tokens", 0.0, 10.0, cat="python_function"),
        X("vllm/v1/worker/gpu_model_runner.py(20): sample_tokens", 1.0, 8.0, cat="python_function"),
        X("sample_tokens", 2.0, 1.0, cat="user_annotation"),
        X("x.py(3): not_sample_tokens", 2.0, 1.0, cat="python_function"),
        X("a.py(1): f(x): sample_tokens", 3.0, 1.0, cat="python_function"),   # last '): ' wins
        X("sample_tokens_x", 3.0, 1.0, cat="cpu_op"),
    ])
    r = analyse_chain(evs, ["sample_tokens", "re:^sample_tokens"], False)
    assert r["functions"][0]["calls"] == 4 and r["functions"][0]["outermost_calls"] == 1, r
    assert r["functions"][1]["calls"] == 2, r
    assert r["links"][0]["contained"] == 2
    assert r["functions"][0]["total_ms"] == 0.01
    r = analyse_chain(evs, ["sample_tokens", "sample_tokens"], False)
    assert r["links"][0]["contained"] == 3 and r["links"][0]["parents_without_child"] == 2, r

    # --- pairing ---
    U = lambda name, ts, dur, ext, cat="user_annotation", pid=1, tid=1: {
        "ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": tid, "args": {"External id": ext}}
    S = "execute_context_0(0)_generation_1(1)"
    T = "execute_context_0(0)_generation_2(2)"
    doc = {"traceEvents": [
        U(S, 0.0, 10.0, 1), U(S, 20.0, 10.0, 2), U(S, 40.0, 10.0, 3), U(T, 60.0, 5.0, 4), U(T, 70.0, 5.0, 5),
        U("execute_context_1(9)_generation_0(0)", 80.0, 1.0, 6),
        U(S, 1.0, 3.0, 1, "gpu_user_annotation", 0, 7),
        U(S, 2.0, 4.5, 1, "gpu_user_annotation", 0, 8),   # second stream: span 1..6.5
        U(S, 21.0, 2.0, 2, "gpu_user_annotation", 0, 7),
        U(S, 90.0, 2.0, 99, "gpu_user_annotation", 0, 7),  # unpaired GPU
        U(S, 91.0, 2.0, 4, "gpu_user_annotation", 0, 7),   # ext id of a T annotation: unpaired for S
    ]}
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "w.pt.trace.json")
        with open(p, "w") as f:
            json.dump(doc, f)
        with open(os.path.join(d, "w.summary.json"), "w") as f:
            json.dump({"completion_tokens": 8}, f)
        r, _ = pair_one(p)
        assert r["context"] == S and r["contexts"] == 3 and r["pairs"] == 2 and r["cpu_unpaired"] == 1, r
        assert r["gpu_unpaired"] == 2 and r["multi_stream_pairs"] == 1, r
        assert r["gpu_span_ns"]["median"] == "3750" and r["gpu_span_ns"]["max"] == "5500", r
        assert r["cpu_span_ms"]["median"] == 0.01 and r["completion_tokens"] == 8 and r["tokens_per_context"] == 4.0
        assert r["gpu_span_per_token_ms"] == float(Fraction(7500, 10**6) / 8), r
        assert r["step_names"] == {S: 3, T: 2, "execute_context_1(9)_generation_0(0)": 1}
        r, _ = pair_one(p, context_regex="generation_[12]", tokens=3)
        assert r["contexts"] == 5 and r["pairs"] == 2 and r["gpu_unpaired"] == 2 and r["tokens_per_context"] == 1.5, r
        r, _ = pair_one(p, context=T)
        assert r["contexts"] == 2 and r["pairs"] == 0 and r["gpu_span_ms"] is None and r["gpu_unpaired"] == 0, r
    # ties in default selection: the name sorting first wins
    doc = {"traceEvents": [U(T, 0.0, 1.0, 1), U(S, 2.0, 1.0, 2)]}
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "t.json")
        with open(p, "w") as f:
            json.dump(doc, f)
        assert pair_one(p)[0]["context"] == min(S, T)

    # --- random cross-check sweep vs brute force ---
    rnd = random.Random(1234)
    for _ in range(300):
        raw = []
        for i in range(rnd.randint(0, 30)):
            s = rnd.randint(0, 20)
            raw.append(X(rnd.choice("ab"), s, rnd.choice([0, 0, 1, 2, 3, 5, 8, 20]), tid=rnd.choice([1, 2, "1"])))
        evs = _mk(raw)
        A = [e for e in evs if e.name == "a"]
        B = [e for e in evs if e.name == "b"]
        for at in (False, True):
            for x, y in ((A, B), (B, A), (A, A), (evs, A)):
                assert sw_contained(x, y, at) == bf_contained(x, y, at)
                assert sw_has_child(x, y, at) == bf_has_child(x, y, at)
            for x in (A, B, evs):
                assert sw_outermost(x, at) == bf_outermost(x, at)
    # --- GPU work by launch correlation (kernels, pair --gpu-span) ---
    def R(name, ts, corr, tid=1, pid=1, cat="cuda_runtime", dur=1.0):
        return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": tid,
                "args": {"correlation": corr}}

    def A(name, ts, dur, corr=None, cat="kernel", stream=7):
        args = {"stream": stream} if corr is None else {"stream": stream, "correlation": corr}
        return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 0, "tid": stream, "args": args}

    STEP = lambda ts, dur, ext: U("step", ts, dur, ext)
    ledger_doc = [
        STEP(100.0, 50.0, 1),                                   # S1 [100, 150)
        STEP(150.0, 20.0, 2),                                   # S2 [150, 170): starts where S1 ends
        STEP(300.0, 10.0, 3),                                   # S3: no launch -> no GPU work
        R("cudaLaunchKernel", 100.0, 1),                        # at S1's start: in S1
        R("cudaGraphLaunch", 120.0, 2),                         # graph replay: 3 kernels, 2 streams
        R("cudaStreamSynchronize", 125.0, 6),                   # no activity: not a launch
        R("cudaMemcpyAsync", 149.999, 3),                       # 1 ns before S1's end: in S1
        R("cudaLaunchKernel", 150.0, 4),                        # at S1's end: out of S1, in S2 (half-open)
        R("cudaLaunchKernel", 105.0, 5, tid=2),                 # other thread: in no context
        R("cudaLaunchKernel", 106.0, 10, tid="1"),              # tid "1" != 1: in no context
        R("cuLaunchKernel", 101.0, 1, cat="cuda_driver"),       # shares correlation 1: the first call owns it
        R("ncclKernelLaunch", 204.0, 7, tid=3),
        R("cudaMemcpyAsync", 111.0, 8, tid=3),
        R("cudaMemcpyAsync", 217.0, 9, tid=3),
        A("gemm", 110.0, 10.0, 1),                              # S1 kernel [110, 120]
        A("gemm", 130.0, 10.0, 2, stream=7),                    # graph kernels [130,140] s7,
        A("gemm", 135.0, 10.0, 2, stream=8),                    #   [135,145] s8,
        A("norm", 145.0, 5.0, 2, stream=7),                     #   [145,150] s7 touches s8's end: busy 20
        A("Memcpy HtoD", 151.0, 1.0, 3, cat="gpu_memcpy"),      # S1 memcpy [151, 152]
        A("act", 155.0, 5.0, 4),                                # S2 kernel, latency 5000 ns
        A("Memset", 150.001, 0.001, 4, cat="gpu_memset"),       # S2 memset, latency 1 ns -> median 2500.5
        A("gemm", 106.0, 1.0, 5),                               # other-thread launch
        A("gemm", 107.0, 0.5, 10),                              # tid "1" launch
        A("orphan", 200.0, 10.0, 99),                           # correlation without launch: timeline only
        A("nocorr", 300.5, 0.5),                                # no correlation, inside S3's time: timeline only
        A("ncclDevKernel_AllReduce", 205.0, 15.0, 7),           # comm [205,220] over compute [200,210]
        A("Memcpy DtoD", 112.0, 3.0, 8, cat="gpu_memcpy"),      # under compute: not exposed
        A("Memcpy DtoH", 218.0, 7.0, 9, cat="gpu_memcpy"),      # [218,220] under comm, [220,225] exposed
        U("step", 109.999, 42.002, 1, "gpu_user_annotation", 0, 7),   # S1's GPU annotation (widened 1 ns)
    ]
    evs = _mk(ledger_doc)
    led = gpu_ledger(evs)
    ctxs = [e for e in evs if e.cat == "user_annotation"]
    w1, w2, w3 = (context_work(c, led) for c in ctxs)
    assert (w1["launches"], w1["graph_launches"], w1["kernels"], w1["memcpys"], w1["memsets"]) == (3, 1, 4, 1, 0), w1
    # queue delays (calls last 1 us): 110-101, 130-121, 151-150.999 -> median 9000 ns
    assert (w1["span"], w1["busy"], w1["idle"], w1["latency"]) == (42000, 31000, 11000, 9000), w1
    assert w1["to_start"] == 10000, w1
    assert (w2["launches"], w2["kernels"], w2["memsets"], w2["span"], w2["busy"]) == (1, 1, 1, 9999, 5001), w2
    # S2's memset starts 1 ns after its call starts, before the call ends: queue delay clipped to 0
    assert w2["latency"] == 0, w2
    assert w2["to_start"] == Fraction(5001, 2) and frac_str(w2["to_start"]) == "2500.5"
    # disjoint contexts: attribution = what each holds
    for c, w in zip(ctxs, attributed_works(ctxs, led)):
        assert all(w[k] == context_work(c, led)[k] for k in ("launches", "kernels", "span", "busy", "latency"))
    # nested contexts: innermost wins; ProfilerStep (auto: process scope) takes the autograd thread's launch
    nest = _mk([
        U("ProfilerStep#1", 0.0, 100.0, 11),                   # [0, 100) on tid 1
        U("inner", 10.0, 20.0, 12),                            # [10, 30) on tid 1
        U("inner", 10.0, 20.0, 13),                            # identical copy: the later in file order is inner
        R("cudaLaunchKernel", 5.0, 21), R("cudaLaunchKernel", 15.0, 22),
        R("cudaLaunchKernel", 50.0, 23, tid=2),                # autograd thread
        A("k", 40.0, 1.0, 21), A("k", 41.0, 1.0, 22), A("k", 60.0, 1.0, 23),
    ])
    nled = gpu_ledger(nest)
    nctx = [e for e in nest if e.cat == "user_annotation"]
    ws = attributed_works(nctx, nled)
    assert [w["kernels"] for w in ws] == [2, 0, 1] and ws[0]["scope"] == "process", ws
    ws = attributed_works(nctx, nled, "thread")
    assert [w["kernels"] for w in ws] == [1, 0, 1], ws
    assert w3["acts"] == [] and w3["span"] is None and w3["launches"] == 0
    for c in ctxs:
        w, b = context_work(c, led), context_work_bf(c, evs)
        assert all(w[k] == b[k] for k in b), (w, b)
    tl = timeline_exact(*timeline_sets(evs))
    assert tl == {"total": 195000, "busy": 63001, "idle": 131999, "compute": 47001,
                  "exposed_comm": 10000, "exposed_memcpy": 6000}, tl
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "k.json")
        with open(p, "w") as f:
            json.dump({"traceEvents": ledger_doc}, f)
        r, x = kernels_one(p, context="step", tokens=5)
        assert (r["contexts"], r["contexts_with_gpu_work"], r["launches"], r["graph_launches"]) == (3, 2, 4, 1), r
        assert (r["kernels"], r["memcpys"], r["memsets"]) == (5, 1, 1), r
        assert r["kernels_per_context"] == {"count": 2, "median": 2.5, "mean": 2.5, "p10": 1.3, "p90": 3.7,
                                            "min": 1.0, "max": 4.0, "sum": 5.0}, r
        assert r["kernels_per_token"] == 1.0 and x["span_pt"] == Fraction(42000 + 9999, 5 * 10**6)
        assert r["gpu_busy_ms"]["sum"] == 0.036001 and r["gpu_idle_ms"]["max"] == 0.011
        assert r["launch_latency_ms"]["median"] == float(Fraction(9000 + 0, 2 * 10**6))
        assert r["launch_to_activity_start_ms"]["median"] == float(Fraction(10000 + Fraction(5001, 2), 2 * 10**6))
        assert r["launch_scope"] == "thread"
        assert [(k["name"], k["calls"]) for k in r["top_kernels"]] == [("gemm", 3), ("act", 1), ("norm", 1)], r
        assert r["top_kernels"][0]["share_pct"] == float(Fraction(30000 * 100, 36001))
        assert r["top_kernels"][0]["calls_per_context"] == 1.5 and r["top_kernels"][0]["median_us"] == 10.0
        assert r["timeline"]["busy_ms"] == 0.063001 and r["timeline"]["exposed_memcpy_ms"] == 0.006
        pc = r["per_context"]
        assert [c["start_ns"] for c in pc] == [100000, 150000, 300000]
        assert pc[1]["launch_latency_ns"] == "0" and pc[0]["launch_latency_ns"] == "9000"
        assert pc[1]["launch_to_activity_start_ns"] == "2500.5"
        assert pc[2] == {"start_ns": 300000, "cpu_ns": 10000, "launches": 0, "graph_launches": 0, "kernels": 0,
                         "gpu_span_ns": None, "gpu_busy_ns": None, "launch_latency_ns": None,
                         "launch_to_activity_start_ns": None, "launch_scope": "thread"}, pc
        # nested selected contexts: each launch in the innermost; outer [100,170) holds S1 and S2 only
        doc2 = ledger_doc + [U("outer", 100.0, 70.0, 50)]
        with open(p, "w") as f:
            json.dump({"traceEvents": doc2}, f)
        r, _ = kernels_one(p, context_regex="^(step|outer)$", top=1)
        assert r["kernels"] == 5 and r["contexts_with_gpu_work"] == 2, r
        assert r["top_kernels"] == [{"name": "gemm", "calls": 3, "calls_per_context": 1.5, "total_ms": 0.03,
                                     "share_pct": float(Fraction(30000 * 100, 36001)),
                                     "median_us": 10.0}], r["top_kernels"]
        # zero GPU work: null stats, timeline nulls when the trace has no activity
        with open(p, "w") as f:
            json.dump({"traceEvents": [STEP(1.0, 1.0, 1)]}, f)
        r, _ = kernels_one(p, context="step", tokens=4)
        assert r["contexts"] == 1 and r["contexts_with_gpu_work"] == 0 and r["gpu_span_ms"] is None
        assert r["kernels_per_token"] == 0.0 and r["timeline"]["total_ms"] is None and r["top_kernels"] == []
        # pair --gpu-span
        with open(p, "w") as f:
            json.dump({"traceEvents": ledger_doc}, f)
        ra, _ = pair_one(p, context="step", tokens=6, gpu_span="annotation")
        assert ra["pairs"] == 1 and ra["measured"] == 1 and ra["gpu_span_sources"] == {"annotation": 1, "correlation": 0}
        assert ra["gpu_span_ns"]["sum"] == "42002" and ra["tokens_per_context"] == 6.0
        ru, _ = pair_one(p, context="step", tokens=6, gpu_span="auto")
        assert ru["measured"] == 2 and ru["gpu_span_sources"] == {"annotation": 1, "correlation": 1}, ru
        assert ru["gpu_span_ns"]["sum"] == str(42002 + 9999) and ru["tokens_per_context"] == 3.0
        assert ru["cpu_span_ns"]["sum"] == "70000" and ru["pairs"] == 1 and ru["cpu_unpaired"] == 2
        rc, _ = pair_one(p, context="step", tokens=6, gpu_span="correlation")
        assert rc["measured"] == 2 and rc["gpu_span_sources"] == {"annotation": 0, "correlation": 2}, rc
        assert rc["gpu_span_ns"]["sum"] == str(42000 + 9999)
        assert rc["gpu_span_per_token_ms"] == float(Fraction(42000 + 9999, 6 * 10**6))

    # random: ledger vs the definitions literally; timeline sweep vs TraceLens-style merge/subtract
    for _ in range(300):
        raw = []
        for i in range(rnd.randint(0, 4)):
            s = rnd.randint(0, 40)
            raw.append(U("c", s, rnd.choice([0, 1, 5, 10, 30]), i))
        for _ in range(rnd.randint(0, 12)):
            raw.append(R(rnd.choice(["cudaLaunchKernel", "cudaGraphLaunch", "hipGraphLaunch", "cudaMemcpyAsync"]),
                         rnd.randint(0, 45), rnd.randint(0, 8), tid=rnd.choice([1, 1, 2]),
                         cat=rnd.choice(["cuda_runtime", "cuda_driver", "Runtime"])))
        for _ in range(rnd.randint(0, 20)):
            raw.append(A(rnd.choice(["k", "nccl_x", "m"]), rnd.randint(0, 60), rnd.choice([0, 1, 2, 5, 9]),
                         rnd.choice([None, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]),
                         cat=rnd.choice(["kernel", "Kernel", "gpu_memcpy", "gpu_memset", "Memcpy", "Memset"]),
                         stream=rnd.choice([7, 8])))
        evs = _mk(raw)
        led = gpu_ledger(evs)
        for c in (e for e in evs if e.cat == "user_annotation"):
            w, b = context_work(c, led), context_work_bf(c, evs)
            assert all(w[k] == b[k] for k in b), (raw, w, b)
        sets = timeline_sets(evs)
        ex = timeline_exact(*sets)
        # the float mirror on integer ns is exact: same figures
        assert ex == timeline_float_us(*sets), (raw, ex, timeline_float_us(*sets))
    print("self-test OK")


# ---------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--self-test", action="store_true")
    sub = ap.add_subparsers(dest="cmd")
    pp = sub.add_parser("pair")
    pp.add_argument("traces", nargs="+")
    g = pp.add_mutually_exclusive_group()
    g.add_argument("--context")
    g.add_argument("--context-regex")
    pp.add_argument("--tokens", type=int, action="append", help="completion tokens, one per trace in order")
    pp.add_argument("--summary", action="append", help="run summary file, one per trace in order")
    pp.add_argument("--gpu-span", choices=GPU_SPAN_MODES, default="auto")
    hp = sub.add_parser("hierarchy")
    hp.add_argument("traces", nargs="+")
    hp.add_argument("--chain", action="append")
    hp.add_argument("--any-thread", action="store_true")
    hp.add_argument("--category", action="append")
    hp.add_argument("--no-check", action="store_true", help="skip the brute-force cross-check")
    op = sub.add_parser("overlaps")
    op.add_argument("traces", nargs="+")
    kp = sub.add_parser("kernels")
    kp.add_argument("traces", nargs="+")
    g = kp.add_mutually_exclusive_group()
    g.add_argument("--context")
    g.add_argument("--context-regex")
    kp.add_argument("--tokens", type=int, action="append", help="completion tokens, one per trace in order")
    kp.add_argument("--summary", action="append", help="run summary file, one per trace in order")
    kp.add_argument("--top", type=int, default=10)
    kp.add_argument("--launch-scope", choices=["auto", "thread", "process"], default="auto")
    tp = sub.add_parser("timeline")
    tp.add_argument("traces", nargs="+")
    sp = sub.add_parser("spancheck")
    sp.add_argument("traces", nargs="+")
    g = sp.add_mutually_exclusive_group()
    g.add_argument("--context")
    g.add_argument("--context-regex")
    a = ap.parse_args(argv)
    if a.self_test:
        self_test()
        return
    if a.cmd == "pair":
        res = cmd_pair(a)
    elif a.cmd == "hierarchy":
        res = cmd_hierarchy(a)
    elif a.cmd == "overlaps":
        res = cmd_overlaps(a)
    elif a.cmd == "kernels":
        res = cmd_kernels(a)
    elif a.cmd == "timeline":
        res = cmd_timeline(a)
    elif a.cmd == "spancheck":
        res = cmd_spancheck(a)
    else:
        ap.error("a subcommand or --self-test is required")
    json.dump(res, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
