//! `strata bench --pattern=forestdb`: the ForestDB-benchmark sequence of seed 004 (load,
//! overwrite-sync, point and range queries with and without a rate-limited writer,
//! overwrite-async), each step a db_bench benchmark on the same database.
//!
//! Owns: the list of steps as db_bench flags, the pattern's defaults, and the per-step table
//! with the database size after each step, bytes written and disk reads per operation.
//! Must not: contain operation loops; every step is an existing workload run by the runner,
//! and the steps are plain db_bench flags so the same sequence could be given to db_bench.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::path::Path;

use anyhow::{anyhow, Result};

use super::flags::{self, Flags};
use super::report::Summary;
use super::runner::{self, Runner};
use super::{plot, progress};

/// Applied before the user's flags, so any of them can be overridden: ten-second steps, N = 4
/// threads, and a database small enough that the whole pattern takes about two and a half
/// minutes in a release build. Range queries fetch about 20 entries, as in the seed.
const DEFAULTS: &[&str] = &["--duration=10", "--threads=4", "--num=200000", "--seek_nexts=20"];

/// The seed's writer limit for the with-writer steps: 1000 writes per second.
const WRITER_OPS_PER_SEC: u64 = 1000;

/// One step: the seed's short name and the db_bench flags that make it.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub label: &'static str,
    pub args: Vec<String>,
}

fn step(label: &'static str, bench: &str, threads: usize, extra: &[&str]) -> Step {
    let mut args = vec![format!("--benchmarks={bench}"), format!("--threads={threads}")];
    args.extend(extra.iter().map(|s| s.to_string()));
    Step { label, args }
}

/// The pattern for the base flags `f` (N is `--threads`).
pub fn forestdb_steps(f: &Flags) -> Vec<Step> {
    let n = f.threads;
    let rate = if f.benchmark_write_rate_limit > 0 {
        f.benchmark_write_rate_limit
    } else {
        WRITER_OPS_PER_SEC * (f.key_size + f.value_size) as u64
    };
    let writer = format!("--benchmark_write_rate_limit={rate}");
    let w: &[&str] = &["--use_existing_db=1", &writer];
    let sync: &[&str] = &["--use_existing_db=1", "--sync=1", "--disable_wal=0"];
    let nosync: &[&str] = &["--use_existing_db=1", "--sync=0"];
    let read: &[&str] = &["--use_existing_db=1"];
    let mut steps = Vec::new();
    if !f.use_existing_db {
        // Every document once, in random order, no WAL and no time limit: the seed loads each
        // of its documents exactly once, without periodic commits.
        steps.push(step(
            "load",
            "filluniquerandom",
            1,
            &["--use_existing_db=0", "--disable_wal=1", "--duration=0"],
        ));
    }
    steps.extend([
        step("ows.1", "overwrite", 1, sync),
        step("ows.n", "overwrite", n, sync),
        step("pqw.1", "readwhilewriting", 1, w),
        step("pqw.n", "readwhilewriting", n, w),
        step("rqw.1", "seekrandomwhilewriting", 1, w),
        step("rqw.n", "seekrandomwhilewriting", n, w),
        step("pq.1", "readrandom", 1, read),
        step("pq.n", "readrandom", n, read),
        step("rq.1", "seekrandom", 1, read),
        step("rq.n", "seekrandom", n, read),
        step("owa.1", "overwrite", 1, nosync),
        step("owa.n", "overwrite", n, nosync),
    ]);
    steps
}

/// One finished step, for the closing table.
struct Row {
    label: &'static str,
    threads: usize,
    summary: Option<Summary>,
    db_bytes: u64,
}

/// Runs the pattern with the user's `args` (which include `--pattern=...`).
pub fn run(args: &[String], out: &mut dyn Write) -> Result<()> {
    let mut all: Vec<String> = DEFAULTS.iter().map(|s| s.to_string()).collect();
    all.extend(args.iter().cloned());
    let mut base = parse(&all)?;
    if let Some(svg) = &base.plot {
        base.report_file.get_or_insert_with(|| svg.with_extension("csv"));
    }
    let (path, _guard) = runner::db_dir(&base)?;
    let csv = runner::open_csv(&base)?;
    let steps = forestdb_steps(&base);
    // The runner writes to stdout itself, so a bar on the same terminal would tear its lines.
    let bar = if std::io::stdout().is_terminal() {
        indicatif::ProgressBar::hidden()
    } else {
        progress::steps(steps.len() as u64, false)
    };
    let mut rows = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        bar.set_message(s.label);
        let mut step_args = all.clone();
        step_args.extend(s.args.iter().cloned());
        let f = parse(&step_args)?;
        writeln!(out, "\n== step {}/{} {}: {} ==", i + 1, steps.len(), s.label, s.args.join(" "))?;
        let mut r = Runner::with(&f, &path, &mut *out, csv.clone(), i == 0)?;
        r.run_all()?;
        r.close();
        let summary = r.summaries.pop();
        drop(r);
        let db_bytes = super::resources::disk_usage(&path);
        writeln!(out, "DB size after {}: {:.1} MB", s.label, db_bytes as f64 / 1_048_576.0)?;
        rows.push(Row { label: s.label, threads: f.threads, summary, db_bytes });
        bar.inc(1);
    }
    bar.finish_and_clear();
    drop(csv);
    out.write_all(table(&rows).as_bytes())?;
    if let (Some(svg), Some(csv)) = (&base.plot, &base.report_file) {
        plot_pattern(csv, svg, &base.engine)?;
        writeln!(out, "plot: {}", svg.display())?;
    }
    out.flush()?;
    Ok(())
}

fn parse(args: &[String]) -> Result<Flags> {
    flags::parse(args).map_err(|e| anyhow!("{e}\n(see `strata bench --help`)"))
}

fn plot_pattern(csv: &Path, svg: &Path, engine: &str) -> Result<()> {
    let series = plot::Series { name: engine.into(), ..plot::read_series(csv)? };
    plot::draw(&[series], &format!("{engine}: ForestDB pattern, throughput over time"), svg)
}

fn table(rows: &[Row]) -> String {
    let mut s = format!(
        "\n{:<8} {:<24} {:>7} {:>10} {:>9} {:>10} {:>8} {:>8} {:>8}\n",
        "step", "benchmark", "threads", "ops/sec", "P99 us", "P99.99 us", "wKB/op", "reads/op", "DB MB"
    );
    let per_op = |v: Option<f64>, scale: f64| v.map_or("-".to_string(), |v| format!("{:.2}", v / scale));
    for r in rows {
        let (name, ops, p99, p9999, wkb, reads) = match &r.summary {
            Some(m) => (
                m.result.name.as_str(),
                m.result.ops_per_sec.to_string(),
                m.p99,
                m.p9999,
                per_op(m.write_bytes_per_op, 1024.0),
                per_op(m.disk_reads_per_op, 1.0),
            ),
            None => ("(skipped)", "-".to_string(), f64::NAN, f64::NAN, "-".into(), "-".into()),
        };
        let _ = writeln!(
            s,
            "{:<8} {name:<24} {:>7} {ops:>10} {p99:>9.2} {p9999:>10.2} {wkb:>8} {reads:>8} {:>8.1}",
            r.label,
            r.threads,
            r.db_bytes as f64 / 1_048_576.0
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_follow_the_seed() {
        let f = flags::parse(&["--threads=3", "--value_size=84"]).unwrap();
        let steps = forestdb_steps(&f);
        let labels: Vec<&str> = steps.iter().map(|s| s.label).collect();
        assert_eq!(
            labels,
            [
                "load", "ows.1", "ows.n", "pqw.1", "pqw.n", "rqw.1", "rqw.n", "pq.1", "pq.n", "rq.1", "rq.n",
                "owa.1", "owa.n"
            ]
        );
        let ows_n = &steps[2].args;
        assert!(ows_n.contains(&"--threads=3".into()) && ows_n.contains(&"--sync=1".into()));
        // 1000 writes/s of 16-byte keys and 84-byte values.
        assert!(steps[3].args.contains(&"--benchmark_write_rate_limit=100000".into()));
        let with_existing = flags::parse(&["--use_existing_db=1"]).unwrap();
        assert_eq!(forestdb_steps(&with_existing)[0].label, "ows.1", "an existing database is not reloaded");
    }

    #[test]
    fn every_step_parses_and_names_a_known_benchmark() {
        let f = flags::parse(DEFAULTS).unwrap();
        for s in forestdb_steps(&f) {
            let step = flags::parse(&s.args).unwrap();
            let bench = &step.benchmarks[0];
            assert!(super::super::workloads::Workload::parse(bench).is_some(), "{bench}");
        }
    }

    #[test]
    fn short_pattern_runs_end_to_end_on_the_memory_engine() {
        let dir = tempfile::tempdir().unwrap();
        let svg = dir.path().join("p.svg");
        let args: Vec<String> = [
            "--pattern=forestdb",
            "--engine=memory",
            "--num=2000",
            "--duration=1",
            "--threads=2",
            "--seed=1",
            &format!("--plot={}", svg.display()),
        ]
        .map(String::from)
        .into();
        let mut out = Vec::new();
        run(&args, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        for label in ["load", "ows.n", "rqw.n", "owa.n"] {
            assert!(text.contains(&format!("DB size after {label}: ")), "{text}");
        }
        assert!(text.contains("seekrandomwhilewriting"), "{text}");
        assert!(text.contains("filluniquerandom"), "the load writes every document once: {text}");
        assert_eq!(text.matches("Keys:       16 bytes each").count(), 1, "one header");
        assert!(text.contains("wKB/op") && text.contains("reads/op"), "{text}");
        let svg = std::fs::read_to_string(&svg).unwrap();
        assert!(svg.contains("<polyline") && svg.contains("memory: ForestDB pattern"), "{svg}");
    }
}
