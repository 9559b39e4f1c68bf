#!/usr/bin/env bash
# Byte-for-byte comparison of two torchtrace builds' outputs on every small
# real trace: the check each memory or speed change of issue 21 passed
# ("outputs identical"). Not a benchmark: it times nothing.
#
#   bench/compare.sh OLD_BIN NEW_BIN
#
# Compares, for every trace under 60 MB in tests/data, sample_traces and
# ../shared/traces (damaged and expected-output fixtures left out):
# `kernels`, `iterations`, `ops` and `roofline` (table and -f json),
# `hierarchy -f json` and `idle -f json`,
# with their exit status; `diff` in both scopes on the text_ar/text_mtp
# samples; `ranks -f json` on the TP=2 run; `pair --gpu-span correlation`;
# and `batch` (every output file, figures included) on sample_traces and the
# TP=2 run. Prints each difference and a count; exit 1 if any differ.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
if (($# != 2)); then
    sed -n 2,15p "$0" >&2
    exit 2
fi
OLD=$(realpath "$1")
NEW=$(realpath "$2")
SHARED="$ROOT/../shared/traces"
DIRS=(tests/data sample_traces)
[[ -d $SHARED ]] && DIRS+=("$SHARED")
n=0
bad=0
same() { # label, command args...
    local label=$1
    shift
    local a b
    a=$("$OLD" -q "$@" 2>&1; echo "exit $?")
    b=$("$NEW" -q "$@" 2>&1; echo "exit $?")
    n=$((n + 1))
    if [[ $a != "$b" ]]; then
        bad=$((bad + 1))
        echo "differs: $label" >&2
    fi
}
while IFS= read -r f; do
    for c in "kernels" "kernels -f json" "iterations" "iterations -f json" "hierarchy -f json" \
        "pair --gpu-span correlation -f json" "ops -f json" "ops" "roofline -f json" "roofline" \
        "idle -f json"; do
        # shellcheck disable=SC2086
        same "$c $f" $c "$f"
    done
done < <(find "${DIRS[@]}" \( -name '*.json.gz' -o -name '*.json' \) -size -60M \
    -not -path '*/expected/*' -not -path '*/damaged/*' -not -name 'GROUND_TRUTH.json' | sort)
AR=$(ls sample_traces/text_ar/*.pt.trace.json.gz | head -n1)
MTP=$(ls sample_traces/text_mtp/dp0_*.pt.trace.json.gz | head -n1)
same "diff" diff -f json "$AR" "$MTP"
same "diff --scope trace" diff --scope trace -f json "$AR" "$MTP"
TP2=tests/data/tp2
[[ -d $SHARED/../traces/tp2 ]] && TP2="$SHARED/tp2"
same "ranks $TP2" ranks -f json "$TP2"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
"$OLD" batch -q -o "$OUT/old" sample_traces "$TP2" > /dev/null 2>&1 || true
"$NEW" batch -q -o "$OUT/new" sample_traces "$TP2" > /dev/null 2>&1 || true
n=$((n + 1))
if ! diff -r "$OUT/old" "$OUT/new" > /dev/null; then
    bad=$((bad + 1))
    echo "differs: batch (diff -r of the output directories)" >&2
fi
echo "$n comparisons, $bad differ"
((bad == 0))
