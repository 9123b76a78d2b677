#!/usr/bin/env bash
# Builds the Python package (python/) as a wheel, installs the wheel the way a user would
# (`pip install <wheel>`) into a fresh virtualenv, and runs the pytest suite against that install.
#
# The tests run from a scratch directory with pytest's importlib import mode, so nothing puts
# the source tree on sys.path and python/strata (which has no extension module of its own, or a
# stale one from an old `maturin develop`) cannot shadow the installed package; the script checks
# that `strata.__file__` lies in the environment the wheel went into before running them.
#
# Two virtualenvs under target/: py-venv holds the build tools (maturin, reused across runs),
# py-test-venv is recreated empty on every run and receives only the wheel and its `test` extra
# (pytest).
#   STRATA_PY_VENV=0   use the current Python environment for both instead of virtualenvs (maturin
#                      and pytest are installed there, the wheel is force-reinstalled into it)
#   PYTHON=python3.12  the interpreter used to create the virtualenvs (default python3)
#   MATURIN_ARGS=...   the profile arguments of `maturin build` (default `--profile dev`, a debug
#                      build to keep CI short; e.g. MATURIN_ARGS=--release for an optimised one)
# Extra arguments are passed to pytest, e.g. `scripts/test-python.sh -k iterator -x`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

PYTHON="${PYTHON:-python3}"
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "test-python.sh: $PYTHON not found (set PYTHON=...)" >&2
  exit 1
fi
mkdir -p target
pip_quiet=(--quiet --disable-pip-version-check)

if [ "${STRATA_PY_VENV:-1}" != "0" ]; then
  tools=target/py-venv
  [ -x "$tools/bin/python" ] || "$PYTHON" -m venv "$tools"
  build_py=$root/$tools/bin/python
  test_env=$root/target/py-test-venv
  test_py=$test_env/bin/python
else
  build_py=$(command -v "$PYTHON")
  test_py=$build_py
fi
"$build_py" -m pip install "${pip_quiet[@]}" "maturin>=1.5,<2"
# The test environment, empty. Without a pip of its own when the tools' pip can install into
# another interpreter (pip >= 22.3, --python): seeding pip takes most of venv's time.
test_pip=("$test_py" -m pip)
if [ "$test_py" != "$build_py" ]; then
  if "$build_py" -m pip --help | grep -q -- '--python <python>'; then
    "$PYTHON" -m venv --clear --without-pip "$test_env"
    test_pip=("$build_py" -m pip --python "$test_py")
  else
    "$PYTHON" -m venv --clear "$test_env"
  fi
fi

# The wheel, alone in its directory so the glob below names exactly one file.
wheels=$root/target/py-wheel
rm -rf "$wheels"
# shellcheck disable=SC2086 # MATURIN_ARGS is a list of arguments
(cd python && "$build_py" -m maturin build --quiet ${MATURIN_ARGS:---profile dev} --out "$wheels")
wheel=$(echo "$wheels"/strata_kv-*.whl)
[ -f "$wheel" ] || { echo "test-python.sh: no wheel in $wheels" >&2; exit 1; }
echo "test-python.sh: installing $(basename "$wheel")"
if [ "$test_py" != "$build_py" ]; then
  "${test_pip[@]}" install "${pip_quiet[@]}" "${wheel}[test]"
else
  "${test_pip[@]}" install "${pip_quiet[@]}" pytest
  "${test_pip[@]}" install "${pip_quiet[@]}" --force-reinstall --no-deps "$wheel"
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
# The package must come from the install, not from the source tree.
location=$("$test_py" -c 'import strata, sys; print(strata.__file__); print(sys.prefix)')
file=$(sed -n 1p <<<"$location")
prefix=$(sed -n 2p <<<"$location")
echo "test-python.sh: strata imported from $file"
case "$file" in
  "$root"/python/*) echo "test-python.sh: strata was imported from the source tree" >&2; exit 1 ;;
  "$prefix"/*) ;;
  *) echo "test-python.sh: strata was not imported from the environment at $prefix" >&2; exit 1 ;;
esac
"$test_py" -m pytest -q -p no:cacheprovider --import-mode=importlib "$root/python/tests" "$@"
