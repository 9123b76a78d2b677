# Sourced by the benchmark scripts (bench-insert.sh, bench-forestdb.sh, bench-linkbench.sh,
# bench-not-cached.sh), after they set $here to the repository:
# `peers_strata [PATH]` prints PATH, or the strata binary with RocksDB and LMDB built in
# (`--features rocksdb,heed`, in target/peers), building it (and installing its packages) when
# it is missing. `cgroup_setup NAME LIMIT` makes a child cgroup of this shell's own with LIMIT
# bytes of memory (v2 or v1), removed at exit; `limited cmd...` runs cmd in it. Without root or
# a memory controller the runs are unlimited and it says so ($ltm is 0).

peers_strata() { # [path]
  local bin=${1:-$here/target/peers/release/strata}
  if [ ! -x "$bin" ]; then
    echo "building $bin (RocksDB 10.4.2 from source: ~30 minutes on 2 cores the first time)" >&2
    "$here/scripts/install-peers.sh" >&2
    (cd "$here" && CARGO_TARGET_DIR=$here/target/peers cargo build --release -p strata-kv-cli --features rocksdb,heed) >&2
  fi
  echo "$bin"
}
cgroup_setup() { # name limit
  local name=$1 limit=$2
  ltm=1
  if [ "$(id -u)" -ne 0 ]; then
    echo "not root: no memory cgroup, runs are unlimited" >&2
    ltm=0
  elif [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
    cg=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)/$name
    mkdir -p "$cg"; echo "$limit" > "$cg/memory.max"
  elif [ -d /sys/fs/cgroup/memory ]; then
    cg=/sys/fs/cgroup/memory$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)/$name
    mkdir -p "$cg"; echo "$limit" > "$cg/memory.limit_in_bytes"
  else
    echo "no memory cgroup controller: runs are unlimited" >&2
    ltm=0
  fi
  # The cgroup is the script's: removed at exit (it is empty once every run has ended).
  trap 'if [ "$ltm" = 1 ]; then rmdir "$cg" 2> /dev/null || true; fi' EXIT
}

limited() { # cmd... : runs cmd in the cgroup when there is one
  if [ "$ltm" = 1 ]; then
    (echo $BASHPID > "$cg/cgroup.procs"; exec "$@")
  else
    "$@"
  fi
}
