#!/bin/bash
# Builds a 20M x 800 B strata database as the not-cached suite does (fillseq, 60 s overwrite)
# in a 2 GiB cgroup, then runs readrandom t=16 and samples every thread's stack with gdb.
set -e
. /work/main/scripts/lib-bench.sh
S=/work/main/target/release/strata
cgroup_setup strata-t16 2147483648
D=/tmp/t16/db
common="--num=20000000 --value_size=800 --key_size=16 --compression_type=snappy --compression_ratio=0.5 --cache_size=1073741824 --bloom_bits=10 --seed=1 --disable_wal=1"
if [ ! -d $D ]; then
  limited $S bench --engine=strata $common --benchmarks=fillseq --db=$D > /tmp/t16/fillseq.log 2>&1
  limited $S bench --engine=strata $common --benchmarks=overwrite --duration=60 --use_existing_db=1 --db=$D > /tmp/t16/overwrite.log 2>&1
fi
sync; echo 3 > /proc/sys/vm/drop_caches
limited $S bench --engine=strata $common --benchmarks=readrandom --threads=16 --duration=${SECS:-40} --use_existing_db=1 --db=$D ${EXTRA:-} > /tmp/t16/read-${TAG:-x}.log 2>&1 &
sleep ${WAIT:-12}
pid=$(pgrep -f "strata bench --engine=strata.*readrandom" | head -1)
for i in $(seq 1 ${SAMPLES:-6}); do
  gdb -p $pid -batch -ex "thread apply all bt 12" > /tmp/t16/stacks-${TAG:-x}-$i.txt 2>/dev/null || true
  sleep 3
done
wait
grep "^Summary" /tmp/t16/read-${TAG:-x}.log | cut -c1-250
