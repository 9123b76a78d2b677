//! `strata._strata`: the PyO3 extension behind the `strata` Python package.
//!
//! The API is plyvel's (`DB`, `WriteBatch`, `Snapshot`, `Iterator`, `RawIterator`, `PrefixedDB`,
//! `repair_db`, `destroy_db`, with plyvel's arguments): explicit `bytes` keys and values, write
//! batches, snapshots and iterators as context managers; plus merges (built-in operators or
//! Python functions), range deletions, column families, transactions, bulk loading and the
//! mapping protocol. Every engine call that may do IO runs with the GIL released
//! (`Python::detach`).
//!
//! Locking rule: a Rust mutex is never held while the GIL is being acquired. Mutexes are either
//! taken and released while attached (short, never blocking on engine work) or taken inside a
//! `detach` closure and released before it returns.
//!
//! One module per class: [`db`] (`DB`, opened by [`open`]), [`batch`] (`WriteBatch`),
//! [`snapshot`] (`Snapshot`), [`iterator`] (`Iterator`), [`raw_iterator`] (`RawIterator`),
//! [`prefixed`] (`PrefixedDB`), [`family`] (`ColumnFamily`, `list_column_families`), [`txn`]
//! (`Transaction`), [`txn_iter`] (`TransactionIterator`), [`bulk`] (`SstFileWriter`,
//! `ExternalFileInfo`, ingestion), plus [`repair`] (`repair_db`), [`maintenance`] (`destroy_db`,
//! properties, approximate sizes), [`options`] (the option keywords), [`py_merge`] (merge
//! operators written in Python), [`errors`] (exceptions) and [`args`] (bytes arguments). This
//! file only builds the module.

mod args;
mod batch;
mod bulk;
mod db;
mod errors;
mod family;
mod iterator;
mod maintenance;
mod open;
mod options;
mod prefixed;
mod py_merge;
mod raw_iterator;
mod repair;
mod snapshot;
mod txn;
mod txn_iter;

use pyo3::prelude::*;
use pyo3::types::PyModule;

use batch::PyWriteBatch;
use bulk::{PyExternalFileInfo, PySstFileWriter};
use db::PyDb;
use family::{list_column_families, PyColumnFamily};
use iterator::PyIterator;
use maintenance::destroy_db;
use prefixed::PyPrefixedDb;
use raw_iterator::PyRawIterator;
use repair::repair_db;
use snapshot::PySnapshot;
use txn::PyTransaction;
use txn_iter::PyTransactionIterator;

/// The compiled part of the `strata` package; import `strata` instead.
#[pymodule]
fn _strata(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(repair_db, m)?)?;
    m.add_function(wrap_pyfunction!(destroy_db, m)?)?;
    m.add_class::<PyDb>()?;
    m.add_class::<PyWriteBatch>()?;
    m.add_class::<PySnapshot>()?;
    m.add_class::<PyIterator>()?;
    m.add_class::<PyRawIterator>()?;
    m.add_class::<PyPrefixedDb>()?;
    m.add_function(wrap_pyfunction!(list_column_families, m)?)?;
    m.add_class::<PyColumnFamily>()?;
    m.add_class::<PyTransaction>()?;
    m.add_class::<PyTransactionIterator>()?;
    m.add_class::<PySstFileWriter>()?;
    m.add_class::<PyExternalFileInfo>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
