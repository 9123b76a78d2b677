//! `strata.Iterator`: a cursor over a database or snapshot, and the shared state the database
//! keeps to invalidate it on `close()`.
//!
//! Owns: positioning (`seek`, `seek_to_start`, `seek_to_stop`) and stepping with the GIL
//! released. Must not: build read options or hold the state's mutex while acquiring the GIL.

use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use strata::DbIterator;

use crate::args::bytes_arg;
use crate::errors::{closed_error, engine_error};

/// Shared state of one Python iterator; the database keeps a weak reference so that `close()`
/// can drop the engine iterator (which pins the database files and lock).
pub(crate) struct IterState {
    pub(crate) it: Option<DbIterator>,
    pub(crate) pos: Pos,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pos {
    /// Not positioned yet: the first `__next__` seeks to the start (or stop, in reverse).
    Unstarted,
    /// Positioned at an entry that has not been returned yet (after `seek`).
    Pending,
    /// Positioned at the entry returned last.
    Yielded,
    /// Nothing left in the iteration direction.
    Exhausted,
}

/// A Python iterator over a database or snapshot. Think of it as a cursor between entries: it
/// starts before the first entry of its range (after the last one when `reverse=True`).
#[pyclass(module = "strata._strata", name = "Iterator", frozen)]
pub(crate) struct PyIterator {
    pub(crate) state: Arc<Mutex<IterState>>,
    pub(crate) reverse: bool,
    pub(crate) include_key: bool,
    pub(crate) include_value: bool,
}

pub(crate) enum Step {
    Item(Vec<u8>, Vec<u8>),
    End,
    Closed,
    Failed(strata::Error),
}

impl PyIterator {
    /// Runs `f` on the engine iterator with the GIL released.
    fn with_iter(&self, py: Python<'_>, f: impl FnOnce(&mut DbIterator, &mut Pos) + Send) -> PyResult<()> {
        let state = &self.state;
        let closed = py.detach(|| {
            let mut g = state.lock();
            let st = &mut *g;
            match st.it.as_mut() {
                Some(it) => {
                    f(it, &mut st.pos);
                    false
                }
                None => true,
            }
        });
        if closed {
            Err(closed_error(py, "iterator (or its database)"))
        } else {
            Ok(())
        }
    }
}

#[pymethods]
impl PyIterator {
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let (reverse, want_key, want_value) = (self.reverse, self.include_key, self.include_value);
        let state = &self.state;
        let step = py.detach(|| {
            let mut g = state.lock();
            let st = &mut *g;
            let Some(it) = st.it.as_mut() else { return Step::Closed };
            match st.pos {
                Pos::Unstarted if reverse => it.seek_to_last(),
                Pos::Unstarted => it.seek_to_first(),
                Pos::Pending => {}
                Pos::Yielded if reverse => it.prev(),
                Pos::Yielded => it.next(),
                Pos::Exhausted => return Step::End,
            }
            if it.valid() {
                st.pos = Pos::Yielded;
                let k = if want_key { it.key().to_vec() } else { Vec::new() };
                let v = if want_value { it.value().to_vec() } else { Vec::new() };
                Step::Item(k, v)
            } else {
                st.pos = Pos::Exhausted;
                match it.status() {
                    Ok(()) => Step::End,
                    Err(e) => Step::Failed(e),
                }
            }
        });
        match step {
            Step::Item(k, v) => Ok(Some(match (want_key, want_value) {
                (true, true) => {
                    PyTuple::new(py, [PyBytes::new(py, &k), PyBytes::new(py, &v)])?.into_any().unbind()
                }
                (true, false) => PyBytes::new(py, &k).into_any().unbind(),
                _ => PyBytes::new(py, &v).into_any().unbind(),
            })),
            Step::End => Ok(None),
            Step::Closed => Err(closed_error(py, "iterator (or its database)")),
            Step::Failed(e) => Err(engine_error(py, e)),
        }
    }

    /// Moves the cursor just before the first key `>= target`: the next item is that key, or,
    /// for a reverse iterator, the last key `< target`. The range bounds still apply.
    fn seek(&self, py: Python<'_>, target: &Bound<'_, PyAny>) -> PyResult<()> {
        let target = bytes_arg(target, "target")?;
        let t = target.as_bytes();
        let reverse = self.reverse;
        self.with_iter(py, |it, pos| {
            if reverse {
                it.seek_for_prev(t);
                if it.valid() && it.key() == t {
                    it.prev();
                }
            } else {
                it.seek(t);
            }
            *pos = Pos::Pending;
        })
    }

    /// Moves the cursor to the start of the range: a forward iterator yields everything again, a
    /// reverse one is exhausted.
    fn seek_to_start(&self, py: Python<'_>) -> PyResult<()> {
        let reverse = self.reverse;
        self.with_iter(py, |it, pos| {
            if reverse {
                *pos = Pos::Exhausted;
            } else {
                it.seek_to_first();
                *pos = Pos::Pending;
            }
        })
    }

    /// Moves the cursor to the end of the range: a reverse iterator yields everything again, a
    /// forward one is exhausted.
    fn seek_to_stop(&self, py: Python<'_>) -> PyResult<()> {
        let reverse = self.reverse;
        self.with_iter(py, |it, pos| {
            if reverse {
                it.seek_to_last();
                *pos = Pos::Pending;
            } else {
                *pos = Pos::Exhausted;
            }
        })
    }

    /// Releases the iterator's resources; later calls raise `ClosedError`. Idempotent.
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
