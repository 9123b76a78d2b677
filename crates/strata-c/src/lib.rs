//! The C API of strata: `libstrata.so` / `libstrata.a` with the hand-kept header
//! `include/strata.h`. It follows LevelDB's `c.h` conventions under a `strata_` prefix: opaque
//! handles, `(const char* ptr, size_t len)` pairs, a trailing `char** errptr` on every fallible
//! call, `uint8_t` booleans and malloc'd results freed by the caller with `strata_free`.
//!
//! Rules every exported function keeps:
//! - no panic unwinds into C: bodies run under [`guard`] (`catch_unwind`), and a panic becomes an
//!   error message (or is swallowed where the call has no `errptr`);
//! - a NULL handle never crashes: it is an error where there is an `errptr`, otherwise a no-op;
//! - `*errptr` is left untouched on success and, on error, set to a malloc'd NUL-terminated
//!   message after freeing any message it already held (as LevelDB does).
//!
//! The contracts on pointer arguments are documented in `include/strata.h`, not repeated here.

#![warn(clippy::undocumented_unsafe_blocks)]
#![allow(non_camel_case_types)]
// The `# Safety` contract of every exported function is the header's documentation.
#![allow(clippy::missing_safety_doc)]

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::PathBuf;
use std::ptr;

use strata_engine::internal::util::panics::catch_panic;
use strata_engine::{merge, Compression, Db, DbIterator, Options, ReadOptions, Snapshot, WriteBatch};
use strata_engine::{Error, WriteOptions};

// ---------------------------------------------------------------------------------------------
// Handles
// ---------------------------------------------------------------------------------------------

/// An open database (`strata_t`).
pub struct strata_t {
    db: Db,
}

/// Open options (`strata_options_t`). Setters cannot fail, so a bad value is remembered per
/// option and reported by `strata_open`.
pub struct strata_options_t {
    opts: Options,
    errors: BTreeMap<&'static str, String>,
}

/// Read options (`strata_readoptions_t`).
pub struct strata_readoptions_t {
    opts: ReadOptions,
}

/// Write options (`strata_writeoptions_t`).
pub struct strata_writeoptions_t {
    opts: WriteOptions,
}

/// A write batch (`strata_writebatch_t`). A bad argument to a batch call is remembered and
/// reported by `strata_write`.
pub struct strata_writebatch_t {
    batch: WriteBatch,
    error: Option<String>,
}

/// An iterator (`strata_iterator_t`); holds an error instead when it could not be created or an
/// internal error (panic) broke it.
pub struct strata_iterator_t {
    iter: Result<DbIterator, String>,
}

/// A snapshot (`strata_snapshot_t`).
pub struct strata_snapshot_t {
    snap: Snapshot,
}

type CResult<T> = Result<T, String>;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Runs `f`, turning a panic into an error message.
fn guard<T>(f: impl FnOnce() -> CResult<T>) -> CResult<T> {
    catch_panic(f).unwrap_or_else(|what| Err(format!("internal error (panic): {what}")))
}

/// Runs `f` where there is no `errptr`: a panic or an error gives `fallback`.
fn guard_or<T>(fallback: T, f: impl FnOnce() -> CResult<T>) -> T {
    guard(f).unwrap_or(fallback)
}

fn err_str(e: Error) -> String {
    e.to_string()
}

/// Copies `bytes` into a `malloc`'d buffer, plus a NUL when `nul` is set. Never returns NULL for
/// a successful copy, even of zero bytes. `None` when malloc fails.
fn malloc_copy(bytes: &[u8], nul: bool) -> Option<*mut c_char> {
    let size = (bytes.len() + usize::from(nul)).max(1);
    // SAFETY: malloc has no preconditions; the result is checked for NULL below.
    let buf = unsafe { libc::malloc(size) }.cast::<u8>();
    if buf.is_null() {
        return None;
    }
    // SAFETY: `buf` is a fresh allocation of at least `bytes.len()` bytes, so it cannot overlap
    // `bytes`.
    unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), buf, bytes.len()) };
    if nul {
        // SAFETY: `size == bytes.len() + 1`, so index `bytes.len()` is inside the allocation.
        unsafe { *buf.add(bytes.len()) = 0 };
    }
    Some(buf.cast())
}

/// A malloc'd NUL-terminated copy of `s` with any interior NUL replaced, or NULL if out of memory.
fn malloc_c_string(s: &str) -> *mut c_char {
    let cleaned: Vec<u8> = s.bytes().map(|b| if b == 0 { b' ' } else { b }).collect();
    malloc_copy(&cleaned, true).unwrap_or(ptr::null_mut())
}

/// Stores `msg` in `*errptr` (freeing an earlier message first), unless `errptr` is NULL.
///
/// # Safety
/// `errptr` is NULL or points to a writable `char*` that is NULL or was malloc'd.
unsafe fn set_error(errptr: *mut *mut c_char, msg: &str) {
    if errptr.is_null() {
        return;
    }
    // SAFETY: `errptr` is non-NULL and writable by this function's contract.
    let slot = unsafe { &mut *errptr };
    if !slot.is_null() {
        // SAFETY: a non-NULL `*errptr` is a malloc'd message by this function's contract.
        unsafe { libc::free(slot.cast::<c_void>()) };
    }
    *slot = malloc_c_string(msg);
}

/// Returns the value of `r`, or reports its error through `errptr` and returns `fallback`.
///
/// # Safety
/// As for [`set_error`].
unsafe fn finish<T>(errptr: *mut *mut c_char, r: CResult<T>, fallback: T) -> T {
    match r {
        Ok(v) => v,
        Err(msg) => {
            // SAFETY: forwarded from this function's contract.
            unsafe { set_error(errptr, &msg) };
            fallback
        }
    }
}

/// Borrows a handle, or an error naming the argument when it is NULL.
///
/// # Safety
/// `p` is NULL or points to a live `T` not mutated elsewhere for `'a`.
unsafe fn handle<'a, T>(p: *const T, what: &str) -> CResult<&'a T> {
    // SAFETY: forwarded from this function's contract.
    unsafe { p.as_ref() }.ok_or_else(|| format!("invalid argument: {what} is NULL"))
}

/// Mutably borrows a handle, or an error naming the argument when it is NULL.
///
/// # Safety
/// `p` is NULL or points to a live `T` not accessed elsewhere for `'a`.
unsafe fn handle_mut<'a, T>(p: *mut T, what: &str) -> CResult<&'a mut T> {
    // SAFETY: forwarded from this function's contract.
    unsafe { p.as_mut() }.ok_or_else(|| format!("invalid argument: {what} is NULL"))
}

/// Borrows a `(ptr, len)` pair. NULL with length 0 is the empty slice.
///
/// # Safety
/// `ptr` is NULL or points to `len` readable bytes that stay unchanged for `'a`.
unsafe fn bytes<'a>(ptr: *const c_char, len: usize, what: &str) -> CResult<&'a [u8]> {
    if ptr.is_null() {
        return if len == 0 {
            Ok(&[])
        } else {
            Err(format!("invalid argument: {what} is NULL with length {len}"))
        };
    }
    // SAFETY: non-NULL and `len` readable bytes by this function's contract.
    Ok(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
}

/// Borrows a NUL-terminated string.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that stays unchanged for `'a`.
unsafe fn c_str<'a>(p: *const c_char, what: &str) -> CResult<&'a CStr> {
    if p.is_null() {
        return Err(format!("invalid argument: {what} is NULL"));
    }
    // SAFETY: non-NULL and NUL-terminated by this function's contract.
    Ok(unsafe { CStr::from_ptr(p) })
}

/// Frees a boxed handle, swallowing a panic from its destructor.
///
/// # Safety
/// `p` is NULL or came from `Box::into_raw` and is not used again.
unsafe fn destroy<T>(p: *mut T) {
    if p.is_null() {
        return;
    }
    // SAFETY: `p` came from `Box::into_raw` and ownership returns here (contract).
    let boxed = unsafe { Box::from_raw(p) };
    let _ = guard(move || {
        drop(boxed);
        Ok(())
    });
}

fn into_raw<T>(v: T) -> *mut T {
    Box::into_raw(Box::new(v))
}

// ---------------------------------------------------------------------------------------------
// Memory and version
// ---------------------------------------------------------------------------------------------

/// Frees a buffer or error message returned by this library. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn strata_free(ptr: *mut c_void) {
    // SAFETY: the caller passes NULL or a pointer this library malloc'd (header contract).
    unsafe { libc::free(ptr) }
}

/// The library version as a static NUL-terminated string (do not free).
#[no_mangle]
pub extern "C" fn strata_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------

/// New open options with strata's defaults.
#[no_mangle]
pub extern "C" fn strata_options_create() -> *mut strata_options_t {
    guard_or(ptr::null_mut(), || {
        Ok(into_raw(strata_options_t { opts: Options::default(), errors: BTreeMap::new() }))
    })
}

/// Options read from an options file (the INI layout of `OPTIONS-NNNNNN`); NULL and `*errptr`
/// set on error (an unknown option names its line).
#[no_mangle]
pub unsafe extern "C" fn strata_options_load(
    path: *const c_char,
    errptr: *mut *mut c_char,
) -> *mut strata_options_t {
    let r = guard(|| {
        // SAFETY: `path` is NULL or a NUL-terminated string (header contract).
        let path = path_from(unsafe { c_str(path, "path") }?)?;
        let opts = Options::load(path).map_err(err_str)?;
        Ok(into_raw(strata_options_t { opts, errors: BTreeMap::new() }))
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ptr::null_mut()) }
}

/// The options the database in directory `name` was last opened with (its newest
/// `OPTIONS-NNNNNN`); NULL and `*errptr` set on error.
#[no_mangle]
pub unsafe extern "C" fn strata_options_load_latest(
    name: *const c_char,
    errptr: *mut *mut c_char,
) -> *mut strata_options_t {
    let r = guard(|| {
        // SAFETY: `name` is NULL or a NUL-terminated string (header contract).
        let dir = path_from(unsafe { c_str(name, "name") }?)?;
        let opts = Options::load_latest(dir).map_err(err_str)?;
        Ok(into_raw(strata_options_t { opts, errors: BTreeMap::new() }))
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ptr::null_mut()) }
}

/// Frees open options.
#[no_mangle]
pub unsafe extern "C" fn strata_options_destroy(options: *mut strata_options_t) {
    // SAFETY: `options` is NULL or from `strata_options_create`, not used again (header).
    unsafe { destroy(options) }
}

/// Applies `f` to the options, if `options` is not NULL.
///
/// # Safety
/// `options` is NULL or a live handle from `strata_options_create`.
unsafe fn with_options(options: *mut strata_options_t, f: impl FnOnce(&mut strata_options_t)) {
    // SAFETY: forwarded from this function's contract.
    let Ok(o) = (unsafe { handle_mut(options, "options") }) else { return };
    guard_or((), || {
        f(o);
        Ok(())
    });
}

/// Records (or with `None`, clears) a deferred error for option `name`.
fn set_option_error(o: &mut strata_options_t, name: &'static str, error: Option<String>) {
    match error {
        Some(e) => o.errors.insert(name, e),
        None => o.errors.remove(name),
    };
}

#[no_mangle]
pub unsafe extern "C" fn strata_options_set_create_if_missing(options: *mut strata_options_t, v: u8) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe { with_options(options, |o| o.opts.create_if_missing = v != 0) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_options_set_error_if_exists(options: *mut strata_options_t, v: u8) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe { with_options(options, |o| o.opts.error_if_exists = v != 0) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_options_set_write_buffer_size(options: *mut strata_options_t, v: usize) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe { with_options(options, |o| o.opts.write_buffer_size = v) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_options_set_cache_size(options: *mut strata_options_t, v: usize) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe { with_options(options, |o| o.opts.cache_size = v) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_options_set_block_size(options: *mut strata_options_t, v: usize) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe { with_options(options, |o| o.opts.block_size = v) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_options_set_max_open_files(options: *mut strata_options_t, v: c_int) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe {
        with_options(options, |o| match usize::try_from(v) {
            Ok(n) => {
                o.opts.max_open_files = n;
                set_option_error(o, "max_open_files", None);
            }
            Err(_) => set_option_error(o, "max_open_files", Some(format!("must not be negative, got {v}"))),
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn strata_options_set_bloom_bits_per_key(options: *mut strata_options_t, v: c_int) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe {
        with_options(options, |o| match u32::try_from(v) {
            Ok(n) => {
                o.opts.bloom_bits_per_key = n;
                set_option_error(o, "bloom_bits_per_key", None);
            }
            Err(_) => {
                set_option_error(o, "bloom_bits_per_key", Some(format!("must not be negative, got {v}")))
            }
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn strata_options_set_compression(options: *mut strata_options_t, v: c_int) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe {
        with_options(options, |o| match u8::try_from(v).ok().and_then(Compression::from_u8) {
            Some(c) => {
                o.opts.set_compression(c);
                set_option_error(o, "compression", None);
            }
            None => set_option_error(
                o,
                "compression",
                Some(format!("unknown value {v} (expected 0 none, 1 snappy, 2 lz4 or 3 zstd)")),
            ),
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn strata_options_set_min_blob_size(options: *mut strata_options_t, v: usize) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe { with_options(options, |o| o.opts.min_blob_size = v) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_options_set_sync_gather_micros(options: *mut strata_options_t, v: u32) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe { with_options(options, |o| o.opts.sync_gather_micros = v) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_options_set_write_spin_micros(options: *mut strata_options_t, v: u32) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe { with_options(options, |o| o.opts.write_spin_micros = v) }
}

/// Sets options by name from `key=value;key=value` ([`Options::with_option_string`]); on error the
/// options are left as they were.
#[no_mangle]
pub unsafe extern "C" fn strata_options_set_from_string(
    options: *mut strata_options_t,
    text: *const c_char,
    errptr: *mut *mut c_char,
) {
    let r = guard(|| {
        // SAFETY: `options` is NULL or a live options handle (header contract).
        let o = unsafe { handle_mut(options, "options") }?;
        // SAFETY: `text` is NULL or a NUL-terminated string (header contract).
        let text = unsafe { c_str(text, "options text") }?
            .to_str()
            .map_err(|_| "invalid argument: options text is not UTF-8".to_string())?;
        o.opts = o.opts.clone().with_option_string(text).map_err(err_str)?;
        // The options the text set replace an earlier setter's deferred error for them.
        for key in text.split(';').filter_map(|pair| pair.split_once('=')).map(|(k, _)| k.trim()) {
            o.errors.remove(key);
        }
        Ok(())
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ()) }
}

/// Sets a built-in merge operator by name (`uint64add`, `stringappend`).
#[no_mangle]
pub unsafe extern "C" fn strata_options_set_merge_operator_builtin(
    options: *mut strata_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) {
    let r = guard(|| {
        // SAFETY: `options` is NULL or a live options handle (header contract).
        let o = unsafe { handle_mut(options, "options") }?;
        // SAFETY: `name` is NULL or a NUL-terminated string (header contract).
        let name = unsafe { c_str(name, "merge operator name") }?.to_string_lossy();
        let op = merge::builtin(&name).ok_or_else(|| {
            format!("invalid argument: unknown merge operator {name:?} (expected uint64add or stringappend)")
        })?;
        o.opts.merge_operator = Some(op);
        Ok(())
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ()) }
}

// ---------------------------------------------------------------------------------------------
// Open and close
// ---------------------------------------------------------------------------------------------

#[cfg(unix)]
fn path_from(name: &CStr) -> CResult<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    Ok(PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes())))
}

#[cfg(not(unix))]
fn path_from(name: &CStr) -> CResult<PathBuf> {
    name.to_str().map(PathBuf::from).map_err(|_| "invalid argument: path is not UTF-8".to_string())
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
        if let Some((opt, e)) = o.errors.iter().next() {
            return Err(format!("invalid argument: {opt}: {e}"));
        }
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
        if let Some((opt, e)) = o.errors.iter().next() {
            return Err(format!("invalid argument: {opt}: {e}"));
        }
        Db::repair(&path, o.opts.clone()).map(drop).map_err(err_str)
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
        db.db.put(&o.opts, k, v).map_err(err_str)
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
        db.db.delete(&o.opts, k).map_err(err_str)
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
        db.db.merge(&o.opts, k, v).map_err(err_str)
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
        db.db.write(&o.opts, b.batch.clone()).map_err(err_str)
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
        Ok(db.db.multi_get(&o.opts, &keys))
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
    // SAFETY: `vallen` is NULL or writable (header contract).
    let vallen = unsafe { vallen.as_mut() };
    let r = guard(|| {
        // SAFETY: `db` and `options` are NULL or live handles (header contract).
        let (db, o) = unsafe { (handle(db, "db")?, handle(options, "read options")?) };
        // SAFETY: `key` is NULL or points to `keylen` bytes (header contract).
        let k = unsafe { bytes(key, keylen, "key") }?;
        match db.db.get(&o.opts, k).map_err(err_str)? {
            None => Ok((ptr::null_mut(), 0)),
            Some(v) => {
                let buf = malloc_copy(&v, false)
                    .ok_or_else(|| format!("out of memory allocating {} bytes", v.len()))?;
                Ok((buf, v.len()))
            }
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
// Write batches
// ---------------------------------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn strata_writebatch_create() -> *mut strata_writebatch_t {
    guard_or(ptr::null_mut(), || Ok(into_raw(strata_writebatch_t { batch: WriteBatch::new(), error: None })))
}

#[no_mangle]
pub unsafe extern "C" fn strata_writebatch_destroy(batch: *mut strata_writebatch_t) {
    // SAFETY: `batch` is NULL or from `strata_writebatch_create`, not used again (header).
    unsafe { destroy(batch) }
}

/// Applies `f` to the batch if `batch` is not NULL; an error from `f` (or a panic) is remembered
/// in the batch and reported by `strata_write`.
///
/// # Safety
/// `batch` is NULL or a live handle from `strata_writebatch_create`.
unsafe fn with_batch(batch: *mut strata_writebatch_t, f: impl FnOnce(&mut WriteBatch) -> CResult<()>) {
    // SAFETY: forwarded from this function's contract.
    let Ok(b) = (unsafe { handle_mut(batch, "batch") }) else { return };
    if let Err(e) = guard(|| f(&mut b.batch)) {
        b.error.get_or_insert(e);
    }
}

#[no_mangle]
pub unsafe extern "C" fn strata_writebatch_clear(batch: *mut strata_writebatch_t) {
    // SAFETY: `batch` is NULL or a live batch handle (header contract).
    let Ok(b) = (unsafe { handle_mut(batch, "batch") }) else { return };
    guard_or((), || {
        b.batch.clear();
        b.error = None;
        Ok(())
    });
}

/// Number of operations in the batch (0 for NULL).
#[no_mangle]
pub unsafe extern "C" fn strata_writebatch_count(batch: *const strata_writebatch_t) -> c_int {
    // SAFETY: `batch` is NULL or a live batch handle (header contract).
    let Ok(b) = (unsafe { handle(batch, "batch") }) else { return 0 };
    c_int::try_from(b.batch.len()).unwrap_or(c_int::MAX)
}

#[no_mangle]
pub unsafe extern "C" fn strata_writebatch_put(
    batch: *mut strata_writebatch_t,
    key: *const c_char,
    keylen: usize,
    val: *const c_char,
    vallen: usize,
) {
    let op = |b: &mut WriteBatch| {
        // SAFETY: `key`/`val` are NULL or point to `keylen`/`vallen` bytes (header contract).
        let (k, v) = unsafe { (bytes(key, keylen, "key")?, bytes(val, vallen, "value")?) };
        b.put(k, v);
        Ok(())
    };
    // SAFETY: `batch` is NULL or a live batch handle (header contract).
    unsafe { with_batch(batch, op) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_writebatch_delete(
    batch: *mut strata_writebatch_t,
    key: *const c_char,
    keylen: usize,
) {
    let op = |b: &mut WriteBatch| {
        // SAFETY: `key` is NULL or points to `keylen` bytes (header contract).
        let k = unsafe { bytes(key, keylen, "key") }?;
        b.delete(k);
        Ok(())
    };
    // SAFETY: `batch` is NULL or a live batch handle (header contract).
    unsafe { with_batch(batch, op) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_writebatch_merge(
    batch: *mut strata_writebatch_t,
    key: *const c_char,
    keylen: usize,
    val: *const c_char,
    vallen: usize,
) {
    let op = |b: &mut WriteBatch| {
        // SAFETY: `key`/`val` are NULL or point to `keylen`/`vallen` bytes (header contract).
        let (k, v) = unsafe { (bytes(key, keylen, "key")?, bytes(val, vallen, "operand")?) };
        b.merge(k, v);
        Ok(())
    };
    // SAFETY: `batch` is NULL or a live batch handle (header contract).
    unsafe { with_batch(batch, op) }
}

// ---------------------------------------------------------------------------------------------
// Write and read options
// ---------------------------------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn strata_writeoptions_create() -> *mut strata_writeoptions_t {
    guard_or(ptr::null_mut(), || Ok(into_raw(strata_writeoptions_t { opts: WriteOptions::default() })))
}

#[no_mangle]
pub unsafe extern "C" fn strata_writeoptions_destroy(options: *mut strata_writeoptions_t) {
    // SAFETY: `options` is NULL or from `strata_writeoptions_create`, not used again (header).
    unsafe { destroy(options) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_writeoptions_set_sync(options: *mut strata_writeoptions_t, v: u8) {
    // SAFETY: `options` is NULL or a live write options handle (header contract).
    if let Ok(o) = unsafe { handle_mut(options, "write options") } {
        o.opts.sync = v != 0;
    }
}

#[no_mangle]
pub unsafe extern "C" fn strata_writeoptions_set_disable_wal(options: *mut strata_writeoptions_t, v: u8) {
    // SAFETY: `options` is NULL or a live write options handle (header contract).
    if let Ok(o) = unsafe { handle_mut(options, "write options") } {
        o.opts.disable_wal = v != 0;
    }
}

#[no_mangle]
pub extern "C" fn strata_readoptions_create() -> *mut strata_readoptions_t {
    guard_or(ptr::null_mut(), || Ok(into_raw(strata_readoptions_t { opts: ReadOptions::new() })))
}

#[no_mangle]
pub unsafe extern "C" fn strata_readoptions_destroy(options: *mut strata_readoptions_t) {
    // SAFETY: `options` is NULL or from `strata_readoptions_create`, not used again (header).
    unsafe { destroy(options) }
}

/// Applies `f` to the read options, if `options` is not NULL.
///
/// # Safety
/// `options` is NULL or a live handle from `strata_readoptions_create`.
unsafe fn with_readoptions(options: *mut strata_readoptions_t, f: impl FnOnce(&mut ReadOptions)) {
    // SAFETY: forwarded from this function's contract.
    let Ok(o) = (unsafe { handle_mut(options, "read options") }) else { return };
    guard_or((), || {
        f(&mut o.opts);
        Ok(())
    });
}

#[no_mangle]
pub unsafe extern "C" fn strata_readoptions_set_fill_cache(options: *mut strata_readoptions_t, v: u8) {
    // SAFETY: `options` is NULL or a live read options handle (header contract).
    unsafe { with_readoptions(options, |o| o.fill_cache = v != 0) }
}

/// Reads through `snapshot` (NULL: the latest state). The options keep their own reference, so
/// the snapshot may be released before them.
#[no_mangle]
pub unsafe extern "C" fn strata_readoptions_set_snapshot(
    options: *mut strata_readoptions_t,
    snapshot: *const strata_snapshot_t,
) {
    // SAFETY: `snapshot` is NULL or a live snapshot handle (header contract).
    let snap = unsafe { snapshot.as_ref() }.map(|s| s.snap.clone());
    // SAFETY: `options` is NULL or a live read options handle (header contract).
    unsafe { with_readoptions(options, |o| o.snapshot = snap) }
}

/// Copies an optional bound: NULL clears it.
///
/// # Safety
/// `key` is NULL or points to `keylen` readable bytes.
unsafe fn optional_bytes(key: *const c_char, keylen: usize) -> Option<Vec<u8>> {
    if key.is_null() {
        return None;
    }
    // SAFETY: non-NULL and `keylen` readable bytes by this function's contract.
    Some(unsafe { std::slice::from_raw_parts(key.cast::<u8>(), keylen) }.to_vec())
}

#[no_mangle]
pub unsafe extern "C" fn strata_readoptions_set_lower_bound(
    options: *mut strata_readoptions_t,
    key: *const c_char,
    keylen: usize,
) {
    // SAFETY: `key` is NULL or points to `keylen` bytes (header contract).
    let bound = unsafe { optional_bytes(key, keylen) };
    // SAFETY: `options` is NULL or a live read options handle (header contract).
    unsafe { with_readoptions(options, |o| o.lower_bound = bound) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_readoptions_set_upper_bound(
    options: *mut strata_readoptions_t,
    key: *const c_char,
    keylen: usize,
) {
    // SAFETY: `key` is NULL or points to `keylen` bytes (header contract).
    let bound = unsafe { optional_bytes(key, keylen) };
    // SAFETY: `options` is NULL or a live read options handle (header contract).
    unsafe { with_readoptions(options, |o| o.upper_bound = bound) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_readoptions_set_prefix(
    options: *mut strata_readoptions_t,
    prefix: *const c_char,
    prefixlen: usize,
) {
    // SAFETY: `prefix` is NULL or points to `prefixlen` bytes (header contract).
    let p = unsafe { optional_bytes(prefix, prefixlen) };
    // SAFETY: `options` is NULL or a live read options handle (header contract).
    unsafe { with_readoptions(options, |o| o.prefix = p) }
}

// ---------------------------------------------------------------------------------------------
// Snapshots
// ---------------------------------------------------------------------------------------------

/// A snapshot of the current state; NULL when `db` is NULL.
#[no_mangle]
pub unsafe extern "C" fn strata_create_snapshot(db: *mut strata_t) -> *const strata_snapshot_t {
    // SAFETY: `db` is NULL or a live database handle (header contract).
    let Ok(db) = (unsafe { handle(db, "db") }) else { return ptr::null() };
    guard_or(ptr::null(), || Ok(into_raw(strata_snapshot_t { snap: db.db.snapshot() }).cast_const()))
}

/// Releases a snapshot. `db` is accepted for LevelDB compatibility and not used.
#[no_mangle]
pub unsafe extern "C" fn strata_release_snapshot(_db: *mut strata_t, snapshot: *const strata_snapshot_t) {
    // SAFETY: `snapshot` is NULL or from `strata_create_snapshot`, not used again (header).
    unsafe { destroy(snapshot.cast_mut()) }
}

// ---------------------------------------------------------------------------------------------
// Iterators
// ---------------------------------------------------------------------------------------------

/// A new, unpositioned iterator. Never NULL: if it cannot be created (NULL arguments, an error),
/// it is invalid and `strata_iter_get_error` reports why.
#[no_mangle]
pub unsafe extern "C" fn strata_create_iterator(
    db: *mut strata_t,
    options: *const strata_readoptions_t,
) -> *mut strata_iterator_t {
    let iter = guard(|| {
        // SAFETY: `db` and `options` are NULL or live handles (header contract).
        let (db, o) = unsafe { (handle(db, "db")?, handle(options, "read options")?) };
        db.db.iter(&o.opts).map_err(err_str)
    });
    into_raw(strata_iterator_t { iter })
}

#[no_mangle]
pub unsafe extern "C" fn strata_iter_destroy(iter: *mut strata_iterator_t) {
    // SAFETY: `iter` is NULL or from `strata_create_iterator`, not used again (header).
    unsafe { destroy(iter) }
}

/// Moves the iterator with `f`. A panic breaks the iterator: it becomes invalid and reports the
/// panic through `strata_iter_get_error`.
///
/// # Safety
/// `iter` is NULL or a live handle from `strata_create_iterator`.
unsafe fn iter_move(iter: *mut strata_iterator_t, f: impl FnOnce(&mut DbIterator) -> CResult<()>) {
    // SAFETY: forwarded from this function's contract.
    let Ok(it) = (unsafe { handle_mut(iter, "iterator") }) else { return };
    let Ok(inner) = &mut it.iter else { return };
    if let Err(e) = guard(|| f(inner)) {
        let broken = std::mem::replace(&mut it.iter, Err(e));
        let _ = guard(move || {
            drop(broken);
            Ok(())
        });
    }
}

#[no_mangle]
pub unsafe extern "C" fn strata_iter_valid(iter: *const strata_iterator_t) -> u8 {
    // SAFETY: `iter` is NULL or a live iterator handle (header contract).
    let Ok(it) = (unsafe { handle(iter, "iterator") }) else { return 0 };
    u8::from(matches!(&it.iter, Ok(i) if i.valid()))
}

#[no_mangle]
pub unsafe extern "C" fn strata_iter_seek_to_first(iter: *mut strata_iterator_t) {
    // SAFETY: `iter` is NULL or a live iterator handle (header contract).
    unsafe {
        iter_move(iter, |i| {
            i.seek_to_first();
            Ok(())
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn strata_iter_seek_to_last(iter: *mut strata_iterator_t) {
    // SAFETY: `iter` is NULL or a live iterator handle (header contract).
    unsafe {
        iter_move(iter, |i| {
            i.seek_to_last();
            Ok(())
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn strata_iter_seek(iter: *mut strata_iterator_t, k: *const c_char, klen: usize) {
    let op = |i: &mut DbIterator| {
        // SAFETY: `k` is NULL or points to `klen` bytes (header contract).
        i.seek(unsafe { bytes(k, klen, "seek key") }?);
        Ok(())
    };
    // SAFETY: `iter` is NULL or a live iterator handle (header contract).
    unsafe { iter_move(iter, op) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_iter_seek_for_prev(
    iter: *mut strata_iterator_t,
    k: *const c_char,
    klen: usize,
) {
    let op = |i: &mut DbIterator| {
        // SAFETY: `k` is NULL or points to `klen` bytes (header contract).
        i.seek_for_prev(unsafe { bytes(k, klen, "seek key") }?);
        Ok(())
    };
    // SAFETY: `iter` is NULL or a live iterator handle (header contract).
    unsafe { iter_move(iter, op) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_iter_next(iter: *mut strata_iterator_t) {
    // SAFETY: `iter` is NULL or a live iterator handle (header contract).
    unsafe {
        iter_move(iter, |i| {
            i.next();
            Ok(())
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn strata_iter_prev(iter: *mut strata_iterator_t) {
    // SAFETY: `iter` is NULL or a live iterator handle (header contract).
    unsafe {
        iter_move(iter, |i| {
            i.prev();
            Ok(())
        })
    }
}

/// Returns the current key or value of a valid iterator (NULL and length 0 otherwise).
///
/// # Safety
/// `iter` is NULL or a live iterator handle; `len` is NULL or writable.
unsafe fn iter_entry(
    iter: *const strata_iterator_t,
    len: *mut usize,
    pick: fn(&DbIterator) -> &[u8],
) -> *const c_char {
    // SAFETY: forwarded from this function's contract.
    let len = unsafe { len.as_mut() };
    // SAFETY: forwarded from this function's contract.
    let entry = match unsafe { handle(iter, "iterator") } {
        Ok(strata_iterator_t { iter: Ok(i) }) if i.valid() => Some(pick(i)),
        _ => None,
    };
    if let Some(len) = len {
        *len = entry.map_or(0, <[u8]>::len);
    }
    entry.map_or(ptr::null(), |e| e.as_ptr().cast())
}

#[no_mangle]
pub unsafe extern "C" fn strata_iter_key(iter: *const strata_iterator_t, klen: *mut usize) -> *const c_char {
    // SAFETY: `iter` is NULL or a live iterator handle; `klen` is NULL or writable (header).
    unsafe { iter_entry(iter, klen, DbIterator::key) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_iter_value(
    iter: *const strata_iterator_t,
    vlen: *mut usize,
) -> *const c_char {
    // SAFETY: `iter` is NULL or a live iterator handle; `vlen` is NULL or writable (header).
    unsafe { iter_entry(iter, vlen, DbIterator::value) }
}

/// Reports the iterator's first error through `errptr` (untouched when there is none).
#[no_mangle]
pub unsafe extern "C" fn strata_iter_get_error(iter: *const strata_iterator_t, errptr: *mut *mut c_char) {
    let r = guard(|| {
        // SAFETY: `iter` is NULL or a live iterator handle (header contract).
        match &unsafe { handle(iter, "iterator") }?.iter {
            Ok(i) => i.status().map_err(err_str),
            Err(e) => Err(e.clone()),
        }
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ()) }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_become_errors() {
        let r: CResult<()> = guard(|| panic!("boom"));
        assert_eq!(r.unwrap_err(), "internal error (panic): boom");
    }

    #[test]
    fn errors_replace_earlier_messages() {
        let mut err: *mut c_char = ptr::null_mut();
        // SAFETY: `err` is a writable local holding NULL, then a message from `set_error`.
        unsafe {
            set_error(&mut err, "first");
            set_error(&mut err, "sec\0ond");
            assert_eq!(CStr::from_ptr(err).to_str().unwrap(), "sec ond");
            strata_free(err.cast());
        }
    }
}
