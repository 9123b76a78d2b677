//! `strata deleterange` through the real binary: the range is gone (end exclusive), keys around
//! it stay, hex keys and column families work as for `delete`, and an empty range is not an
//! error.

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

fn db_flag(dir: &Path) -> String {
    format!("--db={}", dir.display())
}

#[test]
fn deleterange_deletes_the_half_open_range() {
    let tmp = tempfile::tempdir().unwrap();
    let d = db_flag(&tmp.path().join("db"));
    for k in ["a", "b", "c", "d"] {
        ok(&["put", &d, "--create-if-missing", k, "v"]);
    }
    assert_eq!(ok(&["deleterange", &d, "b", "d"]), "OK\n");
    assert_eq!(ok(&["scan", &d]), "a ==> v\nd ==> v\n");
    // An empty range is a no-op; `delete-range` is the same command; --json reports like delete.
    assert_eq!(ok(&["delete-range", &d, "z", "a"]), "OK\n");
    assert_eq!(
        ok(&["deleterange", &d, "--json", "x", "y"]),
        "{\"entries\":1,\"ok\":true,\"op\":\"deleterange\"}\n"
    );
    // Hex keys: [0x61, 0x62) is ["a", "b").
    ok(&["deleterange", &d, "--hex", "0x61", "62"]);
    assert_eq!(ok(&["scan", &d]), "d ==> v\n");
    let (code, _, _) = strata(&["get", &d, "a"]);
    assert_eq!(code, 1, "a is gone");
}

#[test]
fn deleterange_stays_in_its_column_family() {
    let tmp = tempfile::tempdir().unwrap();
    let d = db_flag(&tmp.path().join("db"));
    ok(&["put", &d, "--create-if-missing", "k", "default"]);
    ok(&["create_column_family", &d, "other"]);
    ok(&["put", &d, "--column_family=other", "k", "other"]);
    ok(&["deleterange", &d, "--column_family=other", "a", "z"]);
    assert_eq!(ok(&["scan", &d, "--column_family=other"]), "");
    assert_eq!(ok(&["get", &d, "k"]), "default\n");
}
