//! [`Transaction`]: reads that see the transaction's own writes, writes buffered in a
//! [`WriteBatchWithIndex`], savepoints, and a commit that writes the buffer as one atomic batch
//! across column families. Two ways to keep transactions apart (docs/transactions.md):
//! - optimistic ([`Db::begin_transaction`], RocksDB's `OptimisticTransactionDB`): nothing is
//!   locked; at commit, inside the write group, every key the transaction wrote or read with
//!   `get_for_update` must not have been written since its snapshot, or the commit fails with
//!   `Error::Busy` and writes nothing;
//! - pessimistic ([`TransactionDb`](super::TransactionDb), RocksDB's `TransactionDB`): writes
//!   and `get_for_update` lock their key first (waiting up to the lock timeout, refusing a
//!   deadlock), so the commit cannot conflict.
//!
//! It owns the buffer, the tracked keys and the locks it holds; it must not write anything to
//! the database before `commit`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::batch_iter::BatchAndDbIterator;
use super::indexed_batch::WriteBatchWithIndex;
use super::locks::LockManager;
use crate::db::{ColumnFamily, Db};
use crate::error::{Error, Result};
use crate::options::{ReadOptions, WriteOptions};
use crate::snapshot::Snapshot;

/// How a transaction keeps out of others' way.
enum Mode {
    /// Conflicts are found at commit.
    Optimistic,
    /// Keys are locked as they are written or read for update.
    Pessimistic { locks: Arc<LockManager>, id: u64, timeout: Option<Duration> },
}

/// A transaction over a [`Db`]; see the module documentation of `strata::txn` and
/// docs/transactions.md for the isolation it gives. Dropping it without `commit` rolls it back.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::{Db, Error, Options, ReadOptions, WriteOptions};
/// let db = Db::open(dir.path(), Options::default())?;
/// db.put(b"balance", b"10")?;
///
/// let mut txn = db.begin_transaction(&WriteOptions::default());
/// let balance = txn.get_for_update(b"balance")?.unwrap();
/// txn.put(b"balance", b"7")?;
/// assert_eq!(txn.get(b"balance")?.as_deref(), Some(&b"7"[..])); // its own write
/// assert_eq!(db.get(b"balance")?.as_deref(), Some(&balance[..])); // not yet
///
/// db.put(b"balance", b"20")?; // another writer gets in first
/// assert!(matches!(txn.commit(), Err(Error::Busy(_)))); // nothing written: retry
/// assert_eq!(db.get(b"balance")?.as_deref(), Some(&b"20"[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Transaction {
    db: Db,
    write_opts: WriteOptions,
    /// What reads see besides the buffer, and what optimistic commits are checked against.
    snapshot: Option<Snapshot>,
    buffer: WriteBatchWithIndex,
    /// Keys whose newest write must not be newer than the snapshot at commit (optimistic), or
    /// that this transaction has locked (pessimistic), with their family's handle.
    tracked: BTreeMap<(u32, Vec<u8>), ColumnFamily>,
    mode: Mode,
}

impl Db {
    /// Starts an optimistic transaction (RocksDB's `OptimisticTransactionDB::BeginTransaction`),
    /// reading at a snapshot taken now and committing with `opts`. See [`Transaction`].
    pub fn begin_transaction(&self, opts: &WriteOptions) -> Transaction {
        Transaction::new(self.clone(), opts, Some(self.snapshot()), Mode::Optimistic)
    }
}

impl Transaction {
    fn new(db: Db, write_opts: &WriteOptions, snapshot: Option<Snapshot>, mode: Mode) -> Self {
        Self {
            db,
            write_opts: *write_opts,
            snapshot,
            buffer: WriteBatchWithIndex::new(),
            tracked: BTreeMap::new(),
            mode,
        }
    }

    pub(super) fn pessimistic(
        db: Db,
        write_opts: &WriteOptions,
        snapshot: Option<Snapshot>,
        locks: Arc<LockManager>,
        id: u64,
        timeout: Option<Duration>,
    ) -> Self {
        Self::new(db, write_opts, snapshot, Mode::Pessimistic { locks, id, timeout })
    }

    /// The snapshot reads see under the buffer: the one taken at begin for an optimistic
    /// transaction; for a pessimistic one, `None` (reads see the latest writes) unless it was
    /// begun with a snapshot.
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref()
    }

    fn read_opts(&self, opts: &ReadOptions) -> ReadOptions {
        let mut o = opts.clone();
        if o.snapshot.is_none() {
            o.snapshot = self.snapshot.clone();
        }
        o
    }

    fn family(&self, cf: Option<&ColumnFamily>) -> ColumnFamily {
        cf.cloned().unwrap_or_else(|| self.db.default_cf())
    }

    /// [`Transaction::get_opt`] with default read options.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_opt(&ReadOptions::new(), key.as_ref())
    }

    /// [`Transaction::get_cf_opt`] with default read options.
    pub fn get_cf(&self, cf: &ColumnFamily, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_cf_opt(cf, &ReadOptions::new(), key.as_ref())
    }

    /// [`Transaction::get_for_update_opt`] with default read options.
    pub fn get_for_update(&mut self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_for_update_opt(&ReadOptions::new(), key.as_ref())
    }

    /// [`Transaction::get_for_update_cf_opt`] with default read options.
    pub fn get_for_update_cf(&mut self, cf: &ColumnFamily, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_for_update_cf_opt(cf, &ReadOptions::new(), key.as_ref())
    }

    /// [`Transaction::multi_get_opt`] with default read options.
    pub fn multi_get<K: AsRef<[u8]>>(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> Vec<Result<Option<Vec<u8>>>> {
        let keys: Vec<K> = keys.into_iter().collect();
        let slices: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
        self.multi_get_opt(&ReadOptions::new(), &slices)
    }

    /// The value of `key` with this transaction's writes applied over the database as of its
    /// snapshot (or `opts.snapshot`). Does not track the key: see [`Transaction::get_for_update`].
    ///
    /// # Errors
    /// As [`Db::get`].
    pub fn get_opt(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_in(None, opts, key)
    }

    /// [`Transaction::get`] in column family `cf`.
    pub fn get_cf_opt(&self, cf: &ColumnFamily, opts: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_in(Some(cf), opts, key)
    }

    fn get_in(&self, cf: Option<&ColumnFamily>, opts: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.buffer.get_from_batch_and_db(&self.db, cf, &self.read_opts(opts), key)
    }

    /// Reads `key` as [`Transaction::get`] and claims it: an optimistic commit fails if anyone
    /// writes it after the snapshot; a pessimistic transaction locks it first.
    ///
    /// # Errors
    /// As [`Db::get`]; for a pessimistic transaction `LockTimeout` or `Deadlock` while waiting
    /// for the lock, `Busy` when its snapshot is older than the key's newest write.
    pub fn get_for_update_opt(&mut self, opts: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.track(None, key)?;
        self.get_in(None, opts, key)
    }

    /// [`Transaction::get_for_update`] in column family `cf`.
    pub fn get_for_update_cf_opt(
        &mut self,
        cf: &ColumnFamily,
        opts: &ReadOptions,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        self.track(Some(cf), key)?;
        self.get_in(Some(cf), opts, key)
    }

    /// [`Transaction::get`] of several keys, one result per key in the order given.
    pub fn multi_get_opt(&self, opts: &ReadOptions, keys: &[&[u8]]) -> Vec<Result<Option<Vec<u8>>>> {
        self.buffer.multi_get_from_batch_and_db(&self.db, None, &self.read_opts(opts), keys)
    }

    /// [`Transaction::multi_get`] in column family `cf`.
    pub fn multi_get_cf_opt(
        &self,
        cf: &ColumnFamily,
        opts: &ReadOptions,
        keys: &[&[u8]],
    ) -> Vec<Result<Option<Vec<u8>>>> {
        self.buffer.multi_get_from_batch_and_db(&self.db, Some(cf), &self.read_opts(opts), keys)
    }

    /// An iterator over the database as of the transaction's snapshot with its writes merged
    /// in (RocksDB's `Transaction::GetIterator`).
    ///
    /// # Errors
    /// As [`Db::iter`].
    pub fn cursor(&self, opts: &ReadOptions) -> Result<BatchAndDbIterator<'_>> {
        self.cursor_in(None, opts)
    }

    /// [`Transaction::iter`] over column family `cf`.
    pub fn cursor_cf(&self, cf: &ColumnFamily, opts: &ReadOptions) -> Result<BatchAndDbIterator<'_>> {
        self.cursor_in(Some(cf), opts)
    }

    fn cursor_in(&self, cf: Option<&ColumnFamily>, opts: &ReadOptions) -> Result<BatchAndDbIterator<'_>> {
        let family = self.family(cf);
        let base = self.db.cursor_cf(&family, &self.read_opts(opts))?;
        Ok(self.buffer.iter_with_base(cf, base))
    }

    /// Buffers a put of `key` (tracked as a write).
    ///
    /// # Errors
    /// For a pessimistic transaction, as [`Transaction::get_for_update`]'s locking.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.track(None, key)?;
        self.buffer.put(key, value);
        Ok(())
    }

    /// [`Transaction::put`] in column family `cf`.
    pub fn put_cf(&mut self, cf: &ColumnFamily, key: &[u8], value: &[u8]) -> Result<()> {
        self.track(Some(cf), key)?;
        self.buffer.put_cf(cf, key, value);
        Ok(())
    }

    /// Buffers a delete of `key`.
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.track(None, key)?;
        self.buffer.delete(key);
        Ok(())
    }

    /// [`Transaction::delete`] in column family `cf`.
    pub fn delete_cf(&mut self, cf: &ColumnFamily, key: &[u8]) -> Result<()> {
        self.track(Some(cf), key)?;
        self.buffer.delete_cf(cf, key);
        Ok(())
    }

    /// Refuses a range deletion with [`Error::NotSupported`]: a transaction buffers its writes
    /// in a [`WriteBatchWithIndex`](crate::txn::WriteBatchWithIndex), which cannot hold one
    /// (as in RocksDB). Nothing is buffered or locked.
    pub fn delete_range(&mut self, begin: &[u8], end: &[u8]) -> Result<()> {
        self.buffer.delete_range(begin, end)
    }

    /// Buffers a merge operand for `key`.
    pub fn merge(&mut self, key: &[u8], operand: &[u8]) -> Result<()> {
        self.track(None, key)?;
        self.buffer.merge(key, operand);
        Ok(())
    }

    /// [`Transaction::merge`] in column family `cf`.
    pub fn merge_cf(&mut self, cf: &ColumnFamily, key: &[u8], operand: &[u8]) -> Result<()> {
        self.track(Some(cf), key)?;
        self.buffer.merge_cf(cf, key, operand);
        Ok(())
    }

    /// Remembers the buffer's state, to go back to with [`Transaction::rollback_to_save_point`].
    pub fn set_save_point(&mut self) {
        self.buffer.set_save_point();
    }

    /// Undoes the writes buffered since the last savepoint, which it removes. Keys tracked (or
    /// locked) since stay tracked (locked) until the transaction ends, as in RocksDB.
    ///
    /// # Errors
    /// `InvalidArgument` when no savepoint is set.
    pub fn rollback_to_save_point(&mut self) -> Result<()> {
        self.buffer.rollback_to_save_point()
    }

    /// Writes the buffer as one atomic batch with the `WriteOptions` given at begin. An
    /// optimistic transaction first checks, inside the write group (no other write commits in
    /// between), that no tracked key was written after its snapshot.
    ///
    /// # Errors
    /// `Busy` on a conflict (nothing was written; retry the transaction); else as [`Db::write`].
    pub fn commit(mut self) -> Result<()> {
        let batch = std::mem::take(&mut self.buffer).into_batch();
        let result = match &self.mode {
            Mode::Pessimistic { .. } => self.db.write_opt(&self.write_opts, batch),
            Mode::Optimistic => {
                let (db, snapshot, tracked) = (&self.db, self.snapshot.as_ref(), &self.tracked);
                let mut check = || check_unchanged(db, snapshot, tracked);
                db.write_checked(&self.write_opts, &batch, &mut check)
            }
        };
        self.release_locks();
        result
    }

    /// Discards the buffer and releases the locks (the same as dropping the transaction).
    pub fn rollback(mut self) {
        self.release_locks();
    }

    /// Claims `key` in `cf` for this transaction: locks it (pessimistic, checking the snapshot
    /// if there is one), or records it for the commit's check (optimistic).
    fn track(&mut self, cf: Option<&ColumnFamily>, key: &[u8]) -> Result<()> {
        let family = self.family(cf);
        let slot = (family.id(), key.to_vec());
        if self.tracked.contains_key(&slot) {
            return Ok(());
        }
        if let Mode::Pessimistic { locks, id, timeout } = &self.mode {
            locks.lock(*id, family.id(), key, *timeout)?;
            if self.snapshot.is_some() {
                // A key written after the snapshot would be overwritten unseen: refuse it.
                let newest = match self.db.newest_sequence(&family, key) {
                    Ok(newest) => newest,
                    Err(e) => {
                        locks.unlock(*id, family.id(), key);
                        return Err(e);
                    }
                };
                if is_after(newest, self.snapshot.as_ref()) {
                    locks.unlock(*id, family.id(), key);
                    return Err(conflict(&family, key, newest, self.snapshot.as_ref()));
                }
            }
        }
        self.tracked.insert(slot, family);
        Ok(())
    }

    fn release_locks(&mut self) {
        if let Mode::Pessimistic { locks, id, .. } = &self.mode {
            let keys = std::mem::take(&mut self.tracked).into_keys();
            locks.unlock_all(*id, keys);
        }
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        self.release_locks();
    }
}

/// Whether a write at `newest` happened after `snapshot` (never, without a snapshot).
fn is_after(newest: Option<u64>, snapshot: Option<&Snapshot>) -> bool {
    matches!((newest, snapshot), (Some(n), Some(s)) if n > s.sequence())
}

fn conflict(cf: &ColumnFamily, key: &[u8], newest: Option<u64>, snapshot: Option<&Snapshot>) -> Error {
    Error::Busy(format!(
        "key {:?} in column family {:?} was written at sequence {} after the transaction's snapshot {}",
        String::from_utf8_lossy(key),
        cf.name(),
        newest.unwrap_or(0),
        snapshot.map_or(0, Snapshot::sequence)
    ))
}

/// The optimistic commit's check: no tracked key has a write newer than the snapshot.
fn check_unchanged(
    db: &Db,
    snapshot: Option<&Snapshot>,
    tracked: &BTreeMap<(u32, Vec<u8>), ColumnFamily>,
) -> Result<()> {
    for ((_, key), cf) in tracked {
        let newest = db.newest_sequence(cf, key)?;
        if is_after(newest, snapshot) {
            return Err(conflict(cf, key, newest, snapshot));
        }
    }
    Ok(())
}
