//! Everything the bench prints or writes: per-thread timing, db_bench's result line and header,
//! interval throughput (`--stats_interval_seconds`, `--report_file`), and the resource summary.
//!
//! Owns: db_bench's arithmetic (micros/op = summed per-thread time / ops; ops/sec and MB/s =
//! ops or bytes / wall time from the first start to the last finish) and its exact formats.
//! Must not: run operations or talk to an engine; it only measures and formats.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::histogram::Histogram;
use super::resources::{peak_rss_bytes, Sample};

/// One thread's measurements for one benchmark.
#[derive(Clone)]
pub struct Stats {
    start: Instant,
    finish: Instant,
    last_us: u64,
    done: u64,
    bytes: u64,
    /// Sum of per-thread elapsed seconds (more than wall time once merged).
    secs: f64,
    hist: Histogram,
    message: String,
}

impl Stats {
    /// Starts the clock.
    pub fn start() -> Self {
        let now = Instant::now();
        Self {
            start: now,
            finish: now,
            last_us: 0,
            done: 0,
            bytes: 0,
            secs: 0.0,
            hist: Histogram::new(),
            message: String::new(),
        }
    }

    /// Records `n` finished operations; the latency is the time since the previous call, in
    /// whole microseconds, as db_bench measures it.
    #[inline]
    pub fn finished_ops(&mut self, n: u64) {
        let now_us = self.start.elapsed().as_micros() as u64;
        self.hist.add(now_us - self.last_us);
        self.last_us = now_us;
        self.done += n;
    }

    pub fn add_bytes(&mut self, n: u64) {
        self.bytes += n;
    }

    pub fn set_message(&mut self, m: String) {
        self.message = m;
    }

    pub fn done(&self) -> u64 {
        self.done
    }

    pub fn histogram(&self) -> &Histogram {
        &self.hist
    }

    /// Stops the clock.
    pub fn stop(&mut self) {
        self.finish = Instant::now();
        self.secs = (self.finish - self.start).as_secs_f64();
    }

    /// Folds another thread's measurements into these.
    pub fn merge(&mut self, o: &Stats) {
        self.hist.merge(&o.hist);
        self.done += o.done;
        self.bytes += o.bytes;
        self.secs += o.secs;
        self.start = self.start.min(o.start);
        self.finish = self.finish.max(o.finish);
        if self.message.is_empty() {
            self.message = o.message.clone();
        }
    }

    /// Wall seconds from the first thread's start to the last one's finish.
    pub fn elapsed(&self) -> f64 {
        // Whole microseconds, as db_bench's NowMicros-based arithmetic.
        ((self.finish - self.start).as_micros() as f64 * 1e-6).max(1e-6)
    }

    /// The computed figures of the result line.
    pub fn result(&self, name: &str) -> BenchResult {
        let done = self.done.max(1);
        let elapsed = self.elapsed();
        BenchResult {
            name: name.to_string(),
            micros_per_op: self.secs * 1e6 / done as f64,
            ops_per_sec: (done as f64 / elapsed) as i64,
            elapsed,
            ops: done,
            mb_per_sec: (self.bytes > 0).then(|| (self.bytes as f64 / 1_048_576.0) / elapsed),
            message: self.message.clone(),
        }
    }
}

/// The figures on one db_bench result line.
#[derive(Debug, Clone)]
pub struct BenchResult {
    pub name: String,
    pub micros_per_op: f64,
    pub ops_per_sec: i64,
    pub elapsed: f64,
    pub ops: u64,
    pub mb_per_sec: Option<f64>,
    pub message: String,
}

impl BenchResult {
    /// `"%-12s : %11.3f micros/op %ld ops/sec %.3f seconds %lu operations;%s%s"` plus newline.
    pub fn line(&self) -> String {
        let mut extra = self.mb_per_sec.map(|r| format!("{r:>6.1} MB/s")).unwrap_or_default();
        if !self.message.is_empty() {
            if !extra.is_empty() {
                extra.push(' ');
            }
            extra.push_str(&self.message);
        }
        let sep = if extra.is_empty() { "" } else { " " };
        format!(
            "{:<12} : {:>11.3} micros/op {} ops/sec {:.3} seconds {} operations;{sep}{extra}\n",
            self.name, self.micros_per_op, self.ops_per_sec, self.elapsed, self.ops
        )
    }
}

/// What follows the result line: the full histogram block with `--histogram`, otherwise just
/// the percentiles line (tail latency is always reported; averages hide stalls).
pub fn latency_block(hist: &Histogram, op_title: &str, full: bool) -> String {
    if full {
        format!("Microseconds per {op_title}:\n{}\n", hist.to_db_bench_string())
    } else {
        hist.percentiles_line()
    }
}

/// A counter one benchmark thread bumps and the interval reporter reads; padded so threads
/// don't share a cache line.
#[repr(align(64))]
#[derive(Default)]
pub struct ProgressCounter(AtomicU64);

impl ProgressCounter {
    #[inline]
    pub fn set(&self, done: u64) {
        self.0.store(done, Ordering::Relaxed);
    }
}

/// Where `--report_file` rows go; shared by all benchmarks of a run, as db_bench's ReporterAgent.
pub struct CsvReport {
    out: Mutex<BufWriter<File>>,
    origin: Instant,
    pub interval: Duration,
}

impl CsvReport {
    /// Creates the file and writes db_bench's header.
    pub fn create(path: &Path, interval_secs: u64) -> anyhow::Result<Self> {
        let mut out = BufWriter::new(File::create(path)?);
        writeln!(out, "secs_elapsed,interval_qps")?;
        out.flush()?;
        Ok(Self {
            out: Mutex::new(out),
            origin: Instant::now(),
            interval: Duration::from_secs(interval_secs.max(1)),
        })
    }

    fn row(&self, qps: u64) {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        // A failed row must not abort the benchmark it is observing.
        let _ = writeln!(out, "{},{qps}", self.origin.elapsed().as_secs());
        let _ = out.flush();
    }
}

/// Settings of the interval reporter for one benchmark.
pub struct IntervalConfig<'a> {
    /// Print a throughput line to stderr this often (`--stats_interval_seconds`).
    pub print_every: Option<Duration>,
    pub csv: Option<&'a CsvReport>,
}

/// Runs until `finished` is set, summing the threads' counters at each interval.
pub fn run_interval_reporter(cfg: &IntervalConfig<'_>, counters: &[ProgressCounter], finished: &AtomicBool) {
    let start = Instant::now();
    let sum = || counters.iter().map(|c| c.0.load(Ordering::Relaxed)).sum::<u64>();
    let mut print = cfg.print_every.map(|d| (start + d, start, 0u64));
    let mut csv = cfg.csv.map(|c| (start + c.interval, start, 0u64));
    while !finished.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(20));
        let now = Instant::now();
        if let Some((due, last_t, last_n)) = print.as_mut().filter(|p| now >= p.0) {
            let n = sum();
            eprint!("{}", interval_line(n - *last_n, n, now - *last_t, now - start));
            *due += cfg.print_every.unwrap_or_default();
            (*last_t, *last_n) = (now, n);
        }
        if let (Some((due, last_t, last_n)), Some(report)) = (csv.as_mut(), cfg.csv) {
            if now >= *due {
                let n = sum();
                report.row(((n - *last_n) as f64 / (now - *last_t).as_secs_f64()) as u64);
                *due += report.interval;
                (*last_t, *last_n) = (now, n);
            }
        }
    }
}

/// db_bench's `--stats_interval_seconds` line, for all threads together.
fn interval_line(interval_ops: u64, total_ops: u64, interval: Duration, total: Duration) -> String {
    let rate = |ops: u64, d: Duration| ops as f64 / d.as_secs_f64().max(1e-9);
    format!(
        "{} ... all threads: ({interval_ops},{total_ops}) ops and ({:.1},{:.1}) ops/second in ({:.6},{:.6}) seconds\n",
        format_time_db_bench(SystemTime::now()),
        rate(interval_ops, interval),
        rate(total_ops, total),
        interval.as_secs_f64(),
        total.as_secs_f64()
    )
}

/// Resource figures sampled before and after a benchmark.
/// The closing figures of one benchmark, for its summary line and the final table.
#[derive(Debug, Clone)]
pub struct Summary {
    pub result: BenchResult,
    pub p99: f64,
    pub p9999: f64,
    pub max: u64,
    pub db_bytes: u64,
    pub write_bytes_per_op: Option<f64>,
    /// Bytes read from storage per operation (`/proc/self/io`).
    pub read_bytes_per_op: Option<f64>,
    /// Read requests the disks completed per operation (the whole machine's).
    pub disk_reads_per_op: Option<f64>,
    /// CPU microseconds of the whole process per operation.
    pub cpu_us_per_op: Option<f64>,
    /// Context switches per operation: the benchmark threads' own and the engine's threads'.
    pub switches_per_op: Option<f64>,
    pub peak_rss: Option<u64>,
}

impl Summary {
    /// `worker_switches`: what the benchmark's own threads counted on themselves (they have
    /// exited, so a sample cannot see them).
    pub fn new(
        result: BenchResult,
        hist: &Histogram,
        db_bytes: u64,
        before: &Sample,
        worker_switches: Option<u64>,
    ) -> Self {
        let used = Sample::take().usage_since(before);
        let per_op = |x: f64| x / result.ops.max(1) as f64;
        Self {
            p99: hist.percentile(99.0),
            p9999: hist.percentile(99.99),
            max: hist.max(),
            db_bytes,
            write_bytes_per_op: used.io.map(|(_, w)| per_op(w as f64)),
            read_bytes_per_op: used.io.map(|(r, _)| per_op(r as f64)),
            disk_reads_per_op: used.disk_reads.map(|r| per_op(r as f64)),
            cpu_us_per_op: used.cpu_secs.map(|c| per_op(c * 1e6)),
            switches_per_op: used.switches(worker_switches).map(|s| per_op(s as f64)),
            peak_rss: peak_rss_bytes(),
            result,
        }
    }

    /// One line that does not look like a result line (no "micros/op"), so parsers skip it.
    pub fn line(&self) -> String {
        format!(
            "Summary {}: db_size {:.1} MB, disk write {} bytes/op, disk read {} bytes/op, disk reads/op {}, \
             cpu {} us/op, cs/op {}, peak RSS {}, P99 {:.2} P99.99 {:.2} Max {} us\n",
            self.result.name,
            mb(self.db_bytes),
            opt(self.write_bytes_per_op.map(|w| format!("{w:.1}"))),
            opt(self.read_bytes_per_op.map(|r| format!("{r:.1}"))),
            opt(self.disk_reads_per_op.map(|r| format!("{r:.4}"))),
            opt(self.cpu_us_per_op.map(|c| format!("{c:.2}"))),
            opt(self.switches_per_op.map(|c| format!("{c:.3}"))),
            opt(self.peak_rss.map(|r| format!("{:.1} MB", mb(r)))),
            self.p99,
            self.p9999,
            self.max
        )
    }
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1_048_576.0
}

fn opt(s: Option<String>) -> String {
    s.unwrap_or_else(|| "n/a".to_string())
}

/// The compact table printed after all benchmarks.
pub fn summary_table(rows: &[Summary]) -> String {
    let mut s = format!(
        "\n{:<16} {:>10} {:>10} {:>9} {:>9} {:>9} {:>8} {:>8} {:>10}\n",
        "benchmark", "ops/sec", "micros/op", "P99 us", "P99.99 us", "Max us", "MB/s", "DB MB", "wbytes/op"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:<16} {:>10} {:>10.3} {:>9.2} {:>9.2} {:>9} {:>8} {:>8.1} {:>10}",
            r.result.name,
            r.result.ops_per_sec,
            r.result.micros_per_op,
            r.p99,
            r.p9999,
            r.max,
            opt(r.result.mb_per_sec.map(|m| format!("{m:.1}"))),
            mb(r.db_bytes),
            opt(r.write_bytes_per_op.map(|w| format!("{w:.0}"))),
        );
    }
    s
}

/// The stderr lines db_bench prints before its header (`RocksDB:`, `Date:`, `CPU:`, `CPUCache:`).
pub fn environment() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        cpuinfo
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| "unknown".to_string())
    };
    let cpus = cpuinfo.lines().filter(|l| l.starts_with("processor")).count();
    format!(
        "strata:     version {} (commit {})\nDate:       {}\nCPU:        {cpus} * {}\nCPUCache:   {}\n",
        env!("CARGO_PKG_VERSION"),
        env!("STRATA_GIT_COMMIT"),
        format_ctime(SystemTime::now()),
        field("model name"),
        field("cache size")
    )
}

/// Splits a time into UTC (year, month, day, hour, minute, second, weekday 0 = Sunday).
fn civil(t: SystemTime) -> (i64, u32, u32, u32, u32, u32, usize) {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    let weekday = (days + 4).rem_euclid(7) as usize;
    let (h, m, s) = ((rem / 3600) as u32, (rem % 3600 / 60) as u32, (rem % 60) as u32);
    (year, month, day, h, m, s, weekday)
}

/// `ctime(3)` layout, in UTC: `Sun Nov 22 10:00:00 2026`.
fn format_ctime(t: SystemTime) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let (y, mo, d, h, mi, s, wd) = civil(t);
    format!("{} {} {d:>2} {h:02}:{mi:02}:{s:02} {y}", DAYS[wd], MONTHS[mo as usize - 1])
}

/// db_bench's `TimeToString` layout, in UTC: `2026/11/22-10:00:00`.
fn format_time_db_bench(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s, _) = civil(t);
    format!("{y:04}/{mo:02}/{d:02}-{h:02}:{mi:02}:{s:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(mb: Option<f64>, msg: &str) -> BenchResult {
        BenchResult {
            name: "fillseq".into(),
            micros_per_op: 4.295,
            ops_per_sec: 232_484,
            elapsed: 2.151,
            ops: 500_000,
            mb_per_sec: mb,
            message: msg.into(),
        }
    }

    #[test]
    fn result_line_matches_db_bench() {
        assert_eq!(
            result(Some(180.9), "").line(),
            "fillseq      :       4.295 micros/op 232484 ops/sec 2.151 seconds 500000 operations;  180.9 MB/s\n"
        );
        assert_eq!(
            result(None, "(5 of 10 found)").line(),
            "fillseq      :       4.295 micros/op 232484 ops/sec 2.151 seconds 500000 operations; (5 of 10 found)\n"
        );
        assert_eq!(
            result(None, "").line(),
            "fillseq      :       4.295 micros/op 232484 ops/sec 2.151 seconds 500000 operations;\n"
        );
    }

    #[test]
    fn dates_format_like_ctime() {
        let t = UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        assert_eq!(format_ctime(t), "Wed Nov 18 11:06:40 2026");
        assert_eq!(format_time_db_bench(t), "2026/11/18-11:06:40");
        assert_eq!(format_ctime(UNIX_EPOCH), "Thu Jan  1 00:00:00 1970");
    }

    #[test]
    fn merged_stats_use_summed_thread_time_and_wall_time() {
        let mut a = Stats::start();
        a.finished_ops(1);
        a.stop();
        let mut b = a.clone();
        b.set_message("(1 of 1 found)".into());
        a.merge(&b);
        let r = a.result("x");
        assert_eq!(r.ops, 2);
        assert!(r.micros_per_op >= 0.0);
        assert_eq!(r.message, "(1 of 1 found)");
    }
}
