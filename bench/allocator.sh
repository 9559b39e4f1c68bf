#!/usr/bin/env bash
# `torchtrace memory` on a large trace with [memory] events: CPU time and peak
# RSS beside the inflate of the same file (`zcat`) and `ops` (the host side of
# the same read) in the same run; the ratios BENCHMARKS.md states.
#
#   bench/allocator.sh [COPIES [RUNS [BIN]]]   defaults: 8 copies, 3 runs
#
# The trace: COPIES copies of TraceLens's H100 OWLv2 trace (13 474 [memory]
# events, 53 MB of JSON; ../shared/traces/real), made by
# ../shared/tools/scale_trace.py into DATA (default /tmp/torchtrace-allocator).
# Each command runs RUNS times, interleaved; each figure is the median. CPU =
# user + system seconds; RSS = peak resident set (GNU time's %M).
set -euo pipefail
cd "$(dirname "$0")/.."
COPIES=${1:-8}
RUNS=${2:-3}
BIN=${3:-target/release/torchtrace}
DATA=${DATA:-/tmp/torchtrace-allocator}
SRC=../shared/traces/real/tracelens/tests/traces/h100/google_owlv2-large-patch14-ensemble__1016001.json.gz
FILE="$DATA/owlv2_x$COPIES.json.gz"
mkdir -p "$DATA"
if [ ! -e "$FILE" ]; then
    echo "bench: building $FILE ($COPIES copies of $SRC)..." >&2
    python3 ../shared/tools/scale_trace.py "$SRC" "$FILE.tmp.gz" --copies "$COPIES"
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
    one memory "$BIN" -q memory --format json --timeline 400 "$FILE"
    one ops "$BIN" -q ops --format json "$FILE"
done
EVENTS=$(zcat "$FILE" | grep -c '"\[memory\]"' || true)
BYTES=$(zcat "$FILE" | wc -c)

python3 - "$DATA/runs" "$EVENTS" "$BYTES" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, user, system, rss = line.split()
    runs.setdefault(name, []).append((float(user) + float(system), int(rss)))
med = {k: (statistics.median(c for c, _ in v), statistics.median(r for _, r in v)) for k, v in runs.items()}
events, size = int(sys.argv[2]), int(sys.argv[3])
print(f"{size / 1e6:.0f} MB of JSON, {events} [memory] events")
print("| command | CPU s | × zcat CPU | peak RSS MB | × ops RSS |")
print("|---|---:|---:|---:|---:|")
z, o = med["zcat"][0], med["ops"][1]
for k in ["zcat", "memory", "ops"]:
    c, r = med[k]
    print(f"| {k} | {c:.2f} | {c / z:.2f} | {r / 1024:.0f} | {r / o:.2f} |")
PY
