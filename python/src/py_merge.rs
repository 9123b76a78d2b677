//! Merge operators written in Python: `DB(merge_operator=...)` given a callable, or an object
//! with a `merge` method, instead of a built-in operator's name.
//!
//! Owns: calling the Python function from engine threads (readers and background compactions)
//! with the GIL taken, and keeping the exception it raised so that the read that failed can chain
//! it to its `MergeError`. Must not: panic or let a Python exception cross into the engine; a
//! failure is the engine's `None` ("cannot merge"), which fails the read and leaves compaction's
//! operands unfolded.

use std::cell::RefCell;
use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};
use strata::MergeOperator;

use crate::args::bytes_arg;

thread_local! {
    /// The exception the last failed call on this thread raised, with its operator's name. The
    /// engine reports the failure on the same thread (reads run in the caller's thread), where
    /// `errors::engine_error` takes it; a background thread's is replaced by its next call.
    static LAST_FAILURE: RefCell<Option<(String, PyErr)>> = const { RefCell::new(None) };
}

/// A merge operator that calls `func(key, existing_value_or_None, operands) -> bytes`.
pub(crate) struct PyMergeOperator {
    name: String,
    func: Py<PyAny>,
}

impl PyMergeOperator {
    /// The operator for `obj`: an object with a callable `merge` attribute, or a callable. Its
    /// name (recorded in the OPTIONS file) is `obj.name` when that is a string, else the
    /// function's `__name__`, else its type's name.
    pub(crate) fn from_object(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let func =
            match obj.getattr_opt("merge")? {
                Some(m) if m.is_callable() => m,
                _ if obj.is_callable() => obj.clone(),
                _ => return Err(PyTypeError::new_err(
                    "merge_operator must be a built-in operator's name (\"uint64add\", \"stringappend\"), \
                     a callable merge(key, existing_value, operands) -> bytes, or an object with such a \
                     merge method",
                )),
            };
        let named = |o: &Bound<'_, PyAny>, attr: &str| -> PyResult<Option<String>> {
            Ok(match o.getattr_opt(attr)? {
                Some(n) if n.is_instance_of::<PyString>() => Some(n.extract()?),
                _ => None,
            })
        };
        let name = match named(obj, "name")? {
            Some(n) => n,
            None => match named(obj, "__name__")? {
                Some(n) => n,
                None => obj.get_type().name()?.to_string(),
            },
        };
        if name.is_empty() || name.contains(['\n', ';', '=']) {
            return Err(PyTypeError::new_err(format!(
                "merge operator name {name:?} must be non-empty, without newlines, ';' or '='"
            )));
        }
        Ok(Self { name, func: func.unbind() })
    }

    fn call(&self, py: Python<'_>, key: &[u8], base: Option<&[u8]>, operands: &[&[u8]]) -> PyResult<Vec<u8>> {
        let operands = PyList::new(py, operands.iter().map(|o| PyBytes::new(py, o)))?;
        let base = base.map(|b| PyBytes::new(py, b));
        let out = self.func.bind(py).call1((PyBytes::new(py, key), base, operands))?;
        Ok(bytes_arg(&out, "the merge operator's result")?.as_bytes().to_vec())
    }
}

impl MergeOperator for PyMergeOperator {
    fn name(&self) -> &str {
        &self.name
    }

    fn full_merge(&self, key: &[u8], base: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
        // No GIL to take while the interpreter shuts down: the merge fails instead of hanging.
        Python::try_attach(|py| {
            // Dropping a stale exception needs the GIL, which is held here.
            LAST_FAILURE.with(|f| f.borrow_mut().take());
            match self.call(py, key, base, operands) {
                Ok(v) => Some(v),
                Err(e) => {
                    LAST_FAILURE.with(|f| *f.borrow_mut() = Some((self.name.clone(), e)));
                    None
                }
            }
        })
        .flatten()
    }
}

/// The exception a Python merge operator raised for the engine error `message`, if this thread's
/// last failure is that operator's (the engine's message names it).
pub(crate) fn take_failure(message: &str) -> Option<PyErr> {
    LAST_FAILURE.with(|f| {
        let mut slot = f.borrow_mut();
        let matches = slot.as_ref().is_some_and(|(name, _)| message.contains(&format!("operator {name} ")));
        if matches {
            slot.take().map(|(_, e)| e)
        } else {
            None
        }
    })
}

/// The `merge_operator=` argument as an engine operator: `None` for a name (set through the
/// options table) or None; a Python operator for anything else.
pub(crate) fn python_operator(arg: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Arc<dyn MergeOperator>>> {
    match arg {
        Some(obj) if !obj.is_none() && !obj.is_instance_of::<PyString>() => {
            Ok(Some(Arc::new(PyMergeOperator::from_object(obj)?)))
        }
        _ => Ok(None),
    }
}
