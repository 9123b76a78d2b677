//! `strata bench --benchmarks=linkbench` (issue 35): Facebook's LinkBench social-graph
//! workload (seed 002) on strata, RocksDB's TransactionDB (`--engine=rocksdb`) or LMDB
//! (`--engine=heed`): a load phase (`--maxid1` nodes with a LinkBench-shaped number
//! of out-links each, every list's count written with its links) and a request phase
//! (`--requesters` threads drawing LinkBench's ten operations in FBWorkload's proportions),
//! then a checker that every list's count equals its visible links.
//!
//! Owns: the run (open, phases, output, check) and its flags' meaning. Must not: contain the
//! operation loops (phases.rs), distributions (workload.rs), byte layout (layout.rs) or engine
//! calls (store.rs and the store_* files). `--transactions=0` does the same writes as plain
//! batches (strata only), to show the lost count updates transactions prevent; the checker then
//! usually fails the run.

mod checker;
mod layout;
mod phases;
mod store;
#[cfg(feature = "heed")]
mod store_lmdb;
#[cfg(feature = "rocksdb")]
mod store_rocksdb;
mod store_strata;
mod workload;

use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Result};
use strata::WriteOptions;

use super::engine::{self, EngineOptions};
use super::flags::Flags;
use super::histogram::Histogram;
use super::resources::{Efficiency, Sample};
use super::valuegen::ValuePool;
use phases::{IdChoosers, PhaseConfig, PhaseOut};
use store::{Graph, LinkStore};
use store_strata::{Atomicity, StrataTables};
use workload::OPS;

/// The benchmark name in `--benchmarks`.
pub const NAME: &str = "linkbench";

/// The largest payload a generated node or link can have (twice the mean node size).
const MAX_DATA: usize = 2 * workload::NODE_DATA_MEAN;

/// Runs LinkBench as `flags` say, writing its report to `out`; an error (exit 2) when the
/// checker finds a count that does not match its list.
pub fn run(flags: &Flags, out: &mut dyn Write) -> Result<()> {
    if flags.benchmarks.len() != 1 {
        bail!("linkbench runs alone: --benchmarks=linkbench (it loads and checks its own database)");
    }
    let seed = match flags.seed {
        0 => SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_micros() as u64),
        s => s,
    };
    let (path, _temp_guard) = super::runner::db_dir(flags)?;
    let csv = super::runner::open_csv(flags)?;
    let mut store = open_store(flags, &path)?;
    write!(out, "{}", header(flags, &path, seed, &store.describe()))?;
    let pool = ValuePool::new(MAX_DATA, flags.compression_ratio);
    let mut cfg = PhaseConfig {
        maxid1: flags.maxid1,
        threads: flags.loaders,
        seed,
        requests: flags.requests,
        duration: Duration::from_secs(flags.duration),
        stats_interval: (flags.stats_interval_seconds > 0)
            .then(|| Duration::from_secs(flags.stats_interval_seconds)),
        csv: csv.as_deref(),
        pool: &pool,
    };
    if flags.use_existing_db {
        writeln!(out, "load: skipped (--use_existing_db is true)")?;
    } else {
        load_phase(store.as_ref(), &cfg, &path, out)?;
        if flags.linkbench_settle {
            drop(store);
            settle(flags, &path, out)?;
            store = open_tables(flags, &path)?;
        }
    }
    cfg.threads = flags.requesters;
    let (before, requests) = request_phase(store.as_ref(), &cfg, &path, out)?;
    if flags.linkbench_settle_after {
        drop(store);
        settle(flags, &path, out)?;
        let eff = Efficiency::since(&before, requests, None, &path);
        write!(out, "{}", eff.line("requests, then settled (per request)"))?;
        store = open_tables(flags, &path)?;
    }
    if !flags.linkbench_check {
        writeln!(out, "checker: skipped (--linkbench_check=0)")?;
        return Ok(out.flush()?);
    }
    let report = checker::check(store.as_ref())?;
    write!(out, "{}", report.text())?;
    out.flush()?;
    if !report.ok() {
        bail!(
            "linkbench checker: {} count mismatches, {} id2 index entries for {} links; the database is not consistent",
            report.mismatches,
            report.index_entries,
            report.links
        );
    }
    Ok(())
}

/// The engines LinkBench runs on (each optional one when built with its feature).
const ENGINES: &str = "strata, rocksdb (RocksDB's TransactionDB) and heed (LMDB)";

/// The engines this build runs LinkBench on (the optional ones with their cargo features).
const BUILT: &[&str] = &[
    "strata",
    #[cfg(feature = "rocksdb")]
    "rocksdb",
    #[cfg(feature = "heed")]
    "heed",
];

fn open_store(flags: &Flags, path: &Path) -> Result<Box<dyn LinkStore>> {
    // Refused before the directory is emptied, so a bad command line changes nothing.
    if !flags.transactions && flags.engine != "strata" {
        bail!("--transactions=0 is for --engine=strata only: {} always writes in transactions", flags.engine);
    }
    if !BUILT.contains(&flags.engine.as_str()) {
        bail!(
            "linkbench runs on {ENGINES}, not --engine={} (an optional engine needs its cargo \
             feature: --features rocksdb or --features heed)",
            flags.engine
        );
    }
    if !flags.use_existing_db {
        engine::destroy(path)?;
    }
    open_tables(flags, path)
}

/// Opens the engine's tables at `path` as they are.
fn open_tables(flags: &Flags, path: &Path) -> Result<Box<dyn LinkStore>> {
    let opts = EngineOptions::from_flags(flags, path);
    let first_new_node = flags.maxid1;
    match flags.engine.as_str() {
        "strata" => {
            let write_opts = WriteOptions { sync: flags.sync, disable_wal: flags.disable_wal };
            let atomicity = match (flags.transactions, flags.txn_mode == "pessimistic") {
                (false, _) => Atomicity::Batch,
                (true, false) => Atomicity::Optimistic,
                (true, true) => Atomicity::Pessimistic,
            };
            let tables =
                StrataTables::open(path, super::engine_strata::options(&opts)?, write_opts, atomicity)?;
            Ok(Box::new(Graph::new(tables, first_new_node)))
        }
        #[cfg(feature = "rocksdb")]
        "rocksdb" => {
            let tables = store_rocksdb::RocksTables::open(&opts, flags.disable_wal)?;
            Ok(Box::new(Graph::new(tables, first_new_node)))
        }
        #[cfg(feature = "heed")]
        "heed" => Ok(Box::new(Graph::new(store_lmdb::LmdbTables::open(&opts)?, first_new_node))),
        other => unreachable!("--engine={other} passed the check against BUILT"),
    }
}

fn header(f: &Flags, path: &Path, seed: u64, engine: &str) -> String {
    format!(
        "LinkBench:  maxid1 {} ({} nodes), {} link types, FBWorkload.properties operation mix\n\
         Load:       {} loader threads\n\
         Requests:   {} requester threads, {}\n\
         Writes:     sync {}, disable_wal {}\n\
         Seed:       {seed}\n\
         Engine:     {engine}\nDB path:    [{}]\n\
         ------------------------------------------------\n",
        f.maxid1,
        f.maxid1.saturating_sub(workload::START_ID),
        workload::LINK_TYPE_COUNT,
        f.loaders,
        f.requesters,
        if f.duration > 0 {
            format!("{} seconds", f.duration)
        } else {
            format!("{} requests each", f.requests)
        },
        u8::from(f.sync),
        u8::from(f.disable_wal),
        path.display(),
    )
}

fn load_phase(store: &dyn LinkStore, cfg: &PhaseConfig<'_>, path: &Path, out: &mut dyn Write) -> Result<()> {
    let before = Sample::take();
    let o = phases::load(store, cfg)?;
    let secs = before.elapsed().max(1e-6);
    let h = &o.hists[0];
    writeln!(
        out,
        "load         : {} nodes, {} links in {secs:.3} seconds: {:.0} nodes/sec, {:.0} links/sec",
        o.nodes,
        o.links,
        o.nodes as f64 / secs,
        o.links as f64 / secs
    )?;
    writeln!(out, "  per node (node + its links + counts): {}", latency(h))?;
    let eff = Efficiency::since(&before, o.nodes, o.switches, path);
    write!(out, "{}", eff.line("load (per node)"))?;
    Ok(())
}

/// Flushes every table and waits until no compaction is pending, so the request phase measures
/// requests on every engine rather than the end of the load: a 60-second phase cannot amortise
/// what a load leaves to compact, and how much it leaves depends on when it happened to stop.
/// LMDB has nothing to settle.
fn settle(flags: &Flags, path: &Path, out: &mut dyn Write) -> Result<()> {
    let before = Sample::take();
    let opts = EngineOptions::from_flags(flags, path);
    match flags.engine.as_str() {
        "strata" => store_strata::settle(path, super::engine_strata::options(&opts)?)?,
        #[cfg(feature = "rocksdb")]
        "rocksdb" => store_rocksdb::settle(&opts)?,
        _ => {}
    }
    writeln!(
        out,
        "settle       : tables flushed and compactions finished in {:.3} seconds",
        before.elapsed()
    )?;
    Ok(())
}

/// Runs the request phase and prints its tables; returns when it began and how many requests
/// it made, for a later settled `Efficiency` line.
fn request_phase(
    store: &dyn LinkStore,
    cfg: &PhaseConfig<'_>,
    path: &Path,
    out: &mut dyn Write,
) -> Result<(Sample, u64)> {
    let ids = IdChoosers::new(cfg.maxid1, cfg.seed);
    let retries_before = store.retries();
    let before = Sample::take();
    let o = phases::requests(store, cfg, &ids)?;
    let secs = before.elapsed().max(1e-6);
    write!(out, "{}", op_table(&o, secs))?;
    writeln!(
        out,
        "retries: {} transactions begun again after a conflict or lock timeout",
        store.retries() - retries_before
    )?;
    let total: u64 = o.hists.iter().map(Histogram::count).sum();
    let eff = Efficiency::since(&before, total, o.switches, path);
    write!(out, "{}", eff.line("requests (per request)"))?;
    Ok((before, total))
}

fn latency(h: &Histogram) -> String {
    format!(
        "P50 {:.1} P99 {:.1} Max {} us (average {:.1})",
        h.percentile(50.0),
        h.percentile(99.0),
        h.max(),
        h.average()
    )
}

/// LinkBench's end-of-run table: per operation its count, rate and latency, then the total.
fn op_table(o: &PhaseOut, secs: f64) -> String {
    let mut s = format!(
        "requests     : {secs:.3} seconds\n{:<16} {:>10} {:>10} {:>10} {:>10} {:>10}\n",
        "operation", "count", "ops/sec", "P50 us", "P99 us", "Max us"
    );
    let mut all = Histogram::new();
    for ((_, name, _), h) in OPS.iter().zip(&o.hists) {
        s.push_str(&row(name, h, secs));
        all.merge(h);
    }
    s.push_str(&row("TOTAL", &all, secs));
    s
}

fn row(name: &str, h: &Histogram, secs: f64) -> String {
    format!(
        "{name:<16} {:>10} {:>10.0} {:>10.1} {:>10.1} {:>10}\n",
        h.count(),
        h.count() as f64 / secs,
        h.percentile(50.0),
        h.percentile(99.0),
        h.max()
    )
}

#[cfg(test)]
mod tests {
    use super::super::flags;

    fn run(dir: &std::path::Path, extra: &[&str]) -> (anyhow::Result<()>, String) {
        let db = format!("--db={}", dir.display());
        let mut args = vec!["--benchmarks=linkbench", "--seed=1", "--compression_type=none", &db];
        args.extend_from_slice(extra);
        let f = flags::parse(&args).unwrap();
        let mut out = Vec::new();
        let r = super::run(&f, &mut out);
        (r, String::from_utf8(out).unwrap())
    }

    /// A short run with `extra` flags, then requests again on the same database: every count
    /// right, every operation run, the efficiency lines printed.
    fn assert_consistent_run(extra: &[&str]) {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec!["--maxid1=2000", "--requests=10000", "--requesters=2", "--loaders=2"];
        args.extend_from_slice(extra);
        let (r, out) = run(dir.path(), &args);
        r.unwrap_or_else(|e| panic!("{e:#}\n{out}"));
        assert!(out.contains(" 0 count mismatches\n"), "{out}");
        assert!(out.contains("load         : 1999 nodes, "), "{out}");
        assert!(out.contains("settle       : tables flushed and compactions finished in "), "{out}");
        let total = out.lines().find(|l| l.starts_with("TOTAL ")).unwrap_or_else(|| panic!("{out}"));
        assert_eq!(total.split_whitespace().nth(1), Some("20000"), "{out}");
        for (_, name, _) in super::OPS {
            let line = out.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap();
            let n: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
            assert!(n > 0 || name == "MULTIGET_LINK", "{line}");
        }
        assert!(out.contains("Efficiency load (per node): ops 1999 db_size "), "{out}");
        assert!(out.contains("Efficiency requests (per request): ops 20000 "), "{out}");

        // The same database again, requests only.
        let mut again = vec!["--maxid1=2000", "--requests=500", "--use_existing_db"];
        again.extend_from_slice(extra);
        let (r, out) = run(dir.path(), &again);
        r.unwrap_or_else(|e| panic!("{e:#}\n{out}"));
        assert!(out.contains("load: skipped") && out.contains(" 0 count mismatches\n"), "{out}");
        assert!(!out.contains("settle"), "nothing was loaded to settle: {out}");
        let mut unchecked =
            vec!["--maxid1=2000", "--requests=10", "--use_existing_db", "--linkbench_check=0"];
        unchecked.extend_from_slice(extra);
        let (r, out) = run(dir.path(), &unchecked);
        r.unwrap_or_else(|e| panic!("{e:#}\n{out}"));
        assert!(out.contains("checker: skipped") && !out.contains("mismatches"), "{out}");

        // Settled after the requests as well (500 per requester, two requesters): a second
        // Efficiency line for the same requests, and every count still right after the reopen.
        let mut settled =
            vec!["--maxid1=2000", "--requests=500", "--use_existing_db", "--linkbench_settle_after"];
        settled.extend_from_slice(extra);
        let (r, out) = run(dir.path(), &settled);
        r.unwrap_or_else(|e| panic!("{e:#}\n{out}"));
        assert!(out.contains("settle       : tables flushed and compactions finished in "), "{out}");
        let line = "Efficiency requests, then settled (per request): ops 1000 db_size ";
        assert!(out.contains(line) && out.contains(" 0 count mismatches\n"), "{out}");
    }

    #[test]
    fn optimistic_run_keeps_every_count_right() {
        assert_consistent_run(&[]);
    }

    #[test]
    fn pessimistic_run_keeps_every_count_right() {
        assert_consistent_run(&["--txn_mode=pessimistic"]);
    }

    #[cfg(feature = "heed")]
    #[test]
    fn the_lmdb_engine_keeps_every_count_right() {
        assert_consistent_run(&["--engine=heed"]);
    }

    #[cfg(feature = "rocksdb")]
    #[test]
    fn the_rocksdb_engine_keeps_every_count_right() {
        assert_consistent_run(&["--engine=rocksdb"]);
    }

    #[test]
    fn linkbench_refuses_company_and_other_engines() {
        let dir = tempfile::tempdir().unwrap();
        let (r, _) = run(dir.path(), &["--benchmarks=linkbench,fillseq"]);
        assert!(r.unwrap_err().to_string().contains("linkbench runs alone"));
        let (r, _) = run(dir.path(), &["--engine=memory", "--transactions=0"]);
        assert!(r.unwrap_err().to_string().contains("--engine=strata only"));
        let (r, _) = run(dir.path(), &["--engine=memory"]);
        assert!(r.unwrap_err().to_string().contains("not --engine=memory"));
        assert!(flags::parse(&["--txn_mode=eventual"]).is_err());
    }
}
