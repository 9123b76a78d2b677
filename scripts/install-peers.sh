#!/usr/bin/env bash
# Installs RocksDB's db_bench (Debian package rocksdb-tools) for side-by-side benchmarks.
# The other peers (LevelDB, WiredTiger, LMDB) run through peerbench, which
# scripts/build-peerbench.sh installs the libraries for and compiles (bench/peers/peerbench.cc).
set -euo pipefail
if command -v db_bench >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
$sudo apt-get update -qq || true
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq rocksdb-tools
