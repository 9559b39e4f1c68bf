"""`roofline` as tables: every op and shape of a ``run("roofline", ...)``
document as one row per (trace, op, shape), the way :func:`ops_frame` does
for ``ops`` (kept in its own module: issue 58)."""

from typing import Any, Dict, Union


def roofline_frame(doc_or_paths: Union[Dict[str, Any], Any], kind: str = "pandas") -> Any:
    """Every row of a ``roofline`` document (or of the traces given): one row
    per (trace, op name, Input Dims, Input type) with the trace's ``path``
    first, its FLOPs and bytes per call (exact ints), GPU ns, achieved
    TFLOP/s and TB/s, % of peak and bound, as :func:`to_frame` makes it (a
    pandas ``DataFrame`` or a ``pyarrow.Table``). ``Input Dims`` and the other
    recorded arguments stay as the trace wrote them (lists)."""
    from . import run, to_frame

    doc = doc_or_paths if isinstance(doc_or_paths, dict) else run("roofline", doc_or_paths)
    rows = [dict(path=t["path"], **r) for t in doc["traces"] for r in t["rows"]]
    return to_frame(rows, kind=kind)
