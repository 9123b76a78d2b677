//! A custom `FileSystem` that panics inside a write (its bug, or an engine bug under it) must not
//! hang the database: the panic goes on in the writer whose write hit it, the database turns
//! read-only, writers queued behind it get `Background` errors instead of waiting forever, and a
//! reopen (the filesystem fixed) has every acknowledged write.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use strata::{Db, Error, Options, WriteOptions};
use strata_testkit::{FaultFs, MemFs, Op, Rule, When};

const SYNC: WriteOptions = WriteOptions { sync: true, disable_wal: false };

fn open(fs: &FaultFs) -> Db {
    Db::open(PathBuf::from("/db"), Options { fs: Arc::new(fs.clone()), ..Options::default() }).unwrap()
}

fn key(t: usize, i: usize) -> Vec<u8> {
    format!("w{t}-{i:05}").into_bytes()
}

/// Every acknowledged write of each writer is there after a reopen with the panic gone.
fn check_acknowledged(mem: &MemFs, acked: &[usize]) {
    let db = open(&FaultFs::new(Arc::new(mem.clone())));
    for (t, &n) in acked.iter().enumerate() {
        for i in 0..n {
            let got = db.get(key(t, i)).unwrap();
            assert_eq!(got.as_deref(), Some(&b"v"[..]), "writer {t}'s acknowledged write {i} is lost");
        }
    }
}

#[test]
fn a_lone_write_whose_wal_sync_panics_and_later_writes_fail() {
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    let db = open(&fault);
    db.put_opt(&SYNC, &key(0, 0), b"v").unwrap();
    fault.add_rule(Rule::new(Op::Sync).on_path(".log").when(When::Nth(1)).panics());
    let panicked = catch_unwind(AssertUnwindSafe(|| db.put_opt(&SYNC, &key(0, 1), b"v")));
    assert!(panicked.is_err(), "the filesystem's panic goes on in the writer: {panicked:?}");
    fault.clear();
    // The next writer would have waited for the queue forever if the panic had unwound out.
    let (tx, rx) = mpsc::channel();
    let db = Arc::new(db);
    let writer = Arc::clone(&db);
    let handle = std::thread::spawn(move || tx.send(writer.put_opt(&SYNC, &key(0, 2), b"v")).unwrap());
    let later = rx.recv_timeout(Duration::from_secs(20)).expect("a write after the panic hung");
    match later {
        Err(Error::Background { context, cause: None }) => {
            assert!(context.contains("a write panicked"), "{context}");
        }
        other => panic!("a write after the panic must fail with a Background error, got {other:?}"),
    }
    handle.join().unwrap(); // its handle on the database is gone before the reopen
    drop(db);
    check_acknowledged(&mem, &[1]);
}

#[test]
fn writers_queued_behind_a_panicking_group_get_errors_instead_of_hanging() {
    // Some(error), or None for the writer whose write panicked.
    const WRITERS: usize = 6;
    let mem = MemFs::new();
    let fault = FaultFs::new(Arc::new(mem.clone()));
    // Slow syncs so that writers queue up into groups behind each other.
    fault.set_sync_latency(Duration::from_micros(300));
    let db = Arc::new(open(&fault));
    let acked: Arc<Vec<AtomicUsize>> = Arc::new((0..WRITERS).map(|_| AtomicUsize::new(0)).collect());
    let (tx, rx) = mpsc::channel();
    let mut handles = Vec::new();
    for t in 0..WRITERS {
        let (db, acked, tx) = (Arc::clone(&db), Arc::clone(&acked), tx.clone());
        // Not scoped: a writer that is never woken must fail the test, not hang it.
        handles.push(std::thread::spawn(move || {
            let mut i = 0;
            let error = loop {
                match catch_unwind(AssertUnwindSafe(|| db.put_opt(&SYNC, &key(t, i), b"v"))) {
                    Ok(Ok(())) => {
                        i += 1;
                        acked[t].store(i, Relaxed);
                    }
                    Ok(Err(e)) => break Some(e),
                    Err(_) => break None,
                }
            };
            tx.send(error).unwrap();
        }));
    }
    std::thread::sleep(Duration::from_millis(30));
    fault.add_rule(Rule::new(Op::Write).on_path(".log").when(When::Nth(1)).panics());
    let mut panicked = 0;
    for _ in 0..WRITERS {
        match rx.recv_timeout(Duration::from_secs(30)).expect("a writer hung after the panic") {
            None => panicked += 1,
            Some(error) => assert!(matches!(error, Error::Background { .. }), "{error:?}"),
        }
    }
    assert_eq!(panicked, 1, "one write hit the panic");
    handles.into_iter().for_each(|h| h.join().unwrap());
    fault.clear();
    let acked: Vec<usize> = acked.iter().map(|n| n.load(Relaxed)).collect();
    assert!(acked.iter().all(|&n| n > 0), "every writer got writes in before the panic: {acked:?}");
    drop(db);
    check_acknowledged(&mem, &acked);
}
