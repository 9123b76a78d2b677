#!/usr/bin/env bash
# Runs strata and RocksDB's db_bench back to back with the same db_bench flags, alternating the
# engines for several rounds, and prints every result line plus the median ops/sec per engine
# and their ratio. RocksDB gets the tuning flags in bench/rocksdb-tuning.flags.
#
#   scripts/bench-vs-rocksdb.sh [ROUNDS] [WORKLOAD...]
#   workloads: fillseq fillrandom overwrite readrandom (default: all four)
#   env: DB_BENCH (default /usr/bin/db_bench), STRATA (default target/release/strata),
#        SCALE (divide --num by this; default 1), BENCH_DIR (default /tmp/strata-vs-rocksdb)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
shift || true
workloads=("$@")
[ ${#workloads[@]} -gt 0 ] || workloads=(fillseq fillrandom overwrite readrandom)
scale=${SCALE:-1}
num=$((1000000 / scale))
strata=${STRATA:-$here/target/release/strata}
db_bench=${DB_BENCH:-/usr/bin/db_bench}
dir=${BENCH_DIR:-/tmp/strata-vs-rocksdb}
if [ ! -x "$db_bench" ]; then "$here/scripts/install-peers.sh"; fi
[ -x "$strata" ] || (cd "$here" && cargo build --release -p strata-kv-cli)
tuning=$(grep -v '^#' "$here/bench/rocksdb-tuning.flags" | tr '\n' ' ')

# name | flags of a load step run first (empty: none) | flags of the measured step
spec() {
  local common="--num=$num --value_size=800 --disable_wal=1"
  case $1 in
    fillseq) echo "||--benchmarks=fillseq $common --compression_type=snappy --threads=1" ;;
    fillrandom) echo "||--benchmarks=fillrandom,compact $common --compression_type=snappy" ;;
    overwrite) echo "|--benchmarks=fillseq $common --compression_type=snappy|--benchmarks=overwrite $common --compression_type=snappy --use_existing_db=1" ;;
    readrandom) echo "|--benchmarks=fillseq $common --compression_type=none|--benchmarks=readrandom $common --compression_type=none --use_existing_db=1 --threads=1 --reads=$((200000 / scale))" ;;
    *) echo "unknown workload $1" >&2; exit 2 ;;
  esac
}

run_engine() { # engine flags...
  local engine=$1; shift
  if [ "$engine" = strata ]; then "$strata" bench "$@"; else "$db_bench" $tuning "$@"; fi
}

declare -A results
for w in "${workloads[@]}"; do
  IFS='|' read -r _ load measure <<<"$(spec "$w")"
  for round in $(seq 1 "$rounds"); do
    for engine in strata rocksdb; do
      db="$dir/$engine-$w"
      rm -rf "$db"
      if [ -n "$load" ]; then run_engine "$engine" $load --db="$db" >/dev/null 2>&1; fi
      out=$(run_engine "$engine" $measure --db="$db" 2>&1 | grep -E 'micros/op' | grep -v -e '^compact' -e '^benchmark')
      size=$(du -sk "$db" | cut -f1)
      echo "round $round $engine $w: $out  [du ${size} KB]"
      ops=$(awk '{for(i=1;i<=NF;i++) if($i=="ops/sec") print $(i-1)}' <<<"$out" | head -1)
      results[$w,$engine]+="$ops "
      rm -rf "$db"
    done
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2))}'; }
echo
printf '%-12s %14s %14s %8s\n' workload "strata ops/s" "rocksdb ops/s" ratio
for w in "${workloads[@]}"; do
  s=$(echo "${results[$w,strata]}" | median)
  r=$(echo "${results[$w,rocksdb]}" | median)
  printf '%-12s %14s %14s %8s\n' "$w" "$s" "$r" "$(awk -v s="$s" -v r="$r" 'BEGIN {printf "%.2fx", s / r}')"
done
