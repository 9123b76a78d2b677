//! `strata bench compare` through the real binary: the `--` separator survives the subcommand
//! parser, strata re-executes itself, and the table comes out. Runs against RocksDB's db_bench
//! only where it is installed (scripts/install-peers.sh); elsewhere that test is a no-op. The
//! peerbench engines are covered by the unit tests (their command lines), not run here.

use std::process::Command;

const DB_BENCH: &str = "/usr/bin/db_bench";

fn strata(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_strata")).args(args).output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn compare_prints_a_side_by_side_table() {
    if !std::path::Path::new(DB_BENCH).is_file() {
        eprintln!("skipped: {DB_BENCH} is not installed");
        return;
    }
    let (ok, out, err) = strata(&[
        "bench",
        "compare",
        "--rounds=1",
        "--load=fillseq",
        "--",
        "--benchmarks=readrandom",
        "--num=1000",
        "--compression_type=none",
    ]);
    assert!(ok, "{out}\n{err}");
    let rows = table_rows(&out);
    assert_eq!(rows.len(), 2, "{out}");
    assert_eq!(rows[0].split_whitespace().take(2).collect::<Vec<_>>(), ["readrandom", "strata"], "{out}");
    assert!(rows[1].trim_start().starts_with("db_bench ") && rows[1].contains('x'), "a ratio: {}", rows[1]);
    assert!(out.contains("P99.99 us") && out.contains("RSS MB") && out.contains("write B/op"), "{out}");
    assert!(out.contains("round 1/1 db_bench load") && out.contains(": fillseq"), "{out}");
    assert!(out.contains("readrandom: strata / best other engine = "), "{out}");
    let costs = table_rows_after(&out, 1);
    assert!(costs[0].trim_end().ends_with(" Summary"), "{out}");
    assert!(costs[1].trim_end().ends_with(" wait4"), "db_bench prints no Summary line: {out}");
}

/// The lines of the (first) text table between its header and the blank line after it.
fn table_rows(out: &str) -> Vec<&str> {
    table_rows_after(out, 0)
}

/// The rows of the `n`th (from 0) text table: the throughput table, then the cost table.
fn table_rows_after(out: &str, n: usize) -> Vec<&str> {
    let header = out.lines().enumerate().filter(|(_, l)| l.starts_with("benchmark ")).nth(n).unwrap().0;
    out.lines().skip(header + 1).take_while(|l| !l.is_empty()).collect()
}

#[test]
fn two_built_in_engines_side_by_side_with_rss_and_writes() {
    let (ok, out, err) = strata(&[
        "bench",
        "compare",
        "--engines=strata,memory",
        "--rounds=1",
        "--",
        "--benchmarks=fillseq",
        // CPU time is counted in clock ticks (10 ms): enough keys that strata's step spans several.
        "--num=30000",
    ]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("--engine=memory"), "the command lines are shown: {out}");
    let rows = table_rows(&out);
    assert_eq!(rows.len(), 2, "{out}");
    let first: Vec<&str> = rows[0].split_whitespace().collect();
    assert_eq!((first[0], first[1], first[3]), ("fillseq", "strata", "1.00x"), "{out}");
    let costs = table_rows_after(&out, 1);
    let cost: Vec<&str> = costs[0].split_whitespace().collect();
    let rss: f64 = cost[4].parse().unwrap();
    assert!(rss > 0.0, "peak RSS of the child: {}", costs[0]);
    let cpu: f64 = cost[8].parse().unwrap();
    assert!(cpu > 0.0 && cost.last() == Some(&"Summary"), "strata's own Summary line: {}", costs[0]);
    assert_eq!(costs.len(), 2, "{out}");
    assert!(rows[1].trim_start().starts_with("memory "), "{out}");
    assert!(out.contains("fillseq: strata / best other engine = "), "{out}");

    let (ok, md, _) = strata(&[
        "bench",
        "compare",
        "--engines=memory",
        "--rounds=1",
        "--markdown",
        "--",
        "--benchmarks=fillseq",
        "--num=100",
    ]);
    assert!(
        ok && md.contains("| benchmark | engine | ops/sec |") && md.contains("| fillseq | memory |"),
        "{md}"
    );
}

#[test]
fn missing_db_bench_names_the_install_script() {
    let (ok, _, err) = strata(&["bench", "compare", "--db_bench=/nonexistent", "--", "--benchmarks=fillseq"]);
    assert!(!ok && err.contains("scripts/install-peers.sh"), "{err}");
}
