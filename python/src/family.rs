//! `strata.ColumnFamily`: a handle on one column family of an open `DB`, with the `DB`'s reads,
//! writes and maintenance calls scoped to that family; `strata.list_column_families`; and the
//! `{option: value}` dictionaries that give families their options.
//!
//! Owns: the handle, resolving a `column_family=` argument (handle or name), and turning option
//! dictionaries into `strata::Options` by option name. Must not: keep an engine handle of its
//! own: every call goes through its `DB`, so `close()` closes the family's handles too.

use std::path::PathBuf;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyString, PyTuple};
use strata::{ColumnFamily, Db, Options, WriteOptions};

use crate::args::{bytes_arg, opt_bytes_arg};
use crate::bulk::ingest;
use crate::db::PyDb;
use crate::errors::{check, invalid_argument};
use crate::iterator::IterArgs;
use crate::iterator::{shaped_iterator, PyIterator};
use crate::maintenance::{approximate_sizes, range_args};
use crate::py_merge::python_operator;
use crate::raw_iterator::PyRawIterator;
use crate::snapshot::PySnapshot;

/// A handle on one column family of an open database.
#[pyclass(module = "strata._strata", name = "ColumnFamily", frozen)]
pub(crate) struct PyColumnFamily {
    pub(crate) db: Py<PyDb>,
    pub(crate) cf: ColumnFamily,
}

/// An option value as the options table reads it: `True`/`False` as `true`/`false`, numbers and
/// strings as written.
fn option_text(value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(if b.is_true() { "true" } else { "false" }.to_string());
    }
    if value.is_instance_of::<PyString>()
        || value.is_instance_of::<PyInt>()
        || value.is_instance_of::<PyFloat>()
    {
        return Ok(value.str()?.to_string());
    }
    let type_name = value.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
    Err(PyTypeError::new_err(format!("option values must be bool, int, float or str, not {type_name}")))
}

/// `base` with each `option: value` of `options` set by name (`Options::set`); the key
/// `options` is a `"key=value;..."` string applied last, as `DB(options=...)` is.
pub(crate) fn family_options(
    py: Python<'_>,
    base: &Options,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Options> {
    let mut opts = base.clone();
    let Some(options) = options else { return Ok(opts) };
    let mut string = None;
    for (name, value) in options.iter() {
        let name: String = name.extract()?;
        if value.is_none() {
            continue; // as for the DB keywords: None keeps the value
        }
        if name == "options" {
            string = Some(value.extract::<String>()?);
            continue;
        }
        if name == "merge_operator" {
            if let Some(op) = python_operator(Some(&value))? {
                opts.merge_operator = Some(op);
                continue;
            }
        }
        check(py, opts.set(&name, &option_text(&value)?))?;
    }
    if let Some(text) = string {
        opts = check(py, opts.with_option_string(&text))?;
    }
    Ok(opts)
}

/// The `column_families={"name": {option: value}}` argument of `DB(...)`: each family's options
/// are the database's (`base`) with its dictionary applied (`None` for none).
pub(crate) fn named_families(
    py: Python<'_>,
    base: &Options,
    families: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<(String, Options)>> {
    let Some(families) = families else { return Ok(Vec::new()) };
    let mut named = Vec::with_capacity(families.len());
    for (name, options) in families.iter() {
        let name: String = name.extract()?;
        let options = if options.is_none() {
            None
        } else {
            Some(options.cast_into::<PyDict>().map_err(|_| {
                PyTypeError::new_err(format!("column_families[{name:?}] must be a dict of options or None"))
            })?)
        };
        named.push((name.clone(), family_options(py, base, options.as_ref())?));
    }
    Ok(named)
}

/// The family a `column_family=` argument names: a `ColumnFamily` of this database, or a name.
pub(crate) fn family_arg(db: &PyDb, py: Python<'_>, arg: &Bound<'_, PyAny>) -> PyResult<ColumnFamily> {
    if let Ok(handle) = arg.cast::<PyColumnFamily>() {
        let handle = handle.get();
        if !std::ptr::eq(handle.db.get(), db) {
            return Err(invalid_argument(py, "column family belongs to another database".into()));
        }
        return Ok(handle.cf.clone());
    }
    if let Ok(name) = arg.cast::<PyString>() {
        let name = name.to_cow()?;
        return db
            .handle(py)?
            .cf(&name)
            .ok_or_else(|| invalid_argument(py, format!("column family {name:?} does not exist")));
    }
    Err(PyTypeError::new_err("column_family must be a ColumnFamily or a column family name"))
}

/// The names of the column families of the database at `path`, `"default"` first, read without
/// opening it.
#[pyfunction]
pub(crate) fn list_column_families(py: Python<'_>, path: PathBuf) -> PyResult<Vec<String>> {
    let r = py.detach(|| Db::list_cf(&path, Options::default()));
    check(py, r)
}

impl PyColumnFamily {
    /// The handle of the live family `name` of `db`.
    pub(crate) fn lookup(db: &Bound<'_, PyDb>, name: &str) -> PyResult<Self> {
        let py = db.py();
        let cf = db
            .get()
            .handle(py)?
            .cf(name)
            .ok_or_else(|| invalid_argument(py, format!("column family {name:?} does not exist")))?;
        Ok(Self { db: db.clone().unbind(), cf })
    }

    /// Creates the family `name` of `db` with the database's options and `options` on top.
    pub(crate) fn create(
        db: &Bound<'_, PyDb>,
        name: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let py = db.py();
        let this = db.get();
        let opts = family_options(py, &this.opts, options)?;
        let handle = this.handle(py)?;
        let r = py.detach(|| handle.create_cf(name, opts));
        Ok(Self { db: db.clone().unbind(), cf: check(py, r)? })
    }

    fn write_one(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        wo: WriteOptions,
        fill: impl FnOnce(&mut strata::WriteBatch, &ColumnFamily, &[u8]),
    ) -> PyResult<()> {
        let cf = &self.cf;
        self.db.get().single_write(py, wo, |b, k| fill(b, cf, k), key)
    }
}

#[pymethods]
impl PyColumnFamily {
    /// The family's name.
    #[getter]
    fn name(&self) -> &str {
        self.cf.name()
    }

    /// Sets `key` to `value` in this family.
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
        self.write_one(py, key, WriteOptions { sync, disable_wal }, |b, cf, k| {
            b.put_cf(cf, k, v);
        })
    }

    /// The value of `key` in this family, or `default` when it is absent.
    #[pyo3(signature = (key, default = None, snapshot = None, fill_cache = true))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
        snapshot: Option<&Bound<'py, PySnapshot>>,
        fill_cache: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        match self.db.get().get_in(py, Some(&self.cf), key, snapshot, fill_cache)? {
            Some(v) => Ok(v.into_any()),
            None => Ok(default.unwrap_or_else(|| py.None().into_bound(py))),
        }
    }

    /// The values of `keys` in this family (None where absent), read at one point in time.
    #[pyo3(signature = (keys, snapshot = None, fill_cache = true))]
    fn multi_get<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        snapshot: Option<&Bound<'py, PySnapshot>>,
        fill_cache: bool,
    ) -> PyResult<Vec<Option<Bound<'py, PyBytes>>>> {
        self.db.get().multi_get_in(py, Some(&self.cf), keys, snapshot, fill_cache)
    }

    /// Deletes `key` from this family (no error if it is absent).
    #[pyo3(signature = (key, sync = false, disable_wal = false))]
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>, sync: bool, disable_wal: bool) -> PyResult<()> {
        self.write_one(py, key, WriteOptions { sync, disable_wal }, |b, cf, k| {
            b.delete_cf(cf, k);
        })
    }

    /// Deletes every key in `[start, stop)` of this family; nothing when `start >= stop`.
    #[pyo3(signature = (start, stop, sync = false, disable_wal = false))]
    fn delete_range(
        &self,
        py: Python<'_>,
        start: &Bound<'_, PyAny>,
        stop: &Bound<'_, PyAny>,
        sync: bool,
        disable_wal: bool,
    ) -> PyResult<()> {
        let (start, stop) = (bytes_arg(start, "start")?, bytes_arg(stop, "stop")?);
        let wo = WriteOptions { sync, disable_wal };
        self.db.get().delete_range_in(py, Some(&self.cf), wo, start.as_bytes(), stop.as_bytes())
    }

    /// Adds a merge operand for `key` (needs a merge operator in this family's options).
    #[pyo3(signature = (key, value, sync = false, disable_wal = false))]
    fn merge(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        sync: bool,
        disable_wal: bool,
    ) -> PyResult<()> {
        let value = bytes_arg(value, "value")?;
        let v = value.as_bytes();
        self.write_one(py, key, WriteOptions { sync, disable_wal }, |b, cf, k| {
            b.merge_cf(cf, k, v);
        })
    }

    /// An iterator over this family; the arguments are those of `DB.iterator`.
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
        self.db.get().iterator_in(py, Some(&self.cf), args, snapshot, fill_cache, &[])
    }

    /// The engine cursor over this family (plyvel's `RawIterator`).
    #[pyo3(signature = (*, verify_checksums = false, fill_cache = true, snapshot = None))]
    fn raw_iterator(
        &self,
        py: Python<'_>,
        verify_checksums: bool,
        fill_cache: bool,
        snapshot: Option<&Bound<'_, PySnapshot>>,
    ) -> PyResult<PyRawIterator> {
        let _ = verify_checksums;
        self.db.get().raw_iterator_in(py, Some(&self.cf), snapshot, fill_cache, &[])
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

    /// Iterates over all `(key, value)` pairs of this family.
    fn __iter__(&self, py: Python<'_>) -> PyResult<PyIterator> {
        self.db.get().iterator_in(py, Some(&self.cf), IterArgs::everything(), None, true, &[])
    }

    /// `DB.approximate_sizes` in this family: the bytes on disk of each `(start, stop)` range.
    #[pyo3(signature = (*ranges))]
    fn approximate_sizes(&self, py: Python<'_>, ranges: &Bound<'_, PyTuple>) -> PyResult<Vec<u64>> {
        approximate_sizes(self.db.get(), py, Some(&self.cf), &range_args(ranges)?)
    }

    /// `DB.ingest_external_file` into this family.
    fn ingest_external_file(&self, py: Python<'_>, paths: &Bound<'_, PyAny>) -> PyResult<()> {
        ingest(self.db.get(), py, Some(&self.cf), paths)
    }

    /// Flushes this family's memtable to disk and waits for it.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.db.get().handle(py)?;
        let r = py.detach(|| db.flush_cf(&self.cf));
        check(py, r)
    }

    /// Compacts the key range from `start` to `stop` (None = unbounded) of this family down to
    /// the last level.
    #[pyo3(signature = (start = None, stop = None))]
    fn compact_range(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let start = opt_bytes_arg(start, "start")?;
        let stop = opt_bytes_arg(stop, "stop")?;
        let db = self.db.get().handle(py)?;
        let r = py.detach(|| db.compact_range_cf(&self.cf, start.as_deref(), stop.as_deref()));
        check(py, r)
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        match self.db.get().get_in(py, Some(&self.cf), key, None, true)? {
            Some(v) => Ok(v),
            None => Err(pyo3::exceptions::PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __setitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.put(py, key, value, false, false)
    }

    /// `del cf[key]`; like `dict`, raises KeyError when the key is absent.
    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        if self.db.get().get_in(py, Some(&self.cf), key, None, true)?.is_none() {
            return Err(pyo3::exceptions::PyKeyError::new_err(key.clone().unbind()));
        }
        self.delete(py, key, false, false)
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.db.get().get_in(py, Some(&self.cf), key, None, true)?.is_some())
    }

    fn __repr__(&self) -> String {
        format!(
            "<strata.ColumnFamily {:?} of {:?}>",
            self.cf.name(),
            self.db.get().path.display().to_string()
        )
    }
}
