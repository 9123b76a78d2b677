//! Fault injection against the real engine through the filesystem seam (`Options::fs`): power
//! loss at random points (MemFs crash images), failed flush and compaction IO, ENOSPC, torn WAL
//! records, errors during `Db::open`, and slow background steps. Every test checks the contract
//! of docs/durability.md: acknowledged synced writes survive, what survives is a prefix, a failed
//! background job makes the database read-only while reads keep working, and nothing panics.
//! Failures print the seed or the case so they can be replayed. The WAL write path (failed WAL
//! writes and syncs, concurrent synced writers, WAL switches) is in `fault_injection_wal.rs`.
//!
//! `STRATA_FAULT_ITERATIONS` sets the number of random power-loss cases (default 100).

mod fault_support;

use std::io::ErrorKind;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use strata::fs::FileSystem;
use strata::Db;
use strata_testkit::{
    apply, watch_background_panics, write_batch, CrashMode, FaultFs, History, Kv, MemFs, Mutation, Op, Rng,
    Rule, When,
};

use fault_support::{
    assert_no_engine_panics, assert_read_only, check_exact, check_prefix, dir, io_kind,
    manual_compaction_options, newest_wal, open, options, random_batch, table_and_blob_files, value,
    write_batches, NO_SYNC, SYNC,
};

// ---------------------------------------------------------------------------------------------
// Power loss

/// How the random case picks its crash point.
enum CrashPoint {
    /// Snapshot the disk between two writes while background work may be running.
    Between,
    /// Fail every filesystem operation after the next `k` (a crash at op k), then crash.
    AtOp(u64),
}

/// One seeded power-loss case: writes a random mix of synced and unsynced batches, crashes at a
/// random point, reopens the crash image and checks that every synced batch survived and that
/// the result is a prefix.
fn power_loss_case(seed: u64) -> CaseStats {
    let mut rng = Rng::new(seed);
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let db = open(Arc::new(fault.clone()), &format!("seed {seed}: first open"));
    let planned = 60 + rng.up_to(340);
    let crash_at = rng.up_to(planned);
    let point = if seed.is_multiple_of(2) { CrashPoint::Between } else { CrashPoint::AtOp(rng.below(120)) };
    let mut h = History::new();
    let mut floor = 0; // batches the contract says must survive
    let mut image = None;
    for i in 0..planned {
        if i == crash_at {
            match point {
                CrashPoint::Between => {
                    image = Some(mem.crash_clone(CrashMode::Seeded(seed)));
                    break;
                }
                CrashPoint::AtOp(k) => fault.fail_after(Op::Any, k),
            }
        }
        let sync = rng.percent(30);
        let b = h.push(random_batch(&mut rng, i));
        match db.write_opt(if sync { &SYNC } else { &NO_SYNC }, h.write_batch(b)) {
            Ok(()) if sync => floor = h.len(),
            Ok(()) => {}
            Err(_) => {
                // Once a write failed, the database must refuse the next one without writing it.
                let next = db.put_opt(&NO_SYNC, b"refused", b"x");
                assert!(next.is_err(), "seed {seed}: a write after a failed write succeeded");
                break;
            }
        }
        if rng.percent(1) {
            let _ = db.flush();
        }
    }
    let mut stats = CaseStats {
        recovered: 0,
        flushed: db.stats().flushes.load(Relaxed) > 0,
        compacted: db.stats().compactions.load(Relaxed) > 0,
        faulted: !fault.injected().is_empty(),
    };
    drop(db);
    let image = image.unwrap_or_else(|| mem.crash_clone(CrashMode::Seeded(seed)));
    let ctx = format!("seed {seed} ({} batches, floor {floor})", h.len());
    let db = open(Arc::new(image.clone()), &ctx);
    let recovered = check_prefix(&db, &h, floor, &ctx);
    stats.recovered = recovered;
    if seed % 4 == 1 {
        // Recovery itself must be crash-safe: write after it, crash again, recover again.
        let extra = random_batch(&mut rng, h.len());
        db.write_opt(&SYNC, write_batch(&extra))
            .unwrap_or_else(|e| panic!("{ctx}: write after recovery: {e}"));
        let again = image.crash_clone(CrashMode::Seeded(seed ^ 0xABCD));
        drop(db);
        let mut expected = h.state_after(recovered);
        apply(&mut expected, &extra);
        let db = open(Arc::new(again), &format!("{ctx}, second crash"));
        check_exact(&db, &expected, &format!("{ctx}, second crash"));
    }
    stats
}

/// What one power-loss case exercised.
struct CaseStats {
    recovered: usize,
    flushed: bool,
    compacted: bool,
    /// The crash point was reached by a failing filesystem operation (not between writes).
    faulted: bool,
}

#[test]
fn power_loss_keeps_every_synced_batch_and_recovers_a_prefix() {
    watch_background_panics();
    let iterations: u64 =
        std::env::var("STRATA_FAULT_ITERATIONS").ok().and_then(|s| s.parse().ok()).unwrap_or(100);
    let start = std::time::Instant::now();
    let cases: Vec<CaseStats> = (0..iterations).map(power_loss_case).collect();
    let count = |f: fn(&CaseStats) -> bool| cases.iter().filter(|c| f(c)).count();
    println!(
        "power loss: {iterations} seeded cases ({} crashed at a failing fs op, {} after a flush, {} after a \
         compaction), {} batches recovered, 0 synced batches lost, 0 prefix violations, {:.1}s",
        count(|c| c.faulted),
        count(|c| c.flushed),
        count(|c| c.compacted),
        cases.iter().map(|c| c.recovered).sum::<usize>(),
        start.elapsed().as_secs_f64()
    );
    assert_no_engine_panics();
}

// ---------------------------------------------------------------------------------------------
// Files opened before reads

/// Open opens every live table and blob file up front, so reads afterwards open none (the
/// first reads after open were the slowest operations of a run when each opened a file).
#[test]
fn reads_after_open_find_every_live_file_already_open() {
    let mem = MemFs::new();
    let db = Db::open(dir(), manual_compaction_options(Arc::new(mem.clone()))).unwrap();
    let (mut h, mut rng) = (History::new(), Rng::new(11));
    write_batches(&db, &mut h, &mut rng, 300, &NO_SYNC);
    db.close().unwrap();
    let fault = FaultFs::new(Arc::new(mem));
    let db = Db::open(dir(), manual_compaction_options(Arc::new(fault.clone()))).unwrap();
    assert!(table_and_blob_files(&fault).len() >= 4, "the load made several files");
    let opened = fault.count(Op::Open);
    check_exact(&db, &h.state_after(300), "reads after reopen");
    assert_eq!(fault.count(Op::Open), opened, "a read opened a file");
}

/// Flush and compaction open their new files before installing them, so reads afterwards open
/// none (opening a table reads its footer and pins its index and filter on the reader's thread).
#[test]
fn reads_after_a_flush_or_compaction_find_its_files_already_open() {
    let fault = FaultFs::new(Arc::new(MemFs::new()));
    let db = Db::open(dir(), manual_compaction_options(Arc::new(fault.clone()))).unwrap();
    let (mut h, mut rng) = (History::new(), Rng::new(12));
    for step in ["flush", "compaction"] {
        write_batches(&db, &mut h, &mut rng, 150, &NO_SYNC);
        if step == "flush" {
            db.flush().unwrap();
        } else {
            db.compact_range(None, None).unwrap();
        }
        let opened = fault.count(Op::Open);
        check_exact(&db, &h.state_after(h.len()), &format!("reads after a {step}"));
        assert_eq!(fault.count(Op::Open), opened, "a read after a {step} opened a file");
    }
    assert!(table_and_blob_files(&fault).len() >= 2, "the writes made tables and blob files");
}

// ---------------------------------------------------------------------------------------------
// Flush and compaction errors

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Flush,
    Compaction,
}

/// The faults tried during flush and compaction: (operation, path substring).
const JOB_FAULTS: &[(Op, &str)] = &[
    (Op::Create, ".sst"),
    (Op::Write, ".sst"),
    (Op::Sync, ".sst"),
    (Op::Create, ".blob"),
    (Op::Write, ".blob"),
    (Op::Sync, ".blob"),
    (Op::Read, ".sst"),
    // Opening the job's new files before they are installed.
    (Op::Open, ".sst"),
    (Op::Open, ".blob"),
    (Op::SyncDir, "db"),
    (Op::Write, "MANIFEST"),
    (Op::Sync, "MANIFEST"),
];

/// Loads synced data so that L0 holds overlapping tables; returns the history.
fn load_for_job(db: &Db, rng: &mut Rng) -> History {
    let mut h = History::new();
    for _ in 0..2 {
        write_batches(db, &mut h, rng, 120, &SYNC);
        db.flush().unwrap();
    }
    h
}

/// Runs one flush or compaction with `rule` armed; returns false if the fault never fired.
fn job_failure_case(phase: Phase, op: Op, path: &str) -> bool {
    let ctx = format!("{phase:?} with a failed {op:?} on {path}");
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let db = Db::open(dir(), manual_compaction_options(Arc::new(fault.clone()))).unwrap();
    let mut rng = Rng::new(11);
    let mut h = load_for_job(&db, &mut rng);
    if phase == Phase::Flush {
        write_batches(&db, &mut h, &mut rng, 40, &SYNC);
    }
    let files_before = table_and_blob_files(&mem);
    fault.add_rule(Rule::new(op).on_path(path));
    // Data in blob files must be rewritten for a compaction to create a blob file.
    let result = match phase {
        Phase::Flush => db.flush(),
        Phase::Compaction => db.compact_range(None, None),
    };
    if fault.injected().is_empty() {
        assert!(result.is_ok(), "{ctx}: failed without an injected fault: {result:?}");
        return false;
    }
    assert!(result.is_err(), "{ctx}: the job succeeded despite the fault");
    assert_read_only(&db, &ctx);
    check_exact(&db, &h.state_after(h.len()), &format!("{ctx}: reads after the failure"));
    if matches!(op, Op::Write | Op::Sync) && matches!(path, ".sst" | ".blob") {
        // The failed job removed the output it was writing (and, for a flush, all of them).
        let partial = fault.injected_paths()[0].clone();
        assert!(mem.contents(&partial).is_none(), "{ctx}: partial output {} left behind", partial.display());
        if phase == Phase::Flush {
            assert_eq!(table_and_blob_files(&mem), files_before, "{ctx}: partial outputs left behind");
        }
    }
    let power_loss = mem.crash_clone(CrashMode::DropUnsynced);
    assert!(db.close().is_err(), "{ctx}: close must report the background error");
    fault.clear();
    for (name, fs) in
        [("reboot", Arc::new(fault.clone()) as Arc<dyn FileSystem>), ("power loss", Arc::new(power_loss))]
    {
        let ctx = format!("{ctx}, {name}");
        let db = Db::open(dir(), manual_compaction_options(fs)).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        check_exact(&db, &h.state_after(h.len()), &ctx);
        db.compact_range(None, None).unwrap_or_else(|e| panic!("{ctx}: compaction after recovery: {e}"));
        check_exact(&db, &h.state_after(h.len()), &format!("{ctx}, compacted"));
    }
    true
}

#[test]
fn failed_flush_or_compaction_makes_the_database_read_only_and_loses_nothing() {
    watch_background_panics();
    let mut fired = Vec::new();
    let mut skipped = Vec::new();
    for phase in [Phase::Flush, Phase::Compaction] {
        for &(op, path) in JOB_FAULTS {
            if job_failure_case(phase, op, path) {
                fired.push(format!("{phase:?}/{op:?}/{path}"));
            } else {
                skipped.push(format!("{phase:?}/{op:?}/{path}"));
            }
        }
    }
    println!("job faults: {} cases fired: {fired:?}; not reached: {skipped:?}", fired.len());
    assert!(fired.len() >= 14, "too few fault points were reached: {fired:?}");
    assert_no_engine_panics();
}

#[test]
fn failed_background_compaction_is_reported_and_writes_stop() {
    watch_background_panics();
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let db = open(Arc::new(fault.clone()), "open");
    let (mut h, mut rng) = (History::new(), Rng::new(12));
    // Every sync of a table after the first three fails: the third flush's or the first
    // compaction's output cannot be made durable.
    fault.add_rule(Rule::new(Op::Sync).on_path(".sst").when(When::After(3)));
    let mut acked = 0;
    for i in 0..2000 {
        let b = h.push(random_batch(&mut rng, i));
        if db.write_opt(&SYNC, h.write_batch(b)).is_err() {
            break;
        }
        acked = h.len();
    }
    assert!(acked < 2000, "the background failure never stopped the writes");
    assert!(!fault.injected().is_empty());
    assert_read_only(&db, "after a failed background job");
    check_exact(&db, &h.state_after(acked), "reads after a failed background job");
    drop(db);
    fault.clear();
    let db = open(Arc::new(mem.crash_clone(CrashMode::DropUnsynced)), "power loss");
    check_prefix(&db, &h, acked, "power loss after a failed background job");
    assert_no_engine_panics();
}

// ---------------------------------------------------------------------------------------------
// ENOSPC

/// Bytes a full compaction of the loaded database writes when space is unlimited.
fn bytes_written_by_compaction() -> u64 {
    let fault = FaultFs::new(Arc::new(MemFs::new()));
    let db = Db::open(dir(), manual_compaction_options(Arc::new(fault.clone()))).unwrap();
    load_for_job(&db, &mut Rng::new(13));
    let before = fault.bytes_written();
    db.compact_range(None, None).unwrap();
    fault.bytes_written() - before
}

#[test]
fn enospc_during_compaction_corrupts_nothing() {
    watch_background_panics();
    let needed = bytes_written_by_compaction();
    let limits: Vec<u64> = (0..10).map(|i| needed * i / 10).chain([needed + 1]).collect();
    let mut failed = 0;
    for &limit in &limits {
        let ctx = format!("space limit {limit} of {needed}");
        let mem = MemFs::new();
        let fault = FaultFs::new(Arc::new(mem.clone()));
        let db = Db::open(dir(), manual_compaction_options(Arc::new(fault.clone()))).unwrap();
        let h = load_for_job(&db, &mut Rng::new(13));
        fault.set_space_limit(Some(limit));
        match db.compact_range(None, None) {
            Ok(()) => assert!(limit >= needed, "{ctx}: compaction fit in less space than it needed before"),
            Err(e) => {
                failed += 1;
                assert_eq!(io_kind(&e), Some(ErrorKind::StorageFull), "{ctx}: {e:?}");
                assert_read_only(&db, &ctx);
            }
        }
        check_exact(&db, &h.state_after(h.len()), &format!("{ctx}: reads"));
        drop(db);
        fault.set_space_limit(None);
        let db = Db::open(dir(), manual_compaction_options(Arc::new(fault.clone()))).unwrap();
        check_exact(&db, &h.state_after(h.len()), &format!("{ctx}: reopened with space"));
        db.compact_range(None, None).unwrap();
        check_exact(&db, &h.state_after(h.len()), &format!("{ctx}: compacted with space"));
    }
    assert_eq!(failed, limits.len() - 1, "every limit below {needed} bytes must produce ENOSPC");
    println!("ENOSPC: {} space limits, {failed} compactions failed cleanly, 0 corruptions", limits.len());
    assert_no_engine_panics();
}

#[test]
fn enospc_in_the_wal_fails_writes_and_keeps_acknowledged_ones() {
    watch_background_panics();
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let db = open(Arc::new(fault.clone()), "open");
    let (mut h, mut rng) = (History::new(), Rng::new(14));
    write_batches(&db, &mut h, &mut rng, 10, &SYNC);
    fault.set_space_limit(Some(20 << 10));
    let mut acked = h.len();
    let err = loop {
        let b = h.push(random_batch(&mut rng, h.len()));
        match db.write_opt(&SYNC, h.write_batch(b)) {
            Ok(()) => acked = h.len(),
            Err(e) => break e,
        }
    };
    assert_eq!(io_kind(&err), Some(ErrorKind::StorageFull), "{err:?}");
    assert_read_only(&db, "after ENOSPC in the WAL");
    check_exact(&db, &h.state_after(acked), "reads after ENOSPC");
    drop(db);
    fault.set_space_limit(None);
    let db = open(Arc::new(mem.crash_clone(CrashMode::DropUnsynced)), "power loss after ENOSPC");
    check_prefix(&db, &h, acked, "power loss after ENOSPC");
    assert_no_engine_panics();
}

// ---------------------------------------------------------------------------------------------
// Torn WAL records

/// A torn last WAL record (the first `keep` bytes landed) followed by a crash of each kind.
fn torn_case(keep: usize, big: bool) {
    let ctx = format!("torn record keeping {keep} bytes (big record: {big})");
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let db = open(Arc::new(fault.clone()), &ctx);
    let (mut h, mut rng) = (History::new(), Rng::new(15 + keep as u64));
    write_batches(&db, &mut h, &mut rng, 30, &SYNC);
    let wal = newest_wal(&mem);
    let before = mem.contents(&wal).unwrap().len();
    let records_end = {
        let mut reader = strata::internal::wal::LogReader::new(mem.open_sequential(&wal).unwrap(), false);
        while reader.read_record().unwrap().is_some() {}
        reader.last_record_end() as usize
    };
    fault.add_rule(Rule::new(Op::Write).on_path(".log").torn(keep));
    let torn = if big {
        // Larger than a 32 KiB log block: the record is split into fragments.
        h.push(vec![Mutation::Put(b"big".to_vec(), value(30, 0, 100 << 10))])
    } else {
        h.push(random_batch(&mut rng, 30))
    };
    assert!(db.write_opt(&SYNC, h.write_batch(torn)).is_err(), "{ctx}: torn write succeeded");
    let landed = mem.contents(&wal).unwrap().len() - before;
    assert!(landed <= keep, "{ctx}: {landed} bytes landed");
    let images = [
        ("process crash", mem.crash_clone(CrashMode::KeepUnsynced)),
        ("power loss", mem.crash_clone(CrashMode::Seeded(keep as u64))),
    ];
    drop(db);
    let cut_near_the_end =
        stops_in_the_last_bytes_of_its_record(&mem.contents(&wal).unwrap(), records_end, keep);
    for (name, image) in images {
        let ctx = format!("{ctx}, {name}");
        if cut_near_the_end {
            // Indistinguishable from a damaged byte in a record whose value ends in zeros: reported
            // (docs/durability.md, "Torn versus corrupt"), never silently dropped.
            match Db::open(dir(), options(Arc::new(image.clone()))) {
                Err(e) => assert!(e.is_corruption(), "{ctx}: {e}"),
                Ok(db) => check_exact(&db, &h.state_after(30), &ctx),
            }
            continue;
        }
        let db = open(Arc::new(image.clone()), &ctx);
        check_exact(&db, &h.state_after(30), &ctx);
        // The torn tail must not poison later writes or recoveries.
        db.put_opt(&SYNC, b"later", b"write").unwrap();
        drop(db);
        let db = open(Arc::new(image.crash_clone(CrashMode::DropUnsynced)), &ctx);
        let mut expected = h.state_after(30);
        expected.insert(b"later".to_vec(), b"write".to_vec());
        check_exact(&db, &expected, &format!("{ctx}, after a later write and another crash"));
    }
}

/// True when a torn append of one record at `at` that kept at most `keep` bytes (FaultFs lands
/// all but the last byte when the record is shorter) stopped within the last 16 bytes of the
/// record's first fragment (the reader's `MIN_ZERO_SUFFIX`).
fn stops_in_the_last_bytes_of_its_record(wal: &[u8], at: usize, keep: usize) -> bool {
    if keep < 7 {
        return false;
    }
    let len = u16::from_le_bytes([wal[at + 4], wal[at + 5]]) as usize;
    let end = at + 7 + len;
    let landed = keep.min(end - at - 1);
    end - (at + landed) < 16
}

#[test]
fn torn_wal_record_is_dropped_and_earlier_records_survive() {
    watch_background_panics();
    let mut cases = 0;
    for keep in [0, 1, 6, 7, 8, 20, 100, 1000, 40_000, 100_000] {
        for big in [false, true] {
            torn_case(keep, big);
            cases += 1;
        }
    }
    println!("torn WAL records: {cases} cases");
    assert_no_engine_panics();
}

// ---------------------------------------------------------------------------------------------
// Errors during open

/// A database whose data is partly in tables and partly only in the WAL.
fn prepared_image() -> (MemFs, Kv) {
    let mem = MemFs::new();
    let db = open(Arc::new(mem.clone()), "prepare");
    let (mut h, mut rng) = (History::new(), Rng::new(16));
    write_batches(&db, &mut h, &mut rng, 150, &SYNC);
    db.flush().unwrap();
    write_batches(&db, &mut h, &mut rng, 60, &SYNC);
    // A power loss, so the next open has a WAL to replay and no clean-close state.
    let image = mem.crash_clone(CrashMode::DropUnsynced);
    drop(db);
    (image, h.state_after(h.len()))
}

fn reopen_and_check(fs: Arc<dyn FileSystem>, expected: &Kv, ctx: &str) {
    let db = open(fs, ctx);
    check_exact(&db, expected, ctx);
}

#[test]
fn failed_wal_create_or_current_rename_fails_open_without_losing_data() {
    watch_background_panics();
    let cases: [(Op, &str); 4] =
        [(Op::Create, ".log"), (Op::Rename, "CURRENT"), (Op::Sync, "CURRENT"), (Op::Create, "MANIFEST")];
    for (op, path) in cases {
        let ctx = format!("open with a failed {op:?} on {path}");
        // A new database.
        let fault = FaultFs::new(Arc::new(MemFs::new()));
        fault.add_rule(Rule::new(op).on_path(path));
        assert!(Db::open(dir(), options(Arc::new(fault.clone()))).is_err(), "{ctx}: new database opened");
        fault.clear();
        let db = open(Arc::new(fault.clone()), &ctx);
        db.put_opt(&SYNC, b"k", b"v").unwrap();
        drop(db);
        reopen_and_check(Arc::new(fault.clone()), &Kv::from([(b"k".to_vec(), b"v".to_vec())]), &ctx);
        // An existing database with a WAL to replay.
        let (image, expected) = prepared_image();
        let fault = FaultFs::new(Arc::new(image.clone()));
        fault.add_rule(Rule::new(op).on_path(path));
        assert!(
            Db::open(dir(), options(Arc::new(fault.clone()))).is_err(),
            "{ctx}: existing database opened"
        );
        fault.clear();
        reopen_and_check(
            Arc::new(image.crash_clone(CrashMode::DropUnsynced)),
            &expected,
            &format!("{ctx}, power loss"),
        );
        reopen_and_check(Arc::new(fault), &expected, &ctx);
    }
    assert_no_engine_panics();
}

/// Counts the filesystem operations of a clean open of `image` (until `open` returns).
fn ops_in_open(image: &MemFs) -> u64 {
    let fault = FaultFs::new(Arc::new(image.crash_clone(CrashMode::KeepUnsynced)));
    let db = open(Arc::new(fault.clone()), "counting open");
    let n = fault.count(Op::Any);
    drop(db);
    n
}

/// Fails (or crashes at) each operation of an open of `image` in turn; every open must return
/// without panicking and a later open must find `expected`. Returns (operations, failed opens).
fn open_fault_sweep(image: &MemFs, expected: &Kv, name: &str) -> (u64, u64) {
    let total = ops_in_open(image);
    let mut errors = 0;
    for k in 1..=total {
        for crash in [false, true] {
            let ctx =
                format!("{name}: open with op {k} of {total} {}", if crash { "crashing" } else { "failing" });
            let disk = image.crash_clone(CrashMode::KeepUnsynced);
            let fault = FaultFs::new(Arc::new(disk.clone()));
            if crash {
                fault.fail_after(Op::Any, k - 1);
            } else {
                fault.fail_nth(Op::Any, k);
            }
            let attempt = std::panic::AssertUnwindSafe(|| Db::open(dir(), options(Arc::new(fault.clone()))));
            match std::panic::catch_unwind(attempt) {
                Err(_) => panic!("{ctx}: Db::open panicked"),
                Ok(Err(_)) => errors += 1,
                Ok(Ok(db)) => drop(db),
            }
            fault.clear();
            let power_loss = Arc::new(disk.crash_clone(CrashMode::DropUnsynced));
            reopen_and_check(power_loss, expected, &format!("{ctx}, power loss"));
            reopen_and_check(Arc::new(disk), expected, &format!("{ctx}, reboot"));
        }
    }
    (total, errors)
}

#[test]
fn any_single_failure_or_crash_during_open_is_survivable() {
    watch_background_panics();
    let (image, expected) = prepared_image();
    let (existing_ops, existing_errors) = open_fault_sweep(&image, &expected, "existing database");
    let (new_ops, new_errors) = open_fault_sweep(&MemFs::new(), &Kv::new(), "new database");
    println!(
        "open faults: existing database {existing_ops} ops x 2 ({existing_errors} failed opens), new database \
         {new_ops} ops x 2 ({new_errors} failed opens); 0 panics, 0 lost, 0 unopenable"
    );
    assert!(existing_errors > 0 && new_errors > 0);
    assert_no_engine_panics();
}

/// A clean close makes `sync=false` writes durable, including those in a WAL created by a
/// memtable switch whose directory entry was never synced by a synced write.
#[test]
fn clean_close_makes_unsynced_writes_survive_power_loss() {
    watch_background_panics();
    let mem = MemFs::new();
    let db = open(Arc::new(mem.clone()), "open");
    let (mut h, mut rng) = (History::new(), Rng::new(21));
    write_batches(&db, &mut h, &mut rng, 600, &NO_SYNC);
    db.close().unwrap();
    let db = open(Arc::new(mem.crash_clone(CrashMode::DropUnsynced)), "power loss after close");
    check_exact(&db, &h.state_after(h.len()), "power loss after a clean close");
    assert_no_engine_panics();
}

// ---------------------------------------------------------------------------------------------
// Slow background steps

/// A deletion of obsolete files that takes 50 ms or more is named in `LOG` with what it deleted
/// and how long it waited for the versions lock: a flush that starts late, and the write stop
/// behind it, can then be traced to it.
#[test]
fn a_slow_obsolete_file_deletion_is_logged() {
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let db = Db::open(dir(), options(Arc::new(fault.clone()))).unwrap();
    let log = || String::from_utf8(mem.contents(&dir().join("LOG")).unwrap()).unwrap();
    for round in 0..3u8 {
        for i in 0..200u32 {
            db.put_opt(&NO_SYNC, format!("key{i:05}").as_bytes(), &[round; 300]).unwrap();
        }
        db.flush().unwrap();
    }
    assert!(!log().contains("deleting obsolete files took"), "nothing was slow yet:\n{}", log());
    fault.set_remove_latency(Duration::from_millis(60));
    db.compact_range(None, None).unwrap();
    fault.set_remove_latency(Duration::ZERO);
    let text = log();
    let line = text.lines().find(|l| l.contains("deleting obsolete files took")).expect("no slow-step line");
    assert!(line.contains("[WARN]") && line.contains("waiting for the versions lock"), "{line}");
    assert!(!line.contains(" 0 tables and 0 blob files"), "it names what it deleted: {line}");
    drop(db);
}

/// A MANIFEST write slowed by its sync is named in `LOG` too.
#[test]
fn a_slow_manifest_write_is_logged() {
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let db = Db::open(dir(), options(Arc::new(fault.clone()))).unwrap();
    db.put_opt(&NO_SYNC, b"k", b"v").unwrap();
    fault.set_sync_latency(Duration::from_millis(60));
    db.flush().unwrap();
    fault.set_sync_latency(Duration::ZERO);
    let text = String::from_utf8(mem.contents(&dir().join("LOG")).unwrap()).unwrap();
    let line =
        text.lines().find(|l| l.contains("writing a version edit to the MANIFEST took")).expect("no line");
    assert!(line.contains("us waiting for the versions lock"), "{line}");
    drop(db);
}
