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

# ---- Campaigns (src/batch/records.rs) -------------------------------------

def plan(
    paths: Sequence[str],
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    chains: Optional[Sequence[str]] = None,
    manifest: Optional[str] = None,
    exclude: Optional[str] = None,
) -> Tuple[str, List[str]]:
    """Plans a campaign: ``(header_line, tasks)``, the records header and one
    JSON task per unit of work (paths in tasks are absolute)."""

def run_task(task: str) -> List[str]:
    """Reads one task's unit: the ``{"file": ...}`` record lines of its files."""

def fail_task(task: str, why: str) -> List[str]:
    """The failed record lines of a task that could not run, saying ``why``."""

def analyze(
    paths: Sequence[str],
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    chains: Optional[Sequence[str]] = None,
    manifest: Optional[str] = None,
    exclude: Optional[str] = None,
    progress: bool = False,
) -> str:
    """A whole campaign read in this process: its records file (JSON lines)."""

def merge(
    texts: Sequence[str],
    paths: Sequence[str],
    out_dir: str,
    figures: Optional[str] = "png",
) -> Tuple[str, str, List[Tuple[str, str]], List[str]]:
    """Merges records (file texts and file paths) into ``out_dir``:
    ``(results_json, stdout_markdown, failed (path, error) pairs, notes)``."""
