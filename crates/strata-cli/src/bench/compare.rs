//! `strata bench compare`: the same db_bench flags on several engines, back to back, for
//! several rounds, with side-by-side tables of medians and ratios, and of what each benchmark
//! cost.
//!
//! Owns: the command's syntax, building each engine's command lines (engines built into this
//! binary re-execute it as `strata bench --engine=NAME`, or another strata binary given with
//! `--program`; RocksDB's db_bench and the built-in rocksdb get the tuning flags of
//! bench/rocksdb-tuning.flags, embedded at build time; peerbench gets the flags it takes,
//! compare_engines.rs decides which), the database directory of every run (fresh for each
//! engine and round; its steps run on it in order), the round order, the machine's setup around
//! each measured step (`--drop_caches`, `--cgroup`), the children's logs, and the optional
//! throughput plot of the last round.
//! Must not: measure anything itself. Every engine runs as a child process so all are treated
//! alike: same process start, own page-cache, RSS and write figures (child.rs), and the same
//! output parser (dbbench_output.rs) reads them all.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use indicatif::ProgressBar;

use super::compare_engines::{self as engines, Kind, Spec};
use super::compare_table::{self, EngineRounds, Outside, Round, Step};
use super::{child, dbbench_output, engine, plot, progress, resources};

/// RocksDB's tuning flags, the same file scripts/bench-vs-rocksdb.sh reads.
const TUNING: &str = include_str!("../../../../bench/rocksdb-tuning.flags");

const DEFAULT_DB_BENCH: &str = "/usr/bin/db_bench";

const USAGE: &str = "\
usage: strata bench compare [OPTIONS] -- <db_bench flags>

Runs the db_bench flags on every engine of --engines, one after the other in each round (round
r starts with engine r mod N), each run a child process in a fresh database directory, and
prints two tables of medians across rounds. Per benchmark one row per engine: ops/sec, the
first engine's ops/sec over the row's, micros/op, P99, P99.99 and Max latency; then what it
cost: the database size after the step and its peak during it (sampled every second), the
step's peak RSS, disk bytes read and written, disk reads, CPU microseconds and context switches
per operation, and all the step's process wrote. The costs per operation are the benchmark's
own `Summary` line where the engine prints one (strata bench and peerbench: the process
measures itself around the benchmark), else the whole child process measured from outside
(db_bench: wait4 and the machine's disk counters, open and close included); the table says
which. Every engine gets --histogram=1 so each prints its percentiles.

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
  --program=ENGINE=PATH
                    run the built-in ENGINE with the strata binary at PATH (`PATH bench
                    --engine=ENGINE`) instead of this one, e.g. --program=rocksdb=BIN for a
                    binary built with --features rocksdb; repeatable
  --load=STEP       run a load step first on each fresh database, untimed in the table:
                    a benchmark list (--load=fillseq) or quoted flags
                    (--load='--benchmarks=fillseq --compression_type=none'). The load inherits
                    the workload's flags except benchmarks, threads, reads, duration and
                    use_existing_db; the measured step gets --use_existing_db=1 unless given.
  --step=FLAGS      a measured step of its own (repeatable): each engine runs its steps in
                    order on one database, each a child process given the workload's flags
                    (after `--`) and then the step's (--step='--benchmarks=readrandom
                    --threads=16 --duration=120'), which must name its --benchmarks (the
                    workload then names none). Every step but the first (or every step, after
                    --load) gets --use_existing_db=1; a step that says --use_existing_db=0
                    starts on an emptied directory. A step with --threads=N has ` t=N` after
                    its benchmarks' names in the tables.
  --db=DIR          make the databases under DIR (DIR/compare-ENGINE, emptied before each run)
                    instead of temporary directories
  --cgroup=DIR      every child joins the cgroup DIR (v1 or v2; e.g. one with a memory limit)
                    before it execs, so all it does, page cache included, is charged there
  --drop_caches     sync and drop the page cache (/proc/sys/vm/drop_caches; root) before every
                    measured step
  --log_dir=DIR     keep every child's command line, stdout and stderr in
                    DIR/rROUND-ENGINE-STEP.log
  --plot=F.svg      write each engine's throughput CSV of the last round next to F.svg
                    (F-ENGINE.csv) and draw them as one chart; peerbench writes no CSV, so its
                    engines are left out of the chart (one measured step only)
  --markdown        print the tables as GitHub markdown (for BENCHMARKS.md)

A run that fails (a child exits non-zero) ends that engine's round: its error is printed, the
tables are made of the runs that finished, and compare exits non-zero after them.

examples:
  strata bench compare --rounds=3 --load=fillseq -- \\
      --benchmarks=readrandom --num=20000 --reads=20000 --compression_type=none
  strata bench compare --engines=strata,rocksdb,leveldb,wiredtiger-btree,wiredtiger-lsm,lmdb \\
      --rounds=1 -- --benchmarks=fillrandom,readrandom --num=20000 --value_size=100
  strata bench compare --engines=strata,lmdb --rounds=2 --drop_caches \\
      --step=--benchmarks=fillseq --step='--benchmarks=readrandom --threads=2 --duration=10' \\
      -- --num=100000 --value_size=800
";

/// The parsed command line.
#[derive(Debug, Clone, PartialEq)]
struct Options {
    engines: Vec<Spec>,
    rounds: usize,
    db_bench: PathBuf,
    peerbench: Option<PathBuf>,
    /// `--program=ENGINE=PATH`: built-in engines run by another strata binary.
    programs: Vec<(String, PathBuf)>,
    load: Option<Vec<String>>,
    /// `--step=FLAGS`, in order; empty: the workload is the one measured step.
    steps: Vec<Vec<String>>,
    db: Option<PathBuf>,
    cgroup: Option<PathBuf>,
    drop_caches: bool,
    log_dir: Option<PathBuf>,
    plot: Option<PathBuf>,
    markdown: bool,
    workload: Vec<String>,
}

/// One measured step of an engine: its flags, and how the tables label it.
#[derive(Debug, Clone, PartialEq)]
struct Measured {
    args: Vec<String>,
    /// After each benchmark's name in the tables (` t=16`).
    suffix: String,
    /// Starts on an emptied database directory (`--use_existing_db=0` on a later step).
    fresh: bool,
}

/// One engine as the command lines of its steps.
#[derive(Debug, Clone, PartialEq)]
struct Engine {
    name: String,
    kind: Kind,
    program: PathBuf,
    /// Before the step's flags: `bench --engine=NAME`, the tuning flags, peerbench's `--engine`.
    fixed: Vec<String>,
    load: Option<Vec<String>>,
    steps: Vec<Measured>,
}

/// What one engine's round needs besides the engine: where and how its children run.
struct RunSetup<'a> {
    base: Option<&'a Path>,
    cgroup: Option<&'a Path>,
    drop_caches: bool,
    log_dir: Option<&'a Path>,
    round: usize,
    rounds: usize,
}

impl Engine {
    /// Runs `args` on the database at `db`; fails with the tail of stderr if the program does.
    /// The child's output goes to `log` first, if given, whether it succeeded or not.
    fn run(
        &self,
        args: &[String],
        db: &Path,
        setup: &child::Setup,
        log: Option<&Path>,
    ) -> Result<child::ChildRun> {
        let mut all = self.fixed.clone();
        all.extend(args.iter().cloned());
        all.push(format!("--db={}", db.display()));
        let run = child::run_with(&self.program, &all, setup)?;
        if let Some(log) = log {
            let text = format!(
                "# {} --db={}\n{}\n# stderr\n{}",
                self.command_line(args),
                db.display(),
                run.stdout,
                run.stderr
            );
            std::fs::write(log, text).with_context(|| format!("writing {}", log.display()))?;
        }
        if !run.status.success() {
            let tail: Vec<&str> = run.stderr.lines().rev().take(15).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            let oom = killed_note(setup.cgroup.as_deref(), run.status);
            bail!(
                "{} failed ({}){oom}: {}\n{}",
                self.name,
                run.status,
                self.command_line(args),
                tail.join("\n")
            );
        }
        Ok(run)
    }

    fn command_line(&self, args: &[String]) -> String {
        let mut words = vec![self.program.display().to_string()];
        words.extend(self.fixed.iter().chain(args).cloned());
        words.join(" ")
    }
}

/// Why a child in a cgroup most likely died of SIGKILL; empty for any other end.
fn killed_note(cgroup: Option<&Path>, status: std::process::ExitStatus) -> String {
    match (cgroup, status.signal()) {
        (Some(cg), Some(libc::SIGKILL)) => format!(
            " (killed in cgroup {}: most likely by the OOM killer, at the cgroup's memory limit)",
            cg.display()
        ),
        _ => String::new(),
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
    check_machine(&opts)?;
    if let Some(dir) = opts.plot.as_deref().and_then(Path::parent).filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    if let Some(dir) = &opts.log_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    for n in &notes {
        println!("note: {n}");
    }
    let w = engines.iter().map(|e| e.name.len()).max().unwrap_or(0);
    for e in &engines {
        if let Some(l) = &e.load {
            println!("{:<w$}  load step (untimed): {}", e.name, l.join(" "));
        }
        for (i, m) in e.steps.iter().enumerate() {
            let what = if e.steps.len() > 1 { format!(" step {}", i + 1) } else { String::new() };
            let fresh = if m.fresh { " (on an emptied directory)" } else { "" };
            println!("{:<w$}{what}: {} --db=DIR{fresh}", e.name, e.command_line(&m.args));
        }
    }
    let (rounds, failures) = run_rounds(&opts, &engines)?;
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
    if !failures.is_empty() {
        println!();
        for f in &failures {
            println!("FAILED: {f}");
        }
        bail!("{} of the runs failed (above); the tables hold the runs that finished", failures.len());
    }
    Ok(())
}

/// Fails before anything runs if `--drop_caches` or `--cgroup` cannot work.
fn check_machine(opts: &Options) -> Result<()> {
    if opts.drop_caches {
        std::fs::OpenOptions::new()
            .write(true)
            .open(DROP_CACHES)
            .with_context(|| format!("--drop_caches: cannot write {DROP_CACHES} (needs root)"))?;
    }
    if let Some(cg) = &opts.cgroup {
        let procs = cg.join("cgroup.procs");
        if !procs.is_file() {
            bail!(
                "--cgroup={}: no cgroup.procs there; make the cgroup first (mkdir under /sys/fs/cgroup/...)",
                cg.display()
            );
        }
    }
    Ok(())
}

const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// Writes every dirty page out and empties the page cache, so the next step reads from disk.
fn drop_caches() -> Result<()> {
    // SAFETY: sync(2) takes no arguments, touches no memory of ours and cannot fail.
    unsafe { libc::sync() };
    std::fs::write(DROP_CACHES, "3").with_context(|| format!("--drop_caches: writing {DROP_CACHES}"))
}

/// Every engine's command lines, and the notes to print about them: the engines left out of
/// this compare and the flags peerbench was not given. Fails, before anything runs, on an
/// engine whose program is missing.
fn plan(
    opts: &Options,
    exe: &Path,
    find_peerbench: &dyn Fn() -> Result<PathBuf>,
) -> Result<(Vec<Engine>, Vec<String>)> {
    let measured = measured_steps(opts);
    let load = opts.load.as_ref().map(|l| load_args(l, &opts.workload));
    let steps: Vec<&[String]> = measured.iter().map(|m| m.args.as_slice()).chain(load.as_deref()).collect();
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
            steps: measured
                .iter()
                .map(|m| Measured { args: with_report_file(&m.args, opts, spec), ..m.clone() })
                .collect(),
        };
        match spec.kind {
            Kind::BuiltIn => {
                if let Some((_, p)) = opts.programs.iter().find(|(n, _)| n == name) {
                    if !p.is_file() {
                        bail!("--program={name}={}: no such file", p.display());
                    }
                    e.program = p.clone();
                }
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
                let m: Vec<engines::Filtered> =
                    e.steps.iter().map(|m| engines::peerbench_args(&m.args)).collect();
                let l = e.load.as_deref().map(engines::peerbench_args);
                let mut dropping = false;
                for d in m.iter().chain(l.iter()).flat_map(|f| &f.dropped) {
                    dropping = true;
                    if !dropped.contains(d) {
                        dropped.push(d.clone());
                    }
                }
                if dropping {
                    peers_dropping.push(name);
                }
                for (step, f) in e.steps.iter_mut().zip(m) {
                    step.args = f.args;
                }
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

/// Runs every round; returns each engine's rounds, in `engines` order, and the failed runs.
/// Round r starts with engine r mod N (compare_engines::rotation).
fn run_rounds(opts: &Options, engines: &[Engine]) -> Result<(Vec<Vec<Round>>, Vec<String>)> {
    let steps: usize = engines.iter().map(|e| e.steps.len() + usize::from(e.load.is_some())).sum();
    let bar = progress::steps((opts.rounds * steps) as u64, true);
    let mut rounds: Vec<Vec<Round>> = vec![Vec::new(); engines.len()];
    let mut failures = Vec::new();
    for round in 0..opts.rounds {
        for i in engines::rotation(round, engines.len()) {
            let setup = RunSetup {
                base: opts.db.as_deref(),
                cgroup: opts.cgroup.as_deref(),
                drop_caches: opts.drop_caches,
                log_dir: opts.log_dir.as_deref(),
                round: round + 1,
                rounds: opts.rounds,
            };
            let (r, failed) = run_once(&engines[i], &setup, &bar)?;
            if let Some(e) = failed {
                let msg = format!("round {}/{} {}: {e:#}", round + 1, opts.rounds, engines[i].name);
                bar.suspend(|| println!("FAILED: {msg}"));
                failures.push(msg);
            }
            rounds[i].push(r);
        }
    }
    bar.finish_and_clear();
    Ok((rounds, failures))
}

/// The file a child's output is kept in: `DIR/rROUND-ENGINE-N-WHAT.log` (step N, 0 the load).
fn log_path(dir: &Path, round: usize, engine: &str, n: usize, what: &str) -> PathBuf {
    let what: String =
        what.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '-' }).collect();
    match what.trim_matches('-') {
        "" => dir.join(format!("r{round}-{engine}-{n}.log")),
        what => dir.join(format!("r{round}-{engine}-{n}-{what}.log")),
    }
}

/// One engine's load (if any) and measured steps in a fresh directory, which is removed after.
/// A run that fails ends the round: the steps made so far and the error come back (an error of
/// compare itself, such as a directory it cannot make, is returned as such).
fn run_once(engine: &Engine, s: &RunSetup, bar: &ProgressBar) -> Result<(Round, Option<anyhow::Error>)> {
    let (dir, _guard) = fresh_dir(s.base, &engine.name)?;
    let tag = format!("round {}/{} {}", s.round, s.rounds, engine.name);
    let log = |n: usize, what: &str| s.log_dir.map(|d| log_path(d, s.round, &engine.name, n, what));
    let mut round = Round::default();
    let untimed = child::Setup { cgroup: s.cgroup.map(Path::to_path_buf), watch: None };
    if let Some(load) = &engine.load {
        bar.set_message(format!("{tag}: load"));
        match engine.run(load, &dir, &untimed, log(0, "load").as_deref()) {
            Ok(run) => bar
                .suspend(|| print_results(&format!("{tag} load"), &dbbench_output::parse(&run.stdout), None)),
            Err(e) => return Ok((round, Some(e))),
        }
        bar.inc(1);
    }
    let timed = child::Setup { watch: Some(dir.clone()), ..untimed };
    for (i, m) in engine.steps.iter().enumerate() {
        let step_tag = if engine.steps.len() > 1 { format!("{tag} step {}", i + 1) } else { tag.clone() };
        if m.fresh {
            empty_dir(&dir)?;
        }
        if s.drop_caches {
            drop_caches()?;
        }
        bar.set_message(step_tag.clone());
        let what = format!("{}{}", engines::benchmarks(&m.args).join(","), m.suffix);
        let run = match engine.run(&m.args, &dir, &timed, log(i + 1, &what).as_deref()) {
            Ok(run) => run,
            Err(e) => return Ok((round, Some(e))),
        };
        let step = Step {
            suffix: m.suffix.clone(),
            results: dbbench_output::parse(&run.stdout),
            db_bytes: resources::disk_usage(&dir),
            peak_db_bytes: run.peak_dir_bytes,
            peak_rss: Some(run.peak_rss),
            outside: Some(Outside {
                write_bytes: run.write_bytes,
                read_bytes: run.read_bytes,
                cpu_secs: run.cpu_secs,
                switches: run.switches,
                disk_reads: run.disk_reads,
            }),
        };
        bar.suspend(|| print_results(&step_tag, &step.results, Some(&step)));
        bar.inc(1);
        round.steps.push(step);
    }
    if s.base.is_some() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    Ok((round, None))
}

fn print_results(tag: &str, results: &[dbbench_output::Parsed], step: Option<&Step>) {
    let mb = |b: u64| b as f64 / 1_048_576.0;
    let step = step.map_or_else(String::new, |s| {
        let peak = s.peak_db_bytes.map_or_else(String::new, |b| format!(" (peak {:.1})", mb(b)));
        let rss = s.peak_rss.map_or_else(|| "-".into(), |b| format!("{:.1} MB", mb(b)));
        let wrote = s.outside.map_or_else(|| "-".into(), |o| format!("{:.1} MB", mb(o.write_bytes)));
        format!("  [du {:.1} MB{peak}, RSS {rss}, wrote {wrote}]", mb(s.db_bytes))
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
            empty_dir(&dir)?;
            Ok((dir, None))
        }
        None => {
            let t =
                tempfile::Builder::new().prefix(&format!("strata-compare-{engine}-")).tempdir_in("/tmp")?;
            Ok((t.path().to_path_buf(), Some(t)))
        }
    }
}

/// Makes `dir` an empty directory, whatever it held.
fn empty_dir(dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("emptying {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
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
        programs: Vec::new(),
        load: None,
        steps: Vec::new(),
        db: None,
        cgroup: None,
        drop_caches: false,
        log_dir: None,
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
    check_workload(&o)?;
    let programs: Vec<&str> = o.programs.iter().map(|(n, _)| n.as_str()).collect();
    let built_in: Vec<&str> = engine::ENGINES.iter().copied().chain(programs).collect();
    o.engines = engines::parse(&engine_list, &built_in)?;
    Ok(Some(o))
}

/// Applies `arg` if it is one of compare's options; false if it belongs to the workload.
fn own_option(o: &mut Options, engine_list: &mut String, arg: &str) -> Result<bool> {
    match arg {
        "--markdown" => o.markdown = true,
        "--drop_caches" | "--drop_caches=1" | "--drop_caches=true" => o.drop_caches = true,
        _ => {
            let Some((name, value)) = arg.trim_start_matches('-').split_once('=') else { return Ok(false) };
            match name {
                "engines" => *engine_list = value.to_string(),
                "peerbench" => o.peerbench = Some(PathBuf::from(value)),
                "rounds" => {
                    o.rounds = value
                        .parse()
                        .ok()
                        .filter(|n| *n >= 1)
                        .context("--rounds needs a whole number >= 1")?;
                }
                "db_bench" => o.db_bench = PathBuf::from(value),
                "program" => o.programs.push(program(value)?),
                "load" => o.load = Some(load_step(value)?),
                "step" => o.steps.push(measured_step(value)?),
                "db" => o.db = Some(PathBuf::from(value)),
                "cgroup" => o.cgroup = Some(PathBuf::from(value)),
                "log_dir" => o.log_dir = Some(PathBuf::from(value)),
                "plot" => o.plot = Some(PathBuf::from(value)),
                _ => return Ok(false),
            }
        }
    }
    Ok(true)
}

/// `--program=ENGINE=PATH`.
fn program(value: &str) -> Result<(String, PathBuf)> {
    let (name, path) = value
        .split_once('=')
        .filter(|(n, p)| !n.is_empty() && !p.is_empty())
        .context("--program needs ENGINE=PATH, e.g. --program=rocksdb=/path/to/strata")?;
    if !engine::ENGINES.contains(&name) && engine::unknown_engine(name).starts_with("unknown engine") {
        bail!("--program={value}: {name:?} is not an engine of strata bench");
    }
    Ok((name.to_string(), PathBuf::from(path)))
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

/// `--step=FLAGS`: flags, one of them --benchmarks.
fn measured_step(value: &str) -> Result<Vec<String>> {
    let flags: Vec<String> = value.split_whitespace().map(String::from).collect();
    if flags.iter().any(|f| !f.starts_with('-')) || !flags.iter().any(|f| flag_name(f) == "benchmarks") {
        bail!("--step needs quoted flags naming the benchmarks, e.g. --step='--benchmarks=readrandom --threads=2'; got {value:?}");
    }
    Ok(flags)
}

fn check_workload(o: &Options) -> Result<()> {
    let workload = &o.workload;
    let names_benchmarks = workload.iter().any(|a| flag_name(a) == "benchmarks");
    if o.steps.is_empty() && !names_benchmarks {
        bail!("compare needs --benchmarks=... after `--` (db_bench's default list differs from strata's)\n\n{USAGE}");
    }
    if !o.steps.is_empty() && names_benchmarks {
        bail!("with --step, each step names its benchmarks; the flags after `--` must not");
    }
    if o.steps.len() > 1 && o.plot.is_some() {
        bail!("--plot draws one measured step; it does not take several --step");
    }
    for owned in ["db", "report_file"] {
        if workload.iter().chain(o.steps.iter().flatten()).any(|a| flag_name(a) == owned) {
            bail!("--{owned} is chosen by compare for each run; use compare's --db=DIR or --plot=F.svg before `--`");
        }
    }
    if workload.iter().chain(o.steps.iter().flatten()).any(|a| flag_name(a) == "engine") {
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

/// The value of the last `--name` in `args` (gflags keeps the last): `--name=v` gives v, a bare
/// `--name` "1" and `--noname` "0".
fn flag_value<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().rev().find(|a| flag_name(a) == name).map(|a| {
        let body = a.trim_start_matches('-');
        match body.split_once('=') {
            Some((_, v)) => v,
            None if body.starts_with("no") && body != name => "0",
            None => "1",
        }
    })
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

/// The measured steps: the workload alone, or the workload then each `--step`'s flags; all
/// with percentiles on and, after the first step or a load, the database kept unless the step
/// says otherwise.
fn measured_steps(o: &Options) -> Vec<Measured> {
    let steps: Vec<&[String]> =
        if o.steps.is_empty() { vec![&[]] } else { o.steps.iter().map(Vec::as_slice).collect() };
    steps
        .iter()
        .enumerate()
        .map(|(i, own)| {
            let mut args = o.workload.clone();
            args.extend(own.iter().cloned());
            args.push("--histogram=1".into());
            let later = i > 0 || o.load.is_some();
            let existing = flag_value(&args, "use_existing_db").map(|v| !matches!(v, "0" | "false"));
            if later && existing.is_none() {
                args.push("--use_existing_db=1".into());
            }
            let suffix = flag_value(own, "threads").map_or_else(String::new, |t| format!(" t={t}"));
            Measured { args, suffix, fresh: later && existing == Some(false) }
        })
        .collect()
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
        let m = measured_steps(&o);
        assert_eq!(m.len(), 1);
        assert_eq!(&m[0].args[2..], ["--histogram=1", "--use_existing_db=1"]);
        assert_eq!((m[0].suffix.as_str(), m[0].fresh), ("", false));
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
            e[0].steps[0].args.contains(&report.to_string())
                && e[0].steps[0].args.contains(&"--min_blob_size=512".into())
        );
        assert!(e[1].steps[0].args.contains(&"--report_file=/r/p-db_bench.csv".to_string()));
        assert_eq!(
            e[2].steps[0].args,
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

    #[test]
    fn steps_run_in_order_on_one_database() {
        let o = options(&[
            "--engines=strata,lmdb",
            "--step=--benchmarks=fillseq",
            "--step=--benchmarks=readrandom  --threads=16 --duration=5",
            "--step=--benchmarks=fillrandom --nouse_existing_db",
            "--step=--benchmarks=compact",
            "--",
            "--num=100",
            "--report_interval_seconds=1",
        ]);
        let m = measured_steps(&o);
        let args: Vec<Vec<String>> = m.iter().map(|m| m.args.clone()).collect();
        let w = "--report_interval_seconds=1";
        assert_eq!(
            args[0],
            strings(&["--num=100", w, "--benchmarks=fillseq", "--histogram=1"]),
            "a fresh start"
        );
        assert_eq!(
            args[1],
            strings(&[
                "--num=100",
                w,
                "--benchmarks=readrandom",
                "--threads=16",
                "--duration=5",
                "--histogram=1",
                "--use_existing_db=1"
            ])
        );
        assert_eq!(
            args[2].last().map(String::as_str),
            Some("--histogram=1"),
            "the step said no: {:?}",
            args[2]
        );
        assert_eq!(args[3].last().map(String::as_str), Some("--use_existing_db=1"));
        let how: Vec<(&str, bool)> = m.iter().map(|m| (m.suffix.as_str(), m.fresh)).collect();
        assert_eq!(how, [("", false), (" t=16", false), ("", true), ("", false)]);
        let (e, notes) = plan(&o, Path::new("/s"), &found("/pb")).unwrap();
        assert_eq!(e[1].steps.len(), 4);
        assert_eq!(
            e[1].steps[1].args,
            strings(&[
                "--num=100",
                "--benchmarks=readrandom",
                "--threads=16",
                "--duration=5",
                "--histogram=1",
                "--use_existing_db=1"
            ]),
            "peerbench gets each step's flags it takes"
        );
        assert_eq!(e[1].steps[2].args.last().map(String::as_str), Some("--histogram=1"));
        assert!(e[1].steps[2].args.contains(&"--use_existing_db=0".to_string()), "{:?}", e[1].steps[2]);
        assert_eq!(notes, ["lmdb: peerbench does not take --report_interval_seconds=1; dropped"]);
    }

    #[test]
    fn a_load_makes_every_step_use_the_loaded_database() {
        let o = options(&["--load=fillseq", "--step=--benchmarks=overwrite", "--", "--num=10"]);
        let m = measured_steps(&o);
        assert_eq!(
            m[0].args,
            strings(&["--num=10", "--benchmarks=overwrite", "--histogram=1", "--use_existing_db=1"])
        );
        let o = options(&["--load=fillseq", "--", "--benchmarks=fillrandom", "--use_existing_db=0"]);
        assert!(measured_steps(&o)[0].fresh, "after a load, a step asking for a new database gets one");
        let o = options(&["--", "--benchmarks=fillrandom", "--use_existing_db=0"]);
        assert!(!measured_steps(&o)[0].fresh, "the first step's directory is new anyway");
    }

    #[test]
    fn step_command_lines_are_checked() {
        let err = |a: &[&str]| parse_args(&strings(a)).unwrap_err().to_string();
        assert!(err(&["--step=--threads=2", "--", "--num=1"]).contains("naming the benchmarks"));
        assert!(err(&["--step=readrandom", "--", "--num=1"]).contains("naming the benchmarks"));
        assert!(err(&["--step=--benchmarks=x", "--", "--benchmarks=y"]).contains("each step names"));
        assert!(err(&["--step=--benchmarks=x", "--step=--benchmarks=y", "--plot=/p.svg", "--"])
            .contains("--plot"));
        assert!(err(&["--step=--benchmarks=x --db=/d", "--"]).contains("chosen by compare"));
        assert!(err(&["--step=--benchmarks=x --engine=lmdb", "--"]).contains("--engines"));
        let o = options(&["--step=--benchmarks=x", "--plot=/p.svg", "--"]);
        assert_eq!(o.steps, [strings(&["--benchmarks=x"])], "one step may be plotted");
    }

    #[test]
    fn flag_values_as_gflags_reads_them() {
        let a = strings(&["--threads=2", "--histogram", "--threads=4", "--nouse_existing_db", "--sync=0"]);
        assert_eq!(flag_value(&a, "threads"), Some("4"), "the last one wins");
        assert_eq!(flag_value(&a, "histogram"), Some("1"));
        assert_eq!(flag_value(&a, "use_existing_db"), Some("0"));
        assert_eq!(flag_value(&a, "sync"), Some("0"));
        assert_eq!(flag_value(&a, "num"), None);
    }

    #[test]
    fn machine_options_and_other_strata_binaries() {
        let o = options(&[
            "--engines=strata,rocksdb",
            "--program=rocksdb=/bin/true",
            "--cgroup=/sys/fs/cgroup/memory/x",
            "--drop_caches",
            "--log_dir=/tmp/logs",
            "--",
            "--benchmarks=fillseq",
        ]);
        assert_eq!(o.programs, [("rocksdb".to_string(), PathBuf::from("/bin/true"))]);
        assert_eq!(o.cgroup.as_deref(), Some(Path::new("/sys/fs/cgroup/memory/x")));
        assert!(o.drop_caches && o.log_dir.is_some());
        let (e, _) = plan(&o, Path::new("/bin/strata"), &found("/pb")).unwrap();
        assert_eq!((e[0].program.to_str(), e[1].program.to_str()), (Some("/bin/strata"), Some("/bin/true")));
        assert_eq!(e[1].fixed[..2], strings(&["bench", "--engine=rocksdb"]));
        assert_eq!(e[1].fixed[2..], tuning_flags(), "RocksDB's tuning flags, whichever binary runs it");
        let err = |a: &[&str]| parse_args(&strings(a)).unwrap_err().to_string();
        assert!(err(&["--program=rocksdb", "--", "--benchmarks=x"]).contains("ENGINE=PATH"));
        assert!(err(&["--program=nosuch=/bin/true", "--", "--benchmarks=x"]).contains("not an engine"));
        let mut o = o;
        o.programs[0].1 = PathBuf::from("/nonexistent/strata");
        assert!(plan(&o, Path::new("/s"), &found("/pb")).unwrap_err().to_string().contains("no such file"));
        let cg = check_machine(&options(&["--cgroup=/nonexistent/cg", "--", "--benchmarks=x"]));
        assert!(cg.unwrap_err().to_string().contains("cgroup.procs"));
    }

    #[test]
    fn a_child_killed_in_a_cgroup_is_explained() {
        use std::process::ExitStatus;
        let cg = Some(Path::new("/sys/fs/cgroup/memory/x"));
        let killed = ExitStatus::from_raw(libc::SIGKILL);
        assert!(killed_note(cg, killed).contains("OOM killer"), "{}", killed_note(cg, killed));
        assert_eq!(killed_note(None, killed), "", "outside a cgroup a kill is just a kill");
        assert_eq!(killed_note(cg, ExitStatus::from_raw(libc::SIGSEGV)), "");
        assert_eq!(killed_note(cg, ExitStatus::from_raw(3 << 8)), "", "exit code 3");
    }

    #[test]
    fn logs_are_named_by_round_engine_and_step() {
        let d = Path::new("/l");
        assert_eq!(
            log_path(d, 2, "lmdb", 3, "readrandom t=16"),
            PathBuf::from("/l/r2-lmdb-3-readrandom-t-16.log")
        );
        assert_eq!(log_path(d, 1, "strata", 0, "load"), PathBuf::from("/l/r1-strata-0-load.log"));
    }

    #[test]
    fn a_failing_step_ends_the_round_with_its_log_kept() {
        let logs = tempfile::tempdir().unwrap();
        let dbs = tempfile::tempdir().unwrap();
        let engine = Engine {
            name: "sh".into(),
            kind: Kind::DbBench,
            program: PathBuf::from("/bin/sh"),
            fixed: strings(&["-c"]),
            load: None,
            steps: vec![
                Measured {
                    args: strings(&["echo 'fillseq      :       1.000 micros/op 1000000 ops/sec 0.001 seconds 1000 operations;'; echo x > \"${0#--db=}/f\""]),
                    suffix: String::new(),
                    fresh: false,
                },
                Measured { args: strings(&["echo boom >&2; exit 3"]), suffix: " t=2".into(), fresh: false },
                Measured { args: strings(&["true"]), suffix: String::new(), fresh: false },
            ],
        };
        let setup = RunSetup {
            base: Some(dbs.path()),
            cgroup: None,
            drop_caches: false,
            log_dir: Some(logs.path()),
            round: 1,
            rounds: 1,
        };
        let (round, err) = run_once(&engine, &setup, &ProgressBar::hidden()).unwrap();
        let err = format!("{:#}", err.expect("the second step failed"));
        assert!(err.contains("exit status: 3") && err.contains("boom"), "{err}");
        assert_eq!(round.steps.len(), 1, "the steps before the failure are kept, none after");
        let s = &round.steps[0];
        assert_eq!(s.results.len(), 1);
        assert!(s.db_bytes > 0 && s.peak_db_bytes.is_some() && s.outside.is_some(), "{s:?}");
        let log = std::fs::read_to_string(logs.path().join("r1-sh-2-t-2.log")).unwrap();
        assert!(log.starts_with("# /bin/sh -c echo boom") && log.ends_with("# stderr\nboom\n"), "{log}");
        assert!(logs.path().join("r1-sh-1.log").is_file());
    }
}
