#!/bin/sh
# Builds peerbench (bench/peers/peerbench.cc: LevelDB 1.23, WiredTiger 3.2.1 btree/LSM and LMDB
# 0.9.24 behind db_bench's flags and output lines) against Debian's packages, installing them if
# they are missing. `strata bench compare --engines=...,leveldb,lmdb` runs it.
#   scripts/build-peerbench.sh            # -> target/peerbench
#   PEERBENCH=/tmp/peerbench scripts/build-peerbench.sh
set -e
here=$(cd "$(dirname "$0")/.." && pwd)
out=${PEERBENCH:-$here/target/peerbench}
pkgs="libleveldb-dev libwiredtiger-dev liblmdb-dev libsnappy-dev g++"
missing=""
for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
  echo "installing$missing"
  $sudo apt-get update -qq >/dev/null || true
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
fi
mkdir -p "$(dirname "$out")"
g++ -std=c++17 -O2 -Wall -Wextra -o "$out" "$here/bench/peers/peerbench.cc" \
    -lleveldb -lwiredtiger -llmdb -lsnappy -lpthread
echo "built $out"
