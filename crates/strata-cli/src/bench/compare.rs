//! `strata bench compare`: the same db_bench flags on several engines, back to back, for
//! several rounds, with a side-by-side table of medians and ratios.
//!
//! Owns: the command's syntax, building each engine's command line (engines built into this
//! binary re-execute it as `strata bench --engine=NAME`; RocksDB's db_bench and the built-in
//! rocksdb get the tuning flags of bench/rocksdb-tuning.flags, embedded at build time; peerbench
//! gets the flags it takes, compare_engines.rs decides which), the fresh database directory of
//! every run, the round order, and the optional throughput plot of the last round.
//! Must not: measure anything itself. Every engine runs as a child process so all are treated
//! alike: same process start, own page-cache, RSS and write figures (child.rs), and the same
//! output parser (dbbench_output.rs) reads them all.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use indicatif::ProgressBar;

use super::compare_engines::{self as engines, Kind, Spec};
use super::compare_table::{self, EngineRounds, Round};
use super::{child, dbbench_output, engine, plot, progress, resources};

/// RocksDB's tuning flags, the same file scripts/bench-vs-rocksdb.sh reads.
const TUNING: &str = include_str!("../../../../bench/rocksdb-tuning.flags");

const DEFAULT_DB_BENCH: &str = "/usr/bin/db_bench";

const USAGE: &str = "\
usage: strata bench compare [OPTIONS] -- <db_bench flags>

Runs the db_bench flags on every engine of --engines, one after the other in each round (round
r starts with engine r mod N), each run a child process in a fresh database directory, and
prints a table of medians across rounds: per benchmark one row per engine with ops/sec, the
first engine's ops/sec over the row's, micros/op, P99, P99.99 and Max latency, the database
size after the step, the step's peak RSS and the bytes it wrote per operation (wait4). Every
engine gets --histogram=1 so each prints its percentiles.

engines (--engines=a,b,...; default strata,db_bench):
  strata, memory, rocksdb, ...  built into this binary (`strata bench --engine=NAME`); rocksdb
                    (RocksDB 10.4.2 release, cargo feature rocksdb) also gets the tuning flags
  db_bench          RocksDB's db_bench program (--db_bench; Debian's is RocksDB 7.8.3 built
                    with assertions) plus the tuning flags of bench/rocksdb-tuning.flags
  leveldb, wiredtiger-btree, wiredtiger-lsm, lmdb
                    peerbench (bench/peers/peerbench.cc, scripts/build-peerbench.sh): given
                    only the flags it takes (the others are dropped, with a note); left out of
                    a compare whose benchmarks it cannot run (e.g. mergerandom), with a note

options (before `--`; anything else before it is taken as a db_bench flag too):
  --engines=LIST    the engines, first one is the ratios' numerator (default strata,db_bench)
  --rounds=N        rounds per engine (default 3)
  --db_bench=PATH   RocksDB's db_bench (default /usr/bin/db_bench)
  --peerbench=PATH  peerbench (default $PEERBENCH, else target/peerbench of this workspace,
                    else /tmp/peerbench)
  --load=STEP       run a load step first on each fresh database, untimed in the table:
                    a benchmark list (--load=fillseq) or quoted flags
                    (--load='--benchmarks=fillseq --compression_type=none'). The load inherits
                    the workload's flags except benchmarks, threads, reads, duration and
                    use_existing_db; the measured step gets --use_existing_db=1 unless given.
  --db=DIR          make the databases under DIR (DIR/compare-ENGINE, emptied before each run)
                    instead of temporary directories
  --plot=F.svg      write each engine's throughput CSV of the last round next to F.svg
                    (F-ENGINE.csv) and draw them as one chart; peerbench writes no CSV, so its
                    engines are left out of the chart
  --markdown        print the table as GitHub markdown (for BENCHMARKS.md)

examples:
  strata bench compare --rounds=3 --load=fillseq -- \\
      --benchmarks=readrandom --num=20000 --reads=20000 --compression_type=none
  strata bench compare --engines=strata,rocksdb,leveldb,wiredtiger-btree,wiredtiger-lsm,lmdb \\
      --rounds=1 -- --benchmarks=fillrandom,readrandom --num=20000 --value_size=100
";

/// The parsed command line.
#[derive(Debug, Clone, PartialEq)]
struct Options {
    engines: Vec<Spec>,
    rounds: usize,
    db_bench: PathBuf,
    peerbench: Option<PathBuf>,
    load: Option<Vec<String>>,
    db: Option<PathBuf>,
    plot: Option<PathBuf>,
    markdown: bool,
    workload: Vec<String>,
}

/// One engine as the command lines of its two steps.
#[derive(Debug, Clone, PartialEq)]
struct Engine {
    name: String,
    kind: Kind,
    program: PathBuf,
    /// Before the step's flags: `bench --engine=NAME`, the tuning flags, peerbench's `--engine`.
    fixed: Vec<String>,
    load: Option<Vec<String>>,
    measure: Vec<String>,
}

impl Engine {
    /// Runs `args` on the database at `db`; fails with the tail of stderr if the program does.
    fn run(&self, args: &[String], db: &Path) -> Result<child::ChildRun> {
        let mut all = self.fixed.clone();
        all.extend(args.iter().cloned());
        all.push(format!("--db={}", db.display()));
        let run = child::run(&self.program, &all)?;
        if !run.status.success() {
            let tail: Vec<&str> = run.stderr.lines().rev().take(15).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            bail!("{} failed ({}): {}\n{}", self.name, run.status, self.command_line(args), tail.join("\n"));
        }
        Ok(run)
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
    let exe = std::env::current_exe().context("finding the strata binary")?;
    let (engines, notes) = plan(&opts, &exe, &|| find_peerbench(opts.peerbench.as_deref()))?;
    if let Some(dir) = opts.plot.as_deref().and_then(Path::parent).filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    for n in &notes {
        println!("note: {n}");
    }
    let w = engines.iter().map(|e| e.name.len()).max().unwrap_or(0);
    for e in &engines {
        println!("{:<w$}: {} --db=DIR", e.name, e.command_line(&e.measure));
        if let Some(l) = &e.load {
            println!("{:<w$}  load step (untimed): {}", "", l.join(" "));
        }
    }
    let rounds = run_rounds(&opts, &engines)?;
    let results: Vec<EngineRounds> =
        engines.iter().zip(rounds).map(|(e, rounds)| EngineRounds { name: e.name.clone(), rounds }).collect();
    if opts.markdown {
        print!("{}", compare_table::markdown(&results));
    } else {
        print!("{}", compare_table::table(&results));
    }
    if let Some(svg) = &opts.plot {
        // The table is the result; a run too short for one CSV row must not turn it into a failure.
        if let Err(e) = draw_plot(svg, &engines) {
            eprintln!("strata bench compare: no plot: {e:#}");
        }
    }
    Ok(())
}

/// Every engine's command lines, and the notes to print about them: the engines left out of
/// this compare and the flags peerbench was not given. Fails, before anything runs, on an
/// engine whose program is missing.
fn plan(
    opts: &Options,
    exe: &Path,
    find_peerbench: &dyn Fn() -> Result<PathBuf>,
) -> Result<(Vec<Engine>, Vec<String>)> {
    let measure = measured_args(opts);
    let load = opts.load.as_ref().map(|l| load_args(l, &opts.workload));
    let steps: Vec<&[String]> = std::iter::once(measure.as_slice()).chain(load.as_deref()).collect();
    let cannot = engines::peerbench_cannot_run(&steps);
    let (mut out, mut notes) = (Vec::new(), Vec::new());
    let (mut peers_dropping, mut dropped): (Vec<&str>, Vec<String>) = (Vec::new(), Vec::new());
    let mut peerbench: Option<PathBuf> = None;
    for spec in &opts.engines {
        let name = spec.name.as_str();
        let tuning = if spec.kind.takes_tuning(name) { tuning_flags() } else { Vec::new() };
        let mut e = Engine {
            name: spec.name.clone(),
            kind: spec.kind,
            program: exe.to_path_buf(),
            fixed: tuning,
            load: load.clone(),
            measure: with_report_file(&measure, opts, spec),
        };
        match spec.kind {
            Kind::BuiltIn => {
                e.fixed = [vec!["bench".to_string(), format!("--engine={name}")], e.fixed].concat()
            }
            Kind::DbBench => {
                check_db_bench(&opts.db_bench)?;
                e.program = opts.db_bench.clone();
            }
            Kind::Peer => {
                if !cannot.is_empty() {
                    notes.push(format!("{name} left out: peerbench cannot run {}", cannot.join(", ")));
                    continue;
                }
                if peerbench.is_none() {
                    peerbench = Some(find_peerbench()?);
                }
                e.program = peerbench.clone().unwrap_or_default();
                e.fixed = vec![format!("--engine={name}")];
                let m = engines::peerbench_args(&e.measure);
                let l = e.load.as_deref().map(engines::peerbench_args);
                for d in m.dropped.iter().chain(l.iter().flat_map(|l| &l.dropped)) {
                    if !dropped.contains(d) {
                        dropped.push(d.clone());
                    }
                }
                if !m.dropped.is_empty() || l.as_ref().is_some_and(|l| !l.dropped.is_empty()) {
                    peers_dropping.push(name);
                }
                e.measure = m.args;
                e.load = l.map(|l| l.args);
            }
        }
        out.push(e);
    }
    if !dropped.is_empty() {
        notes.push(format!(
            "{}: peerbench does not take {}; dropped",
            peers_dropping.join(", "),
            dropped.join(" ")
        ));
    }
    if out.is_empty() {
        bail!("no engine left to run: {}", notes.join("; "));
    }
    Ok((out, notes))
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

/// `--peerbench`, or the first of `$PEERBENCH`, this workspace's target/peerbench and
/// /tmp/peerbench that exists.
fn find_peerbench(given: Option<&Path>) -> Result<PathBuf> {
    let candidates: Vec<PathBuf> = match (given, std::env::var_os("PEERBENCH")) {
        (Some(p), _) => vec![p.to_path_buf()],
        (None, Some(p)) => vec![PathBuf::from(p)],
        (None, None) => vec![
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/peerbench"),
            PathBuf::from("target/peerbench"),
            PathBuf::from("/tmp/peerbench"),
        ],
    };
    if let Some(found) = candidates.iter().find(|p| p.is_file()) {
        return Ok(std::fs::canonicalize(found).unwrap_or_else(|_| found.clone()));
    }
    let tried: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
    bail!(
        "peerbench (LevelDB, WiredTiger and LMDB behind db_bench's flags) was not found at {}: \
         build it with scripts/build-peerbench.sh, or point --peerbench=PATH (or $PEERBENCH) at one",
        tried.join(" or ")
    )
}

/// Runs every round; returns each engine's rounds, in `engines` order. Round r starts with
/// engine r mod N (compare_engines::rotation).
fn run_rounds(opts: &Options, engines: &[Engine]) -> Result<Vec<Vec<Round>>> {
    let steps: usize = engines.iter().map(|e| 1 + usize::from(e.load.is_some())).sum();
    let bar = progress::steps((opts.rounds * steps) as u64, true);
    let mut rounds: Vec<Vec<Round>> = vec![Vec::new(); engines.len()];
    for round in 0..opts.rounds {
        for i in engines::rotation(round, engines.len()) {
            let tag = format!("round {}/{} {}", round + 1, opts.rounds, engines[i].name);
            let r = run_once(&engines[i], opts.db.as_deref(), &tag, &bar)?;
            rounds[i].push(r);
        }
    }
    bar.finish_and_clear();
    Ok(rounds)
}

/// One engine's load (if any) and measured step in a fresh directory, which is removed after.
fn run_once(engine: &Engine, base: Option<&Path>, tag: &str, bar: &ProgressBar) -> Result<Round> {
    let (dir, _guard) = fresh_dir(base, &engine.name)?;
    if let Some(load) = &engine.load {
        bar.set_message(format!("{tag}: load"));
        let run = engine.run(load, &dir)?;
        bar.suspend(|| print_results(&format!("{tag} load"), &dbbench_output::parse(&run.stdout), None));
        bar.inc(1);
    }
    bar.set_message(tag.to_string());
    let run = engine.run(&engine.measure, &dir)?;
    let round = Round {
        results: dbbench_output::parse(&run.stdout),
        db_bytes: resources::disk_usage(&dir),
        peak_rss: Some(run.peak_rss),
        write_bytes: Some(run.write_bytes),
    };
    bar.suspend(|| print_results(tag, &round.results, Some(&round)));
    bar.inc(1);
    if base.is_some() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    Ok(round)
}

fn print_results(tag: &str, results: &[dbbench_output::Parsed], step: Option<&Round>) {
    let mb = |b: u64| b as f64 / 1_048_576.0;
    let step = step.map_or_else(String::new, |r| {
        let rss = r.peak_rss.map_or_else(|| "-".into(), |b| format!("{:.1} MB", mb(b)));
        let wrote = r.write_bytes.map_or_else(|| "-".into(), |b| format!("{:.1} MB", mb(b)));
        format!("  [du {:.1} MB, RSS {rss}, wrote {wrote}]", mb(r.db_bytes))
    });
    let w = tag.len().max(28);
    if results.is_empty() {
        println!("{tag:<w$}: no result lines{step}");
    }
    for r in results {
        let pct = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.2}"));
        println!(
            "{tag:<w$}: {:<12} {:>10.0} ops/sec {:>10.3} micros/op  P99 {} P99.99 {} Max {} us{step}",
            r.name,
            r.ops_per_sec,
            r.micros_per_op,
            pct(r.p99),
            pct(r.p9999),
            pct(r.max)
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

/// The measured step's flags, with the throughput CSV for the plot if the engine can write one.
fn with_report_file(measure: &[String], opts: &Options, spec: &Spec) -> Vec<String> {
    let mut args = measure.to_vec();
    if let Some(svg) = opts.plot.as_deref().filter(|_| spec.kind.writes_report_file()) {
        args.push(format!("--report_file={}", csv_path(svg, &spec.name).display()));
        args.push("--report_interval_seconds=1".into());
    }
    args
}

fn draw_plot(svg: &Path, engines: &[Engine]) -> Result<()> {
    let (drawn, left_out): (Vec<&Engine>, Vec<&Engine>) =
        engines.iter().partition(|e| e.kind.writes_report_file());
    if !left_out.is_empty() {
        let names: Vec<&str> = left_out.iter().map(|e| e.name.as_str()).collect();
        println!("plot: {} left out (peerbench writes no --report_file)", names.join(", "));
    }
    let series = drawn
        .iter()
        .map(|e| Ok(plot::Series { name: e.name.clone(), ..plot::read_series(&csv_path(svg, &e.name))? }))
        .collect::<Result<Vec<_>>>()?;
    let names: Vec<&str> = drawn.iter().map(|e| e.name.as_str()).collect();
    plot::draw(&series, &format!("{}: throughput over time (last round)", names.join(" vs ")), svg)?;
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
        engines: Vec::new(),
        rounds: 3,
        db_bench: PathBuf::from(DEFAULT_DB_BENCH),
        peerbench: None,
        load: None,
        db: None,
        plot: None,
        markdown: false,
        workload: Vec::new(),
    };
    let mut engine_list = engines::DEFAULT_ENGINES.to_string();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            o.workload.extend(it.by_ref().cloned());
            break;
        }
        if matches!(a.as_str(), "--help" | "-help" | "-h") {
            return Ok(None);
        }
        if !own_option(&mut o, &mut engine_list, a)? {
            o.workload.push(a.clone());
        }
    }
    check_workload(&o.workload)?;
    o.engines = engines::parse(&engine_list, engine::ENGINES)?;
    Ok(Some(o))
}

/// Applies `arg` if it is one of compare's options; false if it belongs to the workload.
fn own_option(o: &mut Options, engine_list: &mut String, arg: &str) -> Result<bool> {
    if arg == "--markdown" {
        o.markdown = true;
        return Ok(true);
    }
    let Some((name, value)) = arg.trim_start_matches('-').split_once('=') else { return Ok(false) };
    match name {
        "engines" => *engine_list = value.to_string(),
        "peerbench" => o.peerbench = Some(PathBuf::from(value)),
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
    if workload.iter().any(|a| flag_name(a) == "engine") {
        bail!(
            "--engine is chosen by compare for each run; name the engines with --engines=a,b,... before `--`"
        );
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
        assert_eq!(csv_path(Path::new("/r/cmp.svg"), "db_bench"), PathBuf::from("/r/cmp-db_bench.csv"));
    }

    #[test]
    fn engines_and_markdown_are_compare_options() {
        let o = parse_args(&strings(&["--", "--benchmarks=fillseq"])).unwrap().unwrap();
        let names: Vec<&str> = o.engines.iter().map(|e| e.name.as_str()).collect();
        assert_eq!((names.as_slice(), o.markdown), (["strata", "db_bench"].as_slice(), false), "the default");
        let o = parse_args(&strings(&[
            "--engines=memory,lmdb",
            "--markdown",
            "--peerbench=/p",
            "--",
            "--benchmarks=x",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(o.engines.iter().map(|e| e.kind).collect::<Vec<_>>(), [Kind::BuiltIn, Kind::Peer]);
        assert_eq!((o.markdown, o.peerbench.as_deref()), (true, Some(Path::new("/p"))));
        let err = parse_args(&strings(&["--", "--benchmarks=x", "--engine=memory"])).unwrap_err().to_string();
        assert!(err.contains("--engines"), "{err}");
        assert!(parse_args(&strings(&["--engines=strata,nosuch", "--", "--benchmarks=x"])).is_err());
    }

    fn options(a: &[&str]) -> Options {
        let mut o = parse_args(&strings(a)).unwrap().unwrap();
        o.db_bench = PathBuf::from("/bin/true"); // exists, so the db_bench check passes
        o
    }

    fn found(p: &str) -> impl Fn() -> Result<PathBuf> + '_ {
        move || Ok(PathBuf::from(p))
    }

    #[test]
    fn each_kind_of_engine_gets_its_own_command_line() {
        let o = options(&[
            "--engines=strata,db_bench,lmdb,memory,leveldb",
            "--load=fillseq",
            "--plot=/r/p.svg",
            "--",
            "--benchmarks=readrandom",
            "--num=100",
            "--min_blob_size=512",
        ]);
        let (e, notes) = plan(&o, Path::new("/bin/strata"), &found("/pb")).unwrap();
        let tuning = tuning_flags();
        assert_eq!(e.len(), 5);
        assert_eq!(
            (e[0].program.to_str(), &e[0].fixed[..]),
            (Some("/bin/strata"), &strings(&["bench", "--engine=strata"])[..])
        );
        assert_eq!((e[1].program.to_str(), &e[1].fixed), (Some("/bin/true"), &tuning));
        assert_eq!((e[2].program.to_str(), &e[2].fixed[..]), (Some("/pb"), &strings(&["--engine=lmdb"])[..]));
        assert_eq!(
            e[3].fixed,
            strings(&["bench", "--engine=memory"]),
            "no tuning flags for a non-RocksDB engine"
        );
        let report = "--report_file=/r/p-strata.csv";
        assert!(
            e[0].measure.contains(&report.to_string())
                && e[0].measure.contains(&"--min_blob_size=512".into())
        );
        assert!(e[1].measure.contains(&"--report_file=/r/p-db_bench.csv".to_string()));
        assert_eq!(
            e[2].measure,
            strings(&["--benchmarks=readrandom", "--num=100", "--histogram=1", "--use_existing_db=1"]),
            "peerbench: no CSV, no strata-only flags"
        );
        assert_eq!(
            e[2].load.as_deref(),
            Some(strings(&["--num=100", "--use_existing_db=0", "--benchmarks=fillseq"]).as_slice())
        );
        assert_eq!(e[4].fixed, strings(&["--engine=leveldb"]));
        assert_eq!(notes, ["lmdb, leveldb: peerbench does not take --min_blob_size=512; dropped"]);
    }

    #[test]
    fn the_rocksdb_engine_gets_the_tuning_flags_like_db_bench() {
        let mut o = options(&["--", "--benchmarks=fillseq"]);
        o.engines = vec![Spec { name: "rocksdb".into(), kind: Kind::BuiltIn }];
        let (e, _) = plan(&o, Path::new("/s"), &found("/pb")).unwrap();
        assert_eq!(e[0].fixed[..2], strings(&["bench", "--engine=rocksdb"]));
        assert_eq!(e[0].fixed[2..], tuning_flags());
    }

    #[test]
    fn peerbench_sits_out_what_it_cannot_run_and_must_exist_otherwise() {
        let o = options(&[
            "--engines=strata,leveldb,lmdb",
            "--",
            "--benchmarks=mergerandom",
            "--merge_operator=uint64add",
        ]);
        let missing = || -> Result<PathBuf> { find_peerbench(Some(Path::new("/nonexistent/peerbench"))) };
        let (e, notes) = plan(&o, Path::new("/s"), &missing).unwrap();
        assert_eq!(e.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["strata"]);
        assert_eq!(
            notes,
            [
                "leveldb left out: peerbench cannot run mergerandom",
                "lmdb left out: peerbench cannot run mergerandom"
            ]
        );
        let only_peers = options(&["--engines=lmdb", "--", "--benchmarks=mergerandom"]);
        assert!(plan(&only_peers, Path::new("/s"), &missing)
            .unwrap_err()
            .to_string()
            .contains("no engine left"));
        let o = options(&["--engines=strata,lmdb", "--", "--benchmarks=fillseq"]);
        let err = plan(&o, Path::new("/s"), &missing).unwrap_err().to_string();
        assert!(
            err.contains("scripts/build-peerbench.sh") && err.contains("/nonexistent/peerbench"),
            "{err}"
        );
    }
}
