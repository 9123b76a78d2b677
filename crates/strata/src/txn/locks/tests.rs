use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::*;

/// An upper bound for things that should happen promptly; never a correctness condition.
const BOUND: Duration = Duration::from_secs(20);
const TRY: Option<Duration> = Some(Duration::ZERO);

/// Blocks until `txn` is registered as waiting for `holder` (so it is asleep in `lock`).
fn await_waiting(lm: &LockManager, txn: u64, holder: u64) {
    let start = Instant::now();
    while lm.waiting_for(txn) != Some(holder) {
        assert!(start.elapsed() < BOUND, "transaction {txn} never waited for {holder}");
        thread::sleep(Duration::from_millis(1));
    }
}

/// Who holds (cf, key), as seen by a try-once from an outsider transaction.
fn holder_of(lm: &LockManager, cf: u32, key: &[u8]) -> Option<String> {
    match lm.lock(u64::MAX, cf, key, TRY) {
        Ok(()) => {
            lm.unlock(u64::MAX, cf, key);
            None
        }
        Err(Error::LockTimeout(m)) => Some(m),
        Err(e) => panic!("unexpected {e}"),
    }
}

#[test]
fn relocking_is_a_no_op_and_one_unlock_releases() {
    let lm = LockManager::default();
    lm.lock(1, 0, b"k", None).unwrap();
    lm.lock(1, 0, b"k", TRY).unwrap();
    let msg = holder_of(&lm, 0, b"k").unwrap();
    assert!(msg.contains("transaction 1"), "{msg}");
    // Only the owner's unlock counts.
    lm.unlock(2, 0, b"k");
    assert!(holder_of(&lm, 0, b"k").is_some());
    lm.unlock(1, 0, b"k");
    assert!(holder_of(&lm, 0, b"k").is_none());
}

#[test]
fn families_and_keys_are_separate_locks() {
    let lm = LockManager::new(1, DEFAULT_DEADLOCK_DETECT_DEPTH);
    lm.lock(1, 0, b"k", None).unwrap();
    lm.lock(2, 1, b"k", TRY).unwrap();
    lm.lock(3, 0, b"k2", TRY).unwrap();
    assert!(holder_of(&lm, 1, b"k").unwrap().contains("transaction 2"));
}

#[test]
fn a_second_transaction_waits_until_the_first_unlocks() {
    let lm = Arc::new(LockManager::default());
    lm.lock(1, 0, b"hot", None).unwrap();
    let (tx, rx) = mpsc::channel();
    // Not scoped: a lost wake-up fails the test at the bound instead of hanging it.
    let waiter = Arc::clone(&lm);
    thread::spawn(move || tx.send(waiter.lock(2, 0, b"hot", None)).unwrap());
    await_waiting(&lm, 2, 1);
    assert!(rx.try_recv().is_err(), "got the lock while it was held");
    lm.unlock(1, 0, b"hot");
    // The unlock itself drops the waiter's edge, so no stale edge can fake a cycle.
    assert_eq!(lm.waiting_for(2), None);
    rx.recv_timeout(BOUND).unwrap().unwrap();
    assert_eq!(lm.waiting_for(2), None);
    assert!(holder_of(&lm, 0, b"hot").unwrap().contains("transaction 2"));
}

#[test]
fn a_wait_times_out_with_the_key_and_holder() {
    let lm = LockManager::default();
    lm.lock(7, 3, b"a\0b", None).unwrap();
    let start = Instant::now();
    let err = lm.lock(8, 3, b"a\0b", Some(Duration::from_millis(50))).unwrap_err();
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(50) && waited < BOUND, "{waited:?}");
    let Error::LockTimeout(msg) = err else { panic!("{err}") };
    assert!(msg.contains(r#"key "a\x00b" of column family 3"#), "{msg}");
    assert!(msg.contains("transaction 7"), "{msg}");
    assert_eq!(lm.waiting_for(8), None);
    // The timed-out waiter left no trace: the next unlock frees the key for anyone.
    lm.unlock(7, 3, b"a\0b");
    lm.lock(9, 3, b"a\0b", TRY).unwrap();
}

#[test]
fn try_once_fails_at_once_without_waiting() {
    let lm = LockManager::default();
    lm.lock(1, 0, b"k", None).unwrap();
    let start = Instant::now();
    assert!(matches!(lm.lock(2, 0, b"k", TRY), Err(Error::LockTimeout(_))));
    assert!(start.elapsed() < BOUND);
    assert_eq!(lm.waiting_for(2), None);
    lm.lock(2, 0, b"free", TRY).unwrap();
}

#[test]
fn a_two_transaction_deadlock_is_reported_to_the_one_closing_it() {
    let lm = LockManager::default();
    let (a, b) = (10, 20);
    lm.lock(a, 0, b"k1", None).unwrap();
    lm.lock(b, 0, b"k2", None).unwrap();
    let (tx, rx) = mpsc::channel();
    thread::scope(|s| {
        s.spawn(|| tx.send(lm.lock(a, 0, b"k2", Some(BOUND))).unwrap());
        await_waiting(&lm, a, b);
        let err = lm.lock(b, 0, b"k1", Some(BOUND)).unwrap_err();
        let Error::Deadlock(msg) = err else { panic!("{err}") };
        assert!(msg.contains(r#"key "k1" of column family 0"#), "{msg}");
        assert!(msg.contains("held by transaction 10"), "{msg}");
        assert!(msg.contains("20 -> 10 -> 20"), "{msg}");
        assert_eq!(lm.waiting_for(b), None);
        assert!(rx.try_recv().is_err());
        lm.unlock_all(b, [(0, b"k2".to_vec())]);
        rx.recv_timeout(BOUND).unwrap().unwrap();
    });
    assert!(holder_of(&lm, 0, b"k2").unwrap().contains("transaction 10"));
}

/// A holds k1 and waits for k2, B holds k2 and waits for k3, C holds k3; returns once both
/// wait, with their results arriving on the two receivers.
fn three_way<'s>(
    s: &'s thread::Scope<'s, '_>,
    lm: &'s LockManager,
) -> (mpsc::Receiver<Result<()>>, mpsc::Receiver<Result<()>>) {
    for (txn, key) in [(1, b"k1"), (2, b"k2"), (3, b"k3")] {
        lm.lock(txn, 0, key, None).unwrap();
    }
    let (ta, ra) = mpsc::channel();
    let (tb, rb) = mpsc::channel();
    s.spawn(move || ta.send(lm.lock(1, 0, b"k2", Some(BOUND))).unwrap());
    s.spawn(move || tb.send(lm.lock(2, 0, b"k3", Some(BOUND))).unwrap());
    await_waiting(lm, 1, 2);
    await_waiting(lm, 2, 3);
    (ra, rb)
}

#[test]
fn a_three_transaction_cycle_is_detected() {
    let lm = LockManager::default();
    thread::scope(|s| {
        let (ra, rb) = three_way(s, &lm);
        let err = lm.lock(3, 0, b"k1", Some(BOUND)).unwrap_err();
        let Error::Deadlock(msg) = err else { panic!("{err}") };
        assert!(msg.contains("3 -> 1 -> 2 -> 3"), "{msg}");
        // C gives up: B gets k3, then A gets k2 once B is done.
        lm.unlock(3, 0, b"k3");
        rb.recv_timeout(BOUND).unwrap().unwrap();
        assert!(ra.try_recv().is_err());
        lm.unlock_all(2, [(0, b"k2".to_vec()), (0, b"k3".to_vec())]);
        ra.recv_timeout(BOUND).unwrap().unwrap();
    });
}

#[test]
fn a_cycle_longer_than_the_detection_depth_is_left_to_the_timeout() {
    let lm = LockManager::new(4, 1);
    thread::scope(|s| {
        let (ra, rb) = three_way(s, &lm);
        let err = lm.lock(3, 0, b"k1", Some(Duration::from_millis(20))).unwrap_err();
        assert!(matches!(err, Error::LockTimeout(_)), "{err}");
        lm.unlock(3, 0, b"k3");
        rb.recv_timeout(BOUND).unwrap().unwrap();
        lm.unlock_all(2, [(0, b"k2".to_vec()), (0, b"k3".to_vec())]);
        ra.recv_timeout(BOUND).unwrap().unwrap();
    });
}

#[test]
fn unlock_all_wakes_every_waiter() {
    // One shard, so waiters for different keys share a condition variable too.
    let lm = Arc::new(LockManager::new(1, DEFAULT_DEADLOCK_DETECT_DEPTH));
    let keys: Vec<(u32, Vec<u8>)> = (0..4u8).map(|i| (u32::from(i % 2), vec![i])).collect();
    for (cf, key) in &keys {
        lm.lock(1, *cf, key, None).unwrap();
    }
    let (tx, rx) = mpsc::channel();
    // Two waiters per key, waiting for ever: each unlocks after it gets it, letting the other
    // in. Not scoped, so a lost wake-up fails the test at the bound instead of hanging it.
    for waiter in 100..108u64 {
        let (cf, key) = keys[waiter as usize % 4].clone();
        let (tx, lm) = (tx.clone(), Arc::clone(&lm));
        thread::spawn(move || {
            let got = lm.lock(waiter, cf, &key, None);
            lm.unlock(waiter, cf, &key);
            tx.send(got).unwrap();
        });
    }
    let start = Instant::now();
    while (100..108).any(|w| lm.waiting_for(w).is_none()) {
        assert!(start.elapsed() < BOUND);
        thread::sleep(Duration::from_millis(1));
    }
    lm.unlock_all(1, keys.clone());
    for _ in 0..8 {
        rx.recv_timeout(BOUND).unwrap().unwrap();
    }
}

#[test]
fn hot_keys_serialize_read_increment_write() {
    const THREADS: u64 = 8;
    const ROUNDS: u64 = 300;
    let lm = LockManager::new(4, DEFAULT_DEADLOCK_DETECT_DEPTH);
    let counters: Vec<AtomicU64> = (0..3).map(|_| AtomicU64::new(0)).collect();
    thread::scope(|s| {
        for t in 0..THREADS {
            let (lm, counters) = (&lm, &counters);
            s.spawn(move || {
                for r in 0..ROUNDS {
                    let txn = t * ROUNDS + r + 1;
                    let key = [(t + r) as u8 % 3];
                    lm.lock(txn, 0, &key, Some(BOUND)).unwrap();
                    // A separate load and store: correct only under mutual exclusion.
                    let c = &counters[usize::from(key[0])];
                    let v = c.load(Ordering::Relaxed);
                    thread::yield_now();
                    c.store(v + 1, Ordering::Relaxed);
                    lm.unlock(txn, 0, &key);
                }
            });
        }
    });
    let total: u64 = counters.iter().map(|c| c.load(Ordering::Relaxed)).sum();
    assert_eq!(total, THREADS * ROUNDS);
}

/// One thread's script: per step, the (family, key) pairs to lock, and whether to release
/// them one by one (else with `unlock_all`).
type Script = Vec<(Vec<(u32, u8)>, bool)>;

fn script() -> impl Strategy<Value = Script> {
    let keys = prop::collection::vec((0..2u32, 0..6u8), 1..5);
    prop::collection::vec((keys, any::<bool>()), 1..15)
}

/// Runs a script, locking each step's keys in sorted order (duplicates re-lock).
fn run_script(lm: &LockManager, txn_base: u64, script: &Script) {
    for (step, (keys, one_by_one)) in script.iter().enumerate() {
        let txn = txn_base + step as u64;
        let mut keys = keys.clone();
        keys.sort();
        for &(cf, k) in &keys {
            if let Err(e) = lm.lock(txn, cf, &[k], Some(BOUND)) {
                panic!("transaction {txn}: {e}");
            }
        }
        keys.dedup();
        if *one_by_one {
            for &(cf, k) in keys.iter().rev() {
                lm.unlock(txn, cf, &[k]);
            }
        } else {
            lm.unlock_all(txn, keys.iter().map(|&(cf, k)| (cf, vec![k])));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Sorted-order locking cannot deadlock: no Deadlock, no timeout, and nothing left held.
    #[test]
    fn sorted_locking_never_deadlocks(scripts in prop::collection::vec(script(), 2..5)) {
        let lm = LockManager::new(3, DEFAULT_DEADLOCK_DETECT_DEPTH);
        thread::scope(|s| {
            for (i, script) in scripts.iter().enumerate() {
                let lm = &lm;
                s.spawn(move || run_script(lm, (i as u64 + 1) << 32, script));
            }
        });
        for cf in 0..2 {
            for k in 0..6u8 {
                prop_assert!(holder_of(&lm, cf, &[k]).is_none());
            }
        }
        prop_assert!(lm.waits_for.lock().is_empty());
    }
}
