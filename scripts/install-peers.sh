#!/usr/bin/env bash
# Installs what side-by-side benchmarks need from Debian: RocksDB's db_bench (rocksdb-tools) and
# clang's libclang (libclang-dev), which the rocksdb feature of strata-cli needs to generate its
# bindings (`cargo build --release -p strata-kv-cli --features rocksdb`).
# The other peers (LevelDB, WiredTiger, LMDB) run through peerbench, which
# scripts/build-peerbench.sh installs the libraries for and compiles (bench/peers/peerbench.cc).
set -euo pipefail
missing=()
command -v db_bench >/dev/null 2>&1 || missing+=(rocksdb-tools)
dpkg -s libclang-dev >/dev/null 2>&1 || missing+=(libclang-dev clang)
[ ${#missing[@]} -gt 0 ] || exit 0
if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
$sudo apt-get update -qq || true
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
