//! Bad input from the caller: invalid keys, invalid options, wrong paths, a database that is
//! already open (in this process or another), merges without an operator, and files written by a
//! newer format version. Each must be a typed error, never a panic or a misbehaving engine.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use strata::batch::MAX_KEY_LEN;
use strata::{merge, Db, Error, Options, ReadOptions, WriteBatch, WriteOptions};

fn kind(r: &strata::Result<Db>) -> &'static str {
    match r {
        Ok(_) => "Ok",
        Err(Error::Io { .. }) => "Io",
        Err(Error::Corruption(_)) => "Corruption",
        Err(Error::InvalidArgument(_)) => "InvalidArgument",
        Err(Error::Locked(_)) => "Locked",
        Err(Error::NotADatabase(_)) => "NotADatabase",
        Err(Error::AlreadyExists(_)) => "AlreadyExists",
        Err(Error::UnsupportedVersion { .. }) => "UnsupportedVersion",
        Err(Error::Background { .. }) => "Background",
        Err(Error::Closed) => "Closed",
        Err(Error::Merge(_)) => "Merge",
        Err(_) => "other",
    }
}

fn expect_invalid<T: std::fmt::Debug>(r: strata::Result<T>, what: &str) -> String {
    match r {
        Err(Error::InvalidArgument(m)) => m,
        other => panic!("{what}: expected InvalidArgument, got {other:?}"),
    }
}

fn opts_with_merge() -> Options {
    Options { merge_operator: merge::builtin("uint64add"), ..Options::default() }
}

#[test]
fn oversized_keys_are_invalid_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts_with_merge()).unwrap();
    let w = WriteOptions::default();
    let huge = vec![b'k'; MAX_KEY_LEN + 1];
    for (name, key) in [("key over 64 KiB", &huge[..])] {
        expect_invalid(db.put_opt(&w, key, b"v"), &format!("put with {name}"));
        expect_invalid(db.delete_opt(&w, key), &format!("delete with {name}"));
        expect_invalid(db.merge_opt(&w, key, &1u64.to_le_bytes()), &format!("merge with {name}"));
        for sync in [false, true] {
            let mut b = WriteBatch::new();
            b.put(b"good-before", b"1").put(key, b"v").put(b"good-after", b"2");
            let wo = WriteOptions { sync, disable_wal: false };
            expect_invalid(db.write_opt(&wo, b), &format!("batch with {name}"));
            let mut b = WriteBatch::new();
            b.put(b"good-before", b"1").delete(key);
            expect_invalid(db.write_opt(&wo, b), &format!("batch deleting {name}"));
            let mut b = WriteBatch::new();
            b.merge(key, 1u64.to_le_bytes()).put(b"good-after", b"2");
            expect_invalid(db.write_opt(&wo, b), &format!("batch merging {name}"));
        }
        // Reads of such keys are not writes: they may find nothing or refuse, but never panic.
        match db.get(key) {
            Ok(None) | Err(Error::InvalidArgument(_)) => {}
            other => panic!("get with {name}: {other:?}"),
        }
    }
    // A rejected batch applies nothing at all.
    let r = ReadOptions::new();
    assert_eq!(db.get_opt(&r, b"good-before").unwrap(), None);
    assert_eq!(db.get_opt(&r, b"good-after").unwrap(), None);
    assert_eq!(db.latest_sequence(), 0, "no sequence numbers were used by rejected writes");

    // The limit itself is allowed, and survives a flush and a reopen.
    let max = vec![b'm'; MAX_KEY_LEN];
    db.put_opt(&w, &max, b"max").unwrap();
    db.flush().unwrap();
    drop(db);
    let db = Db::open(dir.path(), opts_with_merge()).unwrap();
    assert_eq!(db.get_opt(&r, &max).unwrap().unwrap(), b"max");
}

#[test]
fn invalid_options_name_the_option() {
    let root = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, Options)> = vec![
        ("write_buffer_size", Options { write_buffer_size: 1024, ..Options::default() }),
        ("write_buffer_size", Options { write_buffer_size: 0, ..Options::default() }),
        ("max_write_buffer_number", Options { max_write_buffer_number: 1, ..Options::default() }),
        ("max_write_buffer_number", Options { max_write_buffer_number: 0, ..Options::default() }),
        (
            "level0_slowdown_trigger",
            Options { level0_compaction_trigger: 8, level0_slowdown_trigger: 4, ..Options::default() },
        ),
        (
            "level0_stop_trigger",
            Options { level0_slowdown_trigger: 20, level0_stop_trigger: 10, ..Options::default() },
        ),
        ("level0_compaction_trigger", Options { level0_compaction_trigger: 0, ..Options::default() }),
        ("bloom_bits_per_key", Options { bloom_bits_per_key: 100, ..Options::default() }),
        ("block_size", Options { block_size: 0, ..Options::default() }),
        ("block_restart_interval", Options { block_restart_interval: 0, ..Options::default() }),
        ("blob_gc_age_cutoff", Options { blob_gc_age_cutoff: f64::NAN, ..Options::default() }),
        ("blob_gc_min_garbage_ratio", Options { blob_gc_min_garbage_ratio: -0.5, ..Options::default() }),
        ("blob_scan_runs", Options { blob_scan_runs: usize::MAX, ..Options::default() }),
        ("max_open_files", Options { max_open_files: 0, ..Options::default() }),
        ("compaction_nice", Options { compaction_nice: 20, ..Options::default() }),
        ("sync_gather_micros", Options { sync_gather_micros: 10_001, ..Options::default() }),
        ("write_spin_micros", Options { write_spin_micros: 10_001, ..Options::default() }),
        ("max_manifest_file_size", Options { max_manifest_file_size: 0, ..Options::default() }),
    ];
    for (n, (name, opts)) in cases.into_iter().enumerate() {
        let path = root.path().join(format!("db{n}"));
        let msg = expect_invalid(Db::open(&path, opts), name);
        assert!(msg.contains(name), "the message {msg:?} should name {name}");
        assert!(!path.exists(), "{name}: a rejected open must not create the directory");
    }
}

#[test]
fn opening_a_regular_file_is_an_invalid_argument() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    fs::write(&file, b"not a database").unwrap();
    for create_if_missing in [true, false] {
        let r = Db::open(&file, Options { create_if_missing, ..Options::default() });
        expect_invalid(r, "open of a regular file");
    }
    assert_eq!(fs::read(&file).unwrap(), b"not a database", "the file must be left alone");
}

#[test]
fn missing_database_without_create_is_not_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let no_create = || Options { create_if_missing: false, ..Options::default() };
    let missing = dir.path().join("missing");
    let r = Db::open(&missing, no_create());
    assert!(matches!(r, Err(Error::NotADatabase(_))), "missing dir: {r:?}");
    assert!(!missing.exists(), "nothing may be created");
    // An existing but empty directory is not a database either.
    let empty = dir.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let r = Db::open(&empty, no_create());
    assert!(matches!(r, Err(Error::NotADatabase(_))), "empty dir: {r:?}");
    assert!(!empty.join("CURRENT").exists());
}

#[test]
fn error_if_exists_on_an_existing_database() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), Options { error_if_exists: true, ..Options::default() }).unwrap();
        db.put(b"k", b"v").unwrap();
    }
    let r = Db::open(dir.path(), Options { error_if_exists: true, ..Options::default() });
    assert!(matches!(r, Err(Error::AlreadyExists(_))), "{r:?}");
    // The refused open left the database untouched.
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.get(b"k").unwrap().unwrap(), b"v");
}

#[test]
fn second_open_in_the_same_process_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let first = Db::open(dir.path(), Options::default()).unwrap();
    first.put(b"k", b"v").unwrap();
    for _ in 0..2 {
        let r = Db::open(dir.path(), Options::default());
        assert!(matches!(r, Err(Error::Locked(_))), "{r:?}");
    }
    // A clone shares the one engine; the lock is held until the last clone is gone.
    let clone = first.clone();
    drop(first);
    assert!(matches!(Db::open(dir.path(), Options::default()), Err(Error::Locked(_))));
    drop(clone);
    let again = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(again.get(b"k").unwrap().unwrap(), b"v");
    again.close().unwrap();
    Db::open(dir.path(), Options::default()).unwrap();
}

/// The child: runs only when the parent sets STRATA_LOCK_CHILD_DIR; prints the open's outcome.
#[test]
#[ignore = "run by second_process_open_is_locked as a child process"]
fn lock_child() {
    let Ok(dir) = std::env::var("STRATA_LOCK_CHILD_DIR") else { return };
    let r = Db::open(&dir, Options::default());
    println!("OPEN-RESULT {}", kind(&r));
}

fn open_in_child(dir: &Path) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["lock_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env("STRATA_LOCK_CHILD_DIR", dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "child failed: {:?}", out.status);
    BufReader::new(&out.stdout[..])
        .lines()
        .map_while(Result::ok)
        // libtest may print "test lock_child ... " on the same line first.
        .find_map(|l| {
            l.split_once("OPEN-RESULT ")
                .map(|(_, kind)| kind.split_whitespace().next().unwrap_or("").to_string())
        })
        .expect("the child printed no result")
}

#[test]
fn second_process_open_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put_opt(&WriteOptions { sync: true, disable_wal: false }, b"k", b"v").unwrap();
    assert_eq!(open_in_child(dir.path()), "Locked");
    drop(db);
    assert_eq!(open_in_child(dir.path()), "Ok");
    // The child's clean close left the database intact and unlocked.
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.get(b"k").unwrap().unwrap(), b"v");
}

#[test]
fn merge_without_an_operator_is_an_invalid_argument() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let w = WriteOptions::default();
    let msg = expect_invalid(db.merge_opt(&w, b"k", &1u64.to_le_bytes()), "merge");
    assert!(msg.contains("merge"), "{msg}");
    let mut b = WriteBatch::new();
    b.put(b"a", b"1").merge(b"k", 1u64.to_le_bytes());
    expect_invalid(db.write_opt(&w, b), "batch with a merge");
    assert_eq!(db.get(b"a").unwrap(), None, "the batch must not be half-applied");
    assert_eq!(db.get(b"k").unwrap(), None);
}

// ---------------------------------------------------------------------------------------------
// Files from a newer format version
// ---------------------------------------------------------------------------------------------

fn newer_version_ok<T: std::fmt::Debug>(r: &strata::Result<T>) -> bool {
    matches!(r, Err(Error::UnsupportedVersion { .. } | Error::Corruption(_)))
}

/// A closed database whose values are inline (`min_blob_size` 0) or in a blob file.
fn write_small_db(dir: &Path, min_blob_size: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let opts = Options { min_blob_size, ..Options::default() };
    let db = Db::open(dir, opts).unwrap();
    let entries: Vec<_> = (0..100).map(|i| (format!("key{i:03}").into_bytes(), vec![b'x'; 300])).collect();
    for (k, v) in &entries {
        db.put(k, v).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    entries
}

fn only_file(dir: &Path, suffix: &str) -> std::path::PathBuf {
    let files: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_str().unwrap().ends_with(suffix))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.into_iter().next().unwrap()
}

fn patch_u32(path: &Path, at: usize, value: u32) {
    let mut bytes = fs::read(path).unwrap();
    assert_eq!(u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()), 1, "version field should read 1");
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
    fs::write(path, bytes).unwrap();
}

/// Opening, reading and iterating all report the newer version (or corruption), never a panic
/// and never data.
fn check_newer_version_refused(dir: &Path, keys: &[(Vec<u8>, Vec<u8>)], what: &str) {
    let db = match Db::open(dir, Options { min_blob_size: 0, ..Options::default() }) {
        Ok(db) => db,
        Err(e) => {
            assert!(newer_version_ok::<()>(&Err(e.duplicate())), "{what}: open failed with {e:?}");
            return;
        }
    };
    for (k, _) in keys.iter().step_by(10) {
        let r = db.get(k);
        assert!(newer_version_ok(&r), "{what}: get returned {r:?}");
    }
    // Creating the iterator may already open the file and fail.
    let mut it = match db.cursor(&ReadOptions::new()) {
        Ok(it) => it,
        Err(e) => {
            assert!(newer_version_ok::<()>(&Err(e.duplicate())), "{what}: iter failed with {e:?}");
            return;
        }
    };
    it.seek_to_first();
    assert!(!it.valid(), "{what}: iterator returned data");
    let status = it.status();
    assert!(newer_version_ok(&status), "{what}: iterator status {status:?}");
}

#[test]
fn sst_from_a_newer_format_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let keys = write_small_db(dir.path(), 0);
    let sst = only_file(dir.path(), ".sst");
    let len = fs::metadata(&sst).unwrap().len() as usize;
    // docs/format-sst.md: format_version is at `size - 16`; it is checked before the footer
    // checksum, which covers it.
    patch_u32(&sst, len - 16, strata::internal::sst::FORMAT_VERSION + 1);
    check_newer_version_refused(dir.path(), &keys, "a newer sst version");
}

#[test]
fn blob_file_from_a_newer_format_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let keys = write_small_db(dir.path(), 64);
    let blob = only_file(dir.path(), ".blob");
    // docs/format-blob.md: the version is at offset 8, checked before the header checksum.
    patch_u32(&blob, 8, strata::internal::blob::format::FORMAT_VERSION + 1);
    check_newer_version_refused(dir.path(), &keys, "blob version 2");
}

/// The empty key is a key, as in LevelDB and RocksDB: the smallest one, through the memtable,
/// a flush, a compaction, a reopen, iterators in both directions and a merge.
#[test]
fn the_empty_key_is_the_smallest_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts_with_merge()).unwrap();
    db.put("", "empty").unwrap();
    db.put("a", "1").unwrap();
    assert_eq!(db.get("").unwrap(), Some(b"empty".to_vec()));
    db.flush().unwrap();
    db.put("", "newer").unwrap();
    db.compact_range(None, None).unwrap();
    db.close().unwrap();

    let db = Db::open(dir.path(), opts_with_merge()).unwrap();
    assert_eq!(db.get(b"").unwrap(), Some(b"newer".to_vec()));
    let keys: Vec<Vec<u8>> = db.iter().map(|kv| kv.unwrap().0).collect();
    assert_eq!(keys, [b"".to_vec(), b"a".to_vec()]);
    let mut it = db.cursor(&strata::ReadOptions::new()).unwrap();
    it.seek_to_last();
    it.prev();
    assert!(it.valid() && it.key().is_empty());
    it.seek(b"");
    assert!(it.valid() && it.key().is_empty());
    db.delete("").unwrap();
    assert_eq!(db.get("").unwrap(), None);
    db.merge("", 5u64.to_le_bytes()).unwrap();
    assert_eq!(db.get("").unwrap(), Some(5u64.to_le_bytes().to_vec()));
}
