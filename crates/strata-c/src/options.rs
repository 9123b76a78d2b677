//! Open, read and write options: `strata_options_*`, `strata_readoptions_*`,
//! `strata_writeoptions_*`.
//!
//! Owns: the option handles and their setters, including the deferred errors of setters that
//! cannot report one (`strata_open` reports them). Must not: open a database or parse option
//! names and values itself; names and parsing belong to the engine's options table.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int};
use std::fmt::Display;
use std::ptr;

use strata_engine::options::table;
use strata_engine::{merge, Compression, Error, Options, ReadOptions, WriteOptions};

use crate::snapshot::strata_snapshot_t;
use crate::util::{
    c_str, destroy, err_str, finish, guard, guard_or, handle_mut, into_raw, optional_bytes, path_from,
    CResult,
};

/// Open options (`strata_options_t`). Typed setters cannot fail, so a bad value is remembered
/// per option (keyed by its name in the options table) and reported by `strata_open`.
pub struct strata_options_t {
    pub(crate) opts: Options,
    pub(crate) errors: BTreeMap<&'static str, String>,
}

/// Read options (`strata_readoptions_t`).
pub struct strata_readoptions_t {
    pub(crate) opts: ReadOptions,
}

/// Write options (`strata_writeoptions_t`).
pub struct strata_writeoptions_t {
    pub(crate) opts: WriteOptions,
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

impl strata_options_t {
    /// Records the outcome of setting option `name` where no `errptr` can report it: an error is
    /// kept for `strata_open`, and success drops an earlier error of the same option (under any
    /// of its names).
    fn record(&mut self, name: &str, r: strata_engine::Result<()>) {
        let Some(def) = table::lookup(name) else { return };
        match r {
            Ok(()) => self.errors.remove(def.name()),
            Err(e) => self.errors.insert(def.name(), err_str(e)),
        };
    }

    /// The first error a setter without `errptr` recorded, for `strata_open` and
    /// `strata_repair_db` to report.
    pub(crate) fn deferred_error(&self) -> CResult<()> {
        self.errors.values().next().map_or(Ok(()), |e| Err(e.clone()))
    }
}

/// Sets option `name` to `value` through the engine's options table (`Options::set`), for the
/// typed setters: the value is formatted and parsed like any other, so names and value rules
/// stay in one place. A bad value is recorded for `strata_open`.
///
/// # Safety
/// `options` is NULL or a live handle from `strata_options_create`.
unsafe fn set_by_name(options: *mut strata_options_t, name: &'static str, value: impl Display) {
    let set = |o: &mut strata_options_t| {
        let r = o.opts.set(name, &value.to_string());
        o.record(name, r);
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { with_options(options, set) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_options_set_create_if_missing(options: *mut strata_options_t, v: u8) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe { set_by_name(options, "create_if_missing", v != 0) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_options_set_error_if_exists(options: *mut strata_options_t, v: u8) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe { set_by_name(options, "error_if_exists", v != 0) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_options_set_write_buffer_size(options: *mut strata_options_t, v: usize) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe { set_by_name(options, "write_buffer_size", v) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_options_set_cache_size(options: *mut strata_options_t, v: usize) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe { set_by_name(options, "cache_size", v) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_options_set_block_size(options: *mut strata_options_t, v: usize) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe { set_by_name(options, "block_size", v) }
}

/// A negative value is an error for `strata_open` (the table reads "-1" as no unsigned integer).
#[no_mangle]
pub unsafe extern "C" fn strata_options_set_max_open_files(options: *mut strata_options_t, v: c_int) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe { set_by_name(options, "max_open_files", v) }
}

/// A negative value is an error for `strata_open`, as for `strata_options_set_max_open_files`.
#[no_mangle]
pub unsafe extern "C" fn strata_options_set_bloom_bits_per_key(options: *mut strata_options_t, v: c_int) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe { set_by_name(options, "bloom_bits_per_key", v) }
}

/// The C enum's codes are the persisted compression bytes; the table's `compression` shorthand
/// does the rest (every level and blobs).
#[no_mangle]
pub unsafe extern "C" fn strata_options_set_compression(options: *mut strata_options_t, v: c_int) {
    let Some(c) = u8::try_from(v).ok().and_then(Compression::from_u8) else {
        let why = format!("compression: unknown value {v} (expected 0 none, 1 snappy, 2 lz4 or 3 zstd)");
        // SAFETY: `options` is NULL or a live options handle (header contract).
        unsafe { with_options(options, |o| o.record("compression", Err(Error::InvalidArgument(why)))) };
        return;
    };
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe { set_by_name(options, "compression", c.name()) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_options_set_min_blob_size(options: *mut strata_options_t, v: usize) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe { set_by_name(options, "min_blob_size", v) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_options_set_sync_gather_micros(options: *mut strata_options_t, v: u32) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe { set_by_name(options, "sync_gather_micros", v) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_options_set_write_spin_micros(options: *mut strata_options_t, v: u32) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe { set_by_name(options, "write_spin_micros", v) }
}

/// The first `n` bytes of a key are its prefix; keys shorter than `n` have none (RocksDB's
/// `rocksdb_slicetransform_create_fixed_prefix`, as a plain setter). 0 is an error for
/// `strata_open`.
#[no_mangle]
pub unsafe extern "C" fn strata_options_set_prefix_extractor_fixed(options: *mut strata_options_t, n: usize) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe { set_by_name(options, "prefix_extractor", format!("fixed:{n}")) }
}

/// The first `n` bytes of a key, or all of a shorter key, are its prefix (RocksDB's
/// `rocksdb_slicetransform_create_capped_prefix`, as a plain setter).
#[no_mangle]
pub unsafe extern "C" fn strata_options_set_prefix_extractor_capped(
    options: *mut strata_options_t,
    n: usize,
) {
    // SAFETY: `options` is NULL or a live options handle (header contract).
    unsafe { set_by_name(options, "prefix_extractor", format!("capped:{n}")) }
}

/// A NUL-terminated UTF-8 argument.
///
/// # Safety
/// As for [`c_str`].
unsafe fn utf8_arg<'a>(p: *const c_char, what: &str) -> CResult<&'a str> {
    // SAFETY: forwarded from this function's contract.
    let s = unsafe { c_str(p, what) }?;
    s.to_str().map_err(|_| format!("invalid argument: {what} is not UTF-8"))
}

/// Sets one option by name from text ([`Options::set`]): any name or alias of the engine's
/// options table, the value as an options file writes it. On error the options are unchanged.
#[no_mangle]
pub unsafe extern "C" fn strata_options_set(
    options: *mut strata_options_t,
    name: *const c_char,
    value: *const c_char,
    errptr: *mut *mut c_char,
) {
    let r = guard(|| {
        // SAFETY: `options` is NULL or a live options handle (header contract).
        let o = unsafe { handle_mut(options, "options") }?;
        // SAFETY: `name` and `value` are NULL or NUL-terminated strings (header contract).
        let (name, value) = unsafe { (utf8_arg(name, "option name")?, utf8_arg(value, "option value")?) };
        o.opts.set(name, value).map_err(err_str)?;
        // A valid value replaces an earlier typed setter's deferred error for the option.
        o.record(name, Ok(()));
        Ok(())
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ()) }
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
        let text = unsafe { utf8_arg(text, "options text") }?;
        o.opts = o.opts.clone().with_option_string(text).map_err(err_str)?;
        // The options the text set replace an earlier setter's deferred error for them.
        for key in text.split(';').filter_map(|pair| pair.split_once('=')).map(|(k, _)| k.trim()) {
            o.record(key, Ok(()));
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
