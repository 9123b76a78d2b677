//! Transactions, optimistic and pessimistic: isolation under contention (read-increment-write
//! on hot keys ends with exactly N x K), a bank transfer whose total never changes (checked while
//! it runs, and after a reopen), deadlock detection, lock timeouts, write skew as snapshot
//! isolation allows it, and commits across column families.

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use strata::txn::{Transaction, TransactionDb, TransactionDbOptions, TransactionOptions};
use strata::{Db, Error, Options, ReadOptions, WriteOptions};

const W: WriteOptions = WriteOptions { sync: false, disable_wal: false };

fn read_u64(v: Option<Vec<u8>>) -> u64 {
    v.map_or(0, |v| String::from_utf8(v).unwrap().parse().unwrap())
}

/// Runs `body` until it commits, retrying on `Busy` (optimistic conflict) and on `Deadlock` /
/// `LockTimeout` (pessimistic); returns how many attempts failed.
fn retry(
    mut begin: impl FnMut() -> Transaction,
    body: impl Fn(&mut Transaction) -> strata::Result<()>,
) -> u64 {
    let mut failed = 0;
    loop {
        let mut txn = begin();
        let outcome = body(&mut txn).and_then(|()| txn.commit());
        match outcome {
            Ok(()) => return failed,
            Err(Error::Busy(_) | Error::Deadlock(_) | Error::LockTimeout(_)) => failed += 1,
            Err(e) => panic!("unexpected error: {e}"),
        }
    }
}

fn increments(
    begin: impl Fn() -> Transaction + Send + Sync + 'static,
    threads: usize,
    k: usize,
    keys: usize,
) -> u64 {
    let begin = Arc::new(begin);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let begin = Arc::clone(&begin);
            thread::spawn(move || {
                let mut conflicts = 0;
                for i in 0..k {
                    let key = format!("counter{}", (t + i) % keys).into_bytes();
                    conflicts += retry(
                        || begin(),
                        |txn| {
                            let n = read_u64(txn.get_for_update(&key)?);
                            txn.put(&key, (n + 1).to_string().as_bytes())
                        },
                    );
                }
                conflicts
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).sum()
}

fn total(db: &Db, keys: usize) -> u64 {
    (0..keys).map(|i| read_u64(db.get(format!("counter{i}").as_bytes()).unwrap())).sum()
}

#[test]
fn optimistic_read_increment_write_on_hot_keys_loses_no_increment() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let d = db.clone();
    let conflicts = increments(move || d.begin_transaction(&W), 4, 200, 3);
    assert_eq!(total(&db, 3), 800);
    println!("optimistic: {conflicts} conflicts retried");
}

#[test]
fn pessimistic_read_increment_write_on_hot_keys_loses_no_increment() {
    let dir = tempfile::tempdir().unwrap();
    let tdb = Arc::new(TransactionDb::new(
        Db::open(dir.path(), Options::default()).unwrap(),
        TransactionDbOptions::default(),
    ));
    let t = Arc::clone(&tdb);
    increments(move || t.begin(&W, &TransactionOptions::default()), 4, 200, 3);
    assert_eq!(total(tdb.db(), 3), 800);
}

const ACCOUNTS: u64 = 8;
const START: u64 = 100;

fn balance_sum(db: &Db, at: Option<&strata::Snapshot>) -> u64 {
    let opts = ReadOptions { snapshot: at.cloned(), ..ReadOptions::new() };
    (0..ACCOUNTS).map(|a| read_u64(db.get_opt(&opts, format!("acct{a}").as_bytes()).unwrap())).sum()
}

fn transfers(db: &Db, begin: Arc<dyn Fn() -> Transaction + Send + Sync>, threads: u64, each: u64) {
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let begin = Arc::clone(&begin);
            thread::spawn(move || {
                for i in 0..each {
                    let (from, to) = ((t + i) % ACCOUNTS, (t * 3 + i * 5 + 1) % ACCOUNTS);
                    if from == to {
                        continue;
                    }
                    let (from, to) = (format!("acct{from}").into_bytes(), format!("acct{to}").into_bytes());
                    retry(
                        || begin(),
                        |txn| {
                            let a = read_u64(txn.get_for_update(&from)?);
                            let b = read_u64(txn.get_for_update(&to)?);
                            let amount = a.min(7);
                            txn.put(&from, (a - amount).to_string().as_bytes())?;
                            txn.put(&to, (b + amount).to_string().as_bytes())
                        },
                    );
                }
            })
        })
        .collect();
    // Checked while it runs: every snapshot sees the same total.
    while !handles.iter().all(|h| h.is_finished()) {
        let snap = db.snapshot();
        assert_eq!(balance_sum(db, Some(&snap)), ACCOUNTS * START, "a snapshot saw money appear or vanish");
    }
    for h in handles {
        h.join().unwrap();
    }
}

fn open_bank(dir: &std::path::Path) -> Db {
    let db = Db::open(dir, Options::default()).unwrap();
    for a in 0..ACCOUNTS {
        db.put_opt(&W, format!("acct{a}").as_bytes(), START.to_string().as_bytes()).unwrap();
    }
    db
}

#[test]
fn bank_transfers_keep_the_total_in_both_modes_and_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_bank(dir.path());
    let d = db.clone();
    transfers(&db, Arc::new(move || d.begin_transaction(&W)), 4, 150);
    let tdb = Arc::new(TransactionDb::new(db.clone(), TransactionDbOptions::default()));
    let t = Arc::clone(&tdb);
    transfers(&db, Arc::new(move || t.begin(&W, &TransactionOptions::default())), 4, 150);
    assert_eq!(balance_sum(&db, None), ACCOUNTS * START);
    drop(tdb);
    db.close().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(balance_sum(&db, None), ACCOUNTS * START);
}

#[test]
fn a_deadlock_is_refused_and_the_other_transaction_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let opts = TransactionDbOptions { lock_timeout: Some(Duration::from_secs(10)), ..Default::default() };
    let tdb = Arc::new(TransactionDb::new(Db::open(dir.path(), Options::default()).unwrap(), opts));
    let mut a = tdb.begin(&W, &TransactionOptions::default());
    a.put(b"k1", b"a").unwrap();
    let t = Arc::clone(&tdb);
    let (locked_k2, k2_locked) = std::sync::mpsc::channel();
    let b = thread::spawn(move || {
        let mut b = t.begin(&W, &TransactionOptions::default());
        b.put(b"k2", b"b").unwrap();
        locked_k2.send(()).unwrap();
        // Waits for a, which waits (or will wait) for b: one of the two requests is refused.
        match b.put(b"k1", b"b") {
            Ok(()) => b.commit().map(|()| "b committed"),
            Err(e) => {
                b.rollback(); // releases k2, so a goes on
                Err(e)
            }
        }
    });
    k2_locked.recv().unwrap();
    match a.put(b"k2", b"a") {
        Ok(()) => {
            // b was refused and rolled back.
            assert!(matches!(b.join().unwrap(), Err(Error::Deadlock(_))));
            a.commit().unwrap();
            assert_eq!(tdb.db().get(b"k2").unwrap().as_deref(), Some(&b"a"[..]));
        }
        Err(e) => {
            assert!(matches!(e, Error::Deadlock(_)), "{e}");
            a.rollback(); // releases k1, so b goes on
            assert_eq!(b.join().unwrap().unwrap(), "b committed");
            assert_eq!(tdb.db().get(b"k1").unwrap().as_deref(), Some(&b"b"[..]));
        }
    }
}

#[test]
fn snapshot_isolation_allows_write_skew_unless_reads_are_claimed() {
    // Two on-call doctors; each transaction checks that the other is on call, then leaves.
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put_opt(&W, b"alice", b"on").unwrap();
    db.put_opt(&W, b"bob", b"on").unwrap();
    let leave = |me: &[u8], other: &[u8], claim: bool| {
        let mut txn = db.begin_transaction(&W);
        let other_on = if claim { txn.get_for_update(other).unwrap() } else { txn.get(other).unwrap() };
        assert_eq!(other_on.as_deref(), Some(&b"on"[..]));
        txn.put(me, b"off").unwrap();
        txn
    };
    // Plain reads: both commit, and nobody is on call (the write skew snapshot isolation allows).
    let (a, b) = (leave(b"alice", b"bob", false), leave(b"bob", b"alice", false));
    a.commit().unwrap();
    b.commit().unwrap();
    assert_eq!(db.get(b"alice").unwrap().as_deref(), Some(&b"off"[..]));
    assert_eq!(db.get(b"bob").unwrap().as_deref(), Some(&b"off"[..]));
    // Reads claimed with get_for_update: the second commit conflicts.
    db.put_opt(&W, b"alice", b"on").unwrap();
    db.put_opt(&W, b"bob", b"on").unwrap();
    let (a, b) = (leave(b"alice", b"bob", true), leave(b"bob", b"alice", true));
    a.commit().unwrap();
    assert!(matches!(b.commit(), Err(Error::Busy(_))));
}

#[test]
fn a_transaction_commits_across_column_families_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let links = db.create_cf("links", Options::default()).unwrap();
    let counts = db.create_cf("counts", Options::default()).unwrap();
    let mut txn = db.begin_transaction(&W);
    txn.put_cf(&links, b"1:2", b"").unwrap();
    let n = read_u64(txn.get_for_update_cf(&counts, b"1").unwrap());
    txn.put_cf(&counts, b"1", (n + 1).to_string().as_bytes()).unwrap();
    // A conflicting write to the count: the link must not appear either.
    db.put_cf_opt(&counts, &W, b"1", b"5").unwrap();
    assert!(matches!(txn.commit(), Err(Error::Busy(_))));
    assert_eq!(db.get_cf(&links, b"1:2").unwrap(), None);
    let mut txn = db.begin_transaction(&W);
    txn.put_cf(&links, b"1:2", b"").unwrap();
    let n = read_u64(txn.get_for_update_cf(&counts, b"1").unwrap());
    txn.put_cf(&counts, b"1", (n + 1).to_string().as_bytes()).unwrap();
    txn.commit().unwrap();
    assert_eq!(db.get_cf(&links, b"1:2").unwrap().as_deref(), Some(&b""[..]));
    assert_eq!(db.get_cf(&counts, b"1").unwrap().as_deref(), Some(&b"6"[..]));
}

#[test]
fn savepoints_roll_back_the_writes_after_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let mut txn = db.begin_transaction(&W);
    txn.put(b"a", b"1").unwrap();
    txn.set_save_point();
    txn.put(b"b", b"2").unwrap();
    txn.delete(b"a").unwrap();
    txn.rollback_to_save_point().unwrap();
    assert!(txn.rollback_to_save_point().is_err(), "no savepoint left");
    assert_eq!(txn.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(txn.get(b"b").unwrap(), None);
    txn.commit().unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(b"b").unwrap(), None);
}

#[test]
fn a_transaction_iterates_its_own_writes_over_its_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for k in [b"a", b"c", b"e"] {
        db.put_opt(&W, k, b"db").unwrap();
    }
    let mut txn = db.begin_transaction(&W);
    db.put_opt(&W, b"d", b"after the snapshot").unwrap();
    txn.put(b"b", b"txn").unwrap();
    txn.delete(b"c").unwrap();
    let mut it = txn.cursor(&ReadOptions::new()).unwrap();
    it.seek_to_first();
    let mut seen = Vec::new();
    while it.valid() {
        seen.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    let want: Vec<(Vec<u8>, Vec<u8>)> = [(b"a", &b"db"[..]), (b"b", b"txn"), (b"e", b"db")]
        .iter()
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect();
    assert_eq!(seen, want);
}
