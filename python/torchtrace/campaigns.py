"""Campaigns in this process: :func:`analyze` (the map step of ``torchtrace
batch``: one record per file), :func:`merge` (``torchtrace merge``: the
records into ``results.json``, the tables, the figures and ``report.md``)
and :func:`batch` (both). :mod:`torchtrace.distributed` runs the map step
on Dask or Ray workers and merges with the same code.
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

from . import _native
from ._core import PathLike, Paths, Strings, _captures, _log, _paths, _strings
from .errors import TorchtraceWarning

__all__ = ["Records", "analyze", "merge", "batch"]

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
    chains: Strings,
    manifest: Optional[PathLike],
    capture: Optional[Paths] = None,
) -> Dict[str, Any]:
    return {
        "context": context,
        "context_regex": context_regex,
        "chains": _strings(chains),
        "manifest": None if manifest is None else os.fsdecode(manifest),
        "capture": _captures(capture) or [],
    }


def analyze(
    paths: Paths,
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    chains: Strings = None,
    manifest: Optional[PathLike] = None,
    progress: bool = False,
    *,
    capture: Optional[Paths] = None,
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
        capture: capture traces of the CUDA/HIP graphs (``--capture``), the
            same for every trace: a campaign of one run only (else a
            ``ValueError``); default: ``capture_traces/`` beside each trace.

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
        _paths(paths),
        **_campaign_args(context, context_regex, chains, manifest, capture),
        progress=progress,
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
        warned about (:class:`~torchtrace.TorchtraceWarning`).

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
    chains: Strings = None,
    manifest: Optional[PathLike] = None,
    figures: Optional[str] = "png",
    progress: bool = False,
    *,
    capture: Optional[Paths] = None,
) -> Dict[str, Any]:
    """``torchtrace batch PATHS -o out_dir`` in this process: every trace of a
    campaign read in parallel, AR compared with MTP per workload, the paper's
    tables and figures written to ``out_dir``.

    Args:
        paths, context, context_regex, chains, manifest, capture: as for
            :func:`analyze`.
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
        **_campaign_args(context, context_regex, chains, manifest, capture),
        exclude=os.fsdecode(out_dir),
        progress=progress,
    )
    return _merged(_native.merge([text], [], os.fsdecode(out_dir), figures=figures))
