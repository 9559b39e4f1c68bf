"""A campaign spread over a cluster: map over Dask or Ray workers, merge once.

>>> from torchtrace import distributed
>>> results = distributed.batch(["/data/campaign/**/*.pt.trace.json.gz"], "out",
...                             engine="dask")                     # doctest: +SKIP

The driver plans the campaign (lists directories and archives, marks
duplicates: the same plan ``torchtrace batch`` makes), ships one small task
per unit of work -- a trace file, a zip member, a whole tar -- to the
engine's workers, and merges the records they send back into what ``torchtrace
batch`` writes, byte for byte. Each worker opens its own files (they must be
reachable at the same paths from every worker: a shared file system); only
the tasks and the records (a few kB per trace) travel.

A task that raises or whose worker dies becomes failed rows with the reason,
never a missing row.
"""

from __future__ import annotations

import glob
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from . import _native
from ._core import _captures, _strings
from .campaigns import _merged

__all__ = ["batch", "expand", "run_task"]

PathLike = Union[str, "os.PathLike[str]"]

_GLOB_CHARS = frozenset("*?[")


def expand(paths_or_globs: Union[PathLike, Sequence[PathLike]]) -> List[str]:
    """Paths as given, with glob patterns (``*``, ``?``, ``[..]``, ``**``)
    expanded in sorted order. A pattern that matches nothing is kept as it
    is, so that it shows up as a failed input ("no such file") rather than
    vanish."""
    if isinstance(paths_or_globs, (str, bytes, os.PathLike)):
        paths_or_globs = [paths_or_globs]
    out: List[str] = []
    for p in paths_or_globs:
        text = os.fsdecode(p)
        if _GLOB_CHARS.intersection(text) and not os.path.exists(text):
            hits = sorted(glob.glob(text, recursive=True))
            out.extend(hits or [text])
        else:
            out.append(text)
    if not out:
        raise ValueError("no inputs given")
    return out


def run_task(task: str) -> List[str]:
    """Runs one task on a worker: the record lines of the files it reads.
    (Module level, so engines ship it by reference.)"""
    return _native.run_task(task)


def _describe(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    first = text[0] if text else ""
    return f"task failed on the {type(e).__name__}" + (f": {first}" if first else "")


def _map_dask(client: Any, fn: Callable[[str], List[str]], tasks: List[str]) -> List[Any]:
    futures = client.map(fn, tasks, pure=False)
    out: List[Any] = []
    for f in futures:
        try:
            out.append(f.result())
        except Exception as e:  # a worker died (KilledWorker) or the task raised
            out.append(e)
    return out


def _map_ray(fn: Callable[[str], List[str]], tasks: List[str]) -> List[Any]:
    import ray

    remote = ray.remote(fn)
    refs = [remote.remote(t) for t in tasks]
    out: List[Any] = []
    for r in refs:
        try:
            out.append(ray.get(r))
        except Exception as e:  # WorkerCrashedError, RayTaskError, ...
            out.append(e)
    return out


def _run_all(
    engine: str,
    client: Any,
    tasks: List[str],
    fn: Callable[[str], List[str]] = run_task,
    workers: Optional[int] = None,
) -> List[Any]:
    """Maps ``fn`` over the tasks on the engine; each result is the task's
    record lines or the exception it ended with."""
    if not tasks:
        return []
    if engine == "dask":
        if client is not None:
            return _map_dask(client, fn, tasks)
        from dask.distributed import Client, LocalCluster

        with LocalCluster(
            n_workers=workers or min(len(tasks), os.cpu_count() or 1),
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
        ) as cluster, Client(cluster) as own:
            return _map_dask(own, fn, tasks)
    if engine == "ray":
        import ray

        started = False
        if not ray.is_initialized():
            if client is not None:
                ray.init(address=client)
            else:
                ray.init(num_cpus=workers or os.cpu_count() or 1, include_dashboard=False)
            started = True
        try:
            return _map_ray(fn, tasks)
        finally:
            if started:
                ray.shutdown()
    raise ValueError(f"engine must be 'dask' or 'ray', not {engine!r}")


def batch(
    paths_or_globs: Union[PathLike, Sequence[PathLike]],
    out_dir: PathLike,
    engine: str = "dask",
    client: Any = None,
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    chains: Union[None, str, Sequence[str]] = None,
    manifest: Optional[PathLike] = None,
    figures: Optional[str] = "png",
    workers: Optional[int] = None,
    *,
    capture: Union[None, PathLike, Sequence[PathLike]] = None,
) -> Dict[str, Any]:
    """``torchtrace batch`` with the reading spread over Dask or Ray workers.

    Args:
        paths_or_globs: traces, directories, archives or glob patterns
            (expanded on the driver, sorted: :func:`expand`).
        out_dir: the output directory (written by the driver).
        engine: ``"dask"`` or ``"ray"``.
        client: Dask: a ``dask.distributed.Client`` (e.g.
            ``Client("tcp://scheduler:8786")``); Ray: the ``address`` for
            ``ray.init`` (or call ``ray.init`` yourself first). ``None``: a
            local cluster for the call (Dask: ``workers`` processes; Ray:
            ``workers`` CPUs).
        context, context_regex, chains, manifest, figures: as for
            :func:`torchtrace.batch`.
        workers: the size of the local cluster when ``client`` is None.
        capture: the graphs' capture traces for a campaign of one run, as
            for :func:`torchtrace.batch` (made absolute for the workers).

    Returns:
        The ``results.json`` document, equal byte for byte to what
        ``torchtrace batch`` writes for the same inputs.
    """
    paths = expand(paths_or_globs)
    header, tasks = _native.plan(
        paths,
        context=context,
        context_regex=context_regex,
        chains=_strings(chains),
        manifest=None if manifest is None else os.fsdecode(manifest),
        exclude=os.fsdecode(out_dir),
        capture=_captures(capture) or [],
    )
    results = _run_all(engine, client, tasks, workers=workers)
    lines = [header]
    for task, got in zip(tasks, results):
        if isinstance(got, BaseException):
            lines.extend(_native.fail_task(task, _describe(got)))
        else:
            lines.extend(got)
    rows = len(lines) - 1
    lines.append('{"end":{"files":%d}}' % rows)
    text = "\n".join(lines) + "\n"
    return _merged(_native.merge([text], [], os.fsdecode(out_dir), figures=figures))
