//! [`TransactionDb`]: a [`Db`] whose transactions lock the keys they write or read for update
//! (RocksDB's `TransactionDB`). It owns the lock manager and hands out transaction ids; the
//! transactions themselves are `transaction::Transaction`s in pessimistic mode. Writes made
//! through the plain [`Db`] handle take no locks.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::locks::LockManager;
use super::transaction::Transaction;
use crate::db::Db;
use crate::options::WriteOptions;

/// Lock stripes: unrelated keys rarely share one.
const LOCK_SHARDS: usize = 16;

/// Settings of a [`TransactionDb`] (RocksDB's `TransactionDBOptions`).
#[derive(Clone, Debug)]
pub struct TransactionDbOptions {
    /// How long a transaction waits for a lock another holds before `Error::LockTimeout`
    /// (default 1 s, RocksDB's `transaction_lock_timeout`); `None` waits as long as it takes.
    pub lock_timeout: Option<Duration>,
    /// How many transactions a wait-for chain is followed through to find a deadlock (default
    /// 50, RocksDB's `deadlock_detect_depth`); a longer cycle ends in a timeout instead.
    pub deadlock_detect_depth: usize,
}

impl Default for TransactionDbOptions {
    fn default() -> Self {
        Self { lock_timeout: Some(Duration::from_secs(1)), deadlock_detect_depth: 50 }
    }
}

/// Settings of one pessimistic transaction (RocksDB's `TransactionOptions`).
#[derive(Clone, Debug, Default)]
pub struct TransactionOptions {
    /// Take a snapshot at begin: reads see it, and locking a key written after it fails with
    /// `Error::Busy` (RocksDB's `set_snapshot`). Without it, reads see the latest writes, and
    /// a key read with `get_for_update` cannot change until the transaction ends.
    pub set_snapshot: bool,
    /// This transaction's lock timeout, instead of the database's.
    pub lock_timeout: Option<Duration>,
}

/// A database whose transactions lock what they touch.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::txn::{TransactionDb, TransactionDbOptions, TransactionOptions};
/// use strata::{Db, Options, ReadOptions, WriteOptions};
/// let tdb = TransactionDb::new(Db::open(dir.path(), Options::default())?, TransactionDbOptions::default());
/// let w = WriteOptions::default();
/// let mut a = tdb.begin(&w, &TransactionOptions::default());
/// a.put(b"k", b"from a")?; // a holds the lock on k
/// let mut b = tdb.begin(&w, &TransactionOptions { lock_timeout: Some(std::time::Duration::ZERO), ..Default::default() });
/// assert!(matches!(b.put(b"k", b"from b"), Err(strata::Error::LockTimeout(_))));
/// a.commit()?;
/// b.put(b"k", b"from b")?; // released at a's commit
/// b.commit()?;
/// assert_eq!(tdb.db().get(b"k")?.as_deref(), Some(&b"from b"[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TransactionDb {
    db: Db,
    locks: Arc<LockManager>,
    next_id: AtomicU64,
    opts: TransactionDbOptions,
}

impl TransactionDb {
    /// Wraps an open database.
    pub fn new(db: Db, opts: TransactionDbOptions) -> Self {
        let locks = Arc::new(LockManager::new(LOCK_SHARDS, opts.deadlock_detect_depth));
        Self { db, locks, next_id: AtomicU64::new(1), opts }
    }

    /// The database, for reads and non-transactional writes (which take no locks).
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Starts a pessimistic transaction committing with `write_opts`.
    pub fn begin(&self, write_opts: &WriteOptions, txn_opts: &TransactionOptions) -> Transaction {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let snapshot = txn_opts.set_snapshot.then(|| self.db.snapshot());
        let timeout = txn_opts.lock_timeout.or(self.opts.lock_timeout);
        Transaction::pessimistic(self.db.clone(), write_opts, snapshot, Arc::clone(&self.locks), id, timeout)
    }
}
