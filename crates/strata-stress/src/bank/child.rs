//! A bank cycle's child process: writer threads move money between accounts in transactions
//! (one mode for the whole child: optimistic, or pessimistic with or without a snapshot; each
//! transaction synced or not as drawn), and print `ack <id> <sync> <from> <to> <amount>` once
//! a commit returns; a reader thread checks the total at a snapshot over and over, and audits
//! the journal against the balances at a snapshot now and then. It runs until killed; a
//! violation or an engine error ends it at once with a nonzero exit (`Failure::exit`).
//!
//! It must not judge what survives a crash: the parent does, from the acknowledgements.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use strata::txn::{Transaction, TransactionDb, TransactionDbOptions, TransactionOptions};
use strata::{Error, Options, ReadOptions, WriteOptions};

use super::ledger::{self, Bank, Handles, Transfer, TransferId};
use super::{ChildArgs, TxnMode};
use crate::failure::Failure;

/// Figures the child prints on its `progress` lines.
#[derive(Default)]
struct Counters {
    commits: AtomicU64,
    retries: AtomicU64,
    rolled_back_savepoints: AtomicU64,
    snapshots: AtomicU64,
    audits: AtomicU64,
}

/// Runs the child; returns only on failure.
pub fn run(a: &ChildArgs) -> Failure {
    match run_inner(a) {
        Ok(never) => match never {},
        Err(f) => f,
    }
}

enum Never {}

fn run_inner(a: &ChildArgs) -> Result<Never, Failure> {
    let opts = Options { write_buffer_size: a.write_buffer_size, ..Options::default() };
    let h = Arc::new(ledger::open(&a.db, &opts)?);
    let bank = ledger::read_bank(&h)?;
    let tdb = Arc::new(TransactionDb::new(h.db.clone(), TransactionDbOptions::default()));
    let counters = Arc::new(Counters::default());
    for thread in 0..a.threads {
        let (h, tdb, counters, a) = (Arc::clone(&h), Arc::clone(&tdb), Arc::clone(&counters), a.clone());
        thread::spawn(move || {
            let f = writer(&h, &tdb, bank, &a, thread as u32, &counters);
            f.exit()
        });
    }
    let (h2, c2) = (Arc::clone(&h), Arc::clone(&counters));
    thread::spawn(move || reader(&h2, bank, &c2).exit());
    loop {
        thread::sleep(Duration::from_millis(20));
        let c = &counters;
        println!(
            "progress commits={} retries={} savepoints_rolled_back={} snapshots={} audits={}",
            c.commits.load(Ordering::Relaxed),
            c.retries.load(Ordering::Relaxed),
            c.rolled_back_savepoints.load(Ordering::Relaxed),
            c.snapshots.load(Ordering::Relaxed),
            c.audits.load(Ordering::Relaxed)
        );
    }
}

/// One writer: transfers forever, each retried until it commits.
fn writer(h: &Handles, tdb: &TransactionDb, bank: Bank, a: &ChildArgs, thread: u32, c: &Counters) -> Failure {
    let mut rng = fastrand::Rng::with_seed(a.seed.wrapping_mul(1_000_003).wrapping_add(u64::from(thread)));
    for seq in 0.. {
        let id = TransferId { cycle: a.cycle, thread, seq };
        let from = rng.u64(0..bank.accounts);
        let to = (from + rng.u64(1..bank.accounts)) % bank.accounts;
        let t = Transfer { from, to, amount: rng.i64(1..=100) };
        let sync = rng.u32(0..100) < a.sync_percent;
        let w = WriteOptions { sync, disable_wal: false };
        loop {
            let mut txn = match a.mode {
                TxnMode::Optimistic => h.db.begin_transaction(&w),
                TxnMode::Pessimistic => tdb.begin(&w, &TransactionOptions::default()),
                TxnMode::PessimisticSnapshot => {
                    tdb.begin(&w, &TransactionOptions { set_snapshot: true, ..Default::default() })
                }
            };
            let outcome = transfer(h, &mut txn, id, t, &mut rng, c).and_then(|()| txn.commit().map_err(step));
            match outcome {
                Ok(()) => break,
                Err(Step::Retry) => c.retries.fetch_add(1, Ordering::Relaxed),
                Err(Step::Stop(f)) => return f,
            };
        }
        c.commits.fetch_add(1, Ordering::Relaxed);
        println!("ack {id} {} {} {} {}", u8::from(sync), t.from, t.to, t.amount);
    }
    Failure::Tool("a writer ran out of sequence numbers".into())
}

/// The body of one transfer: read both balances for update (in a random order, so pessimistic
/// writers can deadlock), write both and the journal entry; now and then a savepoint with a
/// write that is rolled back.
fn transfer(
    h: &Handles,
    txn: &mut Transaction,
    id: TransferId,
    t: Transfer,
    rng: &mut fastrand::Rng,
    c: &Counters,
) -> Result<(), Step> {
    let r = ReadOptions::new();
    let (fk, tk) = (ledger::account_key(t.from), ledger::account_key(t.to));
    let (first, second) = if rng.bool() { (&fk, &tk) } else { (&tk, &fk) };
    let first_v = txn.get_for_update_cf_opt(&h.accounts, &r, first).map_err(step)?;
    let second_v = txn.get_for_update_cf_opt(&h.accounts, &r, second).map_err(step)?;
    let (fv, tv) = if first == &fk { (first_v, second_v) } else { (second_v, first_v) };
    let (from_bal, to_bal) = (ledger::parse_balance(&fk, fv)?, ledger::parse_balance(&tk, tv)?);
    let new_from = ledger::balance_value(from_bal - t.amount);
    txn.put_cf(&h.accounts, &fk, &new_from).map_err(step)?;
    txn.put_cf(&h.accounts, &tk, &ledger::balance_value(to_bal + t.amount)).map_err(step)?;
    if rng.u32(0..8) == 0 {
        // A write undone by a savepoint must never reach the journal (the audit rejects it).
        txn.set_save_point();
        txn.put_cf(&h.journal, &id.key(), b"rolled back").map_err(step)?;
        txn.rollback_to_save_point().map_err(|e| Failure::Engine(format!("rollback_to_save_point: {e}")))?;
        c.rolled_back_savepoints.fetch_add(1, Ordering::Relaxed);
    }
    txn.put_cf(&h.journal, &id.key(), &t.value()).map_err(step)?;
    let own = txn.get_cf_opt(&h.accounts, &r, &fk).map_err(step)?;
    if own.as_deref() != Some(&new_from[..]) {
        let m = format!("transfer {id} does not read its own write of {fk:?}: {own:?}");
        return Err(Step::Stop(Failure::Mismatch(m)));
    }
    Ok(())
}

/// What a failed transfer attempt leads to.
enum Step {
    /// A conflict: roll back and run the transfer again.
    Retry,
    /// Anything else: the child ends.
    Stop(Failure),
}

impl From<Failure> for Step {
    fn from(f: Failure) -> Self {
        Step::Stop(f)
    }
}

/// `Busy`, `Deadlock` and `LockTimeout` are the transaction's to retry; anything else ends the
/// child.
fn step(e: Error) -> Step {
    match e {
        Error::Busy(_) | Error::Deadlock(_) | Error::LockTimeout(_) => Step::Retry,
        e => Step::Stop(Failure::Engine(format!("in a transfer: {e}"))),
    }
}

/// The reader: the total at every snapshot; a full audit at a snapshot every 200 ms.
fn reader(h: &Handles, bank: Bank, c: &Counters) -> Failure {
    let mut last_audit = Instant::now();
    loop {
        let snap = h.db.snapshot();
        let when = format!("snapshot at sequence {}", snap.sequence());
        let checked =
            ledger::balances(h, bank, Some(&snap)).and_then(|b| ledger::check_total(bank, &b, &when));
        if let Err(f) = checked {
            return f;
        }
        c.snapshots.fetch_add(1, Ordering::Relaxed);
        if last_audit.elapsed() >= Duration::from_millis(200) {
            if let Err(f) = ledger::audit(h, bank, Some(&snap), &when, None) {
                return f;
            }
            c.audits.fetch_add(1, Ordering::Relaxed);
            last_audit = Instant::now();
        }
    }
}
