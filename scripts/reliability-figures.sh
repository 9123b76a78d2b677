#!/usr/bin/env bash
# Runs the long versions of the reliability checks in release mode and prints the figures that
# docs/reliability.md records. Each figure line is printed by the tool itself.
#   scripts/reliability-figures.sh          # stress runs, crash loops, an hour under IO faults
#   scripts/reliability-figures.sh --all    # also fault-injection, corruption tests and fuzzing
# Sizes can be overridden: SYNC_CYCLES (1000), NOSYNC_CYCLES (200), KILL_CYCLES (500),
# CRASH_TEST_CYCLES (1000), BANK_CYCLES (300), STRESS_SECONDS (120), POWER_LOSS_SEEDS (10000),
# FAULT_SECONDS (3600), FUZZ_SECONDS (60), SEED (from the clock). The faults run's log (and any failing crash image) is
# kept in a directory printed on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
sync_cycles=${SYNC_CYCLES:-1000}
nosync_cycles=${NOSYNC_CYCLES:-200}
kill_cycles=${KILL_CYCLES:-500}
crash_test_cycles=${CRASH_TEST_CYCLES:-1000}
bank_cycles=${BANK_CYCLES:-300}
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
echo "== crash loop with 4 column families (the last dropped and recreated), 20% synced, $nosync_cycles cycles"
$bin crash-loop --db "$work/crash-cf" --cycles "$nosync_cycles" --threads 4 --sync-percent 20 --column-families 4 \
  --cf-drops-per-10k 20 --seed "$seed" | grep '^crash-loop'
echo "== bank transfers in transactions under kill -9, $bank_cycles cycles (mode drawn per cycle, 20% synced)"
$bin bank --db "$work/bank" --cycles "$bank_cycles" --threads 4 --sync-percent 20 --max-ms 1500 --seed "$seed" |
  grep '^bank'
echo "== faults: in memory under random IO faults, crash images every 2 s, ${fault_seconds}s"
faults_dir=$(mktemp -d)
$bin faults --duration "$fault_seconds" --seed "$seed" --log "$faults_dir/faults.log" |
  grep -E '^faults' || { echo "faults run failed; log and images in $faults_dir" >&2; exit 1; }
rm -rf "$faults_dir"

# The kill-point loops need the engine's kill points compiled in (inert unless a loop arms them).
cargo build --release -p strata-stress --features kill-points
echo "== kill-point loop, $kill_cycles cycles (20% synced writes, 1 KiB MANIFEST)"
$bin crash-loop --db "$work/kill" --cycles "$kill_cycles" --threads 4 --sync-percent 20 --kill-points \
  --max-ms 3000 --seed "$seed" --options "max_manifest_file_size=1024" | grep -E '^(crash-loop|kill points|  )'
echo "== crash-test, $crash_test_cycles cycles (options drawn per cycle)"
$bin crash-test --db "$work/crash-test" --cycles "$crash_test_cycles" --threads 4 --seed "$seed" |
  grep -E '^(crash-test|final)'
echo "== crash-test with 4 column families, $crash_test_cycles cycles (options drawn per cycle)"
$bin crash-test --db "$work/crash-test-cf" --cycles "$crash_test_cycles" --threads 4 --column-families 4 \
  --cf-drops-per-10k 20 --seed "$seed" | grep -E '^(crash-test|final)'
echo "== kill-point loop with 4 column families, $kill_cycles cycles (exit 4, a point that never fired, is tolerated:"
echo "   a WAL is deleted only once every family has flushed past it, so obsolete.delete.wal is rare)"
rc=0
$bin crash-loop --db "$work/kill-cf" --cycles "$kill_cycles" --threads 4 --sync-percent 20 --kill-points --max-ms 3000 \
  --seed "$seed" --options "max_manifest_file_size=1024" --column-families 4 --cf-drops-per-10k 50 \
  >"$work/kill-cf.out" 2>&1 || rc=$?
grep -E '^(crash-loop|kill points|NOT COVERED|  )' "$work/kill-cf.out" || true
[ "$rc" = 0 ] || [ "$rc" = 4 ] || { tail -20 "$work/kill-cf.out"; echo "kill-point loop with families failed (exit $rc)" >&2; exit 1; }
echo "== crash-test with kill points, $kill_cycles cycles"
$bin crash-test --db "$work/crash-test-kill" --cycles "$kill_cycles" --threads 4 --kill-points --max-ms 3000 \
  --seed "$seed" | grep -E '^(crash-test|final|kill points|  )'

echo "== power loss at page granularity, ${POWER_LOSS_SEEDS:-10000} seeds"
STRATA_POWER_LOSS_SEEDS=${POWER_LOSS_SEEDS:-10000} cargo test --release -p strata-kv --test power_loss -- --nocapture 2>&1 |
  grep -E '^(power loss|failing seed|test result)'
echo "== corruption sweep of the last MANIFEST and WAL records"
cargo test --release -p strata-kv --test corruption_sweep -- --nocapture 2>&1 | grep -E '^(corruption sweep|test result)'

if [ "${1:-}" = "--all" ]; then
  for t in fault_injection fault_injection_wal corruption recovery_modes repair resume; do
    echo "== cargo test --release -p strata-kv --test $t"
    cargo test --release -p strata-kv --test "$t" 2>&1 | grep -E '^test result'
  done
  echo "== scripts/fuzz.sh $fuzz_seconds"
  scripts/fuzz.sh "$fuzz_seconds"
fi
