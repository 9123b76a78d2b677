#!/usr/bin/env bash
# Stops the nodes scripts/cluster-start.sh started under DIR (default target/cluster): SIGTERM to
# each pid in DIR/node<N>/pid (the node shuts Raft down cleanly), then waits up to 10 s for each.
# The data stays; cluster-start.sh with the same DIR restarts the same cluster.
#   scripts/cluster-stop.sh [DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$here/target/cluster}
for pidfile in "$dir"/node*/pid; do
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    if kill -TERM "$pid" 2>/dev/null; then
        for _ in $(seq 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "pid $pid did not stop in 10 s; sending SIGKILL" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
        echo "stopped $(basename "$(dirname "$pidfile")") (pid $pid)"
    fi
    rm -f "$pidfile"
done
