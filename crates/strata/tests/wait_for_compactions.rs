//! `Db::wait_for_compactions`: it returns only once no flush or compaction runs and none is due,
//! so the files stay put afterwards; it gives up at its timeout while a compaction cannot
//! finish; it reports a failed compaction's error; a read-only handle has nothing to wait for.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use strata::{Db, Error, MergeOperator, Options, ReadOptions, WriteOptions};

/// Appends operands to the base; every full merge waits until the gate is open, so a compaction
/// that folds operands into a base cannot finish while it is closed.
struct Gated {
    open: Arc<(Mutex<bool>, Condvar)>,
}

impl MergeOperator for Gated {
    fn name(&self) -> &str {
        "gated-append"
    }
    fn full_merge(&self, _key: &[u8], base: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
        let (lock, cv) = &*self.open;
        let mut open = lock.lock().unwrap();
        while !*open {
            open = cv.wait(open).unwrap();
        }
        let mut out = base.unwrap_or_default().to_vec();
        operands.iter().for_each(|op| out.extend_from_slice(op));
        Some(out)
    }
}

fn open_gate(gate: &(Mutex<bool>, Condvar)) {
    *gate.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = true;
    gate.1.notify_all();
}

/// Opens the gate when dropped, so a failed assertion unwinds into a failed test instead of a
/// close that waits forever on the blocked compaction. Declared after the database, it drops
/// before it.
struct OpenOnDrop(Arc<(Mutex<bool>, Condvar)>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        open_gate(&self.0);
    }
}

/// Writes a base value for `k` and flushes, then one merge operand per flush until level 0
/// reaches its compaction trigger; that compaction folds the operands into the base, which
/// calls the merge operator.
fn operands_up_to_the_level0_trigger(db: &Db, trigger: usize) {
    let w = WriteOptions::default();
    db.put_opt(&w, b"k", b"base").unwrap();
    db.flush().unwrap();
    for i in 1..trigger {
        db.merge_opt(&w, b"k", format!("+{i}").as_bytes()).unwrap();
        db.flush().unwrap();
    }
}

fn level0_files(db: &Db) -> usize {
    db.property("strata.num-files-at-level0").unwrap().parse().unwrap()
}

#[test]
fn returns_once_nothing_is_due_and_the_files_stay_put() {
    let dir = tempfile::tempdir().unwrap();
    // Small memtables: the writes below switch dozens of them, so flushes and level-0
    // compactions run in the background while the loop writes.
    let opts = Options { write_buffer_size: 64 << 10, target_file_size: 64 << 10, ..Options::default() };
    let trigger = opts.level0_compaction_trigger;
    let db = Db::open(dir.path(), opts).unwrap();
    let w = WriteOptions { disable_wal: true, ..WriteOptions::default() };
    for i in 0..40_000u32 {
        db.put_opt(&w, &i.wrapping_mul(2_654_435_761).to_be_bytes(), &[7u8; 100]).unwrap();
    }
    assert!(db.wait_for_compactions(None).unwrap());
    assert!(level0_files(&db) < trigger, "level 0 at its trigger: a compaction was still due");
    let settled = db.property("strata.levelstats").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(db.property("strata.levelstats").unwrap(), settled, "files changed after the wait");
    assert_eq!(db.property("strata.estimate-pending-compaction-bytes").as_deref(), Some("0"));
    let r = ReadOptions::new();
    assert_eq!(
        db.get_opt(&r, &39_999u32.wrapping_mul(2_654_435_761).to_be_bytes()).unwrap(),
        Some(vec![7u8; 100])
    );
    // Idle already: returns at once, with or without a timeout.
    assert!(db.wait_for_compactions(Some(Duration::ZERO)).unwrap());
    assert!(db.wait_for_compactions(Some(Duration::MAX)).unwrap());
}

#[test]
fn gives_up_at_its_timeout_while_a_compaction_cannot_finish() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let opts =
        Options { merge_operator: Some(Arc::new(Gated { open: Arc::clone(&gate) })), ..Options::default() };
    let trigger = opts.level0_compaction_trigger;
    let db = Db::open(dir.path(), opts).unwrap();
    let _opens = OpenOnDrop(Arc::clone(&gate));
    // The compaction this leads to blocks on the gate.
    operands_up_to_the_level0_trigger(&db, trigger);
    let start = Instant::now();
    assert!(!db.wait_for_compactions(Some(Duration::from_millis(100))).unwrap());
    assert!(start.elapsed() >= Duration::from_millis(100));
    assert_eq!(level0_files(&db), trigger);

    open_gate(&gate);
    assert!(db.wait_for_compactions(None).unwrap());
    assert_eq!(level0_files(&db), 0);
    let want = (1..trigger).fold(b"base".to_vec(), |mut v, i| {
        v.extend_from_slice(format!("+{i}").as_bytes());
        v
    });
    assert_eq!(db.get(b"k").unwrap(), Some(want));
}

/// A merge operator that panics: the compaction that folds operands into the base fails, and
/// the database turns read-only, which the waiting caller must hear about instead of waiting on.
struct Panicking;

impl MergeOperator for Panicking {
    fn name(&self) -> &str {
        "panicking"
    }
    fn full_merge(&self, _key: &[u8], _base: Option<&[u8]>, _operands: &[&[u8]]) -> Option<Vec<u8>> {
        panic!("the application's merge operator panicked")
    }
}

#[test]
fn reports_the_background_error_of_a_failed_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { merge_operator: Some(Arc::new(Panicking)), ..Options::default() };
    let trigger = opts.level0_compaction_trigger;
    let db = Db::open(dir.path(), opts).unwrap();
    operands_up_to_the_level0_trigger(&db, trigger);
    let err = db.wait_for_compactions(Some(Duration::from_secs(60))).unwrap_err();
    assert!(
        matches!(&err, Error::Background { context, cause: None } if context.contains("panicked")),
        "{err:?}"
    );
}

#[test]
fn a_read_only_handle_has_nothing_to_wait_for() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        // Level 0 reaches its trigger: if the compaction has not run by the close, a writable
        // handle would run it; a read-only one never does.
        for i in 0..Options::default().level0_compaction_trigger {
            db.put([i as u8], b"v").unwrap();
            db.flush().unwrap();
        }
    }
    let db = Db::open_read_only(dir.path(), Options::default()).unwrap();
    assert!(db.wait_for_compactions(Some(Duration::from_secs(10))).unwrap());
}

#[test]
fn timed_waits_return_on_time_while_a_writer_keeps_the_background_busy() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { write_buffer_size: 64 << 10, target_file_size: 64 << 10, ..Options::default() };
    let db = Db::open(dir.path(), opts).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU32::new(0));
    let writer = {
        let (db, stop, written) = (db.clone(), Arc::clone(&stop), Arc::clone(&written));
        std::thread::spawn(move || {
            let w = WriteOptions { disable_wal: true, ..WriteOptions::default() };
            let mut i = 0u32;
            while !stop.load(Ordering::Relaxed) {
                db.put_opt(&w, &i.wrapping_mul(2_654_435_761).to_be_bytes(), &[1u8; 100]).unwrap();
                i += 1;
                written.store(i, Ordering::Relaxed);
            }
        })
    };
    // Let the writer fill a few memtables first, so there is background work to wait on.
    while written.load(Ordering::Relaxed) < 5_000 {
        std::thread::yield_now();
    }
    let limit = Duration::from_millis(20);
    for _ in 0..20 {
        let start = Instant::now();
        db.wait_for_compactions(Some(limit)).unwrap();
        // Generous slack for a loaded 2-core machine; a lost wakeup or a missed deadline would
        // block for as long as the writer runs.
        assert!(
            start.elapsed() < limit + Duration::from_secs(5),
            "a timed wait overran: {:?}",
            start.elapsed()
        );
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let written = written.load(Ordering::Relaxed);
    assert!(db.wait_for_compactions(None).unwrap());
    assert!(level0_files(&db) < Options::default().level0_compaction_trigger);
    let r = ReadOptions::new();
    let last = (written - 1).wrapping_mul(2_654_435_761).to_be_bytes();
    assert_eq!(db.get_opt(&r, &last).unwrap(), Some(vec![1u8; 100]));
}
