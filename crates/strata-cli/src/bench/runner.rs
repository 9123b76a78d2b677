//! Runs a list of benchmarks the way db_bench does: header, one open database, each benchmark
//! on `--threads` threads started together, then its result line, latency and summary.
//!
//! Owns: the database's lifetime (fresh or existing, reopened fresh for fill benchmarks), the
//! seed and per-thread seeding (`seed + running thread count`, as peerbench.cc), thread start
//! and join, merging thread results and writing the output.
//! Must not: contain operation loops (workloads.rs) or formats (report.rs).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context, Result};

use super::engine::{self, BenchDb, EngineOptions};
use super::flags::Flags;
use super::keygen::{KeyBuf, KeyRng};
use super::report::{self, CsvReport, IntervalConfig, ProgressCounter, Stats, Summary};
use super::resources::{own_switches, Sample};
use super::valuegen::{compressed_value_size, ValuePool};
use super::workloads::{self, Ctx, Shared, Workload};

/// What one thread hands back.
struct ThreadOut {
    stats: Stats,
    found: u64,
    ops: u64,
    exclude: bool,
    /// The thread's own context switches while it ran (None if /proc could not say).
    switches: Option<u64>,
}

/// A run of benchmarks against one database path.
pub struct Runner<'a> {
    flags: &'a Flags,
    opts: EngineOptions,
    db: Option<Arc<dyn BenchDb>>,
    pool: ValuePool,
    seed: u64,
    thread_counter: u64,
    /// Shared so a sequence of runners (`--pattern`) can write one continuous CSV.
    csv: Option<Arc<CsvReport>>,
    out: &'a mut dyn Write,
    /// Whether any benchmark has run since the database was opened fresh.
    used: bool,
    pub summaries: Vec<Summary>,
}

impl<'a> Runner<'a> {
    /// Checks the benchmark names, prints the header and opens the database at `path`.
    pub fn new(flags: &'a Flags, path: &Path, out: &'a mut dyn Write) -> Result<Self> {
        let csv = open_csv(flags)?;
        Self::with(flags, path, out, csv, true)
    }

    /// Like [`Runner::new`], but with a CSV report owned by the caller and the header optional,
    /// for callers that run several benchmark steps as one report.
    pub fn with(
        flags: &'a Flags,
        path: &Path,
        out: &'a mut dyn Write,
        csv: Option<Arc<CsvReport>>,
        header: bool,
    ) -> Result<Self> {
        check_benchmarks(flags)?;
        let mut r = Self {
            flags,
            opts: EngineOptions::from_flags(flags, path),
            db: None,
            pool: ValuePool::new(flags.value_size, flags.compression_ratio),
            seed: flags.seed,
            thread_counter: 0,
            csv,
            out,
            used: false,
            summaries: Vec::new(),
        };
        if r.seed == 0 {
            r.seed = SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_micros() as u64);
            writeln!(r.out, "Set seed to {} because --seed was 0", r.seed)?;
        }
        if header {
            r.print_header(path)?;
        }
        r.db = Some(engine::open(&flags.engine, &r.opts, !flags.use_existing_db)?);
        Ok(r)
    }

    fn print_header(&mut self, path: &Path) -> Result<()> {
        let f = self.flags;
        let text = header_text(f, path);
        self.out.write_all(text.as_bytes())?;
        self.out.flush()?;
        Ok(())
    }

    /// Runs every benchmark in `--benchmarks`, in order.
    pub fn run_all(&mut self) -> Result<()> {
        for name in &self.flags.benchmarks {
            let w = Workload::parse(name).ok_or_else(|| anyhow!("unknown benchmark {name:?}"))?;
            self.run_one(name, w)?;
            self.out.flush()?;
        }
        Ok(())
    }

    /// Closes the database (dropping the last handle).
    pub fn close(&mut self) {
        self.db = None;
    }

    fn db(&self) -> &dyn BenchDb {
        self.db.as_deref().expect("database is open while benchmarks run")
    }

    fn run_one(&mut self, name: &str, w: Workload) -> Result<()> {
        if let Workload::Stats(kind) = w {
            let text = self.db().stats(kind);
            write!(self.out, "\n{text}\n")?;
            return Ok(());
        }
        if w.needs_fresh_db() {
            if self.flags.use_existing_db {
                writeln!(self.out, "{name:<12} : skipped (--use_existing_db is true)")?;
                return Ok(());
            }
            self.reopen_fresh()?;
        }
        if w == Workload::MultiReadRandom && self.flags.num_column_families > 1 {
            bail!(
                "multireadrandom does not take --num_column_families > 1 (its batches would span families)"
            );
        }
        if w == Workload::MergeRandom && self.flags.merge_operator.is_none() {
            bail!("mergerandom needs --merge_operator (for example --merge_operator=uint64add)");
        }
        self.used = true;
        let before = Sample::take();
        let outs = self.run_threads(w)?;
        self.report(name, w, &outs, before)
    }

    fn reopen_fresh(&mut self) -> Result<()> {
        if self.used {
            self.db = None;
            self.db = Some(engine::open(&self.flags.engine, &self.opts, true)?);
        }
        Ok(())
    }

    fn thread_count(&self, w: Workload) -> usize {
        match w {
            Workload::Compact | Workload::Flush => 1,
            // One extra thread: the rate-limited writer, reported separately.
            _ if w.has_writer() => self.flags.threads + 1,
            _ => self.flags.threads,
        }
    }

    fn run_threads(&mut self, w: Workload) -> Result<Vec<ThreadOut>> {
        let n = self.thread_count(w);
        let seeds: Vec<u64> =
            (0..n as u64).map(|i| self.seed.wrapping_add(self.thread_counter + i)).collect();
        self.thread_counter += n as u64;
        let readers = if w.has_writer() { n - 1 } else { n };
        let shared = Shared { readers_done: AtomicUsize::new(0), readers };
        let counters: Vec<ProgressCounter> = (0..n).map(|_| ProgressCounter::default()).collect();
        let interval = IntervalConfig {
            print_every: (self.flags.stats_interval_seconds > 0)
                .then(|| Duration::from_secs(self.flags.stats_interval_seconds)),
            csv: self.csv.as_deref(),
        };
        let barrier = Barrier::new(n);
        let finished = AtomicBool::new(false);
        let db = self.db();
        let (flags, pool) = (self.flags, &self.pool);
        std::thread::scope(|s| {
            if interval.print_every.is_some() || interval.csv.is_some() {
                s.spawn(|| report::run_interval_reporter(&interval, &counters, &finished));
            }
            let handles: Vec<_> = (0..n)
                .map(|tid| {
                    let (shared, counters, barrier, seed) = (&shared, &counters, &barrier, seeds[tid]);
                    s.spawn(move || {
                        let mut c = Ctx {
                            tid,
                            db,
                            flags,
                            shared,
                            progress: &counters[tid],
                            keys: KeyBuf::new(flags.key_size),
                            rng: KeyRng::new(seed, flags.num),
                            values: pool.generator(),
                            stats: Stats::start(),
                            found: 0,
                            ops: 0,
                            exclude: false,
                        };
                        // Setup is not timed: every thread starts its clock together.
                        barrier.wait();
                        c.stats = Stats::start();
                        let switches_before = own_switches();
                        let r = workloads::run(w, &mut c);
                        c.stats.stop();
                        let switches = own_switches().zip(switches_before).map(|(a, b)| a.saturating_sub(b));
                        if !c.exclude {
                            shared.readers_done.fetch_add(1, Ordering::Release);
                        }
                        r.map(|()| ThreadOut {
                            stats: c.stats,
                            found: c.found,
                            ops: c.ops,
                            exclude: c.exclude,
                            switches,
                        })
                    })
                })
                .collect();
            let outs: Vec<Result<ThreadOut>> =
                handles.into_iter().map(|h| h.join().expect("benchmark thread panicked")).collect();
            finished.store(true, Ordering::Release);
            outs.into_iter().collect()
        })
    }

    fn report(&mut self, name: &str, w: Workload, outs: &[ThreadOut], before: Sample) -> Result<()> {
        let mut merged: Option<Stats> = None;
        let (mut found, mut ops) = (0, 0);
        for o in outs.iter().filter(|o| !o.exclude) {
            match merged.as_mut() {
                Some(m) => m.merge(&o.stats),
                None => merged = Some(o.stats.clone()),
            }
            found += o.found;
            ops += o.ops;
        }
        let mut merged = merged.ok_or_else(|| anyhow!("{name}: no benchmark threads ran"))?;
        merged.set_message(w.message(found, ops));
        let result = merged.result(name);
        write!(self.out, "{}", result.line())?;
        write!(
            self.out,
            "{}",
            report::latency_block(merged.histogram(), w.op_title(), self.flags.histogram)
        )?;
        for o in outs.iter().filter(|o| o.exclude) {
            write!(
                self.out,
                "  ({name} background writer, not merged above)\n  {}",
                o.stats.result("bgwriter").line()
            )?;
        }
        let summary = Summary::new(
            result,
            merged.histogram(),
            super::resources::disk_usage(&self.opts.path),
            &before,
            outs.iter().map(|o| o.switches).sum(),
        );
        write!(self.out, "{}", summary.line())?;
        self.summaries.push(summary);
        Ok(())
    }
}

/// The `--report_file` CSV, if one was asked for.
pub fn open_csv(flags: &Flags) -> Result<Option<Arc<CsvReport>>> {
    let Some(p) = &flags.report_file else { return Ok(None) };
    let csv = CsvReport::create(p, flags.report_interval_seconds)
        .with_context(|| format!("creating {}", p.display()))?;
    Ok(Some(Arc::new(csv)))
}

fn check_benchmarks(flags: &Flags) -> Result<()> {
    if let Some(bad) = flags.benchmarks.iter().find(|b| Workload::parse(b).is_none()) {
        bail!("{}", super::workloads::unknown_benchmark(bad));
    }
    engine::check_families(&flags.engine, flags.num_column_families)?;
    if flags.cf_batch && flags.num_column_families < 2 {
        bail!("--cf_batch puts each key into every column family: it needs --num_column_families=2 or more");
    }
    Ok(())
}

/// db_bench's stdout header, plus the engine and the flags strata ignored.
pub fn header_text(f: &Flags, path: &Path) -> String {
    let num = f.num as f64;
    let raw_mb = (f.key_size + f.value_size) as f64 * num / 1_048_576.0;
    let file_mb = (f.key_size as f64 + f.value_size as f64 * f.compression_ratio) * num / 1_048_576.0;
    let mut s = format!(
        "Keys:       {} bytes each (+ 0 bytes user-defined timestamp)\n\
         Values:     {} bytes each ({} bytes after compression)\n\
         Entries:    {}\n\
         Prefix:    0 bytes\n\
         Keys per prefix:    0\n\
         RawSize:    {raw_mb:.1} MB (estimated)\n\
         FileSize:   {file_mb:.1} MB (estimated)\n\
         Write rate: {} bytes/second\n\
         Read rate: 0 ops/second\n\
         Compression: {}\n\
         Compression sampling rate: 0\n\
         Memtablerep: key tree over an entry list, with a hash index\n\
         Perf Level: 1\n",
        f.key_size,
        f.value_size,
        compressed_value_size(f.value_size, f.compression_ratio),
        f.num,
        f.benchmark_write_rate_limit,
        compression_display_name(&f.compression_type),
    );
    s.push_str(&format!("Engine:     {}\nDB path:    [{}]\n", f.engine, path.display()));
    if f.num_column_families > 1 {
        let how = if f.cf_batch { "every key in each, one batch per key" } else { "key n in family n % N" };
        s.push_str(&format!("Column families: {} ({how})\n", f.num_column_families));
    }
    if !f.ignored.is_empty() {
        s.push_str(&format!("Ignored:    {} (no strata equivalent)\n", f.ignored.join(" ")));
    }
    s.push_str("------------------------------------------------\n");
    s
}

/// RocksDB's `CompressionTypeToString` names.
fn compression_display_name(c: &str) -> &'static str {
    match c {
        "snappy" => "Snappy",
        "lz4" => "LZ4",
        "zstd" => "ZSTD",
        _ => "NoCompression",
    }
}

/// The database directory: `--db`, or a new temporary one that is removed when the guard drops.
pub fn db_dir(flags: &Flags) -> Result<(PathBuf, Option<tempfile::TempDir>)> {
    match &flags.db {
        Some(p) => Ok((p.clone(), None)),
        None => {
            let dir = tempfile::Builder::new()
                .prefix("strata-bench-")
                .tempdir_in("/tmp")
                .context("creating a temporary database directory")?;
            Ok((dir.path().to_path_buf(), Some(dir)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::flags;

    /// Runs the bench on the memory engine and returns its stdout.
    fn run(args: &[&str]) -> String {
        let mut all = vec!["--engine=memory", "--seed=1"];
        all.extend_from_slice(args);
        let f = flags::parse(&all).unwrap();
        let mut out = Vec::new();
        super::super::run(&f, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn result_line<'a>(out: &'a str, name: &str) -> &'a str {
        let prefix = format!("{name:<12} : ");
        out.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("no {name} line in:\n{out}"))
    }

    /// Checks the db_bench shape without a regex: name, micros/op, ops/sec, seconds, operations.
    fn check_shape(line: &str, ops: u64) {
        let (_, rest) = line.split_once(" : ").unwrap();
        let words: Vec<&str> = rest.split_whitespace().collect();
        assert!(words[0].parse::<f64>().is_ok() && words[1] == "micros/op", "{line}");
        assert!(words[2].parse::<u64>().is_ok() && words[3] == "ops/sec", "{line}");
        assert!(words[4].parse::<f64>().is_ok() && words[5] == "seconds", "{line}");
        assert_eq!(words[6], ops.to_string(), "{line}");
        assert!(words[7].starts_with("operations;"), "{line}");
        let micros = &rest[..rest.find(" micros/op").unwrap()];
        assert_eq!(micros.len(), 11, "micros/op is right-aligned in 11 columns: {line}");
    }

    #[test]
    fn fill_read_seek_merge_end_to_end() {
        let out = run(&[
            "--num=300",
            "--benchmarks=fillseq,readrandom,seekrandom,mergerandom,readseq,readreverse",
            "--merge_operator=uint64add",
            "--seek_nexts=3",
        ]);
        let fill = result_line(&out, "fillseq");
        check_shape(fill, 300);
        assert!(fill.ends_with(" MB/s"), "{fill}");
        let read = result_line(&out, "readrandom");
        check_shape(read, 300);
        assert!(read.ends_with(" MB/s (300 of 300 found)"), "{read}");
        assert!(result_line(&out, "seekrandom").ends_with("(300 of 300 found)"));
        assert!(result_line(&out, "mergerandom").ends_with("( updates:300)"));
        check_shape(result_line(&out, "readseq"), 300);
        check_shape(result_line(&out, "readreverse"), 300);
        assert!(out.contains("\nPercentiles: P50: "));
        assert!(out.contains("Keys:       16 bytes each (+ 0 bytes user-defined timestamp)\n"));
        assert!(out.contains("Values:     100 bytes each (50 bytes after compression)\n"));
        assert!(out.contains("\nbenchmark ") && out.contains("\nSummary readrandom: db_size "));
        let summary = out.lines().find(|l| l.starts_with("Summary readrandom: ")).unwrap();
        let columns = [
            "disk write ",
            " bytes/op, disk read ",
            "disk reads/op ",
            "cpu ",
            " us/op, cs/op ",
            ", peak RSS ",
        ];
        for column in columns {
            assert!(summary.contains(column), "{column:?} missing: {summary}");
        }
        // This process's own CPU is always readable on Linux, and a benchmark uses some.
        assert!(!summary.contains("cpu n/a") && !summary.contains("cs/op n/a"), "{summary}");
    }

    #[test]
    fn half_filled_database_finds_about_half() {
        let out = run(&["--num=400", "--writes=200", "--benchmarks=fillseq,readrandom,seekrandom"]);
        for name in ["readrandom", "seekrandom"] {
            let line = result_line(&out, name);
            let found: u64 = line.rsplit_once('(').unwrap().1.split(' ').next().unwrap().parse().unwrap();
            assert!(line.ends_with(" of 400 found)"), "{line}");
            assert!((120..=280).contains(&found), "{line}");
        }
    }

    #[test]
    fn batches_threads_and_histogram() {
        let out = run(&["--num=100", "--batch_size=7", "--benchmarks=fillseq,readseq", "--histogram=1"]);
        // The budget stops before exceeding --num, as db_bench's Duration: 14 batches of 7.
        check_shape(result_line(&out, "fillseq"), 98);
        check_shape(result_line(&out, "readseq"), 98);
        assert!(out.contains("Microseconds per write:\nCount: 14 Average: "), "{out}");
        let out = run(&["--num=100", "--threads=3", "--benchmarks=fillrandom,updaterandom,deleterandom"]);
        check_shape(result_line(&out, "fillrandom"), 300);
        assert!(result_line(&out, "updaterandom").contains("( updates:300 found:"));
        check_shape(result_line(&out, "deleterandom"), 300);
    }

    #[test]
    fn filluniquerandom_writes_every_key_once_across_threads() {
        // 3 threads split 1000 keys 333/333/334; each readseq thread then sees all of them (a
        // key drawn twice would leave fewer than 1000 distinct ones).
        let out = run(&["--num=1000", "--threads=3", "--benchmarks=filluniquerandom,readseq"]);
        check_shape(result_line(&out, "filluniquerandom"), 1000);
        check_shape(result_line(&out, "readseq"), 3000);
        let out = run(&["--num=1000", "--benchmarks=filluniquerandom,stats"]);
        assert!(out.contains("memory engine: 1000 keys"), "{out}");
    }

    #[test]
    fn readwhilewriting_reports_the_writer_apart() {
        let out =
            run(&["--num=200", "--threads=2", "--benchmarks=fillseq,readwhilewriting,compact,flush,stats"]);
        check_shape(result_line(&out, "readwhilewriting"), 400);
        assert!(out.contains("  (readwhilewriting background writer, not merged above)\n  bgwriter     : "));
        check_shape(result_line(&out, "compact"), 1);
        assert!(out.contains("memory engine: 200 keys"));
    }

    #[test]
    fn existing_db_skips_fills_and_mergerandom_needs_an_operator() {
        let dir = tempfile::tempdir().unwrap();
        let db = format!("--db={}", dir.path().display());
        let out = run(&[&db, "--use_existing_db=1", "--num=10", "--benchmarks=fillseq"]);
        assert!(out.contains("fillseq      : skipped (--use_existing_db is true)\n"));
        let f = flags::parse(&["--engine=memory", &db, "--num=10", "--benchmarks=mergerandom"]).unwrap();
        let err = super::super::run(&f, &mut Vec::new()).unwrap_err().to_string();
        assert!(err.contains("--merge_operator"), "{err}");
    }

    #[test]
    fn refuses_to_empty_a_foreign_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("precious.txt"), b"x").unwrap();
        let db = format!("--db={}", dir.path().display());
        let f = flags::parse(&["--engine=memory", &db, "--num=10", "--benchmarks=fillseq"]).unwrap();
        let err = super::super::run(&f, &mut Vec::new()).unwrap_err().to_string();
        assert!(err.contains("refusing to empty"), "{err}");
        assert!(dir.path().join("precious.txt").exists());
    }

    #[test]
    fn report_file_gets_rows() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("r.csv");
        let arg = format!("--report_file={}", csv.display());
        run(&[&arg, "--num=1000", "--duration=2", "--benchmarks=fillseq,readrandom"]);
        let text = std::fs::read_to_string(&csv).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("secs_elapsed,interval_qps"));
        let row = lines.next().expect("a row after 2 s of readrandom");
        let (secs, qps) = row.split_once(',').unwrap();
        assert!(secs.parse::<u64>().is_ok() && qps.parse::<u64>().unwrap() > 0, "{row}");
    }

    /// Runs the bench on the strata engine in `dir` and returns its stdout.
    fn run_strata(dir: &std::path::Path, args: &[&str]) -> anyhow::Result<String> {
        let db = format!("--db={}", dir.display());
        let mut all = vec!["--engine=strata", "--seed=1", "--compression_type=none", &db];
        all.extend_from_slice(args);
        let f = flags::parse(&all).unwrap();
        let mut out = Vec::new();
        super::super::run(&f, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    /// Entries per column family of the database in `dir`, by name.
    fn family_sizes(dir: &std::path::Path) -> Vec<(String, usize)> {
        let db = strata::Db::open(dir, strata::Options::default()).unwrap();
        let sizes = db
            .cf_names()
            .into_iter()
            .map(|name| {
                let cf = db.cf(&name).unwrap();
                let mut it = db.cursor_cf(&cf, &strata::ReadOptions::new()).unwrap();
                it.seek_to_first();
                let mut n = 0;
                while it.valid() {
                    n += 1;
                    it.next();
                }
                (name, n)
            })
            .collect();
        db.close().unwrap();
        sizes
    }

    #[test]
    fn column_families_spread_keys_and_reads_find_them() {
        let dir = tempfile::tempdir().unwrap();
        let benchmarks = "--benchmarks=fillseq,readrandom,seekrandom,readseq,readreverse,updaterandom,flush";
        let out = run_strata(dir.path(), &["--num=300", "--num_column_families=3", benchmarks]).unwrap();
        assert!(out.contains("Column families: 3 (key n in family n % N)\n"), "{out}");
        check_shape(result_line(&out, "fillseq"), 300);
        assert!(result_line(&out, "readrandom").ends_with("(300 of 300 found)"), "{out}");
        assert!(result_line(&out, "seekrandom").ends_with("(300 of 300 found)"), "{out}");
        check_shape(result_line(&out, "readseq"), 300);
        check_shape(result_line(&out, "readreverse"), 300);
        assert!(result_line(&out, "updaterandom").contains("found:300)"), "{out}");
        let sizes = family_sizes(dir.path());
        let names: Vec<&str> = sizes.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["default", "column_family_name_000001", "column_family_name_000002"]);
        assert!(sizes.iter().all(|(_, n)| *n == 100), "{sizes:?}");

        // Batches of keys spread over the families too, and deletes find their family.
        let out = run_strata(
            dir.path(),
            &["--num=300", "--num_column_families=3", "--batch_size=10", "--benchmarks=fillrandom,deleteseq"],
        )
        .unwrap();
        check_shape(result_line(&out, "fillrandom"), 300);
        assert!(family_sizes(dir.path()).iter().all(|(_, n)| *n == 0), "deleteseq removed every key");
    }

    #[test]
    fn cf_batch_puts_each_key_into_every_family_in_one_batch() {
        let dir = tempfile::tempdir().unwrap();
        let args = ["--num=200", "--num_column_families=4", "--cf_batch", "--histogram"];
        let out =
            run_strata(dir.path(), &[&args[..], &["--benchmarks=fillseq,readrandom"]].concat()).unwrap();
        assert!(out.contains("Column families: 4 (every key in each, one batch per key)\n"), "{out}");
        // 200 keys, 4 entries each; one latency sample per batch.
        check_shape(result_line(&out, "fillseq"), 800);
        assert!(out.contains("Microseconds per write:\nCount: 200 Average: "), "{out}");
        assert!(result_line(&out, "readrandom").ends_with("(200 of 200 found)"), "{out}");
        let sizes = family_sizes(dir.path());
        assert_eq!(sizes.len(), 4);
        assert!(sizes.iter().all(|(_, n)| *n == 200), "{sizes:?}");
    }

    #[test]
    fn column_family_flags_refuse_what_they_cannot_do() {
        let dir = tempfile::tempdir().unwrap();
        let err = run_strata(dir.path(), &["--num=10", "--cf_batch"]).unwrap_err().to_string();
        assert!(err.contains("--cf_batch") && err.contains("--num_column_families=2"), "{err}");
        let err = run_strata(
            dir.path(),
            &["--num=10", "--num_column_families=2", "--benchmarks=fillseq,multireadrandom"],
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("multireadrandom"), "{err}");
        let f = flags::parse(&["--engine=memory", "--num=10", "--num_column_families=2"]).unwrap();
        let err = super::super::run(&f, &mut Vec::new()).unwrap_err().to_string();
        assert!(err.contains("memory engine has no column families"), "{err}");
        // An existing database must already have the families.
        run_strata(dir.path(), &["--num=10", "--benchmarks=fillseq"]).unwrap();
        let err = run_strata(dir.path(), &["--num=10", "--use_existing_db", "--num_column_families=2"])
            .unwrap_err();
        assert!(format!("{err:#}").contains("column_family_name_000001"), "{err:#}");
    }
}
