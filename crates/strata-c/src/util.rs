//! The plumbing every exported function shares: the panic guard, reporting errors through
//! `errptr`, `malloc`'d results and `strata_free`, and borrowing C arguments (handles, `(ptr,
//! len)` pairs, NUL-terminated strings, paths).
//!
//! Owns: the rules in the crate documentation (no unwinding into C, NULL handles are errors or
//! no-ops, `*errptr` replaced and freed as LevelDB does). Must not: call the engine; the area
//! modules do that.

use std::ffi::{c_char, c_void, CStr};
use std::path::PathBuf;
use std::ptr;

use strata_engine::internal::util::panics::catch_panic;
use strata_engine::Error;

pub(crate) type CResult<T> = Result<T, String>;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Runs `f`, turning a panic into an error message.
pub(crate) fn guard<T>(f: impl FnOnce() -> CResult<T>) -> CResult<T> {
    catch_panic(f).unwrap_or_else(|what| Err(format!("internal error (panic): {what}")))
}

/// Runs `f` where there is no `errptr`: a panic or an error gives `fallback`.
pub(crate) fn guard_or<T>(fallback: T, f: impl FnOnce() -> CResult<T>) -> T {
    guard(f).unwrap_or(fallback)
}

pub(crate) fn err_str(e: Error) -> String {
    e.to_string()
}

/// Copies `bytes` into a `malloc`'d buffer, plus a NUL when `nul` is set. Never returns NULL for
/// a successful copy, even of zero bytes. `None` when malloc fails.
pub(crate) fn malloc_copy(bytes: &[u8], nul: bool) -> Option<*mut c_char> {
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
pub(crate) fn malloc_c_string(s: &str) -> *mut c_char {
    let cleaned: Vec<u8> = s.bytes().map(|b| if b == 0 { b' ' } else { b }).collect();
    malloc_copy(&cleaned, true).unwrap_or(ptr::null_mut())
}

/// Stores `msg` in `*errptr` (freeing an earlier message first), unless `errptr` is NULL.
///
/// # Safety
/// `errptr` is NULL or points to a writable `char*` that is NULL or was malloc'd.
pub(crate) unsafe fn set_error(errptr: *mut *mut c_char, msg: &str) {
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
pub(crate) unsafe fn finish<T>(errptr: *mut *mut c_char, r: CResult<T>, fallback: T) -> T {
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
pub(crate) unsafe fn handle<'a, T>(p: *const T, what: &str) -> CResult<&'a T> {
    // SAFETY: forwarded from this function's contract.
    unsafe { p.as_ref() }.ok_or_else(|| format!("invalid argument: {what} is NULL"))
}

/// Mutably borrows a handle, or an error naming the argument when it is NULL.
///
/// # Safety
/// `p` is NULL or points to a live `T` not accessed elsewhere for `'a`.
pub(crate) unsafe fn handle_mut<'a, T>(p: *mut T, what: &str) -> CResult<&'a mut T> {
    // SAFETY: forwarded from this function's contract.
    unsafe { p.as_mut() }.ok_or_else(|| format!("invalid argument: {what} is NULL"))
}

/// Borrows a `(ptr, len)` pair. NULL with length 0 is the empty slice.
///
/// # Safety
/// `ptr` is NULL or points to `len` readable bytes that stay unchanged for `'a`.
pub(crate) unsafe fn bytes<'a>(ptr: *const c_char, len: usize, what: &str) -> CResult<&'a [u8]> {
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
pub(crate) unsafe fn c_str<'a>(p: *const c_char, what: &str) -> CResult<&'a CStr> {
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
pub(crate) unsafe fn destroy<T>(p: *mut T) {
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

pub(crate) fn into_raw<T>(v: T) -> *mut T {
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

#[cfg(unix)]
pub(crate) fn path_from(name: &CStr) -> CResult<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    Ok(PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes())))
}

#[cfg(not(unix))]
pub(crate) fn path_from(name: &CStr) -> CResult<PathBuf> {
    name.to_str().map(PathBuf::from).map_err(|_| "invalid argument: path is not UTF-8".to_string())
}

/// Copies an optional bound: NULL clears it.
///
/// # Safety
/// `key` is NULL or points to `keylen` readable bytes.
pub(crate) unsafe fn optional_bytes(key: *const c_char, keylen: usize) -> Option<Vec<u8>> {
    if key.is_null() {
        return None;
    }
    // SAFETY: non-NULL and `keylen` readable bytes by this function's contract.
    Some(unsafe { std::slice::from_raw_parts(key.cast::<u8>(), keylen) }.to_vec())
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
