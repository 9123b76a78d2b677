//! Bulk loading: `strata.SstFileWriter` (RocksDB's `SstFileWriter`), which writes a table file of
//! sorted keys outside any database, `strata.ExternalFileInfo`, what a finished file holds, and
//! [`ingest`], the body of `DB.ingest_external_file` and `ColumnFamily.ingest_external_file`.
//!
//! Owns: the writer's state (writing, finished, abandoned) and removing a file it could not
//! finish, since an unfinished table cannot be ingested. Must not: check key order or the files
//! itself (the engine's writer and ingestion do), call the engine with the GIL held, or take the
//! writer's mutex while attached (a detached thread may hold it for a block write).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use strata::{ColumnFamily, Error, ExternalFileInfo, IngestOptions, Options, SstFileWriter};

use crate::args::bytes_arg;
use crate::db::PyDb;
use crate::errors::check;
use crate::family::family_options;
use crate::open::path_arg;

enum State {
    Writing(Box<SstFileWriter>),
    Finished(ExternalFileInfo),
    /// Left by an exception, dropped unfinished, or its `finish()` failed: the file is removed.
    Abandoned,
}

/// What a finished external file holds.
#[pyclass(module = "strata._strata", name = "ExternalFileInfo", frozen)]
pub(crate) struct PyExternalFileInfo {
    info: ExternalFileInfo,
}

#[pymethods]
impl PyExternalFileInfo {
    /// Where the file is.
    #[getter]
    fn path(&self) -> OsString {
        self.info.path.clone().into_os_string()
    }

    /// Its first key.
    #[getter]
    fn smallest_key<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.info.smallest_key)
    }

    /// Its last key.
    #[getter]
    fn largest_key<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.info.largest_key)
    }

    /// Its entries: puts, deletes and merge operands.
    #[getter]
    fn num_entries(&self) -> u64 {
        self.info.num_entries
    }

    /// Its size in bytes.
    #[getter]
    fn file_size(&self) -> u64 {
        self.info.file_size
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let key = |k: &[u8]| PyBytes::new(py, k).repr().map(|r| r.to_string()).unwrap_or_default();
        format!(
            "<strata.ExternalFileInfo {:?}: {} entries from {} to {}, {} bytes>",
            self.info.path.display().to_string(),
            self.info.num_entries,
            key(&self.info.smallest_key),
            key(&self.info.largest_key),
            self.info.file_size
        )
    }
}

/// A table file of keys added in strictly increasing order, to ingest into a database later.
#[pyclass(module = "strata._strata", name = "SstFileWriter", frozen)]
pub(crate) struct PySstFileWriter {
    path: PathBuf,
    /// The options the file is written with; their file system removes an abandoned file.
    opts: Options,
    state: Mutex<State>,
}

fn not_writing(path: &Path, state: &State) -> Error {
    let why = match state {
        State::Finished(_) => "the writer has finished",
        _ => "the writer was abandoned",
    };
    Error::InvalidArgument(format!("{}: {why}", path.display()))
}

impl PySstFileWriter {
    /// Runs `f` on the engine writer, without the GIL; an error once the file is finished.
    fn with_writer<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut SstFileWriter) -> strata::Result<T> + Send,
    ) -> PyResult<T> {
        let r = py.detach(|| match &mut *self.state.lock() {
            State::Writing(w) => f(w),
            other => Err(not_writing(&self.path, other)),
        });
        check(py, r)
    }

    /// Drops an unfinished file; finished files stay.
    fn abandon(&self, state: &mut State) {
        if let State::Writing(_) = state {
            *state = State::Abandoned;
            // An unfinished table cannot be ingested; leaving it would only mislead.
            let _ = self.opts.fs.remove_file(&self.path);
        }
    }
}

impl Drop for PySstFileWriter {
    fn drop(&mut self) {
        let mut state = std::mem::replace(self.state.get_mut(), State::Abandoned);
        self.abandon(&mut state);
    }
}

#[pymethods]
impl PySstFileWriter {
    /// Creates the file `path` (replacing a file there). The keyword options are option names as
    /// in `DB.create_column_family` (block size, compression, bloom bits, prefix extractor, ...):
    /// give the ones of the database the file is for.
    #[new]
    #[pyo3(signature = (path, **options))]
    fn new(py: Python<'_>, path: &Bound<'_, PyAny>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let path = path_arg(Some(path), None)?;
        let opts = family_options(py, &Options::default(), options)?;
        let r = py.detach(|| SstFileWriter::create(&path, &opts));
        let writer = check(py, r)?;
        Ok(Self { path, opts, state: Mutex::new(State::Writing(Box::new(writer))) })
    }

    /// Adds `key = value`; keys must be strictly increasing (else `InvalidArgumentError`, and the
    /// writer stays usable).
    fn put(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let (key, value) = (bytes_arg(key, "key")?, bytes_arg(value, "value")?);
        let (k, v) = (key.as_bytes(), value.as_bytes());
        self.with_writer(py, |w| w.put(k, v))
    }

    /// Adds a deletion of `key`: once ingested, older values of it are hidden.
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = bytes_arg(key, "key")?;
        let k = key.as_bytes();
        self.with_writer(py, |w| w.delete(k))
    }

    /// Adds a merge operand for `key`, folded by the database's merge operator once ingested.
    fn merge(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let (key, value) = (bytes_arg(key, "key")?, bytes_arg(value, "value")?);
        let (k, v) = (key.as_bytes(), value.as_bytes());
        self.with_writer(py, |w| w.merge(k, v))
    }

    /// Completes and syncs the file and returns what it holds. A file with no entries cannot be
    /// finished (`InvalidArgumentError`); a file that fails to finish is removed.
    fn finish(&self, py: Python<'_>) -> PyResult<PyExternalFileInfo> {
        let r = py.detach(|| {
            let mut state = self.state.lock();
            match std::mem::replace(&mut *state, State::Abandoned) {
                State::Writing(w) => match w.finish() {
                    Ok(info) => {
                        *state = State::Finished(info.clone());
                        Ok(info)
                    }
                    Err(e) => {
                        let _ = self.opts.fs.remove_file(&self.path);
                        Err(e)
                    }
                },
                other => {
                    let e = not_writing(&self.path, &other);
                    *state = other;
                    Err(e)
                }
            }
        });
        Ok(PyExternalFileInfo { info: check(py, r)? })
    }

    /// The file's path.
    #[getter]
    fn path(&self) -> OsString {
        self.path.clone().into_os_string()
    }

    /// Entries added so far.
    #[getter]
    fn num_entries(&self, py: Python<'_>) -> u64 {
        py.detach(|| match &*self.state.lock() {
            State::Writing(w) => w.num_entries(),
            State::Finished(info) => info.num_entries,
            State::Abandoned => 0,
        })
    }

    /// What the file holds once `finish()` (or the end of a `with` block) completed it, else None.
    #[getter]
    fn info(&self, py: Python<'_>) -> Option<PyExternalFileInfo> {
        py.detach(|| match &*self.state.lock() {
            State::Finished(info) => Some(PyExternalFileInfo { info: info.clone() }),
            _ => None,
        })
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Finishes the file, unless the block raised (then the unfinished file is removed) or
    /// already finished it. The exception propagates either way.
    #[pyo3(signature = (exc_type = None, _exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if exc_type.is_some_and(|t| !t.is_none()) {
            py.detach(|| self.abandon(&mut self.state.lock()));
        } else if py.detach(|| matches!(&*self.state.lock(), State::Writing(_))) {
            self.finish(py)?;
        }
        Ok(false)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let state = py.detach(|| match &*self.state.lock() {
            State::Writing(_) => "writing",
            State::Finished(_) => "finished",
            State::Abandoned => "abandoned",
        });
        format!("<strata.SstFileWriter {:?} ({state})>", self.path.display().to_string())
    }
}

/// The paths of `ingest_external_file(paths)`: one path (`str`, `bytes`, `os.PathLike`) or an
/// iterable of them.
fn path_list(paths: &Bound<'_, PyAny>) -> PyResult<Vec<PathBuf>> {
    let one = paths.is_instance_of::<PyString>()
        || paths.is_instance_of::<PyBytes>()
        || paths.hasattr("__fspath__")?;
    if one {
        return Ok(vec![path_arg(Some(paths), None)?]);
    }
    paths.try_iter()?.map(|p| path_arg(Some(&p?), None)).collect()
}

/// Ingests the files at `paths` into column family `cf` (the default family when `None`) of
/// `db`, atomically.
pub(crate) fn ingest(
    db: &PyDb,
    py: Python<'_>,
    cf: Option<&ColumnFamily>,
    paths: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let paths = path_list(paths)?;
    let handle = db.handle(py)?;
    let opts = IngestOptions::default();
    let r = py.detach(|| match cf {
        Some(cf) => handle.ingest_external_file_cf(cf, &paths, &opts),
        None => handle.ingest_external_file(&paths, &opts),
    });
    check(py, r)
}
