#!/usr/bin/env bash
# Instruction counts (valgrind's callgrind) of torchtrace builds on one trace:
# a deterministic A/B on a noisy machine, where wall times of a 5 % change
# drown in the load of other processes. Counts are not times (a SIMD
# instruction does the work of many), so a change is confirmed with
# bench/ledger.sh; this says whether it removed work, and where (the
# profiles stay in the output directory for callgrind_annotate).
#
#   bench/instructions.sh CMD BIN [BIN...]     # e.g. hierarchy old/torchtrace target/release/torchtrace
#   FILE=trace.json.gz bench/instructions.sh kernels target/release/torchtrace
#
# FILE defaults to 10 copies of the text_mtp sample (57 MB uncompressed),
# built once with ../shared/tools/scale_trace.py into DATA (default
# /tmp/torchtrace-bench). zcat (gzip -cd) of the same file is counted
# first, as the yardstick. Skips cleanly without valgrind, python3 or scale_trace.py.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
if (($# < 2)); then
    sed -n '2,16p' "$0" >&2
    exit 2
fi
CMD=$1
shift
if ! command -v valgrind > /dev/null; then
    echo "bench: skipped: valgrind not found (apt-get install -y valgrind)" >&2
    exit 0
fi
DATA=${DATA:-/tmp/torchtrace-bench}
FILE=${FILE:-$DATA/text_mtp_x10.pt.trace.json.gz}
if [[ ! -f $FILE ]]; then
    SCALE=${SCALE:-"$ROOT/../shared/tools/scale_trace.py"}
    SRC=$(ls "$ROOT"/sample_traces/text_mtp/dp0_*.pt.trace.json.gz 2> /dev/null | head -n1 || true)
    if ! command -v python3 > /dev/null || [[ ! -f $SCALE || -z $SRC ]]; then
        echo "bench: skipped: no $FILE and no way to build it (python3, $SCALE, the text_mtp sample)" >&2
        exit 0
    fi
    mkdir -p "$(dirname "$FILE")"
    python3 "$SCALE" "$SRC" "$FILE.tmp.gz" --copies 10
    mv "$FILE.tmp.gz" "$FILE"
fi
OUT=$(mktemp -d)
count() { # name, command...
    local name=$1
    shift
    valgrind --tool=callgrind --callgrind-out-file="$OUT/$name.out" "$@" > /dev/null 2> "$OUT/$name.log" || true
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$OUT/$name.log" | tail -n1
}
echo "bench: callgrind, $CMD on $FILE; profiles in $OUT" >&2
# zcat is a shell script on Debian: count the gzip it runs.
Z=$(count zcat gzip -cd "$FILE")
printf '| build | instructions | × zcat | × first build |\n|---|---:|---:|---:|\n'
printf '| zcat | %s | 1.00 | |\n' "$Z"
FIRST=
i=0
for BIN in "$@"; do
    i=$((i + 1))
    N=$(count "$i-$(basename "$BIN")" "$BIN" -q "$CMD" "$FILE")
    FIRST=${FIRST:-$N}
    awk -v b="$BIN" -v n="$N" -v z="$Z" -v f="$FIRST" \
        'BEGIN { printf "| %s | %d | %.2f | %.3f |\n", b, n, n / z, n / f }'
done
