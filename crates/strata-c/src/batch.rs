//! Write batches: `strata_writebatch_*`.
//!
//! Owns: `strata_writebatch_t` and the error a batch call could not report, kept for
//! `strata_write`. Must not: write to a database (`strata_write` in `db.rs` does).

use std::ffi::{c_char, c_int};
use std::ptr;

use strata_engine::WriteBatch;

use crate::util::{bytes, destroy, guard, guard_or, handle, handle_mut, into_raw, CResult};

/// A write batch (`strata_writebatch_t`). A bad argument to a batch call is remembered and
/// reported by `strata_write`.
pub struct strata_writebatch_t {
    pub(crate) batch: WriteBatch,
    pub(crate) error: Option<String>,
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
