"""Type stubs of the compiled module ``torchtrace._native`` (python/src/lib.rs).

Each function returns ``(json_text, problems, notes)``: the document the
command line prints with ``--format json``, the messages that make it exit 1,
and its notes. Use the wrappers in :mod:`torchtrace` instead.

A trace that cannot be read raises :class:`torchtrace.errors.TraceError`
(declared in Python, made here with the Rust error's fields).
"""

from typing import List, Optional, Sequence, Tuple

__version__: str

Answer = Tuple[str, List[str], List[str]]

def run(
    name: str,
    paths: Sequence[str],
    options: str = "{}",
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    tokens: Optional[Sequence[Optional[int]]] = None,
    summaries: Optional[Sequence[Optional[str]]] = None,
    per_context: bool = False,
    progress: bool = False,
    capture: Sequence[str] = ...,
) -> Answer:
    """Analysis ``name`` as ``torchtrace <name> -f json``; ``options``: its own
    options as a JSON object; ``capture``: the graphs' capture traces."""

def export(
    paths: Sequence[str],
    out: str,
    tables: Sequence[str],
    compression: str = "zstd",
    progress: bool = False,
    capture: Sequence[str] = ...,
) -> Answer:
    """``torchtrace export PATHS -o OUT --tables ... -f json``: the Parquet
    tables written into ``out`` (``capture``: capture traces, else
    ``capture_traces/`` beside each trace); the answer's document lists the
    files."""

def analyses() -> List[Tuple[str, bool]]:
    """``(name, is_subcommand)`` of every analysis, in registry order."""

def plan(
    paths: Sequence[str],
    context: Optional[str] = None,
    context_regex: Optional[str] = None,
    chains: Optional[Sequence[str]] = None,
    manifest: Optional[str] = None,
    exclude: Optional[str] = None,
    capture: Sequence[str] = ...,
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
    capture: Sequence[str] = ...,
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
