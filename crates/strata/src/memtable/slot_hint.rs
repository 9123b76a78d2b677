//! Where a key's hash-index slot lies in the mutable memtable, kept as plain numbers so that a
//! writer can start loading that slot before it queues or takes any lock. It owns the hint and
//! its publication; it must not be used to read memory: it only ever feeds a prefetch, which
//! cannot fault, so a hint that went stale (the memtable was switched, its index grew, the
//! table was freed) costs one useless prefetch and nothing else.
//!
//! Why: a single-key write to a random key spends ~10% of its time (perf, mergerandom of 1M
//! keys) waiting for the slot's cache miss inside the memtable insert, after the queue, the
//! leader lock and the memtable checks that could have hidden it.

use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::hash_index::home_slot;
use crate::util::hash::hash64;
use crate::util::prefetch::prefetch_read;

/// The first slot's address and the slot count of a hash-index table (see `hash_index`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlotHint {
    /// Address of slot 0; 0 for no hint.
    pub(super) slots: usize,
    pub(super) len: usize,
}

impl SlotHint {
    /// Starts loading the slot where an index probe for `user_key` begins.
    #[inline]
    pub fn prefetch(&self, user_key: &[u8]) {
        if self.slots != 0 {
            // Wrapping: a torn or stale hint may name any address, never a reason to panic.
            let offset = home_slot(hash64(user_key), self.len).wrapping_mul(size_of::<u64>());
            let slot = self.slots.wrapping_add(offset);
            prefetch_read(ptr::without_provenance(slot));
        }
    }
}

/// A [`SlotHint`] shared between the memtable's writer, which publishes it, and every thread
/// about to write. Its two halves may be read torn across a publication: that only aims one
/// prefetch at a wrong line.
#[derive(Debug, Default)]
pub struct SharedSlotHint {
    slots: AtomicUsize,
    len: AtomicUsize,
}

impl SharedSlotHint {
    /// The last hint published (no hint before the first).
    #[inline]
    pub fn load(&self) -> SlotHint {
        SlotHint { slots: self.slots.load(Ordering::Relaxed), len: self.len.load(Ordering::Relaxed) }
    }

    /// Publishes `hint`; stores only when it changed, so that the writer's calls after every
    /// write keep the line shared in the other threads' caches.
    #[inline]
    pub fn publish(&self, hint: SlotHint) {
        if self.load() != hint {
            self.slots.store(hint.slots, Ordering::Relaxed);
            self.len.store(hint.len, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::ValueKind;
    use crate::memtable::MemTable;

    #[test]
    fn no_hint_and_stale_hints_are_harmless() {
        SlotHint::default().prefetch(b"key");
        let stale = {
            let mem = MemTable::new();
            mem.add(1, ValueKind::Put, b"a", b"1");
            mem.slot_hint()
        };
        // The table is unmapped now: the prefetch must still neither fault nor read.
        stale.prefetch(b"a");
        SlotHint { slots: usize::MAX - 7, len: usize::MAX }.prefetch(b"b");
    }

    #[test]
    fn the_hint_names_the_current_table_and_follows_growth() {
        let mem = MemTable::new();
        let shared = SharedSlotHint::default();
        assert_eq!(shared.load(), SlotHint::default());
        shared.publish(mem.slot_hint());
        let first = shared.load();
        assert_ne!(first.slots, 0);
        for i in 0..10_000u32 {
            mem.add(u64::from(i) + 1, ValueKind::Put, &i.to_be_bytes(), b"v");
        }
        shared.publish(mem.slot_hint());
        let grown = shared.load();
        assert!(grown.len > first.len, "{first:?} -> {grown:?}");
        assert_eq!(grown, mem.slot_hint());
        grown.prefetch(&7u32.to_be_bytes());
    }
}
