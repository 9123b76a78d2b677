#!/usr/bin/env bash
# The replication table of BENCHMARKS.md (issue 38): a three-node strata cluster against a
# three-member etcd 3.4 cluster, both on this machine's loopback, through `strata bench`
# (bench/replicated): rput (each put acknowledged by a majority, fsynced) at 1, 8 and 64 clients
# and rget (linearizable gets over a preloaded key space) at 8 and 64 clients, in alternating
# rounds (strata, etcd, strata, etcd, ...), each cluster fresh for its round and stopped before
# the other starts, so the two never share the machine. Prints the medians and the ratios.
#   scripts/bench-replication.sh [ROUNDS]          (default 3)
#   env: DURATION     seconds per benchmark (default 10)
#        PUT_CLIENTS  client counts of rput (default "1 8 64")
#        GET_CLIENTS  client counts of rget (default "8 64")
#        KEY_SPACE    keys drawn from 0..KEY_SPACE, all preloaded for rget (default 100000)
#        VALUE_SIZE   bytes per value (default 100)
#        ENGINES      "cluster etcd" (default), or one of them
#        OUT          raw outputs and summary.md (default bench/results/replication-<UTC date>)
#        WORK         cluster data directories (default target/bench-replication; wiped per round)
#        STRATA       the strata binary (default target/release/strata, built with
#                     --features cluster,etcd, which needs protoc: Debian protobuf-compiler)
#        STRATA_SERVER the strata-server binary (default target/release/strata-server, built here)
# The strata cluster is started by scripts/cluster-start.sh DIR (nodes on 127.0.0.1:7001-7003,
# their Raft timing the binary's defaults: heartbeat 100 ms, election timeout 1000 ms, as etcd's)
# and stopped by scripts/cluster-stop.sh DIR; etcd by scripts/etcd-cluster.sh start|stop DIR.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

ROUNDS=${1:-3}
DURATION=${DURATION:-10}
PUT_CLIENTS=${PUT_CLIENTS:-"1 8 64"}
GET_CLIENTS=${GET_CLIENTS:-"8 64"}
KEY_SPACE=${KEY_SPACE:-100000}
VALUE_SIZE=${VALUE_SIZE:-100}
ENGINES=${ENGINES:-"cluster etcd"}
OUT=${OUT:-bench/results/replication-$(date -u +%Y-%m-%d)}
WORK=${WORK:-target/bench-replication}
STRATA=${STRATA:-target/release/strata}
STRATA_SERVER=${STRATA_SERVER:-$here/target/release/strata-server}
export STRATA_SERVER
cluster_ports=(7001 7002 7003)
etcd_ports=(2379 22379 32379)

log() { echo "bench-replication: $*" >&2; }

build() {
    local features=etcd
    if [[ " $ENGINES " == *" cluster "* ]]; then
        if [[ ! -d crates/strata-server ]]; then
            log "crates/strata-server is not in this tree (the server branch is not merged): run with ENGINES=etcd"
            exit 2
        fi
        features=cluster,etcd
        if [[ "$STRATA_SERVER" == "$here/target/release/strata-server" ]]; then
            nice cargo build --release -p strata-server
        fi
    fi
    if [[ "$STRATA" == target/release/strata ]]; then
        nice cargo build --release -p strata-kv-cli --features "$features"
    fi
}

# Pids of the processes listening on the given TCP ports of 127.0.0.1.
listeners() {
    local p
    for p in "$@"; do
        # No listener is no match, not a failure.
        ss -Hltnp "sport = :$p" 2>/dev/null | grep -o 'pid=[0-9]*' | cut -d= -f2 || true
    done | sort -u
}

refuse_busy_ports() {
    local busy
    busy=$(listeners "${cluster_ports[@]}" "${etcd_ports[@]}")
    if [[ -n "$busy" ]]; then
        log "ports 7001-7003 or 2379/22379/32379 are taken (pids: $(echo "$busy" | tr '\n' ' ')); stop those first"
        exit 2
    fi
}

start_engine() {
    local engine=$1 dir=$2
    rm -rf "$dir"
    mkdir -p "$dir"
    case "$engine" in
        etcd) scripts/etcd-cluster.sh start "$dir" ;;
        cluster) scripts/cluster-start.sh "$dir" >&2 ;;
    esac
}

stop_cluster() {
    local dir=$1 pids pid comm
    scripts/cluster-stop.sh "$dir" >&2 || true
    # A node cluster-stop.sh did not know (a pid file lost): the strata-server on those ports.
    pids=$(listeners "${cluster_ports[@]}")
    for pid in $pids; do
        comm=$(cat "/proc/$pid/comm" 2>/dev/null || true)
        # Only the nodes this script started; anything else on those ports is left alone.
        if [[ "$comm" == strata-server* ]]; then
            kill "$pid" 2>/dev/null || true
        fi
    done
    for _ in $(seq 1 100); do
        [[ -z "$(listeners "${cluster_ports[@]}")" ]] && return 0
        sleep 0.1
    done
    log "strata-server nodes still listen on 7001-7003 after 10 s"
    return 1
}

stop_engine() {
    local engine=$1 dir=$2
    case "$engine" in
        etcd) scripts/etcd-cluster.sh stop "$dir" ;;
        cluster) stop_cluster "$dir" ;;
    esac
}

current=""
current_dir=""
cleanup() {
    if [[ -n "$current" ]]; then
        stop_engine "$current" "$current_dir" || true
    fi
}
trap cleanup EXIT

# One benchmark against the running cluster; its output goes to OUT/ENGINE-BENCH-cCLIENTS-rROUND.txt.
bench() {
    local engine=$1 name=$2 clients=$3 round=$4 extra=${5:-}
    local file="$OUT/$engine-$name-c$clients-r$round.txt"
    log "round $round: $engine $name, $clients clients"
    # shellcheck disable=SC2086  # extra is zero or one flag
    "$STRATA" bench --engine="$engine" --benchmarks="$name" --threads="$clients" \
        --duration="$DURATION" --key_space="$KEY_SPACE" --value_size="$VALUE_SIZE" \
        --seed="$round" $extra >"$file" 2>"$file.stderr" ||
        log "$engine $name at $clients clients failed (exit $?): see $file and $file.stderr"
}

run_round() {
    local engine=$1 round=$2 dir="$WORK/$1" c first=1
    start_engine "$engine" "$dir"
    current=$engine
    current_dir=$dir
    for c in $PUT_CLIENTS; do
        bench "$engine" rput "$c" "$round"
    done
    for c in $GET_CLIENTS; do
        # The first rget preloads the key space; the later ones read what it put.
        if [[ $first == 1 ]]; then
            bench "$engine" rget "$c" "$round"
            first=0
        else
            bench "$engine" rget "$c" "$round" --use_existing_db
        fi
    done
    stop_engine "$engine" "$dir"
    current=""
}

# Field of a run's output: ops (ops/sec of the result line), p99 (Percentiles line), max (Min/Max line).
field() {
    local what=$1 file=$2
    case "$what" in
        ops) awk '$2 == ":" && $4 == "micros/op" { print $5; exit }' "$file" ;;
        p99) awk '$1 == "Percentiles:" { print $7; exit }' "$file" ;;
        max) awk '$1 == "Min:" { print $6; exit }' "$file" ;;
        errors) grep -o '[0-9]* errors)' "$file" | head -1 | cut -d' ' -f1 ;;
    esac
}

# Median of the numbers on stdin (the mean of the middle two for an even count).
median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

med() {
    local what=$1 engine=$2 name=$3 clients=$4 f
    for f in "$OUT/$engine-$name-c$clients"-r*.txt; do
        if [[ -f "$f" ]]; then
            field "$what" "$f"
        fi
    done | median
}

ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.2fx", a / b }'
}

summary() {
    local name c e
    printf '| benchmark | clients |'
    for e in $ENGINES; do printf ' %s ops/s | %s P99 us | %s Max us |' "$e" "$e" "$e"; done
    [[ "$ENGINES" == "cluster etcd" ]] && printf ' ops/s cluster/etcd | P99 etcd/cluster |'
    printf '\n|---|---:|'
    for e in $ENGINES; do printf -- '---:|---:|---:|'; done
    [[ "$ENGINES" == "cluster etcd" ]] && printf -- '---:|---:|'
    printf '\n'
    for name in rput rget; do
        local counts=$PUT_CLIENTS
        [[ $name == rget ]] && counts=$GET_CLIENTS
        for c in $counts; do
            printf '| %s | %s |' "$name" "$c"
            for e in $ENGINES; do
                printf ' %s | %s | %s |' "$(med ops "$e" "$name" "$c")" "$(med p99 "$e" "$name" "$c")" "$(med max "$e" "$name" "$c")"
            done
            if [[ "$ENGINES" == "cluster etcd" ]]; then
                printf ' %s | %s |' "$(ratio "$(med ops cluster "$name" "$c")" "$(med ops etcd "$name" "$c")")" \
                    "$(ratio "$(med p99 etcd "$name" "$c")" "$(med p99 cluster "$name" "$c")")"
            fi
            printf '\n'
        done
    done
    printf '\nMedians of %s alternating rounds (%s), %s s per benchmark, %s-byte values, %s keys;\n' \
        "$ROUNDS" "$ENGINES" "$DURATION" "$VALUE_SIZE" "$KEY_SPACE"
    printf 'one operation in flight per client; P99 and Max in microseconds. Raw outputs beside this file.\n'
    local errs
    errs=$(for f in "$OUT"/*-r*.txt; do field errors "$f"; done | awk '{ s += $1 } END { print s + 0 }')
    printf 'Errors over all runs: %s.\n' "$errs"
}

main() {
    build
    refuse_busy_ports
    mkdir -p "$OUT" "$WORK"
    {
        echo "# scripts/bench-replication.sh $ROUNDS ($(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD))"
        echo "DURATION=$DURATION PUT_CLIENTS=\"$PUT_CLIENTS\" GET_CLIENTS=\"$GET_CLIENTS\" KEY_SPACE=$KEY_SPACE VALUE_SIZE=$VALUE_SIZE ENGINES=\"$ENGINES\""
        echo "CPU: $(nproc) x $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
        echo "etcd: $(etcd --version 2>/dev/null | sed -n 1p)"
        echo "load before: $(uptime)"
    } >"$OUT/run.txt"
    local round engine
    for round in $(seq 1 "$ROUNDS"); do
        for engine in $ENGINES; do
            run_round "$engine" "$round"
        done
    done
    echo "load after: $(uptime)" >>"$OUT/run.txt"
    summary | tee "$OUT/summary.md"
}

main
