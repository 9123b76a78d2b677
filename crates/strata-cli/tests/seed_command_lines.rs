//! The seed reports' own db_bench command lines (tests/fixtures/seeds/, copied from the seed
//! files that hold them: 000, 001 and 003) run through `strata bench` unchanged but for a small
//! `--num`, `--reads` and `--db`: every flag in them is accepted, and each flag strata maps or
//! ignores prints its note on stderr. A typo of one of them is still refused.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

/// Keys per run: enough to fill a memtable's worth of 800-byte values in no time in debug.
const NUM: &str = "2000";
/// Reads per thread of the read benchmarks (the 32-thread readrandom reads 32 x this).
const READS: &str = "200";

const SEEDS: [&str; 3] = ["000_7d9007b7c5760862.txt", "001_38c4bd6f23f540ac.txt", "003_493a79af1fd27351.txt"];

/// One db_bench invocation of a seed file: its arguments, `$var`s substituted from the
/// assignments before it on its line (and `$i`, seed 001's thread-count loop variable, as 4).
fn command_lines(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| l.contains("--benchmarks=")) {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let Some(at) = tokens.iter().position(|t| t.starts_with("./db_bench")) else { continue };
        let mut vars: HashMap<String, String> = HashMap::from([("i".to_string(), "4".to_string())]);
        for assignment in tokens[..at].iter().flat_map(|t| t.split(';')) {
            if let Some((k, v)) = assignment.split_once('=') {
                vars.insert(k.to_string(), v.to_string());
            }
        }
        let args = tokens[at + 1..].iter().map(|a| substitute(a, &vars)).collect();
        out.push(args);
    }
    out
}

fn substitute(arg: &str, vars: &HashMap<String, String>) -> String {
    match arg.split_once("=$") {
        Some((flag, var)) => format!("{flag}={}", vars.get(var).map_or("", String::as_str)),
        None => arg.to_string(),
    }
}

/// The line's arguments with the run's size and database replaced.
fn shrunk(args: &[String], db: &Path) -> Vec<String> {
    args.iter()
        .map(|a| match a.split_once('=').map(|(f, _)| f) {
            Some("--num") => format!("--num={NUM}"),
            Some("--reads") => format!("--reads={READS}"),
            Some("--db") => format!("--db={}", db.display()),
            _ => a.clone(),
        })
        .collect()
}

/// The flags `strata bench --help` lists as mapped or ignored with a note (its last section).
fn noted_flags() -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_strata")).args(["bench", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let (_, section) = help.split_once("with a note on stderr:").expect("the help lists the noted flags");
    section.split_whitespace().map(|f| f.trim_start_matches("--").to_string()).collect()
}

#[test]
fn every_seed_db_bench_line_runs_with_notes_for_what_strata_does_instead() {
    let noted = noted_flags();
    assert!(noted.iter().any(|f| f == "num_levels"), "{noted:?}");
    let tmp = tempfile::tempdir().unwrap();
    let mut runs = 0;
    let mut db = tmp.path().join("none");
    for seed in SEEDS {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seeds").join(seed);
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, args) in command_lines(&text).into_iter().enumerate() {
            // A script's later lines (--use_existing_db=1) run on the database its earlier one made.
            if !args.iter().any(|a| a == "--use_existing_db=1") {
                db = tmp.path().join(format!("{seed}-{n}"));
            }
            let args = shrunk(&args, &db);
            let out = Command::new(env!("CARGO_BIN_EXE_strata")).arg("bench").args(&args).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{seed}: strata bench {}\nstderr: {err}", args.join(" "));
            for arg in &args {
                let Some((name, value)) = arg.trim_start_matches("--").split_once('=') else { continue };
                if noted.iter().any(|f| f == name) {
                    let note = format!("strata bench: --{name}={value}: ");
                    assert!(err.contains(&note), "{seed}: no note for {arg}\nstderr: {err}");
                }
            }
            runs += 1;
        }
    }
    // 13 lines in seed 000 (WiredTiger's and RocksDB's scripts), 2 in 001, 2 in 003.
    assert_eq!(runs, 17);
}

#[test]
fn a_typo_of_a_db_bench_flag_is_still_refused() {
    for typo in ["--num_level=6", "--disable_seek_compation=1", "--memtable_rep=vector"] {
        let out = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(["bench", "--benchmarks=fillseq", "--num=10", typo])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{typo}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("unknown flag"), "{typo}: {err}");
    }
}

/// db_bench reads --compression_ratio=50 as 5000 random bytes per 100-byte fragment, of which
/// it keeps the first 100: values that do not compress. Here the table holding them is about as
/// large as the values, where the default ratio 0.5 halves them.
#[test]
fn compression_ratio_above_one_gives_incompressible_values_as_in_db_bench() {
    let tmp = tempfile::tempdir().unwrap();
    let sst_bytes = |ratio: &str| -> u64 {
        let db = tmp.path().join(ratio);
        let args = [
            "bench",
            "--benchmarks=fillseq,flush",
            "--num=2000",
            "--value_size=800",
            "--compression_type=snappy",
            "--min_level_to_compress=0",
            // Values in the tables, not in blob files (800 bytes would go there by default).
            "--min_blob_size=1000000",
        ];
        let out = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(args)
            .arg(format!("--compression_ratio={ratio}"))
            .arg(format!("--db={}", db.display()))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let files = std::fs::read_dir(&db).unwrap().map(|e| e.unwrap().path());
        files.filter(|p| p.extension().is_some_and(|e| e == "sst")).map(|p| p.metadata().unwrap().len()).sum()
    };
    let raw = 2000 * 800;
    let (incompressible, half) = (sst_bytes("50"), sst_bytes("0.5"));
    assert!(incompressible > raw, "ratio 50: {incompressible} bytes of tables for {raw} bytes of values");
    assert!(half < raw * 6 / 10, "ratio 0.5: {half} bytes of tables for {raw} bytes of values");
}
