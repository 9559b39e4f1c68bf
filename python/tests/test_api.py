"""The Python package against the command line: the same documents on the
bundled sample traces, real figures, frames, and errors as exceptions.

Needs the CLI built (scripts/python-tests.sh builds it; TORCHTRACE_BIN names
it, else target/release/torchtrace) and the extension installed.
"""

import inspect
import json
import os
import pickle
import subprocess
import warnings
from pathlib import Path

import pytest

import torchtrace

ROOT = Path(__file__).resolve().parents[2]
AR = ROOT / "sample_traces/text_ar/dp0_pp0_tp0_dcp0_ep0_rank0.1795968150792732928.pt.trace.json.gz"
MTP = ROOT / "sample_traces/text_mtp/dp0_pp0_tp0_dcp0_ep0_rank0.1795968151611149496.pt.trace.json.gz"
HTA = ROOT / "tests/data/hta_step_based_trace.json.gz"
BIN = Path(os.environ.get("TORCHTRACE_BIN", ROOT / "target/release/torchtrace"))


def cli_json(*args: str, ok=(0,)) -> dict:
    """The document `torchtrace ARGS -f json -q` prints."""
    if not BIN.is_file():
        pytest.fail(f"{BIN} is missing: run `cargo build --release` (scripts/python-tests.sh does)")
    run = subprocess.run(
        [str(BIN), *args, "-f", "json", "-q"], capture_output=True, text=True, check=False
    )
    assert run.returncode in ok, run.stderr
    return json.loads(run.stdout)


def test_run_is_the_generic_entry_of_every_analysis():
    assert torchtrace.analyses() == ["pair", "hierarchy", "kernels", "iterations", "diff", "ranks", "ops", "idle", "critical", "roofline", "memory"]
    doc = torchtrace.run("kernels", [AR, MTP], top=3)
    assert doc == torchtrace.kernels([AR, MTP], top=3)
    assert doc == cli_json("kernels", str(AR), str(MTP), "--top", "3")
    assert [len(t["top_kernels"]) for t in doc["traces"]] == [3, 3]
    assert doc["traces"][0]["kernels"] == 3008
    # Options left out take the analysis's own defaults.
    assert torchtrace.run("pair", AR) == torchtrace.pair(AR)


def test_pair_matches_cli():
    doc = torchtrace.pair([AR, MTP])
    assert doc == cli_json("pair", str(AR), str(MTP))
    ar, mtp = doc["traces"]
    assert (ar["contexts"], mtp["contexts"]) == (64, 30)
    assert ar["context"] == "execute_context_0(0)_generation_1(1)"
    assert (ar["completion_tokens"], mtp["completion_tokens"]) == (68, 68)
    assert ar["gpu_span_sources"] == {"annotation": 64, "correlation": 0}
    assert round(doc["comparison"]["s_context"], 3) == 2.506
    assert round(doc["comparison"]["context_reduction_pct"], 1) == 53.1


def test_pair_options_match_cli():
    doc = torchtrace.pair(
        str(AR), tokens=100, gpu_span="correlation", per_context=True
    )
    want = cli_json(
        "pair", str(AR), "--tokens", "100", "--gpu-span", "correlation", "--per-context"
    )
    assert doc == want
    assert doc["comparison"] is None
    assert doc["traces"][0]["completion_tokens"] == 100
    assert len(doc["traces"][0]["per_context"]) == 64


def test_kernels_matches_cli():
    doc = torchtrace.kernels([AR, MTP], top=3)
    assert doc == cli_json("kernels", str(AR), str(MTP), "--top", "3")
    ar = doc["traces"][0]
    assert (ar["contexts"], ar["kernels"], ar["graph_launches"]) == (64, 3008, 64)
    assert len(ar["top_kernels"]) == 3


def test_iterations_matches_cli():
    doc = torchtrace.iterations([AR, MTP], per_iteration=True)
    assert doc == cli_json("iterations", str(AR), str(MTP), "--per-iteration")
    ar, mtp = doc["traces"]
    assert (ar["contexts"], ar["iterations_closed"], len(ar["rows"])) == (64, 63, 64)
    assert mtp["graphs"]["repeating"]["kernels_per_replay"] == 46
    assert torchtrace.run("iterations", AR) == torchtrace.iterations(AR)


def test_ops_matches_cli():
    doc = torchtrace.ops([AR, MTP], top=5, sort="calls")
    assert doc == cli_json("ops", str(AR), str(MTP), "--top", "5", "--sort", "calls")
    assert torchtrace.run("ops", AR) == torchtrace.ops(AR)
    ar, mtp = doc["traces"]
    s = ar["summary"]
    # O4: self and top-level attribution each partition the linked GPU work.
    assert sum(r["gpu_self_ns"] for r in ar["ops"]) == s["gpu_linked_ns"] == 12638958
    assert sum(r["gpu_top_ns"] for r in ar["ops"]) == s["gpu_linked_ns"]
    assert (s["launches"], s["graph_launches"], s["verdict"]) == (736, 64, "launch-bound")
    assert doc["comparison"]["candidate_verdict"] == "launch-bound"


def test_wrapper_defaults_are_the_native_modules():
    # An option a wrapper leaves at None is not sent: each analysis's
    # options' Default (defined once, in Rust) applies, as for the CLI.
    assert torchtrace.kernels(AR) == torchtrace.run("kernels", AR) == torchtrace.kernels(AR, top=10)
    assert torchtrace.ops(AR) == torchtrace.ops(AR, top=20, sort="gpu_self")
    assert torchtrace.hierarchy(AR) == torchtrace.hierarchy(AR, examples=5, gpu_work=True)
    assert "ranks" in torchtrace.__all__


def test_ops_frame_has_every_row():
    pd = pytest.importorskip("pandas")
    doc = torchtrace.ops(AR)
    df = torchtrace.ops_frame(doc)
    assert isinstance(df, pd.DataFrame)
    assert len(df) == len(doc["traces"][0]["ops"])
    assert list(df.columns[:3]) == ["path", "cat", "name"]
    assert df["gpu_self_ns"].sum() == doc["traces"][0]["summary"]["gpu_linked_ns"]


def test_diff_matches_cli():
    doc = torchtrace.diff(AR, MTP, top=3, scope="trace", families=["mine=^nvjet"])
    assert doc == cli_json("diff", str(AR), str(MTP), "--top", "3", "--scope", "trace",
                           "--family", "mine=^nvjet")
    doc = torchtrace.diff(AR, MTP)
    assert doc == torchtrace.run("diff", [AR, MTP])
    assert doc["scope"] == "steps" and doc["normalisation"] == "token"
    s = doc["summary"]
    assert (s["denominator"], s["total_units"]) == (68 * 68, -406297144)
    assert s["call_count_units"] + s["duration_units"] + s["added_units"] - s["removed_units"] == s["total_units"]


def test_ranks_matches_cli_and_finds_the_injected_stragglers():
    tp2 = ROOT / "tests/data/tp2/ar_plain"
    doc = torchtrace.ranks(tp2, per_step=True)
    assert doc == cli_json("ranks", str(tp2), "--per-step")
    (run,) = doc["runs"]
    truth = json.loads((ROOT / "tests/data/tp2/GROUND_TRUTH.json").read_text())
    injected = [(i["step"], i["rank"]) for i in truth["runs"]["ar_plain"]["injected"]]
    assert [(s["step"], s["rank"]) for s in run["stragglers"]] == injected
    assert [r["wait_ns"] for r in run["ranks"]] == [55912589, 2453328]
    fixed = torchtrace.ranks(tp2, threshold_us=3000)
    assert [s["step"] for s in fixed["runs"][0]["stragglers"]] == [119 + k for k in range(1, 6)] + [203]
    # Every option is an explicit keyword: an unknown one is Python's TypeError
    # (run(), open to any analysis's options, says ValueError).
    with pytest.raises(TypeError):
        torchtrace.ranks(tp2, no_such_option=1)
    with pytest.raises(ValueError):
        torchtrace.run("ranks", tp2, no_such_option=1)


def test_hierarchy_matches_cli():
    doc = torchtrace.hierarchy([AR, MTP])
    assert doc == cli_json("hierarchy", str(AR), str(MTP))
    mtp_links = doc["traces"][1]["chains"][0]["links"]
    assert [(l["children"], l["contained"]) for l in mtp_links] == [(34, 34), (34, 34)]
    chain = "sample_tokens>propose_draft_token_ids"
    fast = torchtrace.hierarchy(MTP, chains=chain, gpu_work=False)
    assert fast == cli_json("hierarchy", str(MTP), "--chain", chain, "--no-gpu-work")


def test_frames_have_one_row_per_context():
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    df = torchtrace.pair_frame([AR, MTP])
    assert isinstance(df, pd.DataFrame)
    assert len(df) == 64 + 30
    assert (df.groupby("path").size().to_dict()) == {str(AR): 64, str(MTP): 30}
    assert {"event_index", "start_ns", "cpu_ns", "gpu_ns"} <= set(df.columns)
    table = torchtrace.to_frame(torchtrace.kernels(AR, per_context=True), kind="arrow")
    assert isinstance(table, pa.Table)
    assert table.num_rows == 64


def test_problems_are_warnings():
    with pytest.warns(torchtrace.TorchtraceWarning, match="no user_annotation matches"):
        doc = torchtrace.pair(AR, context="no such step")
    assert doc == cli_json("pair", str(AR), "--context", "no such step", ok=(1,))


def test_no_warning_when_all_is_well():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torchtrace.pair(HTA, context_regex=".")


def test_truncated_trace_raises_trace_error(tmp_path):
    data = AR.read_bytes()
    cut = tmp_path / "cut.pt.trace.json.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(torchtrace.TraceError) as info:
        torchtrace.pair(cut)
    e = info.value
    assert e.path == str(cut)
    assert isinstance(e.offset, int) and e.offset > 0
    assert e.events_read > 0
    assert str(cut) in str(e) and e.message in str(e)
    # The figures over the events read come with it, as the CLI prints them.
    assert e.document["traces"][0]["complete"] is False


def test_trace_error_is_a_declared_class_that_pickles(tmp_path):
    missing = tmp_path / "nope.pt.trace.json.gz"
    with pytest.raises(torchtrace.TraceError) as info:
        torchtrace.kernels(missing)
    e = info.value
    assert type(e) is torchtrace.errors.TraceError and isinstance(e, Exception)
    back = pickle.loads(pickle.dumps(e))
    assert (back.path, back.offset, back.events_read, back.message, back.document, str(back)) == (
        e.path, e.offset, e.events_read, e.message, e.document, str(e))


def test_wrappers_take_explicit_keywords():
    # Only run() takes open options (the analysis is named at run time).
    for name in torchtrace.__all__:
        f = getattr(torchtrace, name)
        if not inspect.isfunction(f) or f is torchtrace.run:
            continue
        kinds = [p.kind for p in inspect.signature(f).parameters.values()]
        assert inspect.Parameter.VAR_KEYWORD not in kinds, name
        assert all(p.annotation is not inspect.Parameter.empty
                   for p in inspect.signature(f).parameters.values()), name


def test_unreadable_json_has_offset(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"traceEvents": [{"name": "a", "ph": "i", "ts": 1}, @@]}')
    with pytest.raises(torchtrace.TraceError) as info:
        torchtrace.kernels(bad)
    assert info.value.path == str(bad)
    assert info.value.offset == 52
    assert info.value.events_read == 1


def test_missing_file_names_the_path(tmp_path):
    missing = tmp_path / "nope.pt.trace.json.gz"
    with pytest.raises(torchtrace.TraceError, match="nope.pt.trace.json.gz") as info:
        torchtrace.hierarchy(missing)
    assert info.value.path == str(missing)
    assert info.value.offset is None
    assert info.value.events_read == 0


@pytest.mark.parametrize(
    "call",
    [
        lambda: torchtrace.run("diff", [AR, MTP, AR]),
        lambda: torchtrace.pair([]),
        lambda: torchtrace.pair(AR, context="a", context_regex="b"),
        lambda: torchtrace.pair(AR, context_regex="("),
        lambda: torchtrace.pair(AR, gpu_span="sometimes"),
        lambda: torchtrace.pair(AR, tokens=[1, 2]),
        lambda: torchtrace.kernels(AR, top=-1),
        lambda: torchtrace.hierarchy(AR, chains="a>>b"),
        lambda: torchtrace.run("no-such-analysis", AR),
        lambda: torchtrace.run("kernels", AR, no_such_option=1),
        lambda: torchtrace.run("pair", AR, gpu_span=3),
    ],
)
def test_bad_arguments_are_value_errors(call):
    with pytest.raises(ValueError):
        call()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_ctrl_c_interrupts_a_blocked_read(tmp_path):
    import _thread
    import threading
    import time

    import signal

    # A named pipe nobody writes to: the read blocks until we let it go.
    fifo = tmp_path / "never.json"
    os.mkfifo(fifo)
    # A process started in the background of a non-interactive shell
    # ignores SIGINT, and then interrupt_main does nothing (the read would
    # wait forever): Python's own handler for the test's length.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, _thread.interrupt_main)
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            torchtrace.pair(fifo)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, before)
        # Release the abandoned reading thread: it sees an empty file.
        with open(fifo, "wb"):
            pass
    assert time.monotonic() - start < 5


def test_idle_matches_cli_and_gives_tables():
    doc = torchtrace.idle([AR, MTP])
    assert doc == cli_json("idle", str(AR), str(MTP))
    assert torchtrace.run("idle", AR) == torchtrace.idle(AR)
    ar = doc["traces"][0]
    assert ar["units"] == "ns"
    assert ar["steps"]["grammar"] == "vllm"
    assert len(ar["steps"]["rows"]) == ar["steps"]["count"]
    s = ar["streams"][0]
    assert s["host_wait_ns"] + s["kernel_wait_ns"] + s["other_ns"] == s["idle_ns"]
    assert [r["figure"] for r in doc["comparison"]["rows"]] == ["busy", "idle", "host_wait", "kernel_wait", "other"]
    rows = torchtrace.idle_frames(doc, kind="rows")
    assert len(rows["steps"]) == sum(t["steps"]["count"] for t in doc["traces"])
    assert rows["streams"][0]["queue_in_flight_max"] == s["queue"]["in_flight"]["max"]
    try:
        import pandas  # noqa: F401
    except ImportError:
        return
    frames = torchtrace.idle_frames(doc)
    assert list(frames) == ["devices", "streams", "steps"]
    assert len(frames["steps"]) == len(rows["steps"])
    assert frames["devices"]["busy_ns"].iloc[0] == ar["devices"][0]["busy_ns"]


def test_every_analysis_of_the_registry_has_a_wrapper():
    """A new registry entry without a typed wrapper fails here; the
    wrappers of the analyses that attribute graph replays take
    ``capture=``."""
    for name in torchtrace.analyses():
        fn = getattr(torchtrace, name, None)
        assert callable(fn), f"torchtrace.{name} is missing"
        assert name in torchtrace.__all__, name
    for name in ["kernels", "iterations", "diff", "ops", "roofline", "export"]:
        assert "capture" in inspect.signature(getattr(torchtrace, name)).parameters, name


MEMORY = ROOT / "tests/data/tracelens_h100_bert_small.json.gz"


def test_memory_matches_cli_and_gives_tables():
    doc = torchtrace.memory(MEMORY)
    assert doc == cli_json("memory", str(MEMORY))
    d = {x["device"]: x for x in doc["traces"][0]["devices"]}
    # The allocator's own figures of the TraceLens H100 trace (VIEWS.md M2).
    assert d["cuda:0"]["peak_allocated_bytes"] == 101305344
    assert d["cuda:0"]["peak_reserved_bytes"] == 121634816
    assert d["cuda:0"]["at_peak"][0]["name"] == "aten::addmm"
    tables = torchtrace.memory_frames(doc, kind="rows")
    assert [r["device"] for r in tables["devices"]] == ["cpu", "cuda:0"]
    assert sum(r["bytes"] for r in tables["at_peak"] if r["by"] == "op" and r["device"] == "cuda:0") \
        == d["cuda:0"]["held_at_peak_bytes"]
    assert "at_peak" not in tables["devices"][0]


def test_memory_without_memory_events_warns():
    with pytest.warns(torchtrace.TorchtraceWarning, match="no \\[memory\\] events"):
        doc = torchtrace.memory(AR)
    assert doc["traces"][0]["devices"] == []


def test_critical_matches_cli_and_adds_up():
    doc = torchtrace.critical([AR, MTP])
    assert doc == cli_json("critical", str(AR), str(MTP))
    ar = doc["traces"][0]
    # P2: every closed iteration's parts add up to its window.
    for r in ar["rows"]:
        if r["window_ns"] is not None:
            assert r["host_ns"] + r["launch_ns"] + r["gpu_ns"] + r["sync_ns"] == r["window_ns"]
    # The AR sample's decode iterations are host-bound (VIEWS.md P3).
    assert ar["decode"]["host_ns"] * 100 > ar["decode"]["window_ns"] * 95
    assert [p["part"] for p in doc["comparison"]["parts"]] == ["window", "host", "launch", "gpu", "sync"]
