//! The option keywords `DB(...)` and `repair_db(...)` share: strata's own names and plyvel's
//! (`lru_cache_size`, `bloom_filter_bits`, `max_file_size`, `comparator`, ...).
//!
//! Owns: turning the keywords into `strata::Options`, mapping each plyvel keyword to the strata
//! option it names, and refusing what strata cannot do (a custom comparator). Must not: know
//! option names or parse values beyond what PyO3 converts; that is the engine's options table.

use pyo3::exceptions::{PyNotImplementedError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use strata::Options;

use crate::errors::{check, invalid_argument};
use crate::py_merge::python_operator;

/// The `compression=` keyword: not given (the engine's default: none on the first two levels,
/// snappy below and for blobs; the signature shows it as `...`, which may be passed too), None
/// (no compression, as in plyvel), or a compression's name (`str` or, as plyvel takes it,
/// `bytes`).
pub(crate) enum CompressionArg {
    NotGiven,
    Off,
    Named(String),
}

impl<'a, 'py> FromPyObject<'a, 'py> for CompressionArg {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if obj.is_none() {
            return Ok(Self::Off);
        }
        if obj.is(obj.py().Ellipsis()) {
            return Ok(Self::NotGiven);
        }
        if let Ok(b) = obj.cast::<PyBytes>() {
            if let Ok(name) = std::str::from_utf8(b.as_bytes()) {
                return Ok(Self::Named(name.to_string()));
            }
        }
        if let Ok(s) = obj.cast::<PyString>() {
            return Ok(Self::Named(s.to_cow()?.into_owned()));
        }
        Err(PyTypeError::new_err("compression must be None or a compression name (\"snappy\", \"lz4\", ...)"))
    }
}

/// The keywords plyvel's `DB(...)` and `repair_db(...)` take that strata spells differently;
/// `None` is a keyword not given. (`paranoid_checks` is accepted and ignored by the callers:
/// strata verifies every block's checksum when it first reads it, and its WAL recovery mode,
/// `options="wal_recovery_mode=..."`, decides which damage fails an open.)
#[derive(Default)]
pub(crate) struct PlyvelArgs<'a, 'py> {
    pub(crate) max_open_files: Option<usize>,
    /// strata's `cache_size`.
    pub(crate) lru_cache_size: Option<usize>,
    pub(crate) block_size: Option<usize>,
    pub(crate) block_restart_interval: Option<usize>,
    /// strata's `target_file_size`.
    pub(crate) max_file_size: Option<u64>,
    /// strata's `bloom_bits_per_key` (0: no bloom filter).
    pub(crate) bloom_filter_bits: Option<u32>,
    pub(crate) comparator: Option<&'a Bound<'py, PyAny>>,
    pub(crate) comparator_name: Option<&'a Bound<'py, PyAny>>,
}

/// The option keywords `DB(...)` and `repair_db(...)` share; `None` is a keyword not given.
pub(crate) struct OptionArgs<'a, 'py> {
    pub(crate) create_if_missing: Option<bool>,
    pub(crate) error_if_exists: Option<bool>,
    pub(crate) write_buffer_size: Option<usize>,
    pub(crate) cache_size: Option<usize>,
    pub(crate) bloom_bits_per_key: Option<u32>,
    pub(crate) compression: CompressionArg,
    pub(crate) min_blob_size: Option<usize>,
    /// A built-in operator's name, or a Python merge operator (`py_merge`).
    pub(crate) merge_operator: Option<&'a Bound<'py, PyAny>>,
    pub(crate) sync_gather_micros: Option<u32>,
    pub(crate) write_spin_micros: Option<u32>,
    /// `fixed:N`, `capped:N` or RocksDB's `rocksdb.FixedPrefix.N` (the options table parses it).
    pub(crate) prefix_extractor: Option<String>,
    pub(crate) options: Option<String>,
    pub(crate) plyvel: PlyvelArgs<'a, 'py>,
}

/// A keyword's value as the options table reads it.
fn text<T: ToString>(v: Option<T>) -> Option<String> {
    v.map(|v| v.to_string())
}

/// One value for an option that has a strata and a plyvel keyword; both given and different is
/// an error, since neither would be right to drop.
fn either<T: PartialEq>(
    py: Python<'_>,
    ours: Option<T>,
    plyvel: Option<T>,
    names: [&str; 2],
) -> PyResult<Option<T>> {
    match (ours, plyvel) {
        (Some(a), Some(b)) if a != b => Err(invalid_argument(
            py,
            format!("{} and {} name the same option: give one of them", names[0], names[1]),
        )),
        (a, b) => Ok(a.or(b)),
    }
}

impl PlyvelArgs<'_, '_> {
    /// Refuses a custom comparator: strata orders keys bytewise only (LevelDB's default).
    fn check_comparator(&self, py: Python<'_>) -> PyResult<()> {
        if self.comparator.is_some_and(|c| !c.is_none()) {
            return Err(PyNotImplementedError::new_err(
                "comparator: custom comparators are not supported; strata orders keys bytewise \
                 (as LevelDB's default comparator)",
            ));
        }
        if self.comparator_name.is_some_and(|c| !c.is_none()) {
            return Err(invalid_argument(py, "comparator_name is only meaningful with a comparator".into()));
        }
        Ok(())
    }
}

impl OptionArgs<'_, '_> {
    /// The keywords given, each under its option name in the engine's table (`compression` is
    /// the table's shorthand for every level and blobs), with its value as text.
    fn named(&self, py: Python<'_>) -> PyResult<Vec<(&'static str, String)>> {
        let p = &self.plyvel;
        let cache_size = either(py, self.cache_size, p.lru_cache_size, ["cache_size", "lru_cache_size"])?;
        let bloom = either(
            py,
            self.bloom_bits_per_key,
            p.bloom_filter_bits,
            ["bloom_bits_per_key", "bloom_filter_bits"],
        )?;
        let compression = match &self.compression {
            CompressionArg::NotGiven => None,
            CompressionArg::Off => Some("none".to_string()),
            CompressionArg::Named(name) => Some(name.clone()),
        };
        let merge_operator_name = match self.merge_operator {
            Some(m) if m.is_instance_of::<PyString>() => Some(m.extract::<String>()?),
            _ => None,
        };
        let keywords = [
            ("create_if_missing", text(self.create_if_missing)),
            ("error_if_exists", text(self.error_if_exists)),
            ("write_buffer_size", text(self.write_buffer_size)),
            ("cache_size", text(cache_size)),
            ("bloom_bits_per_key", text(bloom)),
            ("compression", compression),
            ("min_blob_size", text(self.min_blob_size)),
            ("merge_operator", merge_operator_name),
            ("sync_gather_micros", text(self.sync_gather_micros)),
            ("write_spin_micros", text(self.write_spin_micros)),
            ("prefix_extractor", self.prefix_extractor.clone()),
            ("max_open_files", text(p.max_open_files)),
            ("block_size", text(p.block_size)),
            ("block_restart_interval", text(p.block_restart_interval)),
            ("target_file_size", text(p.max_file_size)),
        ];
        Ok(keywords.into_iter().filter_map(|(name, v)| Some((name, v?))).collect())
    }

    /// `opts` with every keyword given set by name (`Options::set`), a Python merge operator
    /// installed, and the `options` string last.
    pub(crate) fn apply(self, py: Python<'_>, mut opts: Options) -> PyResult<Options> {
        self.plyvel.check_comparator(py)?;
        for (name, value) in self.named(py)? {
            check(py, opts.set(name, &value))?;
        }
        if let Some(op) = python_operator(self.merge_operator)? {
            opts.merge_operator = Some(op);
        }
        if let Some(text) = &self.options {
            // Last, so that it wins over the keyword arguments.
            opts = check(py, opts.with_option_string(text))?;
        }
        Ok(opts)
    }
}
