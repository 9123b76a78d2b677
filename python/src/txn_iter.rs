//! `strata.TransactionIterator`: a cursor over what a transaction sees, its own writes merged
//! over the database (the engine's `BatchAndDbIterator`).
//!
//! The engine iterator borrows the transaction, so it cannot outlive a call into this module:
//! each refill locks the transaction, opens one, seeks just past the last entry returned, reads
//! up to [`CHUNK`] entries and drops it. The database side stays consistent because every refill
//! reads at one snapshot, pinned at creation (the transaction's own, or one taken then); the
//! transaction's writes made while iterating may or may not be seen, as in RocksDB.
//!
//! Owns: the cursor position and the entries read ahead. Must not: hold the transaction's mutex
//! while attached to the interpreter, or keep the engine iterator between calls.

use std::collections::VecDeque;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use strata::txn::{BatchAndDbIterator, Transaction};
use strata::{ColumnFamily, ReadOptions};

use crate::args::{bytes_arg, opt_bytes_arg};
use crate::errors::{closed_error, engine_error, invalid_argument};
use crate::iterator::IterArgs;
use crate::txn::{ended_error, PyTransaction, TxnCell};

/// Entries read per refill: large enough to amortise opening the engine iterator.
const CHUNK: usize = 256;

/// Where the next refill starts.
#[derive(Clone)]
enum Resume {
    /// The start of the range (its end, in reverse).
    Start,
    /// At `key` (included or not), moving in the iteration direction.
    Key(Vec<u8>, bool),
    /// Nothing left.
    End,
}

struct State {
    from: Resume,
    ahead: VecDeque<(Vec<u8>, Vec<u8>)>,
    closed: bool,
}

/// What a refill found.
enum Refill {
    Read(VecDeque<(Vec<u8>, Vec<u8>)>, Resume),
    Ended,
    Failed(strata::Error),
}

/// An iterator over a transaction's view; made by `Transaction.iterator()`.
#[pyclass(module = "strata._strata", name = "TransactionIterator", frozen)]
pub(crate) struct PyTransactionIterator {
    txn: TxnCell,
    cf: Option<ColumnFamily>,
    ro: ReadOptions,
    reverse: bool,
    include_key: bool,
    include_value: bool,
    state: Mutex<State>,
}

impl PyTransactionIterator {
    pub(crate) fn new(
        txn: &Bound<'_, PyTransaction>,
        cf: Option<ColumnFamily>,
        args: IterArgs<'_, '_>,
        fill_cache: bool,
    ) -> PyResult<Self> {
        let py = txn.py();
        let IterArgs { start, stop, prefix, reverse, include_key, include_value, .. } = args;
        if !include_key && !include_value {
            return Err(invalid_argument(py, "include_key and include_value cannot both be False".into()));
        }
        let this = txn.get();
        let db = this.db.get().handle(py)?;
        let snapshot = match this.txn.lock().as_ref() {
            Some(t) => t.snapshot().cloned().unwrap_or_else(|| db.snapshot()),
            None => return Err(ended_error(py)),
        };
        // Field by field: the engine may add read options, which keep their defaults.
        let mut ro = ReadOptions::new();
        ro.fill_cache = fill_cache;
        ro.lower_bound = opt_bytes_arg(start, "start")?;
        ro.upper_bound = opt_bytes_arg(stop, "stop")?;
        ro.prefix = opt_bytes_arg(prefix, "prefix")?;
        ro.snapshot = Some(snapshot);
        let state = Mutex::new(State { from: Resume::Start, ahead: VecDeque::new(), closed: false });
        Ok(Self { txn: this.txn.clone(), cf, ro, reverse, include_key, include_value, state })
    }

    /// Reads the next entries after `from` with the GIL released.
    fn refill(&self, py: Python<'_>, from: Resume) -> Refill {
        let (cell, cf, ro, reverse) = (&self.txn, &self.cf, &self.ro, self.reverse);
        py.detach(|| {
            let guard = cell.lock();
            let Some(txn) = guard.as_ref() else { return Refill::Ended };
            match open(txn, cf.as_ref(), ro) {
                Ok(mut it) => read_chunk(&mut it, from, reverse),
                Err(e) => Refill::Failed(e),
            }
        })
    }

    fn item(&self, py: Python<'_>, k: Vec<u8>, v: Vec<u8>) -> PyResult<Py<PyAny>> {
        Ok(match (self.include_key, self.include_value) {
            (true, true) => {
                PyTuple::new(py, [PyBytes::new(py, &k), PyBytes::new(py, &v)])?.into_any().unbind()
            }
            (true, false) => PyBytes::new(py, &k).into_any().unbind(),
            _ => PyBytes::new(py, &v).into_any().unbind(),
        })
    }

    /// Repositions the cursor (dropping what was read ahead).
    fn reposition(&self, py: Python<'_>, from: Resume) -> PyResult<()> {
        let mut st = self.state.lock();
        if st.closed {
            return Err(closed_error(py, "iterator"));
        }
        st.ahead.clear();
        st.from = from;
        Ok(())
    }
}

fn open<'a>(
    txn: &'a Transaction,
    cf: Option<&ColumnFamily>,
    ro: &ReadOptions,
) -> strata::Result<BatchAndDbIterator<'a>> {
    match cf {
        Some(cf) => txn.cursor_cf(cf, ro),
        None => txn.cursor(ro),
    }
}

/// Positions `it` at `from` and reads up to [`CHUNK`] entries in the iteration direction.
fn read_chunk(it: &mut BatchAndDbIterator<'_>, from: Resume, reverse: bool) -> Refill {
    match (&from, reverse) {
        (Resume::End, _) => return Refill::Read(VecDeque::new(), Resume::End),
        (Resume::Start, false) => it.seek_to_first(),
        (Resume::Start, true) => it.seek_to_last(),
        (Resume::Key(k, _), false) => it.seek(k),
        (Resume::Key(k, _), true) => it.seek_for_prev(k),
    }
    if let Resume::Key(k, false) = &from {
        if it.valid() && it.key() == k.as_slice() {
            if reverse {
                it.prev()
            } else {
                it.next()
            }
        }
    }
    let mut ahead = VecDeque::new();
    while it.valid() && ahead.len() < CHUNK {
        ahead.push_back((it.key().to_vec(), it.value().to_vec()));
        if reverse {
            it.prev()
        } else {
            it.next()
        }
    }
    if let Err(e) = it.status() {
        return Refill::Failed(e);
    }
    let next = match ahead.back() {
        Some((k, _)) if it.valid() => Resume::Key(k.clone(), false),
        _ => Resume::End,
    };
    Refill::Read(ahead, next)
}

#[pymethods]
impl PyTransactionIterator {
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let from = {
            let mut st = self.state.lock();
            if st.closed {
                return Err(closed_error(py, "iterator"));
            }
            if let Some((k, v)) = st.ahead.pop_front() {
                drop(st);
                return self.item(py, k, v).map(Some);
            }
            st.from.clone()
        };
        if matches!(from, Resume::End) {
            return Ok(None);
        }
        match self.refill(py, from) {
            Refill::Read(mut ahead, next) => {
                let first = ahead.pop_front();
                let mut st = self.state.lock();
                st.ahead = ahead;
                st.from = next;
                drop(st);
                first.map(|(k, v)| self.item(py, k, v)).transpose()
            }
            Refill::Ended => Err(ended_error(py)),
            Refill::Failed(e) => {
                self.state.lock().from = Resume::End;
                Err(engine_error(py, e))
            }
        }
    }

    /// Moves the cursor just before the first key `>= target`: the next item is that key, or,
    /// for a reverse iterator, the last key `< target`. The range bounds still apply.
    fn seek(&self, py: Python<'_>, target: &Bound<'_, PyAny>) -> PyResult<()> {
        let target = bytes_arg(target, "target")?.as_bytes().to_vec();
        // Reverse: the last key before `target`, so `target` itself is excluded.
        self.reposition(py, Resume::Key(target, !self.reverse))
    }

    /// Moves the cursor to the start of the range (a reverse iterator is then exhausted).
    fn seek_to_start(&self, py: Python<'_>) -> PyResult<()> {
        self.reposition(py, if self.reverse { Resume::End } else { Resume::Start })
    }

    /// Moves the cursor to the end of the range (a forward iterator is then exhausted).
    fn seek_to_stop(&self, py: Python<'_>) -> PyResult<()> {
        self.reposition(py, if self.reverse { Resume::Start } else { Resume::End })
    }

    /// Releases what was read ahead; later calls raise `ClosedError`. Idempotent.
    fn close(&self) {
        let mut st = self.state.lock();
        st.closed = true;
        st.ahead.clear();
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (_exc_type = None, _exc = None, _tb = None))]
    fn __exit__(
        &self,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.close();
        false
    }
}
