#!/usr/bin/env bash
# `batch` under an address-space limit (`prlimit --as`): how often a campaign
# holding one trace too large for the limit reads it whole, refuses it with
# its row in traces.csv and every other output written, or aborts.
#
#   bench/address_limit.sh [RUNS [J [BIN [BASE_BIN]]]]   defaults: 4 runs, -j 2
#
# The campaign (DATA, default /tmp/torchtrace-address-limit): the text AR and
# MTP samples beside a trace of 400 k tiny decode steps made by
# bench/hostile_memory.py (10 MB gzip, 1.2 M events). Each limit (MiB) is run
# RUNS times with BIN, and with BASE_BIN when given (a build to compare, in
# the same run). An outcome: `whole` (exit 0, every trace ok), `refused`
# (exit 1, the big trace's row names the limit, results.json written) or
# `aborted` (killed by a signal, no results.json).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-4}
J=${2:-2}
BIN=${3:-target/release/torchtrace}
BASE=${4:-}
DATA=${DATA:-/tmp/torchtrace-address-limit}
LIMITS=${LIMITS:-"250 350 400 500 600"}
CAMP="$DATA/campaign"
if [ ! -e "$CAMP/big/steps400k.pt.trace.json.gz" ]; then
    mkdir -p "$CAMP/big"
    for run in text_ar text_mtp; do
        mkdir -p "$CAMP/$run"
        cp sample_traces/$run/dp0_* "$CAMP/$run/"
    done
    echo "bench: building the 400 k-step trace..." >&2
    python3 bench/hostile_memory.py steps sample_traces/text_ar/dp0_*.pt.trace.json.gz \
        "$CAMP/big/steps400k.pt.trace.json.gz" --count 400000
fi

outcome() { # BIN MIB → whole | refused | aborted | other
    local out="$DATA/out" rc=0
    rm -rf "$out"
    prlimit --as=$(($2 << 20)) "$1" -q batch "$CAMP" -j "$J" --no-figures -o "$out" \
        >/dev/null 2>"$DATA/stderr" || rc=$?
    if [ "$rc" -ge 128 ] || [ ! -e "$out/results.json" ]; then
        echo aborted
    elif [ "$rc" = 0 ]; then
        echo whole
    elif grep -q '^big/.*,error,"needs more memory' "$out/traces.csv"; then
        echo refused
    else
        echo other
    fi
}

printf '%-10s %6s %8s %8s %8s\n' build MiB whole refused aborted
for mib in $LIMITS; do
    for name in new base; do
        bin=$BIN
        [ "$name" = base ] && bin=$BASE
        [ -n "$bin" ] || continue
        w=0 r=0 a=0
        for _ in $(seq "$RUNS"); do
            case $(outcome "$bin" "$mib") in
                whole) w=$((w + 1)) ;;
                refused) r=$((r + 1)) ;;
                aborted) a=$((a + 1)) ;;
            esac
        done
        printf '%-10s %6s %8s %8s %8s\n' "$name" "$mib" "$w" "$r" "$a"
    done
done
