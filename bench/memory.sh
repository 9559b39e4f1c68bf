#!/usr/bin/env bash
# Memory per unit of input (issue 59): peak RSS of every analysis on two sizes
# of each hostile shape of bench/hostile_memory.py, and the slope between them
# (bytes per step, per stream, per trace): what docs/PERFORMANCE.md's "Memory bounds" states.
#
#   bench/memory.sh [BIN] [WORK]      BIN: torchtrace (default target/release/torchtrace)
#   MEMBER_ONLY=1 bench/memory.sh     only the batch member's bytes per event fed (below)
#
# Shapes (built once into WORK, default /tmp/torchtrace-memory, from the text AR sample):
#   steps  50 000 and 400 000 decode steps of one launch and one kernel
#   streams 5 000 and 20 000 single-activity streams
#   traces  250 and 1 000 tiny traces of 3 steps (batch)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/torchtrace}
WORK=${2:-/tmp/torchtrace-memory}
SRC=$(ls sample_traces/text_ar/*.pt.trace.json.gz)
mkdir -p "$WORK"
gen() { [ -e "$WORK/$2" ] || python3 bench/hostile_memory.py "$1" "$SRC" "$WORK/$2" --count "$3" "${@:4}"; }
gen steps steps50k.pt.trace.json.gz 50000
gen steps steps400k.pt.trace.json.gz 400000
gen streams streams5k.pt.trace.json.gz 5000
gen streams streams20k.pt.trace.json.gz 20000
gen traces traces250 250 --tiny --steps 3
gen traces traces1000 1000 --tiny --steps 3

peak() { # peak RSS in KB of: BIN ARGS…
    /usr/bin/time -f "%M" "$BIN" -q "$@" >/dev/null 2>"$WORK/err" || true
    tail -n 1 "$WORK/err"
}
slope() { # (KB at b − KB at a) × 1024 / (b − a) units
    echo $(( ($2 - $1) * 1024 / ($4 - $3) ))
}

# A batch member's bytes per event fed (analysis::MemoryBudget::PER_EVENT, the
# --member-memory budget's constant): `batch -j 1` on one trace, every analysis
# of its plan, outputs written; its peak RSS less that of `batch` on a trace of
# one event (the binary, the reader's buffers, the threads), over the events its
# analyses were fed (counted by the read: a 1 KiB budget's error row says "of
# the N they take").
printf '{"traceEvents":[{"ph":"X","cat":"user_annotation","name":"x","ts":0,"dur":1}]}' > "$WORK/one.pt.trace.json"
fed() { # events the analyses of batch's plan take from FILE
    rm -rf "$WORK/fed"
    "$BIN" -q batch --no-figures -j 1 --member-memory 1K -o "$WORK/fed" "$1" >/dev/null 2>&1 || true
    grep -o 'of the [0-9]* they take' "$WORK/fed/traces.csv" | head -n 1 | tr -cd '0-9'
}
member_peak() { rm -rf "$WORK/member"; peak batch --no-figures -j 1 --member-memory none -o "$WORK/member" "$1"; }
members() { # FILE…: one line each, the figures' table
    local base f n kb
    base=$(member_peak "$WORK/one.pt.trace.json")
    printf '%-60s %10s %10s %12s\n' "batch member (base ${base} KB)" "events fed" "peak KB" "B/event fed"
    for f in "$@"; do
        n=$(fed "$f")
        kb=$(member_peak "$f")
        [ -n "$n" ] && [ "$n" -gt 0 ] || { echo "$f: no event fed"; continue; }
        local name=$f
        [ ${#name} -le 60 ] || name="…${name: -59}"
        printf '%-60s %10s %10s %12s\n' "$name" "$n" "$kb" $(( (kb - base) * 1024 / n ))
    done
}
if [ -n "${MEMBER_ONLY:-}" ]; then
    members sample_traces/*/dp*.pt.trace.json.gz tests/data/*.json.gz \
        "$WORK/steps50k.pt.trace.json.gz" "$WORK/steps400k.pt.trace.json.gz" \
        "$WORK/streams5k.pt.trace.json.gz" "$WORK/streams20k.pt.trace.json.gz" \
        ${MEMBER_EXTRA:-}
    exit 0
fi
printf '%-11s %12s %12s %10s %12s %12s %12s\n' analysis "50k steps KB" "400k KB" "B/step" "5k streams" "20k KB" "B/stream"
for a in pair hierarchy kernels iterations diff ranks roofline ops idle; do
    s1=$(peak "$a" "$WORK/steps50k.pt.trace.json.gz" -f json)
    s2=$(peak "$a" "$WORK/steps400k.pt.trace.json.gz" -f json)
    t1=$(peak "$a" "$WORK/streams5k.pt.trace.json.gz" -f json)
    t2=$(peak "$a" "$WORK/streams20k.pt.trace.json.gz" -f json)
    printf '%-11s %12s %12s %10s %12s %12s %12s\n' "$a" "$s1" "$s2" "$(slope "$s1" "$s2" 50000 400000)" \
        "$t1" "$t2" "$(slope "$t1" "$t2" 5000 20000)"
done
b1=$(peak batch "$WORK/traces250" -o "$WORK/out250" --no-figures)
b2=$(peak batch "$WORK/traces1000" -o "$WORK/out1000" --no-figures)
rec=$(( $(du -sb "$WORK/out1000/results.json" | cut -f1) / 1000 ))
echo "batch: 250 traces ${b1} KB, 1000 traces ${b2} KB: $(slope "$b1" "$b2" 250 1000) B/trace (results.json: ${rec} B/trace)"
