#!/usr/bin/env bash
# The long variants of crates/strata-server/tests/faults.rs: many kill -9 rounds of the leader
# under write load, and the linearizability check of random clients across many leader
# faults (kill -9 and isolation, alternately). ROUNDS (default 20) sets STRATA_FAULTS_ROUNDS,
# the number of faults in each test; a round takes about 2-3 s in a debug build. The short
# versions run with the normal test suite.
#   scripts/cluster-faults-long.sh [ROUNDS] [extra libtest args, e.g. a test name filter]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-20}
shift || true
cd "$here"
STRATA_FAULTS_ROUNDS=$rounds nice cargo test -p strata-server --test faults -- \
    --ignored --nocapture --test-threads=1 "$@"
