#!/usr/bin/env bash
# Every workload of the seeds (shared workloads.md) through
# `strata bench compare`: strata and RocksDB's db_bench back to back, alternating, ROUNDS rounds
# each, medians and ratios per workload. Writes the raw tables to OUT (default
# target/bench-all.txt) and the throughput-over-time pictures for fillrandom and overwrite to
# docs/img/. Takes roughly 20-30 minutes on 2 cores at ROUNDS=3.
# (compare's default --engines=strata,db_bench; scripts/bench-vs-peers.sh runs the same workloads
# on strata, RocksDB 10.4.2 and the peerbench engines.)
#   scripts/bench-all.sh [ROUNDS] [WORKLOAD...]
#   workloads: fillseq fillrandom overwrite readrandom readscale rmw syncwrite rangescan
#              readwhilewriting pattern
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
shift || true
workloads=("$@")
[ ${#workloads[@]} -gt 0 ] || workloads=(fillseq fillrandom overwrite readrandom readscale rmw syncwrite rangescan readwhilewriting pattern)
strata=${STRATA:-$here/target/release/strata}
out=${OUT:-$here/target/bench-all.txt}
command -v db_bench >/dev/null 2>&1 || "$here/scripts/install-peers.sh"
[ -x "$strata" ] || (cd "$here" && cargo build --release -p strata-kv-cli)
mkdir -p "$here/docs/img" "$(dirname "$out")"
big="--num=1000000 --value_size=800"

compare() { # title, compare args...
  local title=$1; shift
  { echo; echo "### $title"; echo '```'; echo "strata bench compare --rounds=$rounds $*"; } | tee -a "$out"
  "$strata" bench compare --rounds="$rounds" "$@" 2>&1 | grep -v '^\s*$' | tee -a "$out"
  echo '```' | tee -a "$out"
}

run() {
  case $1 in
    fillseq) compare fillseq -- --benchmarks=fillseq $big --compression_type=snappy --disable_wal=1 --threads=1 ;;
    fillrandom) compare fillrandom --plot="$here/docs/img/fillrandom.svg" -- --benchmarks=fillrandom,compact $big \
        --compression_type=snappy --disable_wal=1 ;;
    overwrite) compare overwrite --load=fillseq --plot="$here/docs/img/overwrite.svg" -- --benchmarks=overwrite $big \
        --compression_type=snappy --disable_wal=1 ;;
    readrandom)
      for t in 1 2 4 8 16 32; do
        compare "readrandom threads=$t" --load=fillseq -- --benchmarks=readrandom $big --compression_type=none \
          --disable_wal=1 --threads=$t --reads=$((200000 / t))
      done ;;
    readscale)
      for t in 1 2 4 8 16 32; do
        compare "readscale threads=$t" --load=fillseq -- --benchmarks=readrandom --num=2000000 --value_size=100 \
          --compression_type=none --cache_size=4000000000 --disable_wal=1 --threads=$t --reads=$((400000 / t))
      done ;;
    rmw)
      compare "rmw updaterandom" --load=fillseq -- --benchmarks=updaterandom --value_size=8 --num=1000000 --disable_wal=1
      compare "rmw mergerandom" -- --benchmarks=mergerandom --merge_operator=uint64add --value_size=8 --num=1000000 \
        --disable_wal=1 ;;
    syncwrite)
      for t in 1 8; do
        compare "syncwrite threads=$t" -- --benchmarks=fillrandom --sync=1 --disable_wal=0 --value_size=100 \
          --num=20000 --threads=$t
      done ;;
    rangescan)
      for t in 1 2; do
        compare "rangescan threads=$t" --load=fillseq -- --benchmarks=seekrandom --seek_nexts=20 $big \
          --compression_type=none --disable_wal=1 --threads=$t --reads=$((100000 / t))
      done ;;
    readwhilewriting) compare readwhilewriting --load=fillseq -- --benchmarks=readwhilewriting $big \
        --compression_type=none --threads=2 --reads=200000 --benchmark_write_rate_limit=2000000 ;;
    pattern)
      { echo; echo "### pattern (strata only)"; echo '```'; echo "strata bench --pattern=forestdb --duration=10 --num=200000"; } | tee -a "$out"
      "$strata" bench --pattern=forestdb --duration=10 --num=200000 2>&1 | grep -v '^\s*$' | tail -20 | tee -a "$out"
      echo '```' | tee -a "$out" ;;
    *) echo "unknown workload $1" >&2; exit 2 ;;
  esac
}

echo "# strata bench compare, $(date -u +%Y-%m-%dT%H:%MZ), rounds=$rounds" >> "$out"
for w in "${workloads[@]}"; do run "$w"; done
