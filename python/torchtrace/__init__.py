"""torchtrace: exact, streaming analysis of PyTorch Profiler (Kineto) traces.

Each function runs one of the command line's per-trace subcommands and returns
the document ``torchtrace <subcommand> --format json`` prints, as a ``dict``:

>>> import torchtrace
>>> doc = torchtrace.pair(["ar.pt.trace.json.gz", "mtp.pt.trace.json.gz"])  # doctest: +SKIP
>>> doc["comparison"]["s_context"]                                         # doctest: +SKIP

What the command line reports as problems (exit status 1: a context missing,
nothing measured, a containment link broken) becomes a :class:`TorchtraceWarning`;
its notes go to the ``torchtrace`` logger. A trace that cannot be read raises
:class:`TraceError`. Reading runs in Rust without the GIL; Ctrl-C interrupts it.

:func:`to_frame` turns the per-context rows of a document into a pandas
DataFrame or a pyarrow Table (both optional dependencies).
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from . import _native
from ._native import TraceError

__all__ = [
    "TraceError",
    "TorchtraceWarning",
    "run",
    "analyses",
    "pair",
    "diff",
    "kernels",
    "iterations",
    "ops",
    "ops_frame",
    "ranks",
    "idle",
    "idle_frames",
    "roofline_frame",
    "export",
    "EXPORT_TABLES",
    "hierarchy",
    "contexts",
    "to_frame",
    "pair_frame",
    "kernels_frame",
    "analyze",
    "merge",
    "batch",
    "Records",
    "__version__",
]

__version__: str = _native.__version__

PathLike = Union[str, "os.PathLike[str]"]
Paths = Union[PathLike, Sequence[PathLike]]
PerTrace = Union[None, int, Sequence[Optional[int]]]
PerTracePath = Union[None, PathLike, Sequence[Optional[PathLike]]]

_log = logging.getLogger("torchtrace")


class TorchtraceWarning(UserWarning):
    """A problem the command line reports with exit status 1 (a selected
    context missing, no context measured, a containment link broken)."""


def _paths(paths: Paths) -> List[str]:
    """One path or a sequence of them, as strings."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        return [os.fsdecode(paths)]
    out = [os.fsdecode(p) for p in paths]
    if not out:
        raise ValueError("no trace given")
    return out


def _per_trace(value: Any, name: str, convert: Any) -> Optional[List[Any]]:
    """``--tokens``/``--summary`` given once per trace: one value (for the
    first trace), or a sequence with ``None`` where it is not known."""
    if value is None:
        return None
    if isinstance(value, (int, str, bytes, os.PathLike)) and not isinstance(value, bool):
        value = [value]
    try:
        return [None if v is None else convert(v) for v in value]
    except TypeError as e:
        raise ValueError(f"{name}: {e}") from None


def _tokens(tokens: PerTrace) -> Optional[List[Optional[int]]]:
    def count(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"tokens must be non-negative integers, not {v!r}")
        return v

    return _per_trace(tokens, "tokens", count)


def _strings(value: Union[None, str, Sequence[str]]) -> Optional[List[str]]:
    """One string or a sequence of them (``--chain``/``--category`` repeated)."""
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)


def _finish(answer: Any) -> Dict[str, Any]:
    """The native answer (JSON text, problems, notes) as the document, with
    problems warned about and notes logged."""
    text, problems, notes = answer
    for p in problems:
        warnings.warn(p, TorchtraceWarning, stacklevel=3)
    for n in notes:
        _log.info("%s", n)
    return json.loads(text)


def analyses() -> List[str]:
    """The analyses :func:`run` knows, in registry order (``pair``,
    ``hierarchy``, ``kernels``, ...)."""
    return [name for name, command in _native.analyses() if command]


def run(
    analysis: str,
    paths: Paths,
    *,
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    tokens: PerTrace = None,
    summaries: PerTracePath = None,
    per_context: bool = False,
    progress: bool = False,
    **options: Any,
) -> Dict[str, Any]:
    """Run any analysis of the registry as its subcommand does with
    ``--format json`` and return that document: the one generic entry;
    :func:`pair`, :func:`kernels` and :func:`hierarchy` are thin wrappers.

    Args:
        analysis: its name (see :func:`analyses`).
        paths: the traces (``.json`` or gzip); how many depends on the analysis.
        context: select step contexts by exact ``user_annotation`` name
            (default: the most frequent pure-decode vLLM step name).
        context_regex: select every ``user_annotation`` whose name matches.
        tokens: completion tokens per trace (an int for one trace, or a list
            with one per trace); else each trace's run summary. Tokens for
            some traces but not all are a ``ValueError`` (the others would
            silently take their summaries' tokens).
        summaries: run summary JSON files per trace (instead of the
            ``X.summary.json`` beside trace ``X.pt.trace.json.gz``).
        per_context: add each trace's ``per_context`` rows, where it has them.
        progress: draw progress bars on stderr (a terminal, large files only).
        **options: the analysis's own options, by the names it defines (the
            keys of its options in records; a missing one, or one given as
            ``None``, takes its default from the native module, an unknown
            one is a ``ValueError``).

    Raises:
        TraceError: a trace cannot be read to its end (``.document`` holds the
            figures over the events read, when there are any).
        ValueError: bad arguments (an unknown analysis or option, both context
            and context_regex, a bad regex, too many traces).
    """
    # An option left at None takes the native module's default (each
    # analysis's options' `Default`, defined once, in Rust).
    given = {key: value for key, value in options.items() if value is not None}
    return _finish(
        _native.run(
            analysis,
            _paths(paths),
            options=json.dumps(given),
            context=context,
            context_regex=context_regex,
            tokens=_tokens(tokens),
            summaries=_per_trace(summaries, "summaries", os.fsdecode),
            per_context=per_context,
            progress=progress,
        )
    )


def pair(
    paths: Paths,
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    tokens: PerTrace = None,
    summaries: PerTracePath = None,
    gpu_span: Optional[str] = None,
    per_context: bool = False,
    progress: bool = False,
) -> Dict[str, Any]:
    """Pair each step's CPU ``user_annotation`` with its GPU annotation(s), as
    ``torchtrace pair -f json`` does: ``run("pair", ...)``.

    Args:
        paths: one trace; two: baseline (AR) then candidate (MTP), compared;
            or more, side by side (the ranks of a run, say).
        context, context_regex, tokens, summaries, per_context, progress: as
            for :func:`run`.
        gpu_span: ``"auto"`` (the default), ``"annotation"`` or ``"correlation"``.

    Returns:
        ``{"traces": [...], "comparison": {...} or None}``, as the CLI prints it.
    """
    return run("pair", paths, context=context, context_regex=context_regex, tokens=tokens,
               summaries=summaries, per_context=per_context, progress=progress,
               gpu_span=gpu_span)


def kernels(
    paths: Paths,
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    tokens: PerTrace = None,
    summaries: PerTracePath = None,
    top: Optional[int] = None,
    per_context: bool = False,
    progress: bool = False,
) -> Dict[str, Any]:
    """Follow each step context's launch calls to the GPU work they caused
    (by correlation, CUDA graphs included), as ``torchtrace kernels -f json``
    does: ``run("kernels", ...)``.

    Args:
        paths: one trace; two: baseline (AR) then candidate (MTP), compared;
            or more, side by side (the ranks of a run, say).
        context, context_regex, tokens, summaries, per_context, progress: as
            for :func:`run`.
        top: how many kernels to list per trace (default: the native one, 10).

    Returns:
        ``{"traces": [...], "comparison": {...} or None}``, as the CLI prints it.
    """
    if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 0):
        raise ValueError(f"top must be a non-negative integer, not {top!r}")
    return run("kernels", paths, context=context, context_regex=context_regex, tokens=tokens,
               summaries=summaries, per_context=per_context, progress=progress, top=top)


def iterations(
    paths: Paths,
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    tokens: PerTrace = None,
    summaries: PerTracePath = None,
    per_iteration: bool = False,
    progress: bool = False,
    **options: Any,
) -> Dict[str, Any]:
    """Where each generated token's time goes over the whole decode loop, by
    phase (forward, sample, draft, other), with CUDA-graph facts, as
    ``torchtrace iterations -f json`` does: ``run("iterations", ...)``.

    Args:
        paths: one trace; two: baseline (AR) then candidate (MTP), compared;
            or more, side by side (the ranks of a run, say).
        context, context_regex, tokens, summaries, progress: as for :func:`run`.
        per_iteration: add each trace's ``rows`` (one per iteration).
        **options: ``sample_names``, ``draft_names`` (lists of range names),
            ``graph`` (the repeating graph's number, instead of the rule's).

    Returns:
        ``{"traces": [...], "comparison": {...} or None}``, as the CLI prints it.
    """
    return run("iterations", paths, context=context, context_regex=context_regex, tokens=tokens,
               summaries=summaries, per_context=per_iteration, progress=progress, **options)


def ops(
    paths: Paths,
    tokens: PerTrace = None,
    summaries: PerTracePath = None,
    top: Optional[int] = None,
    sort: Optional[str] = None,
    progress: bool = False,
) -> Dict[str, Any]:
    """Which CPU operator launched which GPU work, and whether the run is
    launch-bound (docs/VIEWS.md O1-O10), as ``torchtrace ops -f json``
    does: ``run("ops", ...)``.

    Args:
        paths: one trace; two: baseline (AR) then candidate (MTP), their
            top-level ops compared; or more, side by side.
        tokens, summaries, progress: as for :func:`run` (per-token figures).
        top, sort: the CLI's table options (``"gpu_self"``, the default,
            ``"gpu_top"``, ``"host"``, ``"calls"``; ``top`` defaults to the
            native 20); the document has every row regardless.

    Returns:
        ``{"traces": [{"summary": {...}, "ops": [...], ...}], "comparison": {...} or None}``.
    """
    return run("ops", paths, tokens=tokens, summaries=summaries, progress=progress,
               top=top, sort=sort)


def ops_frame(doc_or_paths: Union[Dict[str, Any], Paths], kind: str = "pandas") -> Any:
    """Every op row of an :func:`ops` document (or of the traces given), one
    row per (trace, cat, name) with the trace's ``path`` first, as
    :func:`to_frame` makes it (a pandas ``DataFrame`` or a ``pyarrow.Table``)."""
    doc = doc_or_paths if isinstance(doc_or_paths, dict) else ops(doc_or_paths)
    rows = [dict(path=t["path"], **r) for t in doc["traces"] for r in t["ops"]]
    return to_frame(rows, kind=kind)


def idle(
    paths: Paths,
    tokens: PerTrace = None,
    summaries: PerTracePath = None,
    progress: bool = False,
    **options: Any,
) -> Dict[str, Any]:
    """Why the GPU waits: per device the timeline and comm/compute overlap,
    per stream the idle gaps (host wait, kernel wait, other) and the launch
    queue, per step the same breakdown, as ``torchtrace idle -f json`` does:
    ``run("idle", ...)`` (the step rows are always included).

    Args:
        paths: one trace; two: baseline (AR) then candidate (MTP), compared per
            token; or more, side by side.
        tokens, summaries, progress: as for :func:`run`.
        **options: ``kernel_wait_ns`` (a non-host-wait gap shorter than this is
            a kernel wait; default 30000).

    Returns:
        ``{"traces": [...], "comparison": {...} or None}``, as the CLI prints it.
    """
    return run("idle", paths, tokens=tokens, summaries=summaries, progress=progress, **options)


def idle_frames(doc: Dict[str, Any], kind: str = "pandas") -> Dict[str, Any]:
    """An :func:`idle` document as three tables — ``devices``, ``streams``
    (the queue flattened into ``queue_*`` columns) and ``steps`` (every step
    row) — each with the trace's ``path``: pandas DataFrames (``kind="pandas"``),
    ``pyarrow.Table``s (``kind="arrow"``) or lists of dicts (``kind="rows"``).
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


#: The tables :func:`export` writes, in order.
EXPORT_TABLES = ("activities", "launches", "ops", "steps")


def export(
    paths: Paths,
    tables: Union[None, str, Sequence[str]] = None,
    out: Optional[PathLike] = None,
    compression: str = "zstd",
    progress: bool = False,
) -> Dict[str, Any]:
    """Every linked event as Apache Arrow tables, as ``torchtrace export``
    writes them (int64 ns, exact; README.md defines every column).

    Args:
        paths: one trace or several (their rows one after another, told
            apart by the ``trace`` column).
        tables: names among :data:`EXPORT_TABLES` (default: all four).
        out: a directory to keep the Parquet files in (``<table>.parquet``);
            default: a temporary one, removed once the tables are read.
        compression: ``"zstd"``, ``"snappy"`` or ``"none"``.
        progress: progress bars on stderr.

    Returns:
        ``{table name: pyarrow.Table}`` (needs pyarrow: ``pip install
        torchtrace[arrow]``).
    """
    try:
        import pyarrow.parquet as pq
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("torchtrace.export needs pyarrow: pip install pyarrow") from e
    import tempfile

    names = list(EXPORT_TABLES) if tables is None else _strings(tables) or []

    def write(directory: str) -> Dict[str, Any]:
        answer = _native.export(_paths(paths), directory, names, compression, progress)
        _finish(answer)
        # Read into memory: the files may be removed afterwards.
        return {
            n: pq.read_table(os.path.join(directory, n + ".parquet"), memory_map=False)
            for n in names
        }

    if out is not None:
        return write(os.fspath(out))
    with tempfile.TemporaryDirectory(prefix="torchtrace-export-") as d:
        return write(d)


def hierarchy(
    paths: Paths,
    chains: Union[None, str, Sequence[str]] = None,
    categories: Union[None, str, Sequence[str]] = None,
    any_thread: Optional[bool] = None,
    examples: Optional[int] = None,
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    tokens: PerTrace = None,
    gpu_work: Optional[bool] = None,
    progress: bool = False,
) -> Dict[str, Any]:
    """Verify containment chains such as
    ``"sample_tokens>propose_draft_token_ids>proposer.propose"`` and report
    inclusive durations, as ``torchtrace hierarchy -f json`` does:
    ``run("hierarchy", ...)``.

    Args:
        paths: one or more traces (with two: baseline then candidate).
        chains: ``"a>b>c"`` chains (default: the CLI's default chain);
            ``"re:RE"`` elements match by regex.
        categories: event categories taking part (default: ``cpu_op``,
            ``user_annotation``, ``python_function``, ``Operator``).
        any_thread: containment across threads (ignore pid/tid; default off).
        examples: uncontained children listed per link (default 5).
        context, context_regex, tokens, progress: as for :func:`run`.
        gpu_work: join each function's calls to their GPU work (default on;
            off: several times faster).

    Returns:
        ``{"traces": [...], "comparison": {...} or None}``, as the CLI prints
        it. Broken links are warned about (:class:`TorchtraceWarning`).
    """
    return run("hierarchy", paths, context=context, context_regex=context_regex,
               tokens=tokens, progress=progress, chains=_strings(chains) or [],
               categories=_strings(categories) or [], any_thread=any_thread,
               examples=examples, gpu_work=gpu_work)


def diff(
    baseline: PathLike,
    candidate: PathLike,
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    tokens: PerTrace = None,
    summaries: PerTracePath = None,
    progress: bool = False,
    **options: Any,
) -> Dict[str, Any]:
    """What changed between two runs, kernel by kernel and per generated
    token, as ``torchtrace diff BASELINE CANDIDATE -f json`` prints it:
    ``run("diff", [baseline, candidate], ...)``.

    Args:
        baseline, candidate: the two traces (e.g. AR, then MTP).
        context, context_regex, tokens, summaries, progress: as for :func:`run`.
        **options: ``scope`` (``"steps"``, default, or ``"trace"``), ``top``
            (table rows), ``families`` (a list of ``"NAME=REGEX"``, matched
            before the built-in families), ``launch_scope``.

    Returns:
        ``{"baseline": {...}, "candidate": {...}, "scope", "normalisation",
        "kernels": [...], "families": [...], "graphs", "dominant", "summary"}``.
    """
    return run("diff", [baseline, candidate], context=context, context_regex=context_regex,
               tokens=tokens, summaries=summaries, progress=progress, **options)


def ranks(
    paths: Paths,
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    per_step: bool = False,
    progress: bool = False,
    **options: Any,
) -> Dict[str, Any]:
    """The traces of multi-rank runs side by side, as ``torchtrace ranks -f
    json`` prints it: ``run("ranks", ...)``. Per vLLM step, which rank the
    others waited for at the step's collectives, and how long.

    Args:
        paths: rank traces, or directories holding them (grouped into runs by
            directory, name prefix and profiler cycle).
        context, context_regex, progress: as for :func:`run`.
        per_step: add each run's ``steps`` (every aligned decode step).
        **options: ``rank_regex`` (the rank in the file name: first capture
            group), ``collectives`` (extra patterns), ``align`` (``"auto"`` or
            ``"none"``), ``threshold_us`` (fixed straggler threshold, µs),
            ``mad_k``, ``floor_us``, ``floor_step_pct`` (the derived one),
            ``tokens`` (completion tokens of every run), ``launch_scope``.

    Returns:
        ``{"runs": [{"run", "ranks", "offsets", "threshold", "stragglers",
        "boundary", "steps"?, "notes", ...}]}``.
    """
    return run("ranks", paths, context=context, context_regex=context_regex,
               per_context=per_step, progress=progress, **options)



def contexts(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The per-context rows of a :func:`pair` or :func:`kernels` document made
    with ``per_context=True``, each with its trace's ``path`` and ``index``
    (its position among the trace's selected contexts)."""
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
        doc_or_rows: a :func:`pair`/:func:`kernels` document made with
            ``per_context=True``, or rows from :func:`contexts`.
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


def pair_frame(paths: Paths, kind: str = "pandas", **kwargs: Any) -> Any:
    """:func:`pair` with ``per_context=True``, as :func:`to_frame` rows."""
    return to_frame(pair(paths, per_context=True, **kwargs), kind=kind)


def kernels_frame(paths: Paths, kind: str = "pandas", **kwargs: Any) -> Any:
    """:func:`kernels` with ``per_context=True``, as :func:`to_frame` rows."""
    return to_frame(kernels(paths, per_context=True, **kwargs), kind=kind)


# ---- Campaigns: records, merge, batch ---------------------------------------

#: A record set as :func:`analyze` returns it: ``{"header": {...}, "files":
#: [{...}, ...], "complete": True}`` -- the header of the campaign (schema
#: version, inputs, options) and one record per file, as ``torchtrace batch
#: --records`` writes them.
Records = Dict[str, Any]


def _records_text(rec: Records) -> str:
    """A record set as the JSON lines of a records file."""
    try:
        header, files = rec["header"], rec["files"]
    except (KeyError, TypeError):
        raise ValueError(
            "not a torchtrace record set: expected a dict with 'header' and 'files' "
            "(from torchtrace.analyze)"
        ) from None
    lines = [json.dumps({"header": header})]
    lines.extend(json.dumps({"file": f}) for f in files)
    if rec.get("complete", True):
        lines.append(json.dumps({"end": {"files": len(files)}}))
    return "\n".join(lines) + "\n"


def _parse_records(text: str) -> Records:
    header: Any = None
    files: List[Dict[str, Any]] = []
    complete = False
    for line in text.splitlines():
        if not line.strip():
            continue
        v = json.loads(line)
        if "header" in v:
            header = v["header"]
        elif "file" in v:
            files.append(v["file"])
        elif "end" in v:
            complete = True
    return {"header": header, "files": files, "complete": complete}


def _campaign_args(
    context: Optional[str],
    context_regex: Optional[str],
    chains: Union[None, str, Sequence[str]],
    manifest: Optional[PathLike],
) -> Dict[str, Any]:
    return {
        "context": context,
        "context_regex": context_regex,
        "chains": _strings(chains),
        "manifest": None if manifest is None else os.fsdecode(manifest),
    }


def analyze(
    paths: Paths,
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    chains: Union[None, str, Sequence[str]] = None,
    manifest: Optional[PathLike] = None,
    progress: bool = False,
) -> Records:
    """Read traces, directories or archives as ``torchtrace batch`` does and
    return their per-file records (the map step of a batch), without
    writing anything.

    Args:
        paths: a trace, directory, ``.tar``/``.tar.gz``/``.zip``, or a list.
        context, context_regex: how step contexts are chosen (default: the
            most frequent pure-decode vLLM step name of each trace).
        chains: ``"a>b>c"`` chains for the hierarchy tables (default: the
            CLI's).
        manifest: CSV ``path,mode,workload,completion_tokens`` for traces
            without a run summary.
        progress: draw a progress bar on stderr.

    Returns:
        ``{"header": {...}, "files": [...], "complete": True}``: each file's
        record has its ``path``, ``status`` (``ok``/``error``/``skipped``),
        ``error`` and ``results``: each analysis's figures by key (``pairs``,
        ``hierarchy``, ``kernels``, ...).
        Pass record sets to :func:`merge`.

    Raises:
        ValueError: bad arguments (both contexts, a bad regex or chain).

    A trace that cannot be read is a record with status ``error`` and its
    reason, never an exception.
    """
    text = _native.analyze(
        _paths(paths), **_campaign_args(context, context_regex, chains, manifest), progress=progress
    )
    return _parse_records(text)


def _merged(answer: Tuple[str, str, List[Tuple[str, str]], List[str]]) -> Dict[str, Any]:
    results, _stdout, failed, notes = answer
    for n in notes:
        _log.info("%s", n)
    if failed:
        warnings.warn(
            f"{len(failed)} file(s) failed: "
            + "; ".join(f"{p}: {why}" for p, why in failed[:5])
            + (" ..." if len(failed) > 5 else ""),
            TorchtraceWarning,
            stacklevel=3,
        )
    return json.loads(results)


def _check_record_list(records: Any) -> None:
    """Refuses one record set or one path given where a list of them is
    expected: iterating it would take its keys or characters for paths."""
    if isinstance(records, dict):
        what = "one record set (a dict)"
    elif isinstance(records, (str, bytes, os.PathLike)):
        what = "one path"
    else:
        return
    raise TypeError(
        f"merge() takes a list of record sets or records-file paths, not {what}: "
        "wrap it in a list, e.g. merge([records], out_dir)"
    )


def merge(
    records: Iterable[Union[Records, PathLike]],
    out_dir: PathLike,
    figures: Optional[str] = "png",
) -> Dict[str, Any]:
    """Write what ``torchtrace batch`` writes (``results.json``, ``traces.csv``,
    the tables, ``figures/``, ``report.md``) into ``out_dir`` from records, as
    ``torchtrace merge`` does; the same records give the same bytes.

    Args:
        records: record sets from :func:`analyze`, or paths of records files
            (``torchtrace batch --records``, one per shard).
        out_dir: the output directory (created if needed).
        figures: ``"png"``, ``"svg"``, ``"both"``, or ``None`` for no figures.

    Returns:
        The ``results.json`` document. Failed files (``failed`` > 0) are also
        warned about (:class:`TorchtraceWarning`).

    Raises:
        TypeError: ``records`` is one record set or one path, not a list of
            them.
        ValueError: records of another schema, a shard given twice, records
            made with different options.
        OSError: a records file or ``out_dir`` cannot be read or written.
    """
    _check_record_list(records)
    texts: List[str] = []
    paths: List[str] = []
    for r in records:
        if isinstance(r, dict):
            texts.append(_records_text(r))
        else:
            paths.append(os.fsdecode(r))
    if not texts and not paths:
        raise ValueError("no records given")
    return _merged(_native.merge(texts, paths, os.fsdecode(out_dir), figures=figures))


def batch(
    paths: Paths,
    out_dir: PathLike,
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    chains: Union[None, str, Sequence[str]] = None,
    manifest: Optional[PathLike] = None,
    figures: Optional[str] = "png",
    progress: bool = False,
) -> Dict[str, Any]:
    """``torchtrace batch PATHS -o out_dir`` in this process: every trace of a
    campaign read in parallel, AR compared with MTP per workload, the paper's
    tables and figures written to ``out_dir``.

    Args:
        paths, context, context_regex, chains, manifest: as for :func:`analyze`.
        out_dir: the output directory (left out of directory walks).
        figures: ``"png"``, ``"svg"``, ``"both"``, or ``None``.
        progress: draw a progress bar on stderr.

    Returns:
        The ``results.json`` document (``failed``: files that failed, also
        warned about).

    For a campaign spread over a cluster, see :func:`torchtrace.distributed.batch`.
    """
    text = _native.analyze(
        _paths(paths),
        **_campaign_args(context, context_regex, chains, manifest),
        exclude=os.fsdecode(out_dir),
        progress=progress,
    )
    return _merged(_native.merge([text], [], os.fsdecode(out_dir), figures=figures))


from ._roofline import roofline_frame  # noqa: E402  (issue 58; its own module)
