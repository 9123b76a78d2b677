//! `strata.Snapshot`: a consistent point-in-time view of a database.
//!
//! Owns: the engine snapshot handle and its release. Must not: read on its own; reads go through
//! its database with the snapshot in the read options.

use parking_lot::Mutex;
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::db::PyDb;
use crate::errors::closed_error;
use crate::iterator::PyIterator;

/// A consistent point-in-time view of a database.
#[pyclass(module = "strata._strata", name = "Snapshot", frozen)]
pub(crate) struct PySnapshot {
    pub(crate) db: Py<PyDb>,
    pub(crate) snap: Mutex<Option<strata::Snapshot>>,
}

impl PySnapshot {
    pub(crate) fn handle(&self, py: Python<'_>) -> PyResult<strata::Snapshot> {
        self.snap.lock().clone().ok_or_else(|| closed_error(py, "snapshot"))
    }
}

#[pymethods]
impl PySnapshot {
    /// The value of `key` as of the snapshot, or `default`.
    #[pyo3(signature = (key, default = None, fill_cache = true))]
    fn get<'py>(
        slf: &Bound<'py, Self>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
        fill_cache: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        match slf.get().db.get().get_impl(py, key, Some(slf), fill_cache)? {
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
    ) -> PyResult<PyIterator> {
        slf.get().db.get().iterator_impl(
            slf.py(),
            start,
            stop,
            prefix,
            reverse,
            include_key,
            include_value,
            Some(slf),
            fill_cache,
        )
    }

    fn __iter__(slf: &Bound<'_, Self>) -> PyResult<PyIterator> {
        Self::iterator(slf, None, None, None, false, true, true, true)
    }

    fn __getitem__<'py>(slf: &Bound<'py, Self>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        match slf.get().db.get().get_impl(slf.py(), key, Some(slf), true)? {
            Some(v) => Ok(v),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __contains__(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(slf.get().db.get().get_impl(slf.py(), key, Some(slf), true)?.is_some())
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
