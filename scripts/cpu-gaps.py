#!/usr/bin/env python3
"""How long a busy thread loses its CPU on this machine, with no database involved.

Runs PROCESSES busy loops (default 2, one per vCPU here) for SECONDS (default 30) that read the
clock back to back, and prints per loop how many times two reads were more than GAP_US apart
(default 500 us), how many of those exceeded 100 us and 200 us, and the longest, plus the steal
time /proc/stat counted meanwhile. A small GAP_US (40) shows the floor under a P99.99; the
default, the floor under a Max. A write that takes
longer than a gap this probe sees is strata's doing; one that takes as long may be the machine's
(docs/performance.md, "What the machine decides: tails and noise"; the runs are in
bench/results/LEDGER.md, "The machine's floor under a write's Max").

With WRITE set to 1, one more process writes 1 MiB O_DIRECT blocks to a file in /var/tmp
(rewriting its first 1 GiB over and over) for as long, as a database's flush and compaction
would: on this project's VM the host throttles the whole VM on a 100 ms grid once it uses too
much CPU, and its disk writes count. So every gap's end is also printed as its phase on
CLOCK_MONOTONIC's 100 ms grid: throttling shows as gaps that all end at one phase.

usage: scripts/cpu-gaps.py [SECONDS] [PROCESSES] [GAP_US] [WRITE]
"""

import collections
import mmap
import multiprocessing
import os
import sys
import tempfile
import time

GRID_NS = 100_000_000


def probe(seconds, gap_ns, out):
    end = time.monotonic_ns() + int(seconds * 1e9)
    last = time.monotonic_ns()
    gaps = []
    while last < end:
        now = time.monotonic_ns()
        if now - last > gap_ns:
            gaps.append(((now - last) / 1e6, (now % GRID_NS) // 1_000_000))
        last = now
    out.put(sorted(gaps))


def write_direct(seconds):
    block = mmap.mmap(-1, 1 << 20)  # page-aligned, as O_DIRECT needs
    block.write(b"x" * (1 << 20))
    fd, path = tempfile.mkstemp(dir="/var/tmp", prefix="cpu-gaps.")
    os.close(fd)
    fd = os.open(path, os.O_WRONLY | os.O_DIRECT)
    os.unlink(path)
    end = time.monotonic() + seconds
    offset = 0
    while time.monotonic() < end:
        os.pwrite(fd, block, offset)
        offset = (offset + (1 << 20)) % (1 << 30)
    os.close(fd)


def steal_ticks():
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[8])  # cpu user nice system idle iowait irq softirq steal


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
    processes = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    gap_us = float(sys.argv[3]) if len(sys.argv) > 3 else 500.0
    write = len(sys.argv) > 4 and sys.argv[4] == "1"
    out = multiprocessing.Queue()
    steal_before = steal_ticks()
    workers = [multiprocessing.Process(target=probe, args=(seconds, int(gap_us * 1000), out)) for _ in range(processes)]
    if write:
        workers.append(multiprocessing.Process(target=write_direct, args=(seconds,)))
    for w in workers:
        w.start()
    results = [out.get() for _ in range(processes)]
    for w in workers:
        w.join()
    steal_ms = (steal_ticks() - steal_before) * 1000 // 100  # USER_HZ is 100 on Linux
    for i, gaps in enumerate(results):
        lengths = sorted(g for g, _ in gaps)
        longest = ", ".join(f"{g:.2f}" for g in lengths[-8:])
        over_100 = sum(1 for g in lengths if g > 0.1)
        over_200 = sum(1 for g in lengths if g > 0.2)
        phases = collections.Counter(p for g, p in gaps if g > 2.0).most_common(3)
        print(
            f"loop {i}: {len(gaps)} gaps over {gap_us:g} us in {seconds:g} s "
            f"({over_100} over 100 us, {over_200} over 200 us); longest (ms): {longest}; "
            f"commonest end phases of the gaps over 2 ms (ms on the 100 ms grid: count): "
            + (", ".join(f"{p}: {n}" for p, n in phases) or "none")
        )
    print(f"steal time counted meanwhile: {steal_ms} ms")


if __name__ == "__main__":
    main()
