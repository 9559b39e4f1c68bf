#!/usr/bin/env bash
# One read, held once: CPU time and peak RSS of `batch` on one large trace
# against the largest single analysis on the same trace, and `export`, beside
# the inflate of the same file (`zcat`) in the same run: the ratios
# docs/PERFORMANCE.md's "Memory bounds" and BENCHMARKS.md state.
#
#   bench/one_read.sh [COPIES [RUNS [BIN]]]   defaults: 190 copies (~1.28 GB of JSON), 3 runs
#
# The trace: COPIES copies of the reasoning AR sample (bench/scale_parallel.py),
# built once into DATA (default /tmp/torchtrace-one-read). Every command runs
# RUNS times, interleaved; each figure is the median. CPU = user + system
# seconds; RSS = peak resident set (GNU time's %M). `batch` runs at `-j 16`
# (the default on a 16-core machine) with its default memory pool.
set -euo pipefail
cd "$(dirname "$0")/.."
COPIES=${1:-190}
RUNS=${2:-3}
BIN=${3:-target/release/torchtrace}
DATA=${DATA:-/tmp/torchtrace-one-read}
SRC=$(ls sample_traces/reasoning_ar/*.pt.trace.json.gz)
DIR="$DATA/x$COPIES"
FILE="$DIR/dp0_pp0_tp0_dcp0_ep0_rank0.1.pt.trace.json.gz"
mkdir -p "$DIR"
if [ ! -e "$FILE" ]; then
    echo "bench: building $FILE ($COPIES copies of $SRC)..." >&2
    python3 bench/scale_parallel.py "$SRC" "$FILE.tmp.gz" --copies "$COPIES" --jobs "${JOBS:-2}"
    mv "$FILE.tmp.gz" "$FILE"
fi
TIME=/usr/bin/time
[ -x "$TIME" ] || TIME="python3 bench/gnutime.py"

one() { # NAME CMD… → appends "NAME cpu rss" to $DATA/runs
    local name=$1; shift
    $TIME -f "%U %S %M" -o "$DATA/t" "$@" >/dev/null 2>"$DATA/err" || true
    read -r u s m < <(tail -n 1 "$DATA/t")
    echo "$name $u $s $m" >>"$DATA/runs"
}

: >"$DATA/runs"
for _ in $(seq "$RUNS"); do
    one zcat sh -c "zcat '$FILE' >/dev/null"
    for a in kernels iterations ops idle critical roofline; do
        one "$a" "$BIN" -q "$a" --format json "$FILE"
    done
    rm -rf "$DATA/export"
    one export "$BIN" -q export "$FILE" -o "$DATA/export"
    rm -rf "$DATA/batch"
    one batch "$BIN" -q batch -j 16 --no-figures "$DIR" -o "$DATA/batch"
done

python3 - "$DATA/runs" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, user, system, rss = line.split()
    runs.setdefault(name, []).append((float(user) + float(system), int(rss)))
med = {k: (statistics.median(c for c, _ in v), statistics.median(r for _, r in v)) for k, v in runs.items()}
singles = ["kernels", "iterations", "ops", "idle", "critical", "roofline"]
cpu_max = max(med[a][0] for a in singles)
rss_max = max(med[a][1] for a in singles)
z = med["zcat"][0]
print(f"| command | CPU s | × zcat CPU | × largest analysis CPU | peak RSS MB | × largest analysis RSS |")
print(f"|---|---:|---:|---:|---:|---:|")
for k in ["zcat"] + singles + ["export", "batch"]:
    c, r = med[k]
    print(f"| {k} | {c:.2f} | {c / z:.2f} | {c / cpu_max:.2f} | {r / 1024:.0f} | {r / rss_max:.2f} |")
EOF
