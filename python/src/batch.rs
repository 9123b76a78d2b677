//! `strata.WriteBatch`: puts, deletes and merges applied atomically.
//!
//! Owns: collecting operations and writing or discarding them at the end of a `with` block.
//! Must not: write anywhere but through its database's `write_impl`.

use parking_lot::Mutex;
use pyo3::prelude::*;
use strata::{WriteBatch, WriteOptions};

use crate::args::bytes_arg;
use crate::db::PyDb;

/// Puts, deletes and merges applied atomically.
#[pyclass(module = "strata._strata", name = "WriteBatch", frozen)]
pub(crate) struct PyWriteBatch {
    pub(crate) db: Py<PyDb>,
    pub(crate) batch: Mutex<WriteBatch>,
    pub(crate) wo: WriteOptions,
}

#[pymethods]
impl PyWriteBatch {
    /// Adds `key = value`.
    fn put(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let (k, v) = (bytes_arg(key, "key")?, bytes_arg(value, "value")?);
        self.batch.lock().put(k.as_bytes(), v.as_bytes());
        Ok(())
    }

    /// Adds a deletion of `key`.
    fn delete(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = bytes_arg(key, "key")?;
        self.batch.lock().delete(k.as_bytes());
        Ok(())
    }

    /// Adds a merge operand for `key`.
    fn merge(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.db.get().check_merge(py)?;
        let (k, v) = (bytes_arg(key, "key")?, bytes_arg(value, "value")?);
        self.batch.lock().merge(k.as_bytes(), v.as_bytes());
        Ok(())
    }

    /// Discards every operation added so far.
    fn clear(&self) {
        self.batch.lock().clear();
    }

    /// Applies the batch atomically and empties it (also when the write fails).
    fn write(&self, py: Python<'_>) -> PyResult<()> {
        let batch = std::mem::take(&mut *self.batch.lock());
        self.db.get().write_impl(py, self.wo, batch)
    }

    fn __len__(&self) -> usize {
        self.batch.lock().len()
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Writes the batch if the block finished without an exception; discards it otherwise.
    #[pyo3(signature = (exc_type = None, _exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if exc_type.is_none_or(|t| t.is_none()) {
            self.write(py)?;
        } else {
            self.clear();
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("<strata.WriteBatch with {} operations>", self.__len__())
    }
}
