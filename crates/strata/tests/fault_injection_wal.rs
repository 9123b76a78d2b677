//! Fault injection in the WAL path, through the filesystem seam like `fault_injection.rs`:
//! failed WAL writes and syncs, concurrent synced writers (group commit) under slow and failing
//! fsyncs and power loss, and memtable switches that close one WAL and open the next. Every test
//! checks the contract of docs/durability.md: acknowledged synced writes survive, what survives
//! is a prefix, a failed write makes the database read-only while reads keep working, and nothing
//! panics.

mod fault_support;

use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;
use std::time::Duration;

use strata::fs::FileSystem;
use strata::{Db, Error, Options, WriteOptions};
use strata_testkit::{
    dump, watch_background_panics, CrashMode, FaultFs, History, MemFs, Op, Rng, Rule, When,
};

use fault_support::{
    assert_no_engine_panics, assert_read_only, check_exact, check_prefix, dir, io_kind, is_background,
    manual_compaction_options, newest_wal, open, options, random_batch, value, write_batches, NO_SYNC, SYNC,
};

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
    let e =
        db.write_opt(&SYNC, h.write_batch(failed)).expect_err("the write whose WAL sync failed succeeded");
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
    assert!(db.write_opt(&NO_SYNC, h.write_batch(failed)).is_err());
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
                        db.put_opt(&SYNC, &writer_key(t, i), &writer_value(t, i)).unwrap();
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
    db.put_opt(&SYNC, b"warm", b"up").unwrap();
    fault.set_sync_latency(Duration::from_millis(200));
    let syncs_before = db.stats().wal_syncs.load(Relaxed);
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let write = |key: &'static [u8]| {
        let (db, done) = (Arc::clone(&db), done_tx.clone());
        // Not scoped: a writer that is never woken must fail the test, not hang it.
        std::thread::spawn(move || done.send(db.put_opt(&SYNC, key, b"v")).unwrap());
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
        assert!(db.get(key).unwrap().is_some(), "{key:?} lost");
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
    db.put_opt(&SYNC, b"warm", b"up").unwrap();
    // Long enough that every writer is back and queued before a sync ends.
    fault.set_sync_latency(Duration::from_millis(5));
    let syncs_before = db.stats().wal_syncs.load(Relaxed);
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let db = &db;
            scope.spawn(move || {
                for i in 0..ROUNDS {
                    db.put_opt(&SYNC, &writer_key(t, i), &writer_value(t, i)).unwrap();
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
            assert_eq!(db.get(writer_key(t, i)).unwrap(), Some(writer_value(t, i)));
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
                    let result = (0..WRITES)
                        .try_for_each(|i| db.put_opt(&opts, &writer_key(t, i), &writer_value(t, i)));
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
                    if db.put_opt(&SYNC, &writer_key(t, i), &writer_value(t, i)).is_err() {
                        // Once one write fails, every later one does.
                        assert!(db.put_opt(&SYNC, &writer_key(t, i), &writer_value(t, i)).is_err());
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
    let e = c.db.write_opt(&SYNC, c.h.write_batch(refused)).expect_err("the synced write succeeded");
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
