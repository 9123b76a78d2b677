#!/usr/bin/env python3
"""Summarises the raw logs of scripts/bench-linkbench.sh: per memory setting and engine, the
median over rounds of the request phase's total ops/s, the P99 of GET_LINKS_LIST and ADD_LINK,
KB written, disk reads and CPU per request and the database size after the run (and, when the
run settled afterwards, `--linkbench_settle_after`, the KB written per request counting the
settling's flush and compactions, and the settled size), and the
checker's mismatches summed over every run that checked (runs in the cgroup skip the checker; a
run outside it checks their copy of the database, `ltmcheck-*`); then each peer's ratios to
strata.

    scripts/linkbench-summary.py DIR
"""
import glob
import os
import re
import statistics
import sys


def parse(path):
    text = open(path).read()
    row = {}
    for line in text.splitlines():
        f = line.split()
        if line.startswith("TOTAL "):
            row["ops"] = float(f[2])
        elif line.startswith("GET_LINKS_LIST "):
            row["p99_list"] = float(f[4])
        elif line.startswith("ADD_LINK "):
            row["p99_add"] = float(f[4])
    eff = re.search(r"^Efficiency requests.*$", text, re.M)
    if eff:
        e = eff.group(0)
        num = lambda name: float(re.search(name + r" ([0-9.]+)", e).group(1))
        row["wkb"] = num("wKB/op")
        row["reads"] = num("disk reads/op")
        row["cpu"] = num("cpu us/op")
        row["db_mb"] = num("db_size")
    settled = re.search(r"^Efficiency requests, then settled.*$", text, re.M)
    if settled:
        e = settled.group(0)
        row["wkb_settled"] = float(re.search(r"wKB/op ([0-9.]+)", e).group(1))
        row["db_settled"] = float(re.search(r"db_size ([0-9.]+)", e).group(1))
    m = re.search(r" (\d+) count mismatches", text)
    row["mismatches"] = int(m.group(1)) if m else None
    return row


def main(d):
    runs = {}
    for path in sorted(glob.glob(os.path.join(d, "*-*-*.log"))):
        kind, engine, rnd = os.path.basename(path)[:-4].rsplit("-", 2)
        runs.setdefault((kind, engine), []).append((int(rnd), parse(path)))
    cols = [("ops", "ops/s", "{:.0f}"), ("p99_list", "P99 list us", "{:.0f}"),
            ("p99_add", "P99 add us", "{:.0f}"), ("wkb", "wKB/op", "{:.3f}"),
            ("reads", "reads/op", "{:.3f}"), ("cpu", "cpu us/op", "{:.1f}"),
            ("db_mb", "db MB", "{:.0f}"), ("wkb_settled", "settled wKB", "{:.3f}"),
            ("db_settled", "settled MB", "{:.0f}")]
    for kind in ("cached", "ltm"):
        engines = [e for (k, e) in runs if k == kind]
        if not engines:
            continue
        print(f"{kind}: medians of {max(len(runs[(kind, e)]) for e in engines)} rounds")
        print(f"{'engine':<10}" + "".join(f"{c[1]:>12}" for c in cols) + f"{'mismatches':>12}")
        med = {}
        for e in sorted(engines, key=lambda e: (e != "strata", e)):
            rows = [r for _, r in sorted(runs[(kind, e)])]
            med[e] = {}
            for key, _, _ in cols:
                vals = [r[key] for r in rows if key in r]
                # Every run is on its own copy of the loaded database, so its size after the run
                # is one sample like the rest (it was the last run's while runs shared one).
                med[e][key] = statistics.median(vals) if vals else None
            # Limited runs skip the checker; a run outside the cgroup checks their copies after.
            checks = rows if kind == "cached" else [r for _, r in runs.get(("ltmcheck", e), [])]
            checked = [r["mismatches"] for r in checks if r["mismatches"] is not None]
            mism = f"{sum(checked)} in {len(checked)}" if checked else "not run"
            print(f"{e:<10}" + "".join(
                f"{(fmt.format(med[e][key]) if med[e][key] is not None else 'n/a'):>12}"
                for key, _, fmt in cols) + f"{mism:>12}")
        if "strata" in med:
            for e in med:
                if e == "strata":
                    continue
                s, p = med["strata"], med[e]
                ratio = lambda k: (s[k] / p[k]) if s.get(k) and p.get(k) else float("nan")
                print(f"  strata / {e}: ops/s {ratio('ops'):.2f}x, P99 list {ratio('p99_list'):.2f}, "
                      f"P99 add {ratio('p99_add'):.2f}, wKB/op {ratio('wkb'):.2f}, db size {ratio('db_mb'):.2f}, "
                      f"settled wKB/op {ratio('wkb_settled'):.2f}, settled db size {ratio('db_settled'):.2f}")
        print()
    for path in sorted(glob.glob(os.path.join(d, "check-*.log"))):
        line = next((l for l in open(path) if l.startswith("checker")), "no checker line")
        print(f"final {os.path.basename(path)[6:-4]}: {line.strip()}")


if __name__ == "__main__":
    main(sys.argv[1])
