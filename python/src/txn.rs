//! `strata.Transaction` (docs/transactions.md): reads that see the transaction's own writes,
//! buffered writes, savepoints, commit and rollback, and the context manager that commits on a
//! normal exit and rolls back on an exception. Also [`Transactions`], the part of a `DB` that
//! begins them: optimistic, or pessimistic when the database was opened with
//! `transactions="pessimistic"` (it then owns the engine's `TransactionDb`).
//!
//! Owns: the engine transaction, shared with its iterators and with the database, which ends it
//! on `close()`. Must not: hold its mutex while acquiring the GIL (it is locked inside `detach`,
//! because a pessimistic transaction may wait there for a lock).

use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use strata::txn::{Transaction, TransactionDb, TransactionDbOptions, TransactionOptions};
use strata::{ColumnFamily, Db, ReadOptions, WriteOptions};

use crate::args::bytes_arg;
use crate::db::PyDb;
use crate::errors::{check, invalid_argument, raise};
use crate::family::family_arg;
use crate::iterator::IterArgs;
use crate::txn_iter::PyTransactionIterator;

/// The engine transaction; `None` once committed, rolled back, or ended by `DB.close()`.
pub(crate) type TxnCell = Arc<Mutex<Option<Transaction>>>;

/// A number of seconds as a lock timeout: `inf` (too long to represent) waits for ever.
fn seconds(t: f64, what: &str) -> PyResult<Duration> {
    if t.is_nan() || t < 0.0 {
        return Err(PyValueError::new_err(format!("{what} must be a non-negative number of seconds")));
    }
    Ok(Duration::try_from_secs_f64(t).unwrap_or(Duration::MAX))
}

pub(crate) fn ended_error(py: Python<'_>) -> PyErr {
    raise(py, "ClosedError", ("transaction has ended (committed or rolled back, or its database closed)",))
}

/// How a `DB` begins transactions, and the transactions it must end on `close()`.
pub(crate) struct Transactions {
    /// The lock manager of a `transactions="pessimistic"` database; taken by `close()`.
    pessimistic: Mutex<Option<TransactionDb>>,
    is_pessimistic: bool,
    live: Mutex<Vec<Weak<Mutex<Option<Transaction>>>>>,
}

impl Transactions {
    /// The `transactions=` and `lock_timeout=` keywords of `DB(...)`.
    pub(crate) fn open(
        py: Python<'_>,
        db: &Db,
        mode: Option<&str>,
        lock_timeout: Option<f64>,
    ) -> PyResult<Self> {
        let is_pessimistic = match mode {
            None | Some("optimistic") => false,
            Some("pessimistic") => true,
            Some(other) => {
                return Err(invalid_argument(
                    py,
                    format!("transactions must be \"optimistic\" or \"pessimistic\", not {other:?}"),
                ))
            }
        };
        let pessimistic = if is_pessimistic {
            let mut opts = TransactionDbOptions::default();
            if let Some(t) = lock_timeout {
                opts.lock_timeout = Some(seconds(t, "lock_timeout")?);
            }
            Some(TransactionDb::new(db.clone(), opts))
        } else if lock_timeout.is_some() {
            return Err(invalid_argument(py, "lock_timeout needs transactions=\"pessimistic\"".into()));
        } else {
            None
        };
        Ok(Self { pessimistic: Mutex::new(pessimistic), is_pessimistic, live: Mutex::new(Vec::new()) })
    }

    /// Ends every live transaction (rolling it back) and drops the lock manager, so that the
    /// engine can shut down. Called without the GIL.
    ///
    /// A transaction busy in another thread may be waiting for a lock another live transaction
    /// holds, so it is not waited for: the free ones are ended first (releasing their locks, which
    /// ends such waits), then the rest, until none is left.
    pub(crate) fn close(&self) {
        drop(self.pessimistic.lock().take());
        let live = std::mem::take(&mut *self.live.lock());
        let mut pending: Vec<TxnCell> = live.iter().filter_map(Weak::upgrade).collect();
        loop {
            pending.retain(|cell| match cell.try_lock() {
                Some(mut txn) => {
                    drop(txn.take());
                    false
                }
                None => true,
            });
            if pending.is_empty() {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn begin(
        &self,
        py: Python<'_>,
        db: &Db,
        wo: &WriteOptions,
        set_snapshot: bool,
        lock_timeout: Option<f64>,
    ) -> PyResult<TxnCell> {
        let txn = if self.is_pessimistic {
            let lock_timeout = lock_timeout.map(|t| seconds(t, "lock_timeout")).transpose()?;
            let opts = TransactionOptions { set_snapshot, lock_timeout };
            let guard = self.pessimistic.lock();
            let tdb = guard.as_ref().ok_or_else(|| crate::errors::closed_error(py, "database"))?;
            tdb.begin(wo, &opts)
        } else if lock_timeout.is_some() {
            return Err(invalid_argument(
                py,
                "lock_timeout needs a database opened with transactions=\"pessimistic\"".into(),
            ));
        } else {
            db.begin_transaction(wo)
        };
        let cell = Arc::new(Mutex::new(Some(txn)));
        let mut live = self.live.lock();
        live.retain(|w| w.strong_count() > 0);
        live.push(Arc::downgrade(&cell));
        Ok(cell)
    }
}

/// A transaction: see `DB.transaction()`.
#[pyclass(module = "strata._strata", name = "Transaction", frozen)]
pub(crate) struct PyTransaction {
    pub(crate) db: Py<PyDb>,
    pub(crate) txn: TxnCell,
}

impl PyTransaction {
    /// `DB.transaction(...)`.
    pub(crate) fn begin(
        db: &Bound<'_, PyDb>,
        wo: WriteOptions,
        set_snapshot: bool,
        lock_timeout: Option<f64>,
    ) -> PyResult<Self> {
        let py = db.py();
        let this = db.get();
        let handle = this.handle(py)?;
        let txn = this.txns.begin(py, &handle, &wo, set_snapshot, lock_timeout)?;
        Ok(Self { db: db.clone().unbind(), txn })
    }

    /// Runs `f` on the live transaction with the GIL released.
    fn with_txn<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Transaction) -> strata::Result<R> + Send,
    ) -> PyResult<R> {
        let cell = &self.txn;
        match py.detach(|| cell.lock().as_mut().map(f)) {
            Some(r) => check(py, r),
            None => Err(ended_error(py)),
        }
    }

    fn family(&self, py: Python<'_>, cf: Option<&Bound<'_, PyAny>>) -> PyResult<Option<ColumnFamily>> {
        cf.map(|cf| family_arg(self.db.get(), py, cf)).transpose()
    }

    fn read<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
        column_family: Option<&Bound<'py, PyAny>>,
        fill_cache: bool,
        for_update: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let key = bytes_arg(key, "key")?;
        let cf = self.family(py, column_family)?;
        let ro = ReadOptions { fill_cache, ..ReadOptions::new() };
        let k = key.as_bytes();
        let value = self.with_txn(py, |t| match (&cf, for_update) {
            (None, false) => t.get_opt(&ro, k),
            (None, true) => t.get_for_update_opt(&ro, k),
            (Some(cf), false) => t.get_cf_opt(cf, &ro, k),
            (Some(cf), true) => t.get_for_update_cf_opt(cf, &ro, k),
        })?;
        match value {
            Some(v) => Ok(PyBytes::new(py, &v).into_any()),
            None => Ok(default.unwrap_or_else(|| py.None().into_bound(py))),
        }
    }

    /// Buffers a put (`value` given) or a merge (`merge` set) or a delete (neither).
    fn write(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: Option<&Bound<'_, PyAny>>,
        merge: bool,
        column_family: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let key = bytes_arg(key, "key")?;
        let value = value.map(|v| bytes_arg(v, "value")).transpose()?;
        let cf = self.family(py, column_family)?;
        if merge && cf.is_none() {
            self.db.get().check_merge(py)?;
        }
        let (k, v) = (key.as_bytes(), value.as_ref().map(|v| v.as_bytes()));
        self.with_txn(py, |t| match (&cf, v, merge) {
            (None, None, _) => t.delete(k),
            (None, Some(v), false) => t.put(k, v),
            (None, Some(v), true) => t.merge(k, v),
            (Some(cf), None, _) => t.delete_cf(cf, k),
            (Some(cf), Some(v), false) => t.put_cf(cf, k, v),
            (Some(cf), Some(v), true) => t.merge_cf(cf, k, v),
        })
    }
}

#[pymethods]
impl PyTransaction {
    /// The value of `key` (in `column_family`, a `ColumnFamily` or a name, if given) with this
    /// transaction's writes applied, or `default` when it is absent. Does not claim the key.
    #[pyo3(signature = (key, default = None, column_family = None, fill_cache = true))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
        column_family: Option<&Bound<'py, PyAny>>,
        fill_cache: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.read(py, key, default, column_family, fill_cache, false)
    }

    /// `get`, claiming the key: an optimistic commit fails if anyone writes it meanwhile; a
    /// pessimistic transaction locks it first (LockTimeoutError, DeadlockError).
    #[pyo3(signature = (key, default = None, column_family = None, fill_cache = true))]
    fn get_for_update<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
        column_family: Option<&Bound<'py, PyAny>>,
        fill_cache: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.read(py, key, default, column_family, fill_cache, true)
    }

    /// The values of `keys` (None where absent), in order, with this transaction's writes.
    #[pyo3(signature = (keys, column_family = None, fill_cache = true))]
    fn multi_get<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        column_family: Option<&Bound<'py, PyAny>>,
        fill_cache: bool,
    ) -> PyResult<Vec<Option<Bound<'py, PyBytes>>>> {
        let owned: Vec<Bound<'py, PyBytes>> =
            keys.try_iter()?.map(|k| bytes_arg(&k?, "key")).collect::<PyResult<_>>()?;
        let cf = self.family(py, column_family)?;
        let ro = ReadOptions { fill_cache, ..ReadOptions::new() };
        let refs: Vec<&[u8]> = owned.iter().map(|b| b.as_bytes()).collect();
        let results = self.with_txn(py, |t| {
            Ok(match &cf {
                Some(cf) => t.multi_get_cf_opt(cf, &ro, &refs),
                None => t.multi_get_opt(&ro, &refs),
            })
        })?;
        results.into_iter().map(|r| Ok(check(py, r)?.map(|v| PyBytes::new(py, &v)))).collect()
    }

    /// Buffers `key = value`; a pessimistic transaction locks the key first.
    #[pyo3(signature = (key, value, column_family = None))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        column_family: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.write(py, key, Some(value), false, column_family)
    }

    /// Buffers a deletion of `key`.
    #[pyo3(signature = (key, column_family = None))]
    fn delete(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        column_family: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.write(py, key, None, false, column_family)
    }

    /// Buffers a merge operand for `key` (needs a merge operator).
    #[pyo3(signature = (key, value, column_family = None))]
    fn merge(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        column_family: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.write(py, key, Some(value), true, column_family)
    }

    /// An iterator over the database as the transaction sees it (its snapshot, or the state at
    /// the iterator's creation, with its writes merged in); the arguments are `DB.iterator`'s.
    #[pyo3(signature = (
        start = None,
        stop = None,
        prefix = None,
        reverse = false,
        include_key = true,
        include_value = true,
        column_family = None,
        fill_cache = true,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn iterator(
        slf: &Bound<'_, Self>,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        include_key: bool,
        include_value: bool,
        column_family: Option<&Bound<'_, PyAny>>,
        fill_cache: bool,
    ) -> PyResult<PyTransactionIterator> {
        let py = slf.py();
        let cf = slf.get().family(py, column_family)?;
        let (include_start, include_stop) = (true, false);
        let args = IterArgs {
            start,
            stop,
            prefix,
            reverse,
            include_key,
            include_value,
            include_start,
            include_stop,
        };
        PyTransactionIterator::new(slf, cf, args, fill_cache)
    }

    fn __iter__(slf: &Bound<'_, Self>) -> PyResult<PyTransactionIterator> {
        Self::iterator(slf, None, None, None, false, true, true, None, true)
    }

    /// Remembers the transaction's writes so far, for `rollback_to_savepoint()`.
    fn savepoint(&self, py: Python<'_>) -> PyResult<()> {
        self.with_txn(py, |t| {
            t.set_save_point();
            Ok(())
        })
    }

    /// Undoes the writes made since the last savepoint and removes it (keys locked since stay
    /// locked); InvalidArgumentError when there is none.
    fn rollback_to_savepoint(&self, py: Python<'_>) -> PyResult<()> {
        self.with_txn(py, Transaction::rollback_to_save_point)
    }

    /// Writes the transaction atomically; TransactionConflictError (nothing written: retry) when
    /// an optimistic transaction's keys were written since its snapshot. The transaction ends.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let cell = &self.txn;
        match py.detach(|| cell.lock().take().map(Transaction::commit)) {
            Some(r) => check(py, r),
            None => Err(ended_error(py)),
        }
    }

    /// Discards the transaction's writes and releases its locks. The transaction ends; a no-op
    /// when it already has.
    fn rollback(&self, py: Python<'_>) {
        let cell = &self.txn;
        py.detach(|| cell.lock().take().map(Transaction::rollback));
    }

    /// True once committed, rolled back, or ended by `DB.close()`.
    #[getter]
    fn ended(&self) -> bool {
        self.txn.lock().is_none()
    }

    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        if slf.get().ended() {
            return Err(ended_error(slf.py()));
        }
        Ok(slf)
    }

    /// Commits if the block finished without an exception (and the transaction has not ended
    /// inside it); rolls back otherwise, letting the exception propagate.
    #[pyo3(signature = (exc_type = None, _exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if exc_type.is_none_or(|t| t.is_none()) && !self.ended() {
            self.commit(py)?;
        } else {
            self.rollback(py);
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let state = if self.ended() { " (ended)" } else { "" };
        format!("<strata.Transaction{state}>")
    }
}
