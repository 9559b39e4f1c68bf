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


def test_capture_given_to_every_wrapper(tmp_path):
    """``capture=``: the trace (and its summary) in a folder of its own, its capture traces named
    explicitly, gives what the trace gets from ``capture_traces/`` beside
    it (30 of 30 replays matched, 4 766 446 ns of graph GPU time); without
    them, none is matched."""
    for f in AR.parent.glob("dp0_*"):  # the trace and its run summary
        (tmp_path / f.name).write_bytes(f.read_bytes())
    alone = tmp_path / AR.name
    caps = AR.parent / "capture_traces"
    beside = torchtrace.ops(AR)["traces"][0]["graphs"]
    given = torchtrace.ops(alone, capture=caps)["traces"][0]["graphs"]
    without = torchtrace.ops(alone)["traces"][0]["graphs"]
    for key in ["replays", "replays_matched", "gpu_graph_ns", "by_module"]:
        assert given[key] == beside[key], key
    assert (given["replays_matched"], given["gpu_graph_ns"]) == (30, 4_766_446)
    assert without["replays_matched"] == 0
    roof = torchtrace.roofline(alone, capture=[caps])["traces"][0]["summary"]
    assert roof["gpu_graph_ns"] == 4_766_446
    assert torchtrace.roofline(alone)["traces"][0]["summary"]["gpu_graph_ns"] != 4_766_446
    k = torchtrace.kernels(alone, capture=caps)["traces"][0]["inside_graphs"]
    assert k["summary"]["replays_matched"] == 30
    assert k["split"] == torchtrace.kernels(AR)["traces"][0]["inside_graphs"]["split"]
    it = torchtrace.iterations(alone, capture=caps)["traces"][0]["inside_graphs"]
    assert it == torchtrace.iterations(AR)["traces"][0]["inside_graphs"] | {"summary": it["summary"]}
    # The one generic entry takes it too, an input of the read as the traces are.
    assert torchtrace.run("ops", alone, capture=caps) == torchtrace.ops(alone, capture=caps)


def test_capture_given_to_a_campaign_of_one_run(tmp_path):
    """``capture=`` in the campaign functions: one run's folder read with its
    capture traces given (30 of 30 replays matched, 4 766 446 ns), as the CLI's
    ``batch --capture``; a campaign of several runs is refused."""
    for f in AR.parent.glob("dp0_*"):
        (tmp_path / f.name).write_bytes(f.read_bytes())
    caps = AR.parent / "capture_traces"
    recs = torchtrace.analyze(tmp_path, capture=caps)
    (worker,) = [f for f in recs["files"] if f["kind"] == "worker"]
    graphs = worker["results"]["ops"]["graphs"]
    assert (graphs["replays_matched"], graphs["gpu_graph_ns"]) == (30, 4_766_446)
    with pytest.raises(ValueError, match="takes one run"):
        torchtrace.analyze(ROOT / "sample_traces", capture=caps)
