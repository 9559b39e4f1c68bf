#!/usr/bin/env bash
# Builds the Python package (python/, PyO3 + maturin) and runs its tests.
#
#   scripts/python-tests.sh [PYTEST ARGS...]
#
# Makes its own virtualenv in target/pyenv (kept and reused; reinstalled
# when python/requirements-test.txt changes), installs the pinned test
# dependencies, builds the CLI (`cargo build --release --locked`: the tests
# compare the package's documents with its output) and the extension
# (`maturin develop --release`, an editable install of python/), then runs
# `pytest python/tests -q`. Without python3 or its venv module it says so
# and exits 0; any other failure fails the run.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

PY=${PYTHON:-python3}
VENV=target/pyenv
REQS=python/requirements-test.txt

if ! command -v "$PY" > /dev/null 2>&1; then
    echo "python-tests: skipped: $PY not found" >&2
    exit 0
fi
if [[ ! -x $VENV/bin/python ]]; then
    rm -rf "$VENV"
    if ! "$PY" -m venv "$VENV" > /dev/null 2>&1; then
        rm -rf "$VENV"
        echo "python-tests: skipped: $PY cannot make a virtualenv (install python3-venv)" >&2
        exit 0
    fi
fi
# Reinstall only when the pins changed: the stamp is the file last installed.
if ! cmp -s "$REQS" "$VENV/installed-requirements.txt"; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQS"
    cp "$REQS" "$VENV/installed-requirements.txt"
fi

cargo build --release --locked --bin torchtrace
# maturin develop installs into the active virtualenv.
export VIRTUAL_ENV=$ROOT/$VENV
export PATH=$VIRTUAL_ENV/bin:$PATH
maturin develop --release --locked --quiet
# Temporary files stay under target/ (issue 60): pytest's folders (--basetemp, emptied at each run), Dask's scratch
# space and other temporary files (TMPDIR), Ray's session files (RAY_TMPDIR) — unless the checkout's path is so long
# that Ray's sockets (RAY_TMPDIR/ray/session_<date>_<pid>/sockets/plasma_store) would pass the 107-byte limit of a
# Unix socket's path: then Ray keeps /tmp/ray, and this says so.
SCRATCH=$ROOT/target/test-tmp
mkdir -p "$SCRATCH"
export TMPDIR=$SCRATCH
if (( ${#SCRATCH} <= 36 )); then
    export RAY_TMPDIR=$SCRATCH
else
    export RAY_TMPDIR=/tmp
    echo "python-tests: note: $SCRATCH is too long a path for Ray's sockets: Ray's session files go to /tmp/ray" >&2
fi
TORCHTRACE_BIN=$ROOT/target/release/torchtrace exec python -m pytest python/tests -q --basetemp="$SCRATCH/pytest" "$@"
