//! `strata bench --benchmarks=insertbench`: Mark Callaghan's insert benchmark (iibench, seed
//! 004) on strata, RocksDB (`--engine=rocksdb`) or LMDB (`--engine=heed`). Each of `--threads`
//! clients has its own table (its id prefixes every key) with three secondary indexes, and
//! the phases run in the insert benchmark's order: `l.i0` (load in primary-key order, no
//! indexes), `l.x` (create the indexes), `l.i1` (load with index maintenance), then `qr100` and
//! `qr1000` (range queries on the indexes beside inserts paced to 100 and 1000 rows/s per
//! client). A checker then matches every row against its index entries.
//!
//! Owns: the run (flags, open, phases, check) and its flags' meaning. Must not: contain the
//! thread loops (phases.rs), formats (report.rs, monitor.rs), byte layout (schema.rs) or engine
//! calls (store.rs and the store_* files).

mod checker;
mod monitor;
mod phases;
mod report;
mod schema;
mod store;
#[cfg(feature = "heed")]
mod store_lmdb;
#[cfg(feature = "rocksdb")]
mod store_rocksdb;
mod store_strata;
mod table;
#[cfg(test)]
mod tests;

use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Result};
use strata::WriteOptions;

use super::engine::{self, EngineOptions};
use super::flags::Flags;
use super::resources::{self, Sample};
use super::valuegen::ValuePool;
use phases::{Config, Phase};
use store::Tables;

/// The benchmark name in `--benchmarks`.
pub const NAME: &str = "insertbench";

/// `--ib_phases`: the names, each known, in the benchmark's order (l.i0, l.x, l.i1, then any
/// qrN), none twice.
pub fn parse_phases(v: &str) -> Result<Vec<String>, String> {
    let names: Vec<&str> = v.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    let mut last: Option<Phase> = None;
    for (i, n) in names.iter().enumerate() {
        let Some(p) = Phase::parse(n) else {
            return Err(format!(
                "unknown phase {n:?} (phases: l.i0, l.x, l.i1, qrN for N inserts/s per client)"
            ));
        };
        if names[..i].contains(n) {
            return Err(format!("phase {n} is given twice"));
        }
        if last.is_some_and(|l| l.rank() > p.rank()) {
            return Err(format!(
                "phase {n} comes before {} in the insert benchmark",
                last.map_or_else(String::new, Phase::name)
            ));
        }
        last = Some(p);
    }
    Ok(names.into_iter().map(String::from).collect())
}

/// Runs the insert benchmark as `flags` say, writing its report to `out`; an error (exit 2)
/// when the checker finds a row and its index entries that do not match.
pub fn run(flags: &Flags, out: &mut dyn Write) -> Result<()> {
    if flags.benchmarks.len() != 1 {
        bail!("insertbench runs alone: --benchmarks=insertbench (it loads and checks its own database)");
    }
    if flags.ib_data_min > flags.ib_data_max {
        bail!("--ib_data_min={} is larger than --ib_data_max={}", flags.ib_data_min, flags.ib_data_max);
    }
    if flags.threads > usize::from(schema::TableId::MAX) {
        bail!("--threads={}: at most {} clients (a table each)", flags.threads, schema::TableId::MAX);
    }
    let seed = match flags.seed {
        0 => SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_micros() as u64),
        s => s,
    };
    let (path, _temp_guard) = super::runner::db_dir(flags)?;
    let tables = open_tables(flags, &path)?;
    write!(out, "{}", report::header(flags, &path, seed, &tables.describe()))?;
    let every = |s: u64| (s > 0).then(|| Duration::from_secs(s));
    let csv_every = Duration::from_secs(flags.report_interval_seconds.max(1));
    let csv = flags.report_file.as_deref().map(|p| (p, csv_every));
    let mut monitor = monitor::Monitor::new(&path, every(flags.stats_interval_seconds), csv)?;
    let pool = ValuePool::new(flags.ib_data_max.max(1), flags.compression_ratio);
    let cfg = Config {
        tables: tables.as_ref(),
        clients: flags.threads,
        seed,
        pool: &pool,
        data_min: flags.ib_data_min,
        data_max: flags.ib_data_max,
        rows_l0: flags.ib_rows_l0,
        rows_l1: flags.ib_rows_l1,
        l0_rows_per_commit: flags.ib_l0_rows_per_commit,
        rows_per_commit: flags.ib_rows_per_commit,
        rows_per_query: flags.ib_rows_per_query,
        query_time: Duration::from_secs(flags.ib_query_seconds),
    };
    let mut done = Vec::new();
    for name in &flags.ib_phases {
        let Some(phase) = Phase::parse(name) else { bail!("unknown phase {name:?}") };
        let before = Sample::take();
        let o = phases::run(&cfg, phase, &mut monitor, out)?;
        let mut row = report::PhaseRow::new(phase, &cfg, o, &before, &path);
        write!(out, "{}", row.text())?;
        out.flush()?;
        done.push(row);
    }
    write!(out, "{}", report::table(&done))?;
    if flags.ib_settle {
        settle(tables.as_ref(), &path, out)?;
    }
    if !flags.ib_check {
        writeln!(out, "checker: skipped (--ib_check=0)")?;
        return Ok(out.flush()?);
    }
    let report = checker::check(tables.as_ref())?;
    write!(out, "{}", report.text())?;
    out.flush()?;
    if !report.ok() {
        bail!(
            "insertbench checker: {} rows, {} mismatches between rows and their index entries; \
             the database is not consistent",
            report.rows,
            report.mismatches()
        );
    }
    Ok(())
}

/// `--ib_settle`: flushes, waits for compactions and reports how long that took and the size
/// the database settled at.
fn settle(tables: &dyn Tables, path: &Path, out: &mut dyn Write) -> Result<()> {
    let before = Sample::take();
    tables.settle()?;
    let (du, apparent) = (resources::disk_usage(path), resources::apparent_size(path));
    writeln!(
        out,
        "settle: tables flushed and compactions finished in {:.3} seconds; db {:.1} MB du / {:.1} MB apparent",
        before.elapsed(),
        resources::mb(du),
        resources::mb(apparent)
    )?;
    Ok(out.flush()?)
}

/// The engines the insert benchmark runs on (each optional one when built with its feature).
const ENGINES: &str = "strata, rocksdb (RocksDB) and heed (LMDB)";

/// The engines this build runs the insert benchmark on.
const BUILT: &[&str] = &[
    "strata",
    #[cfg(feature = "rocksdb")]
    "rocksdb",
    #[cfg(feature = "heed")]
    "heed",
];

fn open_tables(flags: &Flags, path: &Path) -> Result<Box<dyn Tables>> {
    // Refused before the directory is emptied, so a bad command line changes nothing.
    if !BUILT.contains(&flags.engine.as_str()) {
        bail!(
            "insertbench runs on {ENGINES}, not --engine={} (an optional engine needs its cargo \
             feature: --features rocksdb or --features heed)",
            flags.engine
        );
    }
    let opts = EngineOptions::from_flags(flags, path);
    if !flags.use_existing_db {
        engine::destroy(path)?;
    }
    match flags.engine.as_str() {
        "strata" => {
            let write_opts = WriteOptions { sync: flags.sync, disable_wal: flags.disable_wal };
            let options = super::engine_strata::options(&opts)?;
            Ok(Box::new(store_strata::StrataTables::open(path, options, write_opts)?))
        }
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Ok(Box::new(store_rocksdb::RocksTables::open(&opts, flags.disable_wal)?)),
        #[cfg(feature = "heed")]
        "heed" => Ok(Box::new(store_lmdb::LmdbTables::open(&opts)?)),
        other => unreachable!("--engine={other} passed the check against BUILT"),
    }
}
