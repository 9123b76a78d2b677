#!/usr/bin/env bash
# Runs every fuzz target (one per on-disk decoder, and the options parser) for SECONDS each
# (default 30) with cargo-fuzz (libFuzzer), starting from the seed corpus in
# fuzz/corpus/<target> if present, and prints the number of executions per target. Installs
# cargo-fuzz if missing. cargo-fuzz needs nightly flags; RUSTC_BOOTSTRAP=1 lets the stable
# toolchain accept them.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(block table wal manifest blob write_batch options range_del_block)
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t"
  log=$(mktemp)
  if ! cargo fuzz run --fuzz-dir fuzz "$t" "fuzz/corpus/$t" -- -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
    tail -40 "$log"
    echo "fuzz target $t FAILED" >&2
    exit 1
  fi
  execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || true)
  [ -n "$execs" ] || execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  echo "fuzz $t: ${execs:-?} executions in ${seconds}s, no crash"
  rm -f "$log"
done
