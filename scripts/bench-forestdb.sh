#!/usr/bin/env bash
# The ForestDB pattern of seed 004 (`strata bench --pattern=forestdb`: load every document once,
# then overwrite-sync, point and range queries with and without a 1000 writes/s writer, and
# overwrite-async, each step at 1 and N threads) on a database about 3x the memory it may use:
# each engine runs the whole pattern in a memory cgroup of LIMIT bytes. Per engine: the log
# (every step's db_bench lines and the closing table: ops/s, P99, write KB and disk reads per
# operation, DB size after the step), a CSV and a throughput-over-time SVG in $OUT.
#
#   scripts/bench-forestdb.sh
#   Values are snappy-compressed at `--compression_ratio=0.5` for every engine.
#   env: LIMIT (cgroup memory limit in bytes, default 536870912), NUM (documents, default
#          3500000: ~1.6 GB with 800-byte values at strata's and RocksDB's compression, 3x the
#          default limit), VALUE_SIZE (default 800), STEP_SECONDS (each step after the load,
#          default 60), THREADS (N, default 4), CACHE (block cache, default LIMIT/4),
#          ENGINES (default "strata rocksdb"), BENCH_DIR (default /tmp/strata-forestdb),
#          OUT (default bench/results/forestdb-DATE),
#          STRATA (a strata binary built with `--features rocksdb`; default: built into
#          target/peers, as scripts/bench-linkbench.sh does).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
limit=${LIMIT:-536870912}
num=${NUM:-3500000}
value_size=${VALUE_SIZE:-800}
step_seconds=${STEP_SECONDS:-60}
threads=${THREADS:-4}
cache=${CACHE:-$((limit / 4))}
engines=(${ENGINES:-strata rocksdb})
dir=${BENCH_DIR:-/tmp/strata-forestdb}
out=${OUT:-$here/bench/results/forestdb-$(date -u +%Y-%m-%d)}
. "$here/scripts/lib-bench.sh"
strata=$(peers_strata "${STRATA:-}")
mkdir -p "$out" "$dir"
cgroup_setup strata-forestdb "$limit"

echo "strata: $strata"
echo "limit $limit bytes, $num documents of $value_size bytes, ${step_seconds}s steps, N=$threads," \
  "cache $cache, engines ${engines[*]}, raw logs in $out"
for e in "${engines[@]}"; do
  db="$dir/$e"
  rm -rf "$db"
  echo "== $e"
  limited "$strata" bench --pattern=forestdb --engine="$e" --db="$db" --num="$num" \
    --value_size="$value_size" --duration="$step_seconds" --threads="$threads" --cache_size="$cache" \
    --compression_type=snappy --compression_ratio=0.5 --seed=1 --stats_interval_seconds=10 --plot="$out/$e.svg" > "$out/$e.log" 2>&1 ||
    { echo "FAILED: $out/$e.log" >&2; tail -5 "$out/$e.log" >&2; exit 1; }
  sed -n '/^step /,$p' "$out/$e.log" | grep -v '^plot:'
  rm -rf "$db"
done
rmdir "$dir" 2> /dev/null || true
