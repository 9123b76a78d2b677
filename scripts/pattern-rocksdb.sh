#!/usr/bin/env bash
# The ForestDB pattern of seed 004 with RocksDB's db_bench, step for step the flags that
# `strata bench --pattern=forestdb` uses (crates/strata-cli/src/bench/pattern.rs): 10 s steps,
# N = 4 threads, 200,000 keys, 100-byte values, seek + 20 next, a writer limited to 1000
# writes/s in the with-writer steps. Prints each step's db_bench line and the DB size after it.
#   scripts/pattern-rocksdb.sh [DB_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
db=${1:-/tmp/strata-pattern-rocksdb}
command -v db_bench >/dev/null 2>&1 || "$here/scripts/install-peers.sh"
tuning=$(grep -v '^#' "$here/bench/rocksdb-tuning.flags" | tr '\n' ' ')
base="--num=200000 --seek_nexts=20 --duration=10 --histogram=1 --db=$db"
w="--use_existing_db=1 --benchmark_write_rate_limit=116000"
rm -rf "$db"
step() { # label benchmark threads flags...
  local label=$1 bench=$2 threads=$3; shift 3
  line=$(db_bench $tuning $base --benchmarks="$bench" --threads="$threads" "$@" 2>&1 | grep -E 'micros/op' | head -1)
  printf '%-6s %s  [du %s KB]\n' "$label" "$line" "$(du -sk "$db" | cut -f1)"
}
step load fillrandom 1 --use_existing_db=0 --disable_wal=1 --duration=0
step ows.1 overwrite 1 --use_existing_db=1 --sync=1 --disable_wal=0
step ows.n overwrite 4 --use_existing_db=1 --sync=1 --disable_wal=0
step pqw.1 readwhilewriting 1 $w
step pqw.n readwhilewriting 4 $w
step rqw.1 seekrandomwhilewriting 1 $w
step rqw.n seekrandomwhilewriting 4 $w
step pq.1 readrandom 1 --use_existing_db=1
step pq.n readrandom 4 --use_existing_db=1
step rq.1 seekrandom 1 --use_existing_db=1
step rq.n seekrandom 4 --use_existing_db=1
step owa.1 overwrite 1 --use_existing_db=1 --sync=0
step owa.n overwrite 4 --use_existing_db=1 --sync=0
