"""What torchtrace raises and warns: :class:`TraceError` (a trace that
cannot be read to its end) and :class:`TorchtraceWarning` (what the command
line reports with exit status 1).

The native module (``torchtrace._native``, python/src/lib.rs) raises
:class:`TraceError` with the fields of the Rust error it stands for
(``torchtrace::trace::TraceError``: the path and the read error's byte
offset, events read and message).
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

__all__ = ["TraceError", "TorchtraceWarning"]


class TraceError(Exception):
    """A trace could not be read (to its end): ``path``, ``offset`` (byte
    offset in the decompressed JSON text, or None), ``events_read`` and
    ``message`` say what and where; ``document`` holds the figures over the
    events read, when the trace was read in part (else None).

    ``str(e)`` is the command line's message: the path, then ``message``.
    """

    path: str
    """The trace, as given."""
    offset: Optional[int]
    """Byte offset in the decompressed JSON text, or None (cannot open, not JSON)."""
    events_read: int
    """Events read intact before the problem."""
    message: str
    """What is wrong, without the path."""
    document: Optional[Dict[str, Any]]
    """The figures over the events read, when the trace was read in part."""

    def __init__(
        self,
        text: str,
        *,
        path: str,
        offset: Optional[int],
        events_read: int,
        message: str,
        document: Optional[Dict[str, Any]] = None,
    ) -> None:
        super().__init__(text)
        self.path = path
        self.offset = offset
        self.events_read = events_read
        self.message = message
        self.document = document

    def __reduce__(self) -> Tuple[Any, ...]:
        # Keyword-only fields: pickled (to and from workers) whole.
        fields = {
            "path": self.path,
            "offset": self.offset,
            "events_read": self.events_read,
            "message": self.message,
            "document": self.document,
        }
        return (_rebuild, (str(self), fields))


def _rebuild(text: str, fields: Dict[str, Any]) -> TraceError:
    """A pickled :class:`TraceError` back."""
    return TraceError(text, **fields)


class TorchtraceWarning(UserWarning):
    """A problem the command line reports with exit status 1 (a selected
    context missing, no context measured, a containment link broken)."""
