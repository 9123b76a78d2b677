//! `strata.RawIterator`: plyvel's raw iterator, the engine cursor as it is (`valid`, `seek*`,
//! `next`, `prev`, `key`, `value`), over a database, snapshot, column family or prefixed database.
//!
//! Owns: checking that a call needing a current entry has one (`IteratorInvalidError`
//! otherwise) and raising the cursor's error after a move. Must not: hold the state's mutex
//! while acquiring the GIL (every engine call runs with the GIL released).

use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use strata::DbIterator;

use crate::args::bytes_arg;
use crate::errors::{closed_error, engine_error, raise};
use crate::iterator::IterState;

/// The engine cursor, as plyvel's `RawIterator`: it starts invalid; position it with a seek.
#[pyclass(module = "strata._strata", name = "RawIterator", frozen)]
pub(crate) struct PyRawIterator {
    pub(crate) state: Arc<Mutex<IterState>>,
    /// Stripped from keys and put before seek targets (a `PrefixedDB`'s prefix).
    pub(crate) key_prefix: Vec<u8>,
}

/// What a call found: closed, invalid (for calls that need an entry), or its result.
enum Outcome<R> {
    Closed,
    Invalid,
    Done(R),
}

impl PyRawIterator {
    /// Runs `f` on the engine cursor with the GIL released; with `need_valid`, only when the
    /// cursor is at an entry.
    fn run<R: Send>(
        &self,
        py: Python<'_>,
        need_valid: bool,
        f: impl FnOnce(&mut DbIterator) -> R + Send,
    ) -> PyResult<R> {
        let state = &self.state;
        let outcome = py.detach(|| match state.lock().it.as_mut() {
            None => Outcome::Closed,
            Some(it) if need_valid && !it.valid() => Outcome::Invalid,
            Some(it) => Outcome::Done(f(it)),
        });
        match outcome {
            Outcome::Closed => Err(closed_error(py, "iterator (or its database)")),
            Outcome::Invalid => Err(raise(py, "IteratorInvalidError", ("the iterator is not at an entry",))),
            Outcome::Done(r) => Ok(r),
        }
    }

    /// A move (`f`), then the cursor's error, if it met one.
    fn step(&self, py: Python<'_>, need_valid: bool, f: impl FnOnce(&mut DbIterator) + Send) -> PyResult<()> {
        let failed = self.run(py, need_valid, |it| {
            f(it);
            it.status().err()
        })?;
        failed.map_or(Ok(()), |e| Err(engine_error(py, e)))
    }

    fn target(&self, target: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
        Ok([self.key_prefix.as_slice(), bytes_arg(target, "target")?.as_bytes()].concat())
    }
}

#[pymethods]
impl PyRawIterator {
    /// True when the cursor is at an entry.
    fn valid(&self, py: Python<'_>) -> PyResult<bool> {
        self.run(py, false, |it| it.valid())
    }

    /// Moves to the first entry (invalid if there is none).
    fn seek_to_first(&self, py: Python<'_>) -> PyResult<()> {
        self.step(py, false, DbIterator::seek_to_first)
    }

    /// Moves to the last entry (invalid if there is none).
    fn seek_to_last(&self, py: Python<'_>) -> PyResult<()> {
        self.step(py, false, DbIterator::seek_to_last)
    }

    /// Moves to the first key `>= target` (invalid if there is none).
    fn seek(&self, py: Python<'_>, target: &Bound<'_, PyAny>) -> PyResult<()> {
        let t = self.target(target)?;
        self.step(py, false, |it| it.seek(&t))
    }

    /// Moves to the last key `<= target` (invalid if there is none); RocksDB's `SeekForPrev`.
    fn seek_for_prev(&self, py: Python<'_>, target: &Bound<'_, PyAny>) -> PyResult<()> {
        let t = self.target(target)?;
        self.step(py, false, |it| it.seek_for_prev(&t))
    }

    /// Moves to the next entry; `IteratorInvalidError` when not at one.
    fn next(&self, py: Python<'_>) -> PyResult<()> {
        self.step(py, true, DbIterator::next)
    }

    /// Moves to the previous entry; `IteratorInvalidError` when not at one.
    fn prev(&self, py: Python<'_>) -> PyResult<()> {
        self.step(py, true, DbIterator::prev)
    }

    /// The current key; `IteratorInvalidError` when not at an entry.
    fn key<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let strip = self.key_prefix.len();
        let k = self.run(py, true, |it| it.key().get(strip..).unwrap_or_default().to_vec())?;
        Ok(PyBytes::new(py, &k))
    }

    /// The current value; `IteratorInvalidError` when not at an entry.
    fn value<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let v = self.run(py, true, |it| it.value().to_vec())?;
        Ok(PyBytes::new(py, &v))
    }

    /// The current `(key, value)`; `IteratorInvalidError` when not at an entry.
    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let strip = self.key_prefix.len();
        let (k, v) = self
            .run(py, true, |it| (it.key().get(strip..).unwrap_or_default().to_vec(), it.value().to_vec()))?;
        PyTuple::new(py, [PyBytes::new(py, &k), PyBytes::new(py, &v)])
    }

    /// Releases the cursor; later calls raise `ClosedError`. Idempotent.
    fn close(&self, py: Python<'_>) {
        let state = &self.state;
        py.detach(|| drop(state.lock().it.take()));
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (_exc_type = None, _exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.close(py);
        false
    }
}
