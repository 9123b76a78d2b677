//! The option keywords `DB(...)` and `repair_db(...)` share.
//!
//! Owns: turning the keywords into `strata::Options`. Must not: know option names or parse
//! values beyond what PyO3 converts; that is the engine's options table.

use pyo3::prelude::*;
use strata::{Compression, Options};

use crate::errors::{check, invalid_argument};

/// The option keywords `DB(...)` and `repair_db(...)` share.
pub(crate) struct OptionArgs {
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

impl OptionArgs {
    /// `opts` with every keyword given applied, the `options` string last.
    pub(crate) fn apply(self, py: Python<'_>, mut opts: Options) -> PyResult<Options> {
        if let Some(v) = self.write_buffer_size {
            opts.write_buffer_size = v;
        }
        if let Some(v) = self.cache_size {
            opts.cache_size = v;
        }
        if let Some(v) = self.bloom_bits_per_key {
            opts.bloom_bits_per_key = v;
        }
        if let Some(name) = self.compression {
            let c = check(py, Compression::parse(&name))?;
            opts.set_compression(c);
        }
        if let Some(v) = self.min_blob_size {
            opts.min_blob_size = v;
        }
        if let Some(v) = self.sync_gather_micros {
            opts.sync_gather_micros = v;
        }
        if let Some(v) = self.write_spin_micros {
            opts.write_spin_micros = v;
        }
        if let Some(name) = self.merge_operator {
            match strata::merge::builtin(&name) {
                Some(op) => opts.merge_operator = Some(op),
                None => {
                    return Err(invalid_argument(
                        py,
                        format!("merge_operator: unknown operator {name:?} (expected \"uint64add\" or \"stringappend\")"),
                    ))
                }
            }
        }
        if let Some(text) = self.options {
            // Last, so that it wins over the keyword arguments (which all have defaults).
            opts = check(py, opts.with_option_string(&text))?;
        }
        Ok(opts)
    }
}
