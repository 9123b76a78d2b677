#!/usr/bin/env bash
# Runs the long versions of the reliability checks in release mode and prints the figures that
# docs/reliability.md records. Each figure line is printed by the tool itself.
#   scripts/reliability-figures.sh          # stress runs, crash loops, an hour under IO faults
#   scripts/reliability-figures.sh --all    # also fault-injection, corruption tests and fuzzing
# Sizes can be overridden: SYNC_CYCLES (1000), NOSYNC_CYCLES (200), STRESS_SECONDS (120),
# FAULT_SECONDS (3600), FUZZ_SECONDS (60), SEED (from the clock). The faults run's log (and any
# failing crash image) is kept in a directory printed on failure; see scripts/stress-short.sh for
# --tolerate-short-append.
set -euo pipefail
cd "$(dirname "$0")/.."
sync_cycles=${SYNC_CYCLES:-1000}
nosync_cycles=${NOSYNC_CYCLES:-200}
stress_seconds=${STRESS_SECONDS:-120}
fault_seconds=${FAULT_SECONDS:-3600}
fuzz_seconds=${FUZZ_SECONDS:-60}
seed=${SEED:-$(date +%s)}
cargo build --release -p strata-stress
bin=target/release/strata-stress
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "date: $(date -u +%F)  commit: $(git rev-parse --short HEAD)  seed: $seed"

echo "== stress run, sync=false, 4 threads, ${stress_seconds}s"
$bin run --db "$work/stress-nosync" --threads 4 --duration "$stress_seconds" --no-sync --seed "$seed" | grep -E '^(run|final)'
echo "== stress run, sync=true, 4 threads, ${stress_seconds}s"
$bin run --db "$work/stress-sync" --threads 4 --duration "$stress_seconds" --sync --seed "$seed" | grep -E '^(run|final)'
echo "== crash loop, sync=true, $sync_cycles cycles"
$bin crash-loop --db "$work/crash-sync" --cycles "$sync_cycles" --threads 4 --sync --seed "$seed" | grep '^crash-loop'
echo "== crash loop, sync=false, $nosync_cycles cycles"
$bin crash-loop --db "$work/crash-nosync" --cycles "$nosync_cycles" --threads 4 --no-sync --seed "$seed" | grep '^crash-loop'
echo "== faults: in memory under random IO faults, crash images every 2 s, ${fault_seconds}s"
faults_dir=$(mktemp -d)
$bin faults --duration "$fault_seconds" --seed "$seed" --log "$faults_dir/faults.log" --tolerate-short-append |
  grep -E '^faults' || { echo "faults run failed; log and images in $faults_dir" >&2; exit 1; }
rm -rf "$faults_dir"

if [ "${1:-}" = "--all" ]; then
  for t in fault_injection corruption; do
    echo "== cargo test --release -p strata --test $t"
    cargo test --release -p strata --test "$t" 2>&1 | grep -E '^test result'
  done
  echo "== scripts/fuzz.sh $fuzz_seconds"
  scripts/fuzz.sh "$fuzz_seconds"
fi
