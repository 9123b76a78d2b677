//! The insert benchmark's phases as threads, one client per table as iibench runs them:
//! `l.i0` (each client inserts its rows in primary-key order, no indexes), `l.x` (each client
//! builds its table's three indexes from its rows), `l.i1` (inserts with the index entries in
//! the same batch) and `qrN` (per client one inserter paced to N rows/s and one query thread,
//! for a fixed time). The main thread reports (monitor.rs) while the clients run.
//!
//! Owns: the per-thread loops, their pacing and their measurements. Must not: format a
//! summary (mod.rs), know an engine (store.rs) or the byte layout (schema.rs).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Result;

use super::super::histogram::Histogram;
use super::super::resources::own_switches;
use super::super::valuegen::ValuePool;
use super::monitor::{Counters, Monitor};
use super::schema::{Index, Rng, Row, RowGen, TableId};
use super::store::{Batch, Tables};
use super::table::Table;

/// One phase of the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// `l.i0`: insert rows without indexes.
    LoadRows,
    /// `l.x`: create the indexes from the rows.
    CreateIndexes,
    /// `l.i1`: insert rows with their index entries.
    LoadIndexed,
    /// `qrN`: range queries beside inserts paced to N rows/s per client.
    Query(u64),
}

impl Phase {
    /// The phase for its name: l.i0, l.x, l.i1 or qrN (N > 0).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "l.i0" => Some(Self::LoadRows),
            "l.x" => Some(Self::CreateIndexes),
            "l.i1" => Some(Self::LoadIndexed),
            _ => name.strip_prefix("qr")?.parse().ok().filter(|&n| n > 0).map(Self::Query),
        }
    }

    pub fn name(self) -> String {
        match self {
            Self::LoadRows => "l.i0".into(),
            Self::CreateIndexes => "l.x".into(),
            Self::LoadIndexed => "l.i1".into(),
            Self::Query(n) => format!("qr{n}"),
        }
    }

    /// Where the phase stands in the benchmark's order (query phases share the last place).
    pub fn rank(self) -> u8 {
        match self {
            Self::LoadRows => 0,
            Self::CreateIndexes => 1,
            Self::LoadIndexed => 2,
            Self::Query(_) => 3,
        }
    }
}

/// What every phase needs.
pub struct Config<'a> {
    pub tables: &'a dyn Tables,
    pub clients: usize,
    pub seed: u64,
    pub pool: &'a ValuePool,
    pub data_min: usize,
    pub data_max: usize,
    /// Rows each client inserts in l.i0 and in l.i1.
    pub rows_l0: u64,
    pub rows_l1: u64,
    /// Rows per insert (one batch) in l.i0, and in l.i1 and the query phases.
    pub l0_rows_per_commit: usize,
    pub rows_per_commit: usize,
    pub rows_per_query: usize,
    pub query_time: Duration,
}

/// What the threads of one phase measured.
pub struct Outcome {
    /// Per insert (one batch; in l.x one chunk of rows indexed), microseconds.
    pub inserts: Histogram,
    /// Per query, microseconds.
    pub queries: Histogram,
    /// Rows inserted (l.x: rows indexed).
    pub rows: u64,
    /// Index entries the queries fetched.
    pub fetched: u64,
    /// The worker threads' own context switches (None if one could not read them).
    pub switches: Option<u64>,
}

impl Outcome {
    fn new() -> Self {
        Self { inserts: Histogram::new(), queries: Histogram::new(), rows: 0, fetched: 0, switches: Some(0) }
    }

    fn merge(&mut self, o: Outcome) {
        self.inserts.merge(&o.inserts);
        self.queries.merge(&o.queries);
        self.rows += o.rows;
        self.fetched += o.fetched;
        self.switches = self.switches.zip(o.switches).map(|(a, b)| a + b);
    }
}

/// A worker's loop: (its client's table, its own result to fill).
type Body<'b> = dyn Fn(Table<'_>, &mut Outcome) -> Result<()> + Sync + 'b;

/// Runs `phase` on every client's table, reporting through `monitor` meanwhile.
pub fn run(
    cfg: &Config<'_>,
    phase: Phase,
    monitor: &mut Monitor,
    out: &mut dyn std::io::Write,
) -> Result<Outcome> {
    let (counters, stop_flag) = (Counters::default(), AtomicBool::new(false));
    // References, so the `move` closures below copy them.
    let (c, stop) = (&counters, &stop_flag);
    // Each phase draws its own rows and queries (qr100 and qr1000 too).
    let rate = if let Phase::Query(n) = phase { n } else { 0 };
    let seed = cfg.seed.wrapping_add(u64::from(phase.rank()) << 32).wrapping_add(rate);
    let load = |rows: u64, per_commit: usize, indexes: bool| {
        move |t: Table<'_>, o: &mut Outcome| {
            let mut g = RowGen::new(seed ^ u64::from(t.id), cfg.pool.generator(), cfg.data_min, cfg.data_max);
            insert(t, &mut g, rows, per_commit, indexes, None, c, stop, o)
        }
    };
    let (l0, l1) =
        (load(cfg.rows_l0, cfg.l0_rows_per_commit, false), load(cfg.rows_l1, cfg.rows_per_commit, true));
    let index = |t: Table<'_>, o: &mut Outcome| create_indexes(t, c, stop, o);
    let deadline = Instant::now() + cfg.query_time;
    let paced = |t: Table<'_>, o: &mut Outcome| {
        let Phase::Query(ips) = phase else { unreachable!("paced inserts run in query phases") };
        let mut g = RowGen::new(seed ^ u64::from(t.id), cfg.pool.generator(), cfg.data_min, cfg.data_max);
        insert(t, &mut g, u64::MAX, cfg.rows_per_commit, true, Some((ips, deadline)), c, stop, o)
    };
    let query = |t: Table<'_>, o: &mut Outcome| {
        let mut rng = Rng::new(seed ^ 0x5151 ^ (u64::from(t.id) << 16));
        while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
            let ix = Index::ALL[rng.below(Index::ALL.len() as u64) as usize];
            let began = Instant::now();
            o.fetched += t.query(ix, &mut rng, cfg.rows_per_query)? as u64;
            let us = began.elapsed().as_micros() as u64;
            o.queries.add(us);
            c.queried(us);
        }
        Ok(())
    };
    let bodies: Vec<&Body<'_>> = match phase {
        Phase::LoadRows => vec![&l0],
        Phase::CreateIndexes => vec![&index],
        Phase::LoadIndexed => vec![&l1],
        Phase::Query(_) => vec![&paced, &query],
    };
    on_threads(cfg, &bodies, c, stop, |c| monitor.watch(&phase.name(), c, out))
}

/// Runs every body on every client's table, one thread each, and `watch` on this thread.
fn on_threads(
    cfg: &Config<'_>,
    bodies: &[&Body<'_>],
    c: &Counters,
    stop: &AtomicBool,
    watch: impl FnOnce(&Counters) -> Result<()>,
) -> Result<Outcome> {
    c.running.store(cfg.clients * bodies.len(), Ordering::Release);
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        for client in 0..cfg.clients {
            for body in bodies {
                let table = Table::new(cfg.tables, client as TableId);
                handles.push(s.spawn(move || {
                    let before = own_switches();
                    let mut o = Outcome::new();
                    let r = body(table, &mut o);
                    if r.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    o.switches = own_switches().zip(before).map(|(a, b)| a.saturating_sub(b));
                    c.running.fetch_sub(1, Ordering::Release);
                    r.map(|()| o)
                }));
            }
        }
        let watched = watch(c);
        if watched.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        let mut all = Outcome::new();
        for h in handles {
            all.merge(h.join().expect("insertbench thread panicked")?);
        }
        watched.map(|()| all)
    })
}

/// Seconds since the epoch: iibench's dateandtime, one per insert.
fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Inserts up to `rows` rows into `t` from its next primary key on, `per_commit` per batch;
/// with `pace` = (rows/s, deadline) the batches are spread to that rate until the deadline.
#[allow(clippy::too_many_arguments)]
fn insert(
    t: Table<'_>,
    g: &mut RowGen,
    rows: u64,
    per_commit: usize,
    indexes: bool,
    pace: Option<(u64, Instant)>,
    c: &Counters,
    stop: &AtomicBool,
    o: &mut Outcome,
) -> Result<()> {
    let mut pk = t.next_pk()?;
    let (mut batch, mut buf): (Batch, Vec<Row>) = (Batch::new(), Vec::with_capacity(per_commit));
    let start = Instant::now();
    let mut done = 0u64;
    while done < rows && !stop.load(Ordering::Relaxed) {
        if let Some((ips, deadline)) = pace {
            // The next batch is due when the rows so far are exactly on the rate.
            let due = start + Duration::from_secs_f64(done as f64 / ips as f64);
            if !sleep_until(due.min(deadline), stop) || Instant::now() >= deadline {
                break;
            }
        }
        let n = (per_commit as u64).min(rows - done);
        let when = now_secs();
        buf.clear();
        buf.extend((0..n).map(|i| g.row(pk + i, when)));
        let began = Instant::now();
        t.insert(&mut batch, &buf, indexes)?;
        let us = began.elapsed().as_micros() as u64;
        o.inserts.add(us);
        c.inserted(n, us);
        (pk, done) = (pk + n, done + n);
    }
    o.rows += done;
    Ok(())
}

/// Sleeps until `t` in short steps; false if `stop` was set meanwhile.
fn sleep_until(t: Instant, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= t {
            return true;
        }
        std::thread::sleep((t - now).min(Duration::from_millis(50)));
    }
}

/// l.x for one table: every row's index entries, a chunk of rows per batch.
fn create_indexes(t: Table<'_>, c: &Counters, stop: &AtomicBool, o: &mut Outcome) -> Result<()> {
    let mut batch = Batch::new();
    let mut from = Some(0);
    while let Some(pk) = from.filter(|_| !stop.load(Ordering::Relaxed)) {
        let began = Instant::now();
        let (n, next) = t.index_chunk(pk, &mut batch)?;
        let us = began.elapsed().as_micros() as u64;
        if n > 0 {
            o.inserts.add(us);
            c.inserted(n as u64, us);
        }
        o.rows += n as u64;
        from = next;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_names_round_trip() {
        for name in ["l.i0", "l.x", "l.i1", "qr100", "qr1000", "qr7"] {
            assert_eq!(Phase::parse(name).unwrap().name(), name);
        }
        for bad in ["l.i2", "qr", "qr0", "qrx", "qp100"] {
            assert!(Phase::parse(bad).is_none(), "{bad}");
        }
        assert!(Phase::LoadRows.rank() < Phase::CreateIndexes.rank());
        assert_eq!(Phase::Query(100).rank(), Phase::Query(1000).rank());
    }
}
