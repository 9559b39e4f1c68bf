"""Type stubs of the compiled module ``torchtrace._native`` (python/src/lib.rs).

Each function returns ``(json_text, problems, notes)``: the document the
command line prints with ``--format json``, the messages that make it exit 1,
and its notes. Use the wrappers in :mod:`torchtrace` instead.
"""

from typing import List, Optional, Sequence, Tuple

__version__: str

Answer = Tuple[str, List[str], List[str]]

class TraceError(Exception):
    """A trace could not be read (to its end)."""

    path: str
    """The trace, as given."""
    offset: Optional[int]
    """Byte offset in the decompressed JSON text, or None (cannot open, not JSON)."""
    events_read: int
    """Events read intact before the problem."""
    message: str
    """What is wrong, without the path."""
    document: Optional[dict]
    """The figures over the events read, when the trace was read in part."""

def pair(
    paths: Sequence[str],
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    tokens: Optional[Sequence[Optional[int]]] = None,
    summaries: Optional[Sequence[Optional[str]]] = None,
    gpu_span: str = "auto",
    per_context: bool = False,
    progress: bool = False,
) -> Answer:
    """``torchtrace pair -f json`` on one or two traces (baseline first)."""

def kernels(
    paths: Sequence[str],
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    tokens: Optional[Sequence[Optional[int]]] = None,
    summaries: Optional[Sequence[Optional[str]]] = None,
    top: int = 10,
    per_context: bool = False,
    progress: bool = False,
) -> Answer:
    """``torchtrace kernels -f json`` on one or two traces (baseline first)."""

def hierarchy(
    paths: Sequence[str],
    chains: Optional[Sequence[str]] = None,
    categories: Optional[Sequence[str]] = None,
    any_thread: bool = False,
    examples: int = 5,
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    tokens: Optional[Sequence[Optional[int]]] = None,
    gpu_work: bool = True,
    progress: bool = False,
) -> Answer:
    """``torchtrace hierarchy -f json`` on any number of traces."""
