#!/usr/bin/env bash
# Benchmark the full-parse analyses (issue 21): everything that builds the
# launch→activity ledger, side by side with zcat and an inflate-only reader.
#
#   bench/ledger.sh [COPIES [RUNS]]   # defaults: 200 copies (~1.14 GB uncompressed), 5 runs
#   bench/ledger.sh --smoke           # 1 copy (~6 MB), 1 run
#   BASE=/path/to/old/torchtrace bench/ledger.sh 200 5
#                                     # also times an older build, same run, interleaved
#   PIN="taskset -c 0,1" bench/ledger.sh   # two cores of a larger machine
#   SKIP_BUILD=1 SCALE=… TIME=bench/gnutime.py   # a machine without cargo, ../shared or GNU time
#   ONLY="kernels iterations" bench/ledger.sh 200 7   # only these torchtrace commands (more runs, same time)
#   SRC=sample_traces/text_graphs_mtp/dp0_*.pt.trace.json.gz ONLY="ops roofline" bench/ledger.sh 20 3
#                                     # roofline against ops on a trace with shapes (issue 58)
#   TT=target/debug/torchtrace SKIP_BUILD=1 …   # another binary than target/release/torchtrace
#
# Times, interleaved (round 1: every tool once, round 2: ...):
#   zcat        zcat FILE > /dev/null                       (the yardstick)
#   inflate     target/release/examples/inflate FILE        (flate2/zlib-rs, one thread, to a sink)
#   pair        torchtrace -q pair FILE                     (annotations only: the reader's floor)
#   kernels     torchtrace -q kernels FILE
#   hierarchy   torchtrace -q hierarchy FILE                (default: with GPU work per function)
#   iterations  torchtrace -q iterations FILE
#   diff        torchtrace -q diff FILE FILE                (two traces: compare with 2 × zcat)
#   ops         torchtrace -q ops FILE                      (every host op, runtime call and activity)
#   idle        torchtrace -q idle FILE                     (every activity and runtime call)
#   critical    torchtrace -q critical FILE                 (every activity and runtime call, walked per iteration)
#   roofline    torchtrace -q roofline FILE                 (every host op with its shapes, runtime call and activity)
#   batch       torchtrace batch -q --no-figures -o TMP FILE (every analysis, one pass)
#   export      torchtrace -q export FILE -o TMP            (the four Parquet tables; their sizes printed)
# and with BASE set, the same torchtrace commands with the old binary
# (names prefixed `old-`). Prints a Markdown table: median wall s
# (min–max), × zcat and × inflate (diff: × 2 zcat, × 2 inflate), median CPU s (user+sys), peak RSS MB
# (largest over the runs), from /usr/bin/time -v (GNU time).
#
# The large trace is built once with ../shared/tools/scale_trace.py from
# SRC (default: the text_mtp sample), into DATA (default /tmp/torchtrace-bench;
# never commit it). Skips cleanly when python3 or scale_trace.py is absent.
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
else
    COPIES=${1:-200}
    RUNS=${2:-5}
fi

SCALE=${SCALE:-"$ROOT/../shared/tools/scale_trace.py"}
if ! command -v python3 > /dev/null; then
    echo "bench: skipped: python3 not found" >&2
    exit 0
fi
if [[ ! -f $SCALE ]]; then
    echo "bench: skipped: $SCALE not found" >&2
    exit 0
fi
SRC=${SRC:-$(ls sample_traces/text_mtp/dp0_*.pt.trace.json.gz 2> /dev/null | head -n1 || true)}
if [[ -z $SRC || ! -f $SRC ]]; then
    echo "bench: skipped: no sample trace (set SRC=path/to/trace.json.gz)" >&2
    exit 0
fi
TIME=${TIME:-/usr/bin/time}
if ! "$TIME" -v true > /dev/null 2>&1; then
    echo "bench: skipped: GNU time not found at /usr/bin/time (apt-get install -y time)" >&2
    exit 0
fi

PIN=${PIN:-}
DATA=${DATA:-/tmp/torchtrace-bench}
mkdir -p "$DATA"
FILE="$DATA/$(basename "$(dirname "$SRC")")_x$COPIES.pt.trace.json.gz"
if [[ ! -f $FILE ]]; then
    echo "bench: building $FILE ($COPIES copies of $SRC)..." >&2
    python3 "$SCALE" "$SRC" "$FILE.tmp.gz" --copies "$COPIES"
    mv "$FILE.tmp.gz" "$FILE"
fi
if [[ ! -f $FILE.size || $FILE.size -ot $FILE ]]; then
    zcat "$FILE" | wc -c > "$FILE.size"
fi
BYTES=$(cat "$FILE.size")

if [[ -z ${SKIP_BUILD:-} ]]; then
    echo "bench: cargo build --release" >&2
    cargo build --release --quiet --bin torchtrace --example inflate
fi

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

NAMES=(zcat inflate)
CMDS=("zcat '$FILE' > /dev/null" "target/release/examples/inflate '$FILE' > /dev/null")
# The torchtrace commands, `%TT%` standing for the binary.
TT_NAMES=(pair kernels hierarchy iterations diff ops idle critical roofline batch export)
TT_CMDS=(
    "%TT% -q pair '$FILE' > /dev/null"
    "%TT% -q kernels '$FILE' > /dev/null"
    "%TT% -q hierarchy '$FILE' > /dev/null"
    "%TT% -q iterations '$FILE' > /dev/null"
    "%TT% -q diff '$FILE' '$FILE' > /dev/null"
    "%TT% -q ops '$FILE' > /dev/null"
    "%TT% -q idle '$FILE' > /dev/null"
    "%TT% -q critical '$FILE' > /dev/null"
    "%TT% -q roofline '$FILE' > /dev/null"
    "%TT% batch -q --no-figures -o '$OUT/batch-%N%' '$FILE' > /dev/null"
    "%TT% -q export '$FILE' -o '$OUT/export-%N%' > /dev/null"
)
add_tt() { # prefix binary
    for i in "${!TT_NAMES[@]}"; do
        # ONLY="kernels iterations": just those torchtrace commands.
        if [[ -n ${ONLY:-} && " $ONLY " != *" ${TT_NAMES[$i]} "* ]]; then
            continue
        fi
        local name="$1${TT_NAMES[$i]}" cmd=${TT_CMDS[$i]}
        cmd=${cmd//%TT%/$2}
        NAMES+=("$name")
        CMDS+=("${cmd//%N%/$name}")
    done
}
add_tt "" "${TT:-target/release/torchtrace}"
if [[ -n ${BASE:-} ]]; then
    add_tt old- "$BASE"
fi

RES="$OUT/results.tsv"
: > "$RES"
echo "bench: $FILE: $BYTES bytes uncompressed, $(stat -c %s "$FILE") gzip; $RUNS runs each, interleaved" >&2
for ((r = 1; r <= RUNS; r++)); do
    for i in "${!NAMES[@]}"; do
        name=${NAMES[$i]}
        t0=$(date +%s%N)
        status=0
        # PIN: e.g. "taskset -c 0,1" (two cores of a larger machine).
        $PIN "$TIME" -v -o "$OUT/time" sh -c "${CMDS[$i]}" || status=$?
        t1=$(date +%s%N)
        # Exit status 1 means "problems found": still a complete run.
        if ((status > 1)); then
            echo "bench: $name failed (exit $status): ${CMDS[$i]}" >&2
            exit 1
        fi
        rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$OUT/time")
        cpu=$(awk -F': ' '/(User|System) time/ {s += $2} END {print s}' "$OUT/time")
        printf '%s\t%s\t%s\t%s\n' "$name" "$(((t1 - t0) / 1000))" "$rss" "$cpu" >> "$RES"
        awk -v r="$r" -v n="$name" -v ns="$((t1 - t0))" 'BEGIN { printf "bench: run %d %-14s %7.3f s\n", r, n, ns / 1e9 }' >&2
    done
done

for d in "$OUT"/export-*; do
    [[ -d $d ]] && echo "bench: $(basename "$d"): $(cd "$d" && stat -c '%n %s B' *.parquet | paste -sd, -)" >&2
done

python3 - "$RES" "$BYTES" "$FILE" "$RUNS" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "${NAMES[@]}" << 'EOF'
import statistics, sys
res, nbytes, path, runs, cores, load, names = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7:]
rows = {}
for line in open(res):
    name, us, rss, cpu = line.rstrip("\n").split("\t")
    rows.setdefault(name, []).append((int(us) / 1e6, int(rss) / 1024, float(cpu)))
zcat = statistics.median(w for w, _, _ in rows["zcat"])
print(f"file: {path} ({nbytes / 1e6:.0f} MB uncompressed); median of {runs} interleaved runs; {cores} cores; load average at the end {load}")
print()
inflate = statistics.median(w for w, _, _ in rows["inflate"])
print("| tool | wall s (median) | min–max s | × zcat | × inflate | CPU s (user+sys) | peak RSS MB |")
print("|---|---:|---:|---:|---:|---:|---:|")
for name in names:
    r = rows[name]
    ws = [w for w, _, _ in r]
    med = statistics.median(ws)
    # diff reads the trace twice: its yardsticks are two zcats, two inflates.
    k = 2 if name.endswith("diff") else 1
    print(f"| {name} | {med:.3f} | {min(ws):.2f}–{max(ws):.2f} | {med / (k * zcat):.2f} | {med / (k * inflate):.2f} | "
          f"{statistics.median(c for _, _, c in r):.2f} | {max(m for _, m, _ in r):.0f} |")
EOF
