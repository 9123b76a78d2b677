//! `strata bench`: a RocksDB db_bench-compatible benchmark, so one flag string runs both
//! engines and their output lines can be put side by side.
//!
//! Owns: the entry point (flags in, report out; `compare` and `plot` dispatched to their
//! modules, `--pattern` to pattern.rs), the no-flag quick suite, and the temporary database
//! directory's lifetime. Must not: hold benchmark logic (workloads.rs), formats (report.rs)
//! or engine calls (engine.rs and its implementations).

mod child;
mod compare;
mod compare_args;
mod compare_engines;
mod compare_table;
mod dbbench_output;
mod device_probe;
mod engine;
#[cfg(feature = "fjall")]
mod engine_fjall;
#[cfg(feature = "heed")]
mod engine_heed;
mod engine_mem;
#[cfg(feature = "redb")]
mod engine_redb;
#[cfg(feature = "rocksdb")]
mod engine_rocksdb;
#[cfg(feature = "sled")]
mod engine_sled;
mod engine_strata;
mod flags;
mod flags_compat;
mod histogram;
mod insertbench;
mod keygen;
mod linkbench;
mod pattern;
mod plot;
mod progress;
mod replicated;
mod report;
mod resources;
mod runner;
mod valuegen;
mod workloads;

use std::io::Write;

use anyhow::Result;

use flags::FlagError;

/// What `strata bench` with no arguments runs: small enough to finish in seconds in release.
const QUICK_SUITE: &[&str] =
    &["--benchmarks=fillseq,readrandom,overwrite,readseq", "--num=200000", "--value_size=100"];

/// Runs `strata bench ARGS...`; output goes to stdout, the environment lines to stderr.
pub fn main(args: &[String]) -> Result<()> {
    match args.first().map(String::as_str) {
        Some("compare") => return compare::main(&args[1..]),
        Some("plot") => return plot::main(&args[1..]),
        _ => {}
    }
    let quick = args.is_empty();
    let parsed = if quick { flags::parse(QUICK_SUITE) } else { flags::parse(args) };
    let flags = match parsed {
        Ok(f) => f,
        Err(FlagError::Help) => {
            print!("{}", flags::help_text());
            return Ok(());
        }
        Err(e) => return Err(anyhow::anyhow!("{e}\n(see `strata bench --help`)")),
    };
    if quick {
        eprintln!("strata bench: no flags given, running the quick suite: {}", QUICK_SUITE.join(" "));
    }
    for note in &flags.notes {
        eprintln!("strata bench: {note}");
    }
    eprint!("{}", report::environment());
    let stdout = std::io::stdout();
    if flags.pattern.is_some() {
        return pattern::run(args, &mut stdout.lock());
    }
    run_and_plot(flags, &mut stdout.lock())
}

/// [`run`], then `--plot`: the throughput CSV (`--report_file`, or F.csv beside F.svg) drawn.
fn run_and_plot(mut flags: flags::Flags, out: &mut dyn Write) -> Result<()> {
    if let Some(svg) = &flags.plot {
        flags.report_file.get_or_insert_with(|| svg.with_extension("csv"));
    }
    run(&flags, out)?;
    if let (Some(svg), Some(csv)) = (&flags.plot, &flags.report_file) {
        let series = plot::Series { name: "strata".into(), ..plot::read_series(csv)? };
        plot::draw(&[series], "strata: throughput over time", svg)?;
        writeln!(out, "plot: {}", svg.display())?;
    }
    Ok(())
}

/// Runs the benchmarks in `flags`, writing db_bench's output and the summary table to `out`.
pub fn run(flags: &flags::Flags, out: &mut dyn Write) -> Result<()> {
    if flags.benchmarks.iter().any(|b| b == linkbench::NAME) {
        return linkbench::run(flags, out);
    }
    if flags.benchmarks.iter().any(|b| b == insertbench::NAME) {
        return insertbench::run(flags, out);
    }
    if replicated::wanted(flags) {
        return replicated::run(flags, out);
    }
    // The guard deletes a temporary database directory when it drops, after the engine closed.
    let (path, _temp_guard) = runner::db_dir(flags)?;
    let mut r = runner::Runner::new(flags, &path, out)?;
    r.run_all()?;
    r.close();
    let table = report::summary_table(&r.summaries);
    drop(r);
    out.write_all(table.as_bytes())?;
    out.flush()?;
    Ok(())
}
