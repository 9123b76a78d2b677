//! `Options::use_mmap_reads`: with it off, SST and blob files are read with `pread` and never
//! mapped, and a file that loses its tail under an open database is an error on read; with it
//! on (the default), the same damage kills the process with SIGBUS, which is why the option
//! exists (docs/durability.md, "Memory-mapped reads"). With it on, files are mapped only while
//! the database is no larger than `mmap_reads_max_db_size`.

#![cfg(target_os = "linux")]

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use strata::{Db, Options, ReadOptions};

const KEYS: u32 = 2_000;

fn options(mmap: bool) -> Options {
    // No block cache: every read goes to the file.
    Options { use_mmap_reads: mmap, cache_size: 0, ..Options::default() }
}

fn key(i: u32) -> [u8; 4] {
    i.to_be_bytes()
}

/// Even keys get small values (kept in the SST), odd keys large ones (kept in blob files).
fn value(i: u32) -> Vec<u8> {
    let len = if i.is_multiple_of(2) { 100 } else { 4_000 };
    vec![(i % 251) as u8; len]
}

/// A database whose data is all in SST and blob files.
fn filled(dir: &Path, mmap: bool) -> Db {
    let db = Db::open(dir, options(mmap)).unwrap();
    for i in 0..KEYS {
        db.put(key(i), value(i)).unwrap();
    }
    db.flush().unwrap();
    drop(db);
    Db::open(dir, options(mmap)).unwrap()
}

fn data_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst" || e == "blob"))
        .collect();
    files.sort();
    files
}

/// Data files of `dir` this process has memory-mapped, from /proc/self/maps.
fn mapped_files(dir: &Path) -> Vec<String> {
    let dir = fs::canonicalize(dir).unwrap().display().to_string();
    let maps = fs::read_to_string("/proc/self/maps").unwrap();
    maps.lines().filter(|l| l.contains(&dir)).map(str::to_string).collect()
}

fn read_all(db: &Db) -> Result<(), strata::Error> {
    for i in 0..KEYS {
        let got = db.get(key(i))?;
        assert_eq!(got.as_deref(), Some(&value(i)[..]), "key {i}");
    }
    Ok(())
}

/// Cuts every data file to half its length, as a failing disk or another process might.
fn truncate_data_files(dir: &Path) {
    for path in data_files(dir) {
        let f = fs::OpenOptions::new().write(true).open(&path).unwrap();
        let len = f.metadata().unwrap().len();
        f.set_len(len / 2).unwrap();
    }
}

#[test]
fn unmapped_reads_see_every_value_and_map_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled(dir.path(), false);
    assert!(data_files(dir.path()).iter().any(|p| p.extension().unwrap() == "blob"));
    read_all(&db).unwrap();
    let mut it = db.cursor(&ReadOptions::new()).unwrap();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        assert_eq!(it.value(), &value(n)[..]);
        n += 1;
        it.next();
    }
    assert_eq!(n, KEYS);
    // Backward, and from a seek in the middle: the blob readahead runs the other way.
    it.seek_to_last();
    while it.valid() {
        n -= 1;
        assert_eq!(it.key(), &key(n)[..]);
        assert_eq!(it.value(), &value(n)[..]);
        it.prev();
    }
    assert_eq!(n, 0);
    it.seek(&key(KEYS / 2));
    for i in KEYS / 2..KEYS / 2 + 50 {
        assert_eq!(it.value(), &value(i)[..]);
        it.next();
    }
    it.status().unwrap();
    assert_eq!(mapped_files(dir.path()), Vec::<String>::new());
    drop(it);
    drop(db);

    let db = filled(dir.path(), true);
    read_all(&db).unwrap();
    assert!(!mapped_files(dir.path()).is_empty(), "the default maps the data files");
}

#[test]
fn files_opened_once_the_database_outgrows_the_mapping_limit_are_not_mapped() {
    let dir = tempfile::tempdir().unwrap();
    drop(filled(dir.path(), true));
    let size: u64 = data_files(dir.path()).iter().map(|p| fs::metadata(p).unwrap().len()).sum();
    let limited = |limit: u64| Options { mmap_reads_max_db_size: limit, ..options(true) };

    let db = Db::open(dir.path(), limited(size / 2)).unwrap();
    assert_eq!(db.property("strata.mmap-reads").as_deref(), Some("0"));
    read_all(&db).unwrap();
    assert_eq!(mapped_files(dir.path()), Vec::<String>::new(), "larger than the limit: pread");
    drop(db);

    let db = Db::open(dir.path(), limited(size * 2)).unwrap();
    assert_eq!(db.property("strata.mmap-reads").as_deref(), Some("1"));
    read_all(&db).unwrap();
    assert!(!mapped_files(dir.path()).is_empty(), "within the limit: mapped");
    // Grown past the limit: the files a flush writes from now on are read with pread.
    for i in 0..KEYS {
        db.put(key(KEYS + i), value(i)).unwrap();
    }
    db.flush().unwrap();
    assert_eq!(db.property("strata.mmap-reads").as_deref(), Some("0"));
    let before = mapped_files(dir.path()).len();
    assert_eq!(db.get(key(2 * KEYS - 1)).unwrap(), Some(value(KEYS - 1)));
    assert_eq!(mapped_files(dir.path()).len(), before, "the new files are not mapped");
    drop(db);

    let db = Db::open(dir.path(), Options { use_mmap_reads: false, ..limited(size * 100) }).unwrap();
    assert_eq!(db.property("strata.mmap-reads").as_deref(), Some("0"));
}

#[test]
fn a_file_truncated_under_unmapped_reads_is_an_error_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled(dir.path(), false);
    read_all(&db).unwrap();
    truncate_data_files(dir.path());
    let errors = (0..KEYS).filter(|&i| db.get(key(i)).is_err()).count();
    assert!(errors > 0, "reads of the lost halves must fail");
    // Reads of what is left still work, and the process is alive to say so.
    assert_eq!(db.get(key(0)).unwrap().as_deref(), Some(&value(0)[..]));
}

/// The hazard the option removes, shown in a child process: the same damage under mapped
/// reads ends the process with SIGBUS.
#[test]
fn a_file_truncated_under_mapped_reads_kills_the_process_with_sigbus() {
    if let Some(dir) = std::env::var_os("STRATA_MMAP_CHILD_DIR") {
        let dir = PathBuf::from(dir);
        let db = filled(&dir, true);
        read_all(&db).unwrap();
        truncate_data_files(&dir);
        // Every key, errors or not, so that the reads reach the lost half of the mapped SST.
        let errors = (0..KEYS).filter(|&i| db.get(key(i)).is_err()).count();
        println!("survived, with {errors} failed reads");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "a_file_truncated_under_mapped_reads_kills_the_process_with_sigbus", "--nocapture"])
        .env("STRATA_MMAP_CHILD_DIR", dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(7), "SIGBUS expected; child said {out:?}");
}
