//! What each `WalRecoveryMode` does with a torn WAL tail, a torn non-final WAL, a garbled record
//! and a torn MANIFEST, and what open sets aside in `lost/` instead of deleting
//! (docs/durability.md, "Recovery").

use std::path::PathBuf;
use std::sync::Arc;

use strata::fs::FileSystem;
use strata::{Db, Error, Options, WalRecoveryMode, WriteOptions};
use strata_testkit::{record_extents, replace_file, CrashMode, FaultFs, MemFs, Op, Rule, When};

const SYNC: WriteOptions = WriteOptions { sync: true, disable_wal: false };
const NO_SYNC: WriteOptions = WriteOptions { sync: false, disable_wal: false };

fn dir() -> PathBuf {
    PathBuf::from("/db")
}

fn options(fs: Arc<dyn FileSystem>, mode: WalRecoveryMode) -> Options {
    Options { fs, wal_recovery_mode: mode, ..Options::default() }
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

fn wals(fs: &MemFs) -> Vec<String> {
    let mut names: Vec<String> =
        fs.list_dir(&dir()).unwrap().into_iter().filter(|n| n.ends_with(".log")).collect();
    names.sort();
    names
}

fn lost(fs: &MemFs) -> Vec<String> {
    let mut names = fs.list_dir(&dir().join("lost")).unwrap_or_default();
    names.sort();
    names
}

/// Keys 0..n written with `opts`, the database dropped; returns the image.
fn written(n: usize, opts: &WriteOptions) -> MemFs {
    let mem = MemFs::new();
    let db = Db::open(dir(), options(Arc::new(mem.clone()), WalRecoveryMode::PointInTime)).unwrap();
    for i in 0..n {
        db.put_opt(opts, &key(i), b"value").unwrap();
    }
    drop(db);
    mem.crash_clone(CrashMode::KeepUnsynced)
}

fn present(db: &Db, n: usize) -> usize {
    (0..n).filter(|&i| db.get(key(i)).unwrap().is_some()).count()
}

/// The last record of the only WAL cut in half: a torn tail.
fn torn_tail_image() -> MemFs {
    let img = written(20, &NO_SYNC);
    let wal = dir().join(wals(&img).pop().unwrap());
    let (start, end) = *record_extents(&img, &wal).last().unwrap();
    let bytes = img.contents(&wal).unwrap();
    replace_file(&img, &wal, &bytes[..(start + end) / 2]);
    img
}

#[test]
fn a_torn_tail_is_dropped_and_reported_except_under_absolute_consistency() {
    for mode in [WalRecoveryMode::PointInTime, WalRecoveryMode::TolerateCorruptedTailRecords] {
        let img = torn_tail_image();
        let wal = wals(&img).pop().unwrap();
        let db = Db::open(dir(), options(Arc::new(img.clone()), mode)).unwrap();
        assert_eq!(present(&db, 20), 19, "{mode:?}");
        let report = db.recovery_report();
        assert_eq!(report.wal_tails.len(), 1, "{mode:?}: {report:?}");
        assert!(db.property("strata.recovery").unwrap().contains("dropped the tail of"), "{mode:?}");
        drop(db);
        let log = String::from_utf8(img.contents(&dir().join("LOG")).unwrap()).unwrap();
        assert!(log.contains("[WARN] Recovery: dropped the tail of"), "{mode:?}: the LOG says it:\n{log}");
        assert_eq!(lost(&img), vec![wal.clone()], "{mode:?}: the WAL with the dropped tail is kept");
    }
    let img = torn_tail_image();
    let before = img.list_dir(&dir()).unwrap();
    let err =
        Db::open(dir(), options(Arc::new(img.clone()), WalRecoveryMode::AbsoluteConsistency)).unwrap_err();
    assert!(err.is_corruption() && err.to_string().contains("absolute"), "{err}");
    let mut after = img.list_dir(&dir()).unwrap();
    after.retain(|n| n != "LOCK");
    let mut before = before;
    before.retain(|n| n != "LOCK");
    assert_eq!(before, after, "a refused open changes nothing");
    let db = Db::open(dir(), options(Arc::new(img), WalRecoveryMode::SkipAnyCorruptedRecords)).unwrap();
    assert_eq!(present(&db, 20), 19);
}

#[test]
fn a_flipped_byte_is_corruption_in_every_mode_but_salvage() {
    let img = written(20, &SYNC);
    let wal = dir().join(wals(&img).pop().unwrap());
    let (start, end) = record_extents(&img, &wal)[10];
    let mut bytes = img.contents(&wal).unwrap();
    bytes[(start + end) / 2] ^= 0x10;
    replace_file(&img, &wal, &bytes);
    for mode in [
        WalRecoveryMode::PointInTime,
        WalRecoveryMode::TolerateCorruptedTailRecords,
        WalRecoveryMode::AbsoluteConsistency,
    ] {
        match Db::open(dir(), options(Arc::new(img.clone()), mode)) {
            Err(Error::Corruption(m)) => assert!(m.contains(".log") && m.contains("offset"), "{mode:?}: {m}"),
            other => panic!("{mode:?}: {other:?}"),
        }
    }
    let db =
        Db::open(dir(), options(Arc::new(img.clone()), WalRecoveryMode::SkipAnyCorruptedRecords)).unwrap();
    assert_eq!(present(&db, 20), 19, "salvage skips the damaged batch only");
    assert_eq!(db.recovery_report().wal_skipped.len(), 1);
}

#[test]
fn the_last_synced_record_with_a_flipped_byte_is_corruption_not_a_torn_tail() {
    let img = written(20, &SYNC);
    let wal = dir().join(wals(&img).pop().unwrap());
    let (start, end) = *record_extents(&img, &wal).last().unwrap();
    for at in [start, start + 5, start + 7, (start + end) / 2, end - 1] {
        let case = img.crash_clone(CrashMode::KeepUnsynced);
        let mut bytes = case.contents(&wal).unwrap();
        bytes[at] ^= 0x01;
        replace_file(&case, &wal, &bytes);
        let err = Db::open(dir(), options(Arc::new(case), WalRecoveryMode::PointInTime)).unwrap_err();
        assert!(err.is_corruption(), "byte {at}: {err}");
    }
}

/// Unsynced writes in a WAL whose flush failed, then a torn end of that WAL: a non-final WAL
/// with a torn tail and a final WAL after it.
fn torn_non_final_image() -> MemFs {
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let db = Db::open(dir(), options(Arc::new(fault.clone()), WalRecoveryMode::PointInTime)).unwrap();
    for i in 0..20 {
        db.put_opt(&NO_SYNC, &key(i), b"value").unwrap();
    }
    fault.add_rule(Rule::new(Op::Create).on_path(".sst").when(When::Always));
    assert!(db.flush().is_err());
    drop(db);
    let img = mem.crash_clone(CrashMode::KeepUnsynced);
    let names = wals(&img);
    assert_eq!(names.len(), 2, "{names:?}");
    let first = dir().join(&names[0]);
    let (start, _) = *record_extents(&img, &first).last().unwrap();
    let bytes = img.contents(&first).unwrap();
    replace_file(&img, &first, &bytes[..start + 3]);
    img
}

#[test]
fn a_torn_non_final_wal_stops_point_in_time_recovery_and_keeps_both_wals() {
    let img = torn_non_final_image();
    let names = wals(&img);
    let db = Db::open(dir(), options(Arc::new(img.clone()), WalRecoveryMode::PointInTime)).unwrap();
    assert_eq!(present(&db, 20), 19);
    let report = db.recovery_report();
    assert_eq!(report.wal_tails.len(), 1, "{report:?}");
    drop(db);
    assert_eq!(lost(&img), names, "the torn WAL and the one after it are kept in lost/");
    // The recovered state was flushed: a second open finds nothing more to drop.
    let db = Db::open(dir(), options(Arc::new(img), WalRecoveryMode::PointInTime)).unwrap();
    assert!(db.recovery_report().is_clean());
    assert_eq!(present(&db, 20), 19);
}

#[test]
fn a_torn_manifest_tail_is_dropped_only_while_the_wal_it_needs_is_there() {
    // The last MANIFEST record cut short: an edit that was never acknowledged.
    let img = written(10, &SYNC);
    let current = String::from_utf8(img.contents(&dir().join("CURRENT")).unwrap()).unwrap();
    let manifest = dir().join(current.trim_end());
    let db = Db::open(dir(), options(Arc::new(img.clone()), WalRecoveryMode::PointInTime)).unwrap();
    db.put_opt(&SYNC, b"more", b"v").unwrap();
    db.flush().unwrap();
    drop(db);
    let current = String::from_utf8(img.contents(&dir().join("CURRENT")).unwrap()).unwrap();
    let manifest_after = dir().join(current.trim_end());
    assert_ne!(manifest, manifest_after);
    let (start, end) = *record_extents(&img, &manifest_after).last().unwrap();
    let bytes = img.contents(&manifest_after).unwrap();

    // The flush edit dropped, and its WAL already deleted: the edit had been acknowledged.
    let gone = img.crash_clone(CrashMode::KeepUnsynced);
    replace_file(&gone, &manifest_after, &bytes[..(start + end) / 2]);
    let err = Db::open(dir(), options(Arc::new(gone), WalRecoveryMode::PointInTime)).unwrap_err();
    assert!(err.is_corruption() && err.to_string().contains("acknowledged"), "{err}");
}

#[test]
fn tables_no_manifest_accounts_for_go_to_lost_not_away() {
    let img = written(10, &SYNC);
    let stray = dir().join("000900.sst");
    replace_file(&img, &stray, b"an unfinished flush output");
    let tmp = dir().join("CURRENT.dbtmp");
    replace_file(&img, &tmp, b"MANIFEST-0000");
    let db = Db::open(dir(), options(Arc::new(img.clone()), WalRecoveryMode::PointInTime)).unwrap();
    assert_eq!(db.recovery_report().moved_to_lost, vec!["000900.sst".to_string()]);
    assert_eq!(present(&db, 10), 10);
    drop(db);
    assert_eq!(lost(&img), vec!["000900.sst".to_string()]);
    assert!(img.contents(&tmp).is_none(), "a temporary file is not evidence");
}

#[test]
fn the_partial_record_of_a_failed_append_is_dropped_because_the_engine_sealed_its_wal() {
    for keep in [3, 40, 299, 100_000] {
        let mem = MemFs::new();
        let fault = FaultFs::new(Arc::new(mem.clone()));
        let db = Db::open(dir(), options(Arc::new(fault.clone()), WalRecoveryMode::PointInTime)).unwrap();
        for i in 0..20 {
            db.put_opt(&SYNC, &key(i), b"value").unwrap();
        }
        // Lands `keep` bytes of the record (all but the last byte when it is shorter), then fails.
        fault.add_rule(Rule::new(Op::Write).on_path(".log").torn(keep));
        assert!(db.put_opt(&SYNC, b"failed", &[b'f'; 300]).is_err());
        fault.clear();
        drop(db);
        // A process crash keeps the partial record; a power loss may drop it (it was never synced).
        for (image, kept) in [
            (mem.crash_clone(CrashMode::KeepUnsynced), true),
            (mem.crash_clone(CrashMode::DropUnsynced), false),
        ] {
            let db = Db::open(dir(), options(Arc::new(image), WalRecoveryMode::PointInTime))
                .unwrap_or_else(|e| panic!("keep {keep}: {e}"));
            assert_eq!(present(&db, 20), 20, "keep {keep}");
            assert_eq!(db.get(b"failed").unwrap(), None, "keep {keep}");
            let report = db.recovery_report();
            let dropped = report.wal_tails.iter().any(|t| t.reason.contains("append that failed"));
            assert!(dropped || !kept, "keep {keep}: {report:?}");
        }
    }
}
