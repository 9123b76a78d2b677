//! ldb's commands that `strata` took over (`batchput`, `approxsize`, `get_property`, `idump`,
//! `list_live_files_metadata`) and sst_dump's `--show_summary`, `--from` and `--to`, through the
//! real binary on real databases: output, `--json`, exit codes, and typed errors (not a
//! database, locked, corruption).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use strata::{Db, Options};

struct Run {
    code: i32,
    out: String,
    err: String,
}

fn strata(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_strata")).args(args).output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    Run { code: out.status.code().unwrap_or(-1), out: text(&out.stdout), err: text(&out.stderr) }
}

/// Runs and insists on exit 0.
fn ok(args: &[&str]) -> String {
    let r = strata(args);
    assert_eq!(r.code, 0, "strata {args:?}\nstdout: {}\nstderr: {}", r.out, r.err);
    r.out
}

/// Runs and insists on exit 2; returns stderr.
fn fails(args: &[&str]) -> String {
    let r = strata(args);
    assert_eq!(r.code, 2, "strata {args:?}\nstdout: {}\nstderr: {}", r.out, r.err);
    assert!(r.out.is_empty(), "strata {args:?} printed {:?} before failing", r.out);
    r.err
}

fn db_flag(dir: &Path) -> String {
    format!("--db={}", dir.display())
}

fn json_lines(text: &str) -> Vec<serde_json::Map<String, Value>> {
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}"))).collect()
}

fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().is_file())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect()
}

/// 2000 keys `k00000`.. of 200 bytes in tables, one key overwritten and one deleted after the
/// flush (so they have two versions: one in a table, one in the WAL), and a merge operand.
fn versioned_db(dir: &Path) {
    let opts = Options { merge_operator: strata::merge::builtin("stringappend"), ..Options::default() };
    let db = Db::open(dir, opts).unwrap();
    for i in 0..2000u32 {
        db.put(format!("k{i:05}"), [7u8; 200]).unwrap();
    }
    db.flush().unwrap();
    db.put("k00001", "new").unwrap();
    db.delete("k00002").unwrap();
    db.merge("k00003", "more").unwrap();
    db.close().unwrap();
}

#[test]
fn batchput_writes_every_pair_in_one_batch_and_refuses_an_odd_count() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let d = db_flag(&dir);
    let err = fails(&["batchput", &d, "--create_if_missing", "a", "1", "b"]);
    assert!(err.contains("KEY VALUE pairs") && err.contains("3 arguments"), "{err}");
    assert!(!dir.exists(), "a rejected command line must not create the database");

    assert_eq!(ok(&["batchput", &d, "--create_if_missing", "a", "1", "b", "two words"]), "OK\n");
    let json = ok(&["batchput", &d, "--hex", "--json", "00ff", "0102", "63", "33"]);
    assert_eq!(json, "{\"entries\":2,\"ok\":true,\"op\":\"batchput\"}\n");
    assert_eq!(ok(&["scan", &d]), "0x00ff ==> 0x0102\na ==> 1\nb ==> two words\nc ==> 3\n");
    // One batch: consecutive sequence numbers, one WAL record.
    let idump = ok(&["idump", &d]);
    assert!(idump.contains("'a' seq:1, type:put => 1") && idump.contains("'b' seq:2,"), "{idump}");
    assert!(fails(&["batchput", &d, "--hex", "zz", "00"]).contains("not hex"));
}

#[test]
fn approxsize_counts_table_bytes_of_a_range() {
    let tmp = tempfile::tempdir().unwrap();
    versioned_db(tmp.path());
    let d = db_flag(tmp.path());
    let size = |args: &[&str]| -> u64 {
        let all = [&["approxsize", d.as_str()], args].concat();
        ok(&all).trim().parse().unwrap()
    };
    let whole = size(&[]);
    assert!(whole > 2000 * 100, "2000 values of 200 bytes (compressible) take {whole} bytes");
    let half = size(&["--from=k00000", "--to=k01000"]);
    assert!(half > whole / 4 && half < whole, "half the keys: {half} of {whole}");
    assert_eq!(size(&["--from=x", "--to=z"]), 0);
    assert_eq!(size(&["--from=k01000"]) + half, whole, "the two halves make the whole (±one block)");
    let obj = &json_lines(&ok(&["approxsize", &d, "--json", "--to=k01000"]))[0];
    assert_eq!(obj["bytes"].as_u64(), Some(half));
    assert_eq!((obj["from"].as_str(), obj["to"].as_str()), (Some(""), Some("k01000")));
}

#[test]
fn get_property_prints_a_value_and_lists_the_names_on_an_unknown_one() {
    let tmp = tempfile::tempdir().unwrap();
    versioned_db(tmp.path());
    let d = db_flag(tmp.path());
    let files: u64 = ok(&["get_property", &d, "strata.num-files-at-level0"]).trim().parse().unwrap();
    assert!(files >= 1, "the flush left a table in L0 (or deeper after a compaction)");
    assert!(ok(&["get_property", &d, "rocksdb.stats"]).contains("Level"));
    let obj = &json_lines(&ok(&["get-property", &d, "--json", "strata.total-sst-files-size"]))[0];
    assert_eq!(obj["property"], "strata.total-sst-files-size");
    assert!(obj["value"].as_str().unwrap().parse::<u64>().unwrap() > 0);
    let err = fails(&["get_property", &d, "strata.nonsense"]);
    assert!(err.contains("unknown property \"strata.nonsense\""), "{err}");
    assert!(err.contains("strata.stats") && err.contains("strata.num-files-at-level<N>"), "{err}");
}

#[test]
fn idump_shows_every_version_tombstones_and_merge_operands() {
    let tmp = tempfile::tempdir().unwrap();
    versioned_db(tmp.path());
    let d = db_flag(tmp.path());
    let text = ok(&["idump", &d, "--from=k00001", "--to=k00004"]);
    let lines: Vec<&str> = text.lines().collect();
    let value = "\u{7}".repeat(200);
    let hex_value = format!("0x{}", "07".repeat(200));
    assert_eq!(value.len(), 200);
    assert_eq!(lines[0], "'k00001' seq:2001, type:put => new");
    assert_eq!(lines[1], format!("'k00001' seq:2, type:put => {hex_value}"));
    assert_eq!(lines[2], "'k00002' seq:2002, type:delete => ");
    assert_eq!(lines[3], format!("'k00002' seq:3, type:put => {hex_value}"));
    assert_eq!(lines[4], "'k00003' seq:2003, type:merge => more");
    assert_eq!(lines[5], format!("'k00003' seq:4, type:put => {hex_value}"));
    assert_eq!(lines[6], "Internal keys in range: 6");
    assert_eq!(lines.len(), 7);

    assert_eq!(ok(&["idump", &d, "--count_only"]), "Internal keys in range: 2003\n");
    assert_eq!(ok(&["idump", &d, "--count-only", "--from=k01990"]), "Internal keys in range: 10\n");
    let limited = ok(&["idump", &d, "--max_keys=3"]);
    assert_eq!(limited.lines().count(), 4, "{limited}");
    assert!(limited.ends_with("Internal keys in range: 3\n"));

    let objs = json_lines(&ok(&["idump", &d, "--json", "--from=k00002", "--max_keys=2"]));
    assert_eq!(objs.len(), 3);
    assert_eq!((objs[0]["key"].as_str(), objs[0]["kind"].as_str()), (Some("k00002"), Some("delete")));
    assert_eq!(objs[0]["seq"].as_u64(), Some(2002));
    assert_eq!(objs[1]["value_hex"].as_str().map(str::len), Some(400));
    assert_eq!(objs[2]["internal_keys"].as_u64(), Some(2));
}

#[test]
fn list_live_files_metadata_shows_every_family_and_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let db = Db::open(dir, Options::default()).unwrap();
    let cf = db.create_cf("users", Options::default()).unwrap();
    db.put("a", "1").unwrap();
    db.put("c", "3").unwrap();
    db.flush().unwrap();
    db.put_cf(&cf, "u1", "x").unwrap();
    db.delete_cf(&cf, "u0").unwrap();
    db.flush_cf(&cf).unwrap();
    db.close().unwrap();

    let text = ok(&["list_live_files_metadata", &db_flag(dir)]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].starts_with("column_family:default level:0 file:0"), "{text}");
    assert!(lines[0].contains(" smallest:a largest:c seq:1..2 entries:2 deletions:0"), "{text}");
    assert!(lines[1].starts_with("column_family:users level:0 "), "{text}");
    assert!(lines[1].contains(" smallest:u0 largest:u1 seq:3..4 entries:2 deletions:1"), "{text}");
    assert_eq!(lines[2], "2 live SST file(s), 0 live blob file(s)");

    let objs = json_lines(&ok(&["list-live-files-metadata", &db_flag(dir), "--json"]));
    assert_eq!(objs.len(), 2);
    let file = objs[1]["file"].as_str().unwrap();
    assert!(dir.join(file).exists(), "{file} is a file of the database");
    let size = std::fs::metadata(dir.join(file)).unwrap().len();
    assert_eq!(objs[1]["size"].as_u64(), Some(size));
    assert_eq!((objs[1]["column_family"].as_str(), objs[1]["level"].as_u64()), (Some("users"), Some(0)));
}

#[test]
fn sst_dump_summary_and_key_range() {
    let tmp = tempfile::tempdir().unwrap();
    versioned_db(tmp.path());
    let text = ok(&[
        "sst-dump",
        &tmp.path().display().to_string(),
        "--show_summary",
        "--from=k00010",
        "--to=k00012",
    ]);
    assert!(text.contains("summary:\n  entries: 2000 (0 deletions)"), "{text}");
    assert!(text.contains("\n  compression: none\n"), "L0 is not compressed by default: {text}");
    assert!(text.contains("  key range: k00000 .. k01999"), "{text}");
    assert!(text.contains("  sequence range: 1 .. 2000"), "{text}");
    let entries: Vec<&str> = text.lines().filter(|l| l.contains(" seq:")).collect();
    assert_eq!(entries.len(), 2, "{text}");
    assert!(entries[0].starts_with("k00010 seq:11 kind:put") && entries[1].starts_with("k00011 seq:12"));

    let objs = json_lines(&ok(&["sst-dump", &tmp.path().display().to_string(), "--show-summary", "--json"]));
    let summary = &objs[1]["summary"];
    assert_eq!(summary["entries"].as_u64(), Some(2000));
    assert_eq!((summary["smallest"].as_str(), summary["largest"].as_str()), (Some("k00000"), Some("k01999")));
    assert!(summary["data_size"].as_u64().unwrap() > 0 && summary["index_size"].as_u64().unwrap() > 0);
    assert_eq!(objs.len(), 2, "no entries without --scan, --from or --to");
}

#[test]
fn read_only_commands_change_nothing_and_work_beside_a_writer() {
    let tmp = tempfile::tempdir().unwrap();
    versioned_db(tmp.path());
    let d = db_flag(tmp.path());
    let before = snapshot(tmp.path());
    let runs: [&[&str]; 4] = [
        &["approxsize", &d],
        &["get_property", &d, "strata.stats"],
        &["idump", &d, "--max_keys=5"],
        &["list_live_files_metadata", &d],
    ];
    for args in runs {
        ok(args);
        assert_eq!(snapshot(tmp.path()), before, "strata {args:?} changed the directory");
    }
    // They take no lock, so they run while another process has the database open; batchput
    // needs the lock and says so.
    let db = Db::open(tmp.path(), Options::default()).unwrap();
    for args in runs {
        ok(args);
    }
    let err = fails(&["batchput", &d, "a", "1"]);
    assert!(err.contains("locked"), "{err}");
    drop(db);
}

#[test]
fn not_a_database_and_a_damaged_manifest_are_errors_naming_them() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let d = db_flag(&empty);
    let runs: [&[&str]; 5] = [
        &["approxsize", &d],
        &["get_property", &d, "strata.stats"],
        &["idump", &d],
        &["list_live_files_metadata", &d],
        &["batchput", &d, "a", "1"],
    ];
    for args in runs {
        let err = fails(args);
        assert!(err.contains("not a strata database") && err.contains("empty"), "{args:?}: {err}");
    }

    let dir = tmp.path().join("db");
    versioned_db(&dir);
    let current = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
    let manifest = dir.join(current.trim());
    let mut bytes = std::fs::read(&manifest).unwrap();
    // Past the first record's header: a payload byte, so the checksum fails.
    bytes[20] ^= 0x40;
    std::fs::write(&manifest, bytes).unwrap();
    let d = db_flag(&dir);
    for args in [&["idump", d.as_str()][..], &["list_live_files_metadata", &d], &["approxsize", &d]] {
        let err = fails(args);
        assert!(err.to_lowercase().contains("corrupt"), "{args:?}: {err}");
        assert!(err.contains("MANIFEST"), "{args:?}: {err}");
    }
}
