//! plyvel's maintenance calls: `get_property` names, `approximate_size(s)`, and the module
//! function `destroy_db`.
//!
//! Owns: mapping LevelDB's property names to strata's and the `(start, stop)` range arguments.
//! Must not: call the engine with the GIL held.

use std::ops::Range;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};
use strata::{ColumnFamily, Db, Options};

use crate::args::bytes_arg;
use crate::db::PyDb;
use crate::errors::check;
use crate::open::path_arg;

/// A property name (`bytes`, as plyvel takes it, or `str`) as the engine knows it: LevelDB's
/// `leveldb.stats` and `leveldb.num-files-at-level<N>` become strata's; other `leveldb.` names
/// have no strata equivalent and stay unknown (None).
pub(crate) fn property_name(name: &Bound<'_, PyAny>) -> PyResult<String> {
    let name = match name.cast::<PyString>() {
        Ok(s) => s.to_cow()?.into_owned(),
        Err(_) => String::from_utf8(bytes_arg(name, "name")?.as_bytes().to_vec())
            .map_err(|_| PyValueError::new_err("a property name must be UTF-8"))?,
    };
    Ok(match name.strip_prefix("leveldb.") {
        Some(rest) if rest == "stats" || rest.starts_with("num-files-at-level") => format!("strata.{rest}"),
        _ => name,
    })
}

/// The `(start, stop)` pairs of `approximate_sizes(*ranges)`.
pub(crate) fn range_args(ranges: &Bound<'_, PyTuple>) -> PyResult<Vec<Range<Vec<u8>>>> {
    let mut out = Vec::with_capacity(ranges.len());
    for range in ranges.iter() {
        let ends = range.try_iter()?.collect::<PyResult<Vec<_>>>()?;
        let [start, stop] = ends.as_slice() else {
            return Err(PyTypeError::new_err("each range must be a (start, stop) pair"));
        };
        out.push(
            bytes_arg(start, "start")?.as_bytes().to_vec()..bytes_arg(stop, "stop")?.as_bytes().to_vec(),
        );
    }
    Ok(out)
}

/// `Db::approximate_sizes` of `ranges` in column family `cf` (the default family when `None`).
pub(crate) fn approximate_sizes(
    db: &PyDb,
    py: Python<'_>,
    cf: Option<&ColumnFamily>,
    ranges: &[Range<Vec<u8>>],
) -> PyResult<Vec<u64>> {
    let handle = db.handle(py)?;
    let r = py.detach(|| match cf {
        Some(cf) => handle.approximate_sizes_cf(cf, ranges),
        None => handle.approximate_sizes(ranges),
    });
    check(py, r)
}

/// Deletes the closed database in directory `name` (`strata::Db::destroy`, LevelDB's
/// `DestroyDB`): every file strata wrote there, then the directory if nothing else is left. A
/// missing directory is not an error. Raises `LockedError` while it is open and
/// `NotADatabaseError` for a directory holding no file strata wrote.
#[pyfunction]
#[pyo3(signature = (name = None, *, path = None))]
pub(crate) fn destroy_db(
    py: Python<'_>,
    name: Option<&Bound<'_, PyAny>>,
    path: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let path = path_arg(name, path)?;
    let r = py.detach(|| Db::destroy(&path, Options::default()));
    check(py, r)
}
