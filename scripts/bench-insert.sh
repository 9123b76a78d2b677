#!/usr/bin/env bash
# The insert benchmark (iibench, seed 004) on strata, RocksDB and LMDB for 1, 2, 4 and 8 clients:
# per engine and client count, one run of every phase (l.i0, l.x, l.i1, qr100, qr1000) on a fresh
# database inside a memory cgroup of LIMIT bytes, with ROWS rows in all so the database grows to
# about 3x the limit; then, outside the cgroup, the database settles (`--ib_settle`: everything
# flushed, no compaction left, so its size is its data's and not a backlog's) and the checker
# runs (a full scan in the cgroup would time the page cache, not the engine). du.txt has each
# database's size at the end of the phases and settled. Raw logs and CSVs stay in $OUT, with
# summary.txt (each run's phase table). docs/cli.md describes the benchmark and its output.
#
#   scripts/bench-insert.sh
#   env: LIMIT (cgroup memory limit in bytes, default 1073741824),
#        ROWS (rows in all tables after l.i1; default 3 x LIMIT / BYTES_PER_ROW),
#        BYTES_PER_ROW (database bytes a row costs with its three index entries, for sizing
#          ROWS; default 120, about what strata and RocksDB take with snappy at the default
#          18-byte data column: check du.txt and set it per engine if one falls short),
#        L1_PCT (share of ROWS that l.i1 inserts, default 10; l.i0 inserts the rest),
#        CLIENTS (default "1 2 4 8"), ENGINES (default "strata rocksdb heed"),
#        QUERY_SECONDS (each query phase, default 1800), INTERVAL (seconds between interval
#          lines, default 10: iibench's secs_per_report), CACHE (block cache, default LIMIT/4),
#        BENCH_DIR (default /tmp/strata-insertbench), OUT (default bench/results/insertbench-DATE),
#        STRATA (a strata binary built with `--features rocksdb,heed`; default: built into
#          target/peers, as scripts/bench-linkbench.sh does).
#
# Needs root for the cgroup (without it, or without a memory controller, the runs are
# unlimited and say so). Page caches are not dropped: every run starts on an empty database
# inside its cgroup, so the pages it reads back are its own, charged to it.
# Every run ends with the insert benchmark's checker; a mismatch fails the run and this script.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
limit=${LIMIT:-1073741824}
bytes_per_row=${BYTES_PER_ROW:-120}
rows=${ROWS:-$((3 * limit / bytes_per_row))}
l1_pct=${L1_PCT:-10}
clients=(${CLIENTS:-1 2 4 8})
engines=(${ENGINES:-strata rocksdb heed})
query_seconds=${QUERY_SECONDS:-1800}
interval=${INTERVAL:-10}
cache=${CACHE:-$((limit / 4))}
dir=${BENCH_DIR:-/tmp/strata-insertbench}
out=${OUT:-$here/bench/results/insertbench-$(date -u +%Y-%m-%d)}
. "$here/scripts/lib-bench.sh"
strata=$(peers_strata "${STRATA:-}")
for e in "${engines[@]}"; do
  "$strata" bench --engine="$e" --help > /dev/null ||
    { echo "$strata cannot run --engine=$e (built without its feature?)" >&2; exit 1; }
done
mkdir -p "$out" "$dir"

cgroup_setup strata-insertbench "$limit"

# The same flags for every engine: 16 MiB write buffers (four families), snappy where the engine
# compresses, 10-bit bloom filters (strata's default; RocksDB builds none unless asked, and
# before 2026-11-30 this script did not ask, so its databases carried no filter bytes: a
# strata database 1.065x RocksDB's when both had settled was 1.22-1.25x at the end of the
# phases, with filters and a compaction backlog), those filters and the indexes charged to the
# block cache (strata always does; RocksDB keeps them beside the cache unless asked, and with
# filters that took it past a 512 MiB cgroup in qr100), no fsync on commit, the block cache a
# quarter of the limit.
common=(--benchmarks=insertbench --ib_query_seconds="$query_seconds" --stats_interval_seconds="$interval"
  --cache_size="$cache" --write_buffer_size=16777216 --compression_type=snappy --sync=0 --seed=1
  --bloom_bits=10 --cache_index_and_filter_blocks=1)

fail() { echo "FAILED: $1" >&2; tail -5 "$1" >&2; exit 1; }

echo "strata: $strata"
echo "limit $limit bytes, $rows rows ($l1_pct% in l.i1), clients ${clients[*]}, engines ${engines[*]}," \
  "${query_seconds}s per query phase, raw logs in $out"
: > "$out/du.txt"
: > "$out/summary.txt"
for c in "${clients[@]}"; do
  l1=$((rows * l1_pct / 100 / c))
  l0=$((rows / c - l1))
  for e in "${engines[@]}"; do
    db="$dir/$e-c$c"
    log="$out/$e-c$c.log"
    echo "$e, $c clients: l.i0 $l0 rows and l.i1 $l1 rows per client"
    rm -rf "$db"
    limited "$strata" bench "${common[@]}" --engine="$e" --threads="$c" --db="$db" \
      --ib_rows_l0="$l0" --ib_rows_l1="$l1" --ib_check=0 --report_file="$out/$e-c$c.csv" > "$log" 2>&1 ||
      fail "$log"
    kb=$(du -sk "$db" | cut -f1)
    "$strata" bench "${common[@]}" --engine="$e" --threads="$c" --db="$db" --use_existing_db=1 \
      --ib_phases= --ib_settle=1 > "$out/check-$e-c$c.log" 2>&1 || fail "$out/check-$e-c$c.log"
    grep -E '^(settle|checker)' "$out/check-$e-c$c.log" | sed 's/^/  /'
    echo "$e c$c $kb KB at the end, $(du -sk "$db" | cut -f1) KB settled" >> "$out/du.txt"
    if [ "$ltm" = 1 ] && [ $((kb * 1024)) -lt $((3 * limit)) ]; then
      echo "  note: $db is $((kb / 1024)) MB, below 3x the limit (raise ROWS or BYTES_PER_ROW)" | tee -a "$out/du.txt"
    fi
    { echo "== $e, $c clients, du $((kb / 1024)) MB"; sed -n '/^phase /,/^checker/p' "$log" | grep -v '^checker'; } |
      tee -a "$out/summary.txt"
    rm -rf "$db"
  done
done
rmdir "$dir" 2> /dev/null || true
