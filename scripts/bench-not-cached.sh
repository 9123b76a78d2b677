#!/usr/bin/env bash
# The not-cached suite: every engine on a database at least four times larger than the memory
# it may use. One `strata bench compare` runs it all: each engine, in each round, in a fresh
# directory, runs the steps below one after the other as child processes, every child inside a
# memory cgroup of LIMIT bytes (page cache included) and every step on a dropped page cache;
# the engine that goes first rotates per round. compare prints the medians of the rounds as two
# tables per step (throughput and latency; what each operation cost: disk bytes read and
# written, disk reads, CPU, context switches, database size after and peak during the step).
#
#   scripts/bench-not-cached.sh
#   env: NUM           keys (default 20000000: 20M x 800-byte values, 16 GB before compression)
#        STEP_SECONDS  length of every timed step (--duration; default 120)
#        LIMIT         the cgroup's memory limit in bytes (default 2 GiB for 20M keys, in
#                      proportion for another NUM); it should be at most a quarter of the
#                      smallest database: the script prints the sizes and warns if it is not
#        CACHE         block cache bytes (default 1 GiB; scale it with NUM and LIMIT)
#        ROUNDS        rounds per engine (default 2)
#        ENGINES       default strata,rocksdb,wiredtiger-btree,wiredtiger-lsm,lmdb (compare's
#                      names; leveldb and db_bench run too)
#        STRATA        the strata binary that runs compare and the strata engine (default
#                      target/release/strata; built if missing)
#        STRATA_PEERS  a strata binary built with `--features rocksdb,heed`, which runs the
#                      rocksdb engine: RocksDB 10.4.2 release (default target/peers/release/
#                      strata, built if missing: ~30 minutes of C++ the first time)
#        PEERBENCH     WiredTiger btree and LSM, LMDB (default target/peerbench; built with
#                      scripts/build-peerbench.sh if missing)
#        BENCH_DIR     where the databases go, one at a time (default /tmp/strata-not-cached;
#                      needs ~20 GB free at 20M keys: LMDB does not compress)
#        PROBE_SECONDS the disk alone is read (4 KiB at random with O_DIRECT, as many threads
#                      as the step) for this long before and after every read step (default 5;
#                      0: no probes), and tables.md ends with a line of those rates per step:
#                      this machine's virtual disk changes several times over within an hour,
#                      so a read step is only comparable with the rate the disk gave it
#        INTERLEAVE    1: run each step on every engine before the next step (compare's
#                      --interleave), so the engines' read steps meet the disk minutes apart
#                      rather than half an hour; every engine's database must fit at once
#                      (strata and LMDB at 20M keys: ~46 GB). Default 0: one engine at a time
#        OUT           results (default bench/results/not-cached-DATE): compare.txt (all that
#                      compare printed: each run's line, then the tables), tables.md (the
#                      markdown tables), setup.txt (machine, versions, flags, limit and the
#                      database sizes), logs/ (every child's command line and full output)
#
# The steps (in this order, on one database per engine and round):
#   fillseq          loads NUM keys (not timed by --duration: every engine writes all its keys)
#   overwrite        random overwrites for STEP_SECONDS
#   readrandom t=1, t=2, t=16   point reads for STEP_SECONDS at 1, 2 and 16 threads
#   seekrandom       --seek_nexts=20 (a seek and 20 nexts per operation) for STEP_SECONDS
#   readwhilewriting 2 reader threads for STEP_SECONDS, one writer held to 2 MB/s (as
#                    scripts/bench-vs-peers.sh)
#   fillrandom       on an emptied directory: random keys drawn from NUM for STEP_SECONDS
#   compact          a full compaction of that database; its DB MB is the size after it
# Every step gets the same flags: --num=NUM --value_size=800 --key_size=16
# --compression_type=snappy --compression_ratio=0.5 --cache_size=1073741824 (1 GiB block cache;
# WiredTiger's cache) --bloom_bits=10 --seed=1 --disable_wal=1 (as the peers' suite's write
# workloads). Each engine compresses with snappy where it has it (strata, RocksDB, WiredTiger);
# LMDB has no compression, cache or bloom knobs. RocksDB also gets bench/rocksdb-tuning.flags
# (compare adds them). --duration means the same everywhere: random writes and reads run for it
# whatever --num, --reads and --writes say; fillseq and compact ignore it.
#
# Figures: strata (and the rocksdb engine, which runs inside strata bench) and peerbench print
# each benchmark's own Summary line, the process measuring itself around the benchmark; db_bench
# prints none and is measured from outside (wait4, open and close included). The cost table's
# last column says which; docs/cli.md ("Comparing engines") has every definition. Disk reads
# are the machine's: run nothing else meanwhile.
#
# Needs root (cgroup, drop_caches) and a memory controller (cgroup v2, or v1 mounted at
# /sys/fs/cgroup/memory). At 20M keys an engine's round is its load, seven steps of STEP_SECONDS and a
# compaction, about 20 minutes: two rounds of five engines take hours.
# A smoke run (of the mechanics: 512 MiB holds these small databases, and a smaller limit has the
# OOM killer stop engines whose 1 GiB caches fill; at 512 MiB WiredTiger LSM's still may, and
# compare reports it and goes on):
#   NUM=200000 STEP_SECONDS=3 LIMIT=536870912 ROUNDS=1 OUT=/tmp/nc scripts/bench-not-cached.sh
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
num=${NUM:-20000000}
secs=${STEP_SECONDS:-120}
rounds=${ROUNDS:-2}
engines=${ENGINES:-strata,rocksdb,wiredtiger-btree,wiredtiger-lsm,lmdb}
# 2 GiB for 20M keys (a quarter of the ~9 GB the compressing engines write), in proportion.
limit=${LIMIT:-$((2147483648 * num / 20000000))}
cache=${CACHE:-1073741824}
strata=${STRATA:-$here/target/release/strata}
strata_peers=${STRATA_PEERS:-}
. "$here/scripts/lib-bench.sh"
peerbench=${PEERBENCH:-$here/target/peerbench}
dir=${BENCH_DIR:-/tmp/strata-not-cached}
out=${OUT:-$here/bench/results/not-cached-$(date -u +%Y-%m-%d)}
has() { [[ ",$engines," == *",$1,"* ]]; }

[ "$(id -u)" -eq 0 ] || { echo "needs root (memory cgroup, drop_caches)" >&2; exit 2; }
[ -x "$strata" ] || (cd "$here" && cargo build --release -p strata-kv-cli)
programs=()
if has rocksdb && ! "$strata" bench --engine=rocksdb --help >/dev/null 2>&1; then
  programs=(--program=rocksdb="$(peers_strata "$strata_peers")")
fi
if has leveldb || has wiredtiger-btree || has wiredtiger-lsm || has lmdb; then
  [ -x "$peerbench" ] || PEERBENCH="$peerbench" "$here/scripts/build-peerbench.sh"
fi
if has db_bench; then command -v db_bench >/dev/null 2>&1 || "$here/scripts/install-peers.sh"; fi

# A child cgroup of this shell's own, with the memory limit; compare puts every child in it.
cgroup_setup strata-not-cached "$limit"
[ "$ltm" = 1 ] || { echo "the suite needs a memory cgroup" >&2; exit 2; }
mkdir -p "$out/logs" "$dir"
# Replaces cgroup_setup's trap, and removes the cgroup as it did.
trap 'rm -rf "$dir"/compare-*; rmdir "$dir" "$cg" 2>/dev/null || true' EXIT

mb() { awk -v b="$1" 'BEGIN { printf "%.0f", b / 1048576 }'; }
# 16-byte keys and 800-byte values. The engines that compress (snappy, values compressible to
# half) took 440-465 bytes a key after fillseq in a smoke run of 200,000 keys; LMDB 1,310.
raw=$((num * 816))
compressed=$((num * 450))
common=(--num="$num" --value_size=800 --key_size=16 --compression_type=snappy --compression_ratio=0.5
  --cache_size="$cache" --bloom_bits=10 --seed=1 --disable_wal=1)
steps=(
  --step=--benchmarks=fillseq
  --step="--benchmarks=overwrite --duration=$secs"
  --step="--benchmarks=readrandom --threads=1 --duration=$secs"
  --step="--benchmarks=readrandom --threads=2 --duration=$secs"
  --step="--benchmarks=readrandom --threads=16 --duration=$secs"
  --step="--benchmarks=seekrandom --seek_nexts=20 --duration=$secs"
  --step="--benchmarks=readwhilewriting --threads=2 --benchmark_write_rate_limit=2000000 --duration=$secs"
  --step="--benchmarks=fillrandom --use_existing_db=0 --duration=$secs"
  --step=--benchmarks=compact
)
cmd=("$strata" bench compare --engines="$engines" "${programs[@]}" --peerbench="$peerbench"
  --rounds="$rounds" --db="$dir" --cgroup="$cg" --drop_caches --device_probe="${PROBE_SECONDS:-5}" $([ "${INTERLEAVE:-0}" = 1 ] && echo --interleave) --log_dir="$out/logs" --markdown
  "${steps[@]}" -- "${common[@]}")

{
  echo "# not-cached suite, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "$("$strata" --version 2>/dev/null || echo "$strata"); checkout at $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
  [ ${#programs[@]} -eq 0 ] || echo "rocksdb engine: $("$strata_peers" --version 2>/dev/null || echo '?') ($strata_peers)"
  echo "$(nproc) cores; $(free -g | awk '/^Mem:/ {print $2 " GiB"}'); kernel $(uname -r);" \
    "$(dpkg-query -W -f='${Package} ${Version}; ' libwiredtiger0 liblmdb0 libsnappy1v5 2>/dev/null)"
  echo "keys: $num x 816 B = $(mb $raw) MB raw, about $(mb $compressed) MB compressed (450 B a key)"
  echo "memory cgroup: $cg, limit $(mb "$limit") MB ($limit bytes), block cache $(mb "$cache") MB;" \
    "raw / limit = $(awk -v a=$raw -v b="$limit" 'BEGIN { printf "%.1f", a / b }')," \
    "compressed estimate / limit = $(awk -v a=$compressed -v b="$limit" 'BEGIN { printf "%.1f", a / b }')"
  echo "steps of $secs s, $rounds rounds, engines $engines"
  echo "command: ${cmd[*]}"
} | tee "$out/setup.txt"
if [ $((limit * 4)) -gt $compressed ]; then
  echo "WARNING: the limit is more than a quarter of the estimated size of a compressed database" \
    "($(mb $((compressed / 4))) MB): set LIMIT=$((compressed / 4)) or less for 4x" | tee -a "$out/setup.txt"
fi

rc=0
"${cmd[@]}" 2>&1 | tee "$out/compare.txt" || rc=$?
sed -n '/^| benchmark |/,$p' "$out/compare.txt" > "$out/tables.md"

# The real sizes: every engine's database after fillseq (compare's run lines, `[du N MB ...]`).
sizes=$(sed -n 's/^round [0-9]*\/[0-9]* \([^ ]*\) step 1 *: *fillseq .*\[du \([0-9.]*\) MB.*/\1 \2/p' "$out/compare.txt" |
  sort -k1,1 -k2,2n | awk '!seen[$1]++')
if [ -n "$sizes" ]; then
  {
    echo "database size after fillseq (smallest of the rounds), and how many times the limit it is:"
    awk -v l="$limit" '{ printf "  %-18s %10.0f MB = %5.2f x the limit\n", $1, $2, $2 * 1048576 / l }' <<<"$sizes"
    smallest=$(awk 'NR == 1 || $2 < m { m = $2; e = $1 } END { print e, m }' <<<"$sizes")
    read -r e m <<<"$smallest"
    if awk -v l="$limit" -v m="$m" 'BEGIN { exit !(l * 4 > m * 1048576) }'; then
      echo "WARNING: the limit exceeds a quarter of the smallest database ($e, $m MB): these runs were not" \
        "4x larger than memory for every engine"
    fi
  } | tee -a "$out/setup.txt"
fi
echo "results in $out" >&2
exit "$rc"
