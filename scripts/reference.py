#!/usr/bin/env python3
"""Independent reference implementation of docs/DEFINITIONS.md (stdlib only).

Used once to freeze the expected values asserted by the Rust tests
(tests/data/expected/, see COMMANDS.md there).  Clarity over speed: every time
value is an exact integer number of nanoseconds, every statistic an exact
Fraction; floats appear only when writing the output.

Subcommands:
  pair TRACE [TRACE2] [--context NAME | --context-regex RE] [--tokens N]... [--summary FILE]...
  hierarchy TRACE [--chain "a>b>c"]... [--any-thread] [--category CAT]...
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
    __slots__ = ("idx", "name", "cat", "pid", "tid", "start", "end", "dur", "ext_id", "args")

    def __init__(self, idx, name, cat, pid, tid, start, dur, ext_id):
        self.idx = idx          # position in traceEvents (file order)
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
        out.append(Ev(i, name, cat, jkey(e.get("pid")), jkey(e.get("tid")), start, dur,
                      None if ext is None else jkey(ext)))
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


def pair_one(path, context=None, context_regex=None, tokens=None, summary=None):
    evs = complete_events(load_trace(path))
    cpu = [e for e in evs if e.cat == "user_annotation"]
    gpu = [e for e in evs if e.cat == "gpu_user_annotation"]

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

    gpu_by_key = {}
    for g in gpu:
        if g.ext_id is None:
            continue
        gpu_by_key.setdefault((g.name, g.ext_id), []).append(g)

    cpu_keys = set()
    paired = []  # (cpu event, [gpu events])
    multi = 0
    for c in selected:
        if c.ext_id is None:
            continue  # an annotation without External id never pairs
        cpu_keys.add((c.name, c.ext_id))
        gs = gpu_by_key.get((c.name, c.ext_id), [])
        if gs:
            paired.append((c, gs))
            if len(gs) > 1:
                multi += 1
    gpu_unpaired = sum(1 for g in gpu if pred(g.name) and (g.ext_id is None or (g.name, g.ext_id) not in cpu_keys))

    cpu_spans = [c.dur for c, _ in paired]
    gpu_spans = [max(g.end for g in gs) - min(g.start for g in gs) for _, gs in paired]
    cst, gst = stats(cpu_spans), stats(gpu_spans)

    if tokens is None:
        sp = summary if summary is not None else summary_path(path)
        if sp is not None:
            tokens = read_tokens(sp)
    P = Fraction(tokens, len(paired)) if (tokens is not None and paired) else None
    per_tok = (Fraction(sum(gpu_spans), 10**6) / tokens) if (tokens and paired) else None

    res = {
        "path": path,
        "context": label,
        "contexts": len(selected),
        "pairs": len(paired),
        "cpu_unpaired": len(selected) - len(paired),
        "gpu_unpaired": gpu_unpaired,
        "multi_stream_pairs": multi,
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
        r, x = pair_one(p, a.context, a.context_regex, tok, summ)
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
    hp = sub.add_parser("hierarchy")
    hp.add_argument("traces", nargs="+")
    hp.add_argument("--chain", action="append")
    hp.add_argument("--any-thread", action="store_true")
    hp.add_argument("--category", action="append")
    hp.add_argument("--no-check", action="store_true", help="skip the brute-force cross-check")
    op = sub.add_parser("overlaps")
    op.add_argument("traces", nargs="+")
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
    else:
        ap.error("a subcommand or --self-test is required")
    json.dump(res, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
