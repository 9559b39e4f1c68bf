#!/usr/bin/env bash
# Benchmark torchtrace on a large gzip trace against the yardsticks users know.
#
#   bench/run.sh [COPIES [RUNS]]    # defaults: 200 copies (~1.14 GB uncompressed), 5 runs
#   bench/run.sh --smoke            # 1 copy (~6 MB), 1 run: a few seconds, for CI
#
# What it does, from the repository root:
#   1. builds the large trace once (cached in bench/data/, git-ignored) from a
#      sample vLLM trace with ../shared/tools/scale_trace.py (compact JSON:
#      denser than Kineto's pretty print), and notes its uncompressed size;
#   2. cargo build --release (torchtrace and the `inflate` example);
#   3. times, interleaved (round 1: every tool once, round 2: ...), N runs each:
#        zcat          zcat FILE > /dev/null                      (the yardstick)
#        inflate       target/release/examples/inflate FILE       (flate2/zlib-rs, one thread, to a sink)
#        pair          torchtrace pair -q FILE
#        hierarchy     torchtrace hierarchy -q --no-gpu-work FILE (chains only; the default also
#                      reads launch calls and GPU activities, as kernels does)
#        kernels       torchtrace kernels -q FILE                 (launch correlation: parses every
#                      launch call and GPU activity)
#        pair_annot    torchtrace pair --gpu-span annotation FILE (auto mode must cost the same)
#        python        python3 bench/py_pair.py FILE              (json.load + pairing loop; PY_RUNS runs)
#      with peak RSS from /usr/bin/time -v;
#   4. prints a table: median wall s (min–max), MB/s of uncompressed bytes,
#      ratio to zcat's median, median CPU s (user+sys, all threads: less
#      sensitive than wall time to other load on the machine), peak RSS MB
#      (the largest over the runs);
#   5. then the full-parse analyses on the same trace, with their own table
#      (bench/ledger.sh: kernels, hierarchy, iterations, diff, batch; issue 21).
#
# Environment: LEDGER=0 (skip step 5), SRC (sample trace to scale; default the text_mtp sample),
# PY_RUNS (default 1; 0 skips the Python baseline, which needs ~5 GB of RAM
# at 200 copies), DATA (where the large trace goes; default bench/data).
#
# Skips cleanly (exit 0, with a message) when ../shared/tools/scale_trace.py
# or python3 is absent. Peak RSS needs GNU time (/usr/bin/time): on Debian or
# Ubuntu `apt-get install -y time`; without it RSS shows as n/a.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

SMOKE=0
if [[ ${1:-} == --smoke ]]; then
    SMOKE=1
    shift
fi
if ((SMOKE)); then
    COPIES=${1:-1}
    RUNS=${2:-1}
    PY_RUNS=${PY_RUNS:-1}
else
    COPIES=${1:-200}
    RUNS=${2:-5}
    PY_RUNS=${PY_RUNS:-1}
fi

SCALE="$ROOT/../shared/tools/scale_trace.py"
if ! command -v python3 > /dev/null; then
    echo "bench: skipped: python3 not found" >&2
    exit 0
fi
if [[ ! -f $SCALE ]]; then
    echo "bench: skipped: $SCALE not found (it lives in the shared checkout beside this one)" >&2
    exit 0
fi
SRC=${SRC:-$(ls sample_traces/text_mtp/dp0_*.pt.trace.json.gz 2> /dev/null | head -n1 || true)}
if [[ -z $SRC || ! -f $SRC ]]; then
    echo "bench: skipped: no sample trace (set SRC=path/to/trace.json.gz)" >&2
    exit 0
fi
TIME=/usr/bin/time
if ! "$TIME" -v true > /dev/null 2>&1; then
    echo "bench: note: GNU time not found at /usr/bin/time, peak RSS will be n/a (apt-get install -y time)" >&2
    TIME=
fi

DATA=${DATA:-bench/data}
mkdir -p "$DATA"
FILE="$DATA/$(basename "$(dirname "$SRC")")_x$COPIES.pt.trace.json.gz"
if [[ ! -f $FILE ]]; then
    echo "bench: building $FILE ($COPIES copies of $SRC)..." >&2
    # The temporary name must end in .gz: scale_trace.py compresses by suffix.
    python3 "$SCALE" "$SRC" "$FILE.tmp.gz" --copies "$COPIES"
    mv "$FILE.tmp.gz" "$FILE"
fi
if [[ ! -f $FILE.size || $FILE.size -ot $FILE ]]; then
    zcat "$FILE" | wc -c > "$FILE.size"
fi
BYTES=$(cat "$FILE.size")

echo "bench: cargo build --release" >&2
cargo build --release --quiet --bin torchtrace --example inflate
TT=target/release/torchtrace

NAMES=(zcat inflate pair)
CMDS=("zcat '$FILE' > /dev/null" "target/release/examples/inflate '$FILE' > /dev/null" "$TT -q pair '$FILE' > /dev/null")
if "$TT" hierarchy --help > /dev/null 2>&1; then
    # Containment and durations only (what it measured before GPU work per
    # function existed); the default adds the correlation ledger, as kernels.
    NAMES+=(hierarchy)
    CMDS+=("$TT -q hierarchy --no-gpu-work '$FILE' > /dev/null")
fi
if "$TT" kernels --help > /dev/null 2>&1; then
    NAMES+=(kernels)
    CMDS+=("$TT -q kernels '$FILE' > /dev/null")
    # pair on a trace whose contexts all have GPU annotations: auto mode
    # reads once, without the ledger (must match plain pair).
    NAMES+=(pair_annot)
    CMDS+=("$TT -q pair --gpu-span annotation '$FILE' > /dev/null")
fi
if ((PY_RUNS > 0)); then
    NAMES+=(python)
    CMDS+=("python3 bench/py_pair.py '$FILE' > /dev/null")
fi

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
RES="$OUT/results.tsv"
: > "$RES"
echo "bench: $FILE: $BYTES bytes uncompressed, $(stat -c %s "$FILE") gzip; $RUNS runs each, interleaved" >&2
for ((r = 1; r <= RUNS; r++)); do
    for i in "${!NAMES[@]}"; do
        name=${NAMES[$i]}
        if [[ $name == python ]] && ((r > PY_RUNS)); then
            continue
        fi
        t0=$(date +%s%N)
        # Exit status 1 means "problems found" (e.g. a hierarchy link does
        # not hold): still a complete run. 2 and up is a failure.
        status=0
        if [[ -n $TIME ]]; then
            "$TIME" -v -o "$OUT/time" sh -c "${CMDS[$i]}" || status=$?
        else
            sh -c "${CMDS[$i]}" || status=$?
        fi
        t1=$(date +%s%N)
        if ((status > 1)); then
            echo "bench: $name failed (exit $status): ${CMDS[$i]}" >&2
            exit 1
        fi
        rss=NA
        cpu=NA
        if [[ -n $TIME ]]; then
            rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$OUT/time")
            cpu=$(awk -F': ' '/(User|System) time/ {s += $2} END {print s}' "$OUT/time")
        fi
        printf '%s\t%s\t%s\t%s\n' "$name" "$(((t1 - t0) / 1000))" "$rss" "$cpu" >> "$RES"
        awk -v r="$r" -v n="$name" -v ns="$((t1 - t0))" 'BEGIN { printf "bench: run %d %-10s %7.3f s\n", r, n, ns / 1e9 }' >&2
    done
done

python3 - "$RES" "$BYTES" "$FILE" "$RUNS" "${NAMES[@]}" << 'EOF'
import statistics, sys
res, nbytes, path, runs, names = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
rows = {}
for line in open(res):
    name, us, rss, cpu = line.rstrip("\n").split("\t")
    rows.setdefault(name, []).append(
        (int(us) / 1e6, None if rss == "NA" else int(rss) / 1024, None if cpu == "NA" else float(cpu))
    )
zcat = statistics.median(w for w, _, _ in rows["zcat"])
print(f"file: {path} ({nbytes / 1e6:.0f} MB uncompressed); median of {runs} interleaved runs (python: {len(rows.get('python', []))})")
print()
print("| tool | wall s (median) | min–max s | MB/s | × zcat | CPU s (user+sys) | peak RSS MB |")
print("|---|---:|---:|---:|---:|---:|---:|")
for name in names:
    runs_ = rows[name]
    ws = [w for w, _, _ in runs_]
    med = statistics.median(ws)
    rss = [r for _, r, _ in runs_ if r is not None]
    rss_s = f"{max(rss):.0f}" if rss else "n/a"
    cpu = [c for _, _, c in runs_ if c is not None]
    cpu_s = f"{statistics.median(cpu):.2f}" if cpu else "n/a"
    print(f"| {name} | {med:.3f} | {min(ws):.2f}–{max(ws):.2f} | {nbytes / med / 1e6:.0f} | {med / zcat:.2f} | {cpu_s} | {rss_s} |")
inf = statistics.median(w for w, _, _ in rows["inflate"])
pair = statistics.median(w for w, _, _ in rows["pair"])
print()
print(f"pair rate / inflate-only rate: {inf / pair:.0%}")
EOF

# The full-parse analyses (issue 21: kernels, hierarchy, iterations, diff,
# batch) on the same trace, with their own table: bench/ledger.sh, which
# BASE=old/torchtrace and PIN="taskset -c 0,1" also reach from here.
# LEDGER=0 skips it.
if [[ ${LEDGER:-1} != 0 ]]; then
    echo
    if ((SMOKE)); then
        SKIP_BUILD=1 DATA="$DATA" bench/ledger.sh --smoke "$COPIES" "$RUNS"
    else
        SKIP_BUILD=1 DATA="$DATA" bench/ledger.sh "$COPIES" "$RUNS"
    fi
fi
