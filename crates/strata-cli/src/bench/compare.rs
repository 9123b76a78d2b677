//! `strata bench compare`: the same db_bench flags on several engines, back to back, for
//! several rounds, with side-by-side tables of medians and ratios, and of what each benchmark
//! cost.
//!
//! Owns: building each engine's command lines (engines built into this
//! binary re-execute it as `strata bench --engine=NAME`, or another strata binary given with
//! `--program`; RocksDB's db_bench and the built-in rocksdb get the tuning flags of
//! bench/rocksdb-tuning.flags, embedded at build time; peerbench gets the flags it takes,
//! compare_engines.rs decides which), the database directory of every run (fresh for each
//! engine and round; its steps run on it in order), the round order (engine after engine, or
//! step after step with `--interleave`), the machine's setup around each measured step
//! (`--drop_caches`, `--cgroup`, the disk probes of `--device_probe`, which device_probe.rs
//! makes), the children's logs, and the optional throughput plot of the last round.
//! Must not: measure an engine itself. Every engine runs as a child process so all are treated
//! alike: same process start, own page-cache, RSS and write figures (child.rs), and the same
//! output parser (dbbench_output.rs) reads them all.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use indicatif::ProgressBar;

use super::compare_args::{
    self, load_args, measured_steps, parse_args, tuning_flags, Measured, Options, USAGE,
};
use super::compare_engines::{self as engines, Kind, Spec};
use super::compare_table::{self, EngineRounds, Outside, Round, Step};
use super::{child, dbbench_output, device_probe, plot, progress, resources};

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
    device_probe: Option<Duration>,
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
        let setup = RunSetup {
            base: opts.db.as_deref(),
            cgroup: opts.cgroup.as_deref(),
            drop_caches: opts.drop_caches,
            device_probe: opts.device_probe,
            log_dir: opts.log_dir.as_deref(),
            round: round + 1,
            rounds: opts.rounds,
        };
        let order = engines::rotation(round, engines.len());
        let finished = if opts.interleave {
            run_interleaved(engines, &order, &setup, &bar)?
        } else {
            let mut finished = Vec::new();
            for i in order {
                let (r, failed) = run_once(&engines[i], &setup, &bar)?;
                finished.push((i, r, failed));
            }
            finished
        };
        for (i, r, failed) in finished {
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

/// One engine's run in progress: its fresh directory and the steps it has made so far.
struct EngineRun {
    dir: PathBuf,
    /// Deletes a temporary directory when the run ends (`None` under `--db`).
    _guard: Option<tempfile::TempDir>,
    round: Round,
}

impl RunSetup<'_> {
    fn tag(&self, engine: &Engine) -> String {
        format!("round {}/{} {}", self.round, self.rounds, engine.name)
    }

    fn log(&self, engine: &Engine, n: usize, what: &str) -> Option<PathBuf> {
        self.log_dir.map(|d| log_path(d, self.round, &engine.name, n, what))
    }

    fn untimed(&self) -> child::Setup {
        child::Setup { cgroup: self.cgroup.map(Path::to_path_buf), watch: None }
    }
}

/// One engine's load (if any) and measured steps in a fresh directory, which is removed after.
/// A run that fails ends the round: the steps made so far and the error come back (an error of
/// compare itself, such as a directory it cannot make, is returned as such).
fn run_once(engine: &Engine, s: &RunSetup, bar: &ProgressBar) -> Result<(Round, Option<anyhow::Error>)> {
    let mut runs = run_interleaved(std::slice::from_ref(engine), &[0], s, bar)?;
    let (_, round, failed) = runs.pop().context("a run of one engine returns one result")?;
    Ok((round, failed))
}

/// Makes the engine's fresh directory and runs its load; the inner error is a failed load.
fn start_run(engine: &Engine, s: &RunSetup, bar: &ProgressBar) -> Result<Result<EngineRun>> {
    let (dir, guard) = fresh_dir(s.base, &engine.name)?;
    if let Some(load) = &engine.load {
        let tag = s.tag(engine);
        bar.set_message(format!("{tag}: load"));
        match engine.run(load, &dir, &s.untimed(), s.log(engine, 0, "load").as_deref()) {
            Ok(run) => bar
                .suspend(|| print_results(&format!("{tag} load"), &dbbench_output::parse(&run.stdout), None)),
            Err(e) => return Ok(Err(e)),
        }
        bar.inc(1);
    }
    Ok(Ok(EngineRun { dir, _guard: guard, round: Round::default() }))
}

/// Measured step `i` of the engine's run; `Some` is the error of a step that failed.
fn run_step(
    engine: &Engine,
    run: &mut EngineRun,
    i: usize,
    s: &RunSetup,
    bar: &ProgressBar,
) -> Result<Option<anyhow::Error>> {
    let m = &engine.steps[i];
    let tag = s.tag(engine);
    let step_tag = if engine.steps.len() > 1 { format!("{tag} step {}", i + 1) } else { tag };
    let dir = &run.dir;
    if m.fresh {
        empty_dir(dir)?;
    }
    if s.drop_caches {
        drop_caches()?;
    }
    bar.set_message(step_tag.clone());
    let what = format!("{}{}", engines::benchmarks(&m.args).join(","), m.suffix);
    let probe = s.device_probe.zip(probe_threads(&m.args));
    let before = probe.and_then(|(secs, threads)| probe_device(dir, threads, secs, bar));
    let timed = child::Setup { watch: Some(dir.clone()), ..s.untimed() };
    let child_run = match engine.run(&m.args, dir, &timed, s.log(engine, i + 1, &what).as_deref()) {
        Ok(child_run) => child_run,
        Err(e) => return Ok(Some(e)),
    };
    let after = probe.and_then(|(secs, threads)| probe_device(dir, threads, secs, bar));
    let step = Step {
        suffix: m.suffix.clone(),
        results: dbbench_output::parse(&child_run.stdout),
        db_bytes: resources::disk_usage(dir),
        peak_db_bytes: child_run.peak_dir_bytes,
        peak_rss: Some(child_run.peak_rss),
        outside: Some(Outside {
            write_bytes: child_run.write_bytes,
            read_bytes: child_run.read_bytes,
            cpu_secs: child_run.cpu_secs,
            switches: child_run.switches,
            disk_reads: child_run.disk_reads,
        }),
        device: before.zip(after),
    };
    bar.suspend(|| print_results(&step_tag, &step.results, Some(&step)));
    bar.inc(1);
    run.round.steps.push(step);
    Ok(None)
}

/// Removes the engine's directory (under `--db`; a temporary one goes with its guard).
fn end_run(run: EngineRun, s: &RunSetup) -> Result<Round> {
    if s.base.is_some() {
        std::fs::remove_dir_all(&run.dir).with_context(|| format!("removing {}", run.dir.display()))?;
    }
    Ok(run.round)
}

/// The engines of `order` in one round, step by step: every engine loads, then step 1 runs on
/// every engine, then step 2, and so on, so that each step of every engine meets the machine
/// (its disk above all) at nearly the same time (`--interleave`; of one engine, its whole run).
/// An engine whose step fails sits out the rest of the round. Returns each engine's round and
/// error, in `order`.
fn run_interleaved(
    engines: &[Engine],
    order: &[usize],
    s: &RunSetup,
    bar: &ProgressBar,
) -> Result<Vec<(usize, Round, Option<anyhow::Error>)>> {
    let mut runs: Vec<(usize, Option<EngineRun>, Option<anyhow::Error>)> = Vec::new();
    for &i in order {
        match start_run(&engines[i], s, bar)? {
            Ok(run) => runs.push((i, Some(run), None)),
            Err(e) => runs.push((i, None, Some(e))),
        }
    }
    let steps = engines.iter().map(|e| e.steps.len()).max().unwrap_or(0);
    for step in 0..steps {
        for (i, run, failed) in &mut runs {
            let engine = &engines[*i];
            match run {
                Some(r) if failed.is_none() && step < engine.steps.len() => {
                    *failed = run_step(engine, r, step, s, bar)?;
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    for (i, run, failed) in runs {
        match (run, failed) {
            (Some(run), None) => out.push((i, end_run(run, s)?, None)),
            (run, failed) => out.push((i, run.map(|r| r.round).unwrap_or_default(), failed)),
        }
    }
    Ok(out)
}

/// The threads to probe the disk with around a step, for a step that reads: as many as it runs.
fn probe_threads(args: &[String]) -> Option<usize> {
    let reads = engines::benchmarks(args)
        .iter()
        .any(|b| ["read", "seek", "multiread"].iter().any(|p| b.starts_with(p)) && !b.starts_with("readseq"));
    reads.then(|| compare_args::flag_value(args, "threads").and_then(|t| t.parse().ok()).unwrap_or(1))
}

/// One device probe on the step's database directory; a probe that cannot run (a filesystem
/// without O_DIRECT) is reported and left out, never a failed step.
fn probe_device(
    dir: &Path,
    threads: usize,
    secs: Duration,
    bar: &ProgressBar,
) -> Option<device_probe::Probe> {
    match device_probe::probe(dir, threads, secs) {
        Ok(p) => Some(p),
        Err(e) => {
            bar.suspend(|| eprintln!("strata bench compare: no device probe: {e:#}"));
            None
        }
    }
}

fn print_results(tag: &str, results: &[dbbench_output::Parsed], step: Option<&Step>) {
    let device = step.and_then(|s| s.device);
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
    if let Some((before, after)) = device {
        println!("{tag:<w$}: the disk alone, before: {before}; after: {after}");
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

#[cfg(test)]
mod tests {
    use super::super::compare_args::tests::{options, strings};
    use super::*;

    fn found(p: &str) -> impl Fn() -> Result<PathBuf> + '_ {
        move || Ok(PathBuf::from(p))
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
    fn the_disk_is_probed_around_reading_steps_with_their_threads() {
        assert_eq!(probe_threads(&strings(&["--benchmarks=readrandom", "--threads=16"])), Some(16));
        assert_eq!(probe_threads(&strings(&["--benchmarks=seekrandom"])), Some(1));
        assert_eq!(probe_threads(&strings(&["--benchmarks=readwhilewriting", "--threads=2"])), Some(2));
        assert_eq!(probe_threads(&strings(&["--benchmarks=fillrandom", "--threads=4"])), None);
        assert_eq!(probe_threads(&strings(&["--benchmarks=readseq"])), None, "a scan reads ahead");
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
    fn interleaved_rounds_run_each_step_on_every_engine_before_the_next() {
        let dbs = tempfile::tempdir().unwrap();
        let order_file = dbs.path().join("order");
        let step = |script: String| Measured { args: vec![script], suffix: String::new(), fresh: false };
        let result =
            "echo 'fillseq      :       1.000 micros/op 1000000 ops/sec 0.001 seconds 1000 operations;'";
        let engine = |name: &str, fail_at: usize| Engine {
            name: name.into(),
            kind: Kind::DbBench,
            program: PathBuf::from("/bin/sh"),
            fixed: strings(&["-c"]),
            load: None,
            steps: (1..=3)
                .map(|n| {
                    let tail = if n == fail_at { "; exit 3".to_string() } else { format!("; {result}") };
                    step(format!("echo {name}{n} >> {}{tail}", order_file.display()))
                })
                .collect(),
        };
        let engines = [engine("a", 2), engine("b", 0)];
        let setup = RunSetup {
            base: Some(dbs.path()),
            cgroup: None,
            drop_caches: false,
            device_probe: None,
            log_dir: None,
            round: 1,
            rounds: 1,
        };
        let runs = run_interleaved(&engines, &[1, 0], &setup, &ProgressBar::hidden()).unwrap();
        let order = std::fs::read_to_string(&order_file).unwrap();
        assert_eq!(
            order.split_whitespace().collect::<Vec<_>>(),
            ["b1", "a1", "b2", "a2", "b3"],
            "a sits out after failing"
        );
        let summary: Vec<(usize, usize, bool)> =
            runs.iter().map(|(i, r, e)| (*i, r.steps.len(), e.is_some())).collect();
        assert_eq!(summary, [(1, 3, false), (0, 1, true)]);
        assert!(!dbs.path().join("compare-b").exists(), "a finished run's directory is removed");
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
            device_probe: None,
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
