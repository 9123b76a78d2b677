#!/usr/bin/env bash
# A three-member etcd 3.4 cluster on loopback, the peer strata's replicated benchmark measures
# against (issue 38; scripts/bench-replication.sh starts and stops it between rounds).
#   scripts/etcd-cluster.sh start DIR   start it (data in DIR/etcd{1,2,3}, logs DIR/etcd{1,2,3}.log)
#                                       and wait until every member answers `endpoint health`
#   scripts/etcd-cluster.sh stop DIR    stop the members started from DIR (their pids are in
#                                       DIR/etcd{1,2,3}.pid), waiting until they have exited
#   scripts/etcd-cluster.sh wipe DIR    stop, then delete the data directories
# Client ports 2379, 22379, 32379; peer ports 2380, 22380, 32380, all on 127.0.0.1.
# Installs Debian's etcd-server (and etcd-client for etcdctl) with apt-get if `etcd` is missing.
# Every durability setting is etcd's default: the WAL is fsynced before a proposal is
# acknowledged (there is no switch to turn that off in 3.4 except --unsafe-no-fsync, not given),
# snapshots every 100000 entries, heartbeat 100 ms, election timeout 1000 ms.
# env: ETCD, ETCDCTL   the binaries (default: etcd and etcdctl on PATH)
set -euo pipefail

cmd=${1:-}
dir=${2:-}
if [[ -z "$cmd" || -z "$dir" ]]; then
    echo "usage: $0 start|stop|wipe DIR" >&2
    exit 2
fi
ETCD=${ETCD:-etcd}
ETCDCTL=${ETCDCTL:-etcdctl}
names=(etcd1 etcd2 etcd3)
client_ports=(2379 22379 32379)
peer_ports=(2380 22380 32380)
endpoints="127.0.0.1:2379,127.0.0.1:22379,127.0.0.1:32379"

install_if_missing() {
    if command -v "$ETCD" >/dev/null && command -v "$ETCDCTL" >/dev/null; then
        return
    fi
    echo "etcd-cluster: installing Debian's etcd-server and etcd-client" >&2
    # Debian's package starts no daemon here (no systemd in a container); on a host with systemd
    # it would start one on 2379: stop it, or these members cannot bind.
    DEBIAN_FRONTEND=noninteractive apt-get install -y etcd-server etcd-client >&2
}

# Whether the member whose pid file is $1 is running.
running() {
    [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

start() {
    install_if_missing
    mkdir -p "$dir"
    local cluster="" i
    for i in 0 1 2; do
        cluster+="${cluster:+,}${names[$i]}=http://127.0.0.1:${peer_ports[$i]}"
    done
    for i in 0 1 2; do
        local n=${names[$i]}
        if running "$dir/$n.pid"; then
            echo "etcd-cluster: $n already runs (pid $(cat "$dir/$n.pid"))" >&2
            continue
        fi
        # `new` for a fresh data dir; etcd ignores the initial-cluster flags once it has one.
        "$ETCD" --name "$n" --data-dir "$dir/$n" \
            --listen-client-urls "http://127.0.0.1:${client_ports[$i]}" \
            --advertise-client-urls "http://127.0.0.1:${client_ports[$i]}" \
            --listen-peer-urls "http://127.0.0.1:${peer_ports[$i]}" \
            --initial-advertise-peer-urls "http://127.0.0.1:${peer_ports[$i]}" \
            --initial-cluster "$cluster" --initial-cluster-token strata-bench-etcd \
            --initial-cluster-state new --logger zap \
            >>"$dir/$n.log" 2>&1 &
        echo $! >"$dir/$n.pid"
    done
    for _ in $(seq 1 60); do
        if ETCDCTL_API=3 "$ETCDCTL" --endpoints="$endpoints" --command-timeout=2s endpoint health >/dev/null 2>&1; then
            echo "etcd-cluster: healthy at $endpoints (data in $dir)" >&2
            return 0
        fi
        for i in 0 1 2; do
            if ! running "$dir/${names[$i]}.pid"; then
                echo "etcd-cluster: ${names[$i]} exited; the end of $dir/${names[$i]}.log:" >&2
                tail -n 20 "$dir/${names[$i]}.log" >&2
                stop
                return 1
            fi
        done
        sleep 0.5
    done
    echo "etcd-cluster: not healthy after 30 s; see $dir/etcd*.log" >&2
    stop
    return 1
}

stop() {
    local i pid
    for i in 0 1 2; do
        local f="$dir/${names[$i]}.pid"
        if running "$f"; then
            kill "$(cat "$f")" 2>/dev/null || true
        fi
    done
    for i in 0 1 2; do
        local f="$dir/${names[$i]}.pid"
        [[ -f "$f" ]] || continue
        pid=$(cat "$f")
        for _ in $(seq 1 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "etcd-cluster: ${names[$i]} (pid $pid) ignored SIGTERM for 10 s; killing it" >&2
            kill -9 "$pid" 2>/dev/null || true
        fi
        rm -f "$f"
    done
}

case "$cmd" in
    start) start ;;
    stop) stop ;;
    wipe)
        stop
        rm -rf "${dir:?}/etcd1" "${dir:?}/etcd2" "${dir:?}/etcd3"
        ;;
    *)
        echo "usage: $0 start|stop|wipe DIR" >&2
        exit 2
        ;;
esac
