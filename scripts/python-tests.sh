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
TORCHTRACE_BIN=$ROOT/target/release/torchtrace exec python -m pytest python/tests -q "$@"
