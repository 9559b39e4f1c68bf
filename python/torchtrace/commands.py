"""The per-trace subcommands as functions: each runs ``torchtrace
<subcommand> --format json`` through :func:`~torchtrace.run` and returns
its document as a ``dict``. Every option is an explicit keyword; one left
at ``None`` takes its default from the native module (the analysis's
options' ``Default``, defined once, in Rust), so the defaults named below
are the CLI's.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Sequence, Union

from . import _native
from ._core import PathLike, Paths, PerTrace, PerTracePath, Strings, _captures, _finish, _paths, _strings, run

__all__ = [
    "pair",
    "kernels",
    "iterations",
    "ops",
    "idle",
    "export",
    "EXPORT_TABLES",
    "hierarchy",
    "diff",
    "ranks",
    "roofline",
    "memory",
    "critical",
]


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
            for :func:`~torchtrace.run`.
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
    *,
    capture: Optional[Paths] = None,
) -> Dict[str, Any]:
    """Follow each step context's launch calls to the GPU work they caused
    (by correlation, CUDA graphs included), as ``torchtrace kernels -f json``
    does: ``run("kernels", ...)``.

    Args:
        paths: one trace; two: baseline (AR) then candidate (MTP), compared;
            or more, side by side (the ranks of a run, say).
        context, context_regex, tokens, summaries, per_context, progress: as
            for :func:`~torchtrace.run`.
        top: how many kernels to list per trace (default: the native one, 10).
        capture: capture traces of the CUDA/HIP graphs (a file or a folder,
            or several; ``--capture``); default: ``capture_traces/`` beside
            each trace. Graph replays are attributed to the ops, modules and
            shapes that captured them.

    Returns:
        ``{"traces": [...], "comparison": {...} or None}``, as the CLI prints it.
    """
    if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 0):
        raise ValueError(f"top must be a non-negative integer, not {top!r}")
    return run("kernels", paths, context=context, context_regex=context_regex, tokens=tokens,
               summaries=summaries, per_context=per_context, progress=progress, top=top,
               capture=capture)


def iterations(
    paths: Paths,
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    tokens: PerTrace = None,
    summaries: PerTracePath = None,
    per_iteration: bool = False,
    progress: bool = False,
    *,
    sample_names: Optional[Sequence[str]] = None,
    draft_names: Optional[Sequence[str]] = None,
    graph: Optional[int] = None,
    capture: Optional[Paths] = None,
) -> Dict[str, Any]:
    """Where each generated token's time goes over the whole decode loop, by
    phase (forward, sample, draft, other), with CUDA-graph facts, as
    ``torchtrace iterations -f json`` does: ``run("iterations", ...)``.

    Args:
        paths: one trace; two: baseline (AR) then candidate (MTP), compared;
            or more, side by side (the ranks of a run, say).
        context, context_regex, tokens, summaries, progress: as for
            :func:`~torchtrace.run`.
        per_iteration: add each trace's ``rows`` (one per iteration).
        sample_names, draft_names: the range names of the sample and draft
            phases (``--sample-name``, ``--draft-name``; default: the CLI's).
        graph: the repeating graph's number (``--graph``), instead of the rule's.
        capture: capture traces of the CUDA/HIP graphs (a file or a folder,
            or several; ``--capture``); default: ``capture_traces/`` beside
            each trace. Graph replays are attributed to the ops, modules and
            shapes that captured them.

    Returns:
        ``{"traces": [...], "comparison": {...} or None}``, as the CLI prints it.
    """
    return run("iterations", paths, context=context, context_regex=context_regex, tokens=tokens,
               summaries=summaries, per_context=per_iteration, progress=progress,
               sample_names=_strings(sample_names), draft_names=_strings(draft_names),
               graph=graph, capture=capture)


def ops(
    paths: Paths,
    tokens: PerTrace = None,
    summaries: PerTracePath = None,
    top: Optional[int] = None,
    sort: Optional[str] = None,
    progress: bool = False,
    *,
    capture: Optional[Paths] = None,
) -> Dict[str, Any]:
    """Which CPU operator launched which GPU work, and whether the run is
    launch-bound (docs/VIEWS.md O1-O10), as ``torchtrace ops -f json``
    does: ``run("ops", ...)``.

    Args:
        paths: one trace; two: baseline (AR) then candidate (MTP), their
            top-level ops compared; or more, side by side.
        tokens, summaries, progress: as for :func:`~torchtrace.run`
            (per-token figures).
        top, sort: the CLI's table options (``"gpu_self"``, the default,
            ``"gpu_top"``, ``"host"``, ``"calls"``, ``"cpu_self"``; ``top`` defaults to the
            native 20); the document has every row regardless.
        capture: capture traces of the CUDA/HIP graphs (a file or a folder,
            or several; ``--capture``); default: ``capture_traces/`` beside
            each trace. Graph replays are attributed to the ops, modules and
            shapes that captured them.

    Returns:
        ``{"traces": [{"summary": {...}, "ops": [...], ...}], "comparison": {...} or None}``.
    """
    return run("ops", paths, tokens=tokens, summaries=summaries, progress=progress,
               top=top, sort=sort, capture=capture)


def idle(
    paths: Paths,
    tokens: PerTrace = None,
    summaries: PerTracePath = None,
    progress: bool = False,
    *,
    kernel_wait_ns: Optional[int] = None,
) -> Dict[str, Any]:
    """Why the GPU waits: per device the timeline and comm/compute overlap,
    per stream the idle gaps (host wait, kernel wait, other) and the launch
    queue, per step the same breakdown, as ``torchtrace idle -f json`` does:
    ``run("idle", ...)`` (the step rows are always included).

    Args:
        paths: one trace; two: baseline (AR) then candidate (MTP), compared per
            token; or more, side by side.
        tokens, summaries, progress: as for :func:`~torchtrace.run`.
        kernel_wait_ns: a non-host-wait gap shorter than this is a kernel
            wait (default 30000).

    Returns:
        ``{"traces": [...], "comparison": {...} or None}``, as the CLI prints it.
    """
    return run("idle", paths, tokens=tokens, summaries=summaries, progress=progress,
               kernel_wait_ns=kernel_wait_ns)


def memory(
    paths: Paths,
    tokens: PerTrace = None,
    summaries: PerTracePath = None,
    progress: bool = False,
    *,
    timeline: Optional[int] = None,
    top: Optional[int] = None,
) -> Dict[str, Any]:
    """The allocator timeline from a trace's ``[memory]`` events (recorded
    with ``profile_memory=True``): per device the peak allocated and
    reserved bytes and when, what holds the peak (by innermost host op and
    by module), what is never freed, per step the high-water mark and the
    churn, per token the bytes allocated, as ``torchtrace memory -f json``
    does: ``run("memory", ...)`` (the step rows are always included).

    Args:
        paths: one trace; two: baseline (AR) then candidate (MTP), compared
            per device; or more, side by side.
        tokens, summaries, progress: as for :func:`~torchtrace.run`.
        timeline: keep each device's levels over time in at most this many
            points (default 0: none).
        top: holders kept per list, the rest summed (default 20; 0: all).

    Returns:
        ``{"traces": [...], "comparison": {...} or None}``, as the CLI prints it.
    """
    return run("memory", paths, tokens=tokens, summaries=summaries, progress=progress,
               timeline=timeline, top=top)


def critical(
    paths: Paths,
    tokens: PerTrace = None,
    summaries: PerTracePath = None,
    progress: bool = False,
    *,
    top: Optional[int] = None,
    window: Optional[str] = None,
) -> Dict[str, Any]:
    """What set each iteration's length: a backward walk through each
    iteration (a step annotation up to the next on its thread) splitting its
    wall time into host, launch, GPU and sync parts that add up to it
    exactly, per iteration, summed, per decode iteration and per token, with
    the activities on the paths, as ``torchtrace critical -f json`` does:
    ``run("critical", ...)`` (every iteration's row is always included).

    Args:
        paths: one trace; two: baseline (AR) then candidate (MTP), compared
            part by part; or more, side by side.
        tokens, summaries, progress: as for :func:`~torchtrace.run`.
        top: activity names listed by their time on the paths (default 10;
            0: all).
        window: walk each CPU user annotation of this name over its own
            interval instead of the step iterations.

    Returns:
        ``{"traces": [...], "comparison": {...} or None}``, as the CLI prints it.
    """
    return run("critical", paths, tokens=tokens, summaries=summaries, progress=progress,
               top=top, window=window)


#: The tables :func:`export` writes, in order.
EXPORT_TABLES = ("activities", "launches", "ops", "steps", "memory")


def export(
    paths: Paths,
    tables: Strings = None,
    out: Optional[PathLike] = None,
    compression: str = "zstd",
    progress: bool = False,
    *,
    capture: Optional[Paths] = None,
) -> Dict[str, Any]:
    """Every linked event as Apache Arrow tables, as ``torchtrace export``
    writes them (int64 ns, exact; docs/COMMANDS.md defines every column).

    Args:
        paths: one trace or several (their rows one after another, told
            apart by the ``trace`` column).
        tables: names among :data:`EXPORT_TABLES` (default: all four).
        out: a directory to keep the Parquet files in (``<table>.parquet``);
            default: a temporary one, removed once the tables are read.
        compression: ``"zstd"``, ``"snappy"`` or ``"none"``.
        progress: progress bars on stderr.
        capture: capture traces of the CUDA/HIP graphs (a file or a folder,
            or several; ``--capture``); default: ``capture_traces/`` beside
            each trace. Graph replays are attributed to the ops, modules and
            shapes that captured them.

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
        answer = _native.export(_paths(paths), directory, names, compression, progress,
                                _captures(capture) or [])
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
    chains: Strings = None,
    categories: Strings = None,
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
        context, context_regex, tokens, progress: as for :func:`~torchtrace.run`.
        gpu_work: join each function's calls to their GPU work (default on;
            off: several times faster).

    Returns:
        ``{"traces": [...], "comparison": {...} or None}``, as the CLI prints
        it. Broken links are warned about (:class:`~torchtrace.TorchtraceWarning`).
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
    *,
    scope: Optional[str] = None,
    top: Optional[int] = None,
    families: Strings = None,
    launch_scope: Optional[str] = None,
    capture: Optional[Paths] = None,
) -> Dict[str, Any]:
    """What changed between two runs, kernel by kernel and per generated
    token, as ``torchtrace diff BASELINE CANDIDATE -f json`` prints it:
    ``run("diff", [baseline, candidate], ...)``.

    Args:
        baseline, candidate: the two traces (e.g. AR, then MTP).
        context, context_regex, tokens, summaries, progress: as for
            :func:`~torchtrace.run`.
        scope: ``"steps"`` (the default) or ``"trace"``.
        top: table rows (the CLI's ``--top``).
        families: ``"NAME=REGEX"`` families, matched before the built-in ones.
        launch_scope: which launch calls a step context holds (``--launch-scope``):
            ``"auto"`` (the default), ``"thread"`` (its own thread's) or
            ``"process"`` (any thread of its process).
        capture: capture traces of the CUDA/HIP graphs (a file or a folder,
            or several; ``--capture``); default: ``capture_traces/`` beside
            each trace. Graph replays are attributed to the ops, modules and
            shapes that captured them.

    Returns:
        ``{"baseline": {...}, "candidate": {...}, "scope", "normalisation",
        "kernels": [...], "families": [...], "graphs", "dominant", "summary"}``.
    """
    return run("diff", [baseline, candidate], context=context, context_regex=context_regex,
               tokens=tokens, summaries=summaries, progress=progress, scope=scope, top=top,
               families=_strings(families), launch_scope=launch_scope,
               capture=capture)


def ranks(
    paths: Paths,
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    per_step: bool = False,
    progress: bool = False,
    *,
    rank_regex: Optional[str] = None,
    collectives: Strings = None,
    align: Optional[str] = None,
    threshold_us: Optional[int] = None,
    mad_k: Optional[int] = None,
    floor_us: Optional[int] = None,
    floor_step_pct: Optional[int] = None,
    tokens: Optional[int] = None,
    launch_scope: Optional[str] = None,
) -> Dict[str, Any]:
    """The traces of multi-rank runs side by side, as ``torchtrace ranks -f
    json`` prints it: ``run("ranks", ...)``. Per vLLM step, which rank the
    others waited for at the step's collectives, and how long.

    Args:
        paths: rank traces, or directories holding them (grouped into runs by
            directory, name prefix and profiler cycle).
        context, context_regex, progress: as for :func:`~torchtrace.run`.
        per_step: add each run's ``steps`` (every aligned decode step).
        rank_regex: the rank in the file name (first capture group).
        collectives: extra collective patterns (regexes).
        align: ``"auto"`` (the default) or ``"none"``.
        threshold_us: a fixed straggler threshold (µs) instead of the derived
            one, which ``mad_k``, ``floor_us`` and ``floor_step_pct`` set.
        tokens: completion tokens of every run.
        launch_scope: as for :func:`diff`.

    Returns:
        ``{"runs": [{"run", "ranks", "offsets", "threshold", "stragglers",
        "boundary", "steps"?, "notes", ...}]}``.
    """
    return run("ranks", paths, context=context, context_regex=context_regex,
               per_context=per_step, progress=progress, rank_regex=rank_regex,
               collectives=_strings(collectives), align=align, threshold_us=threshold_us,
               mad_k=mad_k, floor_us=floor_us, floor_step_pct=floor_step_pct, tokens=tokens,
               launch_scope=launch_scope)


def roofline(
    paths: Paths,
    tokens: PerTrace = None,
    summaries: PerTracePath = None,
    progress: bool = False,
    *,
    top: Optional[int] = None,
    peak_tflops: Optional[float] = None,
    peak_tbps: Optional[float] = None,
    capture: Optional[Paths] = None,
) -> Dict[str, Any]:
    """How close each op with recorded shapes came to the device's roof:
    FLOPs and bytes by its model, the GPU time of the kernels it launched,
    TFLOP/s, TB/s and the bound, as ``torchtrace roofline -f json`` prints
    it: ``run("roofline", ...)``.

    Args:
        paths: one trace; two: baseline then candidate, compared; or more.
        tokens, summaries, progress: as for :func:`~torchtrace.run`
            (per-token sums).
        top: table rows (the CLI's ``--top``); the document has every row.
        peak_tflops, peak_tbps: the device's peaks, replacing the device
            table's (``--peak-tflops``, ``--peak-tbps``).
        capture: capture traces of the CUDA/HIP graphs (a file or a folder,
            or several; ``--capture``); default: ``capture_traces/`` beside
            each trace. Graph replays are attributed to the ops, modules and
            shapes that captured them.

    Returns:
        ``{"traces": [{"rows": [...], "totals": {...}, ...}], "comparison": {...} or None}``.
    """
    return run("roofline", paths, tokens=tokens, summaries=summaries, progress=progress,
               top=top, peak_tflops=peak_tflops, peak_tbps=peak_tbps,
               capture=capture)
