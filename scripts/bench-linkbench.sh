#!/usr/bin/env bash
# LinkBench (seed 002) on strata, RocksDB's TransactionDB and LMDB, side by side: each engine's
# database is loaded once with unlimited memory, then each round runs every engine's request
# phase twice, first cached (no memory limit, the data in the page cache) and then larger than
# memory (in a memory cgroup, on an empty page cache), the engines' order rotating per round.
# The summary prints medians over the rounds; raw logs stay in $OUT. BENCHMARKS.md has the figures.
# Each load ends settled (`--linkbench_settle`, the default: tables flushed, no compaction
# pending), and every request phase runs on its own copy of the loaded database, so every
# engine's phases start from the same data and no work left over: run one after the other on one database,
# a faster engine's cached phase left its limited phase more writes to compact (2026-11-30:
# strata's limited runs at 0.69x and 1.40x RocksDB's, writing 0.81 and 0.42 KB per request).
# LinkBench's checker (every count against its links) runs after each cached run, and after each
# limited run outside the cgroup: a full scan in the cgroup would time the page cache, not the
# engine.
#
#   scripts/bench-linkbench.sh [ROUNDS]        (default 3)
#   env: MAXID1 (nodes + 1, default 4000001), DURATION (seconds per request phase, default 60),
#        LOADERS / REQUESTERS (threads, default 2 each: half the cores, as the seed's 12 of 24),
#        LIMIT (cgroup memory limit in bytes, default 536870912), CACHE (block cache of the
#        cached runs, default 1 GiB), LTM_CACHE (block cache under the limit, default 128 MiB),
#        ENGINES (default "strata rocksdb heed"), BENCH_DIR (default /tmp/strata-linkbench),
#        OUT (raw logs, default bench/results/linkbench-DATE), STRATA (a strata binary built
#        with `--features rocksdb,heed`; default: built into target/peers), SKIP_LOAD=1 (reuse
#        the databases a previous invocation left in BENCH_DIR), FLAGS (more `strata bench` flags for
#        every engine and run, e.g. FLAGS=--bloom_bits=10 gives RocksDB bloom filters too),
#        REQUESTS / LTM_REQUESTS (requests per requester thread in each cached / limited phase,
#        instead of DURATION: every engine then does the same work, so the bytes it wrote and
#        the size its database reached compare like for like; requests/s is still measured),
#        SETTLE_AFTER (default 1: after each request phase the engine flushes and finishes its
#        compactions, `--linkbench_settle_after`, and a second Efficiency line counts those
#        writes too; a phase of minutes ends wherever each engine's compaction cycle stands, so
#        only the settled figure compares the bytes the requests cost; 0 skips it).
#
# Needs root for the cgroup and drop_caches (without it, only the cached runs are made).
# Every run ends with LinkBench's checker; a count mismatch fails the run and this script.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
maxid1=${MAXID1:-4000001}
duration=${DURATION:-60}
# A phase ends after a fixed time, or after a fixed number of requests when REQUESTS is set.
cached_phase=(--duration="$duration")
ltm_phase=(--duration="$duration")
settle_after=(--linkbench_settle_after="${SETTLE_AFTER:-1}")
if [ -n "${REQUESTS:-}" ]; then
  cached_phase=(--requests="$REQUESTS")
  ltm_phase=(--requests="${LTM_REQUESTS:-$REQUESTS}")
fi
loaders=${LOADERS:-2}
requesters=${REQUESTERS:-2}
limit=${LIMIT:-536870912}
cache=${CACHE:-1073741824}
ltm_cache=${LTM_CACHE:-134217728}
engines=(${ENGINES:-strata rocksdb heed})
dir=${BENCH_DIR:-/tmp/strata-linkbench}
out=${OUT:-$here/bench/results/linkbench-$(date -u +%Y-%m-%d)}
. "$here/scripts/lib-bench.sh"
strata=$(peers_strata "${STRATA:-}")
mkdir -p "$out" "$dir"

# Without root or a memory controller ($ltm is 0) only the cached runs are made.
cgroup_setup strata-linkbench "$limit"

# The same flags for every engine: 16 MiB write buffers (four families, so memtables stay well
# inside the limit), snappy where the engine compresses, no fsync on commit (as the seed).
common=(--benchmarks=linkbench --maxid1="$maxid1" --loaders="$loaders" --requesters="$requesters"
  --write_buffer_size=16777216 --compression_type=snappy --sync=0 --seed=1 --stats_interval_seconds=0
  ${FLAGS:-})

run() { # log engine flags... (on $dir/$engine, or on $db when it is set)
  local log=$1 engine=$2; shift 2
  "$strata" bench "${common[@]}" --engine="$engine" --db="${db:-$dir/$engine}" "$@" > "$log" 2>&1 ||
    { echo "FAILED: $log" >&2; tail -5 "$log" >&2; exit 1; }
}

fresh_copy() { # engine: sets $db to a new copy of the engine's loaded database (a plain copy,
  # never hard links: engines append to their MANIFEST and log files in place)
  db=$dir/run-$1
  rm -rf "$db"
  cp -a "$dir/$1" "$db"
}

cold_limited() { # cmd... : runs cmd in the cgroup, on an empty page cache
  sync; echo 3 > /proc/sys/vm/drop_caches
  limited "$@"
}

echo "strata: $("$strata" --version 2>/dev/null || echo "$strata")"
echo "maxid1 $maxid1, $loaders loaders, $requesters requesters, request phases of ${REQUESTS:+$REQUESTS and ${LTM_REQUESTS:-$REQUESTS} requests per requester (cached and limited), not }${duration}s, raw logs in $out"
for e in "${engines[@]}"; do
  if [ "${SKIP_LOAD:-0}" = 1 ] && [ -d "$dir/$e" ]; then echo "reusing $dir/$e"; continue; fi
  echo "loading $e"
  run "$out/load-$e.log" "$e" --requests=0 --cache_size="$cache"
  grep -E '^load +:|^Efficiency load' "$out/load-$e.log" | sed 's/^/  /'
  echo "  du: $(du -sh "$dir/$e" | cut -f1)"
done

n=${#engines[@]}
for r in $(seq 1 "$rounds"); do
  for i in $(seq 0 $((n - 1))); do
    e=${engines[$(((i + r - 1) % n))]}
    echo "round $r: $e cached"
    fresh_copy "$e"
    # A limited run before dropped the page cache: read the files back so cached means cached.
    find "$db" -type f -exec cat {} + > /dev/null
    run "$out/cached-$e-$r.log" "$e" --use_existing_db=1 "${cached_phase[@]}" "${settle_after[@]}" \
      --cache_size="$cache"
    if [ "$ltm" = 1 ]; then
      echo "round $r: $e limited to $limit bytes"
      fresh_copy "$e"
      cold_limited "$strata" bench "${common[@]}" --engine="$e" --db="$db" --use_existing_db=1 \
        "${ltm_phase[@]}" "${settle_after[@]}" --cache_size="$ltm_cache" --linkbench_check=0 > "$out/ltm-$e-$r.log" 2>&1 ||
        { echo "FAILED: $out/ltm-$e-$r.log" >&2; tail -5 "$out/ltm-$e-$r.log" >&2; exit 1; }
      run "$out/ltmcheck-$e-$r.log" "$e" --use_existing_db=1 --requests=0 --cache_size="$cache"
    fi
    rm -rf "$db"; db=
  done
done
du -sh "${engines[@]/#/$dir/}" | tee "$out/du.txt"
python3 "$here/scripts/linkbench-summary.py" "$out" | tee "$out/summary.txt"
rm -rf "$dir"
