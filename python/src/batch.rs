//! `strata.WriteBatch`: puts, deletes and merges applied atomically (plyvel's `WriteBatch`, plus
//! merges, range deletions and column families).
//!
//! Owns: collecting operations (each in the default column family or the one named by
//! `column_family=`, under a `PrefixedDB`'s prefix when made by one), `append`, and what the end
//! of a `with` block does: write, or, for a `transaction=True` batch left by an exception,
//! discard. Must not: write anywhere but through its database's engine handle.

use parking_lot::Mutex;
use pyo3::prelude::*;
use strata::{ColumnFamily, WriteBatch, WriteOptions};

use crate::args::bytes_arg;
use crate::db::PyDb;
use crate::errors::{check, invalid_argument};
use crate::family::family_arg;

#[derive(Clone, Copy)]
enum Kind {
    Put,
    Delete,
    Merge,
    /// Deletes `[key, value)`.
    DeleteRange,
}

/// One operation, kept as given so that `append` can copy it into another batch.
#[derive(Clone)]
struct Record {
    cf: Option<ColumnFamily>,
    kind: Kind,
    key: Vec<u8>,
    value: Vec<u8>,
}

/// The engine batch of `records`, in order.
fn build(records: &[Record]) -> WriteBatch {
    let mut batch = WriteBatch::new();
    for r in records {
        let (k, v) = (&r.key, &r.value);
        match (&r.cf, r.kind) {
            (None, Kind::Put) => batch.put(k, v),
            (None, Kind::Delete) => batch.delete(k),
            (None, Kind::Merge) => batch.merge(k, v),
            (None, Kind::DeleteRange) => batch.delete_range(k, v),
            (Some(cf), Kind::Put) => batch.put_cf(cf, k, v),
            (Some(cf), Kind::Delete) => batch.delete_cf(cf, k),
            (Some(cf), Kind::Merge) => batch.merge_cf(cf, k, v),
            (Some(cf), Kind::DeleteRange) => batch.delete_range_cf(cf, k, v),
        };
    }
    batch
}

/// Puts, deletes and merges applied atomically.
#[pyclass(module = "strata._strata", name = "WriteBatch", frozen)]
pub(crate) struct PyWriteBatch {
    pub(crate) db: Py<PyDb>,
    records: Mutex<Vec<Record>>,
    wo: WriteOptions,
    /// Discard the batch when its `with` block raises (plyvel's `transaction=True`).
    transaction: bool,
    /// Put before every key (a `PrefixedDB`'s prefix; empty for a `DB`'s batch).
    key_prefix: Vec<u8>,
}

impl PyWriteBatch {
    pub(crate) fn new(db: Py<PyDb>, wo: WriteOptions, transaction: bool, key_prefix: Vec<u8>) -> Self {
        Self { db, records: Mutex::new(Vec::new()), wo, transaction, key_prefix }
    }

    fn add(
        &self,
        py: Python<'_>,
        kind: Kind,
        key: &Bound<'_, PyAny>,
        value: Option<&Bound<'_, PyAny>>,
        column_family: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let prefix = self.key_prefix.as_slice();
        // A range's end is a key too: it gets the prefix.
        let range = matches!(kind, Kind::DeleteRange);
        let (key_name, value_name) = if range { ("start", "stop") } else { ("key", "value") };
        let key = [prefix, bytes_arg(key, key_name)?.as_bytes()].concat();
        let value = match value {
            Some(v) if range => [prefix, bytes_arg(v, value_name)?.as_bytes()].concat(),
            Some(v) => bytes_arg(v, value_name)?.as_bytes().to_vec(),
            None => Vec::new(),
        };
        let cf = match column_family {
            Some(cf) if !cf.is_none() => Some(family_arg(self.db.get(), py, cf)?),
            _ => None,
        };
        if cf.is_none() && matches!(kind, Kind::Merge) {
            self.db.get().check_merge(py)?;
        }
        self.records.lock().push(Record { cf, kind, key, value });
        Ok(())
    }
}

#[pymethods]
impl PyWriteBatch {
    /// Adds `key = value`, in `column_family` (a `ColumnFamily` or a name) if given.
    #[pyo3(signature = (key, value, column_family = None))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        column_family: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.add(py, Kind::Put, key, Some(value), column_family)
    }

    /// Adds a deletion of `key`, in `column_family` if given.
    #[pyo3(signature = (key, column_family = None))]
    fn delete(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        column_family: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.add(py, Kind::Delete, key, None, column_family)
    }

    /// Adds a deletion of every key in `[start, stop)` (nothing when `start >= stop`), in
    /// `column_family` if given; a `PrefixedDB`'s batch puts its prefix before both ends.
    #[pyo3(signature = (start, stop, column_family = None))]
    fn delete_range(
        &self,
        py: Python<'_>,
        start: &Bound<'_, PyAny>,
        stop: &Bound<'_, PyAny>,
        column_family: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.add(py, Kind::DeleteRange, start, Some(stop), column_family)
    }

    /// Adds a merge operand for `key`, in `column_family` if given (checked against that
    /// family's merge operator when the batch is written).
    #[pyo3(signature = (key, value, column_family = None))]
    fn merge(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        column_family: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.add(py, Kind::Merge, key, Some(value), column_family)
    }

    /// Discards every operation added so far.
    fn clear(&self) {
        self.records.lock().clear();
    }

    /// Copies the operations of `source` (another batch, left as it is) to the end of this one.
    /// Operations in column families need both batches to be of the same database.
    fn append(&self, py: Python<'_>, source: &Bound<'_, PyWriteBatch>) -> PyResult<()> {
        // Copied out first: `source` may be this batch.
        let records = source.get().records.lock().clone();
        let same_db = std::ptr::eq(source.get().db.get(), self.db.get());
        if !same_db && records.iter().any(|r| r.cf.is_some()) {
            return Err(invalid_argument(
                py,
                "cannot append column family operations from a batch of another database".into(),
            ));
        }
        self.records.lock().extend(records);
        Ok(())
    }

    /// The bytes the batch adds to the write-ahead log when written (plyvel's
    /// `approximate_size`).
    fn approximate_size(&self) -> usize {
        build(&self.records.lock()).size_in_bytes()
    }

    /// Applies the batch atomically and empties it (also when the write fails).
    fn write(&self, py: Python<'_>) -> PyResult<()> {
        let records = std::mem::take(&mut *self.records.lock());
        let db = self.db.get().handle(py)?;
        let wo = self.wo;
        let r = py.detach(|| db.write_opt(&wo, build(&records)));
        check(py, r)
    }

    fn __len__(&self) -> usize {
        self.records.lock().len()
    }

    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        slf.get().db.get().handle(slf.py())?;
        Ok(slf)
    }

    /// Writes the batch, unless the block raised and the batch was made with
    /// `transaction=True` (then it is discarded). The exception propagates either way.
    #[pyo3(signature = (exc_type = None, _exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let raised = exc_type.is_some_and(|t| !t.is_none());
        if raised && self.transaction {
            self.clear();
        } else {
            self.write(py)?;
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("<strata.WriteBatch with {} operations>", self.__len__())
    }
}
