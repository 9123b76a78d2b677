//! End-to-end runs of the insert benchmark at a tiny size, one per engine this build has, and
//! the refusals of a bad command line. Owns only tests.

use super::super::flags;

fn run(dir: &std::path::Path, extra: &[&str]) -> (anyhow::Result<()>, String) {
    let db = format!("--db={}", dir.display());
    let mut args = vec!["--benchmarks=insertbench", "--seed=1", "--compression_type=none", &db];
    args.extend_from_slice(extra);
    let f = flags::parse(&args).unwrap();
    let mut out = Vec::new();
    let r = super::run(&f, &mut out);
    (r, String::from_utf8(out).unwrap())
}

/// The number in the `Summary PHASE:` line right after the phase name.
fn summary_rows(out: &str, phase: &str) -> u64 {
    let line =
        out.lines().find(|l| l.starts_with(&format!("Summary {phase}: "))).unwrap_or_else(|| panic!("{out}"));
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}

/// Every phase on two clients, then the checker: every row counted where it should be, the
/// interval lines, CSV rows and efficiency lines there, and a rerun on the same database
/// carrying on from the last primary key.
fn assert_full_run(engine: &str) {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("ib.csv");
    let db = dir.path().join("db");
    let (r, out) = run(
        &db,
        &[
            &format!("--engine={engine}"),
            "--threads=2",
            "--ib_rows_l0=3000",
            "--ib_rows_l1=700",
            "--ib_query_seconds=1",
            "--stats_interval_seconds=1",
            &format!("--report_file={}", csv.display()),
        ],
    );
    r.unwrap_or_else(|e| panic!("{e:#}\n{out}"));
    assert_eq!(summary_rows(&out, "l.i0"), 6000, "{out}");
    assert_eq!(summary_rows(&out, "l.x"), 6000, "{out}");
    assert_eq!(summary_rows(&out, "l.i1"), 1400, "{out}");
    // Paced to 100 and 1000 rows/s per client for one second, 50 rows per insert: the first
    // insert is due at once, so 2 or 3 inserts (100 or 150 rows) at 100/s.
    let qr100 = summary_rows(&out, "qr100");
    assert!((100..=300).contains(&qr100), "{out}");
    let qr1000 = summary_rows(&out, "qr1000");
    assert!((1000..=2100).contains(&qr1000), "{out}");
    for phase in ["qr100", "qr1000"] {
        let line = out.lines().find(|l| l.starts_with(&format!("Summary {phase}: "))).unwrap();
        assert!(line.contains(" queries: ") && line.contains(" 10.0 entries/query"), "{line}");
        assert!(out.contains(&format!("Efficiency {phase} (per query): ops ")), "{out}");
        assert!(out.contains(&format!("interval {phase} ")), "{out}");
    }
    assert!(out.contains("Efficiency l.i0 (per row inserted): ops 6000 db_size "), "{out}");
    assert!(out.contains("Efficiency l.x (per row indexed): ops 6000 "), "{out}");
    let total = 6000 + 1400 + qr100 + qr1000;
    let checker = format!("checker: {total} rows; index entries: marketsegment {total}, registersegment {total}, pdc {total}; 0 missing, 0 extra, 0 undecodable: 0 mismatches");
    assert!(out.contains(&checker), "{checker}\n{out}");
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert!(rows.starts_with(super::monitor::CSV_HEADER) && rows.contains(",qr1000,"), "{rows}");
    let points = super::super::plot::parse_csv(&rows).unwrap();
    assert!(points.len() >= 5 && points.windows(2).all(|w| w[0].0 <= w[1].0), "{rows}");

    assert!(!out.contains("settle:"), "settling is asked for with --ib_settle: {out}");

    // Again on the same database: l.i1 carries on from each table's last primary key; then the
    // database settles (everything flushed, no compaction left) before the checker reads it.
    let again = ["--threads=2", "--ib_rows_l1=100", "--ib_phases=l.i1", "--use_existing_db", "--ib_settle"];
    let (r, out) = run(&db, &[&[&*format!("--engine={engine}")][..], &again[..]].concat());
    r.unwrap_or_else(|e| panic!("{e:#}\n{out}"));
    let settle = out.lines().find(|l| l.starts_with("settle: tables flushed and compactions finished in "));
    let settle = settle.unwrap_or_else(|| panic!("{out}"));
    let settled_mb: f64 =
        settle.split("; db ").nth(1).and_then(|t| t.split(' ').next()).unwrap().parse().unwrap();
    assert!(settled_mb > 0.0, "{settle}");
    assert!(out.contains(&format!("checker: {} rows; ", total + 200)), "{out}");
    assert!(out.contains(" 0 mismatches\n"), "{out}");
}

#[test]
fn insertbench_full_run_on_strata() {
    assert_full_run("strata");
}

#[cfg(feature = "heed")]
#[test]
fn insertbench_full_run_on_lmdb() {
    assert_full_run("heed");
}

#[cfg(feature = "rocksdb")]
#[test]
fn insertbench_full_run_on_rocksdb() {
    assert_full_run("rocksdb");
}

/// A load without l.x leaves rows without index entries: the checker fails the run; with
/// `--ib_check=0` nothing is checked.
#[test]
fn insertbench_fails_when_rows_lack_their_index_entries() {
    let dir = tempfile::tempdir().unwrap();
    let (r, out) = run(dir.path(), &["--ib_rows_l0=500", "--ib_phases=l.i0", "--ib_check=0"]);
    r.unwrap_or_else(|e| panic!("{e:#}\n{out}"));
    assert!(out.contains("checker: skipped"), "{out}");
    let (r, out) = run(dir.path(), &["--ib_phases=", "--use_existing_db"]);
    let err = r.unwrap_err().to_string();
    assert!(err.contains("insertbench checker: 500 rows, 1500 mismatches"), "{err}\n{out}");
    assert!(out.contains("  mismatch: table 0 row 1 has no marketsegment entry"), "{out}");
}

#[test]
fn insertbench_refuses_bad_command_lines_before_touching_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join("precious");
    std::fs::write(&keep, b"x").unwrap();
    let (r, _) = run(dir.path(), &["--engine=memory"]);
    assert!(r.unwrap_err().to_string().contains("not --engine=memory"));
    let (r, _) = run(dir.path(), &["--benchmarks=insertbench,fillseq"]);
    assert!(r.unwrap_err().to_string().contains("insertbench runs alone"));
    let (r, _) = run(dir.path(), &["--ib_data_min=30"]);
    assert!(r.unwrap_err().to_string().contains("--ib_data_min=30 is larger"));
    assert!(keep.exists(), "a refused run left the directory alone");
    for bad in ["--ib_phases=l.i1,l.i0", "--ib_phases=l.i0,l.i0", "--ib_phases=qr0", "--ib_phases=l.i2"] {
        assert!(flags::parse(&[bad]).is_err(), "{bad}");
    }
    let f = flags::parse(&["--ib_phases=l.i0, l.x,qr10"]).unwrap();
    assert_eq!(f.ib_phases, ["l.i0", "l.x", "qr10"]);
}
