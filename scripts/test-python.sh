#!/usr/bin/env bash
# Builds the Python package (python/) and runs its pytest suite.
#
# By default it creates a virtualenv at target/py-venv (reused across runs), installs maturin and
# pytest there, builds the extension in debug mode with `maturin develop` and runs pytest.
#   STRATA_PY_VENV=0   use the current Python environment instead of a virtualenv
#   PYTHON=python3.12  the interpreter used to create the virtualenv (default python3)
#   MATURIN_ARGS=...   extra arguments for `maturin develop` (e.g. --release)
# Extra arguments are passed to pytest, e.g. `scripts/test-python.sh -k iterator -x`.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "test-python.sh: $PYTHON not found (set PYTHON=...)" >&2
  exit 1
fi

if [ "${STRATA_PY_VENV:-1}" != "0" ]; then
  venv=target/py-venv
  if [ ! -x "$venv/bin/python" ]; then
    mkdir -p target
    "$PYTHON" -m venv "$venv"
  fi
  # shellcheck disable=SC1091
  . "$venv/bin/activate"
  PYTHON=python
fi

"$PYTHON" -m pip install --quiet --disable-pip-version-check "maturin>=1.5,<2" pytest
# `maturin develop` builds the abi3 extension into the active environment (editable install).
(cd python && "$PYTHON" -m maturin develop --quiet ${MATURIN_ARGS:-})
"$PYTHON" -m pytest python/tests -q "$@"
