"""Documents as tables: the per-context rows of :func:`~torchtrace.pair`
and :func:`~torchtrace.kernels`, every op row of :func:`~torchtrace.ops`,
the three tables of :func:`~torchtrace.idle`, every op and shape of
``run("roofline", ...)``, as pandas DataFrames or
``pyarrow.Table`` s (both optional dependencies, imported when asked for).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Union

from ._core import PerTrace, PerTracePath, Paths, run
from .commands import kernels, ops, pair

__all__ = [
    "contexts",
    "to_frame",
    "pair_frame",
    "kernels_frame",
    "ops_frame",
    "idle_frames",
    "roofline_frame",
    "memory_frames",
]


def contexts(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The per-context rows of a :func:`~torchtrace.pair` or
    :func:`~torchtrace.kernels` document made with ``per_context=True``,
    each with its trace's ``path`` and ``index`` (its position among the
    trace's selected contexts)."""
    rows: List[Dict[str, Any]] = []
    for t in doc.get("traces", []):
        if "per_context" not in t:
            raise ValueError(
                "the document has no per-context rows: call pair()/kernels() with per_context=True"
            )
        for i, r in enumerate(t["per_context"]):
            rows.append({"path": t["path"], "index": i, **r})
    return rows


def to_frame(doc_or_rows: Union[Dict[str, Any], Iterable[Dict[str, Any]]], kind: str = "pandas") -> Any:
    """Per-context rows as a table: a pandas ``DataFrame`` (``kind="pandas"``)
    or a ``pyarrow.Table`` (``kind="arrow"``), one row per selected context.

    Args:
        doc_or_rows: a :func:`~torchtrace.pair`/:func:`~torchtrace.kernels`
            document made with ``per_context=True``, or rows from
            :func:`contexts`.
        kind: ``"pandas"`` or ``"arrow"``.

    Raises:
        ImportError: the library for ``kind`` is not installed.
    """
    rows = contexts(doc_or_rows) if isinstance(doc_or_rows, dict) else list(doc_or_rows)
    if kind == "pandas":
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError(
                "torchtrace.to_frame(kind='pandas') needs pandas: pip install pandas"
            ) from e
        return pd.DataFrame.from_records(rows)
    if kind == "arrow":
        try:
            import pyarrow as pa
        except ImportError as e:
            raise ImportError(
                "torchtrace.to_frame(kind='arrow') needs pyarrow: pip install pyarrow"
            ) from e
        return pa.Table.from_pylist(rows)
    raise ValueError(f"kind must be 'pandas' or 'arrow', not {kind!r}")


def pair_frame(
    paths: Paths,
    kind: str = "pandas",
    *,
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    tokens: PerTrace = None,
    summaries: PerTracePath = None,
    gpu_span: Optional[str] = None,
    progress: bool = False,
) -> Any:
    """:func:`~torchtrace.pair` with ``per_context=True`` (the other
    arguments as it takes them), as :func:`to_frame` rows."""
    doc = pair(paths, context=context, context_regex=context_regex, tokens=tokens,
               summaries=summaries, gpu_span=gpu_span, per_context=True, progress=progress)
    return to_frame(doc, kind=kind)


def kernels_frame(
    paths: Paths,
    kind: str = "pandas",
    *,
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    tokens: PerTrace = None,
    summaries: PerTracePath = None,
    top: Optional[int] = None,
    progress: bool = False,
) -> Any:
    """:func:`~torchtrace.kernels` with ``per_context=True`` (the other
    arguments as it takes them), as :func:`to_frame` rows."""
    doc = kernels(paths, context=context, context_regex=context_regex, tokens=tokens,
                  summaries=summaries, top=top, per_context=True, progress=progress)
    return to_frame(doc, kind=kind)


def ops_frame(doc_or_paths: Union[Dict[str, Any], Paths], kind: str = "pandas") -> Any:
    """Every op row of an :func:`~torchtrace.ops` document (or of the traces
    given), one row per (trace, cat, name) with the trace's ``path`` first,
    as :func:`to_frame` makes it (a pandas ``DataFrame`` or a
    ``pyarrow.Table``)."""
    doc = doc_or_paths if isinstance(doc_or_paths, dict) else ops(doc_or_paths)
    return _per_trace_rows(doc, "ops", kind)


def idle_frames(doc: Dict[str, Any], kind: str = "pandas") -> Dict[str, Any]:
    """An :func:`~torchtrace.idle` document as three tables — ``devices``,
    ``streams`` (the queue flattened into ``queue_*`` columns) and ``steps``
    (every step row) — each with the trace's ``path``: pandas DataFrames
    (``kind="pandas"``), ``pyarrow.Table``s (``kind="arrow"``) or lists of
    dicts (``kind="rows"``).
    """
    devices: List[Dict[str, Any]] = []
    streams: List[Dict[str, Any]] = []
    steps: List[Dict[str, Any]] = []
    for t in doc["traces"]:
        devices.extend({"path": t["path"], **d} for d in t["devices"])
        for s in t["streams"]:
            row = {"path": t["path"], **{k: v for k, v in s.items() if k != "queue"}}
            for q in ("in_flight", "pending"):
                row.update({f"queue_{q}_{k}": v for k, v in s["queue"][q].items()})
            row["queue_activities_starting_before_launch"] = s["queue"]["activities_starting_before_launch"]
            streams.append(row)
        for r in t["steps"]["rows"]:
            row = {"path": t["path"], **{k: v for k, v in r.items() if k != "queue_in_flight"}}
            row["queue_in_flight_max"] = max((q["max"] for q in r["queue_in_flight"].values()), default=None)
            steps.append(row)
    tables = {"devices": devices, "streams": streams, "steps": steps}
    if kind == "rows":
        return tables
    return {k: to_frame(v, kind=kind) for k, v in tables.items()}


def memory_frames(doc_or_paths: Union[Dict[str, Any], Paths], kind: str = "pandas") -> Dict[str, Any]:
    """A :func:`~torchtrace.memory` document (or the traces given) as four
    tables, each row with its trace's ``path`` and ``device``: ``devices``
    (the headline figures; the lists left out), ``at_peak`` and
    ``never_freed`` (one row per holder, ``by`` = ``op`` or ``module`` for
    ``at_peak``) and ``steps`` (every step row); pandas DataFrames
    (``kind="pandas"``), ``pyarrow.Table`` s (``kind="arrow"``) or lists of
    dicts (``kind="rows"``)."""
    doc = doc_or_paths if isinstance(doc_or_paths, dict) else run("memory", doc_or_paths)
    lists = ("at_peak", "at_peak_by_module", "never_freed", "steps", "timeline")
    tables: Dict[str, List[Dict[str, Any]]] = {"devices": [], "at_peak": [], "never_freed": [], "steps": []}
    for t in doc["traces"]:
        for d in t["devices"]:
            key = {"path": t["path"], "device": d["device"]}
            tables["devices"].append({**key, **{k: v for k, v in d.items() if k not in lists}})
            tables["at_peak"].extend({**key, "by": "op", **h} for h in d["at_peak"])
            tables["at_peak"].extend({**key, "by": "module", **h} for h in d["at_peak_by_module"])
            tables["never_freed"].extend({**key, **h} for h in d["never_freed"])
            tables["steps"].extend({**key, **r} for r in d["steps"])
    if kind == "rows":
        return tables
    return {k: to_frame(v, kind=kind) for k, v in tables.items()}


def roofline_frame(doc_or_paths: Union[Dict[str, Any], Paths], kind: str = "pandas") -> Any:
    """Every row of a ``roofline`` document (or of the traces given): one row
    per (trace, op name, Input Dims, Input type) with the trace's ``path``
    first, its FLOPs and bytes per call (exact ints), GPU ns, achieved
    TFLOP/s and TB/s, % of peak and bound, as :func:`to_frame` makes it (a
    pandas ``DataFrame`` or a ``pyarrow.Table``). ``Input Dims`` and the other
    recorded arguments stay as the trace wrote them (lists)."""
    doc = doc_or_paths if isinstance(doc_or_paths, dict) else run("roofline", doc_or_paths)
    return _per_trace_rows(doc, "rows", kind)


def _per_trace_rows(doc: Dict[str, Any], key: str, kind: str) -> Any:
    """Each trace's list ``key`` of a document, one frame row per item with
    the trace's ``path`` first (:func:`ops_frame`, :func:`roofline_frame`)."""
    rows = [dict(path=t["path"], **r) for t in doc["traces"] for r in t[key]]
    return to_frame(rows, kind=kind)
