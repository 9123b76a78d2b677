#!/usr/bin/env bash
# Point reads and a sequential read of a database larger than the memory it may use: strata with
# mapped reads (the default), strata with `use_mmap_reads=false`, and RocksDB's db_bench (which
# reads with pread), each run in a memory cgroup after dropping the page cache, alternating for
# several rounds. bench/results/LEDGER.md ("Databases larger than memory (2026-11-26, afternoon)")
# has the figures, docs/performance.md ("Databases larger than memory") what they showed.
#
#   scripts/bench-larger-than-memory.sh [ROUNDS]
#   env: NUM (keys, default 10000000: 8 GB of 800-byte values), LIMIT (cgroup memory limit in
#        bytes, default 2 GiB), READS (point reads per pass, default 20000), SEQ_READS (default
#        2000000), BENCH_DIR (default /tmp/strata-larger-than-memory; needs ~2 x 8.5 GB),
#        STRATA (default target/release/strata), DB_BENCH (default /usr/bin/db_bench)
#
# Needs root (cgroups, drop_caches) and a memory controller (cgroup v2, or v1 mounted at
# /sys/fs/cgroup/memory). The databases are deleted at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-2}
num=${NUM:-10000000}
limit=${LIMIT:-2147483648}
reads=${READS:-20000}
seq_reads=${SEQ_READS:-2000000}
dir=${BENCH_DIR:-/tmp/strata-larger-than-memory}
strata=${STRATA:-$here/target/release/strata}
db_bench=${DB_BENCH:-/usr/bin/db_bench}
[ "$(id -u)" -eq 0 ] || { echo "needs root (memory cgroup, drop_caches)" >&2; exit 2; }
if [ ! -x "$db_bench" ]; then "$here/scripts/install-peers.sh"; fi
[ -x "$strata" ] || (cd "$here" && cargo build --release -p strata-kv-cli)
tuning=$(grep -v '^#' "$here/bench/rocksdb-tuning.flags" | tr '\n' ' ')

# A child cgroup of this shell's own, with the memory limit.
if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
  cg=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)/strata-ltm
  mkdir -p "$cg"; echo "$limit" > "$cg/memory.max"
elif [ -d /sys/fs/cgroup/memory ]; then
  cg=/sys/fs/cgroup/memory$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)/strata-ltm
  mkdir -p "$cg"; echo "$limit" > "$cg/memory.limit_in_bytes"
else
  echo "no memory cgroup controller found" >&2; exit 2
fi

limited() { # cmd... : runs cmd in the cgroup, on an empty page cache
  sync; echo 3 > /proc/sys/vm/drop_caches
  (echo $BASHPID > "$cg/cgroup.procs"; exec "$@")
}

common="--num=$num --value_size=800 --compression_type=none --cache_size=536870912 --seed=1"
mkdir -p "$dir"
trap 'rm -rf "$dir/strata" "$dir/rocksdb"' EXIT
echo "loading $num x 800 B into $dir (unlimited memory)"
"$strata" bench --db="$dir/strata" --benchmarks=fillseq $common --disable_wal=1 2>/dev/null | grep '^fillseq  '
"$db_bench" $tuning --db="$dir/rocksdb" --benchmarks=fillseq $common --disable_wal=1 2>/dev/null |
  tr '\r' '\n' | grep '^fillseq  '
du -sh "$dir/strata" "$dir/rocksdb"
echo "memory limit $limit bytes, block cache 512 MiB; each line: ops/s of pass 1, pass 2"

measure() { # label bench-name reads engine flags...
  local label=$1 name=$2 n=$3 engine=$4; shift 4
  local out
  if [ "$engine" = strata ]; then
    out=$(limited "$strata" bench --db="$dir/strata" --use_existing_db=1 --reads="$n" $common "$@" 2>&1)
  else
    out=$(limited "$db_bench" $tuning --db="$dir/rocksdb" --use_existing_db=1 --reads="$n" $common "$@" 2>&1)
  fi
  echo "$label: $(echo "$out" | tr '\r' '\n' | grep -E "^$name +:" | awk '{print $5}' | tr '\n' ' ')"
}

for r in $(seq 1 "$rounds"); do
  echo "round $r"
  measure "  readrandom strata mapped  " readrandom "$reads" strata --benchmarks=readrandom,readrandom
  measure "  readrandom strata pread   " readrandom "$reads" strata --benchmarks=readrandom,readrandom --options=use_mmap_reads=false
  measure "  readrandom rocksdb        " readrandom "$reads" rocksdb --benchmarks=readrandom,readrandom
  measure "  readseq    strata mapped  " readseq "$seq_reads" strata --benchmarks=readseq
  measure "  readseq    strata pread   " readseq "$seq_reads" strata --benchmarks=readseq --options=use_mmap_reads=false
  measure "  readseq    rocksdb        " readseq "$seq_reads" rocksdb --benchmarks=readseq
done
