//! One stress thread: draws random operations — put, delete, merge, multi-key batches, point
//! gets and multi-gets, range scans forward and backward (with bounds, with a prefix, or
//! seek-and-stop), reads at a snapshot taken earlier, and occasional flush, compact_range and
//! checkpoint (opened and read back) — and checks every read. With column families
//! (`families`) keys are oracle slots spread over the families, a multi-key batch may span
//! families (one `WriteBatch`), reads, scans, flushes and compactions pick a family, and now and
//! then a thread drops the last family and creates it again.
//!
//! Concurrency rule: every write and every read of the latest state holds the oracle stripe locks
//! of the keys it touches for the whole engine call, so the oracle update and the engine operation
//! are atomic with respect to other threads and a read can demand the exact expected value.
//! Snapshot reads need no lock: their expected values were copied under the locks when the
//! snapshot was taken. This module must not verify the database as a whole (see `verify`).

use std::sync::atomic::{AtomicU64, Ordering};

use std::path::PathBuf;

use strata::{ColumnFamily, Db, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions};

use crate::failure::Failure;
use crate::families::{self, Families, Layout};
use crate::history::History;
use crate::model::{describe, key_bytes, Kind, Value};
use crate::oracle::Oracle;

/// Counters shared by all threads.
#[derive(Debug, Default)]
pub struct Stats {
    /// Operations completed.
    pub ops: AtomicU64,
    /// Key writes acknowledged by the engine (a batch counts each of its keys).
    pub writes: AtomicU64,
    /// Batches written.
    pub batches: AtomicU64,
    /// Values read and checked against the oracle (point reads and every key a scan returned).
    pub reads_verified: AtomicU64,
    /// Range scans.
    pub scans: AtomicU64,
    /// Snapshots taken and read.
    pub snapshots: AtomicU64,
    /// Explicit flushes.
    pub flushes: AtomicU64,
    /// Explicit compactions.
    pub compactions: AtomicU64,
    /// Checkpoints taken, opened and read back.
    pub checkpoints: AtomicU64,
    /// Batches whose keys are in more than one column family.
    pub cross_family_batches: AtomicU64,
}

/// Where checkpoints go and how their copies are opened.
#[derive(Clone)]
pub struct CheckpointArea {
    /// A directory of the stress tool's own (emptied at startup, since a kill can leave a
    /// checkpoint or its staging directory behind); one subdirectory per checkpoint.
    pub dir: PathBuf,
    /// The options the database runs with (its merge operator reads the copy's operands).
    pub options: Options,
    /// Checkpoints per 10,000 operations.
    pub per_10k: u32,
}

/// How a run writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteMode {
    /// Percent of writes made with `sync = true` (0-100); 0 and 100 draw nothing, so the
    /// operation streams of `--no-sync` and `--sync` runs do not depend on it.
    pub sync_percent: u32,
    /// Every write with `disable_wal = true` (and never synced).
    pub disable_wal: bool,
    /// Drops (and recreations) of the last column family per 10,000 operations, when there are
    /// two families or more.
    pub cf_drops_per_10k: u32,
}

impl std::fmt::Display for WriteMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.disable_wal, self.sync_percent) {
            (true, _) => write!(f, "false disable_wal=true"),
            (false, 0) => write!(f, "false"),
            (false, 100) => write!(f, "true"),
            (false, p) => write!(f, "{p}%"),
        }
    }
}

fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// One key write.
#[derive(Debug, Clone, Copy)]
enum Op {
    Put(Value),
    Delete,
    Merge(u64),
}

impl Op {
    fn apply(self, old: Value) -> Value {
        match self {
            Op::Put(v) => v,
            Op::Delete => Value::ABSENT,
            Op::Merge(x) => old.merged(x),
        }
    }
}

/// How a range is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ScanMode {
    /// `lower_bound` / `upper_bound` set; everything the iterator returns must be in range.
    Bounds,
    /// `prefix` set to all but the last two digits (100 keys).
    Prefix,
    /// No bounds: seek to the start and stop by key comparison.
    SeekAndStop,
}

/// A range read request: keys `lo..hi` of one family, how, and in which direction.
#[derive(Debug, Clone, Copy)]
struct Range {
    family: usize,
    lo: u64,
    hi: u64,
    mode: ScanMode,
    reverse: bool,
}

/// The state of one stress thread.
pub struct Worker<'a> {
    db: &'a Db,
    oracle: &'a Oracle,
    fams: &'a Families,
    layout: Layout,
    stats: &'a Stats,
    rng: fastrand::Rng,
    mode: WriteMode,
    id: u64,
    next_tag: u64,
    checkpoints: Option<&'a CheckpointArea>,
    next_checkpoint: u64,
    history: Option<&'a History>,
}

impl<'a> Worker<'a> {
    /// A thread with its own generator seeded from `seed` and `id`.
    pub fn new(
        db: &'a Db,
        oracle: &'a Oracle,
        fams: &'a Families,
        stats: &'a Stats,
        mode: WriteMode,
        seed: u64,
        id: u64,
    ) -> Self {
        let rng = fastrand::Rng::with_seed(seed ^ id.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        Worker {
            db,
            oracle,
            fams,
            layout: fams.layout,
            stats,
            rng,
            mode,
            id,
            next_tag: 0,
            checkpoints: None,
            next_checkpoint: 0,
            history: None,
        }
    }

    /// Records every write in `history` (a `--disable-wal` run) before making it.
    pub fn with_history(mut self, history: Option<&'a History>) -> Self {
        self.history = history;
        self
    }

    /// The options of the next write: synced in `sync_percent` of them.
    fn write_options(&mut self) -> WriteOptions {
        let sync = match self.mode.sync_percent {
            _ if self.mode.disable_wal => false,
            0 => false,
            p if p >= 100 => true,
            p => self.rng.u32(0..100) < p,
        };
        WriteOptions { sync, disable_wal: self.mode.disable_wal }
    }

    /// Lets this thread take checkpoints into `area`.
    pub fn with_checkpoints(mut self, area: &'a CheckpointArea) -> Self {
        self.checkpoints = Some(area);
        self
    }

    /// Runs one random operation.
    pub fn step(&mut self) -> Result<(), Failure> {
        // Drawn only with families, so one-family runs draw the same operations as before.
        if self.layout.dropping().is_some() && self.rng.u32(0..10_000) < self.mode.cf_drops_per_10k {
            self.fams.drop_and_recreate(self.db, self.oracle, self.history)?;
            bump(&self.stats.ops, 1);
            return Ok(());
        }
        let key = self.rng.u64(0..self.oracle.keys());
        let draw = self.rng.u32(0..10_000);
        if self.checkpoints.is_some_and(|a| draw < a.per_10k) {
            self.checkpoint()?;
            bump(&self.stats.ops, 1);
            return Ok(());
        }
        match draw {
            0..3000 => {
                let op = Op::Put(self.random_value());
                self.write(&[(key, op)])
            }
            3000..3800 => self.write(&[(key, Op::Delete)]),
            3800..5000 => {
                let op = Op::Merge(self.rng.u64(1..1000));
                self.write(&[(key, op)])
            }
            5000..6000 => self.batch(),
            6000..7200 => self.get(key),
            7200..8000 => self.multi_get(),
            8000..9200 => self.scan(),
            9200..9993 => self.snapshot_reads(),
            9993..9998 => self.flush(),
            _ => self.compact(),
        }?;
        bump(&self.stats.ops, 1);
        Ok(())
    }

    fn random_value(&mut self) -> Value {
        let kind = if self.rng.u32(0..10) < 7 { Kind::Short } else { Kind::Long };
        Value { kind, n: self.rng.u64(..) }
    }

    fn random_op(&mut self) -> Op {
        match self.rng.u32(0..10) {
            0..6 => Op::Put(self.random_value()),
            6..8 => Op::Delete,
            _ => Op::Merge(self.rng.u64(1..1000)),
        }
    }

    fn batch(&mut self) -> Result<(), Failure> {
        let n = self.rng.usize(2..=5);
        let mut keys: Vec<u64> = (0..n).map(|_| self.rng.u64(0..self.oracle.keys())).collect();
        // Distinct keys: each slot records one old and one new value per operation.
        keys.sort_unstable();
        keys.dedup();
        let ops: Vec<(u64, Op)> = keys.into_iter().map(|k| (k, self.random_op())).collect();
        bump(&self.stats.batches, 1);
        let first = self.layout.split(ops[0].0).0;
        if ops.iter().any(|&(k, _)| self.layout.split(k).0 != first) {
            bump(&self.stats.cross_family_batches, 1);
        }
        self.write(&ops)
    }

    /// Applies `ops` (one op per distinct key) under the keys' locks: intent, engine, completion.
    fn write(&mut self, ops: &[(u64, Op)]) -> Result<(), Failure> {
        let keys: Vec<u64> = ops.iter().map(|&(k, _)| k).collect();
        let mut locked = self.oracle.lock(&keys);
        let intents: Vec<(u64, Value)> =
            ops.iter().map(|&(k, op)| (k, op.apply(locked.slot(k).cur))).collect();
        self.next_tag += 1;
        locked.begin(&intents, (self.id + 1) << 48 | self.next_tag)?;
        if let Some(h) = self.history {
            let changes: Vec<(u64, Value, Value)> =
                intents.iter().map(|&(k, new)| (k, locked.slot(k).cur, new)).collect();
            h.append(&changes)?;
        }
        let wopts = self.write_options();
        self.issue(ops, &wopts)?;
        locked.complete(&keys)?;
        bump(&self.stats.writes, ops.len() as u64);
        Ok(())
    }

    /// The engine call: a single op through its own API, several through one `WriteBatch` (the
    /// default family's through the plain API, others' through the `_cf` one). The caller holds
    /// the keys' locks, so the families' handles are live.
    fn issue(&self, ops: &[(u64, Op)], w: &WriteOptions) -> strata::Result<()> {
        let db = self.db;
        if let [(g, op)] = ops {
            let (f, k) = self.layout.split(*g);
            let key = key_bytes(k);
            if f > 0 {
                let cf = self.fams.handle(f);
                return match op {
                    Op::Put(v) => db.put_cf_opt(&cf, w, &key, &v.bytes(*g).expect("put of a present value")),
                    Op::Delete => db.delete_cf_opt(&cf, w, &key),
                    Op::Merge(x) => db.merge_cf_opt(&cf, w, &key, &x.to_le_bytes()),
                };
            }
            return match op {
                Op::Put(v) => db.put_opt(w, &key, &v.bytes(*g).expect("put of a present value")),
                Op::Delete => db.delete_opt(w, &key),
                Op::Merge(x) => db.merge_opt(w, &key, &x.to_le_bytes()),
            };
        }
        let mut b = WriteBatch::new();
        for &(g, op) in ops {
            let (f, k) = self.layout.split(g);
            if f > 0 {
                let cf = self.fams.handle(f);
                match op {
                    Op::Put(v) => b.put_cf(&cf, key_bytes(k), v.bytes(g).expect("put of a present value")),
                    Op::Delete => b.delete_cf(&cf, key_bytes(k)),
                    Op::Merge(x) => b.merge_cf(&cf, key_bytes(k), x.to_le_bytes()),
                };
                continue;
            }
            match op {
                Op::Put(v) => b.put(key_bytes(k), v.bytes(g).expect("put of a present value")),
                Op::Delete => b.delete(key_bytes(k)),
                Op::Merge(x) => b.merge(key_bytes(k), x.to_le_bytes()),
            };
        }
        db.write_opt(w, b)
    }

    fn get(&mut self, key: u64) -> Result<(), Failure> {
        let (f, k) = self.layout.split(key);
        let locked = self.oracle.lock(&[key]);
        let actual = families::get(self.db, &self.fams.handle(f), &ReadOptions::new(), &key_bytes(k))?;
        let expected = locked.slot(key).cur;
        drop(locked);
        check_value(self.layout, "get", key, expected, actual.as_deref())?;
        bump(&self.stats.reads_verified, 1);
        Ok(())
    }

    /// Up to 8 random keys (repeats allowed) in one `multi_get` per family they fall in, checked
    /// against the oracle with their stripes locked, so no write to them is in flight.
    fn multi_get(&mut self) -> Result<(), Failure> {
        let n = self.rng.usize(1..=8);
        let keys: Vec<u64> = (0..n).map(|_| self.rng.u64(0..self.oracle.keys())).collect();
        let locked = self.oracle.lock(&keys);
        let mut results: Vec<Option<strata::Result<Option<Vec<u8>>>>> = keys.iter().map(|_| None).collect();
        for f in 0..self.layout.families {
            let at: Vec<usize> = (0..n).filter(|&i| self.layout.split(keys[i]).0 == f).collect();
            if at.is_empty() {
                continue;
            }
            let encoded: Vec<Vec<u8>> = at.iter().map(|&i| key_bytes(self.layout.split(keys[i]).1)).collect();
            let refs: Vec<&[u8]> = encoded.iter().map(Vec::as_slice).collect();
            let got = families::multi_get(self.db, &self.fams.handle(f), &ReadOptions::new(), &refs);
            for (&i, r) in at.iter().zip(got) {
                results[i] = Some(r);
            }
        }
        let expected: Vec<Value> = keys.iter().map(|&k| locked.slot(k).cur).collect();
        drop(locked);
        for ((&k, want), got) in keys.iter().zip(expected).zip(results) {
            let got = got.expect("every key's family was read")?;
            check_value(self.layout, "multi_get", k, want, got.as_deref())?;
        }
        bump(&self.stats.reads_verified, n as u64);
        Ok(())
    }

    /// A range of keys of one family (drawn only with families, so one-family runs draw as before).
    fn random_range(&mut self, max_len: u64) -> Range {
        let family = if self.layout.families > 1 { self.rng.usize(0..self.layout.families) } else { 0 };
        let keys = self.layout.keys;
        let lo = self.rng.u64(0..keys);
        let mode = [ScanMode::Bounds, ScanMode::Prefix, ScanMode::SeekAndStop][self.rng.usize(0..3)];
        let reverse = self.rng.bool();
        if mode == ScanMode::Prefix {
            let lo = lo / 100 * 100;
            return Range { family, lo, hi: (lo + 100).min(keys), mode, reverse };
        }
        let hi = (lo + self.rng.u64(1..=max_len)).min(keys);
        Range { family, lo, hi, mode, reverse }
    }

    /// Locks the slots of range `r`.
    fn lock_range(&self, r: Range) -> crate::oracle::Locked<'a> {
        self.oracle.lock_range(self.layout.slot(r.family, r.lo), self.layout.slot(r.family, r.hi))
    }

    fn scan(&mut self) -> Result<(), Failure> {
        let r = self.random_range(100);
        let locked = self.lock_range(r);
        let got = read_range(self.db, &self.fams.handle(r.family), ReadOptions::new(), r)?;
        let want = expected_range(self.layout, r, |g| locked.slot(g).cur);
        drop(locked);
        compare_range("scan", r, &want, &got)?;
        bump(&self.stats.scans, 1);
        bump(&self.stats.reads_verified, got.len() as u64);
        Ok(())
    }

    /// Takes a snapshot with the range locked, changes the range, then checks that reads at the
    /// snapshot still see the values the oracle held when it was taken. If the family was dropped
    /// meanwhile, its handle fails every read: nothing is left to check.
    fn snapshot_reads(&mut self) -> Result<(), Failure> {
        let r = self.random_range(50);
        let (snap, cf, at_snap) = self.take_snapshot(r);
        for _ in 0..self.rng.u32(1..=3) {
            let (k, op) = (self.rng.u64(r.lo..r.hi), self.random_op());
            self.write(&[(self.layout.slot(r.family, k), op)])?;
        }
        if self.rng.u32(0..50) == 0 {
            self.flush()?;
        }
        let ro = ReadOptions { snapshot: Some(snap), ..ReadOptions::new() };
        let keys: Vec<u64> = (0..3).map(|_| self.rng.u64(r.lo..r.hi)).collect();
        match self.read_at_snapshot(&cf, &ro, r, &keys, &at_snap) {
            Err(Failure::Engine(_)) if !Families::is_current(self.db, &cf) => return Ok(()),
            other => other?,
        }
        bump(&self.stats.snapshots, 1);
        Ok(())
    }

    fn read_at_snapshot(
        &self,
        cf: &ColumnFamily,
        ro: &ReadOptions,
        r: Range,
        keys: &[u64],
        at_snap: &[Value],
    ) -> Result<(), Failure> {
        let want = |k: u64| at_snap[(k - r.lo) as usize];
        let slot = |k: u64| self.layout.slot(r.family, k);
        for &k in keys {
            let actual = families::get(self.db, cf, ro, &key_bytes(k))?;
            check_value(self.layout, "get at snapshot", slot(k), want(k), actual.as_deref())?;
        }
        let encoded: Vec<Vec<u8>> = keys.iter().map(|&k| key_bytes(k)).collect();
        let refs: Vec<&[u8]> = encoded.iter().map(Vec::as_slice).collect();
        for (&k, got) in keys.iter().zip(families::multi_get(self.db, cf, ro, &refs)) {
            check_value(self.layout, "multi_get at snapshot", slot(k), want(k), got?.as_deref())?;
        }
        let got = read_range(self.db, cf, ro.clone(), r)?;
        let expected = expected_range(self.layout, r, |g| want(self.layout.split(g).1));
        compare_range("scan at snapshot", r, &expected, &got)?;
        bump(&self.stats.reads_verified, 6 + got.len() as u64);
        Ok(())
    }

    fn take_snapshot(&self, r: Range) -> (Snapshot, ColumnFamily, Vec<Value>) {
        // With the range locked no write to it is in flight, so the snapshot's sequence number
        // sees exactly the acknowledged writes the oracle holds.
        let locked = self.lock_range(r);
        let snap = self.db.snapshot();
        let values = (r.lo..r.hi).map(|k| locked.slot(self.layout.slot(r.family, k)).cur).collect();
        (snap, self.fams.handle(r.family), values)
    }

    /// Takes a checkpoint with a range locked, so that no write to the range is in flight and
    /// the copy must hold exactly the oracle's values of that moment; then opens the copy,
    /// reads the range back, and deletes it. Writers of other keys keep running throughout.
    fn checkpoint(&mut self) -> Result<(), Failure> {
        let Some(area) = self.checkpoints else { return Ok(()) };
        let r = self.random_range(200);
        let target = area.dir.join(format!("t{}-{}", self.id, self.next_checkpoint));
        self.next_checkpoint += 1;
        let want = {
            let locked = self.lock_range(r);
            self.db.checkpoint(&target)?;
            expected_range(self.layout, r, |g| locked.slot(g).cur)
        };
        let copy = Db::open_read_only(&target, area.options.clone())?;
        let name = families::name(r.family);
        let cf =
            copy.cf(&name).ok_or_else(|| Failure::Mismatch(format!("checkpoint: family {name} missing")))?;
        let got = read_range(&copy, &cf, ReadOptions::new(), r)?;
        drop(copy);
        std::fs::remove_dir_all(&target)
            .map_err(|e| Failure::Tool(format!("removing checkpoint {}: {e}", target.display())))?;
        compare_range("checkpoint", r, &want, &got)?;
        bump(&self.stats.checkpoints, 1);
        bump(&self.stats.reads_verified, got.len() as u64);
        Ok(())
    }

    /// Flushes one family (with families: a random one; a flush racing the drop of its family
    /// fails, which is not an error of the engine).
    fn flush(&mut self) -> Result<(), Failure> {
        if self.layout.families == 1 {
            self.db.flush()?;
        } else {
            let cf = self.fams.handle(self.rng.usize(0..self.layout.families));
            self.unless_dropped(&cf, |db| db.flush_cf(&cf))?;
        }
        bump(&self.stats.flushes, 1);
        Ok(())
    }

    fn compact(&mut self) -> Result<(), Failure> {
        if self.rng.u32(0..4) == 0 {
            let f = if self.layout.families > 1 { self.rng.usize(0..self.layout.families) } else { 0 };
            let cf = self.fams.handle(f);
            self.unless_dropped(&cf, |db| db.compact_range_cf(&cf, None, None))?;
        } else {
            let r = self.random_range(2000);
            let cf = self.fams.handle(r.family);
            let (lo, hi) = (key_bytes(r.lo), key_bytes(r.hi));
            self.unless_dropped(&cf, |db| db.compact_range_cf(&cf, Some(&lo), Some(&hi)))?;
        }
        bump(&self.stats.compactions, 1);
        Ok(())
    }

    /// Runs `call`, taking its `InvalidArgument` for the expected refusal when `cf` has been
    /// dropped by another thread meanwhile.
    fn unless_dropped(
        &self,
        cf: &ColumnFamily,
        call: impl FnOnce(&Db) -> strata::Result<()>,
    ) -> Result<(), Failure> {
        match call(self.db) {
            Err(strata::Error::InvalidArgument(_)) if !Families::is_current(self.db, cf) => Ok(()),
            r => Ok(r?),
        }
    }
}

/// Checks the value read for slot `g`.
fn check_value(
    layout: Layout,
    what: &str,
    g: u64,
    expected: Value,
    actual: Option<&[u8]>,
) -> Result<(), Failure> {
    if expected.bytes(g).as_deref() == actual {
        return Ok(());
    }
    Err(Failure::Mismatch(format!(
        "{what}: key {} expected {expected} actual {}",
        layout.describe(g),
        describe(actual)
    )))
}

/// The present keys of `r` with their bytes, in the scan's direction; `value` is by slot.
fn expected_range(layout: Layout, r: Range, value: impl Fn(u64) -> Value) -> Vec<(Vec<u8>, Vec<u8>)> {
    let slot = |k| layout.slot(r.family, k);
    let mut out: Vec<_> =
        (r.lo..r.hi).filter_map(|k| value(slot(k)).bytes(slot(k)).map(|b| (key_bytes(k), b))).collect();
    if r.reverse {
        out.reverse();
    }
    out
}

/// Reads `r` through an iterator. Bounded modes return whatever the iterator yields, so a bound
/// the engine ignores shows up as extra keys; seek-and-stop ends at the range's edge.
fn read_range(
    db: &Db,
    cf: &ColumnFamily,
    mut ro: ReadOptions,
    r: Range,
) -> strata::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let (lo, hi) = (key_bytes(r.lo), key_bytes(r.hi));
    match r.mode {
        ScanMode::Bounds => (ro.lower_bound, ro.upper_bound) = (Some(lo.clone()), Some(hi.clone())),
        ScanMode::Prefix => ro.prefix = Some(lo[..7].to_vec()),
        ScanMode::SeekAndStop => {}
    }
    let mut it = families::iter(db, cf, &ro)?;
    match (r.mode, r.reverse) {
        (ScanMode::SeekAndStop, false) => it.seek(&lo),
        (ScanMode::SeekAndStop, true) => it.seek_for_prev(&key_bytes(r.hi - 1)),
        (_, false) => it.seek_to_first(),
        (_, true) => it.seek_to_last(),
    }
    let mut out = Vec::new();
    // The cap stops a runaway iterator (e.g. one ignoring bounds over the whole key space); the
    // comparison then reports the extra keys.
    while it.valid() && out.len() <= 200 {
        let k = it.key();
        if r.mode == ScanMode::SeekAndStop && (k >= hi.as_slice() || k < lo.as_slice()) {
            break;
        }
        out.push((k.to_vec(), it.value().to_vec()));
        if r.reverse {
            it.prev()
        } else {
            it.next()
        }
    }
    it.status()?;
    Ok(out)
}

fn compare_range(
    what: &str,
    r: Range,
    want: &[(Vec<u8>, Vec<u8>)],
    got: &[(Vec<u8>, Vec<u8>)],
) -> Result<(), Failure> {
    let i = want.iter().zip(got).position(|(w, g)| w != g).unwrap_or(want.len().min(got.len()));
    if i == want.len() && i == got.len() {
        return Ok(());
    }
    let show = |e: Option<&(Vec<u8>, Vec<u8>)>| match e {
        None => "end of range".to_string(),
        Some((k, v)) => format!("key {} = {}", String::from_utf8_lossy(k), describe(Some(v))),
    };
    Err(Failure::Mismatch(format!(
        "{what} {r:?}: entry {i}: expected {} actual {}",
        show(want.get(i)),
        show(got.get(i))
    )))
}
