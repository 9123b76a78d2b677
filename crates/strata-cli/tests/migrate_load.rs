//! docs/migrating.md's data path: what RocksDB's `ldb dump` and `ldb scan` print (`key ==>
//! value` lines, and with `--hex` `0xKEY ==> 0xVALUE` in ldb's uppercase hex, then `ldb dump`'s
//! closing `Keys in range: N`) loads with `strata load` as it is. The fixtures are written by
//! hand after ldb's output format (`PrintKeyValue`: `"%s ==> %s\n"`, `Slice::ToString(hex)`
//! uppercase, `0x` prefix with --hex; `DBDumperCommand` ends with `"Keys in range: %lld\n"`).

use std::path::Path;
use std::process::Command;

fn strata(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_strata")).args(args).output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

fn ok(args: &[&str]) -> String {
    let (code, out, err) = strata(args);
    assert_eq!(code, 0, "strata {args:?}\nstdout: {out}\nstderr: {err}");
    out
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name).display().to_string()
}

#[test]
fn ldb_dump_text_output_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let d = format!("--db={}", tmp.path().join("db").display());
    let file = format!("--file={}", fixture("ldb_dump.txt"));
    assert_eq!(
        ok(&["load", &d, "--create_if_missing", &file, "--json"]),
        "{\"entries\":4,\"ok\":true,\"op\":\"load\"}\n"
    );
    assert_eq!(
        ok(&["dump", &d]),
        "apple ==> red\nbanana ==> yellow fruit\ncherry ==> \nkey with spaces ==> value = with == signs\n"
    );
}

#[test]
fn ldb_dump_hex_output_loads_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let d = format!("--db={}", tmp.path().join("db").display());
    let file = format!("--file={}", fixture("ldb_dump_hex.txt"));
    ok(&["load", &d, "--create-if-missing", &file]);
    assert_eq!(ok(&["get", &d, "--hex", "00ff"]), "0x0102\n");
    assert_eq!(ok(&["get", &d, "apple"]), "red\n");
    assert_eq!(ok(&["get", &d, "a ==> b"]), "0x78203d3d3e2079\n", "a separator inside hex is data");
    assert_eq!(ok(&["get", &d, "empty"]), "\n");
    assert_eq!(ok(&["get", &d, "--hex", "0x0A"]), "0x0d0a\n");
    // strata's own --hex dump is the same format in lowercase, and reads back the same.
    let (code, _, _) = strata(&["get", &d, "missing"]);
    assert_eq!(code, 1);
    let dump = ok(&["dump", &d, "--hex"]);
    let ldb: String = std::fs::read_to_string(fixture("ldb_dump_hex.txt")).unwrap();
    let mut ldb_sorted: Vec<String> =
        ldb.lines().filter(|l| l.contains(" ==> ")).map(str::to_lowercase).collect();
    ldb_sorted.sort();
    assert_eq!(dump.lines().collect::<Vec<_>>(), ldb_sorted);
}

#[test]
fn a_line_that_is_not_a_dump_line_names_the_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.txt");
    std::fs::write(&bad, "a ==> 1\nKeys in range: one\n").unwrap();
    let d = format!("--db={}", tmp.path().join("db").display());
    let (code, _, err) = strata(&["load", &d, "--create_if_missing", &format!("--file={}", bad.display())]);
    assert_eq!(code, 2);
    assert!(err.contains("bad.txt:2"), "{err}");
}
