//! Bytes arguments: keys, values, bounds and prefixes given as `bytes`, `bytearray` or
//! `memoryview`.
//!
//! Owns: accepting bytes-like objects and rejecting `str` with a hint. Must not: hold a borrow
//! of a Python buffer past the call (the result is an owned `bytes` object).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyString};

/// Accepts `bytes`, `bytearray` and `memoryview`; anything else (notably `str`) is a TypeError.
/// The result is a `bytes` object whose buffer can be borrowed while the GIL is released.
pub(crate) fn bytes_arg<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Bound<'py, PyBytes>> {
    let py = obj.py();
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.clone());
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(PyBytes::new(py, &b.to_vec()));
    }
    if obj.is_instance_of::<PyMemoryView>() {
        return Ok(obj.call_method0("tobytes")?.cast_into::<PyBytes>()?);
    }
    if obj.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be bytes, not str (encode it first, e.g. {what}.encode())"
        )));
    }
    let type_name = obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
    Err(PyTypeError::new_err(format!("{what} must be bytes or a bytes-like object, not {type_name}")))
}

pub(crate) fn opt_bytes_arg(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Vec<u8>>> {
    match obj {
        Some(o) if !o.is_none() => Ok(Some(bytes_arg(o, what)?.as_bytes().to_vec())),
        _ => Ok(None),
    }
}
