#!/usr/bin/env bash
# The test suite: formatting, lints, then every unit, model, crash and corruption test.
# Long versions are separate commands (see README.md, "Long tests").
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace
