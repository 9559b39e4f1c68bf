#!/usr/bin/env bash
# Fuzzes the trace reader with cargo-fuzz (libFuzzer) for a fixed budget.
#
#   scripts/fuzz.sh [SECONDS [JOBS]]     # defaults: 240 s, 1 job
#   MAX_LEN=4096 scripts/fuzz.sh 180     # short inputs: many more runs per second
#
# Installs cargo-fuzz if missing (cargo install cargo-fuzz --locked), seeds
# the corpus (fuzz/corpus/reader, git-ignored) from tests/data: every
# fixture and damaged case up to 256 KB, gzip ones also decompressed, then
# runs the `reader`, `analyses`, `ops_idle` and `grouping` targets (fuzz/fuzz_targets/), the budget
# split between them, with
# RUSTC_BOOTSTRAP=1 so a stable toolchain can build it (cargo-fuzz needs
# nightly flags: -Zsanitizer=address and coverage instrumentation).
#
# A crash leaves its input in fuzz/artifacts/reader/; reproduce it with
#   RUSTC_BOOTSTRAP=1 cargo fuzz run reader fuzz/artifacts/reader/<file>
# and add it to tests/data/damaged/ (scripts/make_damaged.py) once fixed.
set -euo pipefail

SECS=${1:-240}
JOBS=${2:-1}
MAX_LEN=${MAX_LEN:-262144}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

# Tooling that cannot be had here (no registry, no C++ compiler for
# libFuzzer) skips the run with a message; a crash found fails it.
if ! cargo fuzz --version > /dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz" >&2
    if ! cargo install cargo-fuzz --locked; then
        echo "fuzz: skipped: cargo-fuzz could not be installed" >&2
        exit 0
    fi
fi

CORPUS=fuzz/corpus/reader
mkdir -p "$CORPUS"
for f in tests/data/*.gz tests/data/damaged/*; do
    [[ -f $f && $f != *.tsv ]] || continue
    if (($(stat -c %s "$f") <= 262144)); then
        cp "$f" "$CORPUS/$(basename "$f")"
    fi
    # Decompressed (plain JSON reaches the scanner without the CRC in the
    # way); the first byte of a fuzz input is the knob, so prefix one.
    if gzip -t "$f" 2> /dev/null; then
        # (head closing early makes gzip die of SIGPIPE: not an error.)
        { printf '\0'; gzip -dc "$f"; } | head -c 262144 > "$CORPUS/$(basename "$f").json" || true
    fi
done

PAR=()
if ((JOBS > 1)); then
    # Parallel runs write fuzz-N.log files in the current directory.
    PAR=(-jobs="$JOBS" -workers="$JOBS")
fi
export RUSTC_BOOTSTRAP=1
# Three targets share the budget: the reader (bytes → events), the
# analyses behind it (events → figures, records round trip), and ops and
# idle (the GPU timeline's causes), each from the same seeds.
# The fourth, `grouping`, takes lines of trace paths (ranks' runs and the
# traces' labels): seeded with the paths of the sample campaign and of the
# fixtures, one knob byte before each.
TARGETS=(reader analyses ops_idle grouping)
for t in analyses ops_idle; do
    mkdir -p "fuzz/corpus/$t"
    cp -n "$CORPUS"/* "fuzz/corpus/$t/" 2> /dev/null || true
done
mkdir -p fuzz/corpus/grouping
{ printf '\1'; find sample_traces tests/data -type f -name '*.json*' | sort | sed 's/^/\x07/'; } \
    > fuzz/corpus/grouping/paths
printf '\0\x05d/dp0_pp0_tp0_dcp0_ep0_rank0.1\n\x09d/dp0_pp0_tp0_dcp0_ep0_rank4000000000.2\n\x0fd/x-rank-3.5\n' \
    > fuzz/corpus/grouping/ranks
for t in "${TARGETS[@]}"; do
    if ! cargo fuzz build "$t"; then
        echo "fuzz: skipped: the fuzz target $t does not build here (libFuzzer needs a C++ compiler and the ASan runtime)" >&2
        exit 0
    fi
done
EACH=$(((SECS + ${#TARGETS[@]} - 1) / ${#TARGETS[@]}))
for t in "${TARGETS[@]}"; do
    echo "fuzz: $t for ${EACH}s" >&2
    cargo fuzz run "$t" "fuzz/corpus/$t" -- \
        -max_total_time="$EACH" -max_len="$MAX_LEN" -print_final_stats=1 \
        -timeout=20 -rss_limit_mb=2048 "${PAR[@]}"
done
