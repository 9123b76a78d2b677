//! Whole-database verification against the oracle, used by `--verify-only`, at the start of a run
//! that finds writes left in flight by a crash, and at the end of every run.
//!
//! Rules: a key with no write in flight must hold exactly its expected value (sync or not, a
//! process kill loses nothing acknowledged: the WAL `write(2)` happened before the ack). A key with
//! a write in flight may hold the old or the new value, and all keys of one in-flight batch must
//! make the same choice (batches are atomic). A forward and a backward full scan must agree with
//! the point reads. Afterwards each in-flight slot is resolved to what the database holds, so the
//! next run starts from an exact oracle.
//!
//! Keys written by a `--disable-wal` run (listed in the unlogged history, see `history`) are the
//! exception: such writes are lost on a crash unless a flush completed after them
//! (docs/durability.md), so the key may hold any value it took during that run, and is resolved
//! to the one found. They are counted (`unlogged_reverted`), never reported as lost.
//!
//! With column families every family is read and scanned, a key's slot is its family's slot
//! (`families::Layout`), and batches are checked whole across families. If a crash hit the
//! drop-and-recreate of the last family, that family must be empty when the drop was
//! acknowledged (oracle phase `Dropped`) or when the MANIFEST no longer listed it at the
//! reopen; otherwise (phase `Dropping`, still listed) it must hold its acknowledged data, as if
//! no drop had been issued. Either way the oracle is then made exact (slots reset if the drop
//! happened) and the phase set back to `Live`.
//!
//! This module must not write to the database.

use std::collections::BTreeMap;

use strata::{Db, ReadOptions};

use crate::failure::Failure;
use crate::families::{self, Families, Layout};
use crate::model::{describe, key_bytes, parse_key, Value};
use crate::oracle::{DropPhase, Oracle, Slot};

/// What a verification saw.
#[derive(Debug, Clone, Copy, Default)]
pub struct Report {
    /// Keys checked (the whole key space).
    pub keys: u64,
    /// Keys present in the database.
    pub present: u64,
    /// Keys that had a write in flight.
    pub pending: u64,
    /// In-flight writes found applied (the rest were found not applied, or were no-ops).
    pub pending_applied: u64,
    /// Acknowledged writes recorded by the oracle over its whole life.
    pub acked_writes: u64,
    /// Keys written by an unlogged (`disable_wal`) run since the last verification.
    pub unlogged_keys: u64,
    /// Of those, keys found at an earlier value than their last acknowledged one.
    pub unlogged_reverted: u64,
    /// Column families, default included.
    pub families: u64,
    /// 1 when a drop of the last family was in progress (the crash hit it).
    pub drop_in_flight: u64,
    /// 1 when the family was found dropped (its slots were reset).
    pub drop_applied: u64,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "verify: keys={} present={} pending={} pending_applied={} acked_writes={} unlogged_keys={} \
             unlogged_reverted={} mismatches=0",
            self.keys,
            self.present,
            self.pending,
            self.pending_applied,
            self.acked_writes,
            self.unlogged_keys,
            self.unlogged_reverted
        )?;
        if self.families > 1 {
            write!(
                f,
                " families={} drop_in_flight={} drop_applied={}",
                self.families, self.drop_in_flight, self.drop_applied
            )?;
        }
        Ok(())
    }
}

/// Which values an in-flight key was found to hold.
#[derive(Debug, Clone, Copy)]
struct Allowed {
    old: bool,
    new: bool,
}

/// Checks the whole database against the oracle and resolves in-flight slots. No worker may run.
/// `unlogged` holds, per key written by a `--disable-wal` run, every value it took there;
/// `dropping_listed` says whether the MANIFEST listed the dropping family before the open.
pub fn verify_db(
    db: &Db,
    fams: &Families,
    oracle: &Oracle,
    unlogged: &Unlogged,
    dropping_listed: bool,
) -> Result<Report, Failure> {
    let layout = fams.layout;
    let phase = oracle.drop_phase();
    let reset = layout
        .dropping()
        .filter(|_| phase == DropPhase::Dropped || (phase == DropPhase::Dropping && !dropping_listed));
    let mut slots = oracle.all_slots();
    if let Some(f) = reset {
        let (lo, hi) = layout.range(f);
        for s in &mut slots[lo as usize..hi as usize] {
            *s = Slot { cur: Value::ABSENT, pending: None, acked: s.acked };
        }
    }
    let found = point_reads(db, fams)?;
    for f in 0..layout.families {
        check_scan(db, fams, f, &found, false)?;
        check_scan(db, fams, f, &found, true)?;
    }
    let unlogged_found = classify_unlogged(layout, &slots, &found, unlogged)?;
    let allowed = classify(layout, &slots, &found, unlogged)?;
    check_batches(layout, &slots, &allowed)?;
    if let Some(f) = reset {
        let (lo, hi) = layout.range(f);
        oracle.lock_range(lo, hi).reset(lo, hi)?;
    }
    let pending_applied = resolve(oracle, &slots, &allowed, &unlogged_found)?;
    if phase != DropPhase::Live {
        oracle.set_drop_phase(DropPhase::Live)?;
        oracle.sync()?;
    }
    Ok(Report {
        keys: slots.len() as u64,
        present: found.iter().filter(|v| v.is_some()).count() as u64,
        pending: allowed.len() as u64,
        pending_applied,
        acked_writes: slots.iter().map(|s| u64::from(s.acked)).sum(),
        unlogged_keys: unlogged.len() as u64,
        unlogged_reverted: unlogged_found.iter().filter(|&(&k, v)| *v != slots[k as usize].cur).count()
            as u64,
        families: layout.families as u64,
        drop_in_flight: u64::from(phase != DropPhase::Live),
        drop_applied: u64::from(reset.is_some()),
    })
}

/// Per key, every value it took during an unlogged run (`history::load`).
pub type Unlogged = BTreeMap<u64, Vec<Value>>;

/// For each key of an unlogged run: the value it was found at, which must be one it took.
fn classify_unlogged(
    layout: Layout,
    slots: &[Slot],
    found: &[Option<Vec<u8>>],
    unlogged: &Unlogged,
) -> Result<BTreeMap<u64, Value>, Failure> {
    let mut out = BTreeMap::new();
    for (&k, values) in unlogged {
        let (slot, actual) = match (slots.get(k as usize), found.get(k as usize)) {
            (Some(s), Some(a)) => (s, a.as_deref()),
            _ => return Err(Failure::Tool(format!("unlogged history names key {k}, beyond --keys"))),
        };
        let candidates =
            std::iter::once(slot.cur).chain(slot.pending.map(|p| p.new)).chain(values.iter().copied());
        let Some(v) = candidates.into_iter().find(|v| v.bytes(k).as_deref() == actual) else {
            let took: Vec<String> = values.iter().map(Value::to_string).collect();
            return Err(Failure::Mismatch(format!(
                "key {} (written with disable_wal since the last verification): expected {} or a value it \
                 took meanwhile ({}) actual {}",
                layout.describe(k),
                slot.cur,
                took.join("; "),
                describe(actual)
            )));
        };
        out.insert(k, v);
    }
    Ok(out)
}

fn point_reads(db: &Db, fams: &Families) -> Result<Vec<Option<Vec<u8>>>, Failure> {
    let r = ReadOptions::new();
    let layout = fams.layout;
    let handles: Vec<_> = (0..layout.families).map(|f| fams.handle(f)).collect();
    (0..layout.total())
        .map(|g| {
            let (f, k) = layout.split(g);
            families::get(db, &handles[f], &r, &key_bytes(k)).map_err(Failure::from)
        })
        .collect()
}

/// A full scan of family `f` in one direction must return exactly the keys the point reads
/// found there, in order.
fn check_scan(
    db: &Db,
    fams: &Families,
    f: usize,
    found: &[Option<Vec<u8>>],
    reverse: bool,
) -> Result<(), Failure> {
    let layout = fams.layout;
    let dir = if reverse { "backward" } else { "forward" };
    let mut it = families::iter(db, &fams.handle(f), &ReadOptions::new())?;
    let mut seen = 0u64;
    let mut last: Option<u64> = None;
    if reverse {
        it.seek_to_last()
    } else {
        it.seek_to_first()
    }
    while it.valid() {
        let k = parse_key(it.key()).filter(|&k| k < layout.keys).ok_or_else(|| {
            Failure::Mismatch(format!(
                "{dir} scan of {}: unexpected key {:?}",
                families::name(f),
                String::from_utf8_lossy(it.key())
            ))
        })?;
        let g = layout.slot(f, k) as usize;
        let ordered = last.is_none_or(|l| if reverse { k < l } else { k > l });
        if !ordered || found[g].as_deref() != Some(it.value()) {
            return Err(Failure::Mismatch(format!(
                "{dir} scan: key {} expected (point read) {} actual {}{}",
                layout.describe(g as u64),
                describe(found[g].as_deref()),
                describe(Some(it.value())),
                if ordered { "" } else { " (out of order)" }
            )));
        }
        seen += 1;
        last = Some(k);
        if reverse {
            it.prev()
        } else {
            it.next()
        }
    }
    it.status()?;
    let (lo, hi) = layout.range(f);
    let expected = found[lo as usize..hi as usize].iter().filter(|v| v.is_some()).count() as u64;
    if seen != expected {
        return Err(Failure::Mismatch(format!(
            "{dir} scan of {} returned {seen} keys, point reads found {expected}",
            families::name(f)
        )));
    }
    Ok(())
}

/// Checks every key but those of an unlogged run; returns what each in-flight key was found to
/// hold.
fn classify(
    layout: Layout,
    slots: &[Slot],
    found: &[Option<Vec<u8>>],
    unlogged: &Unlogged,
) -> Result<BTreeMap<u64, Allowed>, Failure> {
    let mut allowed = BTreeMap::new();
    for (k, (slot, actual)) in slots.iter().zip(found).enumerate() {
        let k = k as u64;
        if unlogged.contains_key(&k) {
            continue;
        }
        let actual = actual.as_deref();
        let old = slot.cur.bytes(k);
        match slot.pending {
            None if old.as_deref() == actual => {}
            None => {
                return Err(Failure::Mismatch(format!(
                    "key {} (acknowledged, nothing in flight): expected {} actual {}",
                    layout.describe(k),
                    slot.cur,
                    describe(actual)
                )))
            }
            Some(p) => {
                let a = Allowed { old: old.as_deref() == actual, new: p.new.bytes(k).as_deref() == actual };
                if !a.old && !a.new {
                    return Err(Failure::Mismatch(format!(
                        "key {} (write in flight): expected {} (old) or {} (new) actual {}",
                        layout.describe(k),
                        slot.cur,
                        p.new,
                        describe(actual)
                    )));
                }
                allowed.insert(k, a);
            }
        }
    }
    Ok(allowed)
}

/// All keys of one in-flight batch must be all old or all new.
fn check_batches(layout: Layout, slots: &[Slot], allowed: &BTreeMap<u64, Allowed>) -> Result<(), Failure> {
    let mut by_tag: BTreeMap<u64, (Allowed, Vec<u64>)> = BTreeMap::new();
    for (&k, a) in allowed {
        let tag = slots[k as usize].pending.expect("pending").tag;
        let e = by_tag.entry(tag).or_insert((Allowed { old: true, new: true }, Vec::new()));
        e.0 = Allowed { old: e.0.old && a.old, new: e.0.new && a.new };
        e.1.push(k);
    }
    match by_tag.iter().find(|(_, (a, _))| !a.old && !a.new) {
        None => Ok(()),
        Some((tag, (_, keys))) => Err(Failure::Mismatch(format!(
            "batch {tag:#x} half-applied after the crash: keys {:?} mix old and new values",
            keys.iter().map(|&k| layout.describe(k)).collect::<Vec<_>>()
        ))),
    }
}

/// Makes every in-flight slot, and every key of an unlogged run, exact again; returns how many
/// in-flight writes were found applied.
fn resolve(
    oracle: &Oracle,
    slots: &[Slot],
    allowed: &BTreeMap<u64, Allowed>,
    unlogged_found: &BTreeMap<u64, Value>,
) -> Result<u64, Failure> {
    for (&k, &v) in unlogged_found {
        let slot = slots[k as usize];
        if slot.pending.is_some() || slot.cur != v {
            oracle.lock(&[k]).resolve(k, v)?;
        }
    }
    let mut applied = 0;
    for (&k, a) in allowed {
        let slot = slots[k as usize];
        let new = slot.pending.expect("pending").new;
        // When both match, old and new have the same bytes: either choice is exact.
        let found: Value = if a.old { slot.cur } else { new };
        applied += u64::from(!a.old);
        oracle.lock(&[k]).resolve(k, found)?;
    }
    oracle.sync()?;
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Kind;
    use crate::oracle::Pending;

    /// One family of three keys: slot numbers are key numbers.
    const L: Layout = Layout { families: 1, keys: 3 };

    fn short(n: u64) -> Value {
        Value { kind: Kind::Short, n }
    }

    fn in_flight(old: u64, new: u64, tag: u64) -> Slot {
        Slot { cur: short(old), pending: Some(Pending { new: short(new), tag }), acked: 0 }
    }

    #[test]
    fn in_flight_keys_may_hold_old_or_new_but_batches_stay_atomic() {
        let slots = [in_flight(1, 2, 7), in_flight(3, 4, 7), in_flight(5, 6, 8)];
        let all_new = [short(2).bytes(0), short(4).bytes(1), short(5).bytes(2)];
        let a = classify(L, &slots, &all_new, &Unlogged::new()).unwrap();
        assert!(check_batches(L, &slots, &a).is_ok());
        let torn = [short(2).bytes(0), short(3).bytes(1), short(5).bytes(2)];
        let a = classify(L, &slots, &torn, &Unlogged::new()).unwrap();
        assert!(matches!(check_batches(L, &slots, &a), Err(Failure::Mismatch(_))), "batch 7 half-applied");
    }

    #[test]
    fn acknowledged_keys_must_match_exactly() {
        let slots = [Slot { cur: short(1), pending: None, acked: 1 }];
        let none = Unlogged::new();
        assert!(classify(L, &slots, &[short(1).bytes(0)], &none).is_ok());
        assert!(matches!(classify(L, &slots, &[None], &none), Err(Failure::Mismatch(_))), "a lost write");
        let neither = [in_flight(1, 2, 9)];
        assert!(classify(L, &neither, &[short(3).bytes(0)], &none).is_err(), "neither old nor new");
    }

    #[test]
    fn unlogged_keys_may_hold_any_value_they_took_but_nothing_else() {
        let slots = [Slot { cur: short(3), pending: None, acked: 3 }, in_flight(7, 8, 1)];
        let unlogged: Unlogged =
            [(0, vec![short(1), short(2), short(3)]), (1, vec![short(7), short(8)])].into();
        let reverted = [short(1).bytes(0), short(7).bytes(1)];
        let got = classify_unlogged(L, &slots, &reverted, &unlogged).unwrap();
        assert_eq!(got.into_iter().collect::<Vec<_>>(), [(0, short(1)), (1, short(7))]);
        assert!(classify(L, &slots, &reverted, &unlogged).unwrap().is_empty(), "left to the unlogged rule");
        let strange = [short(9).bytes(0), short(7).bytes(1)];
        assert!(matches!(classify_unlogged(L, &slots, &strange, &unlogged), Err(Failure::Mismatch(_))));
        let absent = [None, short(7).bytes(1)];
        assert!(
            classify_unlogged(L, &slots, &absent, &unlogged).is_err(),
            "absent was never a value of key 0"
        );
    }
}
