//! `strata.DB`: an open database (plyvel's `DB`, opened by `open`), its reads, writes and
//! maintenance calls, and the factories of write batches, snapshots, iterators, prefixed views,
//! transactions and column family handles (whose methods live in `family`, and share the `_in`
//! helpers here and in `iterator`).
//!
//! Owns: the engine handle and its lifetime (`close()`, garbage collection, invalidating live
//! iterators and ending live transactions). Must not: hold a Rust mutex while acquiring the GIL,
//! or call the engine with the GIL held when the call may do IO or merge (a Python merge
//! operator takes the GIL from the engine's threads).

use std::path::PathBuf;
use std::sync::Weak;

use parking_lot::Mutex;
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use strata::{ColumnFamily, Db, Options, ReadOptions, WriteBatch, WriteOptions};

use crate::args::{bytes_arg, opt_bytes_arg};
use crate::batch::PyWriteBatch;
use crate::bulk::ingest;
use crate::errors::{check, closed_error, invalid_argument};
use crate::family::{family_arg, PyColumnFamily};
use crate::iterator::{shaped_iterator, IterArgs, IterState, PyIterator};
use crate::maintenance::{approximate_sizes, property_name, range_args};
use crate::open::{path_arg, OpenMode};
use crate::options::{CompressionArg, OptionArgs, PlyvelArgs};
use crate::prefixed::PyPrefixedDb;
use crate::raw_iterator::PyRawIterator;
use crate::snapshot::PySnapshot;
use crate::txn::{PyTransaction, Transactions};

/// An open strata database.
#[pyclass(module = "strata._strata", name = "DB", frozen)]
pub(crate) struct PyDb {
    pub(crate) db: Mutex<Option<Db>>,
    pub(crate) path: PathBuf,
    pub(crate) has_merge_operator: bool,
    /// The options the database was opened with: a new column family's start from these.
    pub(crate) opts: Options,
    pub(crate) iters: Mutex<Vec<Weak<Mutex<IterState>>>>,
    /// How `transaction()` begins transactions, and the live ones `close()` ends.
    pub(crate) txns: Transactions,
    /// Opened with `Db::open_read_only`.
    pub(crate) read_only: bool,
}

impl PyDb {
    /// A clone of the engine handle, or `ClosedError`.
    pub(crate) fn handle(&self, py: Python<'_>) -> PyResult<Db> {
        self.db.lock().clone().ok_or_else(|| closed_error(py, "database"))
    }

    pub(crate) fn read_options(
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

    pub(crate) fn get_impl<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        snapshot: Option<&Bound<'py, PySnapshot>>,
        fill_cache: bool,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        self.get_in(py, None, key, snapshot, fill_cache)
    }

    /// `get` in column family `cf` (the default family when `None`).
    pub(crate) fn get_in<'py>(
        &self,
        py: Python<'py>,
        cf: Option<&ColumnFamily>,
        key: &Bound<'py, PyAny>,
        snapshot: Option<&Bound<'py, PySnapshot>>,
        fill_cache: bool,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let key = bytes_arg(key, "key")?;
        let db = self.handle(py)?;
        let ro = self.read_options(py, snapshot, fill_cache)?;
        let k = key.as_bytes();
        let r = py.detach(|| match cf {
            Some(cf) => db.get_cf_opt(cf, &ro, k),
            None => db.get_opt(&ro, k),
        });
        Ok(check(py, r)?.map(|v| PyBytes::new(py, &v)))
    }

    /// `multi_get` in column family `cf` (the default family when `None`).
    pub(crate) fn multi_get_in<'py>(
        &self,
        py: Python<'py>,
        cf: Option<&ColumnFamily>,
        keys: &Bound<'py, PyAny>,
        snapshot: Option<&Bound<'py, PySnapshot>>,
        fill_cache: bool,
    ) -> PyResult<Vec<Option<Bound<'py, PyBytes>>>> {
        let owned: Vec<Bound<'py, PyBytes>> =
            keys.try_iter()?.map(|k| bytes_arg(&k?, "key")).collect::<PyResult<_>>()?;
        let db = self.handle(py)?;
        let ro = self.read_options(py, snapshot, fill_cache)?;
        let refs: Vec<&[u8]> = owned.iter().map(|b| b.as_bytes()).collect();
        let results = py.detach(|| match cf {
            Some(cf) => db.multi_get_cf_opt(cf, &ro, &refs),
            None => db.multi_get_opt(&ro, &refs),
        });
        results.into_iter().map(|r| Ok(check(py, r)?.map(|v| PyBytes::new(py, &v)))).collect()
    }

    pub(crate) fn write_impl(&self, py: Python<'_>, wo: WriteOptions, batch: WriteBatch) -> PyResult<()> {
        let db = self.handle(py)?;
        let r = py.detach(|| db.write_opt(&wo, batch));
        check(py, r)
    }

    pub(crate) fn single_write(
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

    /// Deletes every key in `[start, stop)` of column family `cf` (the default family when
    /// `None`); nothing when `start >= stop`.
    pub(crate) fn delete_range_in(
        &self,
        py: Python<'_>,
        cf: Option<&ColumnFamily>,
        wo: WriteOptions,
        start: &[u8],
        stop: &[u8],
    ) -> PyResult<()> {
        let mut batch = WriteBatch::new();
        match cf {
            Some(cf) => batch.delete_range_cf(cf, start, stop),
            None => batch.delete_range(start, stop),
        };
        self.write_impl(py, wo, batch)
    }

    pub(crate) fn check_merge(&self, py: Python<'_>) -> PyResult<()> {
        if self.has_merge_operator {
            Ok(())
        } else {
            Err(invalid_argument(
                py,
                "merge needs a merge operator: open the database with merge_operator=\"uint64add\", \
                 \"stringappend\" or a Python merge function"
                    .into(),
            ))
        }
    }

    /// Drops every live engine iterator and transaction so the engine can shut down and release
    /// its lock.
    fn drop_iterators(&self) {
        self.txns.close();
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

#[pymethods]
impl PyDb {
    /// Opens the database in directory `name` (also accepted as `path=`), creating it when
    /// `create_if_missing` is true. Takes plyvel's keywords, each mapped to strata's option
    /// (`options::PlyvelArgs`), strata's own, and `read_only=True` for `Db::open_read_only`.
    #[new]
    #[pyo3(signature = (
        name = None,
        create_if_missing = false,
        error_if_exists = false,
        *,
        paranoid_checks = None,
        write_buffer_size = None,
        max_open_files = None,
        lru_cache_size = None,
        block_size = None,
        block_restart_interval = None,
        max_file_size = None,
        compression = CompressionArg::NotGiven,
        bloom_filter_bits = None,
        comparator = None,
        comparator_name = None,
        cache_size = None,
        bloom_bits_per_key = None,
        min_blob_size = None,
        merge_operator = None,
        sync_gather_micros = None,
        write_spin_micros = None,
        prefix_extractor = None,
        options = None,
        column_families = None,
        transactions = None,
        lock_timeout = None,
        read_only = false,
        path = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        name: Option<&Bound<'_, PyAny>>,
        create_if_missing: bool,
        error_if_exists: bool,
        paranoid_checks: Option<bool>,
        write_buffer_size: Option<usize>,
        max_open_files: Option<usize>,
        lru_cache_size: Option<usize>,
        block_size: Option<usize>,
        block_restart_interval: Option<usize>,
        max_file_size: Option<u64>,
        compression: CompressionArg,
        bloom_filter_bits: Option<u32>,
        comparator: Option<&Bound<'_, PyAny>>,
        comparator_name: Option<&Bound<'_, PyAny>>,
        cache_size: Option<usize>,
        bloom_bits_per_key: Option<u32>,
        min_blob_size: Option<usize>,
        merge_operator: Option<&Bound<'_, PyAny>>,
        sync_gather_micros: Option<u32>,
        write_spin_micros: Option<u32>,
        prefix_extractor: Option<String>,
        options: Option<String>,
        column_families: Option<&Bound<'_, PyDict>>,
        transactions: Option<String>,
        lock_timeout: Option<f64>,
        read_only: bool,
        path: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        // Accepted for plyvel, nothing to set: see `options::PlyvelArgs`.
        let _ = paranoid_checks;
        let path = path_arg(name, path)?;
        let plyvel = PlyvelArgs {
            max_open_files,
            lru_cache_size,
            block_size,
            block_restart_interval,
            max_file_size,
            bloom_filter_bits,
            comparator,
            comparator_name,
        };
        let args = OptionArgs {
            create_if_missing: Some(create_if_missing),
            error_if_exists: Some(error_if_exists),
            write_buffer_size,
            cache_size,
            bloom_bits_per_key,
            compression,
            min_blob_size,
            merge_operator,
            sync_gather_micros,
            write_spin_micros,
            prefix_extractor,
            options,
            plyvel,
        };
        let mode = OpenMode { column_families, transactions, lock_timeout, read_only };
        Self::open(py, path, args, mode)
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

    /// The value of `key`, or `default` when it is absent. `verify_checksums` is accepted for
    /// plyvel and changes nothing: strata verifies every block it reads.
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
        self.multi_get_in(py, None, keys, snapshot, fill_cache)
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

    /// Deletes every key in `[start, stop)` (RocksDB's `DeleteRange`): one range tombstone,
    /// however many keys it covers. Nothing is deleted when `start >= stop`.
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
        self.delete_range_in(py, None, wo, start.as_bytes(), stop.as_bytes())
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

    /// A write batch, applied atomically by `write()` or at the end of a `with` block: always,
    /// or, with `transaction=True`, only when the block raised no exception (plyvel's rule).
    #[pyo3(signature = (sync = false, disable_wal = false, *, transaction = false))]
    fn write_batch(
        slf: &Bound<'_, Self>,
        sync: bool,
        disable_wal: bool,
        transaction: bool,
    ) -> PyResult<PyWriteBatch> {
        slf.get().handle(slf.py())?;
        Ok(PyWriteBatch::new(
            slf.clone().unbind(),
            WriteOptions { sync, disable_wal },
            transaction,
            Vec::new(),
        ))
    }

    /// A transaction committing with these write options; use it as a context manager (commit on
    /// a normal exit, rollback on an exception). Optimistic, or pessimistic when the database was
    /// opened with `transactions="pessimistic"`; for those, `set_snapshot` reads at a snapshot
    /// taken now and `lock_timeout` (seconds) replaces the database's.
    #[pyo3(signature = (sync = false, disable_wal = false, set_snapshot = false, lock_timeout = None))]
    fn transaction(
        slf: &Bound<'_, Self>,
        sync: bool,
        disable_wal: bool,
        set_snapshot: bool,
        lock_timeout: Option<f64>,
    ) -> PyResult<PyTransaction> {
        PyTransaction::begin(slf, WriteOptions { sync, disable_wal }, set_snapshot, lock_timeout)
    }

    /// An iterator over `[start, stop)` (`include_start`, `include_stop` change which ends are
    /// in) and/or the keys with `prefix`, in key order or reversed.
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
        self.iterator_in(py, None, args, snapshot, fill_cache, &[])
    }

    /// The engine cursor (plyvel's `RawIterator`): `valid`, `seek*`, `next`, `prev`, `key`, ...
    #[pyo3(signature = (*, verify_checksums = false, fill_cache = true, snapshot = None))]
    fn raw_iterator(
        &self,
        py: Python<'_>,
        verify_checksums: bool,
        fill_cache: bool,
        snapshot: Option<&Bound<'_, PySnapshot>>,
    ) -> PyResult<PyRawIterator> {
        let _ = verify_checksums;
        self.raw_iterator_in(py, None, snapshot, fill_cache, &[])
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

    /// Iterates over all `(key, value)` pairs.
    fn __iter__(&self, py: Python<'_>) -> PyResult<PyIterator> {
        let args = IterArgs::everything();
        self.iterator_in(py, None, args, None, true, &[])
    }

    /// A consistent point-in-time view; release it with `close()` or a `with` block.
    fn snapshot(slf: &Bound<'_, Self>) -> PyResult<PySnapshot> {
        let db = slf.get().handle(slf.py())?;
        let snap = slf.py().detach(|| db.snapshot());
        Ok(PySnapshot { db: slf.clone().unbind(), snap: Mutex::new(Some(snap)), key_prefix: Vec::new() })
    }

    /// A view of the keys that start with `prefix`, with the prefix left out (plyvel's
    /// `PrefixedDB`).
    fn prefixed_db(slf: &Bound<'_, Self>, prefix: &Bound<'_, PyAny>) -> PyResult<PyPrefixedDb> {
        let prefix = bytes_arg(prefix, "prefix")?.as_bytes().to_vec();
        Ok(PyPrefixedDb { db: slf.clone().unbind(), prefix })
    }

    /// plyvel's property by `bytes` (or `str`) name, as `bytes`, or None when unknown: LevelDB's
    /// `leveldb.stats` and `leveldb.num-files-at-level<N>` read strata's equivalents; strata's
    /// own names (`strata.stats`, ...) work too.
    fn get_property<'py>(
        &self,
        py: Python<'py>,
        name: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let name = property_name(name)?;
        let db = self.handle(py)?;
        let value = py.detach(|| db.property(&name));
        Ok(value.map(|v| PyBytes::new(py, v.as_bytes())))
    }

    /// The approximate bytes on disk of the keys in `[start, stop)` (flushed data only).
    fn approximate_size(
        &self,
        py: Python<'_>,
        start: &Bound<'_, PyAny>,
        stop: &Bound<'_, PyAny>,
    ) -> PyResult<u64> {
        let range =
            bytes_arg(start, "start")?.as_bytes().to_vec()..bytes_arg(stop, "stop")?.as_bytes().to_vec();
        let sizes = approximate_sizes(self, py, None, &[range])?;
        Ok(sizes.first().copied().unwrap_or(0))
    }

    /// `approximate_size` of each `(start, stop)` range given, as a list.
    #[pyo3(signature = (*ranges))]
    fn approximate_sizes(&self, py: Python<'_>, ranges: &Bound<'_, PyTuple>) -> PyResult<Vec<u64>> {
        let ranges = range_args(ranges)?;
        approximate_sizes(self, py, None, &ranges)
    }

    /// True when opened with `read_only=True`.
    #[getter]
    fn read_only(&self) -> bool {
        self.read_only
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

    /// Adds the table files at `paths` (one path or a list; written by `SstFileWriter`) to the
    /// database, or to `column_family`, as one atomic step (RocksDB's `IngestExternalFile`).
    #[pyo3(signature = (paths, column_family = None))]
    fn ingest_external_file(
        &self,
        py: Python<'_>,
        paths: &Bound<'_, PyAny>,
        column_family: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let cf = match column_family {
            Some(cf) if !cf.is_none() => Some(family_arg(self, py, cf)?),
            _ => None,
        };
        ingest(self, py, cf.as_ref(), paths)
    }

    /// The handle of the column family `name`; InvalidArgumentError when there is none.
    fn column_family(slf: &Bound<'_, Self>, name: &str) -> PyResult<PyColumnFamily> {
        PyColumnFamily::lookup(slf, name)
    }

    /// Creates the column family `name`, durably. Its options are the database's, with the
    /// option keywords given (any option name, as in `column_families=`) applied on top.
    #[pyo3(signature = (name, **options))]
    fn create_column_family(
        slf: &Bound<'_, Self>,
        name: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyColumnFamily> {
        PyColumnFamily::create(slf, name, options)
    }

    /// Drops the column family given by handle or name, durably; its handles fail from then on.
    fn drop_column_family(&self, py: Python<'_>, column_family: &Bound<'_, PyAny>) -> PyResult<()> {
        let cf = family_arg(self, py, column_family)?;
        let db = self.handle(py)?;
        let r = py.detach(|| db.drop_cf(&cf));
        check(py, r)
    }

    /// The names of the live column families, `"default"` first, then in creation order.
    fn column_families(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        Ok(self.handle(py)?.cf_names())
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
