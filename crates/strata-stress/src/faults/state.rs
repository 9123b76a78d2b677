//! The expected state of the `faults` command, in memory: per key, the value the running
//! database must show (the live view) and the history of writes since the last reopen (the
//! recovery view), under striped locks like the `run` oracle's (`crate::oracle`).
//!
//! Live view: `cur` is exact, except after a failed write, which the running database may or may
//! not show (`alt`); the first read of the key pins the answer, and all keys of one failed batch
//! must give the same one (`pins`).
//!
//! Recovery view: every write is an [`Event`] with the ticks of a global logical clock taken just
//! before it was issued and just after it returned, whether it was acknowledged, failed (may or
//! may not be recovered, never in part) or is still in flight. A crash image or a reopen is
//! judged against these (`judge`). Leading events every later image must hold are folded into
//! `base`, a small set of candidate values (more than one when a failed write was folded).
//!
//! This module only records; it must not call the engine or decide what is a mismatch.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::model::Value;

/// Keys per lock stripe (as `crate::oracle::STRIPE_KEYS`).
pub const STRIPE_KEYS: u64 = 8;

/// Candidate values `base` may hold before folding stops at a failed write.
const BASE_CAP: usize = 16;

/// One key write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WOp {
    /// Put of a present value.
    Put(Value),
    /// Delete.
    Delete,
    /// `uint64add` merge of an operand.
    Merge(u64),
}

impl WOp {
    /// The value this write leaves on top of `old`.
    pub fn apply(self, old: Value) -> Value {
        match self {
            WOp::Put(v) => v,
            WOp::Delete => Value::ABSENT,
            WOp::Merge(x) => old.merged(x),
        }
    }
}

/// One write to one key, as the recovery view records it.
#[derive(Debug, Clone, Copy)]
pub struct Event {
    /// What it did to this key.
    pub op: WOp,
    /// Shared by every key of one write call.
    pub tag: u64,
    /// Part of a batch of several keys (whose keys must be recovered all or none).
    pub multi: bool,
    /// Written with `sync = true`.
    pub sync: bool,
    /// Clock tick taken just before the engine call.
    pub issue: u64,
    /// Clock tick taken just after it returned `Ok`; `None` while in flight or after a failure.
    pub ack: Option<u64>,
    /// The engine call returned an error: the write may or may not be recovered.
    pub failed: bool,
}

/// The recovery view of one key.
#[derive(Debug, Clone)]
pub struct History {
    /// Candidate values before `events` (one, except after folding a failed write).
    pub base: Vec<Value>,
    /// Writes since, in the key's order (its stripe lock orders them).
    pub events: Vec<Event>,
}

/// A failed write the running database may or may not show for this key.
#[derive(Debug, Clone, Copy)]
pub struct Alt {
    /// The value if the write was applied.
    pub new: Value,
    /// The failed write's tag.
    pub tag: u64,
}

/// Everything known about one key.
#[derive(Debug, Clone)]
pub struct KeySlot {
    /// What the running database shows (if `alt` is set: unless it shows `alt.new`).
    pub cur: Value,
    /// An unpinned failed write.
    pub alt: Option<Alt>,
    /// The recovery view.
    pub hist: History,
}

impl KeySlot {
    fn new() -> Self {
        KeySlot {
            cur: Value::ABSENT,
            alt: None,
            hist: History { base: vec![Value::ABSENT], events: Vec::new() },
        }
    }
}

/// The expected state: stripes, the logical clock and the durability floor.
pub struct State {
    keys: u64,
    stripes: Vec<Mutex<Vec<KeySlot>>>,
    clock: AtomicU64,
    /// The largest issue tick of a durability point that returned: a write acknowledged with
    /// `sync = true`, or a successful `flush`, `sync_wal` or `compact_range`. Every write
    /// acknowledged before that tick survives a power loss.
    floor: AtomicU64,
    /// Failed batches whose live outcome a read has pinned: tag -> applied.
    pins: Mutex<HashMap<u64, bool>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A worker that panicked while holding a stripe ends the run anyway; each slot update is a
    // plain assignment, so the data is still consistent.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl State {
    /// All `keys` absent.
    pub fn new(keys: u64) -> Self {
        let stripes = (0..keys.div_ceil(STRIPE_KEYS))
            .map(|s| {
                let n = (keys - s * STRIPE_KEYS).min(STRIPE_KEYS) as usize;
                Mutex::new(vec![KeySlot::new(); n])
            })
            .collect();
        State { keys, stripes, clock: AtomicU64::new(1), floor: AtomicU64::new(0), pins: Mutex::default() }
    }

    /// Size of the key space.
    pub fn keys(&self) -> u64 {
        self.keys
    }

    /// The next clock tick.
    pub fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst)
    }

    /// Records a durability point issued at `issue` that has returned.
    pub fn durable(&self, issue: u64) {
        self.floor.fetch_max(issue, Ordering::SeqCst);
    }

    /// The current durability floor.
    pub fn floor(&self) -> u64 {
        self.floor.load(Ordering::SeqCst)
    }

    /// Locks the stripes of `keys` in ascending order.
    pub fn lock(&self, keys: &[u64]) -> Locked<'_> {
        let mut ids: Vec<u64> = keys.iter().map(|k| k / STRIPE_KEYS).collect();
        ids.sort_unstable();
        ids.dedup();
        self.lock_stripes(ids)
    }

    /// Locks every stripe covering keys `lo..hi`.
    pub fn lock_range(&self, lo: u64, hi: u64) -> Locked<'_> {
        let hi = hi.max(lo + 1).min(self.keys);
        self.lock_stripes((lo / STRIPE_KEYS..=(hi - 1) / STRIPE_KEYS).collect())
    }

    fn lock_stripes(&self, ids: Vec<u64>) -> Locked<'_> {
        let guards = ids.into_iter().map(|id| (id, lock(&self.stripes[id as usize]))).collect();
        Locked { state: self, guards }
    }

    /// Every key's history with the events issued after tick `upto` left out: what a crash image
    /// taken before `upto` can hold. Takes each stripe lock in turn.
    pub fn histories(&self, upto: u64) -> Vec<History> {
        let mut out = Vec::with_capacity(self.keys as usize);
        for stripe in &self.stripes {
            for slot in lock(stripe).iter() {
                let mut h = slot.hist.clone();
                h.events.retain(|e| e.issue <= upto);
                out.push(h);
            }
        }
        out
    }

    /// Folds the leading events that every later image must hold (acknowledged before `floor`)
    /// or may hold either way (failed) into each key's base. Returns the largest number of events
    /// left on one key, so the caller can tell when histories grow without bound.
    pub fn fold(&self, floor: u64) -> usize {
        let mut longest = 0;
        for stripe in &self.stripes {
            for slot in lock(stripe).iter_mut() {
                fold_history(&mut slot.hist, floor);
                longest = longest.max(slot.hist.events.len());
            }
        }
        longest
    }

    /// After a reopen: every key holds exactly `values[k]` live and in the recovery view, and no
    /// failed write is pending. No worker may run.
    pub fn rebase(&self, values: &[Value]) {
        for (s, stripe) in self.stripes.iter().enumerate() {
            for (i, slot) in lock(stripe).iter_mut().enumerate() {
                let v = values[s * STRIPE_KEYS as usize + i];
                *slot = KeySlot { cur: v, alt: None, hist: History { base: vec![v], events: Vec::new() } };
            }
        }
        lock(&self.pins).clear();
    }
}

fn fold_history(h: &mut History, floor: u64) {
    let mut n = 0;
    for e in &h.events {
        if e.failed {
            let mut next = h.base.clone();
            for v in &h.base {
                push_unique(&mut next, e.op.apply(*v));
            }
            if next.len() > BASE_CAP {
                break;
            }
            h.base = next;
        } else if e.ack.is_some_and(|a| a < floor) {
            let mut next = Vec::with_capacity(h.base.len());
            for v in &h.base {
                push_unique(&mut next, e.op.apply(*v));
            }
            h.base = next;
        } else {
            break;
        }
        n += 1;
    }
    h.events.drain(..n);
}

/// Adds `v` to a small set kept as a vector.
pub fn push_unique(set: &mut Vec<Value>, v: Value) {
    if !set.contains(&v) {
        set.push(v);
    }
}

/// Held stripe locks: the only way to read or change slots while workers run.
pub struct Locked<'a> {
    state: &'a State,
    guards: Vec<(u64, MutexGuard<'a, Vec<KeySlot>>)>,
}

impl Locked<'_> {
    /// The slot of `key`, which must be covered by the held locks.
    pub fn slot(&mut self, key: u64) -> &mut KeySlot {
        let stripe = key / STRIPE_KEYS;
        let g = self.guards.binary_search_by_key(&stripe, |(id, _)| *id).expect("key's stripe is not locked");
        &mut self.guards[g].1[(key % STRIPE_KEYS) as usize]
    }

    /// Checks what the running database returned for `key` against the live view, pinning an
    /// unpinned failed write. `Err` holds the mismatch text.
    pub fn check_live(&mut self, key: u64, actual: Option<&[u8]>) -> Result<(), String> {
        let pins = self.state;
        let slot = self.slot(key);
        let old_ok = slot.cur.bytes(key).as_deref() == actual;
        let Some(alt) = slot.alt else {
            return if old_ok { Ok(()) } else { Err(format!("expected {}", slot.cur)) };
        };
        let new_ok = alt.new.bytes(key).as_deref() == actual;
        let mut pins = lock(&pins.pins);
        let pinned = pins.get(&alt.tag).copied();
        let verdict = match (old_ok, new_ok) {
            (true, true) => None,
            (true, false) if pinned != Some(true) => Some(false),
            (false, true) if pinned != Some(false) => Some(true),
            _ => {
                return Err(format!(
                    "expected {} (failed write {:#x} not applied) or {} (applied){}",
                    slot.cur,
                    alt.tag,
                    alt.new,
                    pinned.map_or(String::new(), |p| format!(
                        "; another key of that batch showed it {}",
                        if p { "applied" } else { "not applied" }
                    ))
                ))
            }
        };
        if let Some(applied) = verdict {
            pins.insert(alt.tag, applied);
            if applied {
                slot.cur = alt.new;
            }
        }
        slot.alt = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Kind;

    fn short(n: u64) -> Value {
        Value { kind: Kind::Short, n }
    }

    fn ev(op: WOp, ack: Option<u64>, failed: bool) -> Event {
        Event { op, tag: 1, multi: false, sync: false, issue: 0, ack, failed }
    }

    #[test]
    fn fold_keeps_unfolded_events_and_forks_on_failed_writes() {
        let mut h = History {
            base: vec![Value::ABSENT],
            events: vec![
                ev(WOp::Put(short(5)), Some(3), false),
                ev(WOp::Merge(2), None, true),
                ev(WOp::Merge(1), Some(8), false),
                ev(WOp::Put(short(9)), Some(20), false),
            ],
        };
        fold_history(&mut h, 10);
        assert_eq!(h.base, vec![short(6), short(8)]);
        assert_eq!(h.events.len(), 1, "the write acknowledged after the floor stays");
    }

    #[test]
    fn a_failed_batch_pins_one_outcome_for_all_its_keys() {
        let st = State::new(16);
        {
            let mut l = st.lock(&[1, 2]);
            for k in [1, 2] {
                l.slot(k).alt = Some(Alt { new: short(7), tag: 42 });
            }
            assert!(l.check_live(1, short(7).bytes(1).as_deref()).is_ok());
            assert!(l.check_live(2, None).is_err(), "key 1 showed the batch applied");
        }
        let mut l = st.lock(&[1]);
        assert_eq!(l.slot(1).cur, short(7));
        assert!(l.check_live(1, None).is_err(), "pinned: no flip back");
    }
}
