//! The admin commands through the real `strata` binary on real databases in temp directories:
//! round trips, exit codes, JSON output, corruption reports, and that read-only commands leave
//! the directory byte-identical.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use strata::{Db, Options, WriteOptions};

struct Run {
    code: i32,
    out: String,
    err: String,
}

fn strata_with_input(args: &[&str], stdin: &[u8]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command that refuses early exits without reading its input; the pipe then breaks, and
    // what matters is the exit code and stderr below, not whether the input was consumed.
    match child.stdin.take().unwrap().write_all(stdin) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other.unwrap(),
    }
    let out = child.wait_with_output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    Run { code: out.status.code().unwrap_or(-1), out: text(&out.stdout), err: text(&out.stderr) }
}

fn strata(args: &[&str]) -> Run {
    strata_with_input(args, b"")
}

/// Runs and insists on exit 0.
fn ok(args: &[&str]) -> String {
    let r = strata(args);
    assert_eq!(r.code, 0, "strata {args:?}\nstdout: {}\nstderr: {}", r.out, r.err);
    r.out
}

fn db_flag(dir: &Path) -> String {
    format!("--db={}", dir.display())
}

/// A database with every kind of file: SSTs (two flushes), a blob file (values >= 64 bytes),
/// and a WAL holding writes made after the last flush.
fn populated_db(dir: &Path) {
    let opts = Options { min_blob_size: 64, ..Options::default() };
    let db = Db::open(dir, opts).unwrap();
    let w = WriteOptions::default();
    for i in 0..500u32 {
        let value = if i % 2 == 0 { vec![b'v'; 100] } else { format!("small{i}").into_bytes() };
        db.put_opt(&w, format!("key{i:04}").as_bytes(), &value).unwrap();
    }
    db.flush().unwrap();
    db.delete_opt(&w, b"key0001").unwrap();
    db.put_opt(&w, b"flushed-twice", b"yes").unwrap();
    db.flush().unwrap();
    db.put_opt(&w, b"in-the-wal", b"walvalue").unwrap();
    db.put_opt(&w, &[0, 0xff], &[1, 2, 3]).unwrap();
    db.close().unwrap();
}

/// Every file name and its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect()
}

fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

#[test]
fn put_get_scan_dump_and_load_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let (da, db) = (db_flag(&a), db_flag(&b));
    assert_eq!(ok(&["put", &da, "--create-if-missing", "apple", "red"]), "OK\n");
    ok(&["put", &da, "banana", "yellow fruit"]);
    ok(&["put", &da, "--hex", "0x00ff", "0a0b"]);
    ok(&["put", &da, "0xnot-hex", "a ==> b"]);
    ok(&["put", &da, "gone", "soon"]);
    ok(&["delete", &da, "gone"]);

    assert_eq!(ok(&["get", &da, "apple"]), "red\n");
    assert_eq!(ok(&["get", &da, "--hex", "00ff"]), "0x0a0b\n");
    assert_eq!(ok(&["get", &da, "--hex", "6170706c65"]), "0x726564\n");
    let scan = ok(&["scan", &da]);
    assert_eq!(
        scan,
        "0x00ff ==> 0x0a0b\n0x30786e6f742d686578 ==> 0x61203d3d3e2062\napple ==> red\nbanana ==> yellow fruit\n"
    );
    assert_eq!(ok(&["scan", &da, "--from=apple", "--to=banana"]), "apple ==> red\n");
    assert_eq!(ok(&["scan", &da, "--prefix=ban"]), "banana ==> yellow fruit\n");
    assert_eq!(ok(&["scan", &da, "--reverse", "--limit=2"]), "banana ==> yellow fruit\napple ==> red\n");

    let dump = ok(&["dump", &da]);
    assert_eq!(dump, scan, "dump uses the scan line format");
    let loaded = strata_with_input(&["load", &db, "--create-if-missing"], dump.as_bytes());
    assert_eq!(loaded.code, 0, "{}", loaded.err);
    assert_eq!(ok(&["dump", &db]), dump, "the copy dumps the same");

    // The JSON dump loads too, into a third database, from --file.
    let json_dump = tmp.path().join("dump.jsonl");
    std::fs::write(&json_dump, ok(&["dump", &da, "--json"])).unwrap();
    let c = db_flag(&tmp.path().join("c"));
    let file_flag = format!("--file={}", json_dump.display());
    ok(&["load", &c, "--create-if-missing", &file_flag]);
    assert_eq!(ok(&["dump", &c]), dump);
}

#[test]
fn get_of_a_missing_key_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    let d = db_flag(tmp.path());
    ok(&["put", &d, "--create-if-missing", "k", "v"]);
    let r = strata(&["get", &d, "absent"]);
    assert_eq!(r.code, 1);
    assert!(r.out.is_empty());
    assert!(r.err.contains("NotFound") && r.err.contains("absent"), "{}", r.err);
}

#[test]
fn a_bad_path_exits_2_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-db");
    let d = db_flag(&missing);
    for args in [vec!["get", &d, "k"], vec!["scan", &d], vec!["check", &d], vec!["manifest-dump", &d]] {
        let r = strata(&args);
        assert_eq!(r.code, 2, "{args:?}");
        assert!(r.err.contains("no-such-db"), "{args:?}: {}", r.err);
    }
    assert!(!missing.exists(), "a read-only command must not create the directory");
    let r = strata(&["put", &d, "k", "v"]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains("no-such-db"), "{}", r.err);
    let r = strata(&["sst-dump", "/nonexistent/000001.sst"]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains("/nonexistent/000001.sst"), "{}", r.err);
    let r = strata(&["get", &d, "--hex", "zz"]);
    assert_eq!(r.code, 2);
}

/// Every read-only command, on the files of one populated database.
fn read_only_invocations(dir: &Path) -> Vec<Vec<String>> {
    let d = db_flag(dir);
    let sst = files_with_ext(dir, "sst")[0].display().to_string();
    let wal = files_with_ext(dir, "log")[0].display().to_string();
    let mut runs: Vec<Vec<&str>> = vec![
        vec!["get", &d, "key0002"],
        vec!["get", &d, "in-the-wal"],
        vec!["scan", &d],
        vec!["scan", &d, "--reverse", "--prefix=key00"],
        vec!["dump", &d],
        vec!["stats", &d],
        vec!["check", &d],
        vec!["sst-dump", &sst, "--show-properties", "--show-blocks", "--scan", "--verify"],
        vec!["manifest-dump", &d],
        vec!["wal-dump", &wal],
        vec!["list_column_families", &d],
    ];
    let with_json: Vec<Vec<&str>> = runs.iter().map(|r| [r.as_slice(), &["--json"]].concat()).collect();
    runs.extend(with_json);
    runs.into_iter().map(|r| r.into_iter().map(String::from).collect()).collect()
}

#[test]
fn read_only_commands_leave_the_directory_byte_identical() {
    let tmp = tempfile::tempdir().unwrap();
    populated_db(tmp.path());
    let before = snapshot(tmp.path());
    for args in read_only_invocations(tmp.path()) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ok(&args);
        assert_eq!(snapshot(tmp.path()), before, "strata {args:?} changed the directory");
    }
}

#[test]
fn json_output_is_one_object_per_line() {
    let tmp = tempfile::tempdir().unwrap();
    populated_db(tmp.path());
    for args in read_only_invocations(tmp.path()).into_iter().filter(|a| a.contains(&"--json".to_string())) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = ok(&args);
        assert!(!out.is_empty(), "{args:?}");
        for line in out.lines() {
            let v: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{args:?}: {e}: {line}"));
            assert!(v.is_object(), "{args:?}: {line}");
        }
    }
    let d = db_flag(tmp.path());
    let get: serde_json::Value = serde_json::from_str(&ok(&["get", &d, "in-the-wal", "--json"])).unwrap();
    assert_eq!(get["value"], "walvalue");
    let binary: serde_json::Value =
        serde_json::from_str(&ok(&["get", &d, "--hex", "00ff", "--json"])).unwrap();
    assert_eq!(binary["value_hex"], "010203");
    let stats: serde_json::Value = serde_json::from_str(&ok(&["stats", &d, "--json"])).unwrap();
    assert_eq!(stats["levels"].as_array().unwrap().len(), 7);
    assert!(stats["total_sst_files_size"].as_u64().unwrap() > 0);
    assert!(stats["pending_compaction_bytes"].is_u64() && stats["block_cache_usage"].is_u64());
}

#[test]
fn check_passes_a_healthy_database_and_names_a_damaged_table() {
    let tmp = tempfile::tempdir().unwrap();
    populated_db(tmp.path());
    let d = db_flag(tmp.path());
    let out = ok(&["check", &d]);
    assert!(out.contains(": OK"), "{out}");

    let sst = files_with_ext(tmp.path(), "sst")[0].clone();
    let mut bytes = std::fs::read(&sst).unwrap();
    bytes[50] ^= 0x40;
    std::fs::write(&sst, bytes).unwrap();
    let name = sst.file_name().unwrap().to_string_lossy().into_owned();
    let r = strata(&["check", &d]);
    assert_eq!(r.code, 2, "{}", r.out);
    assert!(r.out.contains(&format!("CORRUPT {name}")), "{}", r.out);
    assert!(r.err.contains(&name), "{}", r.err);
    let r = strata(&["sst-dump", &sst.display().to_string(), "--verify"]);
    assert_eq!(r.code, 2, "{}", r.out);
    assert!(r.out.contains("verify: CORRUPT") && r.err.contains(&name), "{}\n{}", r.out, r.err);
}

#[test]
fn file_dumps_show_what_was_written() {
    let tmp = tempfile::tempdir().unwrap();
    populated_db(tmp.path());
    let ssts = files_with_ext(tmp.path(), "sst");
    let sst_out: String = ssts
        .iter()
        .map(|p| ok(&["sst-dump", &p.display().to_string(), "--scan", "--show-properties"]))
        .collect();
    assert!(sst_out.contains("key0003 seq:4 kind:put ==> small3"), "{sst_out}");
    assert!(sst_out.contains("key0000 seq:1 kind:blob ==> blob(file="), "{sst_out}");
    assert!(sst_out.contains("key0001 seq:501 kind:delete\n"), "{sst_out}");
    assert!(sst_out.contains("strata.num_entries: 500"), "{sst_out}");
    assert!(sst_out.contains("data blocks: "), "{sst_out}");

    let manifest = ok(&["manifest-dump", &db_flag(tmp.path())]);
    assert!(manifest.contains("comparator: strata.BytewiseComparator"), "{manifest}");
    assert!(manifest.contains("add file: level 0 #"), "{manifest}");
    assert!(manifest.contains("[key0000@1:Blob .. key0499@500:Put]"), "{manifest}");
    assert!(manifest.contains("add blob file: #"), "{manifest}");

    let wal = files_with_ext(tmp.path(), "log").last().unwrap().display().to_string();
    let wal_out = ok(&["wal-dump", &wal]);
    assert!(wal_out.starts_with("offset 0: WAL header, version 2, "), "{wal_out}");
    assert!(wal_out.contains("PUT seq:503 in-the-wal ==> walvalue"), "{wal_out}");
    assert!(wal_out.contains("PUT seq:504 0x00ff ==> 0x010203"), "{wal_out}");
}

#[test]
fn compact_merges_level_0_into_one_file() {
    let tmp = tempfile::tempdir().unwrap();
    populated_db(tmp.path());
    let d = db_flag(tmp.path());
    let before = ok(&["dump", &d]);
    ok(&["compact", &d]);
    assert_eq!(ok(&["dump", &d]), before, "compaction keeps the data");
    let stats: serde_json::Value = serde_json::from_str(&ok(&["stats", &d, "--json"])).unwrap();
    assert_eq!(stats["levels"][0]["files"], 0, "{stats}");
}

#[test]
fn checkpoint_writes_a_copy_that_dumps_the_same_and_refuses_an_existing_dir() {
    let tmp = tempfile::tempdir().unwrap();
    populated_db(tmp.path());
    let d = db_flag(tmp.path());
    let copy = tmp.path().join("backup");
    let out = ok(&["checkpoint", &d, copy.to_str().unwrap(), "--json"]);
    assert!(out.contains(r#""op":"checkpoint""#), "{out}");
    assert_eq!(ok(&["dump", &db_flag(&copy)]), ok(&["dump", &d]));
    let again = strata(&["checkpoint", &d, copy.to_str().unwrap()]);
    assert_ne!(again.code, 0);
    assert!(again.err.contains("already exists"), "{}", again.err);
}

#[test]
fn commands_use_the_options_the_database_was_opened_with() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    {
        let opts = Options { merge_operator: strata::merge::builtin("uint64add"), ..Options::default() };
        let db = Db::open(&dir, opts).unwrap();
        for _ in 0..3 {
            db.merge(b"hits", 1u64.to_le_bytes()).unwrap();
        }
    }
    // The merge operator comes from the database's OPTIONS file, so the operands resolve.
    let flag = db_flag(&dir);
    let got = ok(&["get", &flag, "--hex", "0x68697473"]);
    assert!(got.contains("0300000000000000"), "{got}");
}

/// `strata --version` names the commit the binary was built from (build.rs), which is what
/// `scripts/bench-vs-peers.sh` writes into each run's header.
#[test]
fn version_names_the_commit_it_was_built_from() {
    let out = ok(&["--version"]);
    let commit = out
        .trim()
        .strip_prefix(concat!("strata ", env!("CARGO_PKG_VERSION"), " (commit "))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("unexpected --version output: {out:?}"));
    let head = Command::new("git")
        .args(["rev-parse", "--short=7", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    match head {
        Some(head) if std::env::var_os("STRATA_GIT_COMMIT").is_none() => assert_eq!(commit, head),
        _ => assert!(!commit.is_empty(), "{out:?}"),
    }
}

/// How many times `needle` occurs in `haystack`.
fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

/// strata's `Error::Io` prints its io::Error and also returns it as `source()`; the printer must
/// not repeat it.
#[test]
fn an_io_error_prints_its_cause_once() {
    let tmp = tempfile::tempdir().unwrap();
    let d = db_flag(&tmp.path().join("db"));
    ok(&["put", &d, "--create-if-missing", "k", "v"]);
    let missing = tmp.path().join("missing");
    let m = missing.display().to_string();
    let file_flag = format!("--file={m}");
    let runs: [Vec<&str>; 5] = [
        vec!["sst-dump", &m],
        vec!["wal-dump", &m],
        vec!["manifest-dump", &m],
        vec!["load", &d, &file_flag],
        vec!["get", "--db=/nonexistent/x", "k"],
    ];
    for args in runs {
        let r = strata(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.err);
        assert_eq!(count(&r.err, "\n"), 1, "{args:?}: one line: {}", r.err);
        assert!(r.err.starts_with("strata: ") && r.out.is_empty(), "{args:?}: {}{}", r.out, r.err);
        assert!(count(&r.err, "(os error 2)") <= 1, "{args:?}: cause repeated: {}", r.err);
    }
    let r = strata(&["sst-dump", &m]);
    assert_eq!(count(&r.err, &m), 2, "{}", r.err); // "sst-dump PATH: io error on PATH: ..."
    assert_eq!(count(&r.err, "(os error 2)"), 1, "{}", r.err);
}

/// `wal-dump` of something that is not a log fails; an empty log (created, nothing written, as a
/// crash can leave it; or only preallocated zeros) is legal, and a torn tail is a note.
#[test]
fn wal_dump_rejects_a_file_that_is_not_a_log() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    populated_db(&dir);
    let text = tmp.path().join("text.log");
    std::fs::write(&text, "hello, this is not a write-ahead log\n").unwrap();
    let noise = tmp.path().join("noise.log");
    let bytes: Vec<u8> = (0..5000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(&noise, bytes).unwrap();
    let sst = files_with_ext(&dir, "sst")[0].clone();
    let manifest_text = tmp.path().join("short.log");
    std::fs::write(&manifest_text, "abc").unwrap();
    for file in [&text, &noise, &sst, &manifest_text] {
        let r = strata(&["wal-dump", &file.display().to_string()]);
        assert_eq!(r.code, 2, "{}: {}{}", file.display(), r.out, r.err);
        assert!(r.out.is_empty(), "{}", r.out);
        let want = format!("strata: {}: not a log file", file.display());
        assert!(r.err.starts_with(&want), "{}", r.err);
    }

    // A directory cannot be read at all; that is not damage in a log.
    let r = strata(&["wal-dump", &dir.display().to_string()]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains("cannot read") && !r.err.contains("damaged"), "{}", r.err);

    let empty = tmp.path().join("empty.log");
    std::fs::write(&empty, b"").unwrap();
    let zeros = tmp.path().join("zeros.log");
    std::fs::write(&zeros, vec![0u8; 100_000]).unwrap();
    for file in [&empty, &zeros] {
        let r = strata(&["wal-dump", &file.display().to_string()]);
        assert_eq!(r.code, 0, "{}: {}", file.display(), r.err);
        assert!(r.out.is_empty() && r.err.contains("no records: an empty log"), "{}", r.err);
    }

    let wal = files_with_ext(&dir, "log").last().unwrap().clone();
    let mut torn = std::fs::read(&wal).unwrap();
    torn.truncate(torn.len() - 3);
    let torn_path = tmp.path().join("torn.log");
    std::fs::write(&torn_path, torn).unwrap();
    let r = strata(&["wal-dump", &torn_path.display().to_string()]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.contains("in-the-wal ==> walvalue") && r.err.contains("torn tail"), "{}{}", r.out, r.err);
}

/// A bad `strata bench` command line is an error like any other: exit 2, the message on stderr,
/// and nothing run or created.
#[test]
fn bench_rejects_a_bad_command_line_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bench-db");
    let d = format!("--db={}", dir.display());
    let runs: [(&[&str], &str); 6] = [
        (&["--num=abc"], "--num: \"abc\" is not a valid integer"),
        (&["--nosuch=1"], "unknown flag --nosuch"),
        (&["--benchmarks=nosuch"], "unknown benchmark \"nosuch\""),
        (&["--benchmarks=fillseq,nosuch", "--num=10"], "unknown benchmark \"nosuch\""),
        (&["--sync=maybe"], "--sync:"),
        (&["positional"], "unexpected argument \"positional\""),
    ];
    for (flags, message) in runs {
        let args = [&["bench", "--engine=memory", d.as_str()], flags].concat();
        let r = strata(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.err);
        assert!(r.out.is_empty(), "{args:?}: {}", r.out);
        assert!(r.err.starts_with("strata: ") && r.err.contains(message), "{args:?}: {}", r.err);
        assert!(!dir.exists(), "{args:?} created the database");
    }
}

/// The database's newest OPTIONS file, with a line appended that does not parse.
fn damage_options_file(dir: &Path) -> String {
    let file = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("OPTIONS-"))
        .unwrap();
    let mut f = std::fs::OpenOptions::new().append(true).open(&file).unwrap();
    f.write_all(b"this line is garbage\n").unwrap();
    file.file_name().unwrap().to_string_lossy().into_owned()
}

/// A damaged OPTIONS file does not lock readers out of a healthy database (they warn once and
/// use the defaults), but writers refuse: the defaults could change the merge operator or
/// compression of what they write. Neither changes the directory.
#[test]
fn a_damaged_options_file_warns_readers_and_stops_writers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    populated_db(&dir);
    let healthy_dump = ok(&["dump", &db_flag(&dir)]);
    let options = damage_options_file(&dir);
    let before = snapshot(&dir);
    // `check` is left out: it reads no OPTIONS file, and what it reports is its own business.
    let reads = read_only_invocations(&dir).into_iter().filter(|a| a[0] != "check");
    for args in reads {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = strata(&args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.err);
        if matches!(args[0], "get" | "scan" | "dump" | "stats") {
            let warning = "strata: warning: OPTIONS file ignored, reading with the default options: ";
            assert!(r.err.starts_with(warning) && count(&r.err, "\n") == 1, "{args:?}: {}", r.err);
            assert!(
                r.err.contains(&options) && r.err.contains("\"this line is garbage\""),
                "{args:?}: {}",
                r.err
            );
        }
        assert_eq!(snapshot(&dir), before, "strata {args:?} changed the directory");
    }
    assert_eq!(ok(&["dump", &db_flag(&dir)]), healthy_dump, "the defaults read every table and blob");

    let d = db_flag(&dir);
    let copy = tmp.path().join("copy").display().to_string();
    let writes: [Vec<&str>; 5] = [
        vec!["put", &d, "k", "v"],
        vec!["delete", &d, "key0002"],
        vec!["load", &d],
        vec!["compact", &d],
        vec!["checkpoint", &d, &copy],
    ];
    for args in writes {
        let r = strata_with_input(&args, b"a ==> b\n");
        assert_eq!(r.code, 2, "{args:?}: {}", r.err);
        assert!(r.err.starts_with("strata: refusing to write to "), "{args:?}: {}", r.err);
        assert!(r.err.contains(&options) && r.err.contains("remove it"), "{args:?}: {}", r.err);
        assert_eq!(snapshot(&dir), before, "strata {args:?} changed the directory");
    }
    assert!(!Path::new(&copy).exists());
}

/// ldb spells it `--create_if_missing`; both spellings work wherever the flag does.
#[test]
fn ldb_spelling_of_create_if_missing_is_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (db_flag(&tmp.path().join("a")), db_flag(&tmp.path().join("b")));
    assert_eq!(ok(&["put", &a, "--create_if_missing", "k", "v"]), "OK\n");
    let r = strata_with_input(&["load", &b, "--create_if_missing"], b"k ==> v\n");
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(ok(&["get", &b, "k"]), "v\n");
}

#[test]
fn repair_rebuilds_a_database_without_current_and_reports_what_it_moved() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    populated_db(&dir);
    let d = db_flag(&dir);
    let before = ok(&["dump", &d]);
    std::fs::remove_file(dir.join("CURRENT")).unwrap();
    assert_eq!(strata(&["dump", &d]).code, 2);

    let out = ok(&["repair", &d]);
    assert!(out.contains("nothing lost") && out.contains("wrote MANIFEST-"), "{out}");
    assert!(out.contains("moved MANIFEST-") && out.contains("-> lost/MANIFEST-"), "{out}");
    assert_eq!(ok(&["dump", &d]), before);

    // A damaged table: exit 0 (the repair ran), the report names it, its keys are gone.
    let sst = files_with_ext(&dir, "sst")[0].clone();
    std::fs::write(&sst, b"not a table").unwrap();
    let out = ok(&["repair", &d, "--json"]);
    let report: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(report["clean"], false, "{out}");
    let lost = &report["tables_lost"][0];
    assert_eq!(lost["file"], sst.file_name().unwrap().to_str().unwrap(), "{out}");
    assert!(dir.join(lost["moved_to"].as_str().unwrap()).exists());
    assert_eq!(ok(&["check", &d]).lines().count(), 1, "a repaired database checks clean");
}

#[test]
fn repair_refuses_a_missing_or_locked_database_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-db");
    let r = strata(&["repair", &db_flag(&missing)]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains("no-such-db") && r.err.contains("not a strata database"), "{}", r.err);
    assert!(!missing.exists(), "repair must not create a database");

    let dir = tmp.path().join("db");
    let db = Db::open(&dir, Options::default()).unwrap();
    let r = strata(&["repair", &db_flag(&dir)]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains("locked"), "{}", r.err);
    drop(db);
}

/// Issue 33's reproduction: one flipped bit in the last MANIFEST record (a flush edit adding a
/// table and a blob file) used to check "OK", lose every key of that flush and later, and let
/// the next writable open delete the table, the blob file and the WAL.
#[test]
fn a_flipped_bit_in_the_last_manifest_record_is_reported_and_repair_brings_every_key_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let d = db_flag(&dir);
    // Small memtables so the load flushes several times (the issue used 200,000 keys and the
    // default 64 MiB); the OPTIONS file carries them to the commands below.
    // No compaction either, so the last edit is a flush's (a trivial move could come last).
    let opts = Options {
        write_buffer_size: 1 << 20,
        level0_compaction_trigger: 50,
        level0_slowdown_trigger: 60,
        level0_stop_trigger: 70,
        ..Options::default()
    };
    drop(Db::open(&dir, opts).unwrap());
    assert_eq!(ok(&["put", &d, "first", "1"]), "OK\n");
    let keys = 20_000;
    let text: String = (0..keys).map(|i| format!("key{i:07} ==> {}\n", "x".repeat(800))).collect();
    let kv = tmp.path().join("kv.txt");
    std::fs::write(&kv, text).unwrap();
    ok(&["load", &d, "--file", kv.to_str().unwrap()]);
    let manifest_name = String::from_utf8(std::fs::read(dir.join("CURRENT")).unwrap()).unwrap();
    let manifest_name = manifest_name.trim_end().to_string();
    let dumped = ok(&["manifest-dump", &d]);
    let edits = dumped.split("resulting version").next().unwrap();
    let last_edit = edits.rsplit("edit #").next().unwrap();
    assert!(last_edit.contains("add file") && last_edit.contains("add blob file"), "{dumped}");
    let manifest = dir.join(&manifest_name);
    let mut bytes = std::fs::read(&manifest).unwrap();
    let at = bytes.len() - 30;
    bytes[at] ^= 0x04;
    std::fs::write(&manifest, bytes).unwrap();
    let before = snapshot(&dir);

    let check = strata(&["check", &d]);
    assert_eq!(check.code, 2, "{}{}", check.out, check.err);
    assert!(check.err.contains(&manifest_name) && check.err.contains("offset"), "{}", check.err);
    let get = strata(&["get", &d, &format!("key{:07}", keys - 1)]);
    assert_eq!(get.code, 2, "{}{}", get.out, get.err);
    assert!(get.err.contains("corruption"), "{}", get.err);
    let put = strata(&["put", &d, "new", "1"]);
    assert_eq!(put.code, 2, "the writable open must refuse: {}{}", put.out, put.err);
    assert_eq!(snapshot(&dir), before, "a refused open must leave every file as it was");

    let repaired = ok(&["repair", &d]);
    assert!(repaired.contains("wrote MANIFEST-"), "{repaired}");
    assert_eq!(ok(&["get", &d, "first"]), "1\n");
    for i in [0, keys / 2, keys - 1] {
        assert_eq!(ok(&["get", &d, &format!("key{i:07}")]), format!("{}\n", "x".repeat(800)), "key {i}");
    }
    assert_eq!(ok(&["dump", &d]).lines().count(), keys + 1, "every key is back");
    assert_eq!(strata(&["put", &d, "new", "1"]).code, 0, "the repaired database takes writes");
}

/// A database with the families `a` and `b` besides `default`, each holding `k` with a value
/// naming its family, plus `only-a` in `a`; `b`'s records are still in the WAL (no flush).
fn db_with_families(dir: &Path) {
    let db = Db::open_cf(
        dir,
        Options { create_if_missing: true, ..Options::default() },
        [("a", Options::default()), ("b", Options::default())],
    )
    .unwrap();
    let w = WriteOptions::default();
    let (a, b) = (db.cf("a").unwrap(), db.cf("b").unwrap());
    db.put_opt(&w, b"k", b"in-default").unwrap();
    db.put_cf_opt(&a, &w, b"k", b"in-a").unwrap();
    db.put_cf_opt(&a, &w, b"only-a", b"1").unwrap();
    db.flush_cf(&a).unwrap();
    db.put_cf_opt(&b, &w, b"k", b"in-b").unwrap();
    db.close().unwrap();
}

#[test]
fn column_family_option_reads_and_writes_one_family() {
    let tmp = tempfile::tempdir().unwrap();
    db_with_families(tmp.path());
    let d = db_flag(tmp.path());
    assert_eq!(ok(&["get", &d, "k"]), "in-default\n", "default is the default");
    assert_eq!(ok(&["get", &d, "--column_family=default", "k"]), "in-default\n");
    assert_eq!(ok(&["get", &d, "--column_family=a", "k"]), "in-a\n");
    assert_eq!(ok(&["get", &d, "--column-family", "b", "k"]), "in-b\n", "clap spelling");
    let absent = strata(&["get", &d, "only-a"]);
    assert_eq!(absent.code, 1, "only-a is in a, not in default");

    assert_eq!(ok(&["put", &d, "--column_family=b", "new", "nb"]), "OK\n");
    assert_eq!(ok(&["scan", &d, "--column_family=b"]), "k ==> in-b\nnew ==> nb\n");
    assert_eq!(ok(&["scan", &d]), "k ==> in-default\n");
    ok(&["delete", &d, "--column_family=b", "k"]);
    assert_eq!(ok(&["dump", &d, "--column_family=b"]), "new ==> nb\n");
    assert_eq!(ok(&["get", &d, "--column_family=a", "k"]), "in-a\n", "a is untouched");

    // A dump of one family loads into another, and compact works on a family.
    let dump_a = ok(&["dump", &d, "--column_family=a"]);
    assert_eq!(dump_a, "k ==> in-a\nonly-a ==> 1\n");
    ok(&["create_column_family", &d, "copy"]);
    let r = strata_with_input(&["load", &d, "--column_family=copy"], dump_a.as_bytes());
    assert_eq!(r.code, 0, "{}", r.err);
    ok(&["compact", &d, "--column_family=copy"]);
    assert_eq!(ok(&["dump", &d, "--column_family=copy"]), dump_a);
    assert_eq!(ok(&["dump", &d]), "k ==> in-default\n");
}

#[test]
fn an_unknown_column_family_is_an_error_that_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    db_with_families(tmp.path());
    let d = db_flag(tmp.path());
    let cf = "--column_family=nope";
    let runs: [&[&str]; 7] = [
        &["get", &d, cf, "k"],
        &["scan", &d, cf],
        &["dump", &d, cf],
        &["put", &d, cf, "k", "v"],
        &["delete", &d, cf, "k"],
        &["compact", &d, cf],
        &["load", &d, cf],
    ];
    for args in runs {
        let r = strata_with_input(args, b"k ==> v\n");
        assert_eq!(r.code, 2, "{args:?}: {}", r.out);
        assert!(r.out.is_empty(), "{args:?}: {}", r.out);
        assert!(
            r.err.contains(r#"column family "nope" does not exist"#) && r.err.contains("default, a, b"),
            "{args:?}: {}",
            r.err
        );
    }
    assert_eq!(ok(&["list_column_families", &d]), "default\na\nb\n", "nothing was created");
    assert_eq!(ok(&["get", &d, "k"]), "in-default\n");
}

#[test]
fn list_create_and_drop_column_families() {
    let tmp = tempfile::tempdir().unwrap();
    let d = db_flag(tmp.path());
    ok(&["put", &d, "--create-if-missing", "k", "v"]);
    assert_eq!(ok(&["list_column_families", &d]), "default\n");
    assert_eq!(ok(&["create_column_family", &d, "a"]), "OK\n");
    let created = ok(&["create-column-family", &d, "b", "--json"]);
    let created: serde_json::Value = serde_json::from_str(&created).unwrap();
    assert_eq!(created["op"], "create_column_family");
    assert_eq!(created["column_family"], "b");
    assert_eq!(ok(&["list_column_families", &d]), "default\na\nb\n");
    let listed: serde_json::Value =
        serde_json::from_str(&ok(&["list_column_families", &d, "--json"])).unwrap();
    assert_eq!(listed["column_families"], serde_json::json!(["default", "a", "b"]));

    let again = strata(&["create_column_family", &d, "a"]);
    assert_eq!(again.code, 2);
    assert!(again.err.contains("\"a\""), "{}", again.err);

    ok(&["put", &d, "--column_family=b", "kb", "vb"]);
    assert_eq!(ok(&["drop_column_family", &d, "b"]), "OK\n");
    assert_eq!(ok(&["list_column_families", &d]), "default\na\n");
    let gone = strata(&["get", &d, "--column_family=b", "kb"]);
    assert_eq!(gone.code, 2, "{}", gone.out);
    let unknown = strata(&["drop_column_family", &d, "b"]);
    assert_eq!(unknown.code, 2);
    assert!(unknown.err.contains(r#"column family "b" does not exist"#), "{}", unknown.err);

    // Dropping default is refused before the database is opened: not even an OPTIONS file is
    // written.
    let before = snapshot(tmp.path());
    let r = strata(&["drop_column_family", &d, "default"]);
    assert_eq!(r.code, 2);
    assert!(r.err.contains("default column family cannot be dropped"), "{}", r.err);
    assert_eq!(snapshot(tmp.path()), before);
    assert_eq!(ok(&["get", &d, "k"]), "v\n");

    // A dropped family's name can be used again; it starts empty.
    ok(&["create_column_family", &d, "b"]);
    assert_eq!(ok(&["dump", &d, "--column_family=b"]), "");
}

#[test]
fn list_column_families_of_a_missing_database_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let r = strata(&["list_column_families", &db_flag(&tmp.path().join("none"))]);
    assert_eq!(r.code, 2);
    assert!(r.out.is_empty() && r.err.contains("none"), "{}", r.err);
}

#[test]
fn manifest_dump_shows_family_edits_and_one_version_per_family() {
    let tmp = tempfile::tempdir().unwrap();
    db_with_families(tmp.path());
    ok(&["create_column_family", &db_flag(tmp.path()), "short-lived"]);
    ok(&["drop_column_family", &db_flag(tmp.path()), "short-lived"]);
    let out = ok(&["manifest-dump", &db_flag(tmp.path())]);
    assert!(out.contains("create column family: a\n"), "{out}");
    assert!(out.contains("create column family: b\n"), "{out}");
    assert!(out.contains("create column family: short-lived\n"), "{out}");
    assert!(out.contains("column family: 3\n  drop column family\n"), "{out}");
    assert!(out.contains("column family 0 (default):\n"), "{out}");
    assert!(out.contains("column family 1 (a):\n"), "{out}");
    assert!(out.contains("column family 2 (b):\n"), "{out}");
    assert!(!out.contains("(short-lived):"), "a dropped family has no version: {out}");

    let json = ok(&["manifest-dump", &db_flag(tmp.path()), "--json"]);
    let edits: Vec<serde_json::Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let created: Vec<&str> = edits.iter().filter_map(|e| e["create_column_family"].as_str()).collect();
    assert_eq!(created, ["a", "b", "short-lived"]);
    assert!(edits.iter().any(|e| e["drop_column_family"] == true && e["column_family"] == 3));
}

#[test]
fn wal_dump_marks_records_of_other_families() {
    let tmp = tempfile::tempdir().unwrap();
    db_with_families(tmp.path());
    // The flush of `a` started a new WAL; `default`'s record is still in the first one.
    let wals: Vec<String> =
        files_with_ext(tmp.path(), "log").iter().map(|p| p.display().to_string()).collect();
    let out: String = wals.iter().map(|w| ok(&["wal-dump", w])).collect();
    assert!(out.contains(" cf:2 k ==> in-b\n"), "b is family 2: {out}");
    assert!(out.contains(":1 k ==> in-default\n"), "default records carry no mark: {out}");
    assert!(!out.contains("cf:0"), "{out}");
    let json: String = wals.iter().map(|w| ok(&["wal-dump", w, "--json"])).collect();
    assert!(json.contains(r#""column_family":2"#), "{json}");
}
