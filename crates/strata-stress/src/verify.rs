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
//! This module must not write to the database.

use std::collections::BTreeMap;

use strata::{Db, ReadOptions};

use crate::failure::Failure;
use crate::model::{describe, key_bytes, parse_key, Value};
use crate::oracle::{Oracle, Slot};

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
        )
    }
}

/// Which values an in-flight key was found to hold.
#[derive(Debug, Clone, Copy)]
struct Allowed {
    old: bool,
    new: bool,
}

/// Checks the whole database against the oracle and resolves in-flight slots. No worker may run.
/// `unlogged` holds, per key written by a `--disable-wal` run, every value it took there.
pub fn verify_db(db: &Db, oracle: &Oracle, unlogged: &Unlogged) -> Result<Report, Failure> {
    let slots = oracle.all_slots();
    let found = point_reads(db, slots.len() as u64)?;
    check_scan(db, &found, false)?;
    check_scan(db, &found, true)?;
    let unlogged_found = classify_unlogged(&slots, &found, unlogged)?;
    let allowed = classify(&slots, &found, unlogged)?;
    check_batches(&slots, &allowed)?;
    let pending_applied = resolve(oracle, &slots, &allowed, &unlogged_found)?;
    Ok(Report {
        keys: slots.len() as u64,
        present: found.iter().filter(|v| v.is_some()).count() as u64,
        pending: allowed.len() as u64,
        pending_applied,
        acked_writes: slots.iter().map(|s| u64::from(s.acked)).sum(),
        unlogged_keys: unlogged.len() as u64,
        unlogged_reverted: unlogged_found.iter().filter(|&(&k, v)| *v != slots[k as usize].cur).count()
            as u64,
    })
}

/// Per key, every value it took during an unlogged run (`history::load`).
pub type Unlogged = BTreeMap<u64, Vec<Value>>;

/// For each key of an unlogged run: the value it was found at, which must be one it took.
fn classify_unlogged(
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
                "key k{k:08} (written with disable_wal since the last verification): expected {} or a value it \
                 took meanwhile ({}) actual {}",
                slot.cur,
                took.join("; "),
                describe(actual)
            )));
        };
        out.insert(k, v);
    }
    Ok(out)
}

fn point_reads(db: &Db, keys: u64) -> Result<Vec<Option<Vec<u8>>>, Failure> {
    let r = ReadOptions::new();
    (0..keys).map(|k| db.get(&r, &key_bytes(k)).map_err(Failure::from)).collect()
}

/// A full scan in one direction must return exactly the keys the point reads found, in order.
fn check_scan(db: &Db, found: &[Option<Vec<u8>>], reverse: bool) -> Result<(), Failure> {
    let dir = if reverse { "backward" } else { "forward" };
    let mut it = db.iter(&ReadOptions::new())?;
    let mut seen = 0u64;
    let mut last: Option<u64> = None;
    if reverse {
        it.seek_to_last()
    } else {
        it.seek_to_first()
    }
    while it.valid() {
        let k = parse_key(it.key()).filter(|&k| k < found.len() as u64).ok_or_else(|| {
            Failure::Mismatch(format!("{dir} scan: unexpected key {:?}", String::from_utf8_lossy(it.key())))
        })?;
        let ordered = last.is_none_or(|l| if reverse { k < l } else { k > l });
        if !ordered || found[k as usize].as_deref() != Some(it.value()) {
            return Err(Failure::Mismatch(format!(
                "{dir} scan: key k{k:08} expected (point read) {} actual {}{}",
                describe(found[k as usize].as_deref()),
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
    let expected = found.iter().filter(|v| v.is_some()).count() as u64;
    if seen != expected {
        return Err(Failure::Mismatch(format!(
            "{dir} scan returned {seen} keys, point reads found {expected}"
        )));
    }
    Ok(())
}

/// Checks every key but those of an unlogged run; returns what each in-flight key was found to
/// hold.
fn classify(
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
                    "key k{k:08} (acknowledged, nothing in flight): expected {} actual {}",
                    slot.cur,
                    describe(actual)
                )))
            }
            Some(p) => {
                let a = Allowed { old: old.as_deref() == actual, new: p.new.bytes(k).as_deref() == actual };
                if !a.old && !a.new {
                    return Err(Failure::Mismatch(format!(
                        "key k{k:08} (write in flight): expected {} (old) or {} (new) actual {}",
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
fn check_batches(slots: &[Slot], allowed: &BTreeMap<u64, Allowed>) -> Result<(), Failure> {
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
            keys.iter().map(|k| format!("k{k:08}")).collect::<Vec<_>>()
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
        let a = classify(&slots, &all_new, &Unlogged::new()).unwrap();
        assert!(check_batches(&slots, &a).is_ok());
        let torn = [short(2).bytes(0), short(3).bytes(1), short(5).bytes(2)];
        let a = classify(&slots, &torn, &Unlogged::new()).unwrap();
        assert!(matches!(check_batches(&slots, &a), Err(Failure::Mismatch(_))), "batch 7 half-applied");
    }

    #[test]
    fn acknowledged_keys_must_match_exactly() {
        let slots = [Slot { cur: short(1), pending: None, acked: 1 }];
        let none = Unlogged::new();
        assert!(classify(&slots, &[short(1).bytes(0)], &none).is_ok());
        assert!(matches!(classify(&slots, &[None], &none), Err(Failure::Mismatch(_))), "a lost write");
        let neither = [in_flight(1, 2, 9)];
        assert!(classify(&neither, &[short(3).bytes(0)], &none).is_err(), "neither old nor new");
    }

    #[test]
    fn unlogged_keys_may_hold_any_value_they_took_but_nothing_else() {
        let slots = [Slot { cur: short(3), pending: None, acked: 3 }, in_flight(7, 8, 1)];
        let unlogged: Unlogged =
            [(0, vec![short(1), short(2), short(3)]), (1, vec![short(7), short(8)])].into();
        let reverted = [short(1).bytes(0), short(7).bytes(1)];
        let got = classify_unlogged(&slots, &reverted, &unlogged).unwrap();
        assert_eq!(got.into_iter().collect::<Vec<_>>(), [(0, short(1)), (1, short(7))]);
        assert!(classify(&slots, &reverted, &unlogged).unwrap().is_empty(), "left to the unlogged rule");
        let strange = [short(9).bytes(0), short(7).bytes(1)];
        assert!(matches!(classify_unlogged(&slots, &strange, &unlogged), Err(Failure::Mismatch(_))));
        let absent = [None, short(7).bytes(1)];
        assert!(classify_unlogged(&slots, &absent, &unlogged).is_err(), "absent was never a value of key 0");
    }
}
