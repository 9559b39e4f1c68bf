"""Campaigns from Python: analyze / merge / batch and torchtrace.distributed
write what `torchtrace batch` writes, byte for byte; failures are rows.

Each test works in a copy of sample_traces/ (``campaign/``) under a temporary
directory that is also the working directory, so that the CLI and Python
see the same relative PATHs and labels.
"""

import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

import torchtrace
from torchtrace import distributed

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("TORCHTRACE_BIN", ROOT / "target/release/torchtrace"))
AR = "campaign/text_ar/dp0_pp0_tp0_dcp0_ep0_rank0.1795968150792732928.pt.trace.json.gz"
MTP = "campaign/text_mtp/dp0_pp0_tp0_dcp0_ep0_rank0.1795968151611149496.pt.trace.json.gz"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN), "-q", *args], capture_output=True, check=False)


def tree(d: Path) -> dict:
    return {
        str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()
    }


def inputs(d: Path) -> int:
    """The rows batch gives a directory: every file, a `capture_traces/`
    folder counted once (read with the traces beside it, issue 57)."""
    files = [p for p in d.rglob("*") if p.is_file() and "capture_traces" not in p.parts]
    folders = [p for p in d.rglob("capture_traces") if p.is_dir()]
    return len(files) + len(folders)


def assert_same_tree(a: Path, b: Path) -> None:
    ta, tb = tree(a), tree(b)
    assert sorted(ta) == sorted(tb)
    for name in ta:
        assert ta[name] == tb[name], f"{name} differs"


@pytest.fixture()
def work(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "sample_traces", tmp_path / "campaign")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cli_batch(*paths: str, out: str, figures=True) -> subprocess.CompletedProcess:
    args = ["batch", *paths, "-o", out] + ([] if figures else ["--no-figures"])
    return cli(*args)


def test_analyze_gives_the_records_batch_writes(work):
    assert cli("batch", "campaign", "--records", "cli.jsonl").returncode == 0
    lines = [json.loads(l) for l in Path("cli.jsonl").read_text().splitlines()]
    rec = torchtrace.analyze("campaign")
    assert rec["complete"]
    assert rec["header"] == lines[0]["header"]
    assert rec["files"] == [l["file"] for l in lines[1:-1]]
    assert rec["header"]["schema"] == 2
    ok = [f for f in rec["files"] if f["status"] == "ok" and f["results"].get("pairs")]
    assert len(ok) == 8, "eight worker traces"
    text = next(f for f in ok if f["path"] == AR.removeprefix("campaign/"))
    assert text["results"]["pairs"]["contexts"] == 64
    assert text["results"]["kernels"]["kernels"] == 3008


def test_batch_equals_cli(work):
    assert cli_batch("campaign", out="cli").returncode == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing failed: no warning
        doc = torchtrace.batch("campaign", "py")
    assert_same_tree(work / "cli", work / "py")
    assert doc == json.loads((work / "cli/results.json").read_text())
    assert doc["failed"] == 0
    assert {c["workload"] for c in doc["comparisons"]} == {"reasoning", "text", "text_graphs", "tool_calling"}


def test_merge_of_shards_and_of_record_sets(work):
    assert cli_batch("campaign", out="cli", figures=False).returncode == 0
    for k in (1, 2, 3):
        assert cli("batch", "campaign", "--shard", f"{k}/3", "--records", f"s{k}.jsonl").returncode == 0
    torchtrace.merge([f"s{k}.jsonl" for k in (1, 2, 3)], "merged", figures=None)
    assert_same_tree(work / "cli", work / "merged")
    # One record set per trace, merged: as if both had been given at once.
    assert cli_batch(AR, MTP, out="cli2", figures=False).returncode == 0
    doc = torchtrace.merge([torchtrace.analyze(AR), torchtrace.analyze(MTP)], "py2", figures=None)
    assert_same_tree(work / "cli2", work / "py2")
    assert round(doc["comparisons"][0]["s_context"], 3) == 2.506


def test_merge_refuses_bad_records(work):
    assert cli("batch", "campaign", "--shard", "1/2", "--records", "s1.jsonl").returncode == 0
    with pytest.raises(ValueError, match="shard 1/2 given twice"):
        torchtrace.merge(["s1.jsonl", "s1.jsonl"], "x")
    Path("v9.jsonl").write_text(Path("s1.jsonl").read_text().replace('"schema":2,', '"schema":9,', 1))
    with pytest.raises(ValueError, match="schema 9"):
        torchtrace.merge(["v9.jsonl"], "x")
    with pytest.raises(OSError, match="nope.jsonl"):
        torchtrace.merge(["nope.jsonl"], "x")
    # Shard 2 missing: its traces are failed rows, warned about.
    with pytest.warns(torchtrace.TorchtraceWarning, match="were not given"):
        doc = torchtrace.merge(["s1.jsonl"], "part", figures=None)
    assert doc["failed"] >= 1
    assert len(doc["traces"]) == inputs(work / "campaign")


def test_distributed_dask_two_workers_equals_cli(work):
    assert cli_batch("campaign", out="cli").returncode == 0
    doc = distributed.batch(["campaign"], "dask", engine="dask", workers=2)
    assert_same_tree(work / "cli", work / "dask")
    assert doc["files"] == inputs(work / "campaign")


def test_distributed_globs_and_an_existing_client(work):
    from dask.distributed import Client, LocalCluster

    paths = distributed.expand(["campaign/text_[am]*/dp0*.pt.trace.json.gz", "campaign/none_*.gz"])
    assert paths == [AR, MTP, "campaign/none_*.gz"], "sorted; no match kept"
    res = cli_batch(*paths, out="cli", figures=False)
    assert res.returncode == 1, "the pattern without a match is a failed input"
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        with Client(cluster) as client, pytest.warns(torchtrace.TorchtraceWarning):
            doc = distributed.batch(
                ["campaign/text_[am]*/dp0*.pt.trace.json.gz", "campaign/none_*.gz"],
                "dask",
                client=client,
                figures=None,
            )
    assert_same_tree(work / "cli", work / "dask")
    assert doc["failed"] == 1


def test_a_corrupt_trace_is_one_failed_record(work):
    data = Path(AR).read_bytes()
    Path("campaign/broken").mkdir()
    Path("campaign/broken/x.pt.trace.json.gz").write_bytes(data[: len(data) // 3])
    assert cli_batch("campaign", out="cli", figures=False).returncode == 1
    with pytest.warns(torchtrace.TorchtraceWarning, match="broken/x.pt.trace.json.gz"):
        doc = distributed.batch("campaign", "dask", engine="dask", workers=2, figures=None)
    assert_same_tree(work / "cli", work / "dask")
    failed = [t for t in doc["traces"] if t["status"] == "error"]
    assert [t["path"] for t in failed] == ["broken/x.pt.trace.json.gz"]
    assert doc["failed"] == 1


def _die_on_text_mtp(task: str):
    """A task function whose worker process dies on one trace."""
    if "text_mtp/dp0" in task:
        os._exit(3)
    return distributed.run_task(task)


def test_a_dead_worker_is_a_failed_row_not_a_missing_one(work):
    import cloudpickle
    import dask
    import sys
    from dask.distributed import Client, LocalCluster

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    _, tasks = torchtrace._native.plan(["campaign"])
    # Dask retries a task whose worker died and gives up on one that kills
    # every worker it runs on (allowed-failures, 3 by default; 1 here keeps
    # the test short). A task that was on the same worker may be counted
    # with it: it fails too, and is a failed row like the culprit.
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
            with Client(cluster) as client:
                got = distributed._run_all("dask", client, tasks, fn=_die_on_text_mtp)
    dead = [(t, g) for t, g in zip(tasks, got) if isinstance(g, BaseException)]
    assert any("text_mtp/dp0" in t for t, _ in dead), "the culprit failed"
    lines = []
    for task, g in zip(tasks, got):
        if isinstance(g, BaseException):
            failed = torchtrace._native.fail_task(task, distributed._describe(g))
            rows = [json.loads(l)["file"] for l in failed]
            assert [r["status"] for r in rows] in (["error"], ["skipped"]), rows
            if rows[0]["status"] == "error":
                assert rows[0]["error"].startswith("task failed on the KilledWorker"), rows
            lines.extend(failed)
        else:
            lines.extend(g)
    paths = sorted(json.loads(l)["file"]["path"] for l in lines)
    # Every file is a row; a `capture_traces/` folder is one (issue 57).
    want = {str(p.relative_to("campaign")) for p in Path("campaign").rglob("*")
            if p.is_file() and "capture_traces" not in p.parts}
    want |= {str(p.relative_to("campaign")) for p in Path("campaign").rglob("capture_traces") if p.is_dir()}
    assert paths == sorted(want)
    assert MTP.removeprefix("campaign/") in [
        json.loads(l)["file"]["path"] for t, g in dead for l in torchtrace._native.fail_task(t, "x")
    ]


def test_distributed_ray_local_equals_cli(work):
    ray = pytest.importorskip("ray")
    assert cli_batch("campaign", out="cli", figures=False).returncode == 0
    # The driver's working directory is the workers' (local mode): the
    # tasks carry absolute paths anyway.
    doc = distributed.batch("campaign", "ray", engine="ray", workers=2, figures=None)
    assert not ray.is_initialized(), "the local instance is shut down again"
    assert_same_tree(work / "cli", work / "ray")
    assert doc["failed"] == 0


def test_analyze_a_corrupt_trace_is_a_record_with_where_and_what_was_read(work):
    data = Path(AR).read_bytes()
    Path("x.pt.trace.json.gz").write_bytes(data[: len(data) // 3])
    rec = torchtrace.analyze("x.pt.trace.json.gz")
    (f,) = rec["files"]
    assert f["status"] == "error"
    assert "after byte " in f["error"] and "events read intact" in f["error"]
    # The figures over the events read intact are kept, marked incomplete.
    assert f["results"]["pairs"]["complete"] is False
    assert f["results"]["pairs"]["contexts"] > 0
    with pytest.warns(torchtrace.TorchtraceWarning, match="x.pt.trace.json.gz"):
        doc = torchtrace.merge([rec], "out", figures=None)
    assert doc["failed"] == 1
