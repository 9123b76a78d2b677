//! `strata.Iterator`: plyvel's iterator over a database, snapshot, column family or prefixed
//! database; the read range its arguments describe; the shared state the database keeps to
//! invalidate it on `close()`; and `DB`'s factories of iterators and raw iterators (the `_in`
//! helpers the `DB`, `Snapshot`, `ColumnFamily` and `PrefixedDB` methods share).
//!
//! Owns: the cursor between entries (stepping either way, `prev()`, `seek`, `seek_to_start`,
//! `seek_to_stop`) with the GIL released, and stripping a `PrefixedDB`'s prefix from keys. Must
//! not: build read options beyond the range, or hold the state's mutex while acquiring the GIL
//! (a Python merge operator may need the GIL while the engine steps).

use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::exceptions::{PyStopIteration, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use strata::{ColumnFamily, DbIterator, ReadOptions};

use crate::args::{bytes_arg, opt_bytes_arg};
use crate::db::PyDb;
use crate::errors::{check, closed_error, engine_error, invalid_argument};
use crate::raw_iterator::PyRawIterator;
use crate::snapshot::PySnapshot;

/// The range and shape arguments of `iterator()`, as the DB, snapshot and column family take them.
pub(crate) struct IterArgs<'a, 'py> {
    pub(crate) start: Option<&'a Bound<'py, PyAny>>,
    pub(crate) stop: Option<&'a Bound<'py, PyAny>>,
    pub(crate) prefix: Option<&'a Bound<'py, PyAny>>,
    pub(crate) reverse: bool,
    pub(crate) include_key: bool,
    pub(crate) include_value: bool,
    /// Whether `start` itself is in the range (plyvel's `include_start`, default true).
    pub(crate) include_start: bool,
    /// Whether `stop` itself is in the range (plyvel's `include_stop`, default false).
    pub(crate) include_stop: bool,
}

impl IterArgs<'_, '_> {
    /// The whole key space, forward, keys and values: what `iter(db)` yields.
    pub(crate) fn everything() -> Self {
        let (start, stop, prefix) = (None, None, None);
        IterArgs {
            start,
            stop,
            prefix,
            reverse: false,
            include_key: true,
            include_value: true,
            include_start: true,
            include_stop: false,
        }
    }
}

/// Shared state of one Python iterator (plain or raw); the database keeps a weak reference so
/// that `close()` can drop the engine iterator (which pins the database files and lock).
pub(crate) struct IterState {
    pub(crate) it: Option<DbIterator>,
    pub(crate) pos: Pos,
}

/// Where the cursor of an `Iterator` is, in key order. It sits between entries; the engine
/// iterator is kept on the entry next to it, so stepping is one engine move at most.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pos {
    /// Before the first entry of the range.
    BeforeStart,
    /// After the last entry of the range.
    AfterStop,
    /// Just before the engine's entry: stepping forward (in key order) returns it.
    BeforeEntry,
    /// Just after the engine's entry: stepping backward returns it.
    AfterEntry,
}

/// The key range `[lower, upper)` and prefix an iterator reads, in the engine's keys (a
/// `PrefixedDB`'s prefix included).
pub(crate) struct ReadRange {
    pub(crate) lower: Option<Vec<u8>>,
    pub(crate) upper: Option<Vec<u8>>,
    pub(crate) prefix: Option<Vec<u8>>,
}

/// The range plyvel's `start`, `stop`, `include_start`, `include_stop` and `prefix` describe,
/// under `key_prefix` (a `PrefixedDB`'s prefix, empty for none). Keys are ordered bytewise, so the
/// first key after `k` is `k + b"\0"`: that turns an excluded start or an included stop into the
/// engine's inclusive lower and exclusive upper bounds exactly.
pub(crate) fn read_range(
    start: Option<&Bound<'_, PyAny>>,
    stop: Option<&Bound<'_, PyAny>>,
    prefix: Option<&Bound<'_, PyAny>>,
    include: (bool, bool),
    key_prefix: &[u8],
) -> PyResult<ReadRange> {
    let under = |k: Vec<u8>| [key_prefix, &k].concat();
    let (include_start, include_stop) = include;
    let mut lower = opt_bytes_arg(start, "start")?.map(under);
    if let Some(l) = lower.as_mut().filter(|_| !include_start) {
        l.push(0);
    }
    let mut upper = opt_bytes_arg(stop, "stop")?.map(under);
    if let Some(u) = upper.as_mut().filter(|_| include_stop) {
        u.push(0);
    }
    let prefix = match opt_bytes_arg(prefix, "prefix")? {
        Some(p) => Some(under(p)),
        None if !key_prefix.is_empty() => Some(key_prefix.to_vec()),
        None => None,
    };
    Ok(ReadRange { lower, upper, prefix })
}

/// `obj.iterator(*args, **kwargs)` yielding keys, values or both as `want` says: `keys()`,
/// `values()` and `items()` of every object with an `iterator` method.
pub(crate) fn shaped_iterator<'py>(
    obj: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
    want: (bool, bool),
) -> PyResult<Bound<'py, PyAny>> {
    let kwargs = match kwargs {
        Some(k) => k.copy()?,
        None => PyDict::new(obj.py()),
    };
    for name in ["include_key", "include_value"] {
        if kwargs.contains(name)? {
            return Err(PyTypeError::new_err(format!(
                "keys(), values() and items() take no {name} argument"
            )));
        }
    }
    kwargs.set_item("include_key", want.0)?;
    kwargs.set_item("include_value", want.1)?;
    obj.call_method("iterator", args, Some(&kwargs))
}

/// A Python iterator over a database or snapshot: plyvel's `Iterator`. `next()` steps in the
/// iteration direction, `prev()` back; a reverse iterator's "forward" is descending key order.
#[pyclass(module = "strata._strata", name = "Iterator", frozen)]
pub(crate) struct PyIterator {
    pub(crate) state: Arc<Mutex<IterState>>,
    pub(crate) reverse: bool,
    pub(crate) include_key: bool,
    pub(crate) include_value: bool,
    /// Stripped from returned keys and put before `seek` targets (a `PrefixedDB`'s prefix).
    pub(crate) key_prefix: Vec<u8>,
}

pub(crate) enum Step {
    Item(Vec<u8>, Vec<u8>),
    End,
    Closed,
    Failed(strata::Error),
}

/// One step in key order (`forward`) or against it, from `pos`; reads the entry's key (without
/// the first `strip` bytes) and value as asked.
fn step(it: &mut DbIterator, pos: &mut Pos, forward: bool, want: (bool, bool), strip: usize) -> Step {
    match (forward, *pos) {
        (true, Pos::BeforeStart) => it.seek_to_first(),
        (true, Pos::AfterEntry) => it.next(),
        (true, Pos::AfterStop) | (false, Pos::BeforeStart) => return Step::End,
        (false, Pos::AfterStop) => it.seek_to_last(),
        (false, Pos::BeforeEntry) => it.prev(),
        (true, Pos::BeforeEntry) | (false, Pos::AfterEntry) => {}
    }
    if !it.valid() {
        *pos = if forward { Pos::AfterStop } else { Pos::BeforeStart };
        return match it.status() {
            Ok(()) => Step::End,
            Err(e) => Step::Failed(e),
        };
    }
    *pos = if forward { Pos::AfterEntry } else { Pos::BeforeEntry };
    let k = if want.0 { it.key().get(strip..).unwrap_or_default().to_vec() } else { Vec::new() };
    let v = if want.1 { it.value().to_vec() } else { Vec::new() };
    Step::Item(k, v)
}

impl PyIterator {
    pub(crate) fn new(
        state: Arc<Mutex<IterState>>,
        reverse: bool,
        want: (bool, bool),
        key_prefix: Vec<u8>,
    ) -> Self {
        state.lock().pos = if reverse { Pos::AfterStop } else { Pos::BeforeStart };
        Self { state, reverse, include_key: want.0, include_value: want.1, key_prefix }
    }

    /// Runs `f` on the engine iterator with the GIL released.
    fn with_iter<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut DbIterator, &mut Pos) -> R + Send,
    ) -> PyResult<R> {
        let state = &self.state;
        let r = py.detach(|| {
            let mut g = state.lock();
            let st = &mut *g;
            st.it.as_mut().map(|it| f(it, &mut st.pos))
        });
        r.ok_or_else(|| closed_error(py, "iterator (or its database)"))
    }

    /// One step, `forward` in key order or back; None at the end of the range.
    fn step(&self, py: Python<'_>, forward: bool) -> PyResult<Option<Py<PyAny>>> {
        let want = (self.include_key, self.include_value);
        let strip = self.key_prefix.len();
        let state = &self.state;
        let r = py.detach(|| {
            let mut g = state.lock();
            let st = &mut *g;
            match st.it.as_mut() {
                Some(it) => step(it, &mut st.pos, forward, want, strip),
                None => Step::Closed,
            }
        });
        match r {
            Step::Item(k, v) => Ok(Some(match want {
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
}

#[pymethods]
impl PyIterator {
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.step(py, !self.reverse)
    }

    /// Steps back and returns that entry: the one `next()` returned last, when it was the last
    /// call. Raises StopIteration at the start of the range.
    fn prev(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.step(py, self.reverse)?.ok_or_else(|| PyStopIteration::new_err(()))
    }

    /// Moves the cursor just before the first key `>= target` within the range: the next item
    /// is that key, or, for a reverse iterator, the last key `< target`.
    fn seek(&self, py: Python<'_>, target: &Bound<'_, PyAny>) -> PyResult<()> {
        let target = bytes_arg(target, "target")?;
        let full = [self.key_prefix.as_slice(), target.as_bytes()].concat();
        let failed = self.with_iter(py, |it, pos| {
            it.seek(&full);
            *pos = if it.valid() { Pos::BeforeEntry } else { Pos::AfterStop };
            it.status().err()
        })?;
        failed.map_or(Ok(()), |e| Err(engine_error(py, e)))
    }

    /// Moves the cursor to the start of the range, as when the iterator was made (a reverse one
    /// is then exhausted; `prev()` steps from there).
    fn seek_to_start(&self, py: Python<'_>) -> PyResult<()> {
        self.with_iter(py, |_, pos| *pos = Pos::BeforeStart)
    }

    /// Moves the cursor past the end of the range (a forward iterator is then exhausted;
    /// `prev()` steps from there).
    fn seek_to_stop(&self, py: Python<'_>) -> PyResult<()> {
        self.with_iter(py, |_, pos| *pos = Pos::AfterStop)
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

impl PyDb {
    /// An iterator over column family `cf` (the default family when `None`), under
    /// `key_prefix` (a `PrefixedDB`'s prefix, empty for none).
    pub(crate) fn iterator_in(
        &self,
        py: Python<'_>,
        cf: Option<&ColumnFamily>,
        args: IterArgs<'_, '_>,
        snapshot: Option<&Bound<'_, PySnapshot>>,
        fill_cache: bool,
        key_prefix: &[u8],
    ) -> PyResult<PyIterator> {
        if !args.include_key && !args.include_value {
            return Err(invalid_argument(py, "include_key and include_value cannot both be False".into()));
        }
        let include = (args.include_start, args.include_stop);
        let range = read_range(args.start, args.stop, args.prefix, include, key_prefix)?;
        let mut ro = self.read_options(py, snapshot, fill_cache)?;
        (ro.lower_bound, ro.upper_bound, ro.prefix) = (range.lower, range.upper, range.prefix);
        let state = self.open_cursor(py, cf, &ro)?;
        Ok(PyIterator::new(state, args.reverse, (args.include_key, args.include_value), key_prefix.to_vec()))
    }

    /// The engine cursor over column family `cf` (the default family when `None`), confined to
    /// `key_prefix` when it is not empty.
    pub(crate) fn raw_iterator_in(
        &self,
        py: Python<'_>,
        cf: Option<&ColumnFamily>,
        snapshot: Option<&Bound<'_, PySnapshot>>,
        fill_cache: bool,
        key_prefix: &[u8],
    ) -> PyResult<PyRawIterator> {
        let mut ro = self.read_options(py, snapshot, fill_cache)?;
        ro.prefix = (!key_prefix.is_empty()).then(|| key_prefix.to_vec());
        let state = self.open_cursor(py, cf, &ro)?;
        Ok(PyRawIterator { state, key_prefix: key_prefix.to_vec() })
    }

    /// An engine cursor, registered so that `close()` can drop it.
    fn open_cursor(
        &self,
        py: Python<'_>,
        cf: Option<&ColumnFamily>,
        ro: &ReadOptions,
    ) -> PyResult<Arc<Mutex<IterState>>> {
        let db = self.handle(py)?;
        let r = py.detach(|| match cf {
            Some(cf) => db.cursor_cf(cf, ro),
            None => db.cursor(ro),
        });
        let it = check(py, r)?;
        let state = Arc::new(Mutex::new(IterState { it: Some(it), pos: Pos::BeforeStart }));
        let mut iters = self.iters.lock();
        iters.retain(|w| w.strong_count() > 0);
        iters.push(Arc::downgrade(&state));
        Ok(state)
    }
}
