//! Write batches: `strata_writebatch_*`.
//!
//! Owns: `strata_writebatch_t`, the error a batch call could not report and the database whose
//! column families it names, both kept for `strata_write`; the `_cf` variants. Must not: write
//! to a database (`strata_write` in `db.rs` does).

use std::ffi::{c_char, c_int};
use std::ptr;

use strata_engine::WriteBatch;

use crate::db::strata_t;
use crate::family::strata_column_family_handle_t;
use crate::util::{bytes, destroy, guard, guard_or, handle, handle_mut, into_raw, CResult};

/// A write batch (`strata_writebatch_t`). A bad argument to a batch call is remembered and
/// reported by `strata_write`.
pub struct strata_writebatch_t {
    pub(crate) batch: WriteBatch,
    pub(crate) error: Option<String>,
    /// The database of the column family handles the batch was given, if any: `strata_write`
    /// refuses another (a family id means nothing in another database).
    pub(crate) owner: Option<*const strata_t>,
}

// ---------------------------------------------------------------------------------------------
// Write batches
// ---------------------------------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn strata_writebatch_create() -> *mut strata_writebatch_t {
    guard_or(ptr::null_mut(), || {
        Ok(into_raw(strata_writebatch_t { batch: WriteBatch::new(), error: None, owner: None }))
    })
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
        b.owner = None;
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

/// Adds a deletion of every key in `[start_key, end_key)`; nothing when `start_key >= end_key`.
#[no_mangle]
pub unsafe extern "C" fn strata_writebatch_delete_range(
    batch: *mut strata_writebatch_t,
    start_key: *const c_char,
    start_key_len: usize,
    end_key: *const c_char,
    end_key_len: usize,
) {
    let op = |b: &mut WriteBatch| {
        // SAFETY: each key is NULL or points to its length in bytes (header contract).
        let (start, end) = unsafe {
            (bytes(start_key, start_key_len, "start key")?, bytes(end_key, end_key_len, "end key")?)
        };
        b.delete_range(start, end);
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

/// Applies `f` to the batch and the family of `column_family`, recording the family's database
/// as the batch's; a NULL handle or one of another database than earlier handles is remembered
/// as the batch's error.
///
/// # Safety
/// `batch` is NULL or a live batch handle; `column_family` is NULL or a live family handle.
unsafe fn with_batch_cf(
    batch: *mut strata_writebatch_t,
    column_family: *const strata_column_family_handle_t,
    f: impl FnOnce(&mut WriteBatch, &strata_engine::ColumnFamily) -> CResult<()>,
) {
    // SAFETY: forwarded from this function's contract.
    let Ok(b) = (unsafe { handle_mut(batch, "batch") }) else { return };
    let r = guard(|| {
        // SAFETY: forwarded from this function's contract.
        let cf = unsafe { handle(column_family, "column family") }?;
        if b.owner.is_some_and(|owner| !std::ptr::eq(owner, cf.db)) {
            return Err("invalid argument: the batch names column families of two databases".into());
        }
        b.owner = Some(cf.db);
        f(&mut b.batch, &cf.cf)
    });
    if let Err(e) = r {
        b.error.get_or_insert(e);
    }
}

#[no_mangle]
pub unsafe extern "C" fn strata_writebatch_put_cf(
    batch: *mut strata_writebatch_t,
    column_family: *const strata_column_family_handle_t,
    key: *const c_char,
    keylen: usize,
    val: *const c_char,
    vallen: usize,
) {
    let op = |b: &mut WriteBatch, cf: &strata_engine::ColumnFamily| {
        // SAFETY: `key`/`val` are NULL or point to `keylen`/`vallen` bytes (header contract).
        let (k, v) = unsafe { (bytes(key, keylen, "key")?, bytes(val, vallen, "value")?) };
        b.put_cf(cf, k, v);
        Ok(())
    };
    // SAFETY: `batch` and `column_family` are NULL or live handles (header contract).
    unsafe { with_batch_cf(batch, column_family, op) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_writebatch_delete_cf(
    batch: *mut strata_writebatch_t,
    column_family: *const strata_column_family_handle_t,
    key: *const c_char,
    keylen: usize,
) {
    let op = |b: &mut WriteBatch, cf: &strata_engine::ColumnFamily| {
        // SAFETY: `key` is NULL or points to `keylen` bytes (header contract).
        let k = unsafe { bytes(key, keylen, "key") }?;
        b.delete_cf(cf, k);
        Ok(())
    };
    // SAFETY: `batch` and `column_family` are NULL or live handles (header contract).
    unsafe { with_batch_cf(batch, column_family, op) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_writebatch_merge_cf(
    batch: *mut strata_writebatch_t,
    column_family: *const strata_column_family_handle_t,
    key: *const c_char,
    keylen: usize,
    val: *const c_char,
    vallen: usize,
) {
    let op = |b: &mut WriteBatch, cf: &strata_engine::ColumnFamily| {
        // SAFETY: `key`/`val` are NULL or point to `keylen`/`vallen` bytes (header contract).
        let (k, v) = unsafe { (bytes(key, keylen, "key")?, bytes(val, vallen, "operand")?) };
        b.merge_cf(cf, k, v);
        Ok(())
    };
    // SAFETY: `batch` and `column_family` are NULL or live handles (header contract).
    unsafe { with_batch_cf(batch, column_family, op) }
}

#[no_mangle]
pub unsafe extern "C" fn strata_writebatch_delete_range_cf(
    batch: *mut strata_writebatch_t,
    column_family: *const strata_column_family_handle_t,
    start_key: *const c_char,
    start_key_len: usize,
    end_key: *const c_char,
    end_key_len: usize,
) {
    let op = |b: &mut WriteBatch, cf: &strata_engine::ColumnFamily| {
        // SAFETY: each key is NULL or points to its length in bytes (header contract).
        let (start, end) = unsafe {
            (bytes(start_key, start_key_len, "start key")?, bytes(end_key, end_key_len, "end key")?)
        };
        b.delete_range_cf(cf, start, end);
        Ok(())
    };
    // SAFETY: `batch` and `column_family` are NULL or live handles (header contract).
    unsafe { with_batch_cf(batch, column_family, op) }
}
