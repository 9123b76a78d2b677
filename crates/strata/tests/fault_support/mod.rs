//! Helpers shared by the fault-injection tests (`fault_injection.rs`, `fault_injection_wal.rs`):
//! the small-memtable options, random batches and their history, exact and prefix checks of a
//! database's contents, the read-only error state, and the filesystem listings the tests look
//! at. It must not inject faults or crash anything itself: each test arms its own rules.

// Each test binary includes this module and uses a different subset of it.
#![allow(dead_code)]

use std::io::ErrorKind;
use std::path::PathBuf;
use std::sync::Arc;

use strata::fs::FileSystem;
use strata::{Db, Error, Options, ReadOptions, WriteOptions};
use strata_testkit::{background_panics, diff, dump, History, Kv, Mutation, Rng};

pub const SYNC: WriteOptions = WriteOptions { sync: true, disable_wal: false };
pub const NO_SYNC: WriteOptions = WriteOptions { sync: false, disable_wal: false };

pub fn dir() -> PathBuf {
    PathBuf::from("/db")
}

/// Small memtables and an eager compaction trigger so a few hundred batches cross several
/// flushes and compactions; values of 200 bytes and more go to blob files.
pub fn options(fs: Arc<dyn FileSystem>) -> Options {
    Options {
        fs,
        write_buffer_size: 64 << 10,
        level0_compaction_trigger: 2,
        min_blob_size: 200,
        cache_size: 1 << 20,
        ..Options::default()
    }
}

/// Like [`options`] but compactions only run when a test asks for one.
pub fn manual_compaction_options(fs: Arc<dyn FileSystem>) -> Options {
    Options { level0_compaction_trigger: 20, ..options(fs) }
}

pub fn value(batch: usize, j: usize, len: usize) -> Vec<u8> {
    format!("<{batch}.{j}>").into_bytes().into_iter().cycle().take(len.max(6)).collect()
}

/// 1–4 puts or deletes over 400 keys; value sizes straddle the blob threshold.
pub fn random_batch(rng: &mut Rng, batch: usize) -> Vec<Mutation> {
    (0..1 + rng.up_to(3))
        .map(|j| {
            let key = format!("key{:04}", rng.below(400)).into_bytes();
            if rng.percent(10) {
                Mutation::Delete(key)
            } else {
                Mutation::Put(key, value(batch, j, 10 + rng.up_to(590)))
            }
        })
        .collect()
}

/// Writes `n` batches with `opts`, recording them; panics on a failed write.
pub fn write_batches(db: &Db, h: &mut History, rng: &mut Rng, n: usize, opts: &WriteOptions) {
    for _ in 0..n {
        let i = h.push(random_batch(rng, h.len()));
        db.write_opt(opts, h.write_batch(i)).unwrap_or_else(|e| panic!("batch {i}: {e}"));
    }
}

/// The database holds exactly `expected`, by a scan and by point reads.
pub fn check_exact(db: &Db, expected: &Kv, ctx: &str) {
    let actual = dump(db).unwrap_or_else(|e| panic!("{ctx}: scan failed: {e}"));
    if &actual != expected {
        panic!("{ctx}: {}", diff(expected, &actual));
    }
    let r = ReadOptions::new();
    for (k, v) in expected {
        let got = db.get_opt(&r, k).unwrap_or_else(|e| panic!("{ctx}: get failed: {e}"));
        assert_eq!(got.as_ref(), Some(v), "{ctx}: get {}", String::from_utf8_lossy(k));
    }
}

/// The database equals the state after some prefix of at least `floor` batches; returns it.
pub fn check_prefix(db: &Db, h: &History, floor: usize, ctx: &str) -> usize {
    let actual = dump(db).unwrap_or_else(|e| panic!("{ctx}: scan failed: {e}"));
    let k = h.matching_prefix(&actual, floor).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    check_exact(db, &h.state_after(k), ctx);
    k
}

pub fn open(fs: Arc<dyn FileSystem>, ctx: &str) -> Db {
    Db::open(dir(), options(fs)).unwrap_or_else(|e| panic!("{ctx}: open failed: {e}"))
}

pub fn io_kind(e: &Error) -> Option<ErrorKind> {
    match e {
        Error::Io { source, .. } => Some(source.kind()),
        _ => None,
    }
}

pub fn is_background(e: &Error) -> bool {
    matches!(e, Error::Background { .. })
}

/// The database is in the read-only error state: the property says so, writes fail with
/// `Error::Background`, and flushes fail.
pub fn assert_read_only(db: &Db, ctx: &str) {
    let prop = db.property("strata.background-error").unwrap_or_default();
    assert!(!prop.is_empty(), "{ctx}: strata.background-error is empty");
    let e =
        db.put_opt(&NO_SYNC, b"after-error", b"x").expect_err("a write after a background error succeeded");
    assert!(is_background(&e), "{ctx}: write after the error gave {e:?}");
    assert!(db.flush().is_err(), "{ctx}: flush after a background error succeeded");
}

pub fn table_and_blob_files(fs: &dyn FileSystem) -> Vec<String> {
    let mut names: Vec<String> = fs
        .list_dir(&dir())
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".sst") || n.ends_with(".blob"))
        .collect();
    names.sort();
    names
}

pub fn assert_no_engine_panics() {
    assert_eq!(background_panics(), 0, "a strata background thread panicked (see the output above)");
}

pub fn newest_wal(fs: &dyn FileSystem) -> PathBuf {
    let mut wals: Vec<String> =
        fs.list_dir(&dir()).unwrap().into_iter().filter(|n| n.ends_with(".log")).collect();
    wals.sort();
    dir().join(wals.last().expect("no WAL"))
}
