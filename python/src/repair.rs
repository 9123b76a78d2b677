//! `strata.repair_db`: `strata::Db::repair` and its report as a dict.
//!
//! Owns: the report's Python shape. Must not: open the database; repair runs on one that is
//! closed.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use strata::{Db, Options, RepairReport};

use crate::errors::check;
use crate::open::path_arg;
use crate::options::{CompressionArg, OptionArgs, PlyvelArgs};

/// Rebuilds the database in directory `name` (or `path=`), which need not open, from its data
/// files (`strata::Db::repair`). Takes the option keywords of `DB`, plyvel's and strata's (pass
/// the options the database is used with). Returns the report as a dict; files taken out of the
/// database are in `path/lost/`. Raises `LockedError` while the database is open and
/// `NotADatabaseError` for a directory without one.
#[pyfunction]
#[pyo3(signature = (
    name = None,
    *,
    paranoid_checks = None,
    write_buffer_size = None,
    max_open_files = None,
    lru_cache_size = None,
    block_size = None,
    block_restart_interval = None,
    max_file_size = None,
    compression = CompressionArg::NotGiven,
    bloom_filter_bits = None,
    comparator = None,
    comparator_name = None,
    cache_size = None,
    bloom_bits_per_key = None,
    min_blob_size = None,
    merge_operator = None,
    sync_gather_micros = None,
    write_spin_micros = None,
    prefix_extractor = None,
    options = None,
    path = None,
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn repair_db<'py>(
    py: Python<'py>,
    name: Option<&Bound<'_, PyAny>>,
    paranoid_checks: Option<bool>,
    write_buffer_size: Option<usize>,
    max_open_files: Option<usize>,
    lru_cache_size: Option<usize>,
    block_size: Option<usize>,
    block_restart_interval: Option<usize>,
    max_file_size: Option<u64>,
    compression: CompressionArg,
    bloom_filter_bits: Option<u32>,
    comparator: Option<&Bound<'py, PyAny>>,
    comparator_name: Option<&Bound<'py, PyAny>>,
    cache_size: Option<usize>,
    bloom_bits_per_key: Option<u32>,
    min_blob_size: Option<usize>,
    merge_operator: Option<&Bound<'py, PyAny>>,
    sync_gather_micros: Option<u32>,
    write_spin_micros: Option<u32>,
    prefix_extractor: Option<String>,
    options: Option<String>,
    path: Option<&Bound<'_, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    // Accepted for plyvel, nothing to set: see `options::PlyvelArgs`.
    let _ = paranoid_checks;
    let path = path_arg(name, path)?;
    let plyvel = PlyvelArgs {
        max_open_files,
        lru_cache_size,
        block_size,
        block_restart_interval,
        max_file_size,
        bloom_filter_bits,
        comparator,
        comparator_name,
    };
    let args = OptionArgs {
        create_if_missing: None,
        error_if_exists: None,
        write_buffer_size,
        cache_size,
        bloom_bits_per_key,
        compression,
        min_blob_size,
        merge_operator,
        sync_gather_micros,
        write_spin_micros,
        prefix_extractor,
        options,
        plyvel,
    };
    let opts = args.apply(py, Options { create_if_missing: false, ..Options::default() })?;
    let r = py.detach(|| Db::repair(&path, opts));
    report_dict(py, &check(py, r)?)
}

pub(crate) fn lost_list<'py>(
    py: Python<'py>,
    files: &[strata::db::LostFile],
) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for f in files {
        let d = PyDict::new(py);
        d.set_item("file", &f.file)?;
        d.set_item("moved_to", &f.moved_to)?;
        d.set_item("reason", &f.reason)?;
        list.append(d)?;
    }
    Ok(list)
}

pub(crate) fn report_dict<'py>(py: Python<'py>, r: &RepairReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("clean", r.is_clean())?;
    d.set_item("manifest_number", r.manifest_number)?;
    d.set_item("last_sequence", r.last_sequence)?;
    d.set_item("tables_kept", &r.tables_kept)?;
    d.set_item("tables_lost", lost_list(py, &r.tables_lost)?)?;
    d.set_item("tables_replaced", lost_list(py, &r.tables_replaced)?)?;
    d.set_item("tables_from_wals", &r.tables_from_wals)?;
    d.set_item("tables_rewritten", &r.tables_rewritten)?;
    d.set_item("blob_files_kept", &r.blob_files_kept)?;
    d.set_item("blob_files_lost", lost_list(py, &r.blob_files_lost)?)?;
    let dangling = PyList::empty(py);
    for x in &r.dangling_blob_references {
        let e = PyDict::new(py);
        e.set_item("table", x.table)?;
        e.set_item("blob_file", x.blob_file)?;
        e.set_item("entries", x.entries)?;
        dangling.append(e)?;
    }
    d.set_item("dangling_blob_references", dangling)?;
    d.set_item("wal_files", &r.wal_files)?;
    d.set_item("wal_files_cut_short", &r.wal_files_cut_short)?;
    d.set_item("wal_records_salvaged", r.wal_records_salvaged)?;
    d.set_item("wal_records_dropped", r.wal_records_dropped)?;
    d.set_item("wal_bytes_skipped", r.wal_bytes_skipped)?;
    d.set_item("other_moved", lost_list(py, &r.other_moved)?)?;
    Ok(d)
}
