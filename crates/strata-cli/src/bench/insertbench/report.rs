//! The insert benchmark's text: the header, each phase's `Summary` and `Efficiency` lines
//! (resources.rs's figures, per row inserted and, in query phases, per query) and the table of
//! every phase at the end.
//!
//! Owns: these formats and the figures they derive (rates, percentiles). Must not: run
//! anything or measure resources in a way of its own (resources.rs does).

use std::fmt::Write as _;
use std::path::Path;

use super::super::flags::Flags;
use super::super::histogram::Histogram;
use super::super::resources::{disk_usage, Efficiency, Sample};
use super::phases::{Config, Outcome, Phase};
use super::schema;

/// The report's first lines.
pub fn header(f: &Flags, path: &Path, seed: u64, engine: &str) -> String {
    format!(
        "Insert benchmark (iibench): {} clients, a table each with 3 secondary indexes \
         (marketsegment, registersegment, pdc)\n\
         Phases:     {}\n\
         Rows:       l.i0 {} per client ({} per insert), l.i1 {} per client ({} per insert)\n\
         Queries:    {} index entries each, {} s per query phase, 1 query thread per client\n\
         Row:        {}..={} data bytes ({} random), {} cash registers, {} products, {} customers\n\
         Writes:     sync {}, disable_wal {}\n\
         Seed:       {seed}\n\
         Engine:     {engine}\nDB path:    [{}]\n\
         ------------------------------------------------\n",
        f.threads,
        if f.ib_phases.is_empty() { "none (checker only)".to_string() } else { f.ib_phases.join(" ") },
        f.ib_rows_l0,
        f.ib_l0_rows_per_commit,
        f.ib_rows_l1,
        f.ib_rows_per_commit,
        f.ib_rows_per_query,
        f.ib_query_seconds,
        f.ib_data_min,
        f.ib_data_max,
        f.compression_ratio,
        schema::CASHREGISTERS,
        schema::PRODUCTS,
        schema::CUSTOMERS,
        u8::from(f.sync),
        u8::from(f.disable_wal),
        path.display(),
    )
}

/// One finished phase.
pub struct PhaseRow {
    phase: Phase,
    secs: f64,
    o: Outcome,
    eff: Efficiency,
    db_bytes: u64,
    /// Rows per insert in this phase.
    per_insert: usize,
    /// The rate the inserters were paced to, all clients together (query phases).
    target_ips: Option<u64>,
}

impl PhaseRow {
    /// The figures of `phase`, which began at `before`, as it ends.
    pub fn new(phase: Phase, cfg: &Config<'_>, o: Outcome, before: &Sample, db: &Path) -> Self {
        let secs = before.elapsed().max(1e-6);
        let eff = Efficiency::since(before, o.rows, o.switches, db);
        let per_insert = match phase {
            Phase::LoadRows => cfg.l0_rows_per_commit,
            Phase::CreateIndexes => super::table::INDEX_CHUNK,
            Phase::LoadIndexed | Phase::Query(_) => cfg.rows_per_commit,
        };
        let target_ips = match phase {
            Phase::Query(n) => Some(n * cfg.clients as u64),
            _ => None,
        };
        Self { phase, secs, o, eff, db_bytes: disk_usage(db), per_insert, target_ips }
    }

    fn ips(&self) -> f64 {
        self.o.rows as f64 / self.secs
    }

    fn qps(&self) -> f64 {
        self.o.queries.count() as f64 / self.secs
    }

    /// The `Summary` line and the `Efficiency` lines.
    pub fn text(&mut self) -> String {
        let name = self.phase.name();
        let what = if self.phase == Phase::CreateIndexes { "rows indexed" } else { "rows inserted" };
        let mut s =
            format!("Summary {name}: {} {what} in {:.3} s: {:.1} rows/s", self.o.rows, self.secs, self.ips());
        if let Some(t) = self.target_ips {
            let _ = write!(s, " (target {t})");
        }
        let unit = if self.phase == Phase::CreateIndexes { "per batch" } else { "per insert" };
        let _ = write!(s, "; {unit} ({} rows): {}", self.per_insert, latency(&self.o.inserts));
        let queries = self.o.queries.count();
        if matches!(self.phase, Phase::Query(_)) {
            let per = self.o.fetched as f64 / queries.max(1) as f64;
            let _ = write!(
                s,
                "; {queries} queries: {:.1} queries/s, {per:.1} entries/query, per query: {}",
                self.qps(),
                latency(&self.o.queries)
            );
        }
        s.push('\n');
        let per_row = if self.phase == Phase::CreateIndexes { "per row indexed" } else { "per row inserted" };
        self.eff.ops = self.o.rows;
        s.push_str(&self.eff.line(&format!("{name} ({per_row})")));
        if matches!(self.phase, Phase::Query(_)) {
            self.eff.ops = queries;
            s.push_str(&self.eff.line(&format!("{name} (per query)")));
        }
        s
    }
}

fn latency(h: &Histogram) -> String {
    format!("P50 {:.1} P99 {:.1} Max {} us", h.percentile(50.0), h.percentile(99.0), h.max())
}

/// Every phase in one table, as iibench's summary has them side by side.
pub fn table(rows: &[PhaseRow]) -> String {
    let mut s = format!(
        "\n{:<8} {:>11} {:>9} {:>11} {:>10} {:>11} {:>11} {:>10} {:>10} {:>9}\n",
        "phase",
        "rows",
        "secs",
        "rows/s",
        "queries/s",
        "ins P99 us",
        "ins max us",
        "q P99 us",
        "q max us",
        "db MB"
    );
    for r in rows {
        let q = &r.o.queries;
        let _ = writeln!(
            s,
            "{:<8} {:>11} {:>9.1} {:>11.1} {:>10.1} {:>11.1} {:>11} {:>10.1} {:>10} {:>9.1}",
            r.phase.name(),
            r.o.rows,
            r.secs,
            r.ips(),
            r.qps(),
            r.o.inserts.percentile(99.0),
            r.o.inserts.max(),
            q.percentile(99.0),
            q.max(),
            r.db_bytes as f64 / 1_048_576.0
        );
    }
    s
}
