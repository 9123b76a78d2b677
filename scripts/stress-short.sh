#!/usr/bin/env bash
# The short release-mode stress that CI runs: concurrent writers, readers, scans, snapshots,
# flushes and compactions against an expected-state oracle, then a short kill -9 loop, a loop
# whose children kill themselves at the engine's kill points (every point must fire), a
# crash-test loop that draws each cycle's engine options, and the same workload in memory under
# random IO faults with crash images (`faults`), and bank transfers in transactions under kill -9
# (`bank`: the total never changes, every transfer all or nothing). Release mode matters: races
# between a writer and readers (e.g. the memtable seek race of 2026-11-26, docs/reliability.md)
# need the write rate of an optimized build to show up in seconds.
# The tool is built once, with the engine's kill points compiled in: they do nothing unless a
# loop arms them through the environment, and one build instead of two keeps CI a build
# shorter (~2 minutes on 2 cores).
# Exits non-zero on the first mismatch or engine error, or if a kill point never fired. Long
# versions: scripts/reliability-figures.sh.
#   env: STRESS_SECONDS (30: the sync=false run; the sync=true run gets a third), CRASH_CYCLES (10:
#        the kill -9 and crash-test loops), KILL_CYCLES (60: each kill point the target of two or more),
#        FAULT_SECONDS (20), BANK_CYCLES (12: about 10 s), SEED (from the clock; printed, so a
#        failure can be re-run)
# The faults run keeps its log (and any failing crash image) in a directory it prints on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${STRESS_SECONDS:-30}
cycles=${CRASH_CYCLES:-10}
kill_cycles=${KILL_CYCLES:-60}
fault_seconds=${FAULT_SECONDS:-20}
bank_cycles=${BANK_CYCLES:-12}
seed=${SEED:-$(date +%s)}
cargo build --release -p strata-stress --features kill-points
bin=target/release/strata-stress
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "stress-short: commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), seed $seed"
$bin run --db "$work/nosync" --threads 4 --duration "$seconds" --no-sync --seed "$seed" | grep -E '^(run|final)'
$bin run --db "$work/sync" --threads 4 --duration $((seconds / 3 > 0 ? seconds / 3 : 1)) --sync --seed "$seed" |
  grep -E '^(run|final)'
$bin crash-loop --db "$work/crash" --cycles "$cycles" --threads 4 --no-sync --seed "$seed" | grep '^crash-loop'
# Every cycle's child is armed at one kill point (every fifth at all of them); a 1 KiB MANIFEST
# makes rolls and CURRENT renames happen in each child.
$bin crash-loop --db "$work/kill" --cycles "$kill_cycles" --threads 4 --sync-percent 20 --kill-points \
  --max-ms 3000 --seed "$seed" --options "max_manifest_file_size=1024" | grep -E '^(crash-loop|kill points)'
$bin crash-test --db "$work/crash-test" --cycles "$cycles" --threads 4 --seed "$seed" | grep -E '^(crash-test|final)'
# Column families: keys and batches spread over 3 (crash-loop) and 4 (crash-test) families, the
# last one dropped and recreated during the run (20 per 10,000 ops, so some kills land in a drop).
$bin crash-loop --db "$work/crash-cf" --cycles "$cycles" --threads 4 --sync-percent 10 --column-families 3 \
  --cf-drops-per-10k 20 --seed "$seed" | grep '^crash-loop'
$bin crash-test --db "$work/crash-test-cf" --cycles "$cycles" --threads 4 --column-families 4 --cf-drops-per-10k 20 \
  --seed "$seed" | grep -E '^(crash-test|final)'
# Transactions: transfers between 16 accounts (balances and a journal in two families), the mode
# (optimistic, pessimistic, pessimistic with a snapshot) drawn per cycle, 20% synced; the total is
# checked at the child's snapshots while it runs and after every kill.
$bin bank --db "$work/bank" --cycles "$bank_cycles" --threads 4 --sync-percent 20 --max-ms 700 --seed "$seed" |
  grep '^bank'
faults_dir=$(mktemp -d)
$bin faults --duration "$fault_seconds" --seed "$seed" --log "$faults_dir/faults.log" |
  grep -E '^faults' || { echo "stress-short: faults run failed; log and images in $faults_dir" >&2; exit 1; }
rm -rf "$faults_dir"
