"""`roofline` from Python (issue 58): the generic `run` gives the CLI's
document, `roofline_frame` its rows as a DataFrame; real figures of the
shapes-recorded CUDA-graph AR trace (sample_traces/text_graphs_ar), as
src/analyses/roofline/tests.rs checks them."""

from pathlib import Path

import pytest

import torchtrace

ROOT = Path(__file__).resolve().parents[2]
AR = next((ROOT / "sample_traces/text_graphs_ar").glob("*.pt.trace.json.gz"))


def test_run_roofline_and_its_frame():
    doc = torchtrace.run("roofline", AR)
    (t,) = doc["traces"]
    assert t["summary"]["gpu_graph_ns"] == 4_766_446
    pd = pytest.importorskip("pandas")
    df = torchtrace.roofline_frame(doc)
    assert isinstance(df, pd.DataFrame)
    assert len(df) == len(t["rows"])
    assert list(df.columns[:3]) == ["path", "name", "input_dims"]
    mm = df[(df["name"] == "aten::mm") & (df["input_dims"].map(lambda d: d == [[1, 4096], [4096, 1024]]))]
    assert (mm["calls"].item(), mm["gpu_ns"].item(), mm["flops"].item()) == (120, 881_775, 2 * 4096 * 1024)
    assert df["gpu_ns"].sum() == t["summary"]["modelled_gpu_ns"]
