//! `strata._strata`: the PyO3 extension behind the `strata` Python package.
//!
//! The API follows plyvel: explicit `bytes` keys and values, `DB.put/get/delete/merge`, write
//! batches, snapshots and iterators as context managers, plus the mapping protocol. Every engine
//! call that may do IO runs with the GIL released (`Python::detach`).
//!
//! Locking rule: a Rust mutex is never held while the GIL is being acquired. Mutexes are either
//! taken and released while attached (short, never blocking on engine work) or taken inside a
//! `detach` closure and released before it returns.

use std::path::PathBuf;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use pyo3::exceptions::{PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyMemoryView, PyModule, PyString, PyTuple, PyType};
use pyo3::PyErrArguments;
use strata::{Compression, Db, DbIterator, Options, ReadOptions, RepairReport, WriteBatch, WriteOptions};

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// The exception classes live in pure Python (`strata/_errors.py`) so that they can use multiple
/// inheritance (`InvalidArgumentError(Error, ValueError)`, `StrataIOError(Error, OSError)`).
static ERRORS_MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn error_class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    let module =
        ERRORS_MODULE.get_or_try_init(py, || Ok::<_, PyErr>(py.import("strata._errors")?.unbind()))?;
    Ok(module.bind(py).getattr(name)?.cast_into::<PyType>()?)
}

/// A `strata` exception of class `name` with `args`.
fn raise<A>(py: Python<'_>, name: &str, args: A) -> PyErr
where
    A: PyErrArguments + Send + Sync + 'static,
{
    match error_class(py, name) {
        Ok(cls) => PyErr::from_type(cls, args),
        Err(e) => e,
    }
}

fn closed_error(py: Python<'_>, what: &str) -> PyErr {
    raise(py, "ClosedError", (format!("{what} is closed"),))
}

/// Maps an engine error to the matching Python exception class.
fn engine_error(py: Python<'_>, e: strata::Error) -> PyErr {
    use strata::Error as E;
    let msg = e.to_string();
    let name = match &e {
        E::Io { source, .. } => {
            // OSError(errno, strerror) fills in `.errno` and `.strerror`.
            return match source.raw_os_error() {
                Some(errno) => raise(py, "StrataIOError", (errno, msg)),
                None => raise(py, "StrataIOError", (msg,)),
            };
        }
        E::Corruption(_) => "CorruptionError",
        E::InvalidArgument(_) => "InvalidArgumentError",
        E::Locked(_) => "LockedError",
        E::NotADatabase(_) => "NotADatabaseError",
        E::AlreadyExists(_) => "AlreadyExistsError",
        E::UnsupportedVersion { .. } => "UnsupportedVersionError",
        E::Background { cause, .. } => return background_error(py, msg, cause.as_deref(), e.is_retryable()),
        E::Closed => "ClosedError",
        E::Merge(_) => "MergeError",
        _ => "Error",
    };
    raise(py, name, (msg,))
}

/// A `BackgroundError` whose `cause` (and `__cause__`) is the mapped exception of the engine
/// error's cause, if it has one, and whose `retryable` says whether `DB.resume()` may clear it.
fn background_error(py: Python<'_>, msg: String, cause: Option<&strata::Error>, retryable: bool) -> PyErr {
    // A cause is never itself a background error, so this recurses once at most.
    let cause = cause.map(|c| engine_error(py, c.duplicate()));
    let cause_value: Py<PyAny> = match &cause {
        Some(c) => c.value(py).clone().into_any().unbind(),
        None => py.None(),
    };
    let err = raise(py, "BackgroundError", (msg, cause_value, retryable));
    err.set_cause(py, cause);
    err
}

fn invalid_argument(py: Python<'_>, msg: String) -> PyErr {
    raise(py, "InvalidArgumentError", (msg,))
}

/// Converts an engine result into a Python result.
fn check<T>(py: Python<'_>, r: strata::Result<T>) -> PyResult<T> {
    r.map_err(|e| engine_error(py, e))
}

// ---------------------------------------------------------------------------------------------
// Bytes arguments
// ---------------------------------------------------------------------------------------------

/// Accepts `bytes`, `bytearray` and `memoryview`; anything else (notably `str`) is a TypeError.
/// The result is a `bytes` object whose buffer can be borrowed while the GIL is released.
fn bytes_arg<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Bound<'py, PyBytes>> {
    let py = obj.py();
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.clone());
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(PyBytes::new(py, &b.to_vec()));
    }
    if obj.is_instance_of::<PyMemoryView>() {
        return Ok(obj.call_method0("tobytes")?.cast_into::<PyBytes>()?);
    }
    if obj.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be bytes, not str (encode it first, e.g. {what}.encode())"
        )));
    }
    let type_name = obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
    Err(PyTypeError::new_err(format!("{what} must be bytes or a bytes-like object, not {type_name}")))
}

fn opt_bytes_arg(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Vec<u8>>> {
    match obj {
        Some(o) if !o.is_none() => Ok(Some(bytes_arg(o, what)?.as_bytes().to_vec())),
        _ => Ok(None),
    }
}

// ---------------------------------------------------------------------------------------------
// DB
// ---------------------------------------------------------------------------------------------

/// Shared state of one Python iterator; the database keeps a weak reference so that `close()`
/// can drop the engine iterator (which pins the database files and lock).
struct IterState {
    it: Option<DbIterator>,
    pos: Pos,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Pos {
    /// Not positioned yet: the first `__next__` seeks to the start (or stop, in reverse).
    Unstarted,
    /// Positioned at an entry that has not been returned yet (after `seek`).
    Pending,
    /// Positioned at the entry returned last.
    Yielded,
    /// Nothing left in the iteration direction.
    Exhausted,
}

/// An open strata database.
#[pyclass(module = "strata._strata", name = "DB", frozen)]
struct PyDb {
    db: Mutex<Option<Db>>,
    path: PathBuf,
    has_merge_operator: bool,
    iters: Mutex<Vec<Weak<Mutex<IterState>>>>,
}

impl PyDb {
    /// A clone of the engine handle, or `ClosedError`.
    fn handle(&self, py: Python<'_>) -> PyResult<Db> {
        self.db.lock().clone().ok_or_else(|| closed_error(py, "database"))
    }

    fn read_options(
        &self,
        py: Python<'_>,
        snapshot: Option<&Bound<'_, PySnapshot>>,
        fill_cache: bool,
    ) -> PyResult<ReadOptions> {
        let mut ro = ReadOptions::new();
        ro.fill_cache = fill_cache;
        if let Some(s) = snapshot {
            let s = s.get();
            if !std::ptr::eq(s.db.get(), self) {
                return Err(invalid_argument(py, "snapshot belongs to another database".into()));
            }
            ro.snapshot = Some(s.handle(py)?);
        }
        Ok(ro)
    }

    fn get_impl<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        snapshot: Option<&Bound<'py, PySnapshot>>,
        fill_cache: bool,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let key = bytes_arg(key, "key")?;
        let db = self.handle(py)?;
        let ro = self.read_options(py, snapshot, fill_cache)?;
        let k = key.as_bytes();
        let r = py.detach(|| db.get(&ro, k));
        Ok(check(py, r)?.map(|v| PyBytes::new(py, &v)))
    }

    fn write_impl(&self, py: Python<'_>, wo: WriteOptions, batch: WriteBatch) -> PyResult<()> {
        let db = self.handle(py)?;
        let r = py.detach(|| db.write(&wo, batch));
        check(py, r)
    }

    fn single_write(
        &self,
        py: Python<'_>,
        wo: WriteOptions,
        fill: impl FnOnce(&mut WriteBatch, &[u8]),
        key: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let key = bytes_arg(key, "key")?;
        let mut batch = WriteBatch::new();
        fill(&mut batch, key.as_bytes());
        self.write_impl(py, wo, batch)
    }

    fn check_merge(&self, py: Python<'_>) -> PyResult<()> {
        if self.has_merge_operator {
            Ok(())
        } else {
            Err(invalid_argument(
                py,
                "merge needs a merge operator: open the database with merge_operator=\"uint64add\" \
                 or merge_operator=\"stringappend\""
                    .into(),
            ))
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn iterator_impl(
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
    ) -> PyResult<PyIterator> {
        if !include_key && !include_value {
            return Err(invalid_argument(py, "include_key and include_value cannot both be False".into()));
        }
        let mut ro = self.read_options(py, snapshot, fill_cache)?;
        ro.lower_bound = opt_bytes_arg(start, "start")?;
        ro.upper_bound = opt_bytes_arg(stop, "stop")?;
        ro.prefix = opt_bytes_arg(prefix, "prefix")?;
        let db = self.handle(py)?;
        let r = py.detach(|| db.iter(&ro));
        let it = check(py, r)?;
        let state = Arc::new(Mutex::new(IterState { it: Some(it), pos: Pos::Unstarted }));
        {
            let mut iters = self.iters.lock();
            iters.retain(|w| w.strong_count() > 0);
            iters.push(Arc::downgrade(&state));
        }
        Ok(PyIterator { state, reverse, include_key, include_value })
    }

    /// Drops every live engine iterator so the engine can shut down and release its lock.
    fn drop_iterators(&self) {
        let iters = std::mem::take(&mut *self.iters.lock());
        for w in iters {
            if let Some(state) = w.upgrade() {
                let mut st = state.lock();
                st.it = None;
            }
        }
    }
}

impl Drop for PyDb {
    /// A database garbage-collected without `close()`: shutting the engine down joins its
    /// background threads and may flush, so do it without the GIL.
    fn drop(&mut self) {
        let db = self.db.get_mut().take();
        let this = &*self;
        Python::attach(|py| {
            py.detach(|| {
                this.drop_iterators();
                drop(db);
            })
        });
    }
}

/// The option keywords `DB(...)` and `repair_db(...)` share.
struct OptionArgs {
    write_buffer_size: Option<usize>,
    cache_size: Option<usize>,
    bloom_bits_per_key: Option<u32>,
    compression: Option<String>,
    min_blob_size: Option<usize>,
    merge_operator: Option<String>,
    sync_gather_micros: Option<u32>,
    write_spin_micros: Option<u32>,
    options: Option<String>,
}

impl OptionArgs {
    /// `opts` with every keyword given applied, the `options` string last.
    fn apply(self, py: Python<'_>, mut opts: Options) -> PyResult<Options> {
        if let Some(v) = self.write_buffer_size {
            opts.write_buffer_size = v;
        }
        if let Some(v) = self.cache_size {
            opts.cache_size = v;
        }
        if let Some(v) = self.bloom_bits_per_key {
            opts.bloom_bits_per_key = v;
        }
        if let Some(name) = self.compression {
            let c = check(py, Compression::parse(&name))?;
            opts.set_compression(c);
        }
        if let Some(v) = self.min_blob_size {
            opts.min_blob_size = v;
        }
        if let Some(v) = self.sync_gather_micros {
            opts.sync_gather_micros = v;
        }
        if let Some(v) = self.write_spin_micros {
            opts.write_spin_micros = v;
        }
        if let Some(name) = self.merge_operator {
            match strata::merge::builtin(&name) {
                Some(op) => opts.merge_operator = Some(op),
                None => {
                    return Err(invalid_argument(
                        py,
                        format!("merge_operator: unknown operator {name:?} (expected \"uint64add\" or \"stringappend\")"),
                    ))
                }
            }
        }
        if let Some(text) = self.options {
            // Last, so that it wins over the keyword arguments (which all have defaults).
            opts = check(py, opts.with_option_string(&text))?;
        }
        Ok(opts)
    }
}

#[pymethods]
impl PyDb {
    /// Opens (or creates) the database in directory `path`.
    #[new]
    #[pyo3(signature = (
        path,
        create_if_missing = true,
        error_if_exists = false,
        write_buffer_size = None,
        cache_size = None,
        bloom_bits_per_key = None,
        compression = None,
        min_blob_size = None,
        merge_operator = None,
        sync_gather_micros = None,
        write_spin_micros = None,
        options = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        create_if_missing: bool,
        error_if_exists: bool,
        write_buffer_size: Option<usize>,
        cache_size: Option<usize>,
        bloom_bits_per_key: Option<u32>,
        compression: Option<String>,
        min_blob_size: Option<usize>,
        merge_operator: Option<String>,
        sync_gather_micros: Option<u32>,
        write_spin_micros: Option<u32>,
        options: Option<String>,
    ) -> PyResult<Self> {
        let args = OptionArgs {
            write_buffer_size,
            cache_size,
            bloom_bits_per_key,
            compression,
            min_blob_size,
            merge_operator,
            sync_gather_micros,
            write_spin_micros,
            options,
        };
        let opts = args.apply(py, Options { create_if_missing, error_if_exists, ..Options::default() })?;
        let has_merge_operator = opts.merge_operator.is_some();
        let r = py.detach(|| Db::open(&path, opts));
        let db = check(py, r)?;
        Ok(Self { db: Mutex::new(Some(db)), path, has_merge_operator, iters: Mutex::new(Vec::new()) })
    }

    /// The directory of the database.
    #[getter]
    fn name(&self) -> std::ffi::OsString {
        self.path.clone().into_os_string()
    }

    /// True once `close()` has been called.
    #[getter]
    fn closed(&self) -> bool {
        self.db.lock().is_none()
    }

    /// Sets `key` to `value`.
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
        self.single_write(
            py,
            WriteOptions { sync, disable_wal },
            |b, k| {
                b.put(k, v);
            },
            key,
        )
    }

    /// The value of `key`, or `default` when it is absent.
    #[pyo3(signature = (key, default = None, snapshot = None, fill_cache = true))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
        snapshot: Option<&Bound<'py, PySnapshot>>,
        fill_cache: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        match self.get_impl(py, key, snapshot, fill_cache)? {
            Some(v) => Ok(v.into_any()),
            None => Ok(default.unwrap_or_else(|| py.None().into_bound(py))),
        }
    }

    /// The values of `keys` (None where absent), in order, all read at one point in time
    /// (RocksDB's `MultiGet`).
    #[pyo3(signature = (keys, snapshot = None, fill_cache = true))]
    fn multi_get<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        snapshot: Option<&Bound<'py, PySnapshot>>,
        fill_cache: bool,
    ) -> PyResult<Vec<Option<Bound<'py, PyBytes>>>> {
        let owned: Vec<Bound<'py, PyBytes>> =
            keys.try_iter()?.map(|k| bytes_arg(&k?, "key")).collect::<PyResult<_>>()?;
        let db = self.handle(py)?;
        let ro = self.read_options(py, snapshot, fill_cache)?;
        let refs: Vec<&[u8]> = owned.iter().map(|b| b.as_bytes()).collect();
        let results = py.detach(|| db.multi_get(&ro, &refs));
        results.into_iter().map(|r| Ok(check(py, r)?.map(|v| PyBytes::new(py, &v)))).collect()
    }

    /// Deletes `key` (no error if it is absent).
    #[pyo3(signature = (key, sync = false, disable_wal = false))]
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>, sync: bool, disable_wal: bool) -> PyResult<()> {
        self.single_write(
            py,
            WriteOptions { sync, disable_wal },
            |b, k| {
                b.delete(k);
            },
            key,
        )
    }

    /// Adds a merge operand for `key` (needs `merge_operator` at open).
    #[pyo3(signature = (key, value, sync = false, disable_wal = false))]
    fn merge(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        sync: bool,
        disable_wal: bool,
    ) -> PyResult<()> {
        self.check_merge(py)?;
        let value = bytes_arg(value, "value")?;
        let v = value.as_bytes();
        self.single_write(
            py,
            WriteOptions { sync, disable_wal },
            |b, k| {
                b.merge(k, v);
            },
            key,
        )
    }

    /// A write batch, applied atomically by `write()` or on leaving a `with` block without an
    /// exception.
    #[pyo3(signature = (sync = false, disable_wal = false))]
    fn write_batch(slf: &Bound<'_, Self>, sync: bool, disable_wal: bool) -> PyResult<PyWriteBatch> {
        slf.get().handle(slf.py())?;
        Ok(PyWriteBatch {
            db: slf.clone().unbind(),
            batch: Mutex::new(WriteBatch::new()),
            wo: WriteOptions { sync, disable_wal },
        })
    }

    /// An iterator over `[start, stop)` (and/or keys with `prefix`), in key order or reversed.
    #[pyo3(signature = (
        start = None,
        stop = None,
        prefix = None,
        reverse = false,
        include_key = true,
        include_value = true,
        snapshot = None,
        fill_cache = true,
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
    ) -> PyResult<PyIterator> {
        self.iterator_impl(py, start, stop, prefix, reverse, include_key, include_value, snapshot, fill_cache)
    }

    /// Iterates over all `(key, value)` pairs.
    fn __iter__(&self, py: Python<'_>) -> PyResult<PyIterator> {
        self.iterator_impl(py, None, None, None, false, true, true, None, true)
    }

    /// A consistent point-in-time view; release it with `close()` or a `with` block.
    fn snapshot(slf: &Bound<'_, Self>) -> PyResult<PySnapshot> {
        let db = slf.get().handle(slf.py())?;
        Ok(PySnapshot { db: slf.clone().unbind(), snap: Mutex::new(Some(db.snapshot())) })
    }

    /// Flushes the memtable to disk and waits for it.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.handle(py)?;
        let r = py.detach(|| db.flush());
        check(py, r)
    }

    /// Makes every acknowledged write durable, as if each had been written with `sync=True`
    /// (RocksDB's `SyncWAL`), without flushing the memtable.
    fn sync_wal(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.handle(py)?;
        let r = py.detach(|| db.sync_wal());
        check(py, r)
    }

    /// Leaves the read-only state a retryable background error (a full disk) put the database
    /// in, as RocksDB's `Resume`: retries the failed work and, if it succeeds, accepts writes
    /// again. Does nothing without a background error; raises the `BackgroundError` again when
    /// it is not retryable (`retryable` is False) or the retry fails.
    fn resume(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.handle(py)?;
        let r = py.detach(|| db.resume());
        check(py, r)
    }

    /// Writes an openable copy of the database to the directory `path`, which must not exist:
    /// every write acknowledged before the call, with table and blob files hard-linked where
    /// possible (RocksDB's `Checkpoint`).
    fn checkpoint(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let db = self.handle(py)?;
        let r = py.detach(|| db.checkpoint(&path));
        check(py, r)
    }

    /// Waits until no flush or compaction runs or is due (RocksDB's `WaitForCompact`); does not
    /// flush the memtable. True once settled, False if `timeout` seconds (None: no limit)
    /// passed first.
    #[pyo3(signature = (timeout = None))]
    fn wait_for_compactions(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let timeout = match timeout {
            None => None,
            Some(t) if t.is_nan() || t < 0.0 => {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "timeout must be None or a non-negative number of seconds",
                ))
            }
            // Too long to represent (e.g. infinity): no limit.
            Some(t) => std::time::Duration::try_from_secs_f64(t).ok(),
        };
        let db = self.handle(py)?;
        let r = py.detach(|| db.wait_for_compactions(timeout));
        check(py, r)
    }

    /// Compacts the key range from `start` to `stop` (None = unbounded) down to the last level.
    #[pyo3(signature = (start = None, stop = None))]
    fn compact_range(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let start = opt_bytes_arg(start, "start")?;
        let stop = opt_bytes_arg(stop, "stop")?;
        let db = self.handle(py)?;
        let r = py.detach(|| db.compact_range(start.as_deref(), stop.as_deref()));
        check(py, r)
    }

    /// A named property such as `"strata.stats"`, or None if the name is unknown.
    fn property(&self, py: Python<'_>, name: String) -> PyResult<Option<String>> {
        let db = self.handle(py)?;
        Ok(py.detach(|| db.property(&name)))
    }

    /// Closes the database: stops background work, syncs the WAL and releases the lock. Open
    /// iterators are invalidated. Calling it again is a no-op.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.db.lock().take();
        let Some(db) = db else { return Ok(()) };
        let r = py.detach(|| {
            self.drop_iterators();
            db.close()
        });
        check(py, r)
    }

    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        slf.get().handle(slf.py())?;
        Ok(slf)
    }

    #[pyo3(signature = (_exc_type = None, _exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        match self.get_impl(py, key, None, true)? {
            Some(v) => Ok(v),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __setitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.put(py, key, value, false, false)
    }

    /// `del db[key]`; like `dict`, raises KeyError when the key is absent.
    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        if self.get_impl(py, key, None, true)?.is_none() {
            return Err(PyKeyError::new_err(key.clone().unbind()));
        }
        self.delete(py, key, false, false)
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.get_impl(py, key, None, true)?.is_some())
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { " (closed)" } else { "" };
        format!("<strata.DB {:?}{state}>", self.path.display().to_string())
    }
}

// ---------------------------------------------------------------------------------------------
// WriteBatch
// ---------------------------------------------------------------------------------------------

/// Puts, deletes and merges applied atomically.
#[pyclass(module = "strata._strata", name = "WriteBatch", frozen)]
struct PyWriteBatch {
    db: Py<PyDb>,
    batch: Mutex<WriteBatch>,
    wo: WriteOptions,
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

// ---------------------------------------------------------------------------------------------
// Snapshot
// ---------------------------------------------------------------------------------------------

/// A consistent point-in-time view of a database.
#[pyclass(module = "strata._strata", name = "Snapshot", frozen)]
struct PySnapshot {
    db: Py<PyDb>,
    snap: Mutex<Option<strata::Snapshot>>,
}

impl PySnapshot {
    fn handle(&self, py: Python<'_>) -> PyResult<strata::Snapshot> {
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

// ---------------------------------------------------------------------------------------------
// Iterator
// ---------------------------------------------------------------------------------------------

/// A Python iterator over a database or snapshot. Think of it as a cursor between entries: it
/// starts before the first entry of its range (after the last one when `reverse=True`).
#[pyclass(module = "strata._strata", name = "Iterator", frozen)]
struct PyIterator {
    state: Arc<Mutex<IterState>>,
    reverse: bool,
    include_key: bool,
    include_value: bool,
}

enum Step {
    Item(Vec<u8>, Vec<u8>),
    End,
    Closed,
    Failed(strata::Error),
}

impl PyIterator {
    /// Runs `f` on the engine iterator with the GIL released.
    fn with_iter(&self, py: Python<'_>, f: impl FnOnce(&mut DbIterator, &mut Pos) + Send) -> PyResult<()> {
        let state = &self.state;
        let closed = py.detach(|| {
            let mut g = state.lock();
            let st = &mut *g;
            match st.it.as_mut() {
                Some(it) => {
                    f(it, &mut st.pos);
                    false
                }
                None => true,
            }
        });
        if closed {
            Err(closed_error(py, "iterator (or its database)"))
        } else {
            Ok(())
        }
    }
}

#[pymethods]
impl PyIterator {
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let (reverse, want_key, want_value) = (self.reverse, self.include_key, self.include_value);
        let state = &self.state;
        let step = py.detach(|| {
            let mut g = state.lock();
            let st = &mut *g;
            let Some(it) = st.it.as_mut() else { return Step::Closed };
            match st.pos {
                Pos::Unstarted if reverse => it.seek_to_last(),
                Pos::Unstarted => it.seek_to_first(),
                Pos::Pending => {}
                Pos::Yielded if reverse => it.prev(),
                Pos::Yielded => it.next(),
                Pos::Exhausted => return Step::End,
            }
            if it.valid() {
                st.pos = Pos::Yielded;
                let k = if want_key { it.key().to_vec() } else { Vec::new() };
                let v = if want_value { it.value().to_vec() } else { Vec::new() };
                Step::Item(k, v)
            } else {
                st.pos = Pos::Exhausted;
                match it.status() {
                    Ok(()) => Step::End,
                    Err(e) => Step::Failed(e),
                }
            }
        });
        match step {
            Step::Item(k, v) => Ok(Some(match (want_key, want_value) {
                (true, true) => {
                    PyTuple::new(py, [PyBytes::new(py, &k), PyBytes::new(py, &v)])?.into_any().unbind()
                }
                (true, false) => PyBytes::new(py, &k).into_any().unbind(),
                _ => PyBytes::new(py, &v).into_any().unbind(),
            })),
            Step::End => Ok(None),
            Step::Closed => Err(closed_error(py, "iterator (or its database)")),
            Step::Failed(e) => Err(engine_error(py, e)),
        }
    }

    /// Moves the cursor just before the first key `>= target`: the next item is that key, or,
    /// for a reverse iterator, the last key `< target`. The range bounds still apply.
    fn seek(&self, py: Python<'_>, target: &Bound<'_, PyAny>) -> PyResult<()> {
        let target = bytes_arg(target, "target")?;
        let t = target.as_bytes();
        let reverse = self.reverse;
        self.with_iter(py, |it, pos| {
            if reverse {
                it.seek_for_prev(t);
                if it.valid() && it.key() == t {
                    it.prev();
                }
            } else {
                it.seek(t);
            }
            *pos = Pos::Pending;
        })
    }

    /// Moves the cursor to the start of the range: a forward iterator yields everything again, a
    /// reverse one is exhausted.
    fn seek_to_start(&self, py: Python<'_>) -> PyResult<()> {
        let reverse = self.reverse;
        self.with_iter(py, |it, pos| {
            if reverse {
                *pos = Pos::Exhausted;
            } else {
                it.seek_to_first();
                *pos = Pos::Pending;
            }
        })
    }

    /// Moves the cursor to the end of the range: a reverse iterator yields everything again, a
    /// forward one is exhausted.
    fn seek_to_stop(&self, py: Python<'_>) -> PyResult<()> {
        let reverse = self.reverse;
        self.with_iter(py, |it, pos| {
            if reverse {
                it.seek_to_last();
                *pos = Pos::Pending;
            } else {
                *pos = Pos::Exhausted;
            }
        })
    }

    /// Releases the iterator's resources; later calls raise `ClosedError`. Idempotent.
    fn close(&self, py: Python<'_>) {
        let state = &self.state;
        py.detach(|| drop(state.lock().it.take()));
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (_exc_type = None, _exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.close(py);
        false
    }
}

// ---------------------------------------------------------------------------------------------
// Module functions
// ---------------------------------------------------------------------------------------------

/// Rebuilds the database in directory `path`, which need not open, from its data files
/// (`strata::Db::repair`). Takes the same option keywords as `DB` (pass the options the
/// database is used with). Returns the report as a dict; files taken out of the database are
/// in `path/lost/`. Raises `LockedError` while the database is open and `NotADatabaseError`
/// for a directory without one.
#[pyfunction]
#[pyo3(signature = (
    path,
    write_buffer_size = None,
    cache_size = None,
    bloom_bits_per_key = None,
    compression = None,
    min_blob_size = None,
    merge_operator = None,
    sync_gather_micros = None,
    write_spin_micros = None,
    options = None,
))]
#[allow(clippy::too_many_arguments)]
fn repair_db<'py>(
    py: Python<'py>,
    path: PathBuf,
    write_buffer_size: Option<usize>,
    cache_size: Option<usize>,
    bloom_bits_per_key: Option<u32>,
    compression: Option<String>,
    min_blob_size: Option<usize>,
    merge_operator: Option<String>,
    sync_gather_micros: Option<u32>,
    write_spin_micros: Option<u32>,
    options: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let args = OptionArgs {
        write_buffer_size,
        cache_size,
        bloom_bits_per_key,
        compression,
        min_blob_size,
        merge_operator,
        sync_gather_micros,
        write_spin_micros,
        options,
    };
    let opts = args.apply(py, Options { create_if_missing: false, ..Options::default() })?;
    let r = py.detach(|| Db::repair(&path, opts));
    report_dict(py, &check(py, r)?)
}

fn lost_list<'py>(py: Python<'py>, files: &[strata::db::LostFile]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for f in files {
        let d = PyDict::new(py);
        d.set_item("file", &f.file)?;
        d.set_item("moved_to", &f.moved_to)?;
        d.set_item("reason", &f.reason)?;
        list.append(d)?;
    }
    Ok(list)
}

fn report_dict<'py>(py: Python<'py>, r: &RepairReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("clean", r.is_clean())?;
    d.set_item("manifest_number", r.manifest_number)?;
    d.set_item("last_sequence", r.last_sequence)?;
    d.set_item("tables_kept", &r.tables_kept)?;
    d.set_item("tables_lost", lost_list(py, &r.tables_lost)?)?;
    d.set_item("tables_replaced", lost_list(py, &r.tables_replaced)?)?;
    d.set_item("tables_from_wals", &r.tables_from_wals)?;
    d.set_item("tables_rewritten", &r.tables_rewritten)?;
    d.set_item("blob_files_kept", &r.blob_files_kept)?;
    d.set_item("blob_files_lost", lost_list(py, &r.blob_files_lost)?)?;
    let dangling = PyList::empty(py);
    for x in &r.dangling_blob_references {
        let e = PyDict::new(py);
        e.set_item("table", x.table)?;
        e.set_item("blob_file", x.blob_file)?;
        e.set_item("entries", x.entries)?;
        dangling.append(e)?;
    }
    d.set_item("dangling_blob_references", dangling)?;
    d.set_item("wal_files", &r.wal_files)?;
    d.set_item("wal_files_cut_short", &r.wal_files_cut_short)?;
    d.set_item("wal_records_salvaged", r.wal_records_salvaged)?;
    d.set_item("wal_records_dropped", r.wal_records_dropped)?;
    d.set_item("wal_bytes_skipped", r.wal_bytes_skipped)?;
    d.set_item("other_moved", lost_list(py, &r.other_moved)?)?;
    Ok(d)
}

// ---------------------------------------------------------------------------------------------
// Module
// ---------------------------------------------------------------------------------------------

/// The compiled part of the `strata` package; import `strata` instead.
#[pymodule]
fn _strata(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(repair_db, m)?)?;
    m.add_class::<PyDb>()?;
    m.add_class::<PyWriteBatch>()?;
    m.add_class::<PySnapshot>()?;
    m.add_class::<PyIterator>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
