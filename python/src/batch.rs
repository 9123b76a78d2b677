//! `strata.WriteBatch`: puts, deletes and merges applied atomically.
//!
//! Owns: collecting operations (each in the default column family or the one named by
//! `column_family=`) and writing or discarding them at the end of a `with` block. Must not: write
//! anywhere but through its database's `write_impl`.

use parking_lot::Mutex;
use pyo3::prelude::*;
use strata::{WriteBatch, WriteOptions};

use crate::args::bytes_arg;
use crate::db::PyDb;
use crate::family::family_arg;

/// Puts, deletes and merges applied atomically.
#[pyclass(module = "strata._strata", name = "WriteBatch", frozen)]
pub(crate) struct PyWriteBatch {
    pub(crate) db: Py<PyDb>,
    pub(crate) batch: Mutex<WriteBatch>,
    pub(crate) wo: WriteOptions,
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
        let (k, v) = (bytes_arg(key, "key")?, bytes_arg(value, "value")?);
        match column_family {
            Some(cf) => {
                let cf = family_arg(self.db.get(), py, cf)?;
                self.batch.lock().put_cf(&cf, k.as_bytes(), v.as_bytes())
            }
            None => self.batch.lock().put(k.as_bytes(), v.as_bytes()),
        };
        Ok(())
    }

    /// Adds a deletion of `key`, in `column_family` if given.
    #[pyo3(signature = (key, column_family = None))]
    fn delete(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        column_family: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let k = bytes_arg(key, "key")?;
        match column_family {
            Some(cf) => {
                let cf = family_arg(self.db.get(), py, cf)?;
                self.batch.lock().delete_cf(&cf, k.as_bytes())
            }
            None => self.batch.lock().delete(k.as_bytes()),
        };
        Ok(())
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
        let (k, v) = (bytes_arg(key, "key")?, bytes_arg(value, "value")?);
        match column_family {
            Some(cf) => {
                let cf = family_arg(self.db.get(), py, cf)?;
                self.batch.lock().merge_cf(&cf, k.as_bytes(), v.as_bytes())
            }
            None => {
                self.db.get().check_merge(py)?;
                self.batch.lock().merge(k.as_bytes(), v.as_bytes())
            }
        };
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
