//! `strata bench compare`: the same db_bench flags on strata and on RocksDB's db_bench, back to
//! back, for several rounds, with a side-by-side table of medians and ratios.
//!
//! Owns: the command's syntax, building each engine's command line (RocksDB gets the tuning
//! flags of bench/rocksdb-tuning.flags, embedded at build time), the fresh database directory
//! of every run, the round order, and the optional throughput plot of the last round.
//! Must not: measure anything itself. Both engines run as child processes (strata re-executes
//! this binary) so they are treated alike: same process start, own page-cache and RSS figures,
//! and the same output parser (dbbench_output.rs) reads both.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use indicatif::ProgressBar;

use super::compare_table::{self, Round};
use super::{dbbench_output, plot, progress, report};

/// RocksDB's tuning flags, the same file scripts/bench-vs-rocksdb.sh reads.
const TUNING: &str = include_str!("../../../../bench/rocksdb-tuning.flags");

const DEFAULT_DB_BENCH: &str = "/usr/bin/db_bench";

const USAGE: &str = "\
usage: strata bench compare [OPTIONS] -- <db_bench flags>

Runs the db_bench flags on strata and on RocksDB's db_bench (plus the tuning flags of
bench/rocksdb-tuning.flags), alternating which engine goes first, each run in a fresh
database directory, and prints a table of medians across rounds with strata / RocksDB ratios
for ops/sec, micros/op, P99, P99.99 and the database size after the step. Both get
--histogram=1 so both print their percentiles.

options (before `--`; anything else before it is taken as a db_bench flag too):
  --rounds=N        rounds per engine (default 3)
  --db_bench=PATH   RocksDB's db_bench (default /usr/bin/db_bench)
  --load=STEP       run a load step first on each fresh database, untimed in the table:
                    a benchmark list (--load=fillseq) or quoted flags
                    (--load='--benchmarks=fillseq --compression_type=none'). The load inherits
                    the workload's flags except benchmarks, threads, reads, duration and
                    use_existing_db; the measured step gets --use_existing_db=1 unless given.
  --db=DIR          make the databases under DIR (DIR/compare-strata, DIR/compare-rocksdb;
                    emptied before each run) instead of temporary directories
  --plot=F.svg      write each engine's throughput CSV of the last round next to F.svg and
                    draw both as one chart

example:
  strata bench compare --rounds=3 --load=fillseq -- \\
      --benchmarks=readrandom --num=20000 --reads=20000 --compression_type=none
";

/// The parsed command line.
#[derive(Debug, Clone, PartialEq)]
struct Options {
    rounds: usize,
    db_bench: PathBuf,
    load: Option<Vec<String>>,
    db: Option<PathBuf>,
    plot: Option<PathBuf>,
    workload: Vec<String>,
}

/// One engine as a command line prefix.
struct Engine {
    name: &'static str,
    program: PathBuf,
    fixed: Vec<String>,
}

impl Engine {
    /// Runs `args` on the database at `db`; returns stdout, or fails with the tail of stderr.
    fn run(&self, args: &[String], db: &Path) -> Result<String> {
        let out = Command::new(&self.program)
            .args(&self.fixed)
            .args(args)
            .arg(format!("--db={}", db.display()))
            .output()
            .with_context(|| format!("starting {}", self.program.display()))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = err.lines().rev().take(15).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            bail!("{} failed ({}): {}\n{}", self.name, out.status, self.command_line(args), tail.join("\n"));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn command_line(&self, args: &[String]) -> String {
        let mut words = vec![self.program.display().to_string()];
        words.extend(self.fixed.iter().chain(args).cloned());
        words.join(" ")
    }
}

/// Runs `strata bench compare ARGS...`.
pub fn main(args: &[String]) -> Result<()> {
    let Some(opts) = parse_args(args)? else {
        print!("{USAGE}");
        return Ok(());
    };
    check_db_bench(&opts.db_bench)?;
    if let Some(dir) = opts.plot.as_deref().and_then(Path::parent).filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let strata = Engine {
        name: "strata",
        program: std::env::current_exe().context("finding the strata binary")?,
        fixed: vec!["bench".into()],
    };
    let rocksdb = Engine { name: "rocksdb", program: opts.db_bench.clone(), fixed: tuning_flags() };
    let (measure, load) = (measured_args(&opts), opts.load.as_ref().map(|l| load_args(l, &opts.workload)));
    println!("strata : {} --db=DIR", strata.command_line(&measure));
    println!("rocksdb: {} --db=DIR", rocksdb.command_line(&measure));
    if let Some(l) = &load {
        println!("load step (both, untimed): {}", l.join(" "));
    }
    let rounds = run_rounds(&opts, [&strata, &rocksdb], &measure, load.as_deref())?;
    print!("{}", compare_table::table(&rounds[0], &rounds[1]));
    if let Some(svg) = &opts.plot {
        // The table is the result; a run too short for one CSV row must not turn it into a failure.
        if let Err(e) = draw_plot(svg) {
            eprintln!("strata bench compare: no plot: {e:#}");
        }
    }
    Ok(())
}

fn check_db_bench(path: &Path) -> Result<()> {
    if !path.is_file() {
        bail!(
            "RocksDB's db_bench was not found at {}: install it with scripts/install-peers.sh \
             (Debian package rocksdb-tools), or point --db_bench=PATH at one",
            path.display()
        );
    }
    Ok(())
}

/// Runs every round; returns each engine's rounds (strata's first). Odd rounds start with
/// strata, even ones with RocksDB, so neither always inherits the other's warm caches.
fn run_rounds(
    opts: &Options,
    engines: [&Engine; 2],
    measure: &[String],
    load: Option<&[String]>,
) -> Result<[Vec<Round>; 2]> {
    let steps = (opts.rounds * 2 * (1 + usize::from(load.is_some()))) as u64;
    let bar = progress::steps(steps, true);
    let mut rounds: [Vec<Round>; 2] = [Vec::new(), Vec::new()];
    for round in 1..=opts.rounds {
        let order = if round % 2 == 1 { [0, 1] } else { [1, 0] };
        for i in order {
            let tag = format!("round {round}/{} {}", opts.rounds, engines[i].name);
            let args = with_report_file(measure, opts, engines[i].name);
            let r = run_once(engines[i], opts.db.as_deref(), load, &args, &tag, &bar)?;
            rounds[i].push(r);
        }
    }
    bar.finish_and_clear();
    Ok(rounds)
}

/// One engine's load (if any) and measured step in a fresh directory, which is removed after.
fn run_once(
    engine: &Engine,
    base: Option<&Path>,
    load: Option<&[String]>,
    measure: &[String],
    tag: &str,
    bar: &ProgressBar,
) -> Result<Round> {
    let (dir, _guard) = fresh_dir(base, engine.name)?;
    if let Some(load) = load {
        bar.set_message(format!("{tag}: load"));
        let out = engine.run(load, &dir)?;
        bar.suspend(|| print_results(&format!("{tag} load"), &dbbench_output::parse(&out), None));
        bar.inc(1);
    }
    bar.set_message(tag.to_string());
    let out = engine.run(measure, &dir)?;
    let round = Round { results: dbbench_output::parse(&out), db_bytes: report::disk_usage(&dir) };
    bar.suspend(|| print_results(tag, &round.results, Some(round.db_bytes)));
    bar.inc(1);
    if base.is_some() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    Ok(round)
}

fn print_results(tag: &str, results: &[dbbench_output::Parsed], db_bytes: Option<u64>) {
    let size = db_bytes.map(|b| format!("  [du {} KB]", b / 1024)).unwrap_or_default();
    if results.is_empty() {
        println!("{tag:<22}: no result lines{size}");
    }
    for r in results {
        let pct = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.2}"));
        println!(
            "{tag:<22}: {:<12} {:>10.0} ops/sec {:>10.3} micros/op  P99 {} P99.99 {} us{size}",
            r.name,
            r.ops_per_sec,
            r.micros_per_op,
            pct(r.p99),
            pct(r.p9999)
        );
    }
}

/// A new, empty database directory: `BASE/compare-ENGINE` (emptied), or a temporary one whose
/// guard removes it.
fn fresh_dir(base: Option<&Path>, engine: &str) -> Result<(PathBuf, Option<tempfile::TempDir>)> {
    match base {
        Some(base) => {
            let dir = base.join(format!("compare-{engine}"));
            if dir.exists() {
                std::fs::remove_dir_all(&dir).with_context(|| format!("emptying {}", dir.display()))?;
            }
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            Ok((dir, None))
        }
        None => {
            let t =
                tempfile::Builder::new().prefix(&format!("strata-compare-{engine}-")).tempdir_in("/tmp")?;
            Ok((t.path().to_path_buf(), Some(t)))
        }
    }
}

/// The CSV an engine's throughput goes to when `--plot` is given: beside the SVG.
fn csv_path(svg: &Path, engine: &str) -> PathBuf {
    let stem = svg.file_stem().map_or_else(|| "compare".into(), |s| s.to_string_lossy().into_owned());
    svg.with_file_name(format!("{stem}-{engine}.csv"))
}

fn with_report_file(measure: &[String], opts: &Options, engine: &str) -> Vec<String> {
    let mut args = measure.to_vec();
    if let Some(svg) = &opts.plot {
        args.push(format!("--report_file={}", csv_path(svg, engine).display()));
        args.push("--report_interval_seconds=1".into());
    }
    args
}

fn draw_plot(svg: &Path) -> Result<()> {
    let series = ["strata", "rocksdb"]
        .into_iter()
        .map(|e| Ok(plot::Series { name: e.into(), ..plot::read_series(&csv_path(svg, e))? }))
        .collect::<Result<Vec<_>>>()?;
    plot::draw(&series, "strata vs RocksDB: throughput over time (last round)", svg)?;
    println!("plot: {}", svg.display());
    Ok(())
}

/// The tuning file's flags, one per line, comments and blank lines left out.
fn tuning_flags() -> Vec<String> {
    TUNING.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(String::from).collect()
}

/// `None` asks for the usage text.
fn parse_args(args: &[String]) -> Result<Option<Options>> {
    let mut o = Options {
        rounds: 3,
        db_bench: PathBuf::from(DEFAULT_DB_BENCH),
        load: None,
        db: None,
        plot: None,
        workload: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            o.workload.extend(it.by_ref().cloned());
            break;
        }
        if matches!(a.as_str(), "--help" | "-help" | "-h") {
            return Ok(None);
        }
        if !own_option(&mut o, a)? {
            o.workload.push(a.clone());
        }
    }
    check_workload(&o.workload)?;
    Ok(Some(o))
}

/// Applies `arg` if it is one of compare's options; false if it belongs to the workload.
fn own_option(o: &mut Options, arg: &str) -> Result<bool> {
    let Some((name, value)) = arg.trim_start_matches('-').split_once('=') else { return Ok(false) };
    match name {
        "rounds" => {
            o.rounds =
                value.parse().ok().filter(|n| *n >= 1).context("--rounds needs a whole number >= 1")?;
        }
        "db_bench" => o.db_bench = PathBuf::from(value),
        "load" => o.load = Some(load_step(value)?),
        "db" => o.db = Some(PathBuf::from(value)),
        "plot" => o.plot = Some(PathBuf::from(value)),
        _ => return Ok(false),
    }
    Ok(true)
}

/// `fillseq` means `--benchmarks=fillseq`; anything starting with `-` is a list of flags.
fn load_step(value: &str) -> Result<Vec<String>> {
    let value = value.trim();
    if value.is_empty() {
        bail!("--load needs a benchmark list or flags, e.g. --load=fillseq");
    }
    if value.starts_with('-') {
        Ok(value.split_whitespace().map(String::from).collect())
    } else {
        Ok(vec![format!("--benchmarks={value}")])
    }
}

fn check_workload(workload: &[String]) -> Result<()> {
    if !workload.iter().any(|a| flag_name(a) == "benchmarks") {
        bail!("compare needs --benchmarks=... after `--` (db_bench's default list differs from strata's)\n\n{USAGE}");
    }
    for owned in ["db", "report_file"] {
        if workload.iter().any(|a| flag_name(a) == owned) {
            bail!("--{owned} is chosen by compare for each run; use compare's --db=DIR or --plot=F.svg before `--`");
        }
    }
    Ok(())
}

/// The gflags name of `--name=value` / `--name` / `--noname`, without the `no`.
fn flag_name(arg: &str) -> &str {
    let body = arg.trim_start_matches('-');
    let name = body.split_once('=').map_or(body, |(n, _)| n);
    match name.strip_prefix("no") {
        Some(rest) if !body.contains('=') && matches!(rest, "use_existing_db" | "histogram") => rest,
        _ => name,
    }
}

/// Flags that describe the measured step only, so a load step does not inherit them.
const NOT_INHERITED: &[&str] = &[
    "benchmarks",
    "use_existing_db",
    "threads",
    "reads",
    "duration",
    "histogram",
    "seek_nexts",
    "benchmark_write_rate_limit",
    "stats_interval_seconds",
    "report_interval_seconds",
];

/// The load step: the workload's data-shaping flags (num, sizes, compression...), then a fresh
/// database, then the load's own flags, which win because gflags keeps the last value.
fn load_args(load: &[String], workload: &[String]) -> Vec<String> {
    let mut args: Vec<String> =
        workload.iter().filter(|a| !NOT_INHERITED.contains(&flag_name(a))).cloned().collect();
    args.push("--use_existing_db=0".into());
    args.extend(load.iter().cloned());
    args
}

/// The measured step: the workload, percentiles on, and the loaded database kept.
fn measured_args(o: &Options) -> Vec<String> {
    let mut args = o.workload.clone();
    args.push("--histogram=1".into());
    if o.load.is_some() && !o.workload.iter().any(|a| flag_name(a) == "use_existing_db") {
        args.push("--use_existing_db=1".into());
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_before_the_separator_and_workload_after() {
        let o = parse_args(&strings(&[
            "--rounds=2",
            "--load=fillseq",
            "--db=/tmp/x",
            "--",
            "--benchmarks=readrandom",
            "--num=20000",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!((o.rounds, o.db.as_deref()), (2, Some(Path::new("/tmp/x"))));
        assert_eq!(o.load, Some(strings(&["--benchmarks=fillseq"])));
        assert_eq!(o.workload, strings(&["--benchmarks=readrandom", "--num=20000"]));
        let m = measured_args(&o);
        assert_eq!(&m[2..], ["--histogram=1", "--use_existing_db=1"]);
    }

    #[test]
    fn bad_command_lines_are_explained() {
        let err = |a: &[&str]| parse_args(&strings(a)).unwrap_err().to_string();
        assert!(err(&["--", "--num=5"]).contains("needs --benchmarks"));
        assert!(err(&["--", "--benchmarks=fillseq", "--db=/x"]).contains("chosen by compare"));
        assert!(err(&["--rounds=0", "--", "--benchmarks=fillseq"]).contains("--rounds"));
        assert!(parse_args(&strings(&["--help"])).unwrap().is_none());
    }

    #[test]
    fn load_inherits_data_shape_but_not_the_measured_step() {
        let workload = strings(&[
            "--benchmarks=readrandom",
            "--num=20000",
            "--threads=4",
            "--nouse_existing_db",
            "--compression_type=none",
        ]);
        let load = load_step("--benchmarks=fillseq --value_size=800").unwrap();
        assert_eq!(
            load_args(&load, &workload),
            strings(&[
                "--num=20000",
                "--compression_type=none",
                "--use_existing_db=0",
                "--benchmarks=fillseq",
                "--value_size=800"
            ])
        );
        assert!(load_step(" ").is_err());
    }

    #[test]
    fn tuning_file_and_missing_db_bench() {
        let t = tuning_flags();
        assert!(t.contains(&"--write_buffer_size=134217728".to_string()), "{t:?}");
        assert!(t.iter().all(|f| f.starts_with("--")));
        let err = check_db_bench(Path::new("/nonexistent/db_bench")).unwrap_err().to_string();
        assert!(err.contains("scripts/install-peers.sh"), "{err}");
    }

    #[test]
    fn plot_csvs_sit_beside_the_svg() {
        assert_eq!(csv_path(Path::new("/r/cmp.svg"), "strata"), PathBuf::from("/r/cmp-strata.csv"));
    }
}
