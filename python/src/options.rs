//! The option keywords `DB(...)` and `repair_db(...)` share.
//!
//! Owns: turning the keywords into `strata::Options`. Must not: know option names or parse
//! values beyond what PyO3 converts; that is the engine's options table.

use pyo3::prelude::*;
use strata::Options;

use crate::errors::check;

/// The option keywords `DB(...)` and `repair_db(...)` share; `None` is a keyword not given.
pub(crate) struct OptionArgs {
    pub(crate) create_if_missing: Option<bool>,
    pub(crate) error_if_exists: Option<bool>,
    pub(crate) write_buffer_size: Option<usize>,
    pub(crate) cache_size: Option<usize>,
    pub(crate) bloom_bits_per_key: Option<u32>,
    pub(crate) compression: Option<String>,
    pub(crate) min_blob_size: Option<usize>,
    pub(crate) merge_operator: Option<String>,
    pub(crate) sync_gather_micros: Option<u32>,
    pub(crate) write_spin_micros: Option<u32>,
    pub(crate) options: Option<String>,
}

/// A keyword's value as the options table reads it.
fn text<T: ToString>(v: Option<T>) -> Option<String> {
    v.map(|v| v.to_string())
}

impl OptionArgs {
    /// The keywords given, each under its option name in the engine's table (`compression` is
    /// the table's shorthand for every level and blobs), with its value as text.
    fn named(&self) -> Vec<(&'static str, String)> {
        let keywords = [
            ("create_if_missing", text(self.create_if_missing)),
            ("error_if_exists", text(self.error_if_exists)),
            ("write_buffer_size", text(self.write_buffer_size)),
            ("cache_size", text(self.cache_size)),
            ("bloom_bits_per_key", text(self.bloom_bits_per_key)),
            ("compression", self.compression.clone()),
            ("min_blob_size", text(self.min_blob_size)),
            ("merge_operator", self.merge_operator.clone()),
            ("sync_gather_micros", text(self.sync_gather_micros)),
            ("write_spin_micros", text(self.write_spin_micros)),
        ];
        keywords.into_iter().filter_map(|(name, v)| Some((name, v?))).collect()
    }

    /// `opts` with every keyword given set by name (`Options::set`), the `options` string last.
    pub(crate) fn apply(self, py: Python<'_>, mut opts: Options) -> PyResult<Options> {
        for (name, value) in self.named() {
            check(py, opts.set(name, &value))?;
        }
        if let Some(text) = &self.options {
            // Last, so that it wins over the keyword arguments.
            opts = check(py, opts.with_option_string(text))?;
        }
        Ok(opts)
    }
}
