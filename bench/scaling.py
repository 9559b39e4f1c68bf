#!/usr/bin/env python3
"""What scales how: `torchtrace batch` (CLI) against the Python package in
process and torchtrace.distributed on local Dask and Ray clusters of 1 and 2
workers, on one directory of distinct worker traces.

    scripts/python-tests.sh            # once: the venv with the package, dask, ray
    target/pyenv/bin/python bench/scaling.py [--copies 4] [--runs 3]

Data: each sample worker trace scaled to K = 1..COPIES copies with
../shared/tools/scale_trace.py (distinct content, so none is a duplicate),
with its run summary: 6 × COPIES traces in bench/data/distributed/. Each
figure is the median of RUNS runs, interleaved; cluster start-up is timed
apart (the cluster exists before the batch is timed). Output: a Markdown
table on stdout; the ratios are against the CLI in the same run.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torchtrace
from torchtrace import distributed

ROOT = Path(__file__).resolve().parents[1]
SCALE = ROOT.parent / "shared/tools/scale_trace.py"
BIN = ROOT / "target/release/torchtrace"


def make_data(copies: int) -> Path:
    out = ROOT / f"bench/data/distributed-{copies}"
    if out.is_dir():
        return out
    if not SCALE.is_file():
        sys.exit(f"bench: {SCALE} not found (../shared is needed to make the data)")
    tmp = Path(tempfile.mkdtemp(dir=ROOT / "bench"))
    for trace in sorted((ROOT / "sample_traces").glob("*/dp0*.pt.trace.json.gz")):
        summary = trace.with_name(trace.name.replace(".pt.trace.json.gz", ".summary.json"))
        for k in range(1, copies + 1):
            d = tmp / f"{trace.parent.name}_{k}"
            d.mkdir(parents=True)
            subprocess.run(
                [sys.executable, str(SCALE), str(trace), str(d / trace.name), "--copies", str(k)],
                check=True,
            )
            shutil.copy(summary, d / summary.name)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp.rename(out)
    return out


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    data = make_data(a.copies)
    traces = len(list(data.rglob("*.pt.trace.json.gz")))
    size = sum(p.stat().st_size for p in data.rglob("*.pt.trace.json.gz"))
    out = Path(tempfile.mkdtemp())

    from dask.distributed import Client, LocalCluster
    import ray

    clusters = {}
    startup = {}
    for n in (1, 2):
        t = time.perf_counter()
        c = LocalCluster(n_workers=n, threads_per_worker=1, dashboard_address=None)
        clusters[n] = (c, Client(c))
        startup[f"dask {n}"] = time.perf_counter() - t

    def cli(jobs: int) -> None:
        subprocess.run(
            [str(BIN), "-q", "-j", str(jobs), "batch", str(data), "-o", str(out / "cli")]
            + ["--no-figures"],
            check=True,
            capture_output=True,
        )

    cases = {
        "CLI `torchtrace batch -j 1`": lambda: cli(1),
        "CLI `torchtrace batch` (-j 2)": lambda: cli(2),
        "Python `torchtrace.batch` (in process)": lambda: torchtrace.batch(
            str(data), out / "py", figures=None
        ),
        "`distributed.batch`, Dask, 1 worker": lambda: distributed.batch(
            str(data), out / "d1", client=clusters[1][1], figures=None
        ),
        "`distributed.batch`, Dask, 2 workers": lambda: distributed.batch(
            str(data), out / "d2", client=clusters[2][1], figures=None
        ),
    }
    times = {k: [] for k in cases}
    for _ in range(a.runs):
        for name, fn in cases.items():
            times[name].append(timed(fn))
    for c, cl in clusters.values():
        cl.close()
        c.close()
    # Ray: one local instance per size (ray.init cannot resize).
    for n in (1, 2):
        name = f"`distributed.batch`, Ray, {n} worker{'s' if n > 1 else ''}"
        t = time.perf_counter()
        ray.init(num_cpus=n, include_dashboard=False, log_to_driver=False)
        startup[f"ray {n}"] = time.perf_counter() - t
        times[name] = [
            timed(lambda: distributed.batch(str(data), out / f"r{n}", engine="ray", figures=None))
            for _ in range(a.runs)
        ]
        ray.shutdown()
    same = all(
        (out / d / "results.json").read_bytes() == (out / "cli/results.json").read_bytes()
        for d in ("py", "d1", "d2", "r1", "r2")
    )
    cli = statistics.median(times["CLI `torchtrace batch` (-j 2)"])
    print(f"{traces} worker traces, {size / 1e6:.1f} MB gzip, {os.cpu_count()} cores, median of {a.runs} runs")
    print(f"results.json identical to the CLI's in every case: {same}\n")
    cli1 = statistics.median(times["CLI `torchtrace batch -j 1`"])
    print("| run | time (s) | × CLI -j 2 | per trace (ms) | overhead per trace vs the CLI with as many cores (ms) |")
    print("|---|---:|---:|---:|---:|")
    for name, ts in times.items():
        m = statistics.median(ts)
        ref = cli1 if ("1 worker" in name or "-j 1" in name) else cli
        print(
            f"| {name} | {m:.2f} | {m / cli:.2f} | {m / traces * 1e3:.1f} | {(m - ref) / traces * 1e3:+.1f} |"
        )
    print()
    print("Cluster start-up (not in the times above): " + ", ".join(f"{k} {v:.1f} s" for k, v in startup.items()))
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
