#!/usr/bin/env bash
# Builds the Python package (python/) and runs its pytest suite.
#
# By default it creates a virtualenv at target/py-venv (reused across runs), installs maturin and
# pytest there, builds the extension in debug mode with `maturin develop` and runs pytest.
#   STRATA_PY_VENV=0   use the current Python environment instead of a virtualenv
#   PYTHON=python3.12  the interpreter used to create the virtualenv (default python3)
#   MATURIN_ARGS=...   extra arguments for the maturin build (e.g. --release)
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
if [ -n "${VIRTUAL_ENV:-}${CONDA_PREFIX:-}" ]; then
  # Builds the abi3 extension in debug mode into the active environment (editable install).
  (cd python && "$PYTHON" -m maturin develop --quiet ${MATURIN_ARGS:-})
else
  # No virtualenv: `maturin develop` needs one, so install the package with pip instead
  # (still a debug build, to keep CI builds short).
  MATURIN_PEP517_ARGS="${MATURIN_ARGS:---profile dev}" \
    "$PYTHON" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps ./python
fi
"$PYTHON" -m pytest python/tests -q "$@"
