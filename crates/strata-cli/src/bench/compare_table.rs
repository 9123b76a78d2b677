//! The side-by-side table of `strata bench compare`: medians across rounds for any number of
//! engines, each engine's ratio to the first one, and the "strata / best other engine" line.
//!
//! Owns: the median and ratio arithmetic, matching a benchmark across rounds and engines (by
//! name and occurrence), and the table's two layouts (plain text and GitHub markdown).
//! Must not: run or parse anything; it gets parsed rounds and returns text.

use std::fmt::Write as _;

use super::dbbench_output::Parsed;

/// One engine's measured step in one round.
#[derive(Debug, Clone, Default)]
pub struct Round {
    pub results: Vec<Parsed>,
    /// `du` of the database directory after the step.
    pub db_bytes: u64,
    /// Peak resident memory of the step's process, in bytes.
    pub peak_rss: Option<u64>,
    /// Bytes the step's process wrote to storage, including at close.
    pub write_bytes: Option<u64>,
}

impl Round {
    /// Bytes written per operation of the step: all its benchmarks' operations together (a
    /// `fillrandom,compact` step divides by the fills plus the one compact).
    pub fn write_bytes_per_op(&self) -> Option<f64> {
        let ops: u64 = self.results.iter().map(|r| r.ops).sum::<Option<u64>>()?;
        (ops > 0).then(|| self.write_bytes.map(|w| w as f64 / ops as f64)).flatten()
    }
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

/// Labels results by name, with `#2`, `#3` for a benchmark that runs again in the same step, so
/// `readrandom,readrandom` compares first with first and second with second.
fn labelled(results: &[Parsed]) -> Vec<(String, &Parsed)> {
    let mut out: Vec<(String, &Parsed)> = Vec::new();
    for r in results {
        let seen = out.iter().filter(|(_, p)| p.name == r.name).count();
        let label = if seen == 0 { r.name.clone() } else { format!("{}#{}", r.name, seen + 1) };
        out.push((label, r));
    }
    out
}

/// Benchmark labels in order of first appearance across all engines.
fn labels(engines: &[EngineRounds]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for round in engines.iter().flat_map(|e| &e.rounds) {
        for (label, _) in labelled(&round.results) {
            if !names.contains(&label) {
                names.push(label);
            }
        }
    }
    names
}

/// Reads one metric of a parsed result.
type Getter = fn(&Parsed) -> Option<f64>;

/// The median over rounds of one metric of one benchmark.
fn metric(rounds: &[Round], label: &str, get: Getter) -> Option<f64> {
    let values: Vec<f64> = rounds
        .iter()
        .filter_map(|r| labelled(&r.results).into_iter().find(|(l, _)| l == label))
        .filter_map(|(_, p)| get(p))
        .collect();
    median(&values)
}

/// The median over rounds of a figure of the whole step.
fn step_metric(rounds: &[Round], get: fn(&Round) -> Option<f64>) -> Option<f64> {
    median(&rounds.iter().filter_map(get).collect::<Vec<_>>())
}

const MB: f64 = 1_048_576.0;

/// The columns after the engine name.
const COLUMNS: &[&str] =
    &["ops/sec", "ratio", "micros/op", "P99 us", "P99.99 us", "Max us", "DB MB", "RSS MB", "write B/op"];

/// One row: an engine's medians for one benchmark. `ratio` is the first engine's ops/sec over
/// this one's.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    engine: String,
    values: [Option<f64>; 9],
}

/// A benchmark's rows, one per engine, in `--engines` order.
fn rows(engines: &[EngineRounds], label: &str) -> Vec<Row> {
    let ops = |e: &EngineRounds| metric(&e.rounds, label, |p| Some(p.ops_per_sec));
    let first = engines.first().and_then(ops);
    engines
        .iter()
        .map(|e| Row {
            engine: e.name.clone(),
            values: [
                ops(e),
                ratio(first, ops(e)),
                metric(&e.rounds, label, |p| Some(p.micros_per_op)),
                metric(&e.rounds, label, |p| p.p99),
                metric(&e.rounds, label, |p| p.p9999),
                metric(&e.rounds, label, |p| p.max),
                step_metric(&e.rounds, |r| Some(r.db_bytes as f64 / MB)),
                step_metric(&e.rounds, |r| r.peak_rss.map(|b| b as f64 / MB)),
                step_metric(&e.rounds, Round::write_bytes_per_op),
            ],
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

fn legend(engines: &[EngineRounds]) -> String {
    let counts: Vec<usize> = engines.iter().map(|e| e.rounds.len()).collect();
    let rounds = if counts.windows(2).all(|w| w[0] == w[1]) {
        match counts.first().copied().unwrap_or(0) {
            1 => "1 round per engine".to_string(),
            n => format!("{n} rounds per engine"),
        }
    } else {
        let each: Vec<String> = engines.iter().map(|e| format!("{} {}", e.name, e.rounds.len())).collect();
        format!("rounds: {}", each.join(", "))
    };
    let first = engines.first().map_or("", |e| e.name.as_str());
    format!(
        "medians of {rounds}; ratio = {first} ops/sec / the row's (above 1: {first} is faster).\n\
         DB MB: du of the database after the step. RSS MB: peak resident memory of the step's process.\n\
         write B/op: bytes the step's process wrote to storage (wait4 ru_oublock, including at close)\n\
         / the operations of all the step's benchmarks.\n"
    )
}

/// The plain-text table: a block of one row per engine for each benchmark, then the
/// "strata / best other engine" lines.
pub fn table(engines: &[EngineRounds]) -> String {
    let all = labels(engines);
    let bw = all.iter().map(String::len).chain([9]).max().unwrap_or(9);
    let ew = engines.iter().map(|e| e.name.len()).chain([6]).max().unwrap_or(6);
    let width = |c: usize| COLUMNS[c].len().max(9) + 1;
    let mut s = format!("\n{}\n", legend(engines));
    let _ = write!(s, "{:<bw$} {:<ew$}", "benchmark", "engine");
    for (c, name) in COLUMNS.iter().enumerate() {
        let _ = write!(s, " {name:>w$}", w = width(c));
    }
    s.push('\n');
    let mut best = Vec::new();
    for label in &all {
        let rows = rows(engines, label);
        for (i, r) in rows.iter().enumerate() {
            let first = if i == 0 { label.as_str() } else { "" };
            let _ = write!(s, "{first:<bw$} {:<ew$}", r.engine);
            for (c, v) in r.values.iter().enumerate() {
                let _ = write!(s, " {:>w$}", cell(c, *v, false), w = width(c));
            }
            s.push('\n');
        }
        best.extend(best_other(engines, label, &rows));
    }
    if engines.len() > 1 {
        s.push('\n');
        for b in best {
            let _ = writeln!(s, "{b}");
        }
    }
    s
}

/// The same table as GitHub markdown, for BENCHMARKS.md: the table first (a script finds it by
/// its `| benchmark |` header line), then the best-other lines and the legend.
pub fn markdown(engines: &[EngineRounds]) -> String {
    let mut s = String::from("\n| benchmark | engine |");
    for c in COLUMNS {
        let _ = write!(s, " {c} |");
    }
    s.push_str("\n|---|---|");
    s.push_str(&"---:|".repeat(COLUMNS.len()));
    s.push('\n');
    let mut best = Vec::new();
    for label in labels(engines) {
        let rows = rows(engines, &label);
        for (i, r) in rows.iter().enumerate() {
            let first = if i == 0 { label.as_str() } else { "" };
            let _ = write!(s, "| {first} | {} |", r.engine);
            for (c, v) in r.values.iter().enumerate() {
                let _ = write!(s, " {} |", cell(c, *v, true));
            }
            s.push('\n');
        }
        best.extend(best_other(engines, &label, &rows));
    }
    s.push('\n');
    if engines.len() > 1 {
        for b in best {
            let _ = writeln!(s, "- {b}");
        }
        s.push('\n');
    }
    s.push_str(legend(engines).replace('\n', " ").replace("  ", " ").trim_end());
    s.push('\n');
    s
}

/// One cell: `-` when missing, the ratio with an `x`, micros/op with three decimals, others by
/// [`fmt_value`]; markdown puts thousands separators into big numbers.
fn cell(column: usize, v: Option<f64>, md: bool) -> String {
    let Some(v) = v else { return "-".to_string() };
    match column {
        1 => format!("{v:.2}x"),
        2 if v.abs() < 1000.0 => format!("{v:.3}"),
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
        }
    }

    fn round(results: Vec<Parsed>, db_bytes: u64) -> Round {
        Round { results, db_bytes, peak_rss: Some(db_bytes * 2), write_bytes: Some(db_bytes) }
    }

    fn engine(name: &str, rounds: Vec<Round>) -> EngineRounds {
        EngineRounds { name: name.into(), rounds }
    }

    fn words(line: &str) -> Vec<&str> {
        line.split_whitespace().collect()
    }

    /// The rows of a text table: the lines after the header, up to the blank line.
    fn table_rows(t: &str) -> Vec<&str> {
        t.lines().skip_while(|l| !l.starts_with("benchmark ")).skip(1).take_while(|l| !l.is_empty()).collect()
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
    fn write_bytes_per_op_counts_every_benchmark_of_the_step() {
        let mut r = round(vec![parsed("fillrandom", 10.0, None), parsed("compact", 1.0, None)], 4000);
        r.results[1].ops = Some(1);
        assert_eq!(r.write_bytes_per_op(), Some(4000.0 / 1001.0));
        r.results[1].ops = None;
        assert_eq!(r.write_bytes_per_op(), None, "an op count missing: no figure rather than a wrong one");
        assert_eq!(Round::default().write_bytes_per_op(), None);
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
        let rows = table_rows(&t);
        assert_eq!(
            words(rows[0]),
            [
                "fillseq", "strata", "200.00", "1.00x", "5000", "6.00", "60.00", "600.00", "3.00", "6.00",
                "3146"
            ]
        );
        assert_eq!(
            words(rows[1]),
            ["db_bench", "100.00", "2.00x", "13333", "12.00", "120.00", "1200", "6.00", "12.00", "6291"]
        );
        assert!(t.contains("fillseq: strata / best other engine = 2.00x (best: db_bench)"), "{t}");
        assert!(t.contains("medians of rounds: strata 3, db_bench 2;"), "{t}");
    }

    #[test]
    fn repeated_and_one_sided_benchmarks() {
        let strata = vec![round(vec![parsed("readrandom", 10.0, None), parsed("readrandom", 30.0, None)], 0)];
        let other = vec![round(vec![parsed("readrandom", 20.0, None)], 0)];
        let t = table(&[engine("strata", strata), engine("db_bench", other)]);
        let rows = table_rows(&t);
        assert_eq!(rows.len(), 4, "{t}");
        assert!(rows[1].contains(" 0.50x "), "{t}");
        assert!(rows[2].starts_with("readrandom#2") && rows[2].contains(" 1.00x "), "{t}");
        assert_eq!(words(rows[3])[..3], ["db_bench", "-", "-"], "{t}");
        assert!(t.contains("readrandom: strata / best other engine = 0.50x (best: db_bench)"));
        assert!(!t.contains("readrandom#2: strata /"), "no other engine ran it: {t}");
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
        let header = t.lines().find(|l| l.starts_with("benchmark")).unwrap();
        let rows = table_rows(&t);
        assert_eq!(rows.len(), 16, "8 engines x 2 benchmarks:\n{t}");
        for row in &rows {
            assert_eq!(row.len(), header.len(), "aligned:\n{t}");
        }
        assert!(rows[7].contains("lmdb") && rows[7].contains(&format!(" {:.2}x ", 1000.0 / 8000.0)), "{t}");
        // strata is not first here, but the summary is about strata against the fastest other one.
        assert!(t.contains("fillrandom: strata / best other engine = 0.25x (best: lmdb)"), "{t}");
        assert!(t.contains("compact: strata / best other engine = 1.00x (best: memory)"), "{t}");
        assert!(header.len() < 140, "fits a wide terminal: {}", header.len());
    }

    #[test]
    fn markdown_is_a_pasteable_github_table() {
        let mut engines = eight_engines();
        engines[0].rounds[0].results[0].ops_per_sec = 12_345.0;
        let md = markdown(&engines);
        let table: Vec<&str> = md
            .lines()
            .skip_while(|l| !l.starts_with("| benchmark |"))
            .take_while(|l| l.starts_with('|'))
            .collect();
        assert_eq!(table.len(), 2 + 16, "header, separator, 8 engines x 2 benchmarks:\n{md}");
        let cells = |l: &str| l.matches('|').count();
        assert!(table.iter().all(|l| cells(l) == cells(table[0])), "{md}");
        assert_eq!(table[1], format!("|---|---|{}", "---:|".repeat(9)));
        assert!(table[2].starts_with("| fillrandom | memory | 12,345 | 1.00x |"), "{}", table[2]);
        assert!(table[3].starts_with("|  | strata | 2,000 | 6.17x |"), "{}", table[3]);
        assert!(md.contains("- fillrandom: strata / best other engine = 0.16x (best: memory)"), "{md}");
        assert!(md.contains("ratio = memory ops/sec / the row's"), "{md}");
    }

    #[test]
    fn big_numbers_get_separators() {
        assert_eq!(thousands(1234567.4), "1,234,567");
        assert_eq!(thousands(999.6), "1,000");
        assert_eq!(thousands(-12345.0), "-12,345");
        assert_eq!(thousands(100.0), "100");
    }
}
