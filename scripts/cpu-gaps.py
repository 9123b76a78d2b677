#!/usr/bin/env python3
"""How long a busy thread loses its CPU on this machine, with no database involved.

Runs PROCESSES busy loops (default 2, one per vCPU here) for SECONDS (default 30) that read the
clock back to back, and prints per loop how many times two reads were more than GAP_US apart
(default 500 us), how many of those exceeded 100 us and 200 us, and the longest, plus the steal
time /proc/stat counted meanwhile. A small GAP_US (40) shows the floor under a P99.99; the
default, the floor under a Max. A write that takes
longer than a gap this probe sees is strata's doing; one that takes as long may be the machine's
(docs/performance.md, "The machine's floor under a write's Max").

usage: scripts/cpu-gaps.py [SECONDS] [PROCESSES] [GAP_US]
"""

import multiprocessing
import sys
import time

def probe(seconds, gap_ns, out):
    end = time.perf_counter_ns() + int(seconds * 1e9)
    last = time.perf_counter_ns()
    gaps = []
    while last < end:
        now = time.perf_counter_ns()
        if now - last > gap_ns:
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
    gap_us = float(sys.argv[3]) if len(sys.argv) > 3 else 500.0
    out = multiprocessing.Queue()
    steal_before = steal_ticks()
    workers = [multiprocessing.Process(target=probe, args=(seconds, int(gap_us * 1000), out)) for _ in range(processes)]
    for w in workers:
        w.start()
    results = [out.get() for _ in workers]
    for w in workers:
        w.join()
    steal_ms = (steal_ticks() - steal_before) * 1000 // 100  # USER_HZ is 100 on Linux
    for i, gaps in enumerate(results):
        longest = ", ".join(f"{g:.2f}" for g in gaps[-8:])
        over_100 = sum(1 for g in gaps if g > 0.1)
        over_200 = sum(1 for g in gaps if g > 0.2)
        print(
            f"loop {i}: {len(gaps)} gaps over {gap_us:g} us in {seconds:g} s "
            f"({over_100} over 100 us, {over_200} over 200 us); longest (ms): {longest}"
        )
    print(f"steal time counted meanwhile: {steal_ms} ms")


if __name__ == "__main__":
    main()
