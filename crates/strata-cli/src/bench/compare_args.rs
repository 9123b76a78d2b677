//! `strata bench compare`'s command line: its usage text, the options before `--`, the
//! workload after it, and the flags each load and measured step inherits.
//!
//! Owns: parsing and checking the command line into [`Options`] and [`Measured`] steps. Must not:
//! build an engine's command line (compare.rs, compare_engines.rs) or run anything.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use super::compare_engines::{self as engines, Spec};
use super::engine;

/// RocksDB's tuning flags, the same file scripts/bench-vs-rocksdb.sh reads.
const TUNING: &str = include_str!("../../rocksdb-tuning.flags");

pub(super) const DEFAULT_DB_BENCH: &str = "/usr/bin/db_bench";

pub(super) const USAGE: &str = "\
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
  --device_probe=SECS
                    before and after every step that reads (readrandom, seekrandom, ...), read
                    the database's files at random, 4 KiB with O_DIRECT, from as many threads as
                    the step has, for SECS seconds, and report the disk's reads/s beside the
                    step's: a virtual disk's rate can change several times over within a run
  --interleave      in each round, load every engine, then run step 1 on every engine, then
                    step 2, and so on (instead of all of one engine's steps, then the next
                    engine's), so that the engines meet the disk in the same state; every
                    engine's database must fit on the disk at once
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
pub(super) struct Options {
    pub(super) engines: Vec<Spec>,
    pub(super) rounds: usize,
    pub(super) db_bench: PathBuf,
    pub(super) peerbench: Option<PathBuf>,
    /// `--program=ENGINE=PATH`: built-in engines run by another strata binary.
    pub(super) programs: Vec<(String, PathBuf)>,
    pub(super) load: Option<Vec<String>>,
    /// `--step=FLAGS`, in order; empty: the workload is the one measured step.
    pub(super) steps: Vec<Vec<String>>,
    pub(super) db: Option<PathBuf>,
    pub(super) cgroup: Option<PathBuf>,
    pub(super) drop_caches: bool,
    /// `--device_probe=SECS`: probe the disk this long before and after every read step.
    pub(super) device_probe: Option<std::time::Duration>,
    /// `--interleave`: each step on every engine before the next step.
    pub(super) interleave: bool,
    pub(super) log_dir: Option<PathBuf>,
    pub(super) plot: Option<PathBuf>,
    pub(super) markdown: bool,
    pub(super) workload: Vec<String>,
}

/// One measured step of an engine: its flags, and how the tables label it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Measured {
    pub(super) args: Vec<String>,
    /// After each benchmark's name in the tables (` t=16`).
    pub(super) suffix: String,
    /// Starts on an emptied database directory (`--use_existing_db=0` on a later step).
    pub(super) fresh: bool,
}

/// The tuning file's flags, one per line, comments and blank lines left out.
pub(super) fn tuning_flags() -> Vec<String> {
    TUNING.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(String::from).collect()
}

/// `None` asks for the usage text.
pub(super) fn parse_args(args: &[String]) -> Result<Option<Options>> {
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
        device_probe: None,
        interleave: false,
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
pub(super) fn own_option(o: &mut Options, engine_list: &mut String, arg: &str) -> Result<bool> {
    match arg {
        "--markdown" => o.markdown = true,
        "--drop_caches" | "--drop_caches=1" | "--drop_caches=true" => o.drop_caches = true,
        "--interleave" | "--interleave=1" | "--interleave=true" => o.interleave = true,
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
                "device_probe" => {
                    let secs: f64 = value
                        .parse()
                        .ok()
                        .filter(|s: &f64| s.is_finite() && *s >= 0.0 && *s <= 600.0)
                        .context("--device_probe needs seconds between 0 and 600")?;
                    o.device_probe = (secs > 0.0).then(|| std::time::Duration::from_secs_f64(secs));
                }
                "plot" => o.plot = Some(PathBuf::from(value)),
                _ => return Ok(false),
            }
        }
    }
    Ok(true)
}

/// `--program=ENGINE=PATH`.
pub(super) fn program(value: &str) -> Result<(String, PathBuf)> {
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
pub(super) fn load_step(value: &str) -> Result<Vec<String>> {
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
pub(super) fn measured_step(value: &str) -> Result<Vec<String>> {
    let flags: Vec<String> = value.split_whitespace().map(String::from).collect();
    if flags.iter().any(|f| !f.starts_with('-')) || !flags.iter().any(|f| flag_name(f) == "benchmarks") {
        bail!("--step needs quoted flags naming the benchmarks, e.g. --step='--benchmarks=readrandom --threads=2'; got {value:?}");
    }
    Ok(flags)
}

pub(super) fn check_workload(o: &Options) -> Result<()> {
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
pub(super) fn flag_name(arg: &str) -> &str {
    let body = arg.trim_start_matches('-');
    let name = body.split_once('=').map_or(body, |(n, _)| n);
    match name.strip_prefix("no") {
        Some(rest) if !body.contains('=') && matches!(rest, "use_existing_db" | "histogram") => rest,
        _ => name,
    }
}

/// The value of the last `--name` in `args` (gflags keeps the last): `--name=v` gives v, a bare
/// `--name` "1" and `--noname` "0".
pub(super) fn flag_value<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
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
pub(super) fn load_args(load: &[String], workload: &[String]) -> Vec<String> {
    let mut args: Vec<String> =
        workload.iter().filter(|a| !NOT_INHERITED.contains(&flag_name(a))).cloned().collect();
    args.push("--use_existing_db=0".into());
    args.extend(load.iter().cloned());
    args
}

/// The measured steps: the workload alone, or the workload then each `--step`'s flags; all
/// with percentiles on and, after the first step or a load, the database kept unless the step
/// says otherwise.
pub(super) fn measured_steps(o: &Options) -> Vec<Measured> {
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
pub(super) mod tests {
    use std::path::Path;

    use super::super::compare_engines::Kind;
    use super::*;

    pub(in crate::bench) fn strings(a: &[&str]) -> Vec<String> {
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

    pub(in crate::bench) fn options(a: &[&str]) -> Options {
        let mut o = parse_args(&strings(a)).unwrap().unwrap();
        o.db_bench = PathBuf::from("/bin/true"); // exists, so the db_bench check passes
        o
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
}
