//! Reads db_bench's stdout (RocksDB's or strata's, which prints the same lines) back into
//! numbers, for `strata bench compare`.
//!
//! Owns: recognising result lines (`name : X micros/op Y ops/sec Z seconds N operations; ...`),
//! the `Min: .. Max:` and `Percentiles:` lines of the histogram that follows one (with
//! `--histogram=1`), and the `Summary NAME: ...` line strata bench and peerbench print after each
//! benchmark (its cost per operation, report.rs's format), and nothing else of the output.
//! Must not: run processes or format anything; a line it does not recognise is skipped, never
//! an error, because db_bench prints much else (header, histograms, warnings).

/// The figures of one benchmark in one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub name: String,
    pub micros_per_op: f64,
    pub ops_per_sec: f64,
    /// The operation count of the result line (`N operations;`), if it has one.
    pub ops: Option<u64>,
    /// From the `Percentiles:` line, if one followed the result line.
    pub p99: Option<f64>,
    pub p9999: Option<f64>,
    /// The slowest operation in microseconds, from the histogram's `Min: .. Max: N` line.
    pub max: Option<f64>,
    /// The benchmark's own cost per operation, from its `Summary` line (db_bench prints none).
    pub per_op: Option<PerOp>,
}

/// What one benchmark cost per operation, as the process measured it on itself around the
/// benchmark (resources.rs; peerbench the same way): each `None` where the line says `n/a`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PerOp {
    /// Bytes written to storage (`/proc/self/io` write_bytes).
    pub write_bytes: Option<f64>,
    /// Bytes read from storage (`/proc/self/io` read_bytes).
    pub read_bytes: Option<f64>,
    /// Read requests the machine's disks completed (`/sys/block/*/stat`).
    pub disk_reads: Option<f64>,
    /// CPU microseconds of the whole process.
    pub cpu_us: Option<f64>,
    /// Context switches of the benchmark's threads and the engine's.
    pub switches: Option<f64>,
}

/// Every result line in `out`, in order, each with the percentiles printed after it.
pub fn parse(out: &str) -> Vec<Parsed> {
    let mut results: Vec<Parsed> = Vec::new();
    for line in out.lines() {
        if let Some(r) = result_line(line) {
            results.push(r);
        } else if let Some((p99, p9999)) = percentiles_line(line) {
            // Only the first Percentiles line after a result belongs to it.
            if let Some(last) = results.last_mut().filter(|l| l.p99.is_none()) {
                (last.p99, last.p9999) = (p99, p9999);
            }
        } else if let Some((name, per_op)) = summary_line(line) {
            // The Summary line closes its benchmark's block: the last result of that name.
            if let Some(last) = results.last_mut().filter(|l| l.name == name && l.per_op.is_none()) {
                last.per_op = Some(per_op);
            }
        } else if let Some(max) = max_line(line) {
            // The Min/Max line comes before the Percentiles line of the same histogram; one after
            // the percentiles belongs to a side report (readwhilewriting's bgwriter).
            if let Some(last) = results.last_mut().filter(|l| l.max.is_none() && l.p99.is_none()) {
                last.max = Some(max);
            }
        }
    }
    results
}

/// `fillseq      :       8.582 micros/op 115740 ops/sec 0.009 seconds 1000 operations; ...`.
/// Indented lines (strata's readwhilewriting `bgwriter`) are side reports, not results.
fn result_line(line: &str) -> Option<Parsed> {
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    let (name, rest) = line.split_once(" : ")?;
    if name.trim().is_empty() {
        return None;
    }
    let words: Vec<&str> = rest.split_whitespace().collect();
    if words.get(1) != Some(&"micros/op") || words.get(3) != Some(&"ops/sec") {
        return None;
    }
    let ops = match (words.get(6), words.get(7)) {
        (Some(n), Some(&"operations;" | &"operations")) => n.parse().ok(),
        _ => None,
    };
    Some(Parsed {
        name: name.trim().to_string(),
        micros_per_op: words[0].parse().ok()?,
        ops_per_sec: words[2].parse().ok()?,
        ops,
        p99: None,
        p9999: None,
        max: None,
        per_op: None,
    })
}

/// `Summary fillseq: db_size 0.3 MB, disk write 139.3 bytes/op, disk read 0.0 bytes/op, disk
/// reads/op 0.0000, cpu 5.00 us/op, cs/op 0.003, peak RSS 14.7 MB, P99 .. us` (report.rs's
/// Summary::line). A field the line lacks (an older strata) or gives as `n/a` is `None`.
fn summary_line(line: &str) -> Option<(String, PerOp)> {
    let (name, rest) = line.strip_prefix("Summary ")?.split_once(": ")?;
    if name.is_empty() || name.contains(char::is_whitespace) {
        return None;
    }
    let fields: Vec<&str> = rest.split(", ").map(str::trim).collect();
    // The number after `label` in the field that starts with it, if that field has one.
    let value = |label: &str| -> Option<f64> {
        let f = fields.iter().find_map(|f| f.strip_prefix(label))?;
        f.split_whitespace().next()?.parse().ok()
    };
    fields.iter().find(|f| f.starts_with("db_size "))?;
    let per_op = PerOp {
        write_bytes: value("disk write "),
        read_bytes: value("disk read "),
        disk_reads: value("disk reads/op "),
        cpu_us: value("cpu "),
        switches: value("cs/op "),
    };
    Some((name.to_string(), per_op))
}

/// `Min: 2  Median: 2.4490  Max: 5046`.
fn max_line(line: &str) -> Option<f64> {
    let words: Vec<&str> = line.trim_start().strip_prefix("Min:")?.split_whitespace().collect();
    let i = words.iter().position(|w| *w == "Max:")?;
    words.get(i + 1)?.parse().ok()
}

/// `Percentiles: P50: 2.45 P75: 3.26 P99: 20.83 P99.9: 4400.00 P99.99: 5046.00`.
fn percentiles_line(line: &str) -> Option<(Option<f64>, Option<f64>)> {
    let rest = line.trim_start().strip_prefix("Percentiles:")?;
    let words: Vec<&str> = rest.split_whitespace().collect();
    let value = |label: &str| {
        let i = words.iter().position(|w| *w == label)?;
        words.get(i + 1)?.parse().ok()
    };
    Some((value("P99:"), value("P99.99:")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/usr/bin/db_bench --benchmarks=fillseq --num=1000 --histogram=1` (RocksDB 7.8.3), stdout.
    const ROCKSDB_FILLSEQ: &str = "\
Keys:       16 bytes each (+ 0 bytes user-defined timestamp)
Values:     100 bytes each (50 bytes after compression)
Entries:    1000
Compression: Snappy
Perf Level: 1
WARNING: Assertions are enabled; benchmarks unnecessarily slow
------------------------------------------------
Initializing RocksDB Options from the specified file
Initializing RocksDB Options from command-line flags
Integrated BlobDB: blob cache disabled
DB path: [/tmp/rocksdbtest-0/dbbench]
fillseq      :       8.582 micros/op 115740 ops/sec 0.009 seconds 1000 operations;   12.8 MB/s
Microseconds per write:
Count: 1000 Average: 8.5540  StdDev: 159.46
Min: 2  Median: 2.4490  Max: 5046
Percentiles: P50: 2.45 P75: 3.26 P99: 20.83 P99.9: 4400.00 P99.99: 5046.00
------------------------------------------------------
(       1,       2 ]      346  34.600%  34.600% #######
(       2,       3 ]      343  34.300%  68.900% #######
(    4400,    6600 ]        1   0.100% 100.000% 
";

    #[test]
    fn rocksdb_fillseq_with_histogram() {
        let r = parse(ROCKSDB_FILLSEQ);
        assert_eq!(
            r,
            [Parsed {
                name: "fillseq".into(),
                micros_per_op: 8.582,
                ops_per_sec: 115_740.0,
                ops: Some(1000),
                p99: Some(20.83),
                p9999: Some(5046.0),
                max: Some(5046.0),
                per_op: None,
            }]
        );
    }

    #[test]
    fn strata_lines_side_reports_and_summary_table_are_told_apart() {
        let out = "\
readwhilewriting :       3.000 micros/op 600000 ops/sec 0.100 seconds 400 operations; (400 of 400 found)
Min: 0  Median: 1.0000  Max: 77
Percentiles: P50: 1.00 P75: 2.00 P99: 9.50 P99.9: 20.00 P99.99: 40.00
  (readwhilewriting background writer, not merged above)
  bgwriter     :      10.000 micros/op 100000 ops/sec 0.100 seconds 50 operations;
Min: 0  Median: 1.0000  Max: 999
Percentiles: P50: 1.00 P75: 2.00 P99: 99.00 P99.9: 99.00 P99.99: 99.00
compact      :   12345.000 micros/op 81 ops/sec 0.012 seconds 1 operations;
Summary compact: db_size 1.0 MB, disk write n/a bytes/op, peak RSS n/a, P99 1.00 P99.99 1.00 Max 1 us

benchmark           ops/sec  micros/op    P99 us P99.99 us
compact                  81  12345.000      1.00      1.00
";
        let r = parse(out);
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!((r[0].name.as_str(), r[0].p99, r[0].p9999), ("readwhilewriting", Some(9.5), Some(40.0)));
        assert_eq!((r[0].ops, r[0].max), (Some(400), Some(77.0)), "the bgwriter's Max is not the readers'");
        assert_eq!((r[1].name.as_str(), r[1].ops_per_sec, r[1].p99), ("compact", 81.0, None));
        assert_eq!((r[1].ops, r[1].max), (Some(1), None));
        assert_eq!(r[0].per_op, None, "no Summary line for readwhilewriting");
        // An older strata's Summary line: only the fields it has.
        assert_eq!(r[1].per_op, Some(PerOp::default()), "write n/a, the others missing");
    }

    /// `strata bench --benchmarks=fillseq,readwhilewriting,readrandom` (and peerbench, which
    /// prints the same Summary line): each Summary line goes to the result it follows.
    #[test]
    fn summary_lines_give_each_benchmark_its_cost_per_operation() {
        let out = "\
fillseq      :      17.815 micros/op 56134 ops/sec 0.036 seconds 2000 operations;    6.2 MB/s
Percentiles: P50: 1.00 P75: 2.00 P99: 23.50 P99.9: 40.00 P99.99: 12015.00
Summary fillseq: db_size 0.3 MB, disk write 139.3 bytes/op, disk read 0.0 bytes/op, disk reads/op 0.0000, cpu 5.00 us/op, cs/op 0.003, peak RSS 14.7 MB, P99 23.50 P99.99 12015.00 Max 12015 us
readwhilewriting :       3.951 micros/op 486003 ops/sec 0.021 seconds 10000 operations;   53.8 MB/s (10000 of 10000 found)
  bgwriter     :    2232.231 micros/op 447 ops/sec 0.029 seconds 13 operations;    0.0 MB/s
Summary readwhilewriting: db_size 301.8 MB, disk write 12.5 bytes/op, disk read 4096.0 bytes/op, disk reads/op 1.0250, cpu 3.00 us/op, cs/op 0.002, peak RSS 23.8 MB, P99 n/a P99.99 n/a Max n/a us
readrandom   :       1.179 micros/op 848536 ops/sec 0.002 seconds 2000 operations;   93.9 MB/s (2000 of 2000 found)
Summary readrandom: db_size 0.3 MB, disk write n/a bytes/op, disk read n/a bytes/op, disk reads/op n/a, cpu n/a us/op, cs/op n/a, peak RSS n/a, P99 1.98 P99.99 158.00 Max 160 us
Summary stray: db_size 0.3 MB, disk write 1.0 bytes/op
Summary : nothing
";
        let r = parse(out);
        assert_eq!(r.len(), 3, "{r:?}");
        assert_eq!(
            r[0].per_op,
            Some(PerOp {
                write_bytes: Some(139.3),
                read_bytes: Some(0.0),
                disk_reads: Some(0.0),
                cpu_us: Some(5.0),
                switches: Some(0.003)
            })
        );
        assert_eq!(r[0].p99, Some(23.5), "the Summary line does not disturb the percentiles");
        let rww = r[1].per_op.as_ref().unwrap();
        assert_eq!(
            (rww.write_bytes, rww.read_bytes, rww.disk_reads, rww.cpu_us),
            (Some(12.5), Some(4096.0), Some(1.025), Some(3.0)),
            "the readers' line, not the bgwriter's"
        );
        assert_eq!(
            r[2].per_op,
            Some(PerOp::default()),
            "n/a everywhere; the stray Summary is not readrandom's"
        );
        assert_eq!(summary_line("Summary x: disk write 5 bytes/op"), None, "no db_size: not a Summary line");
    }

    /// `target/peerbench --engine=lmdb --benchmarks=fillrandom --num=2000 --histogram=1`, stdout.
    #[test]
    fn peerbench_output_parses_like_db_bench() {
        let out = "\
LMDB 0.9.24: (July 24, 2019) (peerbench)
DB path:    [/tmp/pbx]
------------------------------------------------
fillrandom   :      13.157 micros/op 76002 ops/sec 0.026 seconds 2000 operations;    8.4 MB/s
Microseconds per write:
Count: 2000 Average: 13.1560  StdDev: 256.77
Min: 2  Median: 3.3777  Max: 9868
Percentiles: P50: 3.38 P75: 3.77 P99: 11.15 P99.9: 3650.00 P99.99: 9240.00
------------------------------------------------------

close        : 0.003 seconds (engine shutdown; WT final checkpoint / LMDB sync; not included above)
";
        let r = parse(out);
        assert_eq!(r.len(), 1, "the close line is not a result: {r:?}");
        assert_eq!((r[0].ops, r[0].p99, r[0].max), (Some(2000), Some(11.15), Some(9868.0)));
    }

    #[test]
    fn garbage_is_skipped() {
        assert!(parse("x : y micros/op\nPercentiles: P99: oops\n : 1 micros/op 2 ops/sec").is_empty());
        assert!(parse("").is_empty());
    }
}
