#!/usr/bin/env python3
"""How long a busy thread loses its CPU on this machine, with no database involved.

Runs PROCESSES busy loops (default 2, one per vCPU here) for SECONDS (default 30) that read the
clock back to back, and prints per loop how many times two reads were more than 0.5 ms apart and
the longest such gaps, plus the steal time /proc/stat counted meanwhile. A write that takes
longer than a gap this probe sees is strata's doing; one that takes as long may be the machine's
(docs/performance.md, "The machine's floor under a write's Max").

usage: scripts/cpu-gaps.py [SECONDS] [PROCESSES]
"""

import multiprocessing
import sys
import time

GAP_NS = 500_000


def probe(seconds, out):
    end = time.perf_counter_ns() + int(seconds * 1e9)
    last = time.perf_counter_ns()
    gaps = []
    while last < end:
        now = time.perf_counter_ns()
        if now - last > GAP_NS:
            gaps.append((now - last) / 1e6)
        last = now
    out.put(sorted(gaps))


def steal_ticks():
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[8])  # cpu user nice system idle iowait irq softirq steal


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
    processes = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    out = multiprocessing.Queue()
    steal_before = steal_ticks()
    workers = [multiprocessing.Process(target=probe, args=(seconds, out)) for _ in range(processes)]
    for w in workers:
        w.start()
    results = [out.get() for _ in workers]
    for w in workers:
        w.join()
    steal_ms = (steal_ticks() - steal_before) * 1000 // 100  # USER_HZ is 100 on Linux
    for i, gaps in enumerate(results):
        longest = ", ".join(f"{g:.1f}" for g in gaps[-8:])
        print(f"loop {i}: {len(gaps)} gaps over 0.5 ms in {seconds:.0f} s; longest (ms): {longest}")
    print(f"steal time counted meanwhile: {steal_ms} ms")


if __name__ == "__main__":
    main()
