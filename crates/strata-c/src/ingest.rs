//! Bulk loading, as RocksDB's c.h has it: `strata_sstfilewriter_*` writes a table file of sorted
//! keys outside any database, and `strata_ingest_external_file(_cf)` adds such files to one.
//!
//! Owns: the writer handle and whether it has a file open. RocksDB splits creating a writer
//! (with options) from opening its file, while the engine's `SstFileWriter` is created on its
//! file; so the handle keeps the options until `strata_sstfilewriter_open` and refuses calls out
//! of order (put before open, open twice) with an error instead of undefined behaviour. Must
//! not: check keys or files itself; the engine's writer and ingestion do that.

use std::ffi::c_char;
use std::path::PathBuf;
use std::ptr;

use strata_engine::{IngestOptions, Options, SstFileWriter};

use crate::db::strata_t;
use crate::family::{family_of, strata_column_family_handle_t};
use crate::options::strata_options_t;
use crate::util::{
    bytes, c_str, destroy, err_str, finish, guard, guard_or, handle, handle_mut, into_raw, path_from, CResult,
};

/// The file a writer is writing.
struct OpenFile {
    writer: SstFileWriter,
    path: PathBuf,
}

/// A writer of one external table file at a time (`strata_sstfilewriter_t`).
pub struct strata_sstfilewriter_t {
    /// The options given at create, or why they cannot be used (reported by `open`).
    opts: CResult<Options>,
    /// None when created or finished: `open` may start a file.
    file: Option<OpenFile>,
}

/// Options for ingestion (`strata_ingestexternalfileoptions_t`); strata has no knobs yet.
pub struct strata_ingestexternalfileoptions_t {
    opts: IngestOptions,
}

// ---------------------------------------------------------------------------------------------
// SstFileWriter
// ---------------------------------------------------------------------------------------------

/// A writer using `options` (copied; block size, last-level compression and bloom filter apply).
/// NULL options, or an options setter's deferred error, is reported by `strata_sstfilewriter_open`.
#[no_mangle]
pub unsafe extern "C" fn strata_sstfilewriter_create(
    options: *const strata_options_t,
) -> *mut strata_sstfilewriter_t {
    guard_or(ptr::null_mut(), || {
        // SAFETY: `options` is NULL or a live options handle (header contract).
        let opts =
            unsafe { handle(options, "options") }.and_then(|o| o.deferred_error().map(|()| o.opts.clone()));
        Ok(into_raw(strata_sstfilewriter_t { opts, file: None }))
    })
}

/// Creates the file `name` (replacing one there) and starts writing it.
#[no_mangle]
pub unsafe extern "C" fn strata_sstfilewriter_open(
    writer: *mut strata_sstfilewriter_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) {
    let r = guard(|| {
        // SAFETY: `writer` is NULL or a live writer not used elsewhere meanwhile (header contract).
        let w = unsafe { handle_mut(writer, "writer") }?;
        // SAFETY: `name` is NULL or a NUL-terminated string (header contract).
        let path = path_from(unsafe { c_str(name, "name") }?)?;
        if let Some(open) = &w.file {
            return Err(format!("invalid argument: the writer is already writing {}", open.path.display()));
        }
        let opts = w.opts.as_ref().map_err(Clone::clone)?;
        let writer = SstFileWriter::create(&path, opts).map_err(err_str)?;
        w.file = Some(OpenFile { writer, path });
        Ok(())
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ()) }
}

/// Runs `f` on the open engine writer of `writer` under the panic guard and reports its error
/// (or that no file is open) through `errptr`.
///
/// # Safety
/// `writer` is NULL or a live writer not used elsewhere meanwhile; `errptr` is NULL or a
/// writable `char*` holding NULL or a malloc'd message.
unsafe fn with_open_writer(
    writer: *mut strata_sstfilewriter_t,
    errptr: *mut *mut c_char,
    f: impl FnOnce(&mut SstFileWriter) -> CResult<()>,
) {
    let r = guard(|| {
        // SAFETY: forwarded from this function's contract.
        let w = unsafe { handle_mut(writer, "writer") }?;
        f(&mut w.file.as_mut().ok_or_else(not_open)?.writer)
    });
    // SAFETY: forwarded from this function's contract.
    unsafe { finish(errptr, r, ()) }
}

fn not_open() -> String {
    "invalid argument: the writer has no open file (call strata_sstfilewriter_open)".to_string()
}

/// Adds `key` = `val`; keys must come in strictly increasing order.
#[no_mangle]
pub unsafe extern "C" fn strata_sstfilewriter_put(
    writer: *mut strata_sstfilewriter_t,
    key: *const c_char,
    keylen: usize,
    val: *const c_char,
    vallen: usize,
    errptr: *mut *mut c_char,
) {
    let op = |w: &mut SstFileWriter| {
        // SAFETY: `key`/`val` are NULL or point to `keylen`/`vallen` bytes (header contract).
        let (k, v) = unsafe { (bytes(key, keylen, "key")?, bytes(val, vallen, "value")?) };
        w.put(k, v).map_err(err_str)
    };
    // SAFETY: `writer` and `errptr` are as the header says.
    unsafe { with_open_writer(writer, errptr, op) }
}

/// Adds a deletion of `key`, which hides older values once ingested.
#[no_mangle]
pub unsafe extern "C" fn strata_sstfilewriter_delete(
    writer: *mut strata_sstfilewriter_t,
    key: *const c_char,
    keylen: usize,
    errptr: *mut *mut c_char,
) {
    let op = |w: &mut SstFileWriter| {
        // SAFETY: `key` is NULL or points to `keylen` bytes (header contract).
        let k = unsafe { bytes(key, keylen, "key") }?;
        w.delete(k).map_err(err_str)
    };
    // SAFETY: `writer` and `errptr` are as the header says.
    unsafe { with_open_writer(writer, errptr, op) }
}

/// Adds a merge operand for `key`, folded by the database's merge operator once ingested.
#[no_mangle]
pub unsafe extern "C" fn strata_sstfilewriter_merge(
    writer: *mut strata_sstfilewriter_t,
    key: *const c_char,
    keylen: usize,
    val: *const c_char,
    vallen: usize,
    errptr: *mut *mut c_char,
) {
    let op = |w: &mut SstFileWriter| {
        // SAFETY: `key`/`val` are NULL or point to `keylen`/`vallen` bytes (header contract).
        let (k, v) = unsafe { (bytes(key, keylen, "key")?, bytes(val, vallen, "operand")?) };
        w.merge(k, v).map_err(err_str)
    };
    // SAFETY: `writer` and `errptr` are as the header says.
    unsafe { with_open_writer(writer, errptr, op) }
}

/// Completes and syncs the file. The writer has no open file afterwards, even on an error.
#[no_mangle]
pub unsafe extern "C" fn strata_sstfilewriter_finish(
    writer: *mut strata_sstfilewriter_t,
    errptr: *mut *mut c_char,
) {
    let r = guard(|| {
        // SAFETY: `writer` is NULL or a live writer not used elsewhere meanwhile (header contract).
        let w = unsafe { handle_mut(writer, "writer") }?;
        let open = w.file.take().ok_or_else(not_open)?;
        open.writer.finish().map(drop).map_err(err_str)
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ()) }
}

/// Frees the writer. A file it was still writing is unfinished and is removed.
#[no_mangle]
pub unsafe extern "C" fn strata_sstfilewriter_destroy(writer: *mut strata_sstfilewriter_t) {
    if writer.is_null() {
        return;
    }
    // SAFETY: `writer` is a live writer from `strata_sstfilewriter_create`, not used again
    // (header contract); ownership returns here.
    let w = unsafe { Box::from_raw(writer) };
    let _ = guard(move || {
        if let (Some(open), Ok(opts)) = (w.file, &w.opts) {
            drop(open.writer);
            // An unfinished table cannot be ingested; leaving it would only mislead.
            let _ = opts.fs.remove_file(&open.path);
        }
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------------
// Ingestion
// ---------------------------------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn strata_ingestexternalfileoptions_create() -> *mut strata_ingestexternalfileoptions_t {
    guard_or(ptr::null_mut(), || {
        Ok(into_raw(strata_ingestexternalfileoptions_t { opts: IngestOptions::default() }))
    })
}

#[no_mangle]
pub unsafe extern "C" fn strata_ingestexternalfileoptions_destroy(
    opt: *mut strata_ingestexternalfileoptions_t,
) {
    // SAFETY: `opt` is NULL or from `strata_ingestexternalfileoptions_create`, not used again
    // (header contract).
    unsafe { destroy(opt) }
}

/// The paths of an ingestion call.
///
/// # Safety
/// `file_list` is NULL or holds `list_len` pointers, each NULL or a NUL-terminated string.
unsafe fn paths(file_list: *const *const c_char, list_len: usize) -> CResult<Vec<PathBuf>> {
    if file_list.is_null() && list_len > 0 {
        return Err("invalid argument: file_list is NULL".to_string());
    }
    (0..list_len)
        .map(|i| {
            // SAFETY: `file_list` holds `list_len` pointers, each NULL or a string (contract).
            path_from(unsafe { c_str(*file_list.add(i), "file name") }?)
        })
        .collect()
}

/// Adds the files in `file_list` (written by a `strata_sstfilewriter_t`) to the default family
/// atomically (`Db::ingest_external_file`; RocksDB's `rocksdb_ingest_external_file`).
#[no_mangle]
pub unsafe extern "C" fn strata_ingest_external_file(
    db: *mut strata_t,
    file_list: *const *const c_char,
    list_len: usize,
    opt: *const strata_ingestexternalfileoptions_t,
    errptr: *mut *mut c_char,
) {
    let r = guard(|| {
        // SAFETY: `db` and `opt` are NULL or live handles (header contract).
        let (db, o) = unsafe { (handle(db, "db")?, handle(opt, "ingest options")?) };
        // SAFETY: `file_list` holds `list_len` NULL or NUL-terminated strings (header contract).
        let paths = unsafe { paths(file_list, list_len) }?;
        db.db.ingest_external_file(&paths, &o.opts).map_err(err_str)
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ()) }
}

/// As `strata_ingest_external_file`, into the column family `column_family`.
#[no_mangle]
pub unsafe extern "C" fn strata_ingest_external_file_cf(
    db: *mut strata_t,
    column_family: *mut strata_column_family_handle_t,
    file_list: *const *const c_char,
    list_len: usize,
    opt: *const strata_ingestexternalfileoptions_t,
    errptr: *mut *mut c_char,
) {
    let r = guard(|| {
        // SAFETY: `db` and `opt` are NULL or live handles (header contract).
        let (db, o) = unsafe { (handle(db, "db")?, handle(opt, "ingest options")?) };
        // SAFETY: `column_family` is NULL or a live family handle (header contract).
        let cf = unsafe { family_of(db, column_family) }?;
        // SAFETY: `file_list` holds `list_len` NULL or NUL-terminated strings (header contract).
        let paths = unsafe { paths(file_list, list_len) }?;
        db.db.ingest_external_file_cf(cf, &paths, &o.opts).map_err(err_str)
    });
    // SAFETY: `errptr` is NULL or a writable `char*` holding NULL or a malloc'd message (header).
    unsafe { finish(errptr, r, ()) }
}
