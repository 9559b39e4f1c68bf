"""The package's shared core: the argument types, their conversion to what
the native module takes, the generic entry :func:`run` and the native
answer turned into a document (problems warned about, notes logged).
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _native
from .errors import TorchtraceWarning

PathLike = Union[str, "os.PathLike[str]"]
Paths = Union[PathLike, Sequence[PathLike]]
PerTrace = Union[None, int, Sequence[Optional[int]]]
PerTracePath = Union[None, PathLike, Sequence[Optional[PathLike]]]
Strings = Union[None, str, Sequence[str]]

_log = logging.getLogger("torchtrace")


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


def _strings(value: Strings) -> Optional[List[str]]:
    """One string or a sequence of them (``--chain``/``--category`` repeated)."""
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)


def _captures(capture: Optional[Paths]) -> Optional[list]:
    """``capture=`` as the native module takes it: a list of paths (a file
    or a folder each; one path or several), or ``None`` for
    ``capture_traces/`` beside each trace."""
    if capture is None:
        return None
    if isinstance(capture, (str, os.PathLike)):
        return [os.fspath(capture)]
    return [os.fspath(p) for p in capture]


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
    capture: Optional[Paths] = None,
    **options: Any,
) -> Dict[str, Any]:
    """Run any analysis of the registry as its subcommand does with
    ``--format json`` and return that document: the one generic entry;
    :func:`~torchtrace.pair`, :func:`~torchtrace.kernels`, ... are thin
    wrappers with the analysis's options as explicit keywords.

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
        capture: capture traces of the CUDA/HIP graphs (a file or a folder,
            or several; ``--capture``), an input of the read as the traces
            are; default: ``capture_traces/`` beside each trace. Analyses
            that attribute GPU work (``ops``, ``kernels``, ``iterations``,
            ``diff``, ``roofline``) see the ops, modules and shapes inside
            the graph replays; the others ignore it.
        **options: the analysis's own options, by the names it defines (the
            keys of its options in records; a missing one, or one given as
            ``None``, takes its default from the native module, an unknown
            one is a ``ValueError``): the one place options are open, as
            the analysis is named at run time.

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
            capture=_captures(capture) or [],
        )
    )
