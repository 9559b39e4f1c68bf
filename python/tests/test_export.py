"""torchtrace.export: the Parquet tables as pyarrow Tables, their figures equal
to the analyses' (ops' summary, the sample AR trace's 736 launches), and the
README's question answered with DuckDB SQL and polars on the exported files
(each part skipped where its package is not installed)."""

from pathlib import Path

import pytest

import torchtrace

pa = pytest.importorskip("pyarrow")
import pyarrow.compute as pc  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
AR = ROOT / "sample_traces/text_ar/dp0_pp0_tp0_dcp0_ep0_rank0.1795968150792732928.pt.trace.json.gz"
MTP = ROOT / "sample_traces/text_mtp/dp0_pp0_tp0_dcp0_ep0_rank0.1795968151611149496.pt.trace.json.gz"


def test_tables_equal_the_analyses():
    t = torchtrace.export(AR)
    assert sorted(t) == sorted(torchtrace.EXPORT_TABLES)
    s = torchtrace.ops(AR)["traces"][0]["summary"]
    acts, launches = t["activities"], t["launches"]
    assert acts.num_rows == s["activities"]
    assert pc.sum(acts["dur_ns"]).as_py() == s["gpu_ns"]
    linked = acts.filter(pc.is_valid(acts["launch_id"]))
    assert pc.sum(linked["dur_ns"]).as_py() == s["gpu_linked_ns"] == 12638958
    assert launches.filter(pc.greater(launches["activities"], 0)).num_rows == s["launches"] == 736
    assert t["ops"].num_rows == s["host_ops"]
    assert acts.schema.field("start_ns").type == pa.int64()
    assert pa.types.is_dictionary(acts.schema.field("name").type)


def test_several_traces_and_a_kept_directory(tmp_path):
    t = torchtrace.export([AR, MTP], tables="steps", out=tmp_path)
    assert list(t) == ["steps"]
    assert (tmp_path / "steps.parquet").is_file()
    assert not (tmp_path / "activities.parquet").exists()
    traces = t["steps"]["trace"].to_pylist()
    assert set(traces) == {str(AR), str(MTP)}
    with pytest.raises(ValueError):
        torchtrace.export(AR, tables="kernels")


# The README's question: the top kernels of each step, AR against MTP.
SQL = """
SELECT trace, step, name, sum(dur_ns) AS gpu_ns
FROM 'OUT/activities.parquet'
WHERE kind = 'kernel' AND step IS NOT NULL
GROUP BY ALL ORDER BY trace, step, gpu_ns DESC
"""


def test_duckdb_and_polars_answer_the_readme_question(tmp_path):
    torchtrace.export([AR, MTP], tables=["activities"], out=tmp_path)
    answers = []
    try:
        import duckdb
    except ImportError:
        duckdb = None
    if duckdb is not None:
        rows = duckdb.sql(SQL.replace("OUT", str(tmp_path))).fetchall()
        answers.append([(str(a), int(b), str(c), int(d)) for a, b, c, d in rows])
    try:
        import polars as pl
    except ImportError:
        pl = None
    if pl is not None:
        df = (
            pl.scan_parquet(tmp_path / "activities.parquet")
            .filter((pl.col("kind") == "kernel") & pl.col("step").is_not_null())
            .group_by("trace", "step", "name")
            .agg(pl.col("dur_ns").sum().alias("gpu_ns"))
            .sort(["trace", "step", "gpu_ns"], descending=[False, False, True])
            .collect()
        )
        answers.append([(str(a), int(b), str(c), int(d)) for a, b, c, d in df.iter_rows()])
    if not answers:
        pytest.skip("neither duckdb nor polars is installed")
    # The same answer from pyarrow alone, and from both engines.
    t = torchtrace.export([AR, MTP], tables="activities")["activities"]
    kernel = pc.equal(t["kind"].cast(pa.string()), "kernel")
    t = t.filter(pc.and_(kernel, pc.is_valid(t["step"])))
    total = sum(a[3] for a in answers[0])
    assert total == pc.sum(t["dur_ns"]).as_py()
    for a in answers[1:]:
        assert sorted(a) == sorted(answers[0])
