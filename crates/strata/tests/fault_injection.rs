//! Fault injection against the real engine through the filesystem seam (`Options::fs`): power
//! loss at random points (MemFs crash images), failed fsyncs and writes in the WAL, flush and
//! compaction, ENOSPC, torn WAL records, and errors during `Db::open`. Every test checks the
//! contract of docs/durability.md: acknowledged synced writes survive, what survives is a prefix,
//! a failed write or background job makes the database read-only while reads keep working, and
//! nothing panics. Failures print the seed or the case so they can be replayed.
//!
//! `STRATA_FAULT_ITERATIONS` sets the number of random power-loss cases (default 100).

use std::io::ErrorKind;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;
use std::time::Duration;

use strata::fs::FileSystem;
use strata::{Db, Error, Options, ReadOptions, WriteOptions};
use strata_testkit::{
    apply, background_panics, diff, dump, watch_background_panics, write_batch, CrashMode, FaultFs, History,
    Kv, MemFs, Mutation, Op, Rng, Rule, When,
};

const SYNC: WriteOptions = WriteOptions { sync: true, disable_wal: false };
const NO_SYNC: WriteOptions = WriteOptions { sync: false, disable_wal: false };

fn dir() -> PathBuf {
    PathBuf::from("/db")
}

/// Small memtables and an eager compaction trigger so a few hundred batches cross several
/// flushes and compactions; values of 200 bytes and more go to blob files.
fn options(fs: Arc<dyn FileSystem>) -> Options {
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
fn manual_compaction_options(fs: Arc<dyn FileSystem>) -> Options {
    Options { level0_compaction_trigger: 20, ..options(fs) }
}

fn value(batch: usize, j: usize, len: usize) -> Vec<u8> {
    format!("<{batch}.{j}>").into_bytes().into_iter().cycle().take(len.max(6)).collect()
}

/// 1–4 puts or deletes over 400 keys; value sizes straddle the blob threshold.
fn random_batch(rng: &mut Rng, batch: usize) -> Vec<Mutation> {
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
fn write_batches(db: &Db, h: &mut History, rng: &mut Rng, n: usize, opts: &WriteOptions) {
    for _ in 0..n {
        let i = h.push(random_batch(rng, h.len()));
        db.write(opts, h.write_batch(i)).unwrap_or_else(|e| panic!("batch {i}: {e}"));
    }
}

/// The database holds exactly `expected`, by a scan and by point reads.
fn check_exact(db: &Db, expected: &Kv, ctx: &str) {
    let actual = dump(db).unwrap_or_else(|e| panic!("{ctx}: scan failed: {e}"));
    if &actual != expected {
        panic!("{ctx}: {}", diff(expected, &actual));
    }
    let r = ReadOptions::new();
    for (k, v) in expected {
        let got = db.get(&r, k).unwrap_or_else(|e| panic!("{ctx}: get failed: {e}"));
        assert_eq!(got.as_ref(), Some(v), "{ctx}: get {}", String::from_utf8_lossy(k));
    }
}

/// The database equals the state after some prefix of at least `floor` batches; returns it.
fn check_prefix(db: &Db, h: &History, floor: usize, ctx: &str) -> usize {
    let actual = dump(db).unwrap_or_else(|e| panic!("{ctx}: scan failed: {e}"));
    let k = h.matching_prefix(&actual, floor).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    check_exact(db, &h.state_after(k), ctx);
    k
}

fn open(fs: Arc<dyn FileSystem>, ctx: &str) -> Db {
    Db::open(dir(), options(fs)).unwrap_or_else(|e| panic!("{ctx}: open failed: {e}"))
}

fn io_kind(e: &Error) -> Option<ErrorKind> {
    match e {
        Error::Io { source, .. } => Some(source.kind()),
        _ => None,
    }
}

fn is_background(e: &Error) -> bool {
    matches!(e, Error::Background { .. })
}

/// The database is in the read-only error state: the property says so, writes fail with
/// `Error::Background`, and flushes fail.
fn assert_read_only(db: &Db, ctx: &str) {
    let prop = db.property("strata.background-error").unwrap_or_default();
    assert!(!prop.is_empty(), "{ctx}: strata.background-error is empty");
    let e = db.put(&NO_SYNC, b"after-error", b"x").expect_err("a write after a background error succeeded");
    assert!(is_background(&e), "{ctx}: write after the error gave {e:?}");
    assert!(db.flush().is_err(), "{ctx}: flush after a background error succeeded");
}

fn table_and_blob_files(fs: &dyn FileSystem) -> Vec<String> {
    let mut names: Vec<String> = fs
        .list_dir(&dir())
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".sst") || n.ends_with(".blob"))
        .collect();
    names.sort();
    names
}

fn assert_no_engine_panics() {
    assert_eq!(background_panics(), 0, "a strata background thread panicked (see the output above)");
}

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
        match db.write(if sync { &SYNC } else { &NO_SYNC }, h.write_batch(b)) {
            Ok(()) if sync => floor = h.len(),
            Ok(()) => {}
            Err(_) => {
                // Once a write failed, the database must refuse the next one without writing it.
                let next = db.put(&NO_SYNC, b"refused", b"x");
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
        db.write(&SYNC, write_batch(&extra)).unwrap_or_else(|e| panic!("{ctx}: write after recovery: {e}"));
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
// WAL errors

#[test]
fn failed_wal_sync_fails_the_write_and_makes_the_database_read_only() {
    watch_background_panics();
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let db = open(Arc::new(fault.clone()), "open");
    let (mut h, mut rng) = (History::new(), Rng::new(7));
    write_batches(&db, &mut h, &mut rng, 40, &SYNC);
    fault.add_rule(Rule::new(Op::Sync).on_path(".log"));
    let failed = h.push(random_batch(&mut rng, 40));
    let e = db.write(&SYNC, h.write_batch(failed)).expect_err("the write whose WAL sync failed succeeded");
    assert!(io_kind(&e).is_some(), "expected the IO error, got {e:?}");
    assert_eq!(fault.injected().len(), 1);
    assert_read_only(&db, "after a failed WAL sync");
    // Reads keep working and do not show the failed write.
    check_exact(&db, &h.state_after(40), "reads after a failed WAL sync");
    let power_loss = mem.crash_clone(CrashMode::DropUnsynced);
    assert!(db.close().is_err(), "close must report the background error");
    fault.clear();
    let db = open(Arc::new(fault.clone()), "reboot");
    check_prefix(&db, &h, 40, "reboot after a failed WAL sync");
    drop(db);
    let db = open(Arc::new(power_loss), "power loss after a failed WAL sync");
    check_prefix(&db, &h, 40, "power loss after a failed WAL sync");
    assert_no_engine_panics();
}

#[test]
fn failed_wal_write_fails_the_write_and_later_writes_get_background_errors() {
    watch_background_panics();
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let db = open(Arc::new(fault.clone()), "open");
    let (mut h, mut rng) = (History::new(), Rng::new(8));
    write_batches(&db, &mut h, &mut rng, 25, &NO_SYNC);
    fault.add_rule(Rule::new(Op::Write).on_path(".log"));
    let failed = h.push(random_batch(&mut rng, 25));
    assert!(db.write(&NO_SYNC, h.write_batch(failed)).is_err());
    assert_read_only(&db, "after a failed WAL write");
    check_exact(&db, &h.state_after(25), "reads after a failed WAL write");
    drop(db);
    fault.clear();
    // A process crash (nothing synced) loses nothing acknowledged.
    let db = open(Arc::new(mem.crash_clone(CrashMode::KeepUnsynced)), "process crash");
    check_exact(&db, &h.state_after(25), "after a failed WAL write and a process crash");
    assert_no_engine_panics();
}

// ---------------------------------------------------------------------------------------------
// Concurrent synced writers: group commit under a slow fdatasync

const WRITERS: usize = 4;

fn writer_key(t: usize, i: usize) -> Vec<u8> {
    format!("w{t}-{i:05}").into_bytes()
}

fn writer_value(t: usize, i: usize) -> Vec<u8> {
    // Some values go to blob files (min_blob_size 200), so flushes write both kinds of file.
    value(t * 100_000 + i, 0, if i.is_multiple_of(3) { 300 } else { 20 })
}

/// How many writes each writer has had acknowledged so far.
fn acked_so_far(acked: &[AtomicUsize]) -> Vec<usize> {
    acked.iter().map(|a| a.load(Relaxed)).collect()
}

/// Each writer's keys present in `db`: they must be a prefix of what it wrote (recovery keeps a
/// prefix in sequence order, and one writer's writes are in sequence order), with the right
/// values, and at least `acked[t]` long. Returns the prefix lengths.
fn check_writer_prefixes(db: &Db, acked: &[usize], ctx: &str) -> Vec<usize> {
    let state = dump(db).unwrap_or_else(|e| panic!("{ctx}: scan failed: {e}"));
    (0..acked.len())
        .map(|t| {
            let mine: Vec<_> =
                state.iter().filter(|(k, _)| k.starts_with(format!("w{t}-").as_bytes())).collect();
            for (i, (k, v)) in mine.iter().enumerate() {
                assert_eq!(**k, writer_key(t, i), "{ctx}: writer {t}'s keys are not a prefix");
                assert_eq!(**v, writer_value(t, i), "{ctx}: writer {t} key {i}");
            }
            assert!(
                mine.len() >= acked[t],
                "{ctx}: writer {t} had {} acknowledged, {} survived",
                acked[t],
                mine.len()
            );
            mine.len()
        })
        .collect()
}

/// Writers ack synced writes while a snapshot of the durable image is taken: every write acked
/// before the snapshot is in it, across memtable switches, flushes and compactions.
#[test]
fn concurrent_synced_writers_keep_every_acknowledged_write_through_power_loss() {
    watch_background_panics();
    for round in 0..3u64 {
        let mem = MemFs::new();
        // A disk-like sync time, so that writers pile up into groups behind each sync.
        let slow = FaultFs::new(Arc::new(mem.clone()));
        slow.set_sync_latency(Duration::from_micros(200));
        let db = open(Arc::new(slow), "open");
        let acked: Vec<AtomicUsize> = (0..WRITERS).map(|_| AtomicUsize::new(0)).collect();
        let stop = AtomicBool::new(false);
        let (image, seen) = std::thread::scope(|scope| {
            for t in 0..WRITERS {
                let (db, acked, stop) = (&db, &acked, &stop);
                scope.spawn(move || {
                    let mut i = 0;
                    while !stop.load(Relaxed) {
                        db.put(&SYNC, &writer_key(t, i), &writer_value(t, i)).unwrap();
                        i += 1;
                        acked[t].store(i, Relaxed);
                    }
                });
            }
            std::thread::sleep(Duration::from_millis(30 + 40 * round));
            let seen: Vec<usize> = acked_so_far(&acked);
            let image = mem.crash_clone(CrashMode::DropUnsynced);
            stop.store(true, Relaxed);
            (image, seen)
        });
        assert!(seen.iter().all(|&n| n > 0), "every writer got writes in: {seen:?}");
        let all: Vec<usize> = acked_so_far(&acked);
        check_writer_prefixes(&db, &all, "live, after the writers stopped");
        drop(db);
        let db = open(Arc::new(image), "power loss among concurrent synced writers");
        check_writer_prefixes(&db, &seen, &format!("round {round}: power loss among synced writers"));
    }
    assert_no_engine_panics();
}

/// A writer that finds the write queue idle writes without queueing; writers arriving during
/// its (slow) sync queue up, are woken when it finishes, and commit together as one group.
#[test]
fn writers_arriving_during_a_solo_write_wait_for_it_and_commit_as_one_group() {
    let fault = FaultFs::new(Arc::new(MemFs::new()));
    let db = Arc::new(open(Arc::new(fault.clone()), "open"));
    db.put(&SYNC, b"warm", b"up").unwrap();
    fault.set_sync_latency(Duration::from_millis(200));
    let syncs_before = db.stats().wal_syncs.load(Relaxed);
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let write = |key: &'static [u8]| {
        let (db, done) = (Arc::clone(&db), done_tx.clone());
        // Not scoped: a writer that is never woken must fail the test, not hang it.
        std::thread::spawn(move || done.send(db.put(&SYNC, key, b"v")).unwrap());
    };
    write(b"solo");
    // The solo writer is now inside its 200 ms sync; these two find it busy and queue.
    std::thread::sleep(Duration::from_millis(50));
    write(b"queued-a");
    write(b"queued-b");
    for _ in 0..3 {
        let result = done_rx.recv_timeout(Duration::from_secs(20)).expect("a queued writer was never woken");
        result.unwrap();
    }
    fault.set_sync_latency(Duration::ZERO);
    assert_eq!(
        db.stats().wal_syncs.load(Relaxed) - syncs_before,
        2,
        "one sync for the solo write, one for the group of the two queued writes"
    );
    for key in [&b"solo"[..], b"queued-a", b"queued-b"] {
        assert!(db.get(&ReadOptions::default(), key).unwrap().is_some(), "{key:?} lost");
    }
}

/// Synced writers that keep writing share fdatasyncs: once a group has found them all queued,
/// the next synced leader waits for the group's writers to come back instead of syncing for
/// the first one alone, so each round of writes costs about one sync. Without that wait the
/// first writer back found the queue empty and synced alone, and the rest formed a second
/// group: about two syncs per round.
#[test]
fn synced_writers_that_keep_writing_share_one_sync_per_round() {
    const ROUNDS: usize = 40;
    const THREADS: usize = 4;
    let fault = FaultFs::new(Arc::new(MemFs::new()));
    let db = open(Arc::new(fault.clone()), "open");
    db.put(&SYNC, b"warm", b"up").unwrap();
    // Long enough that every writer is back and queued before a sync ends.
    fault.set_sync_latency(Duration::from_millis(5));
    let syncs_before = db.stats().wal_syncs.load(Relaxed);
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let db = &db;
            scope.spawn(move || {
                for i in 0..ROUNDS {
                    db.put(&SYNC, &writer_key(t, i), &writer_value(t, i)).unwrap();
                }
            });
        }
    });
    fault.set_sync_latency(Duration::ZERO);
    let syncs = db.stats().wal_syncs.load(Relaxed) - syncs_before;
    // The first rounds find fewer writers queued; a writer slower than the gathering limit
    // costs a sync more. Alternating groups would take ~2 * ROUNDS.
    assert!(
        syncs <= ROUNDS as u64 + ROUNDS as u64 / 2,
        "{syncs} syncs for {ROUNDS} rounds of {THREADS} writers"
    );
    for t in 0..THREADS {
        for i in 0..ROUNDS {
            assert_eq!(db.get(&ReadOptions::default(), &writer_key(t, i)).unwrap(), Some(writer_value(t, i)));
        }
    }
}

/// Queued writers wait for their group by spinning, then blocking (`Options::write_spin_micros`):
/// whatever the limit, from never spinning through spins that always run out to spins that
/// always see the wake-up, and with synced groups that gather, no writer misses the wake-up
/// that ends its wait, and every write lands.
#[test]
fn queued_writers_are_woken_whether_they_spin_or_block() {
    const THREADS: usize = 8;
    const WRITES: usize = 300;
    for spin_micros in [0, 1, 200, 10_000] {
        for (sync_latency, opts) in [(Duration::ZERO, NO_SYNC), (Duration::from_micros(300), SYNC)] {
            let fault = FaultFs::new(Arc::new(MemFs::new()));
            fault.set_sync_latency(sync_latency);
            let db = Db::open(dir(), Options { write_spin_micros: spin_micros, ..options(Arc::new(fault)) });
            let db = Arc::new(db.unwrap());
            let (done_tx, done_rx) = std::sync::mpsc::channel();
            for t in 0..THREADS {
                let (db, done) = (Arc::clone(&db), done_tx.clone());
                // Not scoped: a writer that is never woken must fail the test, not hang it.
                std::thread::spawn(move || {
                    let result =
                        (0..WRITES).try_for_each(|i| db.put(&opts, &writer_key(t, i), &writer_value(t, i)));
                    done.send(result).unwrap();
                });
            }
            for _ in 0..THREADS {
                let result = done_rx.recv_timeout(Duration::from_secs(60));
                let ctx = format!("write_spin_micros {spin_micros}, sync {}", opts.sync);
                result.unwrap_or_else(|_| panic!("{ctx}: a writer was never woken")).unwrap();
            }
            check_writer_prefixes(&db, &[WRITES; THREADS], "after every writer finished");
        }
    }
}

/// A WAL sync fails while writers are queued behind it: the failed group and every write after
/// it fail, nothing is published past the failed group, reads never show a failed write, and
/// what was acknowledged survives a reboot.
#[test]
fn a_failed_sync_among_concurrent_writers_fails_every_group_behind_it() {
    watch_background_panics();
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    fault.set_sync_latency(Duration::from_micros(200));
    let db = open(Arc::new(fault.clone()), "open");
    let acked: Vec<AtomicUsize> = (0..WRITERS).map(|_| AtomicUsize::new(0)).collect();
    std::thread::scope(|scope| {
        for t in 0..WRITERS {
            let (db, acked) = (&db, &acked);
            scope.spawn(move || {
                for i in 0.. {
                    if db.put(&SYNC, &writer_key(t, i), &writer_value(t, i)).is_err() {
                        // Once one write fails, every later one does.
                        assert!(db.put(&SYNC, &writer_key(t, i), &writer_value(t, i)).is_err());
                        return;
                    }
                    acked[t].store(i + 1, Relaxed);
                }
            });
        }
        std::thread::sleep(Duration::from_millis(40));
        // One failed sync: the writes behind it must fail although their own syncs would not
        // (the failed sync may have dropped pages before their records).
        fault.add_rule(Rule::new(Op::Sync).on_path(".log").when(When::Nth(1)));
    });
    assert_eq!(fault.injected().len(), 1);
    assert_read_only(&db, "after a failed sync among concurrent writers");
    let acked: Vec<usize> = acked_so_far(&acked);
    // Every put is one sequence number and nothing after the failed group was published.
    assert_eq!(
        db.latest_sequence(),
        acked.iter().sum::<usize>() as u64,
        "a group behind the failed one was published"
    );
    // Reads show exactly the acknowledged writes: a failed group's entries are never published.
    let live = check_writer_prefixes(&db, &acked, "reads after the failed sync");
    assert_eq!(live, acked, "reads show a write that was not acknowledged");
    assert!(db.close().is_err(), "close must report the background error");
    fault.clear();
    let db = open(Arc::new(fault.clone()), "reboot after a failed sync among concurrent writers");
    check_writer_prefixes(&db, &acked, "reboot after a failed sync among concurrent writers");
    assert_no_engine_panics();
}

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
        if db.write(&SYNC, h.write_batch(b)).is_err() {
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
        match db.write(&SYNC, h.write_batch(b)) {
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

fn newest_wal(fs: &dyn FileSystem) -> PathBuf {
    let mut wals: Vec<String> =
        fs.list_dir(&dir()).unwrap().into_iter().filter(|n| n.ends_with(".log")).collect();
    wals.sort();
    dir().join(wals.last().expect("no WAL"))
}

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
    assert!(db.write(&SYNC, h.write_batch(torn)).is_err(), "{ctx}: torn write succeeded");
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
        db.put(&SYNC, b"later", b"write").unwrap();
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
        db.put(&SYNC, b"k", b"v").unwrap();
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
// WAL switches

/// The setup of the WAL-switch tests: a database with manual compactions on `MemFs` behind
/// `FaultFs`, and the history of what was written to it.
struct SwitchCase {
    mem: MemFs,
    fault: FaultFs,
    db: Db,
    h: History,
    rng: Rng,
}

impl SwitchCase {
    fn new(seed: u64) -> Self {
        let mem = MemFs::new();
        let fault = FaultFs::new(Arc::new(mem.clone()));
        let db = Db::open(dir(), manual_compaction_options(Arc::new(fault.clone()))).unwrap();
        Self { mem, fault, db, h: History::new(), rng: Rng::new(seed) }
    }

    fn write(&mut self, n: usize, opts: &WriteOptions) {
        write_batches(&self.db, &mut self.h, &mut self.rng, n, opts);
    }

    /// Writes `sync=false` batches until the memtable switches to a new WAL, then `after` more
    /// into it; returns the old and the new WAL. Every file sync is made to take 500 ms first,
    /// so the old memtable's flush has not finished (and the old WAL is still needed) when the
    /// test looks.
    fn switch_with_unsynced_tail(&mut self, after: usize) -> (PathBuf, PathBuf) {
        self.fault.set_sync_latency(Duration::from_millis(500));
        let old = newest_wal(&self.mem);
        while newest_wal(&self.mem) == old {
            self.write(1, &NO_SYNC);
        }
        self.write(after, &NO_SYNC);
        assert_eq!(
            self.db.stats().flushes.load(Relaxed),
            0,
            "precondition: the old memtable's flush must not have finished"
        );
        (old, newest_wal(&self.mem))
    }

    /// Lets syncs run at full speed again and closes the database (errors are the test's to
    /// check before).
    fn close(self) {
        self.fault.set_sync_latency(Duration::ZERO);
        drop(self.db);
    }
}

/// A power loss that keeps the new WAL's unsynced records but drops the old WAL's unsynced
/// tail must not recover the new records without the old ones: recovery stops before the new
/// WAL (its header names the old one and the sequence it must reach), losing a suffix.
#[test]
fn power_loss_after_a_switch_recovers_a_prefix_even_if_only_the_new_wal_was_written_back() {
    watch_background_panics();
    let mut c = SwitchCase::new(31);
    c.write(20, &SYNC);
    let synced = c.h.len();
    let (old, new) = c.switch_with_unsynced_tail(10);
    // Any directory sync (another flush's, a compaction's) makes the new WAL's entry durable.
    c.mem.sync_dir(&dir()).unwrap();
    let image = c.mem.crash_clone_keeping_unsynced(&new);
    assert!(
        image.contents(&old).is_some() && image.contents(&new).is_some(),
        "both WALs must be in the image"
    );
    let expected = c.h.state_after(synced);
    c.close();
    let read_only = Db::open_read_only(dir(), options(Arc::new(image.clone()))).unwrap();
    check_exact(&read_only, &expected, "read-only open after the power loss");
    drop(read_only);
    // Salvage mode replays the new WAL anyway: more data, but not a prefix.
    let salvage = Options { skip_corrupted_wal_records: true, ..options(Arc::new(image.clone())) };
    let salvaged = Db::open_read_only(dir(), salvage).unwrap();
    assert_ne!(dump(&salvaged).unwrap(), expected, "salvage should replay the new WAL");
    drop(salvaged);
    let db = open(Arc::new(image), "power loss after a switch");
    check_exact(&db, &expected, "power loss that kept only the new WAL's unsynced records");
    assert_no_engine_panics();
}

/// A `sync=true` write in the new WAL first syncs the WAL the switch left unsynced, so after a
/// power loss everything written before it is there.
#[test]
fn a_synced_write_after_a_switch_makes_the_closed_wal_durable() {
    watch_background_panics();
    let mut c = SwitchCase::new(32);
    c.switch_with_unsynced_tail(5);
    c.write(1, &SYNC);
    let image = c.mem.crash_clone(CrashMode::DropUnsynced);
    let expected = c.h.state_after(c.h.len());
    c.close();
    let db = open(Arc::new(image), "power loss after a synced write");
    check_exact(&db, &expected, "power loss after a synced write in the new WAL");
    assert_no_engine_panics();
}

/// `sync=false` writes never wait for an fdatasync of the WAL, not even at a memtable switch
/// (which used to sync the old WAL on the writer's thread; ~40 ms per 64 MiB memtable).
#[test]
fn unsynced_writes_never_sync_the_wal_across_memtable_switches() {
    watch_background_panics();
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let db = open(Arc::new(fault.clone()), "open");
    fault.add_rule(Rule::new(Op::Sync).on_path(".log").when(When::Always));
    let (mut h, mut rng) = (History::new(), Rng::new(33));
    write_batches(&db, &mut h, &mut rng, 600, &NO_SYNC);
    db.flush().unwrap();
    assert!(db.stats().flushes.load(Relaxed) >= 3, "the writes should have crossed several switches");
    assert!(fault.injected().is_empty(), "a WAL was synced: {:?}", fault.injected());
    check_exact(&db, &h.state_after(h.len()), "after the switches");
    fault.clear();
    assert_no_engine_panics();
}

/// A `sync=true` write whose sync of a closed WAL fails is refused before any of it is written:
/// the database turns read-only, and a process crash afterwards recovers every earlier write
/// (all were handed to the kernel) and nothing of the refused one.
#[test]
fn a_failed_sync_of_a_closed_wal_fails_the_synced_write_before_it_is_written() {
    watch_background_panics();
    let mut c = SwitchCase::new(34);
    let (old, _) = c.switch_with_unsynced_tail(5);
    let before = c.h.len();
    let name = old.file_name().unwrap().to_string_lossy().into_owned();
    c.fault.add_rule(Rule::new(Op::Sync).on_path(&name));
    let refused = c.h.push(random_batch(&mut c.rng, before));
    let e = c.db.write(&SYNC, c.h.write_batch(refused)).expect_err("the synced write succeeded");
    assert_eq!(
        c.fault.injected_paths(),
        vec![old.clone()],
        "the closed WAL's sync was not the one that failed"
    );
    assert!(is_background(&e) || io_kind(&e).is_some(), "unexpected error {e:?}");
    assert_read_only(&c.db, "after a failed sync of a closed WAL");
    let image = c.mem.crash_clone(CrashMode::KeepUnsynced);
    let expected = c.h.state_after(before);
    c.close();
    let db = open(Arc::new(image), "process crash after the refused write");
    check_exact(&db, &expected, "process crash after a refused synced write");
    assert_no_engine_panics();
}

/// `Db::sync_wal` makes every acknowledged `sync=false` write durable, those in a WAL closed by
/// a switch included; a failed sync puts the database into the error state; a read-only handle
/// refuses.
#[test]
fn sync_wal_makes_unsynced_writes_durable_and_a_failure_makes_the_database_read_only() {
    watch_background_panics();
    let mut c = SwitchCase::new(35);
    c.switch_with_unsynced_tail(5);
    c.db.sync_wal().unwrap();
    let image = c.mem.crash_clone(CrashMode::DropUnsynced);
    let reopened = open(Arc::new(image.clone()), "power loss after sync_wal");
    check_exact(&reopened, &c.h.state_after(c.h.len()), "power loss after sync_wal");
    drop(reopened);
    let read_only = Db::open_read_only(dir(), options(Arc::new(image))).unwrap();
    assert!(matches!(read_only.sync_wal(), Err(Error::ReadOnly)), "a read-only handle synced");

    c.write(3, &NO_SYNC);
    c.fault.add_rule(Rule::new(Op::Sync).on_path(".log"));
    assert!(c.db.sync_wal().is_err(), "sync_wal succeeded despite a failed fdatasync");
    assert_read_only(&c.db, "after a failed sync_wal");
    assert!(matches!(c.db.sync_wal(), Err(Error::Background { .. })), "sync_wal in the error state");
    c.close();
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
            db.put(&NO_SYNC, format!("key{i:05}").as_bytes(), &[round; 300]).unwrap();
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
    db.put(&NO_SYNC, b"k", b"v").unwrap();
    fault.set_sync_latency(Duration::from_millis(60));
    db.flush().unwrap();
    fault.set_sync_latency(Duration::ZERO);
    let text = String::from_utf8(mem.contents(&dir().join("LOG")).unwrap()).unwrap();
    let line =
        text.lines().find(|l| l.contains("writing a version edit to the MANIFEST took")).expect("no line");
    assert!(line.contains("us waiting for the versions lock"), "{line}");
    drop(db);
}
