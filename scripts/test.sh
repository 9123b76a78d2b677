#!/usr/bin/env bash
# The test suite: formatting, lints, then every unit, model, crash and corruption test.
# Long versions are separate commands (see README.md, "Long tests").
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
# The engine's layering: no module imports one above it (db over the components over fs over util).
scripts/module-deps.sh --up
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace
# The engine's kill points, compiled out of every build above: each fires where it is placed and
# leaves a database that recovers, and the stress tool's kill-point loop reports them.
cargo test -p strata-kv --features kill-points --test kill_points
cargo test -p strata-stress --features kill-points --test stress a_short_kill_point_loop
# The optional Rust peer engines of `strata bench` (heed, fjall, redb, sled). The RocksDB engine
# compiles RocksDB from source (~20 minutes on 2 cores), so only scripts/bench-vs-peers.sh builds it.
cargo clippy -p strata-kv-cli --all-targets --features heed,fjall,redb,sled -- -D warnings
cargo test -p strata-kv-cli --features heed,fjall,redb,sled --bins engine
# The replicated benchmark's engine for a strata cluster (`strata bench --engine=cluster`, feature
# `cluster`: the CLI links strata-server only then). Its etcd engine needs protoc and a running
# etcd: scripts/bench-replication.sh builds and runs it.
cargo clippy -p strata-kv-cli --all-targets --features cluster -- -D warnings
cargo test -p strata-kv-cli --features cluster --bins replicated
