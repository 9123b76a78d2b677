//! Iterators: `strata_create_iterator` and `strata_iter_*`.
//!
//! Owns: `strata_iterator_t`, including the rule that a failed or panicking iterator turns
//! invalid and keeps its error for `strata_iter_get_error`. Must not: build read options (they
//! come from `options.rs`).

use std::ffi::c_char;
use std::ptr;

use strata_engine::DbIterator;

use crate::db::strata_t;
use crate::family::{family_of, strata_column_family_handle_t};
use crate::options::strata_readoptions_t;
use crate::util::{bytes, destroy, err_str, finish, guard, handle, handle_mut, into_raw, CResult};

/// An iterator (`strata_iterator_t`); holds an error instead when it could not be created or an
/// internal error (panic) broke it.
pub struct strata_iterator_t {
    pub(crate) iter: Result<DbIterator, String>,
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
        db.db.cursor(&o.opts).map_err(err_str)
    });
    into_raw(strata_iterator_t { iter })
}

/// As `strata_create_iterator`, over the column family `column_family` of `db`.
#[no_mangle]
pub unsafe extern "C" fn strata_create_iterator_cf(
    db: *mut strata_t,
    options: *const strata_readoptions_t,
    column_family: *const strata_column_family_handle_t,
) -> *mut strata_iterator_t {
    let iter = guard(|| {
        // SAFETY: `db` and `options` are NULL or live handles (header contract).
        let (db, o) = unsafe { (handle(db, "db")?, handle(options, "read options")?) };
        // SAFETY: `column_family` is NULL or a live family handle (header contract).
        let cf = unsafe { family_of(db, column_family) }?;
        db.db.cursor_cf(cf, &o.opts).map_err(err_str)
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
