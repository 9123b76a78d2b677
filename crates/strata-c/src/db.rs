//! The database handle: open, repair, destroy and close, reads and writes, and maintenance
//! calls (`strata_open`, `strata_put`, `strata_get`, `strata_delete_range`, `strata_flush`,
//! `strata_approximate_sizes`, `strata_property_value`, ...).
//!
//! Owns: `strata_t` and every call that takes one, except snapshots, iterators, column families,
//! transactions and ingestion (their own modules). Must not: keep state beyond the engine
//! handle; every call maps to one engine call.

use std::ffi::{c_char, c_int};
use std::ops::Range;
use std::ptr;

use strata_engine::Db;

use crate::batch::strata_writebatch_t;
use crate::options::{strata_options_t, strata_readoptions_t, strata_writeoptions_t};
use crate::util::{
    bytes, c_str, err_str, finish, guard, guard_or, handle, into_raw, malloc_c_string, malloc_copy,
    optional_bytes, path_from, set_error, CResult,
};

/// An open database (`strata_t`).
pub struct strata_t {
    pub(crate) db: Db,
}

/// Opens the database at `name`. NULL on error.
#[no_mangle]
pub unsafe extern "C" fn strata_open(
    options: *const strata_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) -> *mut strata_t {
    let r = guard(|| {
        // SAFETY: `options` is NULL or a live options handle (header contract).
        let o = unsafe { handle(options, "options") }?;
        // SAFETY: `name` is NULL or a NUL-terminated string (header contract).
        let path = path_from(unsafe { c_str(name, "name") }?)?;
        o.deferred_error()?;
        let db = Db::open(path, o.opts.clone()).map_err(err_str)?;
        Ok(into_raw(strata_t { db }))
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ptr::null_mut()) }
}

/// Rebuilds the database at `path`, which need not open, from its data files (`Db::repair`,
/// RocksDB's `rocksdb_repair_db`, arguments in the order path, options). Files it takes out are
/// moved to `path/lost/`; the engine logs each through `tracing`.
#[no_mangle]
pub unsafe extern "C" fn strata_repair_db(
    path: *const c_char,
    options: *const strata_options_t,
    errptr: *mut *mut c_char,
) {
    let r = guard(|| {
        // SAFETY: `path` is NULL or a NUL-terminated string (header contract).
        let path = path_from(unsafe { c_str(path, "path") }?)?;
        // SAFETY: `options` is NULL or a live options handle (header contract).
        let o = unsafe { handle(options, "options") }?;
        o.deferred_error()?;
        Db::repair(&path, o.opts.clone()).map(drop).map_err(err_str)
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ()) }
}

/// Deletes the database at `name`: the files strata wrote there, then the directory if nothing
/// else is left (`Db::destroy`; RocksDB's `rocksdb_destroy_db`). A missing directory is not an
/// error; an open database is ("locked").
#[no_mangle]
pub unsafe extern "C" fn strata_destroy_db(
    options: *const strata_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) {
    let r = guard(|| {
        // SAFETY: `options` is NULL or a live options handle (header contract).
        let o = unsafe { handle(options, "options") }?;
        // SAFETY: `name` is NULL or a NUL-terminated string (header contract).
        let path = path_from(unsafe { c_str(name, "name") }?)?;
        o.deferred_error()?;
        Db::destroy(path, o.opts.clone()).map_err(err_str)
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ()) }
}

/// Closes the database: stops background work and syncs the WAL. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn strata_close(db: *mut strata_t) {
    if db.is_null() {
        return;
    }
    // SAFETY: `db` came from `strata_open` and is not used again (header contract).
    let boxed = unsafe { Box::from_raw(db) };
    let _ = guard(move || boxed.db.close().map_err(err_str));
}

// ---------------------------------------------------------------------------------------------
// Reads and writes
// ---------------------------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn strata_put(
    db: *mut strata_t,
    options: *const strata_writeoptions_t,
    key: *const c_char,
    keylen: usize,
    val: *const c_char,
    vallen: usize,
    errptr: *mut *mut c_char,
) {
    let r = guard(|| {
        // SAFETY: `db` and `options` are NULL or live handles (header contract).
        let (db, o) = unsafe { (handle(db, "db")?, handle(options, "write options")?) };
        // SAFETY: `key`/`val` are NULL or point to `keylen`/`vallen` bytes (header contract).
        let (k, v) = unsafe { (bytes(key, keylen, "key")?, bytes(val, vallen, "value")?) };
        db.db.put_opt(&o.opts, k, v).map_err(err_str)
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ()) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_delete(
    db: *mut strata_t,
    options: *const strata_writeoptions_t,
    key: *const c_char,
    keylen: usize,
    errptr: *mut *mut c_char,
) {
    let r = guard(|| {
        // SAFETY: `db` and `options` are NULL or live handles (header contract).
        let (db, o) = unsafe { (handle(db, "db")?, handle(options, "write options")?) };
        // SAFETY: `key` is NULL or points to `keylen` bytes (header contract).
        let k = unsafe { bytes(key, keylen, "key") }?;
        db.db.delete_opt(&o.opts, k).map_err(err_str)
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ()) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_merge(
    db: *mut strata_t,
    options: *const strata_writeoptions_t,
    key: *const c_char,
    keylen: usize,
    val: *const c_char,
    vallen: usize,
    errptr: *mut *mut c_char,
) {
    let r = guard(|| {
        // SAFETY: `db` and `options` are NULL or live handles (header contract).
        let (db, o) = unsafe { (handle(db, "db")?, handle(options, "write options")?) };
        // SAFETY: `key`/`val` are NULL or point to `keylen`/`vallen` bytes (header contract).
        let (k, v) = unsafe { (bytes(key, keylen, "key")?, bytes(val, vallen, "operand")?) };
        db.db.merge_opt(&o.opts, k, v).map_err(err_str)
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ()) }
}

/// Deletes every key in `[start_key, end_key)` (`Db::delete_range_opt`; RocksDB's
/// `rocksdb_delete_range_cf` for the default family); nothing when `start_key >= end_key`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn strata_delete_range(
    db: *mut strata_t,
    options: *const strata_writeoptions_t,
    start_key: *const c_char,
    start_key_len: usize,
    end_key: *const c_char,
    end_key_len: usize,
    errptr: *mut *mut c_char,
) {
    let r = guard(|| {
        // SAFETY: `db` and `options` are NULL or live handles (header contract).
        let (db, o) = unsafe { (handle(db, "db")?, handle(options, "write options")?) };
        // SAFETY: each key is NULL or points to its length in bytes (header contract).
        let (start, end) = unsafe {
            (bytes(start_key, start_key_len, "start key")?, bytes(end_key, end_key_len, "end key")?)
        };
        db.db.delete_range_opt(&o.opts, start, end).map_err(err_str)
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ()) }
}

/// Applies `batch` atomically. The batch is not consumed.
#[no_mangle]
pub unsafe extern "C" fn strata_write(
    db: *mut strata_t,
    options: *const strata_writeoptions_t,
    batch: *const strata_writebatch_t,
    errptr: *mut *mut c_char,
) {
    let r = guard(|| {
        // SAFETY: `db`, `options` and `batch` are NULL or live handles (header contract).
        let (db, o, b) =
            unsafe { (handle(db, "db")?, handle(options, "write options")?, handle(batch, "batch")?) };
        if let Some(e) = &b.error {
            return Err(e.clone());
        }
        if b.owner.is_some_and(|owner| !std::ptr::eq(owner, db)) {
            return Err("invalid argument: the batch names a column family of another database".into());
        }
        db.db.write_opt(&o.opts, b.batch.clone()).map_err(err_str)
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ()) }
}

/// Reads `num_keys` keys at one point in time (`Db::multi_get`; RocksDB's `rocksdb_multi_get`).
/// For each `i`: `values_list[i]` is the malloc'd value with its length in `values_list_sizes[i]`,
/// or NULL with length 0 when the key is absent or its read failed, and `errs[i]` is NULL or that
/// read's error. An error of the call itself (a NULL handle or array) goes to every `errs[i]`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn strata_multi_get(
    db: *mut strata_t,
    options: *const strata_readoptions_t,
    num_keys: usize,
    keys_list: *const *const c_char,
    keys_list_sizes: *const usize,
    values_list: *mut *mut c_char,
    values_list_sizes: *mut usize,
    errs: *mut *mut c_char,
) {
    if num_keys == 0 {
        return;
    }
    let outputs = !values_list.is_null() && !values_list_sizes.is_null();
    let r = guard(|| {
        // SAFETY: `db` and `options` are NULL or live handles (header contract).
        let (db, o) = unsafe { (handle(db, "db")?, handle(options, "read options")?) };
        if keys_list.is_null() || keys_list_sizes.is_null() || !outputs || errs.is_null() {
            return Err("invalid argument: an array passed to strata_multi_get is NULL".to_string());
        }
        // SAFETY: non-NULL, and each holds `num_keys` elements (header contract).
        let (ptrs, lens) = unsafe {
            (
                std::slice::from_raw_parts(keys_list, num_keys),
                std::slice::from_raw_parts(keys_list_sizes, num_keys),
            )
        };
        // SAFETY: each key pointer is NULL or points to its length's bytes (header contract).
        let keys = ptrs.iter().zip(lens).map(|(&p, &len)| unsafe { bytes(p, len, "key") });
        let keys: Vec<&[u8]> = keys.collect::<CResult<_>>()?;
        Ok(db.db.multi_get_opt(&o.opts, &keys))
    });
    for i in 0..num_keys {
        let (value, error) = match &r {
            Ok(results) => match &results[i] {
                Ok(Some(v)) => match malloc_copy(v, false) {
                    Some(buf) => ((buf, v.len()), None),
                    None => {
                        ((ptr::null_mut(), 0), Some(format!("out of memory allocating {} bytes", v.len())))
                    }
                },
                Ok(None) => ((ptr::null_mut(), 0), None),
                Err(e) => ((ptr::null_mut(), 0), Some(e.to_string())),
            },
            Err(msg) => ((ptr::null_mut(), 0), Some(msg.clone())),
        };
        if outputs {
            // SAFETY: both arrays are non-NULL and hold `num_keys` writable slots (header).
            unsafe { (*values_list.add(i), *values_list_sizes.add(i)) = value };
        }
        if let (Some(msg), false) = (error, errs.is_null()) {
            // SAFETY: `errs` holds `num_keys` slots, each NULL or a malloc'd message (header).
            unsafe { set_error(errs.add(i), &msg) };
        }
    }
}

/// The value of `key`, malloc'd, with its length in `*vallen`; NULL with `*vallen == 0` when the
/// key is absent or on error.
#[no_mangle]
pub unsafe extern "C" fn strata_get(
    db: *mut strata_t,
    options: *const strata_readoptions_t,
    key: *const c_char,
    keylen: usize,
    vallen: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    let read = || {
        // SAFETY: `db` and `options` are NULL or live handles (header contract).
        let (db, o) = unsafe { (handle(db, "db")?, handle(options, "read options")?) };
        // SAFETY: `key` is NULL or points to `keylen` bytes (header contract).
        let k = unsafe { bytes(key, keylen, "key") }?;
        db.db.get_opt(&o.opts, k).map_err(err_str)
    };
    // SAFETY: `vallen` is NULL or writable; `errptr` as for every call (header contract).
    unsafe { value_out(vallen, errptr, read) }
}

/// Runs the read `read` under the panic guard and returns its value as `strata_get` does:
/// malloc'd with its length in `*vallen`, or NULL with `*vallen == 0` when absent or on error.
///
/// # Safety
/// `vallen` is NULL or writable; `errptr` is NULL or a writable `char*` holding NULL or a
/// malloc'd message.
pub(crate) unsafe fn value_out(
    vallen: *mut usize,
    errptr: *mut *mut c_char,
    read: impl FnOnce() -> CResult<Option<Vec<u8>>>,
) -> *mut c_char {
    // SAFETY: `vallen` is NULL or writable (contract).
    let vallen = unsafe { vallen.as_mut() };
    let r = guard(|| match read()? {
        None => Ok((ptr::null_mut(), 0)),
        Some(v) => {
            let buf = malloc_copy(&v, false)
                .ok_or_else(|| format!("out of memory allocating {} bytes", v.len()))?;
            Ok((buf, v.len()))
        }
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    let (buf, len) = unsafe { finish(errptr, r, (ptr::null_mut(), 0)) };
    match vallen {
        Some(out) => *out = len,
        None if !buf.is_null() => {
            // The caller could not learn the length: do not hand out the buffer.
            // SAFETY: `buf` was malloc'd above and not handed out.
            unsafe { libc::free(buf.cast()) };
            // SAFETY: as above for `errptr`.
            unsafe { set_error(errptr, "invalid argument: vallen is NULL") };
            return ptr::null_mut();
        }
        None => {}
    }
    buf
}

// ---------------------------------------------------------------------------------------------
// Maintenance
// ---------------------------------------------------------------------------------------------

/// Flushes the memtable to an SST file and waits for it.
#[no_mangle]
pub unsafe extern "C" fn strata_flush(db: *mut strata_t, errptr: *mut *mut c_char) {
    let r = guard(|| {
        // SAFETY: `db` is NULL or a live database handle (header contract).
        unsafe { handle(db, "db") }?.db.flush().map_err(err_str)
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ()) }
}

/// Writes an openable copy of the database to the directory `path`, which must not exist
/// (`Db::checkpoint`; RocksDB's `rocksdb_checkpoint_create`).
#[no_mangle]
pub unsafe extern "C" fn strata_checkpoint(db: *mut strata_t, path: *const c_char, errptr: *mut *mut c_char) {
    let r = guard(|| {
        // SAFETY: `db` is NULL or a live database handle (header contract).
        let db = unsafe { handle(db, "db") }?;
        // SAFETY: `path` is NULL or a NUL-terminated string (header contract).
        let path = path_from(unsafe { c_str(path, "path") }?)?;
        db.db.checkpoint(path).map_err(err_str)
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ()) }
}

/// Makes every acknowledged write durable, as if each had been written with `sync` set
/// (RocksDB's `SyncWAL`): fdatasyncs the current WAL and any older one still holding unsynced
/// records.
#[no_mangle]
pub unsafe extern "C" fn strata_sync_wal(db: *mut strata_t, errptr: *mut *mut c_char) {
    let r = guard(|| {
        // SAFETY: `db` is NULL or a live database handle (header contract).
        unsafe { handle(db, "db") }?.db.sync_wal().map_err(err_str)
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ()) }
}

/// Leaves the read-only state a retryable background error (a full disk) put the database in
/// (`Db::resume`; RocksDB's `rocksdb_resume`): retries the failed work and accepts writes again
/// if it succeeds. Does nothing without a background error; sets `errptr` to the error when it
/// is not retryable or the retry fails, and the database stays read-only.
#[no_mangle]
pub unsafe extern "C" fn strata_resume(db: *mut strata_t, errptr: *mut *mut c_char) {
    let r = guard(|| {
        // SAFETY: `db` is NULL or a live database handle (header contract).
        unsafe { handle(db, "db") }?.db.resume().map_err(err_str)
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ()) }
}

/// Waits until no flush or compaction runs or is due (`Db::wait_for_compactions`): 1 once
/// settled, 0 if `timeout_micros` (negative: no limit) passed first or on an error.
#[no_mangle]
pub unsafe extern "C" fn strata_wait_for_compactions(
    db: *mut strata_t,
    timeout_micros: i64,
    errptr: *mut *mut c_char,
) -> u8 {
    let r = guard(|| {
        // SAFETY: `db` is NULL or a live database handle (header contract).
        let db = unsafe { handle(db, "db") }?;
        let timeout = u64::try_from(timeout_micros).ok().map(std::time::Duration::from_micros);
        db.db.wait_for_compactions(timeout).map(u8::from).map_err(err_str)
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, 0) }
}

/// Compacts `[start, limit]`; a NULL `start` or `limit` means unbounded on that side.
#[no_mangle]
pub unsafe extern "C" fn strata_compact_range(
    db: *mut strata_t,
    start_key: *const c_char,
    start_key_len: usize,
    limit_key: *const c_char,
    limit_key_len: usize,
    errptr: *mut *mut c_char,
) {
    let r = guard(|| {
        // SAFETY: `db` is NULL or a live database handle (header contract).
        let db = unsafe { handle(db, "db") }?;
        // SAFETY: each key is NULL or points to its length in bytes (header contract).
        let (start, limit) =
            unsafe { (optional_bytes(start_key, start_key_len), optional_bytes(limit_key, limit_key_len)) };
        db.db.compact_range(start.as_deref(), limit.as_deref()).map_err(err_str)
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ()) }
}

/// The arguments of a `strata_approximate_sizes(_cf)` call after the handles: `num` key ranges
/// `[starts[i], limits[i])` and where their sizes go.
pub(crate) struct SizeRanges {
    pub(crate) num: c_int,
    pub(crate) starts: *const *const c_char,
    pub(crate) start_lens: *const usize,
    pub(crate) limits: *const *const c_char,
    pub(crate) limit_lens: *const usize,
    pub(crate) sizes: *mut u64,
}

impl SizeRanges {
    /// Borrows the ranges.
    ///
    /// # Safety
    /// Each array is NULL or holds `num` elements, and each key pointer is NULL or points to its
    /// length in bytes, all unchanged for `'a`.
    unsafe fn borrow<'a>(&self, num: usize) -> CResult<Vec<Range<&'a [u8]>>> {
        if self.num < 0 {
            return Err("invalid argument: num_ranges is negative".to_string());
        }
        if num == 0 {
            return Ok(Vec::new());
        }
        let arrays =
            [self.starts.cast::<()>(), self.start_lens.cast(), self.limits.cast(), self.limit_lens.cast()];
        if arrays.iter().any(|a| a.is_null()) || self.sizes.is_null() {
            return Err("invalid argument: an array passed to strata_approximate_sizes is NULL".into());
        }
        (0..num)
            .map(|i| {
                // SAFETY: the arrays hold `num` elements and each key its length (contract).
                unsafe {
                    let start = bytes(*self.starts.add(i), *self.start_lens.add(i), "range start key")?;
                    let limit = bytes(*self.limits.add(i), *self.limit_lens.add(i), "range limit key")?;
                    Ok(start..limit)
                }
            })
            .collect()
    }

    /// Runs `sizes_of` on the ranges under the panic guard and writes its sizes out, or 0 for
    /// every range on an error (reported through `errptr`).
    ///
    /// # Safety
    /// As [`SizeRanges::borrow`]; `sizes` is NULL or holds `num` writable slots; `errptr` is NULL
    /// or a writable `char*` holding NULL or a malloc'd message.
    pub(crate) unsafe fn report(
        self,
        errptr: *mut *mut c_char,
        sizes_of: impl FnOnce(&[Range<&[u8]>]) -> CResult<Vec<u64>>,
    ) {
        let num = usize::try_from(self.num).unwrap_or(0);
        // SAFETY: forwarded from this function's contract.
        let r = guard(|| sizes_of(&unsafe { self.borrow(num) }?));
        if !self.sizes.is_null() {
            let out = r.as_deref().unwrap_or_default();
            for i in 0..num {
                // SAFETY: `sizes` holds `num` writable slots (contract).
                unsafe { *self.sizes.add(i) = out.get(i).copied().unwrap_or(0) };
            }
        }
        // SAFETY: forwarded from this function's contract.
        unsafe { finish(errptr, r.map(drop), ()) }
    }
}

/// For each `[range_start_key[i], range_limit_key[i])`, the approximate bytes its keys take on
/// disk in `sizes[i]` (`Db::approximate_sizes`; RocksDB's `rocksdb_approximate_sizes`).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn strata_approximate_sizes(
    db: *mut strata_t,
    num_ranges: c_int,
    range_start_key: *const *const c_char,
    range_start_key_len: *const usize,
    range_limit_key: *const *const c_char,
    range_limit_key_len: *const usize,
    sizes: *mut u64,
    errptr: *mut *mut c_char,
) {
    let ranges = SizeRanges {
        num: num_ranges,
        starts: range_start_key,
        start_lens: range_start_key_len,
        limits: range_limit_key,
        limit_lens: range_limit_key_len,
        sizes,
    };
    let sizes_of = |r: &[Range<&[u8]>]| {
        // SAFETY: `db` is NULL or a live database handle (header contract).
        unsafe { handle(db, "db") }?.db.approximate_sizes(r).map_err(err_str)
    };
    // SAFETY: the arrays, `sizes` and `errptr` are as the header says.
    unsafe { ranges.report(errptr, sizes_of) }
}

/// The value of a named property as a malloc'd NUL-terminated string, or NULL when unknown.
#[no_mangle]
pub unsafe extern "C" fn strata_property_value(db: *mut strata_t, propname: *const c_char) -> *mut c_char {
    guard_or(ptr::null_mut(), || {
        // SAFETY: `db` is NULL or a live database handle (header contract).
        let db = unsafe { handle(db, "db") }?;
        // SAFETY: `propname` is NULL or a NUL-terminated string (header contract).
        let name = unsafe { c_str(propname, "property name") }?;
        let name = name.to_str().map_err(|_| "property name is not UTF-8".to_string())?;
        Ok(db.db.property(name).map_or(ptr::null_mut(), |v| malloc_c_string(&v)))
    })
}
