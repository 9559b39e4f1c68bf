"""Every code block of README.md runs as written (issue 38).

The blocks run in document order, the way a reader follows the page, in one
scratch directory that holds `sample_traces/` (a link to the checkout's):

- ``sh`` blocks with ``bash -euo pipefail``; ``torchtrace`` on PATH is the
  build that scripts/python-tests.sh made (``TORCHTRACE_BIN``), and ``cargo
  run …`` is the real cargo on the checkout's manifest (``--manifest-path``
  added, so it runs in the scratch directory and writes nothing in the
  checkout);
- ``python`` blocks in one namespace shared by all of them, as cells of one
  notebook (the quick start's ``ar, mtp`` serve the later blocks), with
  ``__name__ == "__main__"`` as in a script (the Dask block has a script's
  guard); DuckDB runs from Python (the ``duckdb`` extra), since no extra
  installs its CLI (issue 60);
- ``text`` blocks are synopses and printed outputs, never run.

A block that cannot run here says why on the line above it
(``<!-- readme-test: skip — REASON -->``); any other info string fails, so a
new block has to choose. After the run, the figures the blocks produced are
checked against each other and against the values README.md prints.

A ``text`` block of printed output names the command that prints it on the
line above (``<!-- readme-output: CMD -->``): ``test_printed_outputs_are_real``
runs CMD with ``bash`` in the checkout (``torchtrace`` on PATH is the tested
build) and checks that every line of the block is a line of its stdout, in
order; a line ``…`` alone stands for lines left out, a line ``$ …`` shows
the command as typed. It needs no other block,
so ``pytest -k printed`` runs it alone (``TORCHTRACE_BIN`` may name a debug
build). ``TORCHTRACE_BLESS=1`` rewrites the blocks that differ: a block
without ``…`` becomes the whole output, an abridged one gets each stale line
replaced by the output's line with the same label (the text before the first
two spaces), in order (issue 60: README's outputs had drifted).
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
RUN = {"sh", "python"}
NEVER = {"text"}
SKIP = re.compile(r"^<!-- readme-test: skip — (.+\S) -->$")
OUTPUT = re.compile(r"^<!-- readme-output: (.+\S) -->$")


def blocks(text):
    """(line, info, body, skip reason or None) of every fenced block."""
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = re.match(r"^```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        start, info, body = i + 1, m.group(1), []
        i += 1
        while i < len(lines) and lines[i] != "```":
            body.append(lines[i])
            i += 1
        assert i < len(lines), f"README.md:{start}: the block is not closed"
        prev = lines[start - 2] if start >= 2 else ""
        skip = SKIP.match(prev)
        out.append((start, info, "\n".join(body) + "\n", skip.group(1) if skip else None))
        i += 1
    return out


ALL = blocks(README.read_text(encoding="utf-8"))


def test_every_block_is_run_or_says_why():
    for line, info, _, skip in ALL:
        assert info in RUN | NEVER, (
            f"README.md:{line}: ```{info}: use sh or python (run by this test) or text (never run)"
        )
        assert skip is None or info in RUN, f"README.md:{line}: a skip marker above a text block"
    ran = [b for b in ALL if b[1] in RUN and b[3] is None]
    # The blocks a reader runs: the main job, iterations, export + SQL + polars,
    # plot, shards + merge, the Python quick start, Dask, the custom analysis
    # and the generic entry. Fewer means a block lost its language or gained a skip.
    assert len(ran) >= 12, [b[0] for b in ran]


def _tool_dir(tmp):
    """A PATH entry with `torchtrace` (the tested build) and a `cargo` that
    runs the checkout's manifest from the scratch directory."""
    bindir = tmp / ".bin"
    bindir.mkdir()
    binary = Path(os.environ.get("TORCHTRACE_BIN", ROOT / "target/release/torchtrace"))
    assert binary.is_file(), f"{binary}: build it first (scripts/python-tests.sh does)"
    (bindir / "torchtrace").symlink_to(binary)
    cargo = shutil.which("cargo")
    assert cargo, "cargo not on PATH"
    shim = bindir / "cargo"
    shim.write_text(
        "#!/usr/bin/env bash\n"
        "# README's `cargo run …`, on the checkout, from the scratch directory\n"
        "set -euo pipefail\n"
        '[[ ${1-} == run ]] || { echo "README test: only cargo run is expected: $*" >&2; exit 2; }\n'
        "shift\n"
        f'exec "{cargo}" run --locked --quiet --manifest-path "{ROOT}/Cargo.toml" "$@"\n'
    )
    shim.chmod(0o755)
    return bindir


def _run_shell(line, body, cwd, env, program):
    res = subprocess.run(program + [body], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, (
        f"README.md:{line}: exit {res.returncode}\n{body}\nstdout: {res.stdout[-3000:]}\nstderr: {res.stderr[-3000:]}"
    )
    return res.stdout


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """Runs every block; gives the scratch directory, the Python namespace
    and each block's stdout by its README line."""
    work = tmp_path_factory.mktemp("readme")
    (work / "sample_traces").symlink_to(ROOT / "sample_traces")
    env = dict(os.environ)
    env["PATH"] = f"{_tool_dir(work)}{os.pathsep}{env['PATH']}"
    ns, outs, here = {"__name__": "__main__"}, {}, os.getcwd()
    try:
        os.chdir(work)
        for line, info, body, skip in ALL:
            if skip is not None or info not in RUN:
                continue
            if info == "sh":
                outs[line] = _run_shell(line, body, work, env, ["bash", "-euo", "pipefail", "-c"])
            else:
                try:
                    exec(compile(body, f"README.md:{line}", "exec"), ns)
                except Exception as e:  # noqa: BLE001 — name the block
                    raise AssertionError(f"README.md:{line}: {type(e).__name__}: {e}\n{body}") from e
    finally:
        os.chdir(here)
        if "client" in ns:
            ns["client"].close()
    return work, ns, outs


def _line(snippet):
    """The README line of the block whose body holds `snippet`."""
    hits = [b[0] for b in ALL if snippet in b[2]]
    assert len(hits) == 1, (snippet, hits)
    return hits[0]


def test_the_main_job_writes_the_campaign_and_shards_merge_to_the_same_bytes(ran):
    work, _, _ = ran
    report = (work / "results/report.md").read_text()
    # README's Table 8 row of the text workload, as printed above.
    assert "| text | 68 | 68 | 64 | 30 | 1.062 | 2.267 |" in report
    assert "| 0.3414 | 0.1362 | 2.506 | 53.1 |" in report
    # "merge writes the same bytes as batch": every file, figures included.
    files = sorted(p.relative_to(work / "results") for p in (work / "results").rglob("*") if p.is_file())
    assert len(files) > 20 and Path("figures/fig1_span_distributions.png") in files
    for f in files:
        assert (work / "merged" / f).read_bytes() == (work / "results" / f).read_bytes(), f


def test_the_python_blocks_give_the_printed_figures(ran):
    _, ns, _ = ran
    assert round(ns["doc"]["comparison"]["s_context"], 3) == 2.506
    medians = ns["df"].groupby("path")["gpu_ns"].median()
    assert round(medians[ns["ar"]] / 1e6, 3) == 0.355 and round(medians[ns["mtp"]] / 1e6, 3) == 0.305
    assert ns["torchtrace"].analyses()[:6] == ["pair", "hierarchy", "kernels", "iterations", "diff", "ranks"]
    # The Dask block: the campaign's three workloads, nothing failed, the same S_context as Table 8.
    by = {c["workload"]: c["s_context"] for c in ns["results"]["comparisons"]}
    assert round(by["text"], 3) == 2.506 and set(by) == {"reasoning", "text", "text_graphs", "tool_calling"}
    # The generic entry: kernels with top=3 keeps three kernels per trace.
    assert [len(t["top_kernels"]) for t in ns["kdoc"]["traces"]] == [3, 3]


def test_sql_and_polars_answer_the_same_question(ran):
    _, ns, _ = ran
    # Python's duckdb gives sum()'s HUGEINT as an int: exact.
    sql = ns["steps_sql"]
    top = ns["top"]
    assert len(sql) == top.height > 0
    assert sum(int(r[3]) for r in sql) == top["gpu_ns"].sum()
    first = top.row(0, named=True)
    assert tuple(sql[0]) == (first["trace"], first["step"], first["name"], first["gpu_ns"])


def test_the_campaign_tables_answer_per_workload(ran):
    work, ns, _ = ran
    # The README's relation is lazy and its paths are relative: run it
    # where the blocks ran.
    here = os.getcwd()
    os.chdir(work)
    try:
        rows = ns["per_token"].fetchall()
    finally:
        os.chdir(here)
    got = {(r[0], r[1]): (int(r[2]), int(r[3])) for r in rows}
    # Six (workload, mode) groups; the tokens are the completion tokens (text: 68 on both sides, not the
    # 64/90 scheduled generation tokens, issue 60), the GPU ns the text traces' kernels, memcpys and memsets,
    # as their own `export` gives them: text MTP 167.8 µs per token, `idle`'s busy per token.
    assert len(got) == 8 and got[("text", "ar")] == (12638958, 68) and got[("text", "mtp")] == (11407576, 68)
    assert round(got[("text", "mtp")][0] / 68 / 1e3, 1) == 167.8
    assert sorted(p.name for p in (work / "campaign/tables").iterdir()) == [
        "activities.parquet", "launches.parquet", "memory.parquet", "ops.parquet", "steps.parquet"]


def test_the_shell_blocks_print_real_figures(ran):
    _, _, outs = ran
    table = outs[_line("torchtrace iterations --sample-name")]
    assert re.search(r"tokens per iteration \(T/n\) +1\.0625 +2\.2667", table), table[:2000]
    per = outs[_line("torchtrace iterations sample_traces/text_ar")]
    assert "token progress ratio P" in per
    # The custom analysis example counts the AR sample's 3 400 kernels (export's 3 616 activities
    # = 3 400 kernels + 200 memcpys + 16 memsets).
    md = outs[_line("--example custom_analysis")]
    assert "| kernel | 3400 | 3400 |" in md and "| gpu_memcpy | 200 |" in md, md[:1500]


GAP = "…"


def _outputs(text):
    """(line, command, body lines) of every ``text`` block marked as a
    command's printed output."""
    lines = text.splitlines()
    out = []
    for line, info, body, _ in blocks(text):
        m = OUTPUT.match(lines[line - 2]) if line >= 2 else None
        if m and info == "text":
            out.append((line, m.group(1), body.splitlines()))
    return out


def _label(line):
    """A table line's label: the text before its first two spaces."""
    return line.strip().split("  ")[0]


def _compare(shown, real):
    """The block's lines not found in the real output in order (a ``…`` line
    is a gap), and the block as the real output would bless it (None when it
    cannot be blessed)."""
    real = [r.rstrip() for r in real]
    missing, blessed, at = [], [], 0
    abridged = GAP in [s.strip() for s in shown]
    for s in shown:
        if s.strip() == GAP or s.startswith("$ "):
            # A gap, or the command shown as typed.
            blessed.append(s)
            continue
        try:
            at = real.index(s.rstrip(), at) + 1
            blessed.append(s)
            continue
        except ValueError:
            missing.append(s)
        same = [k for k in range(at, len(real)) if _label(real[k]) == _label(s) and _label(s)]
        if same:
            at = same[0] + 1
            blessed.append(real[same[0]])
        else:
            blessed.append(None)
    if not abridged:
        blessed = real
        while blessed and not blessed[-1]:
            blessed = blessed[:-1]
    return missing, (None if None in blessed else blessed)


def test_printed_outputs_are_real():
    text = README.read_text(encoding="utf-8")
    marked = _outputs(text)
    # pair, kernels, hierarchy, idle and roofline at least; fewer means a marker was lost.
    assert len(marked) >= 5, [m[0] for m in marked]
    binary = Path(os.environ.get("TORCHTRACE_BIN", ROOT / "target/release/torchtrace"))
    assert binary.is_file(), f"{binary}: build it first (scripts/python-tests.sh does)"
    env = dict(os.environ)
    env["PATH"] = f"{binary.resolve().parent}{os.pathsep}{env['PATH']}"
    bless = os.environ.get("TORCHTRACE_BLESS")
    lines = text.splitlines()
    stale = []
    for line, command, shown in reversed(marked):
        res = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=600)
        missing, blessed = _compare(shown, res.stdout.splitlines())
        if not missing:
            continue
        if bless and blessed is not None:
            lines[line:line + len(shown)] = blessed
            continue
        stale.append(f"README.md:{line}: `{command}` (exit {res.returncode}) does not print:\n  "
                     + "\n  ".join(missing[:8]) + f"\nstderr: {res.stderr[-500:]}")
    if bless:
        README.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert not stale, "\n".join(stale) + "\n(TORCHTRACE_BLESS=1 rewrites them)"
