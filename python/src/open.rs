//! Opening a `strata.DB`: its directory argument (`name`, plyvel's, or `path`, strata's first
//! name for it), `Db::open_cf` or `Db::open_read_only`, and the handle's bookkeeping.
//!
//! Owns: choosing how to open and what the handle remembers (options, merge operator, mode).
//! Must not: hold the GIL while the engine opens, or while a database it could not finish setting
//! up shuts down (background work may be calling a Python merge operator).

use std::path::PathBuf;

use parking_lot::Mutex;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use strata::{Db, Options};

use crate::db::PyDb;
use crate::errors::{check, invalid_argument};
use crate::family::named_families;
use crate::options::OptionArgs;
use crate::txn::Transactions;

/// The keywords of `DB(...)` that choose how it opens, rather than set options.
pub(crate) struct OpenMode<'a, 'py> {
    pub(crate) column_families: Option<&'a Bound<'py, PyDict>>,
    pub(crate) transactions: Option<String>,
    pub(crate) lock_timeout: Option<f64>,
    pub(crate) read_only: bool,
}

/// The database directory, given positionally or as `name=` (plyvel), or as `path=`: a `str`,
/// an `os.PathLike`, or `bytes` (a file system name, as plyvel takes it).
pub(crate) fn path_arg(
    name: Option<&Bound<'_, PyAny>>,
    path: Option<&Bound<'_, PyAny>>,
) -> PyResult<PathBuf> {
    let directory = |p: &Bound<'_, PyAny>| -> PyResult<PathBuf> {
        if p.is_instance_of::<PyBytes>() {
            return p.py().import("os")?.call_method1("fsdecode", (p,))?.extract();
        }
        p.extract()
    };
    match (name.filter(|n| !n.is_none()), path.filter(|p| !p.is_none())) {
        (Some(p), None) | (None, Some(p)) => directory(p),
        (Some(_), Some(_)) => {
            Err(PyTypeError::new_err("give the database directory as name or as path, not both"))
        }
        (None, None) => Err(PyTypeError::new_err("missing the database directory (name)")),
    }
}

impl PyDb {
    /// Opens the database at `path` with the options `args` set.
    pub(crate) fn open(
        py: Python<'_>,
        path: PathBuf,
        args: OptionArgs<'_, '_>,
        mode: OpenMode<'_, '_>,
    ) -> PyResult<Self> {
        let opts = args.apply(py, Options::default())?;
        let named = named_families(py, &opts, mode.column_families)?;
        let read_only = mode.read_only;
        if read_only && !named.is_empty() {
            return Err(invalid_argument(
                py,
                "column_families cannot be given with read_only=True: a read-only open uses the \
                 database's options for every column family"
                    .into(),
            ));
        }
        let has_merge_operator = opts.merge_operator.is_some();
        let open_opts = opts.clone();
        let r = py.detach(|| {
            if read_only {
                Db::open_read_only(&path, open_opts)
            } else {
                Db::open_cf(&path, open_opts, named)
            }
        });
        let db = check(py, r)?;
        let txns = match Transactions::open(py, &db, mode.transactions.as_deref(), mode.lock_timeout) {
            Ok(t) => t,
            Err(e) => {
                py.detach(|| drop(db));
                return Err(e);
            }
        };
        let iters = Mutex::new(Vec::new());
        Ok(Self { db: Mutex::new(Some(db)), path, has_merge_operator, opts, iters, txns, read_only })
    }
}
