//! The side-by-side table of `strata bench compare`: medians across rounds and the
//! strata / RocksDB ratio of each metric.
//!
//! Owns: the median and ratio arithmetic, matching a benchmark across rounds and engines (by
//! name and occurrence), and the table's layout.
//! Must not: run or parse anything; it gets parsed rounds and returns text.

use std::fmt::Write as _;

use super::dbbench_output::Parsed;

/// One engine's measured step in one round.
#[derive(Debug, Clone, Default)]
pub struct Round {
    pub results: Vec<Parsed>,
    /// `du` of the database directory after the step.
    pub db_bytes: u64,
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

/// strata / RocksDB; `None` when either side is missing or RocksDB's is zero.
pub fn ratio(strata: Option<f64>, rocksdb: Option<f64>) -> Option<f64> {
    match (strata, rocksdb) {
        (Some(s), Some(r)) if r != 0.0 => Some(s / r),
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

/// Benchmark labels in order of first appearance across both engines.
fn labels(strata: &[Round], rocksdb: &[Round]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for round in strata.iter().chain(rocksdb) {
        for (label, _) in labelled(&round.results) {
            if !names.contains(&label) {
                names.push(label);
            }
        }
    }
    names
}

/// The median over rounds of one metric of one benchmark.
fn metric(rounds: &[Round], label: &str, get: Getter) -> Option<f64> {
    let values: Vec<f64> = rounds
        .iter()
        .filter_map(|r| labelled(&r.results).into_iter().find(|(l, _)| l == label))
        .filter_map(|(_, p)| get(p))
        .collect();
    median(&values)
}

/// Reads one metric of a parsed result.
type Getter = fn(&Parsed) -> Option<f64>;

const METRICS: &[(&str, Getter)] = &[
    ("ops/sec", |p| Some(p.ops_per_sec)),
    ("micros/op", |p| Some(p.micros_per_op)),
    ("P99 us", |p| p.p99),
    ("P99.99 us", |p| p.p9999),
];

/// The whole table: a block per benchmark, then the database size after the step.
pub fn table(strata: &[Round], rocksdb: &[Round]) -> String {
    let mut s = format!(
        "\nmedians of {} strata and {} RocksDB rounds; ratio = strata / RocksDB\n\
         (ops/sec: above 1 is strata faster; micros/op, latency, size: below 1 is strata better)\n\
         {:<20} {:<10} {:>14} {:>14} {:>8}\n",
        strata.len(),
        rocksdb.len(),
        "benchmark",
        "metric",
        "strata",
        "rocksdb",
        "ratio"
    );
    for label in labels(strata, rocksdb) {
        for (i, (name, get)) in METRICS.iter().enumerate() {
            let first = if i == 0 { label.as_str() } else { "" };
            row(&mut s, first, name, metric(strata, &label, *get), metric(rocksdb, &label, *get));
        }
    }
    let size = |rounds: &[Round]| {
        let mb: Vec<f64> = rounds.iter().map(|r| r.db_bytes as f64 / 1_048_576.0).collect();
        median(&mb)
    };
    row(&mut s, "(after the step)", "DB MB", size(strata), size(rocksdb));
    s
}

fn row(s: &mut String, label: &str, metric: &str, strata: Option<f64>, rocksdb: Option<f64>) {
    let num = |v: Option<f64>| v.map_or_else(|| "-".to_string(), fmt_value);
    let ratio = ratio(strata, rocksdb).map_or_else(|| "-".to_string(), |r| format!("{r:.2}x"));
    let _ = writeln!(s, "{label:<20} {metric:<10} {:>14} {:>14} {ratio:>8}", num(strata), num(rocksdb));
}

/// Big numbers without decimals, small ones with enough to be read.
fn fmt_value(v: f64) -> String {
    if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(name: &str, ops: f64, p99: Option<f64>) -> Parsed {
        Parsed {
            name: name.into(),
            micros_per_op: 1e6 / ops,
            ops_per_sec: ops,
            p99,
            p9999: p99.map(|p| p * 10.0),
        }
    }

    fn round(results: Vec<Parsed>, db_bytes: u64) -> Round {
        Round { results, db_bytes }
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
    fn ratio_is_strata_over_rocksdb() {
        assert_eq!(ratio(Some(300.0), Some(150.0)), Some(2.0));
        assert_eq!(ratio(Some(1.0), Some(0.0)), None);
        assert_eq!(ratio(None, Some(1.0)), None);
    }

    #[test]
    fn table_takes_medians_per_metric_and_matches_by_name() {
        let strata = [
            round(vec![parsed("fillseq", 100.0, Some(5.0))], 2 << 20),
            round(vec![parsed("fillseq", 300.0, Some(7.0))], 4 << 20),
            round(vec![parsed("fillseq", 200.0, Some(6.0))], 3 << 20),
        ];
        let rocksdb = [
            round(vec![parsed("fillseq", 50.0, Some(12.0))], 6 << 20),
            round(vec![parsed("fillseq", 150.0, Some(12.0))], 6 << 20),
        ];
        let t = table(&strata, &rocksdb);
        let line = |prefix: &str| t.lines().find(|l| l.starts_with(prefix)).unwrap().to_string();
        let ops: Vec<String> = line("fillseq").split_whitespace().map(String::from).collect();
        assert_eq!(ops, ["fillseq", "ops/sec", "200.00", "100.00", "2.00x"]);
        let p99 = t.lines().find(|l| l.contains("P99 us")).unwrap();
        assert!(p99.ends_with("6.00          12.00    0.50x"), "{p99}");
        assert!(line("(after the step)").ends_with("3.00           6.00    0.50x"), "{t}");
    }

    #[test]
    fn repeated_and_one_sided_benchmarks() {
        let strata = [round(vec![parsed("readrandom", 10.0, None), parsed("readrandom", 30.0, None)], 0)];
        let rocksdb = [round(vec![parsed("readrandom", 20.0, None)], 0)];
        let t = table(&strata, &rocksdb);
        assert!(t.lines().any(|l| l.starts_with("readrandom ") && l.ends_with("0.50x")), "{t}");
        let second = t.lines().find(|l| l.starts_with("readrandom#2")).unwrap();
        assert!(second.ends_with("30.00              -        -"), "{second}");
    }
}
