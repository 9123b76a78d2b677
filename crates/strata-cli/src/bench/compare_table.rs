//! The side-by-side tables of `strata bench compare`: medians across rounds for any number of
//! engines, each engine's ratio to the first one, the "strata / best other engine" line, and
//! what each benchmark cost (database size, memory, disk bytes and reads, CPU and context
//! switches per operation).
//!
//! Owns: the median and ratio arithmetic, matching a benchmark across rounds and engines (by
//! name, step and occurrence), choosing each cost's source (the benchmark's own Summary line,
//! else the child process measured from outside), and the tables' two layouts (plain text and
//! GitHub markdown).
//! Must not: run or parse anything; it gets parsed rounds and returns text.

use std::fmt::Write as _;

use super::dbbench_output::{Parsed, PerOp};
use super::device_probe::Probe;

/// One measured step of one engine in one round: one child process.
#[derive(Debug, Clone, Default)]
pub struct Step {
    /// Appended to each benchmark's name in the table (` t=16` for a step of 16 threads).
    pub suffix: String,
    pub results: Vec<Parsed>,
    /// `du` of the database directory after the step.
    pub db_bytes: u64,
    /// The largest `du` of the database seen while the step ran (sampled every second).
    pub peak_db_bytes: Option<u64>,
    /// Peak resident memory of the step's process, in bytes.
    pub peak_rss: Option<u64>,
    /// What the step's whole process cost, measured from outside (wait4).
    pub outside: Option<Outside>,
    /// The disk's own random reads just before and just after the step (`--device_probe`).
    pub device: Option<(Probe, Probe)>,
}

/// A child process's costs from its start to its exit (child.rs).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Outside {
    pub write_bytes: u64,
    pub read_bytes: u64,
    pub cpu_secs: f64,
    pub switches: u64,
    /// The machine's disk read requests over the child's life.
    pub disk_reads: Option<u64>,
}

impl Step {
    /// A benchmark's cost per operation: its own `Summary` line if the engine printed one
    /// (strata bench, peerbench), else the whole step's process from outside divided by the
    /// operations of all the step's benchmarks (db_bench). The flag says which.
    pub fn per_op(&self, p: &Parsed) -> Option<(PerOp, Source)> {
        if let Some(c) = &p.per_op {
            return Some((c.clone(), Source::Summary));
        }
        let o = self.outside?;
        let ops: u64 = self.results.iter().map(|r| r.ops).sum::<Option<u64>>()?;
        let per = |x: f64| (ops > 0).then(|| x / ops as f64);
        let c = PerOp {
            write_bytes: per(o.write_bytes as f64),
            read_bytes: per(o.read_bytes as f64),
            disk_reads: o.disk_reads.and_then(|r| per(r as f64)),
            cpu_us: per(o.cpu_secs * 1e6),
            switches: per(o.switches as f64),
        };
        (ops > 0).then_some((c, Source::Outside))
    }
}

/// Where a cost per operation came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The benchmark's `Summary` line: the process measured itself around the benchmark.
    Summary,
    /// wait4 and the machine's disk counters around the whole child process.
    Outside,
}

/// One engine's measured steps in one round, in order; a failed run leaves the steps it made.
#[derive(Debug, Clone, Default)]
pub struct Round {
    pub steps: Vec<Step>,
}

/// Every round of one engine.
#[derive(Debug, Clone)]
pub struct EngineRounds {
    pub name: String,
    pub rounds: Vec<Round>,
}

/// The middle value (the mean of the middle two for an even count); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 { v[mid] } else { (v[mid - 1] + v[mid]) / 2.0 })
}

/// a / b; `None` when either side is missing or b is zero.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
        _ => None,
    }
}

/// Labels a round's results by name and step suffix, with `#2`, `#3` for a label that comes
/// again, so `readrandom,readrandom` compares first with first and second with second.
fn labelled(round: &Round) -> Vec<(String, &Parsed, &Step)> {
    let mut out: Vec<(String, &Parsed, &Step)> = Vec::new();
    for step in &round.steps {
        for r in &step.results {
            let base = format!("{}{}", r.name, step.suffix);
            let seen = out.iter().filter(|(_, p, s)| format!("{}{}", p.name, s.suffix) == base).count();
            let label = if seen == 0 { base } else { format!("{base}#{}", seen + 1) };
            out.push((label, r, step));
        }
    }
    out
}

/// Benchmark labels in order of first appearance across all engines.
fn labels(engines: &[EngineRounds]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for round in engines.iter().flat_map(|e| &e.rounds) {
        for (label, _, _) in labelled(round) {
            if !names.contains(&label) {
                names.push(label);
            }
        }
    }
    names
}

/// Reads one figure of a benchmark's result and its step.
type Getter = fn(&Parsed, &Step) -> Option<f64>;

/// The median over rounds of one figure of one benchmark.
fn metric(rounds: &[Round], label: &str, get: Getter) -> Option<f64> {
    let values: Vec<f64> = rounds
        .iter()
        .filter_map(|r| labelled(r).into_iter().find(|(l, _, _)| l == label))
        .filter_map(|(_, p, s)| get(p, s))
        .collect();
    median(&values)
}

const MB: f64 = 1_048_576.0;

/// How a column's numbers are written.
#[derive(Clone, Copy)]
enum Fmt {
    /// `2.00x`
    Ratio,
    /// three decimals below 1000 (micros/op)
    Micros,
    /// two decimals below 1000, none above
    Plain,
    /// a cost per operation: three decimals below 1, two below 100, one below 1000, none above
    Cost,
}

/// The throughput and latency table's columns after the engine name.
const SPEED: &[(&str, Fmt)] = &[
    ("ops/sec", Fmt::Plain),
    ("ratio", Fmt::Ratio),
    ("micros/op", Fmt::Micros),
    ("P99 us", Fmt::Plain),
    ("P99.99 us", Fmt::Plain),
    ("Max us", Fmt::Plain),
];

/// The cost table's columns after the engine name; a last text column says where the costs
/// per operation came from.
const COST: &[(&str, Fmt)] = &[
    ("DB MB", Fmt::Plain),
    ("peak DB MB", Fmt::Plain),
    ("RSS MB", Fmt::Plain),
    ("read B/op", Fmt::Cost),
    ("write B/op", Fmt::Cost),
    ("reads/op", Fmt::Cost),
    ("cpu us/op", Fmt::Cost),
    ("cs/op", Fmt::Cost),
    ("wrote MB", Fmt::Plain),
];

/// The cost table's last column.
const FROM: &str = "from";

/// One row: an engine's medians for one benchmark, and any text cells after them.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    engine: String,
    values: Vec<Option<f64>>,
    text: Option<String>,
}

/// A benchmark's throughput rows, one per engine, in `--engines` order. `ratio` is the first
/// engine's ops/sec over this one's.
fn speed_rows(engines: &[EngineRounds], label: &str) -> Vec<Row> {
    let ops = |e: &EngineRounds| metric(&e.rounds, label, |p, _| Some(p.ops_per_sec));
    let first = engines.first().and_then(ops);
    engines
        .iter()
        .map(|e| Row {
            engine: e.name.clone(),
            values: vec![
                ops(e),
                ratio(first, ops(e)),
                metric(&e.rounds, label, |p, _| Some(p.micros_per_op)),
                metric(&e.rounds, label, |p, _| p.p99),
                metric(&e.rounds, label, |p, _| p.p9999),
                metric(&e.rounds, label, |p, _| p.max),
            ],
            text: None,
        })
        .collect()
}

/// A benchmark's cost rows, one per engine.
fn cost_rows(engines: &[EngineRounds], label: &str) -> Vec<Row> {
    engines
        .iter()
        .map(|e| {
            let m = |get: Getter| metric(&e.rounds, label, get);
            let sources: Vec<Source> = e
                .rounds
                .iter()
                .filter_map(|r| labelled(r).into_iter().find(|(l, _, _)| l == label))
                .filter_map(|(_, p, s)| s.per_op(p).map(|(_, src)| src))
                .collect();
            let text = match (sources.contains(&Source::Summary), sources.contains(&Source::Outside)) {
                (true, false) => "Summary",
                (false, true) => "wait4",
                (true, true) => "mixed",
                (false, false) => "-",
            };
            Row {
                engine: e.name.clone(),
                values: vec![
                    m(|_, s| Some(s.db_bytes as f64 / MB)),
                    m(|_, s| s.peak_db_bytes.map(|b| b as f64 / MB)),
                    m(|_, s| s.peak_rss.map(|b| b as f64 / MB)),
                    m(|p, s| s.per_op(p)?.0.read_bytes),
                    m(|p, s| s.per_op(p)?.0.write_bytes),
                    m(|p, s| s.per_op(p)?.0.disk_reads),
                    m(|p, s| s.per_op(p)?.0.cpu_us),
                    m(|p, s| s.per_op(p)?.0.switches),
                    m(|_, s| s.outside.map(|o| o.write_bytes as f64 / MB)),
                ],
                text: Some(text.to_string()),
            }
        })
        .collect()
}

/// "strata / best other engine = X.XXx (best: NAME)" for one benchmark: strata's ops/sec (the
/// first engine's when strata is not in the compare) over the fastest other engine's.
fn best_other(engines: &[EngineRounds], label: &str, rows: &[Row]) -> Option<String> {
    let me = engines.iter().position(|e| e.name == "strata").unwrap_or(0);
    let mine = rows.get(me)?.values[0];
    // The first of equally fast engines, in --engines order.
    let (best, best_ops) = rows
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != me)
        .filter_map(|(_, r)| Some((r.engine.as_str(), r.values[0]?)))
        .fold(None, |best: Option<(&str, f64)>, r| match best {
            Some(b) if b.1 >= r.1 => Some(b),
            _ => Some(r),
        })?;
    let x = ratio(mine, Some(best_ops))?;
    Some(format!("{label}: {} / best other engine = {x:.2}x (best: {best})", engines[me].name))
}

fn rounds_text(engines: &[EngineRounds]) -> String {
    let counts: Vec<usize> = engines.iter().map(|e| e.rounds.len()).collect();
    if counts.windows(2).all(|w| w[0] == w[1]) {
        match counts.first().copied().unwrap_or(0) {
            1 => "1 round per engine".to_string(),
            n => format!("{n} rounds per engine"),
        }
    } else {
        let each: Vec<String> = engines.iter().map(|e| format!("{} {}", e.name, e.rounds.len())).collect();
        format!("rounds: {}", each.join(", "))
    }
}

fn speed_legend(engines: &[EngineRounds]) -> String {
    let first = engines.first().map_or("", |e| e.name.as_str());
    format!(
        "medians of {}; ratio = {first} ops/sec / the row's (above 1: {first} is faster).\n",
        rounds_text(engines)
    )
}

fn cost_legend(engines: &[EngineRounds]) -> String {
    format!(
        "What each benchmark cost (medians of {}). DB MB: du of the database after the step;\n\
         peak DB MB: the largest du, sampled every second while the step ran. RSS MB: peak resident\n\
         memory of the step's process. Per operation (of a read benchmark: per lookup or seek): disk\n\
         bytes read and written, disk read requests, CPU microseconds and context switches. from =\n\
         Summary: the benchmark's own Summary line, the process measuring itself around it (strata\n\
         bench, its built-in engines and peerbench alike: /proc/self/io read_bytes and write_bytes,\n\
         read requests the machine's disks completed (/sys/block/*/stat), /proc/self/stat utime +\n\
         stime, each thread's voluntary and involuntary context switches);\n\
         from = wait4: the engine prints no Summary (db_bench), so the whole child process measured\n\
         from outside, open and close included (wait4: ru_inblock, ru_oublock, ru_utime + ru_stime,\n\
         ru_nvcsw + ru_nivcsw; the machine's disk reads over its life) / the operations of all the\n\
         step's benchmarks. wrote MB: everything the step's process wrote, open and close included\n\
         (wait4 ru_oublock), the same measurement for every engine.\n",
        rounds_text(engines)
    )
}

/// A block of rows per benchmark under a header, in the plain layout.
fn text_block(
    s: &mut String,
    labels: &[String],
    cols: &[(&str, Fmt)],
    text_col: Option<&str>,
    rows: &dyn Fn(&str) -> Vec<Row>,
) {
    let bw = labels.iter().map(String::len).chain([9]).max().unwrap_or(9);
    let all: Vec<(String, Vec<Row>)> = labels.iter().map(|l| (l.clone(), rows(l))).collect();
    let ew = all.iter().flat_map(|(_, r)| r).map(|r| r.engine.len()).chain([6]).max().unwrap_or(6);
    let width = |c: usize| cols[c].0.len().max(9) + 1;
    let texts = all.iter().flat_map(|(_, r)| r).filter_map(|r| r.text.as_deref());
    let tw = texts.chain(text_col).map(str::len).max().unwrap_or(0);
    let _ = write!(s, "{:<bw$} {:<ew$}", "benchmark", "engine");
    for (c, (name, _)) in cols.iter().enumerate() {
        let _ = write!(s, " {name:>w$}", w = width(c));
    }
    if let Some(t) = text_col {
        let _ = write!(s, "  {t:<tw$}");
    }
    s.push('\n');
    for (label, rows) in &all {
        for (i, r) in rows.iter().enumerate() {
            let first = if i == 0 { label.as_str() } else { "" };
            let _ = write!(s, "{first:<bw$} {:<ew$}", r.engine);
            for (c, v) in r.values.iter().enumerate() {
                let _ = write!(s, " {:>w$}", cell(cols[c].1, *v, false), w = width(c));
            }
            if let Some(t) = &r.text {
                let _ = write!(s, "  {t:<tw$}");
            }
            s.push('\n');
        }
    }
}

/// The same block as a GitHub markdown table.
fn markdown_block(
    s: &mut String,
    labels: &[String],
    cols: &[(&str, Fmt)],
    text_col: Option<&str>,
    rows: &dyn Fn(&str) -> Vec<Row>,
) {
    s.push_str("| benchmark | engine |");
    for (c, _) in cols {
        let _ = write!(s, " {c} |");
    }
    if let Some(t) = text_col {
        let _ = write!(s, " {t} |");
    }
    s.push_str("\n|---|---|");
    s.push_str(&"---:|".repeat(cols.len()));
    if text_col.is_some() {
        s.push_str("---|");
    }
    s.push('\n');
    for label in labels {
        for (i, r) in rows(label).iter().enumerate() {
            let first = if i == 0 { label.as_str() } else { "" };
            let _ = write!(s, "| {first} | {} |", r.engine);
            for (c, v) in r.values.iter().enumerate() {
                let _ = write!(s, " {} |", cell(cols[c].1, *v, true));
            }
            if let Some(t) = &r.text {
                let _ = write!(s, " {t} |");
            }
            s.push('\n');
        }
    }
}

fn best_lines(engines: &[EngineRounds], labels: &[String]) -> Vec<String> {
    if engines.len() < 2 {
        return Vec::new();
    }
    labels.iter().filter_map(|l| best_other(engines, l, &speed_rows(engines, l))).collect()
}

/// The plain-text tables: throughput and latency (a block of one row per engine for each
/// benchmark) and the "strata / best other engine" lines, then what each benchmark cost.
pub fn table(engines: &[EngineRounds]) -> String {
    let all = labels(engines);
    let mut s = format!("\n{}", speed_legend(engines));
    text_block(&mut s, &all, SPEED, None, &|l| speed_rows(engines, l));
    let best = best_lines(engines, &all);
    if !best.is_empty() {
        s.push('\n');
        for b in best {
            let _ = writeln!(s, "{b}");
        }
    }
    let _ = write!(s, "\n{}", cost_legend(engines));
    text_block(&mut s, &all, COST, Some(FROM), &|l| cost_rows(engines, l));
    let device = device_lines(engines, &all);
    if !device.is_empty() {
        s.push('\n');
        for d in device {
            let _ = writeln!(s, "{d}");
        }
    }
    s
}

/// The same tables as GitHub markdown, for BENCHMARKS.md: the throughput table first (a script
/// finds it by its `| benchmark |` header line), the best-other lines and its legend, then the
/// cost table and its legend.
pub fn markdown(engines: &[EngineRounds]) -> String {
    let all = labels(engines);
    let device = device_lines(engines, &all);
    let mut s = String::from("\n");
    markdown_block(&mut s, &all, SPEED, None, &|l| speed_rows(engines, l));
    s.push('\n');
    let best = best_lines(engines, &all);
    if !best.is_empty() {
        for b in best {
            let _ = writeln!(s, "- {b}");
        }
        s.push('\n');
    }
    let one_line = |t: String| t.replace('\n', " ").replace("  ", " ").trim_end().to_string();
    let _ = writeln!(s, "{}\n", one_line(speed_legend(engines)));
    markdown_block(&mut s, &all, COST, Some(FROM), &|l| cost_rows(engines, l));
    let _ = writeln!(s, "\n{}", one_line(cost_legend(engines)));
    if !device.is_empty() {
        s.push('\n');
        for d in device {
            let _ = writeln!(s, "- {d}");
        }
    }
    s
}

/// For each step probed with `--device_probe`, one line: per engine, the median of the disk's
/// own random 4 KiB reads/s just before and just after its step, and the step's ops/s over the
/// mean of the two (an engine doing one disk read per operation runs near 1.00x).
fn device_lines(engines: &[EngineRounds], labels: &[String]) -> Vec<String> {
    let before: Getter = |_, s| s.device.map(|(b, _)| b.reads_per_sec);
    let after: Getter = |_, s| s.device.map(|(_, a)| a.reads_per_sec);
    let ops: Getter = |p, _| Some(p.ops_per_sec);
    let mut lines = Vec::new();
    for label in labels {
        let parts: Vec<String> = engines
            .iter()
            .filter_map(|e| {
                let (b, a) = (metric(&e.rounds, label, before)?, metric(&e.rounds, label, after)?);
                let ratio = metric(&e.rounds, label, ops).map(|o| o / ((a + b) / 2.0).max(f64::EPSILON));
                let ratio = ratio.map_or_else(String::new, |r| format!(", the step {r:.2}x that"));
                Some(format!("{} {:.0} / {:.0}{ratio}", e.name, b, a))
            })
            .collect();
        if !parts.is_empty() {
            lines.push(format!(
                "device reads/s (4 KiB, O_DIRECT) before / after `{label}`: {}",
                parts.join("; ")
            ));
        }
    }
    lines
}

/// One cell: `-` when missing, else as the column's format says; markdown puts thousands
/// separators into big numbers.
fn cell(fmt: Fmt, v: Option<f64>, md: bool) -> String {
    let Some(v) = v else { return "-".to_string() };
    match fmt {
        Fmt::Ratio => format!("{v:.2}x"),
        Fmt::Micros if v.abs() < 1000.0 => format!("{v:.3}"),
        Fmt::Cost if v.abs() < 1.0 => format!("{v:.3}"),
        Fmt::Cost if v.abs() < 100.0 => format!("{v:.2}"),
        Fmt::Cost if v.abs() < 1000.0 => format!("{v:.1}"),
        _ if md && v.abs() >= 1000.0 => thousands(v),
        _ => fmt_value(v),
    }
}

/// Big numbers without decimals, small ones with enough to be read.
fn fmt_value(v: f64) -> String {
    if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// `1234567.8` as `1,234,568`.
fn thousands(v: f64) -> String {
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 {
        out.insert(0, '-');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(name: &str, ops: f64, p99: Option<f64>) -> Parsed {
        Parsed {
            name: name.into(),
            micros_per_op: 1e6 / ops,
            ops_per_sec: ops,
            ops: Some(1000),
            p99,
            p9999: p99.map(|p| p * 10.0),
            max: p99.map(|p| p * 100.0),
            per_op: None,
        }
    }

    /// One round of one step whose process wrote `db_bytes` (and its database is that big).
    fn round(results: Vec<Parsed>, db_bytes: u64) -> Round {
        Round {
            steps: vec![Step {
                suffix: String::new(),
                results,
                db_bytes,
                peak_db_bytes: Some(db_bytes * 3),
                peak_rss: Some(db_bytes * 2),
                outside: Some(Outside {
                    write_bytes: db_bytes,
                    read_bytes: db_bytes / 2,
                    cpu_secs: 0.5,
                    switches: 3000,
                    disk_reads: Some(100),
                }),
                device: None,
            }],
        }
    }

    fn engine(name: &str, rounds: Vec<Round>) -> EngineRounds {
        EngineRounds { name: name.into(), rounds }
    }

    fn words(line: &str) -> Vec<&str> {
        line.split_whitespace().collect()
    }

    /// The rows of the text table whose header is the `n`th (from 0) line starting with
    /// "benchmark ": the lines after it up to the blank line.
    fn table_rows(t: &str, n: usize) -> Vec<&str> {
        let header = t.lines().enumerate().filter(|(_, l)| l.starts_with("benchmark ")).nth(n).unwrap().0;
        t.lines().skip(header + 1).take_while(|l| !l.is_empty()).collect()
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[f64::NAN, 5.0]), Some(5.0), "non-finite values are left out");
    }

    #[test]
    fn ratio_is_first_over_second() {
        assert_eq!(ratio(Some(300.0), Some(150.0)), Some(2.0));
        assert_eq!(ratio(Some(1.0), Some(0.0)), None);
        assert_eq!(ratio(None, Some(1.0)), None);
    }

    #[test]
    fn a_summary_line_wins_over_the_outside_figures_which_cover_the_whole_step() {
        let mut r = round(vec![parsed("fillrandom", 10.0, None), parsed("compact", 1.0, None)], 4000);
        r.steps[0].results[1].ops = Some(1);
        let step = &r.steps[0];
        let (c, src) = step.per_op(&step.results[0]).unwrap();
        assert_eq!(src, Source::Outside);
        assert_eq!(c.write_bytes, Some(4000.0 / 1001.0), "the step's writes over all its operations");
        assert_eq!(c.read_bytes, Some(2000.0 / 1001.0));
        assert_eq!(c.disk_reads, Some(100.0 / 1001.0));
        assert_eq!(c.cpu_us, Some(0.5e6 / 1001.0));
        assert_eq!(c.switches, Some(3000.0 / 1001.0));
        let own = PerOp { write_bytes: Some(7.0), cpu_us: None, ..PerOp::default() };
        let mut with_summary = step.results[0].clone();
        with_summary.per_op = Some(own.clone());
        assert_eq!(step.per_op(&with_summary), Some((own, Source::Summary)), "n/a stays n/a");
        let mut s = step.clone();
        s.results[1].ops = None;
        assert_eq!(s.per_op(&s.results[0]), None, "an op count missing: no figure rather than a wrong one");
        s.outside = None;
        assert_eq!(s.per_op(&step.results[0]).map(|x| x.1), None);
        assert_eq!(Step::default().per_op(&parsed("x", 1.0, None)), None);
    }

    #[test]
    fn table_takes_medians_per_metric_and_matches_by_name() {
        let strata = vec![
            round(vec![parsed("fillseq", 100.0, Some(5.0))], 2 << 20),
            round(vec![parsed("fillseq", 300.0, Some(7.0))], 4 << 20),
            round(vec![parsed("fillseq", 200.0, Some(6.0))], 3 << 20),
        ];
        let db_bench = vec![
            round(vec![parsed("fillseq", 50.0, Some(12.0))], 6 << 20),
            round(vec![parsed("fillseq", 150.0, Some(12.0))], 6 << 20),
        ];
        let t = table(&[engine("strata", strata), engine("db_bench", db_bench)]);
        let rows = table_rows(&t, 0);
        assert_eq!(
            words(rows[0]),
            ["fillseq", "strata", "200.00", "1.00x", "5000", "6.00", "60.00", "600.00"]
        );
        assert_eq!(words(rows[1]), ["db_bench", "100.00", "2.00x", "13333", "12.00", "120.00", "1200"]);
        assert!(t.contains("fillseq: strata / best other engine = 2.00x (best: db_bench)"), "{t}");
        assert!(t.contains("medians of rounds: strata 3, db_bench 2;"), "{t}");
        let costs = table_rows(&t, 1);
        // DB 3 MB, peak 9, RSS 6; 3 MiB written and 1.5 MiB read over 1000 operations; 100 disk
        // reads, 0.5 s and 3000 switches over 1000; 3 MiB written in all.
        assert_eq!(
            words(costs[0]),
            [
                "fillseq", "strata", "3.00", "9.00", "6.00", "1573", "3146", "0.100", "500.0", "3.00",
                "3.00", "wait4"
            ]
        );
        assert_eq!(words(costs[1])[..4], ["db_bench", "6.00", "18.00", "12.00"]);
        assert!(t.contains("from = wait4: the engine prints no Summary (db_bench)"), "{t}");
        assert_eq!(
            t.lines().filter(|l| l.starts_with("benchmark")).count(),
            2,
            "no legend line looks like a header"
        );
    }

    #[test]
    fn summary_figures_per_benchmark_and_sources_per_row() {
        let own = |w: f64| PerOp {
            write_bytes: Some(w),
            read_bytes: Some(4096.0),
            disk_reads: Some(1.25),
            cpu_us: Some(12.5),
            switches: Some(0.004),
        };
        let mut a = round(vec![parsed("readrandom", 10.0, None)], 1 << 20);
        a.steps[0].results[0].per_op = Some(own(10.0));
        let mut b = a.clone();
        b.steps[0].results[0].per_op = Some(own(30.0));
        let mut c = a.clone();
        c.steps[0].results[0].per_op = None; // this round printed no Summary line
        let t = table(&[engine("strata", vec![a.clone(), b.clone()]), engine("peer", vec![a, c])]);
        let costs = table_rows(&t, 1);
        assert_eq!(
            words(costs[0])[5..],
            ["4096", "20.00", "1.25", "12.50", "0.004", "1.00", "Summary"],
            "{t}"
        );
        assert_eq!(words(costs[1])[10], "mixed", "{t}");
    }

    #[test]
    fn steps_label_their_rows_and_keep_their_own_sizes() {
        let step = |suffix: &str, name: &str, db: u64| Step {
            suffix: suffix.into(),
            results: vec![parsed(name, 10.0, None)],
            db_bytes: db << 20,
            ..Step::default()
        };
        let r = Round {
            steps: vec![
                step("", "fillseq", 1),
                step(" t=1", "readrandom", 2),
                step(" t=16", "readrandom", 3),
                step("", "seekrandom", 4),
                step("", "seekrandom", 5),
            ],
        };
        let t = table(&[engine("strata", vec![r])]);
        let labels: Vec<&str> = table_rows(&t, 1).iter().map(|l| words(l)[0]).collect();
        assert_eq!(labels, ["fillseq", "readrandom", "readrandom", "seekrandom", "seekrandom#2"]);
        let rows = table_rows(&t, 1);
        assert!(rows[1].starts_with("readrandom t=1 ") && rows[2].starts_with("readrandom t=16 "), "{t}");
        let db: Vec<&str> = rows.iter().map(|l| words(l)[words(l).len() - 10]).collect();
        assert_eq!(db, ["1.00", "2.00", "3.00", "4.00", "5.00"], "each step's own DB size: {t}");
        assert!(rows.iter().all(|l| l.trim_end().ends_with("  -")), "no cost figures at all: {t}");
    }

    #[test]
    fn repeated_and_one_sided_benchmarks() {
        let strata = vec![round(vec![parsed("readrandom", 10.0, None), parsed("readrandom", 30.0, None)], 0)];
        let other = vec![round(vec![parsed("readrandom", 20.0, None)], 0)];
        let t = table(&[engine("strata", strata), engine("db_bench", other)]);
        let rows = table_rows(&t, 0);
        assert_eq!(rows.len(), 4, "{t}");
        assert!(rows[1].contains(" 0.50x "), "{t}");
        assert!(rows[2].starts_with("readrandom#2") && rows[2].contains(" 1.00x "), "{t}");
        assert_eq!(words(rows[3])[..3], ["db_bench", "-", "-"], "{t}");
        assert!(t.contains("readrandom: strata / best other engine = 0.50x (best: db_bench)"));
        assert!(!t.contains("readrandom#2: strata /"), "no other engine ran it: {t}");
    }

    #[test]
    fn a_failed_round_leaves_gaps_not_errors() {
        let full = round(vec![parsed("fillseq", 100.0, None)], 1 << 20);
        let t = table(&[engine("strata", vec![full.clone(), full]), engine("lmdb", vec![Round::default()])]);
        let rows = table_rows(&t, 0);
        assert_eq!(words(rows[1]), ["lmdb", "-", "-", "-", "-", "-", "-"], "{t}");
        assert_eq!(words(table_rows(&t, 1)[1])[1..], ["-"; 10], "{t}");
    }

    fn eight_engines() -> Vec<EngineRounds> {
        let names = [
            "memory",
            "strata",
            "rocksdb",
            "db_bench",
            "leveldb",
            "wiredtiger-btree",
            "wiredtiger-lsm",
            "lmdb",
        ];
        names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let ops = 1000.0 * (i + 1) as f64;
                engine(
                    n,
                    vec![round(
                        vec![parsed("fillrandom", ops, Some(3.0)), parsed("compact", 2.0, None)],
                        1 << 20,
                    )],
                )
            })
            .collect()
    }

    #[test]
    fn eight_engines_make_eight_aligned_rows_per_benchmark() {
        let t = table(&eight_engines());
        for n in 0..2 {
            let header = t.lines().filter(|l| l.starts_with("benchmark ")).nth(n).unwrap();
            let rows = table_rows(&t, n);
            assert_eq!(rows.len(), 16, "8 engines x 2 benchmarks:\n{t}");
            for row in &rows {
                assert_eq!(row.len(), header.len(), "aligned:\n{t}");
            }
            assert!(header.len() < 150, "fits a wide terminal: {}", header.len());
        }
        let rows = table_rows(&t, 0);
        assert!(rows[7].contains("lmdb") && rows[7].contains(&format!(" {:.2}x ", 1000.0 / 8000.0)), "{t}");
        // strata is not first here, but the summary is about strata against the fastest other one.
        assert!(t.contains("fillrandom: strata / best other engine = 0.25x (best: lmdb)"), "{t}");
        assert!(t.contains("compact: strata / best other engine = 1.00x (best: memory)"), "{t}");
    }

    #[test]
    fn probed_steps_get_a_line_of_the_disks_rates() {
        let probe = |r| Probe { threads: 16, reads_per_sec: r, p50_us: 1.0, p99_us: 2.0, max_us: 3.0 };
        let step = |ops, device| Step {
            suffix: " t=16".into(),
            results: vec![parsed("readrandom", ops, None)],
            device,
            ..Step::default()
        };
        let engines = [
            EngineRounds {
                name: "strata".into(),
                rounds: vec![Round { steps: vec![step(9000.0, Some((probe(8000.0), probe(10000.0))))] }],
            },
            EngineRounds { name: "lmdb".into(), rounds: vec![Round { steps: vec![step(5000.0, None)] }] },
        ];
        let md = markdown(&engines);
        assert!(
            md.contains("- device reads/s (4 KiB, O_DIRECT) before / after `readrandom t=16`: strata 8000 / 10000, the step 1.00x that\n"),
            "{md}"
        );
        assert!(!md.contains("lmdb 0"), "an engine without probes is left out: {md}");
        assert!(!markdown(&engines[1..]).contains("device reads/s"));
    }

    #[test]
    fn markdown_is_a_pasteable_github_table() {
        let mut engines = eight_engines();
        engines[0].rounds[0].steps[0].results[0].ops_per_sec = 12_345.0;
        let md = markdown(&engines);
        let tables: Vec<Vec<&str>> = md
            .split("\n\n")
            .filter(|b| b.trim_start().starts_with("| benchmark |"))
            .map(|b| b.trim().lines().collect())
            .collect();
        assert_eq!(tables.len(), 2, "{md}");
        for table in &tables {
            assert_eq!(table.len(), 2 + 16, "header, separator, 8 engines x 2 benchmarks:\n{md}");
            let cells = |l: &str| l.matches('|').count();
            assert!(table.iter().all(|l| cells(l) == cells(table[0])), "{md}");
        }
        assert_eq!(tables[0][1], format!("|---|---|{}", "---:|".repeat(6)));
        assert_eq!(tables[1][1], format!("|---|---|{}---|", "---:|".repeat(9)));
        assert!(tables[0][2].starts_with("| fillrandom | memory | 12,345 | 1.00x |"), "{}", tables[0][2]);
        assert!(tables[0][3].starts_with("|  | strata | 2,000 | 6.17x |"), "{}", tables[0][3]);
        assert!(tables[1][0].starts_with("| benchmark | engine | DB MB | peak DB MB |"), "{}", tables[1][0]);
        assert!(tables[1][2].ends_with(" 1.00 | wait4 |"), "{}", tables[1][2]);
        assert!(md.find("| benchmark |") < md.find("- fillrandom: strata /"), "the speed table comes first");
        assert!(md.contains("- fillrandom: strata / best other engine = 0.16x (best: memory)"), "{md}");
        assert!(md.contains("ratio = memory ops/sec / the row's"), "{md}");
        assert!(md.contains("wrote MB: everything the step's process wrote"), "{md}");
    }

    #[test]
    fn numbers_are_formatted_by_column() {
        assert_eq!(thousands(1234567.4), "1,234,567");
        assert_eq!(thousands(999.6), "1,000");
        assert_eq!(thousands(-12345.0), "-12,345");
        assert_eq!(thousands(100.0), "100");
        let cost = |v: f64| cell(Fmt::Cost, Some(v), false);
        assert_eq!(
            [cost(0.0042), cost(1.25), cost(512.26), cost(4096.4)],
            ["0.004", "1.25", "512.3", "4096"]
        );
        assert_eq!(cell(Fmt::Cost, Some(12_345.0), true), "12,345");
        assert_eq!(cell(Fmt::Micros, Some(1.5), false), "1.500");
        assert_eq!(cell(Fmt::Ratio, None, false), "-");
    }
}
