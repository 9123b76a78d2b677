//! One thread of the `faults` command: random puts, deletes, merges and batches (some synced),
//! point reads, multi-gets, range scans forward and backward, reads at a snapshot, and now and
//! then flush, compact_range, sync_wal and checkpoint (read back, or, when it failed, checked to
//! have left no target), against a database whose filesystem fails at random.
//!
//! Every write holds its keys' stripe locks from before the engine call until the live view and
//! history are updated, as in `crate::worker`; so do reads of the latest state. An engine error
//! is classified (`errors::classify`): an expected one is counted, the write recorded as failed
//! (the live view then accepts either outcome until a read pins it) and the coordinator told;
//! any other is a failure. While the database is read-only, writes and flushes are skipped
//! rather than piled up as failed writes.
//!
//! This module must not resume, reopen or take crash images (the coordinator does).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use strata::fs::FileSystem;
use strata::{Db, ReadOptions, WriteBatch, WriteOptions};
use strata_testkit::MemFs;

use crate::failure::Failure;
use crate::model::{describe, key_bytes, parse_key, Kind, Value};

use super::errors::classify;
use super::state::{Alt, Event, Locked, WOp};
use super::Shared;

/// A read error naming an injected read fault this long after the last one was armed or fired
/// is a stale error the engine kept (a cached failure), not the fault itself.
const STALE_READ_ERROR: Duration = Duration::from_secs(10);

fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// What became of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Acknowledged.
    Acked,
    /// The engine returned an expected error.
    Failed,
    /// Not issued (read-only database, or a key's pending failure could not be pinned).
    Skipped,
}

/// A range read: keys `lo..hi`, bounded by `ReadOptions` bounds or by seek and stop.
#[derive(Debug, Clone, Copy)]
struct Range {
    lo: u64,
    hi: u64,
    bounded: bool,
    reverse: bool,
}

/// The state of one thread.
pub struct Worker<'a> {
    sh: &'a Shared,
    rng: fastrand::Rng,
    id: u64,
    next_tag: u64,
    next_checkpoint: u64,
}

impl<'a> Worker<'a> {
    /// Thread `id`, its generator seeded from `seed` and `id`.
    pub fn new(sh: &'a Shared, seed: u64, id: u64) -> Self {
        let rng = fastrand::Rng::with_seed(seed ^ id.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        Worker { sh, rng, id, next_tag: 0, next_checkpoint: 0 }
    }

    /// Runs one random operation.
    pub fn step(&mut self, db: &Db) -> Result<(), Failure> {
        let key = self.rng.u64(0..self.sh.state.keys());
        match self.rng.u32(0..10_000) {
            0..2800 => self.put(db, key).map(drop)?,
            2800..3500 => self.write(db, &[(key, WOp::Delete)], None).map(drop)?,
            3500..4600 => {
                let x = self.rng.u64(1..1000);
                self.write(db, &[(key, WOp::Merge(x))], None).map(drop)?
            }
            4600..5500 => self.batch(db)?,
            5500..6700 => self.get(db, key).map(drop)?,
            6700..7400 => self.multi_get(db)?,
            7400..8600 => self.scan(db)?,
            8600..9990 => self.snapshot_reads(db)?,
            9990..9994 => self.durability_point(db, "flush", Db::flush)?,
            9994..9996 => self.compact(db)?,
            9996..9998 => self.checkpoint(db)?,
            _ => self.durability_point(db, "sync_wal", Db::sync_wal)?,
        }
        bump(&self.sh.stats.ops, 1);
        Ok(())
    }

    /// A synced put of a random key, issued even while the read-only flag is up: the
    /// coordinator's check that writes work again after a resume.
    pub fn probe(&mut self, db: &Db) -> Result<Outcome, Failure> {
        let key = self.rng.u64(0..self.sh.state.keys());
        let v = self.random_value();
        self.write_inner(db, &[(key, WOp::Put(v))], Some(true), true)
    }

    fn random_value(&mut self) -> Value {
        let kind = if self.rng.u32(0..10) < 7 { Kind::Short } else { Kind::Long };
        Value { kind, n: self.rng.u64(..) }
    }

    fn random_op(&mut self) -> WOp {
        match self.rng.u32(0..10) {
            0..6 => WOp::Put(self.random_value()),
            6..8 => WOp::Delete,
            _ => WOp::Merge(self.rng.u64(1..1000)),
        }
    }

    fn put(&mut self, db: &Db, key: u64) -> Result<Outcome, Failure> {
        let v = self.random_value();
        self.write(db, &[(key, WOp::Put(v))], None)
    }

    fn batch(&mut self, db: &Db) -> Result<(), Failure> {
        let n = self.rng.usize(2..=5);
        let mut keys: Vec<u64> = (0..n).map(|_| self.rng.u64(0..self.sh.state.keys())).collect();
        keys.sort_unstable();
        keys.dedup();
        let ops: Vec<(u64, WOp)> = keys.into_iter().map(|k| (k, self.random_op())).collect();
        self.write(db, &ops, None).map(drop)
    }

    /// A write with a random sync setting, skipped while the database is read-only.
    fn write(&mut self, db: &Db, ops: &[(u64, WOp)], sync: Option<bool>) -> Result<Outcome, Failure> {
        self.write_inner(db, ops, sync, false)
    }

    fn write_inner(
        &mut self,
        db: &Db,
        ops: &[(u64, WOp)],
        sync: Option<bool>,
        force: bool,
    ) -> Result<Outcome, Failure> {
        if !force && self.sh.read_only.load(Ordering::Acquire) {
            bump(&self.sh.stats.writes_skipped, 1);
            return Ok(Outcome::Skipped);
        }
        let keys: Vec<u64> = ops.iter().map(|&(k, _)| k).collect();
        let mut locked = self.sh.state.lock(&keys);
        for &k in &keys {
            if locked.slot(k).alt.is_some() && !self.pin(db, &mut locked, k)? {
                bump(&self.sh.stats.writes_skipped, 1);
                return Ok(Outcome::Skipped);
            }
        }
        let sync = sync.unwrap_or_else(|| self.rng.u32(0..100) < self.sh.cfg.sync_percent);
        let news: Vec<Value> = ops.iter().map(|&(k, op)| op.apply(locked.slot(k).cur)).collect();
        self.next_tag += 1;
        let tag = (self.id + 1) << 48 | self.next_tag;
        let issue = self.sh.state.tick();
        for &(k, op) in ops {
            let e = Event { op, tag, multi: ops.len() > 1, sync, issue, ack: None, failed: false };
            locked.slot(k).hist.events.push(e);
        }
        let result = issue_write(db, ops, sync);
        let ack = self.sh.state.tick();
        for (&(k, _), &new) in ops.iter().zip(&news) {
            let slot = locked.slot(k);
            let e = slot.hist.events.last_mut().expect("just pushed");
            match &result {
                Ok(()) => {
                    e.ack = Some(ack);
                    slot.cur = new;
                }
                Err(_) => {
                    e.failed = true;
                    slot.alt = (new != slot.cur).then_some(Alt { new, tag });
                }
            }
        }
        drop(locked);
        match result {
            Ok(()) => {
                if sync {
                    self.sh.state.durable(issue);
                }
                bump(&self.sh.stats.writes_acked, ops.len() as u64);
                Ok(Outcome::Acked)
            }
            Err(e) => {
                self.expected(&e, if ops.len() > 1 { "batch" } else { "write" })?;
                bump(&self.sh.stats.writes_failed, ops.len() as u64);
                self.sh.read_only.store(true, Ordering::Release);
                Ok(Outcome::Failed)
            }
        }
    }

    /// Reads `key` to pin its pending failed write; false if the read failed.
    fn pin(&mut self, db: &Db, locked: &mut Locked<'_>, key: u64) -> Result<bool, Failure> {
        match db.get(key_bytes(key)) {
            Ok(v) => {
                locked
                    .check_live(key, v.as_deref())
                    .map_err(|m| mismatch("get (pinning a failed write)", key, &m, v.as_deref()))?;
                bump(&self.sh.stats.reads_verified, 1);
                Ok(true)
            }
            Err(e) => self.expected_read(&e, "get").map(|()| false),
        }
    }

    /// Counts an expected error; an unexpected one is a failure.
    fn expected(&self, e: &strata::Error, what: &str) -> Result<(), Failure> {
        let class = classify(e).map_err(|why| Failure::Engine(format!("{what}: {why}")))?;
        self.sh.errors.add(what, &class);
        Ok(())
    }

    /// As `expected`, and an injected read fault must have been armed recently.
    fn expected_read(&self, e: &strata::Error, what: &str) -> Result<(), Failure> {
        self.expected(e, what)?;
        bump(&self.sh.stats.read_errors, 1);
        let recent = self
            .sh
            .last_read_fault
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|t| t.elapsed() < STALE_READ_ERROR);
        if e.to_string().contains("injected Read fault") && !recent {
            return Err(Failure::Engine(format!(
                "{what}: a read error from an injected read fault more than {STALE_READ_ERROR:?} after the last \
                 read fault was armed or fired (the engine kept a failed read?): {e}"
            )));
        }
        Ok(())
    }

    fn get(&mut self, db: &Db, key: u64) -> Result<bool, Failure> {
        let mut locked = self.sh.state.lock(&[key]);
        self.pin(db, &mut locked, key)
    }

    fn multi_get(&mut self, db: &Db) -> Result<(), Failure> {
        let n = self.rng.usize(1..=8);
        let keys: Vec<u64> = (0..n).map(|_| self.rng.u64(0..self.sh.state.keys())).collect();
        let encoded: Vec<Vec<u8>> = keys.iter().map(|&k| key_bytes(k)).collect();
        let refs: Vec<&[u8]> = encoded.iter().map(Vec::as_slice).collect();
        let mut locked = self.sh.state.lock(&keys);
        for (&k, got) in keys.iter().zip(db.multi_get(&refs)) {
            match got {
                Ok(v) => {
                    locked
                        .check_live(k, v.as_deref())
                        .map_err(|m| mismatch("multi_get", k, &m, v.as_deref()))?;
                    bump(&self.sh.stats.reads_verified, 1);
                }
                Err(e) => self.expected_read(&e, "multi_get")?,
            }
        }
        Ok(())
    }

    fn random_range(&mut self, max_len: u64) -> Range {
        let keys = self.sh.state.keys();
        let lo = self.rng.u64(0..keys);
        let hi = (lo + self.rng.u64(1..=max_len)).min(keys);
        Range { lo, hi, bounded: self.rng.bool(), reverse: self.rng.bool() }
    }

    fn scan(&mut self, db: &Db) -> Result<(), Failure> {
        let r = self.random_range(100);
        let mut locked = self.sh.state.lock_range(r.lo, r.hi);
        let got = match read_range(db, ReadOptions::new(), r) {
            Ok(got) => got,
            Err(e) => return self.expected_read(&e, "scan"),
        };
        let found = check_shape("scan", r, &got)?;
        for k in r.lo..r.hi {
            let v = found.get(&k).map(Vec::as_slice);
            locked.check_live(k, v).map_err(|m| mismatch("scan", k, &m, v))?;
        }
        bump(&self.sh.stats.scans, 1);
        bump(&self.sh.stats.reads_verified, got.len() as u64);
        Ok(())
    }

    /// Takes a snapshot of a range with no pending failed write, writes to the range, and
    /// checks reads at the snapshot still see the values it was taken with.
    fn snapshot_reads(&mut self, db: &Db) -> Result<(), Failure> {
        let r = self.random_range(50);
        let (snap, at) = {
            let mut locked = self.sh.state.lock_range(r.lo, r.hi);
            if (r.lo..r.hi).any(|k| locked.slot(k).alt.is_some()) {
                return Ok(());
            }
            let at: Vec<Value> = (r.lo..r.hi).map(|k| locked.slot(k).cur).collect();
            (db.snapshot(), at)
        };
        for _ in 0..self.rng.u32(1..=3) {
            let (k, op) = (self.rng.u64(r.lo..r.hi), self.random_op());
            self.write(db, &[(k, op)], None)?;
        }
        let ro = ReadOptions { snapshot: Some(snap), ..ReadOptions::new() };
        let expect = |k: u64| at[(k - r.lo) as usize];
        for _ in 0..2 {
            let k = self.rng.u64(r.lo..r.hi);
            match db.get_opt(&ro, &key_bytes(k)) {
                Ok(v) if expect(k).bytes(k) == v => bump(&self.sh.stats.reads_verified, 1),
                Ok(v) => {
                    return Err(mismatch(
                        "get at snapshot",
                        k,
                        &format!("expected {}", expect(k)),
                        v.as_deref(),
                    ))
                }
                Err(e) => self.expected_read(&e, "get at snapshot")?,
            }
        }
        let got = match read_range(db, ro, r) {
            Ok(got) => got,
            Err(e) => return self.expected_read(&e, "scan at snapshot"),
        };
        let found = check_shape("scan at snapshot", r, &got)?;
        for k in r.lo..r.hi {
            let v = found.get(&k).map(Vec::as_slice);
            if expect(k).bytes(k).as_deref() != v {
                return Err(mismatch("scan at snapshot", k, &format!("expected {}", expect(k)), v));
            }
        }
        bump(&self.sh.stats.snapshots, 1);
        bump(&self.sh.stats.reads_verified, got.len() as u64);
        Ok(())
    }

    /// `flush` or `sync_wal`: once it returns, every write acknowledged before it was issued
    /// survives a power loss.
    fn durability_point(
        &mut self,
        db: &Db,
        what: &str,
        f: fn(&Db) -> strata::Result<()>,
    ) -> Result<(), Failure> {
        if self.sh.read_only.load(Ordering::Acquire) {
            return Ok(());
        }
        let issue = self.sh.state.tick();
        match f(db) {
            Ok(()) => {
                self.sh.state.durable(issue);
                bump(if what == "flush" { &self.sh.stats.flushes } else { &self.sh.stats.sync_wals }, 1);
                Ok(())
            }
            Err(e) => {
                self.expected(&e, what)?;
                self.sh.read_only.store(true, Ordering::Release);
                Ok(())
            }
        }
    }

    fn compact(&mut self, db: &Db) -> Result<(), Failure> {
        if self.sh.read_only.load(Ordering::Acquire) {
            return Ok(());
        }
        let r = self.random_range(2000);
        let issue = self.sh.state.tick();
        let result = if self.rng.u32(0..4) == 0 {
            db.compact_range(None, None)
        } else {
            db.compact_range(Some(&key_bytes(r.lo)), Some(&key_bytes(r.hi)))
        };
        match result {
            Ok(()) => {
                // compact_range flushes first.
                self.sh.state.durable(issue);
                bump(&self.sh.stats.compactions, 1);
                Ok(())
            }
            Err(e) => {
                self.expected(&e, "compact_range")?;
                self.sh.read_only.store(true, Ordering::Release);
                Ok(())
            }
        }
    }
}

impl Worker<'_> {
    /// Checkpoints with a range locked (no write to it in flight, no failed write unpinned), so
    /// the copy must hold the range's live values; reads the range back from the copy (on the
    /// `MemFs`, without faults), then deletes it. A failed checkpoint must leave no target
    /// (docs/durability.md, "Checkpoints").
    fn checkpoint(&mut self, db: &Db) -> Result<(), Failure> {
        if self.sh.read_only.load(Ordering::Acquire) {
            return Ok(());
        }
        let r = Range { bounded: true, ..self.random_range(200) };
        self.next_checkpoint += 1;
        let target = PathBuf::from(format!("/checkpoints/t{}-{}", self.id, self.next_checkpoint));
        let issue = self.sh.state.tick();
        let (result, want) = {
            let mut locked = self.sh.state.lock_range(r.lo, r.hi);
            if (r.lo..r.hi).any(|k| locked.slot(k).alt.is_some()) {
                return Ok(());
            }
            let want: Vec<Value> = (r.lo..r.hi).map(|k| locked.slot(k).cur).collect();
            (db.checkpoint(&target), want)
        };
        let mem = self.sh.current_mem();
        let outcome = match result {
            Ok(()) => {
                // It starts with a flush: everything acknowledged before it is durable.
                self.sh.state.durable(issue);
                self.read_checkpoint(&mem, &target, r, &want)
            }
            Err(e) => {
                self.expected(&e, "checkpoint")?;
                if matches!(e, strata::Error::Background { .. }) {
                    self.sh.read_only.store(true, Ordering::Release);
                }
                match mem.is_dir(&target) {
                    Ok(None) => Ok(()),
                    _ => Err(Failure::Mismatch(format!(
                        "checkpoint failed ({e}) but left {}",
                        target.display()
                    ))),
                }
            }
        };
        for dir in [target.clone(), PathBuf::from(format!("{}.tmp", target.display()))] {
            for name in mem.list_dir(&dir).unwrap_or_default() {
                let _ = mem.remove_file(&dir.join(name));
            }
        }
        outcome
    }

    fn read_checkpoint(&self, mem: &MemFs, target: &Path, r: Range, want: &[Value]) -> Result<(), Failure> {
        let copy = Db::open_read_only(target, super::recovered::image_options(mem.clone()))
            .map_err(|e| Failure::Engine(format!("opening checkpoint {}: {e}", target.display())))?;
        let got = read_range(&copy, ReadOptions::new(), r)
            .map_err(|e| Failure::Engine(format!("reading checkpoint {}: {e}", target.display())))?;
        let found = check_shape("checkpoint", r, &got)?;
        for (k, w) in (r.lo..r.hi).zip(want) {
            let v = found.get(&k).map(Vec::as_slice);
            if w.bytes(k).as_deref() != v {
                return Err(mismatch("checkpoint", k, &format!("expected {w}"), v));
            }
        }
        bump(&self.sh.stats.checkpoints, 1);
        bump(&self.sh.stats.reads_verified, got.len() as u64);
        Ok(())
    }
}

/// The engine call: one op through its own API, several through one `WriteBatch`.
fn issue_write(db: &Db, ops: &[(u64, WOp)], sync: bool) -> strata::Result<()> {
    let w = WriteOptions { sync, disable_wal: false };
    if let [(k, op)] = ops {
        let key = key_bytes(*k);
        return match op {
            WOp::Put(v) => db.put_opt(&w, &key, &v.bytes(*k).expect("put of a present value")),
            WOp::Delete => db.delete_opt(&w, &key),
            WOp::Merge(x) => db.merge_opt(&w, &key, &x.to_le_bytes()),
        };
    }
    let mut b = WriteBatch::new();
    for &(k, op) in ops {
        match op {
            WOp::Put(v) => b.put(key_bytes(k), v.bytes(k).expect("put of a present value")),
            WOp::Delete => b.delete(key_bytes(k)),
            WOp::Merge(x) => b.merge(key_bytes(k), x.to_le_bytes()),
        };
    }
    db.write_opt(&w, b)
}

fn mismatch(what: &str, key: u64, expected: &str, actual: Option<&[u8]>) -> Failure {
    Failure::Mismatch(format!("{what}: key k{key:08}: {expected}, actual {}", describe(actual)))
}

/// Reads `r` through an iterator: with bounds set, whatever it yields; otherwise from a seek
/// until the range's edge. Capped, so an iterator ignoring its bounds shows up as extra keys.
fn read_range(db: &Db, mut ro: ReadOptions, r: Range) -> strata::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let (lo, hi) = (key_bytes(r.lo), key_bytes(r.hi));
    if r.bounded {
        (ro.lower_bound, ro.upper_bound) = (Some(lo.clone()), Some(hi.clone()));
    }
    let mut it = db.cursor(&ro)?;
    match (r.bounded, r.reverse) {
        (false, false) => it.seek(&lo),
        (false, true) => it.seek_for_prev(&key_bytes(r.hi - 1)),
        (true, false) => it.seek_to_first(),
        (true, true) => it.seek_to_last(),
    }
    let mut out = Vec::new();
    while it.valid() && out.len() <= 200 {
        let k = it.key();
        if !r.bounded && (k >= hi.as_slice() || k < lo.as_slice()) {
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

/// Every key returned is in range, in strictly increasing (or decreasing) order; returns them
/// by key index.
fn check_shape(what: &str, r: Range, got: &[(Vec<u8>, Vec<u8>)]) -> Result<BTreeMap<u64, Vec<u8>>, Failure> {
    let mut out = BTreeMap::new();
    let mut last: Option<u64> = None;
    for (k, v) in got {
        let idx = parse_key(k).filter(|i| (r.lo..r.hi).contains(i));
        let ordered = |i: u64| last.is_none_or(|l| if r.reverse { i < l } else { i > l });
        match idx {
            Some(i) if ordered(i) => {
                out.insert(i, v.clone());
                last = Some(i);
            }
            _ => {
                return Err(Failure::Mismatch(format!(
                    "{what} {r:?}: key {:?} out of range or out of order",
                    String::from_utf8_lossy(k)
                )))
            }
        }
    }
    Ok(out)
}
