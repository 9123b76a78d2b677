# Sourced by the benchmark scripts that run engines in a memory cgroup (bench-insert.sh,
# bench-forestdb.sh): `cgroup_setup NAME LIMIT` makes a child cgroup of this shell's own with
# LIMIT bytes of memory (v2 or v1), removed at exit; `limited cmd...` runs cmd in it. Without
# root or a memory controller the runs are unlimited and it says so ($ltm is 0).
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
