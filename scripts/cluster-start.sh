#!/usr/bin/env bash
# Builds strata-server (release) and starts a three-node cluster on 127.0.0.1:7001-7003, each
# node's data, log and pid file under DIR/node<N> (default DIR: target/cluster), waits until the
# nodes answer, forms the cluster (`strata-server cluster init`) and prints node 1's status.
# A DIR that already holds a cluster is restarted as it was (init is refused and that is fine).
# Stop it with scripts/cluster-stop.sh [DIR].
#   scripts/cluster-start.sh [DIR]
# Environment: STRATA_SERVER (a binary to use instead of building one), HEARTBEAT_MS,
# ELECTION_TIMEOUT_MS (passed to every node; defaults are the binary's: 100 and 1000).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$here/target/cluster}
if [ -z "${STRATA_SERVER:-}" ]; then
    (cd "$here" && cargo build --release -p strata-server)
    STRATA_SERVER=$here/target/release/strata-server
fi
mkdir -p "$dir"
extra=()
[ -n "${HEARTBEAT_MS:-}" ] && extra+=(--heartbeat-ms "$HEARTBEAT_MS")
[ -n "${ELECTION_TIMEOUT_MS:-}" ] && extra+=(--election-timeout-ms "$ELECTION_TIMEOUT_MS")
members=()
for id in 1 2 3; do
    node=$dir/node$id
    addr=127.0.0.1:700$id
    members+=(--member "$id=$addr")
    mkdir -p "$node"
    if [ -f "$node/pid" ] && kill -0 "$(cat "$node/pid")" 2>/dev/null; then
        echo "node $id already running (pid $(cat "$node/pid"))"
        continue
    fi
    "$STRATA_SERVER" --id "$id" --listen "$addr" --dir "$node/data" "${extra[@]}" >"$node/log" 2>&1 &
    echo $! >"$node/pid"
    echo "node $id: pid $!, $addr, log $node/log"
done
for id in 1 2 3; do
    for _ in $(seq 100); do
        "$STRATA_SERVER" cluster status --endpoint 127.0.0.1:700$id >/dev/null 2>&1 && break
        sleep 0.1
    done
    "$STRATA_SERVER" cluster status --endpoint 127.0.0.1:700$id >/dev/null || {
        echo "node $id does not answer; see $dir/node$id/log" >&2
        exit 1
    }
done
"$STRATA_SERVER" cluster init --endpoint 127.0.0.1:7001 "${members[@]}" || echo "(init refused: the cluster exists already)"
for _ in $(seq 50); do
    status=$("$STRATA_SERVER" cluster status --endpoint 127.0.0.1:7001)
    echo "$status" | grep -q '"leader": null' || break
    sleep 0.1
done
echo "$status"
