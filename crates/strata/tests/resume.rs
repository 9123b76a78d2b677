//! `Db::resume` after background errors, on `strata-testkit`'s `MemFs` and `FaultFs`: a full
//! disk (ENOSPC) in a flush, in a WAL append and in a WAL fsync is cleared once there is space
//! again, while corruption and no error at all are left as they are. Every test checks that the
//! error keeps its type (the cause is an `Error::Io` of kind `StorageFull`, not a string), that
//! the database refuses writes until the resume succeeds and accepts them after, that a failed
//! WAL is never written or synced again, and that after a reopen (clean, or a power loss) every
//! acknowledged write is there, and a failed write is there whole or not at all.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata::fs::FileSystem;
use strata::{Db, Error, Options, ReadOptions, WriteBatch, WriteOptions};
use strata_testkit::{
    background_panics, dump, watch_background_panics, CrashMode, FaultFs, Kv, MemFs, Op, Rule, When,
};

const SYNC: WriteOptions = WriteOptions { sync: true, disable_wal: false };
const NO_SYNC: WriteOptions = WriteOptions { sync: false, disable_wal: false };

fn dir() -> PathBuf {
    PathBuf::from("/db")
}

/// Small memtables; compactions only when a test asks for one (or lowers the trigger).
fn options(fs: Arc<dyn FileSystem>) -> Options {
    Options {
        fs,
        write_buffer_size: 64 << 10,
        level0_compaction_trigger: 20,
        cache_size: 1 << 20,
        ..Options::default()
    }
}

fn open(fs: Arc<dyn FileSystem>, ctx: &str) -> Db {
    Db::open(dir(), options(fs)).unwrap_or_else(|e| panic!("{ctx}: open failed: {e}"))
}

/// The kind of an IO error, or of the IO error a background error was caused by.
fn io_kind(e: &Error) -> Option<ErrorKind> {
    match e.background_cause().unwrap_or(e) {
        Error::Io { source, .. } => Some(source.kind()),
        _ => None,
    }
}

/// `e` is a background error caused by a full disk: typed, retryable, and with the usual message.
fn assert_disk_full(e: &Error, ctx: &str) {
    assert!(matches!(e, Error::Background { cause: Some(_), .. }), "{ctx}: not a background error: {e:?}");
    assert_eq!(io_kind(e), Some(ErrorKind::StorageFull), "{ctx}: {e:?}");
    assert!(e.is_retryable(), "{ctx}: a full disk must be retryable: {e:?}");
    assert!(e.to_string().starts_with("database is read-only after a background error: "), "{ctx}: {e}");
}

fn newest_wal(fs: &dyn FileSystem) -> PathBuf {
    let mut wals: Vec<String> =
        fs.list_dir(&dir()).unwrap().into_iter().filter(|n| n.ends_with(".log")).collect();
    wals.sort();
    dir().join(wals.last().expect("no WAL"))
}

fn file_name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

/// What was written: acknowledged values, and the writes that failed (each a whole batch).
#[derive(Default)]
struct Writes {
    acked: Kv,
    failed: Vec<Kv>,
    next: usize,
}

impl Writes {
    /// The next batch: two keys with the same fresh value, or `keys` if given.
    fn next_batch(&mut self, keys: Option<&[Vec<u8>]>) -> Kv {
        let n = self.next;
        self.next += 1;
        let value = format!("value-{n:05}").into_bytes().repeat(20);
        let fresh = [format!("key{n:05}a").into_bytes(), format!("key{n:05}b").into_bytes()];
        keys.unwrap_or(&fresh).iter().map(|k| (k.clone(), value.clone())).collect()
    }

    /// Writes the next batch; records it as acknowledged or failed and returns the result.
    fn write(&mut self, db: &Db, opts: &WriteOptions, keys: Option<&[Vec<u8>]>) -> strata::Result<()> {
        let batch = self.next_batch(keys);
        let mut wb = WriteBatch::new();
        for (k, v) in &batch {
            wb.put(k, v);
        }
        let result = db.write_opt(opts, wb);
        match &result {
            Ok(()) => self.acked.extend(batch),
            Err(_) => self.failed.push(batch),
        }
        result
    }

    /// Writes `n` batches that must all succeed.
    fn write_ok(&mut self, db: &Db, opts: &WriteOptions, n: usize, ctx: &str) {
        for _ in 0..n {
            self.write(db, opts, None).unwrap_or_else(|e| panic!("{ctx}: write failed: {e}"));
        }
    }

    /// The database holds every acknowledged value; of each failed batch, the keys not
    /// overwritten since are all there with its value or all absent; and nothing else.
    fn check(&self, db: &Db, ctx: &str) {
        let actual = dump(db).unwrap_or_else(|e| panic!("{ctx}: scan failed: {e}"));
        for (k, v) in &self.acked {
            let got = actual.get(k);
            assert!(
                got == Some(v),
                "{ctx}: acknowledged {} is {:?}",
                String::from_utf8_lossy(k),
                got.map(|g| g.len())
            );
        }
        let mut allowed: BTreeMap<&[u8], &[u8]> = BTreeMap::new();
        for batch in &self.failed {
            let own: Vec<_> = batch.iter().filter(|(k, _)| !self.acked.contains_key(*k)).collect();
            let present = own.iter().filter(|(k, v)| actual.get(*k) == Some(v)).count();
            assert!(present == 0 || present == own.len(), "{ctx}: a failed batch is there in part");
            allowed.extend(own.iter().map(|(k, v)| (k.as_slice(), v.as_slice())));
        }
        for (k, v) in &actual {
            let known = self.acked.get(k).map(Vec::as_slice).or_else(|| allowed.get(k.as_slice()).copied());
            assert_eq!(known, Some(v.as_slice()), "{ctx}: unexpected {}", String::from_utf8_lossy(k));
        }
        let r = ReadOptions::new();
        for (k, v) in &self.acked {
            assert_eq!(
                db.get_opt(&r, k).unwrap().as_ref(),
                Some(v),
                "{ctx}: get {}",
                String::from_utf8_lossy(k)
            );
        }
    }
}

/// Writes are refused with the error, and so are flushes.
fn assert_read_only(db: &Db, ctx: &str) -> Error {
    let e = db.put_opt(&NO_SYNC, b"refused", b"x").expect_err("a write in the error state succeeded");
    assert!(matches!(e, Error::Background { .. }), "{ctx}: {e:?}");
    assert!(db.flush().is_err(), "{ctx}: a flush in the error state succeeded");
    assert!(!db.property("strata.background-error").unwrap_or_default().is_empty(), "{ctx}");
    e
}

/// No memtable waits for a flush: what `resume` retried is done before it returned, so that
/// nothing depends on a WAL it abandoned any more.
fn assert_flushed(db: &Db, ctx: &str) {
    assert_eq!(db.property("strata.num-immutable-mem-table").as_deref(), Some("0"), "{ctx}");
    assert_eq!(db.property("strata.background-error").as_deref(), Some(""), "{ctx}");
}

/// Reopens each crash image of `mem` (power loss, process crash) and checks `w` in it.
fn check_after_crashes(mem: &MemFs, w: &Writes, ctx: &str) {
    for mode in [CrashMode::DropUnsynced, CrashMode::KeepUnsynced] {
        let ctx = format!("{ctx}, reopened after {mode:?}");
        let db = open(Arc::new(mem.crash_clone(mode)), &ctx);
        w.check(&db, &ctx);
    }
}

#[test]
fn enospc_in_a_flush_is_retried_by_resume_once_there_is_space() {
    watch_background_panics();
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let db = open(Arc::new(fault.clone()), "open");
    let mut w = Writes::default();
    w.write_ok(&db, &SYNC, 30, "before the fault");
    w.write_ok(&db, &NO_SYNC, 30, "before the fault");

    // The disk is full for new tables: the flush cannot write its output.
    fault.add_rule(Rule::new(Op::Write).on_path(".sst").kind(ErrorKind::StorageFull).when(When::Always));
    let err = db.flush().expect_err("a flush on a full disk succeeded");
    assert_disk_full(&err, "the failed flush");
    assert!(err.to_string().contains(": flush: io error"), "{err}");
    assert_disk_full(&assert_read_only(&db, "after the failed flush"), "a write after the failed flush");
    w.check(&db, "reads after the failed flush");

    // Still full: the retried flush fails again, and the database stays read-only.
    let again = db.resume().expect_err("resume succeeded on a full disk");
    assert_disk_full(&again, "resume on a full disk");
    assert_read_only(&db, "after a failed resume");

    fault.clear(); // space is back
    db.resume().expect("resume with space");
    assert_flushed(&db, "after resume");
    assert_eq!(db.property("strata.num-files-at-level0").as_deref(), Some("1"), "the retried flush");
    w.write_ok(&db, &NO_SYNC, 30, "after resume");
    db.flush().expect("a flush after resume");
    w.write_ok(&db, &SYNC, 30, "after resume");
    w.check(&db, "after resume");
    check_after_crashes(&mem, &w, "flush ENOSPC");
    db.close().expect("close after a successful resume");
    let db = open(Arc::new(fault.clone()), "clean reopen");
    w.check(&db, "clean reopen after flush ENOSPC");
    assert_eq!(background_panics(), 0);
}

#[test]
fn enospc_in_a_wal_append_abandons_that_wal_and_resume_starts_another() {
    watch_background_panics();
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let db = open(Arc::new(fault.clone()), "open");
    let mut w = Writes::default();
    w.write_ok(&db, &SYNC, 20, "before the fault");
    let old_wal = newest_wal(&mem);

    // Room for a few more records, then ENOSPC in the middle of one (it lands in part).
    fault.set_space_limit(Some(4 << 10));
    let raw = loop {
        if let Err(e) = w.write(&db, &SYNC, None) {
            break e;
        }
        assert!(w.next < 1000, "the space limit never filled");
    };
    assert_eq!(io_kind(&raw), Some(ErrorKind::StorageFull), "the failed write itself: {raw:?}");
    assert_eq!(newest_wal(&mem), old_wal, "the records went to the WAL that failed");
    let later = assert_read_only(&db, "after ENOSPC in the WAL");
    assert_disk_full(&later, "a write after ENOSPC in the WAL");
    assert!(later.to_string().contains(": WAL write: "), "{later}");

    // From here on, any write or sync of the failed WAL shows up as an injected fault.
    let abandoned = mem.contents(&old_wal).expect("the failed WAL is still there");
    let name = file_name(&old_wal);
    fault.add_rule(Rule::new(Op::Write).on_path(&name).when(When::Always));
    fault.add_rule(Rule::new(Op::Sync).on_path(&name).when(When::Always));

    // Still full: not even the new WAL's header fits.
    let again = db.resume().expect_err("resume succeeded on a full disk");
    assert_disk_full(&again, "resume on a full disk");
    assert_read_only(&db, "after a failed resume");

    fault.set_space_limit(None);
    // Slow syncs make the flush slow: `resume` must still return only once it is done.
    fault.set_sync_latency(Duration::from_millis(30));
    db.resume().expect("resume with space");
    assert_flushed(&db, "after resume");
    fault.set_sync_latency(Duration::ZERO);
    w.write_ok(&db, &SYNC, 20, "after resume");
    w.write_ok(&db, &NO_SYNC, 20, "after resume");
    assert_ne!(newest_wal(&mem), old_wal, "writes after resume go to a new WAL");
    db.flush().expect("a flush after resume");
    db.sync_wal().expect("sync_wal after resume");
    w.write_ok(&db, &SYNC, 5, "after the flush");

    assert_eq!(fault.injected(), Vec::<String>::new(), "the abandoned WAL was written or synced again");
    // It stays as it was until the flush of its records made it obsolete.
    if let Some(now) = mem.contents(&old_wal) {
        assert_eq!(now, abandoned, "the abandoned WAL changed");
    }
    w.check(&db, "after resume");
    check_after_crashes(&mem, &w, "WAL ENOSPC");
    drop(db);
    let db = open(Arc::new(fault.clone()), "clean reopen");
    w.check(&db, "clean reopen after WAL ENOSPC");
    assert_eq!(background_panics(), 0);
}

/// A failed fsync may have dropped the WAL's unsynced pages (fsyncgate), so the WAL is never
/// synced again, and the failed group's record, which is complete in it, must never come back
/// beside the writes after the resume that reuse its sequence numbers.
#[test]
fn a_failed_wal_fsync_is_never_retried_and_its_record_never_shadows_later_writes() {
    watch_background_panics();
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let db = open(Arc::new(fault.clone()), "open");
    let mut w = Writes::default();
    w.write_ok(&db, &NO_SYNC, 20, "before the fault");
    w.write_ok(&db, &SYNC, 5, "before the fault");
    let old_wal = newest_wal(&mem);
    let name = file_name(&old_wal);

    fault.add_rule(Rule::new(Op::Sync).on_path(&name).kind(ErrorKind::StorageFull));
    let raw = w.write(&db, &SYNC, None).expect_err("the write whose fsync failed succeeded");
    assert_eq!(io_kind(&raw), Some(ErrorKind::StorageFull), "{raw:?}");
    let failed_keys: Vec<Vec<u8>> = w.failed[0].keys().cloned().collect();
    assert_disk_full(&assert_read_only(&db, "after the failed fsync"), "after the failed fsync");
    fault.clear();
    fault.add_rule(Rule::new(Op::Write).on_path(&name).when(When::Always));
    fault.add_rule(Rule::new(Op::Sync).on_path(&name).when(When::Always));
    let touched = || fault.injected_paths().iter().filter(|p| **p == old_wal).count();

    // The resume switches to a new WAL, but its flush finds the disk full for tables.
    fault.add_rule(Rule::new(Op::Write).on_path(".sst").kind(ErrorKind::StorageFull).when(When::Always));
    let again = db.resume().expect_err("resume succeeded while tables could not be written");
    assert_disk_full(&again, "resume whose flush failed");
    assert!(again.to_string().contains(": flush: "), "the flush's error replaced the WAL's: {again}");
    // A crash now finds the old WAL (with the failed record) and an empty new one.
    check_after_crashes(&mem, &w, "crash during a failed resume");

    fault.clear();
    fault.add_rule(Rule::new(Op::Write).on_path(&name).when(When::Always));
    fault.add_rule(Rule::new(Op::Sync).on_path(&name).when(When::Always));
    fault.set_sync_latency(Duration::from_millis(30));
    db.resume().expect("the second resume");
    assert_flushed(&db, "after the second resume");
    fault.set_sync_latency(Duration::ZERO);
    // The same keys again, acknowledged this time, at the sequence numbers the failed group had.
    w.write(&db, &SYNC, Some(&failed_keys)).expect("rewriting the failed keys");
    w.write_ok(&db, &NO_SYNC, 10, "after resume");
    w.write_ok(&db, &SYNC, 10, "after resume");
    assert_eq!(touched(), 1, "the WAL whose fsync failed was touched again: {:?}", fault.injected());
    w.check(&db, "after resume");
    check_after_crashes(&mem, &w, "after the resume");
    db.close().expect("close after resume");
    let db = open(Arc::new(fault.clone()), "clean reopen");
    w.check(&db, "clean reopen after a failed fsync");
    assert_eq!(background_panics(), 0);
}

/// A synced write right after a memtable switch syncs the WAL the switch closed first; when
/// that fsync (or the current WAL's) fails, neither WAL is synced again after the resume.
#[test]
fn a_failed_fsync_right_after_a_switch_is_never_retried_after_resume() {
    watch_background_panics();
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let db = open(Arc::new(fault.clone()), "open");
    let mut w = Writes::default();
    let first = newest_wal(&mem);
    while newest_wal(&mem) == first {
        w.write_ok(&db, &NO_SYNC, 1, "filling the first memtable");
    }
    fault.add_rule(Rule::new(Op::Sync).on_path(".log").kind(ErrorKind::StorageFull));
    let raw = w.write(&db, &SYNC, None).expect_err("the synced write whose WAL fsync failed succeeded");
    assert_eq!(io_kind(&raw), Some(ErrorKind::StorageFull), "{raw:?}");
    let failed = fault.injected_paths()[0].clone();
    let name = file_name(&failed);
    fault.clear();
    fault.add_rule(Rule::new(Op::Sync).on_path(&name).when(When::Always));
    fault.add_rule(Rule::new(Op::Write).on_path(&name).when(When::Always));

    db.resume().expect("resume");
    w.write_ok(&db, &SYNC, 10, "after resume");
    w.write_ok(&db, &NO_SYNC, 10, "after resume");
    db.sync_wal().expect("sync_wal after resume");
    let touched = fault.injected_paths().iter().filter(|p| **p == failed).count();
    assert_eq!(touched, 1, "{name}, whose fsync failed, was synced or written again: {:?}", fault.injected());
    w.check(&db, "after resume");
    check_after_crashes(&mem, &w, "a failed fsync after a switch");
    assert_eq!(background_panics(), 0);
}

/// The MANIFEST that CURRENT names.
fn current_manifest(mem: &MemFs) -> PathBuf {
    let current = mem.contents(&dir().join("CURRENT")).expect("no CURRENT");
    dir().join(String::from_utf8(current).unwrap().trim())
}

/// A flush whose MANIFEST append or fsync hits a full disk: the MANIFEST's tail is unknown, so
/// the resumed flush records its table in a new MANIFEST and the old one is never written or
/// synced again.
#[test]
fn a_failed_manifest_write_or_sync_is_resumed_with_a_new_manifest() {
    watch_background_panics();
    for op in [Op::Write, Op::Sync] {
        let ctx = format!("failed MANIFEST {op:?}");
        let mem = MemFs::new();
        let fault = FaultFs::new(Arc::new(mem.clone()));
        let db = open(Arc::new(fault.clone()), &ctx);
        let mut w = Writes::default();
        w.write_ok(&db, &NO_SYNC, 40, &ctx);
        let old = current_manifest(&mem);
        let name = file_name(&old);
        fault.add_rule(Rule::new(op).on_path(&name).kind(ErrorKind::StorageFull));
        let err = db.flush().expect_err("a flush whose MANIFEST write failed succeeded");
        assert_disk_full(&err, &ctx);
        assert_read_only(&db, &ctx);
        fault.clear();
        fault.add_rule(Rule::new(Op::Write).on_path(&name).when(When::Always));
        fault.add_rule(Rule::new(Op::Sync).on_path(&name).when(When::Always));

        db.resume().unwrap_or_else(|e| panic!("{ctx}: resume: {e}"));
        assert_flushed(&db, &ctx);
        assert_ne!(current_manifest(&mem), old, "{ctx}: the resumed flush wrote a new MANIFEST");
        assert_eq!(db.property("strata.num-files-at-level0").as_deref(), Some("1"), "{ctx}");
        w.write_ok(&db, &SYNC, 20, &ctx);
        db.flush().unwrap_or_else(|e| panic!("{ctx}: a flush after resume: {e}"));
        w.write_ok(&db, &SYNC, 5, &ctx);
        let touched = fault.injected_paths().iter().filter(|p| **p == old).count();
        assert_eq!(touched, 1, "{ctx}: the old MANIFEST was written or synced again: {:?}", fault.injected());
        w.check(&db, &ctx);
        check_after_crashes(&mem, &w, &ctx);
        drop(db);
        let db = open(Arc::new(fault.clone()), &ctx);
        w.check(&db, &format!("{ctx}, clean reopen"));
    }
    assert_eq!(background_panics(), 0);
}

#[test]
fn an_fsync_failing_with_eio_is_not_retryable() {
    let fault = FaultFs::new(Arc::new(MemFs::new()));
    let db = open(Arc::new(fault.clone()), "open");
    db.put_opt(&SYNC, b"a", b"1").unwrap();
    fault.add_rule(Rule::new(Op::Sync).on_path(".log")); // ErrorKind::Other, as EIO
    assert!(db.put_opt(&SYNC, b"b", b"2").is_err());
    fault.clear();
    let err = db.resume().expect_err("resume cleared an EIO fsync failure");
    assert!(matches!(err.background_cause(), Some(Error::Io { .. })), "{err:?}");
    assert!(!err.is_retryable());
    assert_read_only(&db, "after the refused resume");
}

/// Overwrites the first data block of the oldest table: a damaged compaction input.
fn damage_oldest_table(mem: &MemFs) {
    let mut tables: Vec<String> =
        mem.list_dir(&dir()).unwrap().into_iter().filter(|n| n.ends_with(".sst")).collect();
    tables.sort();
    let path = dir().join(&tables[0]);
    let mut bytes = mem.contents(&path).unwrap();
    bytes[0] ^= 0xff;
    let mut f = mem.create(&path).unwrap();
    f.append(&bytes).unwrap();
    f.sync_data().unwrap();
}

#[test]
fn corruption_in_a_compaction_is_returned_by_resume_and_the_database_stays_read_only() {
    watch_background_panics();
    let mem = MemFs::new();
    let db = open(Arc::new(mem.clone()), "open");
    let mut w = Writes::default();
    let keys: Vec<Vec<u8>> = (0..40).map(|i| format!("key{i:03}").into_bytes()).collect();
    for _ in 0..2 {
        // The same keys in both tables, so that the compaction must merge them.
        for pair in keys.chunks(2) {
            w.write(&db, &SYNC, Some(pair)).unwrap();
        }
        db.flush().unwrap();
    }
    drop(db);
    damage_oldest_table(&mem);

    // Reopened with a trigger the two tables reach: the background compaction reads the damage.
    let opts = Options { level0_compaction_trigger: 2, ..options(Arc::new(mem.clone())) };
    let db = Db::open(dir(), opts).unwrap();
    let err = db.wait_for_compactions(Some(Duration::from_secs(60))).expect_err("the compaction succeeded");
    assert!(err.background_cause().is_some_and(Error::is_corruption), "{err:?}");
    assert!(err.to_string().contains(": compaction: corruption"), "{err}");
    assert!(!err.is_retryable());
    let resumed = db.resume().expect_err("resume cleared a corruption");
    assert!(resumed.background_cause().is_some_and(Error::is_corruption), "{resumed:?}");
    assert_eq!(resumed.to_string(), err.to_string(), "resume returns the error unchanged");
    let refused = assert_read_only(&db, "after resume refused");
    assert!(refused.background_cause().is_some_and(Error::is_corruption), "{refused:?}");
    assert!(db.close().is_err(), "close reports the background error");
    assert_eq!(background_panics(), 0);
}

#[test]
fn resume_without_a_background_error_does_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.resume().unwrap();
    db.put_opt(&NO_SYNC, b"k", b"v").unwrap();
    db.resume().unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    drop(db);
    let reader = Db::open_read_only(dir.path(), Options::default()).unwrap();
    reader.resume().unwrap();
}

/// Writers keep writing (each retrying its failed write with a new value) while the disk fills
/// up and the main thread resumes once space is back: afterwards each key holds the value of
/// the write that was acknowledged, through a power loss too.
#[test]
fn concurrent_writers_through_enospc_and_resume_keep_every_acknowledged_write() {
    watch_background_panics();
    const WRITERS: usize = 4;
    const PER_WRITER: usize = 150;
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let db = open(Arc::new(fault.clone()), "open");
    // The writes need several times this: the disk fills up while they run.
    fault.set_space_limit(Some(16 << 10));
    let errors = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + Duration::from_secs(120);
    let writers: Vec<_> = (0..WRITERS)
        .map(|t| {
            let (db, errors, stop) = (db.clone(), Arc::clone(&errors), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut acked = Kv::new();
                let mut attempt = 0u32;
                for i in 0..PER_WRITER {
                    let key = format!("w{t}-{i:04}").into_bytes();
                    loop {
                        attempt += 1;
                        let value = format!("{t}-{i}-{attempt}").into_bytes().repeat(10);
                        let opts = if i % 3 == 0 { SYNC } else { NO_SYNC };
                        match db.put_opt(&opts, &key, &value) {
                            Ok(()) => {
                                acked.insert(key, value);
                                break;
                            }
                            Err(_) if stop.load(Ordering::Relaxed) || Instant::now() > deadline => {
                                return acked
                            }
                            Err(_) => {
                                errors.fetch_add(1, Ordering::Relaxed);
                                std::thread::sleep(Duration::from_millis(1));
                            }
                        }
                    }
                }
                acked
            })
        })
        .collect();
    while errors.load(Ordering::Relaxed) < 20 {
        assert!(Instant::now() < deadline, "the full disk never failed a write");
        std::thread::sleep(Duration::from_millis(1));
    }
    fault.set_space_limit(None);
    // A job that started on the full disk may still fail while the first resume runs.
    let mut resumed = db.resume();
    while let Err(e) = &resumed {
        assert!(e.is_retryable() && Instant::now() < deadline, "resume with space: {e:?}");
        resumed = db.resume();
    }
    let mut w = Writes::default();
    for writer in writers {
        w.acked.extend(writer.join().expect("a writer panicked"));
    }
    stop.store(true, Ordering::Relaxed);
    assert_eq!(w.acked.len(), WRITERS * PER_WRITER, "every write succeeded in the end");
    w.check(&db, "after resume");
    db.sync_wal().expect("sync_wal after resume"); // the unsynced writes survive power loss too
    check_after_crashes(&mem, &w, "concurrent writers");
    drop(db);
    let db = open(Arc::new(fault.clone()), "clean reopen");
    w.check(&db, "clean reopen");
    assert_eq!(background_panics(), 0);
}
