//! Engine errors as Python exceptions: the classes of `strata/_errors.py`, chosen by the kind of
//! `strata::Error`, and `ClosedError` / `InvalidArgumentError` for the binding's own checks.
//!
//! Owns: the mapping from error to exception class. Must not: decide whether something is an
//! error; callers pass the engine's verdict through [`check`].

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyModule, PyType};
use pyo3::PyErrArguments;

/// The exception classes live in pure Python (`strata/_errors.py`) so that they can use multiple
/// inheritance (`InvalidArgumentError(Error, ValueError)`, `StrataIOError(Error, OSError)`).
pub(crate) static ERRORS_MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

pub(crate) fn error_class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    let module =
        ERRORS_MODULE.get_or_try_init(py, || Ok::<_, PyErr>(py.import("strata._errors")?.unbind()))?;
    Ok(module.bind(py).getattr(name)?.cast_into::<PyType>()?)
}

/// A `strata` exception of class `name` with `args`.
pub(crate) fn raise<A>(py: Python<'_>, name: &str, args: A) -> PyErr
where
    A: PyErrArguments + Send + Sync + 'static,
{
    match error_class(py, name) {
        Ok(cls) => PyErr::from_type(cls, args),
        Err(e) => e,
    }
}

pub(crate) fn closed_error(py: Python<'_>, what: &str) -> PyErr {
    raise(py, "ClosedError", (format!("{what} is closed"),))
}

/// Maps an engine error to the matching Python exception class.
pub(crate) fn engine_error(py: Python<'_>, e: strata::Error) -> PyErr {
    use strata::Error as E;
    let msg = e.to_string();
    let name = match &e {
        E::Io { source, .. } => {
            // OSError(errno, strerror) fills in `.errno` and `.strerror`.
            return match source.raw_os_error() {
                Some(errno) => raise(py, "StrataIOError", (errno, msg)),
                None => raise(py, "StrataIOError", (msg,)),
            };
        }
        E::Corruption(_) => "CorruptionError",
        E::InvalidArgument(_) => "InvalidArgumentError",
        E::Locked(_) => "LockedError",
        E::NotADatabase(_) => "NotADatabaseError",
        E::AlreadyExists(_) => "AlreadyExistsError",
        E::UnsupportedVersion { .. } => "UnsupportedVersionError",
        E::Background { cause, .. } => return background_error(py, msg, cause.as_deref(), e.is_retryable()),
        E::Closed => "ClosedError",
        E::Merge(_) => return merge_error(py, msg),
        E::ReadOnly => "ReadOnlyError",
        E::Busy(_) => "TransactionConflictError",
        E::LockTimeout(_) => "LockTimeoutError",
        E::Deadlock(_) => "DeadlockError",
        _ => "Error",
    };
    raise(py, name, (msg,))
}

/// A `BackgroundError` whose `cause` (and `__cause__`) is the mapped exception of the engine
/// error's cause, if it has one, and whose `retryable` says whether `DB.resume()` may clear it.
pub(crate) fn background_error(
    py: Python<'_>,
    msg: String,
    cause: Option<&strata::Error>,
    retryable: bool,
) -> PyErr {
    // A cause is never itself a background error, so this recurses once at most.
    let cause = cause.map(|c| engine_error(py, c.duplicate()));
    let cause_value: Py<PyAny> = match &cause {
        Some(c) => c.value(py).clone().into_any().unbind(),
        None => py.None(),
    };
    let err = raise(py, "BackgroundError", (msg, cause_value, retryable));
    err.set_cause(py, cause);
    err
}

/// A `MergeError`; when a merge operator written in Python raised on this thread for this
/// failure, its exception is the `__cause__` and its text ends the message.
fn merge_error(py: Python<'_>, msg: String) -> PyErr {
    let Some(cause) = crate::py_merge::take_failure(&msg) else {
        return raise(py, "MergeError", (msg,));
    };
    let err =
        raise(py, "MergeError", (format!("{msg}: the merge operator raised {}", describe(py, &cause)),));
    err.set_cause(py, Some(cause));
    err
}

/// `TypeName: message` of a Python exception.
fn describe(py: Python<'_>, e: &PyErr) -> String {
    let type_name = e.get_type(py).name().map(|n| n.to_string()).unwrap_or_else(|_| "exception".into());
    let text = e.value(py).to_string();
    if text.is_empty() {
        type_name
    } else {
        format!("{type_name}: {text}")
    }
}

pub(crate) fn invalid_argument(py: Python<'_>, msg: String) -> PyErr {
    raise(py, "InvalidArgumentError", (msg,))
}

/// Converts an engine result into a Python result.
pub(crate) fn check<T>(py: Python<'_>, r: strata::Result<T>) -> PyResult<T> {
    r.map_err(|e| engine_error(py, e))
}
