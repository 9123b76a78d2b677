//! What the insert benchmark shows while a phase runs: every `--stats_interval_seconds` one
//! line (iibench's progress line: inserts/s and queries/s of the interval and of the phase so
//! far, the slowest insert and query of the interval, the database's size) and the same row
//! in the `--report_file` CSV, whose first two columns are `strata bench plot`'s
//! `secs_elapsed,interval_qps` (here: inserts per second).
//!
//! Owns: the shared counters the client threads bump, the reporting loop the main thread runs
//! beside them, and both formats. Must not: run operations or decide when a phase ends.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::super::resources::disk_usage;

/// The CSV's header: plot.rs reads the first two columns.
pub const CSV_HEADER: &str =
    "secs_elapsed,interval_ips,phase,interval_qps,total_ips,total_qps,max_insert_us,max_query_us,db_bytes";

/// Counters the client threads of one phase share.
#[derive(Default)]
pub struct Counters {
    inserted: AtomicU64,
    queries: AtomicU64,
    max_insert_us: AtomicU64,
    max_query_us: AtomicU64,
    /// Worker threads still running.
    pub running: AtomicUsize,
}

impl Counters {
    /// One insert of `rows` rows that took `us`.
    pub fn inserted(&self, rows: u64, us: u64) {
        self.inserted.fetch_add(rows, Ordering::Relaxed);
        self.max_insert_us.fetch_max(us, Ordering::Relaxed);
    }

    /// One query that took `us`.
    pub fn queried(&self, us: u64) {
        self.queries.fetch_add(1, Ordering::Relaxed);
        self.max_query_us.fetch_max(us, Ordering::Relaxed);
    }

    fn totals(&self) -> (u64, u64) {
        (self.inserted.load(Ordering::Relaxed), self.queries.load(Ordering::Relaxed))
    }

    /// The interval's slowest insert and query, resetting both.
    fn take_max(&self) -> (u64, u64) {
        (self.max_insert_us.swap(0, Ordering::Relaxed), self.max_query_us.swap(0, Ordering::Relaxed))
    }
}

/// One interval's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalRow {
    pub phase: String,
    /// Seconds since the run started (the CSV's x axis, continuous across phases).
    pub run_secs: f64,
    /// Seconds since the phase started.
    pub phase_secs: f64,
    pub interval_ips: f64,
    pub total_ips: f64,
    pub interval_qps: f64,
    pub total_qps: f64,
    pub max_insert_us: u64,
    pub max_query_us: u64,
    pub db_bytes: u64,
}

impl IntervalRow {
    pub fn line(&self) -> String {
        format!(
            "interval {:<7} t {:>8.1} s  ips {:>9.0} (total {:>9.0})  qps {:>8.0} (total {:>8.0})  \
             max insert {:>7} us  max query {:>7} us  db {:.1} MB\n",
            self.phase,
            self.phase_secs,
            self.interval_ips,
            self.total_ips,
            self.interval_qps,
            self.total_qps,
            self.max_insert_us,
            self.max_query_us,
            self.db_bytes as f64 / 1_048_576.0
        )
    }

    pub fn csv(&self) -> String {
        format!(
            "{:.1},{:.0},{},{:.0},{:.0},{:.0},{},{},{}\n",
            self.run_secs,
            self.interval_ips,
            self.phase,
            self.interval_qps,
            self.total_ips,
            self.total_qps,
            self.max_insert_us,
            self.max_query_us,
            self.db_bytes
        )
    }
}

/// Where interval rows go for a whole run.
pub struct Monitor {
    run_start: Instant,
    /// Print a line this often (None: `--stats_interval_seconds=0`).
    print_every: Option<Duration>,
    csv: Option<(BufWriter<File>, Duration)>,
    db: PathBuf,
}

impl Monitor {
    /// `csv`: the `--report_file` and its row interval (the print interval when there is one).
    pub fn new(db: &Path, print_every: Option<Duration>, csv: Option<(&Path, Duration)>) -> Result<Self> {
        let csv = match csv {
            Some((p, every)) => {
                let mut f =
                    BufWriter::new(File::create(p).with_context(|| format!("creating {}", p.display()))?);
                writeln!(f, "{CSV_HEADER}")?;
                f.flush()?;
                Some((f, print_every.unwrap_or(every)))
            }
            None => None,
        };
        Ok(Self { run_start: Instant::now(), print_every, csv, db: db.to_path_buf() })
    }

    fn every(&self) -> Option<Duration> {
        self.print_every.or(self.csv.as_ref().map(|c| c.1))
    }

    /// Reports on `c` until its workers have all finished, then once more for the last part
    /// of an interval. Runs on the main thread while the workers run.
    pub fn watch(&mut self, phase: &str, c: &Counters, out: &mut dyn Write) -> Result<()> {
        let start = Instant::now();
        let every = self.every();
        let mut last = (start, 0u64, 0u64);
        let mut due = every.map(|d| start + d);
        loop {
            let done = c.running.load(Ordering::Acquire) == 0;
            let now = Instant::now();
            if done || due.is_some_and(|d| now >= d) {
                if every.is_some() && (!done || now - last.0 >= Duration::from_millis(1)) {
                    let (ins, q) = c.totals();
                    let row = self.row(phase, c, start, last, (now, ins, q));
                    self.emit(&row, out)?;
                    last = (now, ins, q);
                }
                if done {
                    return Ok(());
                }
                due = due.zip(every).map(|(d, e)| d + e);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The row for the interval from `last` to `now`, each (time, inserts, queries).
    fn row(
        &self,
        phase: &str,
        c: &Counters,
        start: Instant,
        last: (Instant, u64, u64),
        (now, ins, q): (Instant, u64, u64),
    ) -> IntervalRow {
        let (max_i, max_q) = c.take_max();
        let secs = |d: Duration| d.as_secs_f64().max(1e-6);
        let (interval, total) = (secs(now - last.0), secs(now - start));
        IntervalRow {
            phase: phase.to_string(),
            run_secs: (now - self.run_start).as_secs_f64(),
            phase_secs: total,
            interval_ips: (ins - last.1) as f64 / interval,
            total_ips: ins as f64 / total,
            interval_qps: (q - last.2) as f64 / interval,
            total_qps: q as f64 / total,
            max_insert_us: max_i,
            max_query_us: max_q,
            db_bytes: disk_usage(&self.db),
        }
    }

    fn emit(&mut self, row: &IntervalRow, out: &mut dyn Write) -> Result<()> {
        if self.print_every.is_some() {
            out.write_all(row.line().as_bytes())?;
            out.flush()?;
        }
        if let Some((f, _)) = &mut self.csv {
            f.write_all(row.csv().as_bytes())?;
            f.flush()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_print_and_plot() {
        let row = IntervalRow {
            phase: "qr100".into(),
            run_secs: 12.5,
            phase_secs: 2.0,
            interval_ips: 100.0,
            total_ips: 98.4,
            interval_qps: 1500.0,
            total_qps: 1400.0,
            max_insert_us: 900,
            max_query_us: 4000,
            db_bytes: 3 << 20,
        };
        let line = row.line();
        assert!(
            line.starts_with("interval qr100 ") && line.contains("max query    4000 us  db 3.0 MB"),
            "{line}"
        );
        let text = format!("{CSV_HEADER}\n{}", row.csv());
        assert_eq!(row.csv(), "12.5,100,qr100,1500,98,1400,900,4000,3145728\n");
        assert_eq!(super::super::super::plot::parse_csv(&text).unwrap(), [(12.5, 100.0)]);
    }

    #[test]
    fn watch_reports_every_interval_and_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("r.csv");
        let mut m =
            Monitor::new(dir.path(), Some(Duration::from_millis(100)), Some((&csv, Duration::ZERO))).unwrap();
        let c = Counters::default();
        c.running.store(1, Ordering::Release);
        let mut out = Vec::new();
        std::thread::scope(|s| {
            s.spawn(|| {
                for _ in 0..30 {
                    c.inserted(10, 5);
                    c.queried(7);
                    std::thread::sleep(Duration::from_millis(10));
                }
                c.running.fetch_sub(1, Ordering::Release);
            });
            m.watch("l.i1", &c, &mut out).unwrap();
        });
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() >= 2 && lines.iter().all(|l| l.starts_with("interval l.i1 ")), "{text}");
        let rows = std::fs::read_to_string(&csv).unwrap();
        assert_eq!(rows.lines().count(), lines.len() + 1, "{rows}");
        assert!(rows.lines().nth(1).unwrap().contains(",l.i1,"), "{rows}");
    }
}
