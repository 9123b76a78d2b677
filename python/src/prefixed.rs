//! `strata.PrefixedDB`: plyvel's prefixed database, a view of the keys of a `DB` that start with
//! a prefix, with the prefix added to every key going in and left out of every key coming out.
//!
//! Owns: adding the prefix to keys, and handing it to the batches, iterators and snapshots it
//! makes (they strip it). Must not: keep an engine handle of its own: every call goes through its
//! `DB`, so closing the `DB` closes it too.

use parking_lot::Mutex;
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use strata::WriteOptions;

use crate::args::bytes_arg;
use crate::batch::PyWriteBatch;
use crate::db::PyDb;
use crate::iterator::IterArgs;
use crate::iterator::{shaped_iterator, PyIterator};
use crate::raw_iterator::PyRawIterator;
use crate::snapshot::PySnapshot;

/// `key` with `prefix` before it (`key` itself when the prefix is empty).
pub(crate) fn prefixed_key<'py>(prefix: &[u8], key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if prefix.is_empty() {
        return Ok(key.clone());
    }
    let k = bytes_arg(key, "key")?;
    Ok(PyBytes::new(key.py(), &[prefix, k.as_bytes()].concat()).into_any())
}

/// The keys of a database that start with `prefix`, without it.
#[pyclass(module = "strata._strata", name = "PrefixedDB", frozen)]
pub(crate) struct PyPrefixedDb {
    pub(crate) db: Py<PyDb>,
    pub(crate) prefix: Vec<u8>,
}

impl PyPrefixedDb {
    fn read<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        snapshot: Option<&Bound<'py, PySnapshot>>,
        fill_cache: bool,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let key = prefixed_key(&self.prefix, key)?;
        self.db.get().get_in(py, None, &key, snapshot, fill_cache)
    }

    fn write(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        wo: WriteOptions,
        fill: impl FnOnce(&mut strata::WriteBatch, &[u8]),
    ) -> PyResult<()> {
        let key = prefixed_key(&self.prefix, key)?;
        self.db.get().single_write(py, wo, fill, &key)
    }
}

#[pymethods]
impl PyPrefixedDb {
    /// The `DB` this is a view of.
    #[getter]
    fn db(&self, py: Python<'_>) -> Py<PyDb> {
        self.db.clone_ref(py)
    }

    /// The prefix of every key of this view.
    #[getter]
    fn prefix<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.prefix)
    }

    /// The value of `prefix + key`, or `default`; as `DB.get`.
    #[pyo3(signature = (key, default = None, snapshot = None, fill_cache = true, *, verify_checksums = false))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
        snapshot: Option<&Bound<'py, PySnapshot>>,
        fill_cache: bool,
        verify_checksums: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = verify_checksums;
        match self.read(py, key, snapshot, fill_cache)? {
            Some(v) => Ok(v.into_any()),
            None => Ok(default.unwrap_or_else(|| py.None().into_bound(py))),
        }
    }

    /// Sets `prefix + key` to `value`.
    #[pyo3(signature = (key, value, sync = false, disable_wal = false))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        sync: bool,
        disable_wal: bool,
    ) -> PyResult<()> {
        let value = bytes_arg(value, "value")?;
        let v = value.as_bytes();
        self.write(py, key, WriteOptions { sync, disable_wal }, |b, k| {
            b.put(k, v);
        })
    }

    /// Deletes `prefix + key` (no error if it is absent).
    #[pyo3(signature = (key, sync = false, disable_wal = false))]
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>, sync: bool, disable_wal: bool) -> PyResult<()> {
        self.write(py, key, WriteOptions { sync, disable_wal }, |b, k| {
            b.delete(k);
        })
    }

    /// Deletes every key in `[prefix + start, prefix + stop)`; nothing when `start >= stop`.
    #[pyo3(signature = (start, stop, sync = false, disable_wal = false))]
    fn delete_range(
        &self,
        py: Python<'_>,
        start: &Bound<'_, PyAny>,
        stop: &Bound<'_, PyAny>,
        sync: bool,
        disable_wal: bool,
    ) -> PyResult<()> {
        let p = self.prefix.as_slice();
        let start = [p, bytes_arg(start, "start")?.as_bytes()].concat();
        let stop = [p, bytes_arg(stop, "stop")?.as_bytes()].concat();
        self.db.get().delete_range_in(py, None, WriteOptions { sync, disable_wal }, &start, &stop)
    }

    /// Adds a merge operand for `prefix + key` (needs a merge operator).
    #[pyo3(signature = (key, value, sync = false, disable_wal = false))]
    fn merge(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        sync: bool,
        disable_wal: bool,
    ) -> PyResult<()> {
        self.db.get().check_merge(py)?;
        let value = bytes_arg(value, "value")?;
        let v = value.as_bytes();
        self.write(py, key, WriteOptions { sync, disable_wal }, |b, k| {
            b.merge(k, v);
        })
    }

    /// A write batch whose keys get the prefix; as `DB.write_batch`.
    #[pyo3(signature = (sync = false, disable_wal = false, *, transaction = false))]
    fn write_batch(
        &self,
        py: Python<'_>,
        sync: bool,
        disable_wal: bool,
        transaction: bool,
    ) -> PyResult<PyWriteBatch> {
        self.db.get().handle(py)?;
        let wo = WriteOptions { sync, disable_wal };
        Ok(PyWriteBatch::new(self.db.clone_ref(py), wo, transaction, self.prefix.clone()))
    }

    /// An iterator over this view (keys without the prefix); the arguments are those of
    /// `DB.iterator`, for keys without the prefix.
    #[pyo3(signature = (
        start = None,
        stop = None,
        prefix = None,
        reverse = false,
        include_key = true,
        include_value = true,
        snapshot = None,
        fill_cache = true,
        *,
        include_start = true,
        include_stop = false,
        verify_checksums = false,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn iterator(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        include_key: bool,
        include_value: bool,
        snapshot: Option<&Bound<'_, PySnapshot>>,
        fill_cache: bool,
        include_start: bool,
        include_stop: bool,
        verify_checksums: bool,
    ) -> PyResult<PyIterator> {
        let _ = verify_checksums;
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
        self.db.get().iterator_in(py, None, args, snapshot, fill_cache, &self.prefix)
    }

    /// The engine cursor over this view (keys without the prefix; seek targets get it).
    #[pyo3(signature = (*, verify_checksums = false, fill_cache = true, snapshot = None))]
    fn raw_iterator(
        &self,
        py: Python<'_>,
        verify_checksums: bool,
        fill_cache: bool,
        snapshot: Option<&Bound<'_, PySnapshot>>,
    ) -> PyResult<PyRawIterator> {
        let _ = verify_checksums;
        self.db.get().raw_iterator_in(py, None, snapshot, fill_cache, &self.prefix)
    }

    /// `iterator(...)` yielding keys only.
    #[pyo3(signature = (*args, **kwargs))]
    fn keys<'py>(
        slf: &Bound<'py, Self>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        shaped_iterator(slf.as_any(), args, kwargs, (true, false))
    }

    /// `iterator(...)` yielding values only.
    #[pyo3(signature = (*args, **kwargs))]
    fn values<'py>(
        slf: &Bound<'py, Self>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        shaped_iterator(slf.as_any(), args, kwargs, (false, true))
    }

    /// `iterator(...)` yielding `(key, value)` pairs.
    #[pyo3(signature = (*args, **kwargs))]
    fn items<'py>(
        slf: &Bound<'py, Self>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        shaped_iterator(slf.as_any(), args, kwargs, (true, true))
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<PyIterator> {
        self.db.get().iterator_in(py, None, IterArgs::everything(), None, true, &self.prefix)
    }

    /// A snapshot of the database whose reads see this view (keys without the prefix).
    fn snapshot(&self, py: Python<'_>) -> PyResult<PySnapshot> {
        let db = self.db.get().handle(py)?;
        let snap = py.detach(|| db.snapshot());
        Ok(PySnapshot {
            db: self.db.clone_ref(py),
            snap: Mutex::new(Some(snap)),
            key_prefix: self.prefix.clone(),
        })
    }

    /// A view nested in this one: its prefix is this one's followed by `prefix`.
    fn prefixed_db(&self, py: Python<'_>, prefix: &Bound<'_, PyAny>) -> PyResult<Self> {
        let prefix = [self.prefix.as_slice(), bytes_arg(prefix, "prefix")?.as_bytes()].concat();
        Ok(Self { db: self.db.clone_ref(py), prefix })
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        match self.read(py, key, None, true)? {
            Some(v) => Ok(v),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __setitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.put(py, key, value, false, false)
    }

    /// `del view[key]`; like `dict`, raises KeyError when the key is absent.
    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        if self.read(py, key, None, true)?.is_none() {
            return Err(PyKeyError::new_err(key.clone().unbind()));
        }
        self.delete(py, key, false, false)
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.read(py, key, None, true)?.is_some())
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "<strata.PrefixedDB {} of {:?}>",
            PyBytes::new(py, &self.prefix).repr().map(|r| r.to_string()).unwrap_or_default(),
            self.db.get().path.display().to_string()
        )
    }
}
