//! Column families, as RocksDB's c.h has them: `strata_column_family_handle_t`, creating,
//! dropping and listing families, opening with families (`strata_open_column_families`), and the
//! `_cf` variants of reads, writes and maintenance. The `_cf` iterator and batch calls live with
//! their areas (`iter.rs`, `batch.rs`) and use [`family_of`].
//!
//! Owns: the handle type and the check that a handle is used with the database that made it.
//! Must not: keep state beyond the engine's `ColumnFamily` and its database's address; every
//! call maps to one engine call.

use std::ffi::{c_char, c_int, c_void};
use std::ops::Range;
use std::ptr;

use strata_engine::{ColumnFamily, Db, Options};

use crate::db::{strata_t, value_out, SizeRanges};
use crate::options::{strata_options_t, strata_readoptions_t, strata_writeoptions_t};
use crate::util::{
    bytes, c_str, destroy, err_str, finish, guard, guard_or, handle, into_raw, malloc_c_string,
    optional_bytes, path_from, CResult,
};

/// A handle on one column family (`strata_column_family_handle_t`), valid with the database that
/// made it.
pub struct strata_column_family_handle_t {
    pub(crate) cf: ColumnFamily,
    /// The database the handle belongs to, compared by address only (never dereferenced).
    pub(crate) db: *const strata_t,
}

/// The family of `column_family`, checked to belong to `db`.
///
/// # Safety
/// `column_family` is NULL or a live handle from this module.
pub(crate) unsafe fn family_of<'a>(
    db: &strata_t,
    column_family: *const strata_column_family_handle_t,
) -> CResult<&'a ColumnFamily> {
    // SAFETY: forwarded from this function's contract.
    let h = unsafe { handle(column_family, "column family") }?;
    if !std::ptr::eq(h.db, db) {
        return Err("invalid argument: the column family handle belongs to another database".into());
    }
    Ok(&h.cf)
}

fn new_handle(db: &strata_t, cf: ColumnFamily) -> *mut strata_column_family_handle_t {
    into_raw(strata_column_family_handle_t { cf, db })
}

/// The options of a family: `options`, whose setters' deferred errors are reported here.
fn family_options(o: &strata_options_t) -> CResult<Options> {
    o.deferred_error()?;
    Ok(o.opts.clone())
}

// ---------------------------------------------------------------------------------------------
// Handles, create, drop, list, open
// ---------------------------------------------------------------------------------------------

/// Creates the column family `column_family_name` with its own `column_family_options`
/// (`Db::create_cf`; RocksDB's `rocksdb_create_column_family`). NULL on error.
#[no_mangle]
pub unsafe extern "C" fn strata_create_column_family(
    db: *mut strata_t,
    column_family_options: *const strata_options_t,
    column_family_name: *const c_char,
    errptr: *mut *mut c_char,
) -> *mut strata_column_family_handle_t {
    let r = guard(|| {
        // SAFETY: `db` and `column_family_options` are NULL or live handles (header contract).
        let (db, o) = unsafe { (handle(db, "db")?, handle(column_family_options, "options")?) };
        // SAFETY: `column_family_name` is NULL or a NUL-terminated string (header contract).
        let name = unsafe { c_str(column_family_name, "column family name") }?;
        let name = name.to_str().map_err(|_| "invalid argument: column family name is not UTF-8")?;
        let cf = db.db.create_cf(name, family_options(o)?).map_err(err_str)?;
        Ok(new_handle(db, cf))
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ptr::null_mut()) }
}

/// Drops the family of `handle` (`Db::drop_cf`); the handle stays to be destroyed.
#[no_mangle]
pub unsafe extern "C" fn strata_drop_column_family(
    db: *mut strata_t,
    handle: *mut strata_column_family_handle_t,
    errptr: *mut *mut c_char,
) {
    let column_family = handle;
    let r = guard(|| {
        // SAFETY: `db` is NULL or a live database handle (header contract).
        let db = unsafe { crate::util::handle(db, "db") }?;
        // SAFETY: `column_family` is NULL or a live family handle (header contract).
        let cf = unsafe { family_of(db, column_family) }?;
        db.db.drop_cf(cf).map_err(err_str)
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ()) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_column_family_handle_destroy(handle: *mut strata_column_family_handle_t) {
    // SAFETY: `handle` is NULL or from this module, not used again (header contract).
    unsafe { destroy(handle) }
}

/// The handle of the default column family of `db`; NULL only if `db` is NULL.
#[no_mangle]
pub unsafe extern "C" fn strata_get_default_column_family_handle(
    db: *mut strata_t,
) -> *mut strata_column_family_handle_t {
    guard_or(ptr::null_mut(), || {
        // SAFETY: `db` is NULL or a live database handle (header contract).
        let db = unsafe { handle(db, "db") }?;
        Ok(new_handle(db, db.db.default_cf()))
    })
}

/// The family's name, malloc'd and NUL-terminated, its length in `*name_len`; NULL if `handle`
/// is NULL.
#[no_mangle]
pub unsafe extern "C" fn strata_column_family_handle_get_name(
    handle: *const strata_column_family_handle_t,
    name_len: *mut usize,
) -> *mut c_char {
    let column_family = handle;
    let name = guard_or(ptr::null_mut(), || {
        // SAFETY: `column_family` is NULL or a live family handle (header contract).
        let h = unsafe { crate::util::handle(column_family, "column family") }?;
        if !name_len.is_null() {
            // SAFETY: `name_len` is NULL or writable (header contract).
            unsafe { *name_len = h.cf.name().len() };
        }
        Ok(malloc_c_string(h.cf.name()))
    });
    if name.is_null() && !name_len.is_null() {
        // SAFETY: as above.
        unsafe { *name_len = 0 };
    }
    name
}

/// The names of the column families of the database `name`, read without opening it
/// (`Db::list_cf`): a malloc'd array of `*lencf` malloc'd NUL-terminated names, freed with
/// `strata_list_column_families_destroy`. NULL with `*lencf == 0` on error.
#[no_mangle]
pub unsafe extern "C" fn strata_list_column_families(
    options: *const strata_options_t,
    name: *const c_char,
    lencf: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut *mut c_char {
    let r = guard(|| {
        if lencf.is_null() {
            return Err("invalid argument: lencf is NULL".to_string());
        }
        // SAFETY: `options` is NULL or a live options handle (header contract).
        let o = unsafe { handle(options, "options") }?;
        // SAFETY: `name` is NULL or a NUL-terminated string (header contract).
        let path = path_from(unsafe { c_str(name, "name") }?)?;
        let names = Db::list_cf(path, o.opts.clone()).map_err(err_str)?;
        Ok((malloc_names(&names)?, names.len()))
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    let (list, len) = unsafe { finish(errptr, r, (ptr::null_mut(), 0)) };
    if !lencf.is_null() {
        // SAFETY: `lencf` is non-NULL and writable (header contract).
        unsafe { *lencf = len };
    }
    list
}

/// A malloc'd array of malloc'd copies of `names`; nothing is left allocated on failure.
fn malloc_names(names: &[String]) -> CResult<*mut *mut c_char> {
    let oom = || "out of memory listing column families".to_string();
    // SAFETY: malloc has no preconditions; the result is checked for NULL below.
    let list = unsafe { libc::malloc(std::mem::size_of::<*mut c_char>() * names.len().max(1)) };
    let list = list.cast::<*mut c_char>();
    if list.is_null() {
        return Err(oom());
    }
    for (i, name) in names.iter().enumerate() {
        let copy = malloc_c_string(name);
        if copy.is_null() {
            // SAFETY: the first `i` entries were set below; `list` has room for all of them.
            unsafe { strata_list_column_families_destroy(list, i) };
            return Err(oom());
        }
        // SAFETY: `list` holds `names.len()` slots and `i < names.len()`.
        unsafe { *list.add(i) = copy };
    }
    Ok(list)
}

/// Frees a list from `strata_list_column_families` and its `len` names. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn strata_list_column_families_destroy(list: *mut *mut c_char, len: usize) {
    if list.is_null() {
        return;
    }
    for i in 0..len {
        // SAFETY: `list` holds `len` malloc'd names (header contract).
        unsafe { libc::free((*list.add(i)).cast::<c_void>()) };
    }
    // SAFETY: `list` was malloc'd by `strata_list_column_families` (header contract).
    unsafe { libc::free(list.cast::<c_void>()) };
}

/// The `(name, options)` pairs of `strata_open_column_families`' arrays.
///
/// # Safety
/// `names` and `cf_options` hold `num` elements each, as the header says.
unsafe fn named_families(
    num: usize,
    names: *const *const c_char,
    cf_options: *const *const strata_options_t,
    db_opts: &Options,
) -> CResult<Vec<(String, Options)>> {
    if num > 0 && (names.is_null() || cf_options.is_null()) {
        return Err("invalid argument: an array passed to strata_open_column_families is NULL".into());
    }
    let mut named = Vec::with_capacity(num);
    for i in 0..num {
        // SAFETY: both arrays hold `num` elements (contract).
        let (name, o) = unsafe { (*names.add(i), *cf_options.add(i)) };
        // SAFETY: each name is NULL or a NUL-terminated string (contract).
        let name = unsafe { c_str(name, "column family name") }?;
        let name = name.to_str().map_err(|_| "invalid argument: column family name is not UTF-8")?;
        // SAFETY: each options pointer is NULL or a live options handle (contract).
        let opts = match unsafe { o.as_ref() } {
            Some(o) => family_options(o)?,
            None => db_opts.clone(),
        };
        named.push((name.to_string(), opts));
    }
    Ok(named)
}

/// Opens the database `name` with the column families `column_family_names[i]`, each with
/// `column_family_options[i]` (NULL: `options`), and stores a handle on each in
/// `column_family_handles[i]` (`Db::open_cf`; RocksDB's `rocksdb_open_column_families`). NULL on
/// error, with every handle slot set to NULL.
#[no_mangle]
pub unsafe extern "C" fn strata_open_column_families(
    options: *const strata_options_t,
    name: *const c_char,
    num_column_families: c_int,
    column_family_names: *const *const c_char,
    column_family_options: *const *const strata_options_t,
    column_family_handles: *mut *mut strata_column_family_handle_t,
    errptr: *mut *mut c_char,
) -> *mut strata_t {
    let num = usize::try_from(num_column_families).unwrap_or(0);
    let r = guard(|| {
        if num_column_families < 0 {
            return Err("invalid argument: num_column_families is negative".to_string());
        }
        if num > 0 && column_family_handles.is_null() {
            return Err("invalid argument: column_family_handles is NULL".to_string());
        }
        // SAFETY: `options` is NULL or a live options handle (header contract).
        let o = unsafe { handle(options, "options") }?;
        // SAFETY: `name` is NULL or a NUL-terminated string (header contract).
        let path = path_from(unsafe { c_str(name, "name") }?)?;
        o.deferred_error()?;
        // SAFETY: the arrays hold `num` elements (header contract).
        let named = unsafe { named_families(num, column_family_names, column_family_options, &o.opts) }?;
        let db = Db::open_cf(path, o.opts.clone(), named.iter().cloned()).map_err(err_str)?;
        let db = into_raw(strata_t { db });
        // SAFETY: `db` was just made by `into_raw` and is not shared yet.
        let db_ref = unsafe { &*db };
        for (i, (name, _)) in named.iter().enumerate() {
            let h = db_ref.db.cf(name).map_or(ptr::null_mut(), |cf| new_handle(db_ref, cf));
            // SAFETY: `column_family_handles` holds `num` writable slots (header contract).
            unsafe { *column_family_handles.add(i) = h };
        }
        Ok(db)
    });
    if r.is_err() && !column_family_handles.is_null() {
        for i in 0..num {
            // SAFETY: `column_family_handles` holds `num` writable slots (header contract).
            unsafe { *column_family_handles.add(i) = ptr::null_mut() };
        }
    }
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ptr::null_mut()) }
}

// ---------------------------------------------------------------------------------------------
// Reads, writes and maintenance in one family
// ---------------------------------------------------------------------------------------------

/// Runs `f` on the database and family of a `_cf` call under the panic guard and reports its
/// error through `errptr`.
///
/// # Safety
/// `db` and `column_family` are NULL or live handles; `errptr` is NULL or a writable `char*`
/// holding NULL or a malloc'd message.
unsafe fn in_family(
    db: *mut strata_t,
    column_family: *const strata_column_family_handle_t,
    errptr: *mut *mut c_char,
    f: impl FnOnce(&Db, &ColumnFamily) -> CResult<()>,
) {
    let r = guard(|| {
        // SAFETY: forwarded from this function's contract.
        let db = unsafe { handle(db, "db") }?;
        // SAFETY: forwarded from this function's contract.
        let cf = unsafe { family_of(db, column_family) }?;
        f(&db.db, cf)
    });
    // SAFETY: forwarded from this function's contract.
    unsafe { finish(errptr, r, ()) }
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn strata_put_cf(
    db: *mut strata_t,
    options: *const strata_writeoptions_t,
    column_family: *mut strata_column_family_handle_t,
    key: *const c_char,
    keylen: usize,
    val: *const c_char,
    vallen: usize,
    errptr: *mut *mut c_char,
) {
    let op = |db: &Db, cf: &ColumnFamily| {
        // SAFETY: `options` is NULL or a live handle (header contract).
        let o = unsafe { handle(options, "write options") }?;
        // SAFETY: `key`/`val` are NULL or point to `keylen`/`vallen` bytes (header contract).
        let (k, v) = unsafe { (bytes(key, keylen, "key")?, bytes(val, vallen, "value")?) };
        db.put_cf_opt(cf, &o.opts, k, v).map_err(err_str)
    };
    // SAFETY: the handles and `errptr` are as the header says.
    unsafe { in_family(db, column_family, errptr, op) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_delete_cf(
    db: *mut strata_t,
    options: *const strata_writeoptions_t,
    column_family: *mut strata_column_family_handle_t,
    key: *const c_char,
    keylen: usize,
    errptr: *mut *mut c_char,
) {
    let op = |db: &Db, cf: &ColumnFamily| {
        // SAFETY: `options` is NULL or a live handle (header contract).
        let o = unsafe { handle(options, "write options") }?;
        // SAFETY: `key` is NULL or points to `keylen` bytes (header contract).
        let k = unsafe { bytes(key, keylen, "key") }?;
        db.delete_cf_opt(cf, &o.opts, k).map_err(err_str)
    };
    // SAFETY: the handles and `errptr` are as the header says.
    unsafe { in_family(db, column_family, errptr, op) }
}

/// As `strata_delete_range`, in the family `column_family` (RocksDB's `rocksdb_delete_range_cf`).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn strata_delete_range_cf(
    db: *mut strata_t,
    options: *const strata_writeoptions_t,
    column_family: *mut strata_column_family_handle_t,
    start_key: *const c_char,
    start_key_len: usize,
    end_key: *const c_char,
    end_key_len: usize,
    errptr: *mut *mut c_char,
) {
    let op = |db: &Db, cf: &ColumnFamily| {
        // SAFETY: `options` is NULL or a live handle (header contract).
        let o = unsafe { handle(options, "write options") }?;
        // SAFETY: each key is NULL or points to its length in bytes (header contract).
        let (start, end) = unsafe {
            (bytes(start_key, start_key_len, "start key")?, bytes(end_key, end_key_len, "end key")?)
        };
        db.delete_range_cf_opt(cf, &o.opts, start, end).map_err(err_str)
    };
    // SAFETY: the handles and `errptr` are as the header says.
    unsafe { in_family(db, column_family, errptr, op) }
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn strata_merge_cf(
    db: *mut strata_t,
    options: *const strata_writeoptions_t,
    column_family: *mut strata_column_family_handle_t,
    key: *const c_char,
    keylen: usize,
    val: *const c_char,
    vallen: usize,
    errptr: *mut *mut c_char,
) {
    let op = |db: &Db, cf: &ColumnFamily| {
        // SAFETY: `options` is NULL or a live handle (header contract).
        let o = unsafe { handle(options, "write options") }?;
        // SAFETY: `key`/`val` are NULL or point to `keylen`/`vallen` bytes (header contract).
        let (k, v) = unsafe { (bytes(key, keylen, "key")?, bytes(val, vallen, "operand")?) };
        db.merge_cf_opt(cf, &o.opts, k, v).map_err(err_str)
    };
    // SAFETY: the handles and `errptr` are as the header says.
    unsafe { in_family(db, column_family, errptr, op) }
}

/// As `strata_get`, in the column family `column_family`.
#[no_mangle]
pub unsafe extern "C" fn strata_get_cf(
    db: *mut strata_t,
    options: *const strata_readoptions_t,
    column_family: *mut strata_column_family_handle_t,
    key: *const c_char,
    keylen: usize,
    vallen: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    let read = || {
        // SAFETY: `db` and `options` are NULL or live handles (header contract).
        let (db, o) = unsafe { (handle(db, "db")?, handle(options, "read options")?) };
        // SAFETY: `column_family` is NULL or a live family handle (header contract).
        let cf = unsafe { family_of(db, column_family) }?;
        // SAFETY: `key` is NULL or points to `keylen` bytes (header contract).
        let k = unsafe { bytes(key, keylen, "key") }?;
        db.db.get_cf_opt(cf, &o.opts, k).map_err(err_str)
    };
    // SAFETY: `vallen` is NULL or writable; `errptr` as for every call (header contract).
    unsafe { value_out(vallen, errptr, read) }
}

/// Flushes the memtable of `column_family` and waits for it (`Db::flush_cf`).
#[no_mangle]
pub unsafe extern "C" fn strata_flush_cf(
    db: *mut strata_t,
    column_family: *mut strata_column_family_handle_t,
    errptr: *mut *mut c_char,
) {
    // SAFETY: the handles and `errptr` are as the header says.
    unsafe { in_family(db, column_family, errptr, |db, cf| db.flush_cf(cf).map_err(err_str)) }
}

/// Compacts `[start, limit]` of `column_family`; a NULL key is unbounded on that side.
#[no_mangle]
pub unsafe extern "C" fn strata_compact_range_cf(
    db: *mut strata_t,
    column_family: *mut strata_column_family_handle_t,
    start_key: *const c_char,
    start_key_len: usize,
    limit_key: *const c_char,
    limit_key_len: usize,
    errptr: *mut *mut c_char,
) {
    let op = |db: &Db, cf: &ColumnFamily| {
        // SAFETY: each key is NULL or points to its length in bytes (header contract).
        let (start, limit) =
            unsafe { (optional_bytes(start_key, start_key_len), optional_bytes(limit_key, limit_key_len)) };
        db.compact_range_cf(cf, start.as_deref(), limit.as_deref()).map_err(err_str)
    };
    // SAFETY: the handles and `errptr` are as the header says.
    unsafe { in_family(db, column_family, errptr, op) }
}

/// As `strata_approximate_sizes`, in the column family `column_family`
/// (`Db::approximate_sizes_cf`; RocksDB's `rocksdb_approximate_sizes_cf`).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn strata_approximate_sizes_cf(
    db: *mut strata_t,
    column_family: *mut strata_column_family_handle_t,
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
        let db = unsafe { handle(db, "db") }?;
        // SAFETY: `column_family` is NULL or a live family handle (header contract).
        let cf = unsafe { family_of(db, column_family) }?;
        db.db.approximate_sizes_cf(cf, r).map_err(err_str)
    };
    // SAFETY: the arrays, `sizes` and `errptr` are as the header says.
    unsafe { ranges.report(errptr, sizes_of) }
}
