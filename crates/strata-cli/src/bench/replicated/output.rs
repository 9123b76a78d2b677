//! What rput and rget print: a header, then per benchmark db_bench's result line, the
//! `Min: .. Max:` and `Percentiles:` lines of its latency histogram (so `strata bench compare`'s
//! parser, dbbench_output.rs, and the scripts read them as they read every other benchmark),
//! and at the end a table with the client count and the error count.
//!
//! Owns: these formats. Must not: run operations or talk to an engine.

use std::fmt::Write as _;

use super::super::report::BenchResult;
use super::harness::{Limit, Outcome};

/// The figures of one finished benchmark, for its lines and the closing table.
pub struct Row {
    pub name: String,
    pub clients: usize,
    pub outcome: Outcome,
}

impl Row {
    fn ops_per_sec(&self) -> f64 {
        self.outcome.ops as f64 / self.outcome.elapsed.as_secs_f64().max(1e-6)
    }

    fn pct(&self, q: f64) -> u64 {
        self.outcome.hist.value_at_quantile(q)
    }

    /// db_bench's result line and histogram lines; the message gives clients, errors and, for
    /// gets, how many keys were found.
    pub fn block(&self, found: bool) -> String {
        let o = &self.outcome;
        let mut message = format!("({} clients, {} errors)", self.clients, o.errors);
        if found {
            message = format!("({} of {} found) {message}", o.found, o.ops);
        }
        let result = BenchResult {
            name: self.name.clone(),
            micros_per_op: o.client_secs * 1e6 / o.ops.max(1) as f64,
            ops_per_sec: self.ops_per_sec() as i64,
            elapsed: o.elapsed.as_secs_f64(),
            ops: o.ops,
            mb_per_sec: None,
            message,
        };
        let mut s = result.line();
        let h = &o.hist;
        let _ =
            writeln!(s, "Min: {}  Median: {:.4}  Max: {}", h.min(), h.value_at_quantile(0.5) as f64, h.max());
        let _ = writeln!(
            s,
            "Percentiles: P50: {:.2} P75: {:.2} P99: {:.2} P99.9: {:.2} P99.99: {:.2}",
            self.pct(0.5) as f64,
            self.pct(0.75) as f64,
            self.pct(0.99) as f64,
            self.pct(0.999) as f64,
            self.pct(0.9999) as f64
        );
        if let Some(e) = &o.first_error {
            let _ = writeln!(s, "  first error: {e}");
        }
        s
    }
}

/// The closing table: one row per benchmark, latencies in microseconds.
pub fn table(rows: &[Row]) -> String {
    let mut s = format!(
        "\n{:<10} {:>7} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8}\n",
        "benchmark", "clients", "ops/sec", "P50 us", "P99 us", "P99.9 us", "Max us", "errors"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:<10} {:>7} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8}",
            r.name,
            r.clients,
            // Truncated as the result line's db_bench figure is, so the two agree.
            r.ops_per_sec() as i64,
            r.pct(0.5),
            r.pct(0.99),
            r.pct(0.999),
            r.outcome.hist.max(),
            r.outcome.errors
        );
    }
    s
}

/// What the run does, before the first benchmark.
pub struct Header<'a> {
    pub benchmarks: &'a [String],
    pub engine: &'a str,
    pub clients: usize,
    pub key_size: usize,
    pub key_space: u64,
    pub value_size: usize,
    pub limit: Limit,
    pub seed: u64,
}

impl Header<'_> {
    pub fn text(&self) -> String {
        let limit = match self.limit {
            Limit::Duration(d) => format!("{} seconds per benchmark", d.as_secs()),
            Limit::Ops(n) => format!("{n} operations per benchmark, spread over the clients"),
        };
        format!(
            "Replicated: {} (each put acknowledged by a majority; each get linearizable)\n\
             Clients:    {} (--threads), one operation in flight each\n\
             Keys:       {} bytes each, {} distinct (--key_space)\n\
             Values:     {} bytes each\n\
             Run:        {limit}\n\
             Seed:       {}\n\
             Engine:     {}\n\
             ------------------------------------------------\n",
            self.benchmarks.join(","),
            self.clients,
            self.key_size,
            self.key_space,
            self.value_size,
            self.seed,
            self.engine
        )
    }
}
