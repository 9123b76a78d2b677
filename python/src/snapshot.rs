//! `strata.Snapshot`: a consistent point-in-time view of a database (or of a `PrefixedDB`'s part
//! of it), with plyvel's `get`, `iterator`, `raw_iterator`, `close`/`release`.
//!
//! Owns: the engine snapshot handle and its release. Must not: read on its own; reads go through
//! its database with the snapshot in the read options.

use parking_lot::Mutex;
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use crate::db::PyDb;
use crate::errors::closed_error;
use crate::iterator::IterArgs;
use crate::iterator::{shaped_iterator, PyIterator};
use crate::prefixed::prefixed_key;
use crate::raw_iterator::PyRawIterator;

/// A consistent point-in-time view of a database.
#[pyclass(module = "strata._strata", name = "Snapshot", frozen)]
pub(crate) struct PySnapshot {
    pub(crate) db: Py<PyDb>,
    pub(crate) snap: Mutex<Option<strata::Snapshot>>,
    /// Put before keys and stripped from returned keys (a `PrefixedDB`'s snapshot).
    pub(crate) key_prefix: Vec<u8>,
}

impl PySnapshot {
    pub(crate) fn handle(&self, py: Python<'_>) -> PyResult<strata::Snapshot> {
        self.snap.lock().clone().ok_or_else(|| closed_error(py, "snapshot"))
    }

    fn read<'py>(
        slf: &Bound<'py, Self>,
        key: &Bound<'py, PyAny>,
        fill_cache: bool,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let this = slf.get();
        let key = prefixed_key(&this.key_prefix, key)?;
        this.db.get().get_impl(slf.py(), &key, Some(slf), fill_cache)
    }
}

#[pymethods]
impl PySnapshot {
    /// The value of `key` as of the snapshot, or `default`. `verify_checksums` is accepted for
    /// plyvel and changes nothing: strata always verifies.
    #[pyo3(signature = (key, default = None, fill_cache = true, *, verify_checksums = false))]
    fn get<'py>(
        slf: &Bound<'py, Self>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
        fill_cache: bool,
        verify_checksums: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let _ = verify_checksums;
        match Self::read(slf, key, fill_cache)? {
            Some(v) => Ok(v.into_any()),
            None => Ok(default.unwrap_or_else(|| py.None().into_bound(py))),
        }
    }

    /// An iterator over the snapshot; the arguments are those of `DB.iterator`.
    #[pyo3(signature = (
        start = None,
        stop = None,
        prefix = None,
        reverse = false,
        include_key = true,
        include_value = true,
        fill_cache = true,
        *,
        include_start = true,
        include_stop = false,
        verify_checksums = false,
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
        let this = slf.get();
        this.db.get().iterator_in(slf.py(), None, args, Some(slf), fill_cache, &this.key_prefix)
    }

    /// The engine cursor over the snapshot (plyvel's `RawIterator`).
    #[pyo3(signature = (*, verify_checksums = false, fill_cache = true))]
    fn raw_iterator(
        slf: &Bound<'_, Self>,
        verify_checksums: bool,
        fill_cache: bool,
    ) -> PyResult<PyRawIterator> {
        let _ = verify_checksums;
        let this = slf.get();
        this.db.get().raw_iterator_in(slf.py(), None, Some(slf), fill_cache, &this.key_prefix)
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

    fn __iter__(slf: &Bound<'_, Self>) -> PyResult<PyIterator> {
        Self::iterator(slf, None, None, None, false, true, true, true, true, false, false)
    }

    fn __getitem__<'py>(slf: &Bound<'py, Self>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        match Self::read(slf, key, true)? {
            Some(v) => Ok(v),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __contains__(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(Self::read(slf, key, true)?.is_some())
    }

    /// The sequence number the snapshot reads at.
    #[getter]
    fn sequence(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.handle(py)?.sequence())
    }

    /// True once released.
    #[getter]
    fn closed(&self) -> bool {
        self.snap.lock().is_none()
    }

    /// Releases the snapshot (iterators created from it keep working). Idempotent.
    fn close(&self) {
        drop(self.snap.lock().take());
    }

    /// Alias of `close()` (plyvel's name).
    fn release(&self) {
        self.close();
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (_exc_type = None, _exc = None, _tb = None))]
    fn __exit__(
        &self,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        match self.snap.lock().as_ref() {
            Some(s) => format!("<strata.Snapshot at sequence {}>", s.sequence()),
            None => "<strata.Snapshot (released)>".to_string(),
        }
    }
}
