//! The expected-state oracle: the value every key must hold, kept in memory under striped locks
//! and mirrored to a fixed-slot file (`<expected>/oracle.state`) written with `pwrite` through
//! `std::fs`, never through the engine, so the oracle cannot lose what the engine loses.
//!
//! Protocol for a write (the caller holds the key's stripe lock throughout):
//! 1. [`Locked::begin`] records the intent — new value plus a tag shared by all keys of one batch —
//!    with the current value kept as "old" (`pending` set). Written BEFORE the engine call.
//! 2. The caller issues the write and waits for the acknowledgement.
//! 3. [`Locked::complete`] makes the new value current and counts the acknowledged write.
//!
//! After a kill, a pending slot may hold either value in the database (all keys of one tag the
//! same choice); every other slot must match exactly. `pwrite` that returned survives the death of
//! the process (docs/durability.md), so slots survive kill -9 without fsync; `--oracle-fsync`
//! adds an fdatasync after each intent for anyone who wants the oracle to survive power loss too.
//!
//! With column families (`families`) the slots are families times keys, and the header also
//! holds the family count and the phase of the drop-and-recreate of the last family
//! ([`DropPhase`], one 8-byte `pwrite`), so a verifier knows whether a crash hit a drop.
//!
//! This module must not call the engine or decide what counts as a mismatch (see `verify`).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::model::{Kind, Value};

/// Keys per lock stripe. Stripes are contiguous key ranges, so a range scan locks a few adjacent
/// stripes in ascending order, and a batch locks its stripes sorted: no lock-order cycles.
pub const STRIPE_KEYS: u64 = 8;

const MAGIC: &[u8; 8] = b"STRSTRS1";
const HEADER_LEN: u64 = 64;
/// A slot is 32 bytes at a 32-byte-aligned offset, so it never straddles a page and one `pwrite`
/// replaces it whole.
const SLOT_LEN: usize = 32;
const SLOT_MAGIC: u8 = 0xa5;
/// Header offsets: keys per family, family count (0 in files made before families: one), and
/// the drop phase.
const KEYS_AT: u64 = 8;
const FAMILIES_AT: u64 = 16;
const PHASE_AT: u64 = 24;

/// Where the drop-and-recreate of the last family stands (see `families`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropPhase {
    /// No drop in progress: the family holds what its slots say.
    Live = 0,
    /// `drop_cf` issued, not known to be acknowledged: the family may still exist.
    Dropping = 1,
    /// `drop_cf` acknowledged: the family is gone or recreated empty, whatever its slots say.
    Dropped = 2,
}

impl DropPhase {
    fn from_u8(b: u8) -> Option<DropPhase> {
        [DropPhase::Live, DropPhase::Dropping, DropPhase::Dropped].into_iter().find(|p| *p as u8 == b)
    }
}

/// A write in flight on one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pending {
    /// The value the write will leave.
    pub new: Value,
    /// Identifies the operation; all keys of one batch share it.
    pub tag: u64,
}

/// The oracle's record of one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// The value after the last acknowledged write (the "old" value while one is pending).
    pub cur: Value,
    /// The write issued but not yet acknowledged, if any.
    pub pending: Option<Pending>,
    /// Acknowledged writes to this key over the oracle's whole life.
    pub acked: u32,
}

impl Slot {
    const EMPTY: Slot = Slot { cur: Value::ABSENT, pending: None, acked: 0 };

    fn encode(&self) -> [u8; SLOT_LEN] {
        let mut b = [0u8; SLOT_LEN];
        let p = self.pending.unwrap_or(Pending { new: Value::ABSENT, tag: 0 });
        b[0..8].copy_from_slice(&self.cur.n.to_le_bytes());
        b[8..16].copy_from_slice(&p.new.n.to_le_bytes());
        b[16..24].copy_from_slice(&p.tag.to_le_bytes());
        b[24..28].copy_from_slice(&self.acked.to_le_bytes());
        b[28] = self.cur.kind as u8;
        b[29] = p.new.kind as u8;
        b[30] = u8::from(self.pending.is_some());
        b[31] = SLOT_MAGIC;
        b
    }

    fn decode(b: &[u8]) -> io::Result<Slot> {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let bad = || io::Error::new(io::ErrorKind::InvalidData, "corrupt oracle slot");
        if b[31] != SLOT_MAGIC {
            return Err(bad());
        }
        let cur = Value { kind: Kind::from_u8(b[28]).ok_or_else(bad)?, n: u64_at(0) };
        let new = Value { kind: Kind::from_u8(b[29]).ok_or_else(bad)?, n: u64_at(8) };
        let pending = (b[30] == 1).then_some(Pending { new, tag: u64_at(16) });
        let acked = u32::from_le_bytes(b[24..28].try_into().expect("4 bytes"));
        Ok(Slot { cur, pending, acked })
    }
}

/// The oracle: in-memory slots under stripe locks, mirrored to a file.
pub struct Oracle {
    file: File,
    path: PathBuf,
    keys: u64,
    stripes: Vec<Mutex<Vec<Slot>>>,
    fsync_intents: bool,
    phase: AtomicU8,
}

impl Oracle {
    /// Opens `<dir>/oracle.state` for `keys` keys in each of `families` families, creating it
    /// (all keys absent) when missing. An existing file must have been made for the same numbers.
    pub fn open(dir: &Path, keys: u64, families: u64, fsync_intents: bool) -> io::Result<Oracle> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("oracle.state");
        let exists = path.exists();
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path)?;
        let (slots, phase) = if exists {
            load(&file, keys, families)?
        } else {
            (create(&file, dir, keys, families)?, DropPhase::Live)
        };
        let stripes = slots.chunks(STRIPE_KEYS as usize).map(|c| Mutex::new(c.to_vec())).collect();
        let keys = keys * families;
        Ok(Oracle { file, path, keys, stripes, fsync_intents, phase: AtomicU8::new(phase as u8) })
    }

    /// Where the drop of the last family stands.
    pub fn drop_phase(&self) -> DropPhase {
        DropPhase::from_u8(self.phase.load(Ordering::Acquire)).unwrap_or(DropPhase::Live)
    }

    /// Records the drop phase (one 8-byte `pwrite`; fdatasynced with `--oracle-fsync`). The
    /// caller holds every stripe lock of the dropping family.
    pub fn set_drop_phase(&self, phase: DropPhase) -> io::Result<()> {
        self.file.write_all_at(&u64::from(phase as u8).to_le_bytes(), PHASE_AT)?;
        if self.fsync_intents {
            self.file.sync_data()?;
        }
        self.phase.store(phase as u8, Ordering::Release);
        Ok(())
    }

    /// True when `<dir>/oracle.state` exists.
    pub fn exists(dir: &Path) -> bool {
        dir.join("oracle.state").exists()
    }

    /// Number of slots: keys times families.
    pub fn keys(&self) -> u64 {
        self.keys
    }

    /// Locks the stripes of `keys` (any order, duplicates allowed) in ascending stripe order.
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
        // A poisoned stripe means a worker panicked; the process is failing anyway, and the slots
        // themselves are still consistent (each update is one assignment).
        let guards = ids
            .into_iter()
            .map(|id| (id, self.stripes[id as usize].lock().unwrap_or_else(|e| e.into_inner())))
            .collect();
        Locked { oracle: self, guards }
    }

    /// A copy of every slot, taking each stripe lock in turn (callers use it when no worker runs).
    pub fn all_slots(&self) -> Vec<Slot> {
        self.stripes.iter().flat_map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).clone()).collect()
    }

    /// Makes the whole file durable (at clean exit and after the verifier resolved pending slots).
    pub fn sync(&self) -> io::Result<()> {
        self.file.sync_all()
    }

    fn write_slot(&self, key: u64, slot: &Slot) -> io::Result<()> {
        self.file
            .write_all_at(&slot.encode(), HEADER_LEN + key * SLOT_LEN as u64)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.path.display())))
    }
}

fn create(file: &File, dir: &Path, keys: u64, families: u64) -> io::Result<Vec<Slot>> {
    let mut header = [0u8; HEADER_LEN as usize];
    header[..8].copy_from_slice(MAGIC);
    header[KEYS_AT as usize..][..8].copy_from_slice(&keys.to_le_bytes());
    header[FAMILIES_AT as usize..][..8].copy_from_slice(&families.to_le_bytes());
    let keys = keys * families;
    let mut body = Vec::with_capacity(keys as usize * SLOT_LEN);
    for _ in 0..keys {
        body.extend_from_slice(&Slot::EMPTY.encode());
    }
    file.write_all_at(&body, HEADER_LEN)?;
    // The header goes last: a file without it is an interrupted creation and is rejected by
    // `load`, never mistaken for a valid all-absent oracle.
    file.sync_all()?;
    file.write_all_at(&header, 0)?;
    file.sync_all()?;
    File::open(dir)?.sync_all()?;
    Ok(vec![Slot::EMPTY; keys as usize])
}

fn load(file: &File, keys: u64, families: u64) -> io::Result<(Vec<Slot>, DropPhase)> {
    let mut header = [0u8; HEADER_LEN as usize];
    file.read_exact_at(&mut header, 0)?;
    let u64_at = |i: u64| u64::from_le_bytes(header[i as usize..][..8].try_into().expect("8 bytes"));
    let found = u64_at(KEYS_AT);
    let found_families = u64_at(FAMILIES_AT).max(1);
    if &header[..8] != MAGIC || found != keys || found_families != families {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "oracle file is not for --keys {keys} --column-families {families} (header says {found} keys, \
                 {found_families} families, or bad magic)"
            ),
        ));
    }
    let phase = DropPhase::from_u8(header[PHASE_AT as usize])
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "corrupt oracle drop phase"))?;
    let mut body = vec![0u8; (keys * families) as usize * SLOT_LEN];
    file.read_exact_at(&mut body, HEADER_LEN)?;
    Ok((body.chunks(SLOT_LEN).map(Slot::decode).collect::<io::Result<_>>()?, phase))
}

/// Held stripe locks; the only way to read or change slots while workers run.
pub struct Locked<'a> {
    oracle: &'a Oracle,
    guards: Vec<(u64, MutexGuard<'a, Vec<Slot>>)>,
}

impl Locked<'_> {
    fn index(&self, key: u64) -> (usize, usize) {
        let stripe = key / STRIPE_KEYS;
        let g = self.guards.binary_search_by_key(&stripe, |(id, _)| *id).expect("key's stripe is not locked");
        (g, (key % STRIPE_KEYS) as usize)
    }

    /// The slot of `key`, which must be covered by the held locks.
    pub fn slot(&self, key: u64) -> Slot {
        let (g, i) = self.index(key);
        self.guards[g].1[i]
    }

    fn set(&mut self, key: u64, slot: Slot) -> io::Result<()> {
        self.oracle.write_slot(key, &slot)?;
        let (g, i) = self.index(key);
        self.guards[g].1[i] = slot;
        Ok(())
    }

    /// Records the intent to give each `(key, new)` the new value; call BEFORE the engine write.
    pub fn begin(&mut self, writes: &[(u64, Value)], tag: u64) -> io::Result<()> {
        for &(key, new) in writes {
            let slot = Slot { pending: Some(Pending { new, tag }), ..self.slot(key) };
            self.set(key, slot)?;
        }
        if self.oracle.fsync_intents {
            self.oracle.file.sync_data()?;
        }
        Ok(())
    }

    /// Makes each key's pending value current; call AFTER the engine acknowledged the write.
    pub fn complete(&mut self, keys: &[u64]) -> io::Result<()> {
        for &key in keys {
            let old = self.slot(key);
            let new = old.pending.expect("complete without begin").new;
            self.set(key, Slot { cur: new, pending: None, acked: old.acked.wrapping_add(1) })?;
        }
        Ok(())
    }

    /// Makes every slot of `lo..hi` absent with nothing in flight (acknowledged counts kept), in
    /// one `pwrite`: the slots of a dropped family. Every stripe of the range must be locked.
    pub fn reset(&mut self, lo: u64, hi: u64) -> io::Result<()> {
        let slots: Vec<Slot> =
            (lo..hi).map(|k| Slot { cur: Value::ABSENT, pending: None, acked: self.slot(k).acked }).collect();
        let bytes: Vec<u8> = slots.iter().flat_map(Slot::encode).collect();
        self.oracle
            .file
            .write_all_at(&bytes, HEADER_LEN + lo * SLOT_LEN as u64)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.oracle.path.display())))?;
        for (k, slot) in (lo..hi).zip(slots) {
            let (g, i) = self.index(k);
            self.guards[g].1[i] = slot;
        }
        Ok(())
    }

    /// Replaces a pending slot by the value the database was found to hold after a crash.
    pub fn resolve(&mut self, key: u64, found: Value) -> io::Result<()> {
        let old = self.slot(key);
        self.set(key, Slot { cur: found, pending: None, acked: old.acked })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_survive_reopen_including_pending_intents() {
        let dir = std::env::temp_dir().join(format!("strata-stress-oracle-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let v = Value { kind: Kind::Long, n: 9 };
        {
            let o = Oracle::open(&dir, 20, 1, false).unwrap();
            let mut l = o.lock(&[3, 17]);
            l.begin(&[(3, v), (17, v)], 77).unwrap();
            l.complete(&[3]).unwrap();
        }
        let o = Oracle::open(&dir, 20, 1, false).unwrap();
        let l = o.lock(&[17, 3]);
        assert_eq!(l.slot(3), Slot { cur: v, pending: None, acked: 1 });
        assert_eq!(l.slot(17).pending, Some(Pending { new: v, tag: 77 }));
        drop(l);
        assert!(Oracle::open(&dir, 21, 1, false).is_err(), "key count must match");
        assert!(Oracle::open(&dir, 10, 2, false).is_err(), "family count must match");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn family_slots_reset_in_one_write_and_the_drop_phase_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let v = Value { kind: Kind::Short, n: 5 };
        {
            let o = Oracle::open(dir.path(), 16, 3, false).unwrap();
            assert_eq!(o.keys(), 48);
            let mut l = o.lock(&[3, 40]);
            l.begin(&[(3, v), (40, v)], 1).unwrap();
            l.complete(&[3, 40]).unwrap();
            drop(l);
            o.set_drop_phase(DropPhase::Dropped).unwrap();
            o.lock_range(32, 48).reset(32, 48).unwrap();
            assert_eq!(o.lock(&[40]).slot(40), Slot { cur: Value::ABSENT, pending: None, acked: 1 });
        }
        let o = Oracle::open(dir.path(), 16, 3, false).unwrap();
        assert_eq!(o.drop_phase(), DropPhase::Dropped);
        assert_eq!(o.lock(&[3]).slot(3).cur, v, "other families untouched");
        assert_eq!(o.lock(&[40]).slot(40), Slot { cur: Value::ABSENT, pending: None, acked: 1 });
    }
}
