//! `strata bench compare` through the real binary: the `--` separator survives the subcommand
//! parser, strata re-executes itself, and the table comes out. Runs against RocksDB's db_bench
//! only where it is installed (scripts/install-peers.sh); elsewhere that test is a no-op.

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
    let row = out.lines().find(|l| l.starts_with("readrandom ") && l.contains("ops/sec")).expect(&out);
    assert!(row.trim_end().ends_with('x'), "a ratio: {row}");
    assert!(out.contains("P99.99 us") && out.contains("(after the step)     DB MB"), "{out}");
    assert!(out.contains("round 1/1 rocksdb load: fillseq"), "{out}");
}

#[test]
fn missing_db_bench_names_the_install_script() {
    let (ok, _, err) = strata(&["bench", "compare", "--db_bench=/nonexistent", "--", "--benchmarks=fillseq"]);
    assert!(!ok && err.contains("scripts/install-peers.sh"), "{err}");
}
