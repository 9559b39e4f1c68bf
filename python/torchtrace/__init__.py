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

The package, by module (every public name is here, at the top):

- :mod:`torchtrace.errors`: :class:`TraceError` (with the native error's
  fields: ``path``, ``offset``, ``events_read``, ``message``, ``document``)
  and :class:`TorchtraceWarning`;
- :mod:`torchtrace.commands`: :func:`pair`, :func:`kernels`,
  :func:`iterations`, :func:`ops`, :func:`idle`, :func:`hierarchy`,
  :func:`diff`, :func:`ranks`, :func:`roofline`, :func:`memory`, :func:`export`, each option an explicit
  keyword whose default (``None``) is the native module's; :func:`run` and
  :func:`analyses` (the generic entry, in ``torchtrace._core``);
- :mod:`torchtrace.frames`: documents as pandas DataFrames or pyarrow
  Tables (:func:`to_frame`, :func:`pair_frame`, :func:`kernels_frame`,
  :func:`ops_frame`, :func:`idle_frames`, :func:`memory_frames`, :func:`contexts`), both optional
  dependencies;
- :mod:`torchtrace.campaigns`: :func:`analyze`, :func:`merge`, :func:`batch`
  (``torchtrace batch`` in this process);
- :mod:`torchtrace.distributed`: a campaign on Dask or Ray workers.
"""

from __future__ import annotations

from . import _native
from ._core import PathLike, Paths, PerTrace, PerTracePath, analyses, run
from .campaigns import Records, analyze, batch, merge
from .commands import (
    EXPORT_TABLES,
    diff,
    export,
    hierarchy,
    idle,
    iterations,
    kernels,
    memory,
    critical,
    ops,
    pair,
    ranks,
    roofline,
)
from .errors import TorchtraceWarning, TraceError
from .frames import (
    contexts,
    idle_frames,
    kernels_frame,
    memory_frames,
    ops_frame,
    pair_frame,
    roofline_frame,
    to_frame,
)

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
    "roofline",
    "roofline_frame",
    "memory",
    "memory_frames",
    "critical",
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
