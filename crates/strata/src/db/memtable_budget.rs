//! How many memtables (the mutable one plus those waiting for flush) may be held at once: the
//! `max_write_buffer_number` the options give, plus extra ones that borrow block-cache capacity
//! nobody uses, up to `write_buffer_borrow_percent` of the cache.
//!
//! It owns the count of unflushed memtables and the cache reservation that matches it. It does
//! not switch or flush memtables, and it never evicts a cached block to make room: a borrowed
//! memtable only takes capacity the cache leaves free, and returns it when a flush retires a
//! memtable.
//!
//! Why: WiredTiger holds dirty pages in its one cache; RocksDB can charge memtables to its block
//! cache (`WriteBufferManager` with `cost_to_cache`). A bulk load into a database whose cache is
//! still empty would otherwise stop on a few memtables while the memory the user granted to the
//! cache sits idle. Memory stays within `cache_size + max_write_buffer_number * write_buffer_size`.
//!
//! Its lock is a leaf: taken by the write leader (holding `leader`) and by a finishing flush
//! (holding `bg`), and never held while taking another.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::options::Options;
use crate::sst::BlockCache;

/// At most this many borrowed memtables per own slot, whatever the cache could lend: a point
/// read that misses the memtables probes every one, so a small `write_buffer_size` beside a
/// large cache must not queue hundreds of them.
const BORROWED_PER_OWN_SLOT: usize = 2;

/// The memtable count and its cache reservation (see the module doc).
pub(crate) struct MemtableBudget {
    cache: Option<Arc<BlockCache>>,
    /// Bytes one memtable is charged: `write_buffer_size`.
    slot_bytes: usize,
    /// Memtables allowed without borrowing: `max_write_buffer_number`.
    own_slots: usize,
    /// The most the memtables may borrow from the cache, in bytes.
    max_borrowed: usize,
    /// The most memtable slots they may borrow.
    max_borrowed_slots: usize,
    /// Changes to the count and the reservation, made together.
    state: Mutex<Held>,
    /// Copies of `state`'s fields for the write path's lock-free checks.
    memtables: AtomicUsize,
    borrowed_slots: AtomicUsize,
}

#[derive(Clone, Copy)]
struct Held {
    /// Unflushed memtables, the mutable one included.
    memtables: usize,
    /// Memtable slots reserved from the cache.
    borrowed_slots: usize,
}

impl MemtableBudget {
    /// A budget for a database opened with `opts` and `cache`, holding its first (mutable)
    /// memtable.
    pub fn new(opts: &Options, cache: Option<Arc<BlockCache>>) -> Self {
        let percent = u128::from(opts.write_buffer_borrow_percent);
        let max_borrowed = cache.as_ref().map_or(0, |c| (c.capacity() as u128 * percent / 100) as usize);
        Self {
            cache,
            slot_bytes: opts.write_buffer_size,
            own_slots: opts.max_write_buffer_number,
            max_borrowed,
            max_borrowed_slots: BORROWED_PER_OWN_SLOT * opts.max_write_buffer_number,
            state: Mutex::new(Held { memtables: 1, borrowed_slots: 0 }),
            memtables: AtomicUsize::new(1),
            borrowed_slots: AtomicUsize::new(0),
        }
    }

    /// Whether one more memtable may be added now, by a slot of its own or one the cache could
    /// lend. Lock-free; [`add_memtable`](Self::add_memtable) decides for real.
    pub fn has_room(&self) -> bool {
        let memtables = self.memtables.load(Ordering::Relaxed);
        memtables < self.own_slots + self.borrowed_slots.load(Ordering::Relaxed) || self.could_borrow()
    }

    /// Counts a new memtable if there is a slot for it, borrowing one from the cache if needed;
    /// returns false and changes nothing if there is none. `force` counts it anyway (a manual
    /// flush switches whatever the budget says), borrowing if it can.
    pub fn add_memtable(&self, force: bool) -> bool {
        let mut held = self.state.lock();
        let wanted = held.memtables + 1;
        if wanted > self.own_slots + held.borrowed_slots && self.borrow_slot(&held) {
            held.borrowed_slots += 1;
        }
        if wanted > self.own_slots + held.borrowed_slots && !force {
            return false;
        }
        held.memtables = wanted;
        self.publish(*held);
        true
    }

    /// Uncounts a memtable (flushed, or never switched in after `add_memtable`) and returns the
    /// borrowed slots the remaining ones no longer need.
    pub fn remove_memtable(&self) {
        let mut held = self.state.lock();
        held.memtables = held.memtables.saturating_sub(1).max(1);
        let needed = held.memtables.saturating_sub(self.own_slots);
        if held.borrowed_slots > needed {
            if let Some(cache) = &self.cache {
                cache.release((held.borrowed_slots - needed) * self.slot_bytes);
            }
            held.borrowed_slots = needed;
        }
        self.publish(*held);
    }

    /// Memtable slots currently borrowed from the cache.
    pub fn borrowed_slots(&self) -> usize {
        self.borrowed_slots.load(Ordering::Relaxed)
    }

    /// Unflushed memtables, the mutable one included.
    pub fn memtables(&self) -> usize {
        self.memtables.load(Ordering::Relaxed)
    }

    fn could_borrow(&self) -> bool {
        self.borrowed_slots.load(Ordering::Relaxed) < self.max_borrowed_slots
            && self.cache.as_ref().is_some_and(|c| c.can_reserve(self.slot_bytes, self.max_borrowed))
    }

    /// Reserves one more slot; called with `state` locked, `held` its current value.
    fn borrow_slot(&self, held: &Held) -> bool {
        held.borrowed_slots < self.max_borrowed_slots
            && self.cache.as_ref().is_some_and(|c| c.try_reserve(self.slot_bytes, self.max_borrowed))
    }

    fn publish(&self, held: Held) {
        self.memtables.store(held.memtables, Ordering::Relaxed);
        self.borrowed_slots.store(held.borrowed_slots, Ordering::Relaxed);
    }
}

impl Drop for MemtableBudget {
    fn drop(&mut self) {
        let held = *self.state.get_mut();
        if let Some(cache) = &self.cache {
            cache.release(held.borrowed_slots * self.slot_bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    fn budget(cache_bytes: usize, percent: u32) -> (MemtableBudget, Arc<BlockCache>) {
        let opts = Options {
            write_buffer_size: MIB,
            max_write_buffer_number: 3,
            write_buffer_borrow_percent: percent,
            ..Options::default()
        };
        let cache = Arc::new(BlockCache::new(cache_bytes));
        (MemtableBudget::new(&opts, Some(Arc::clone(&cache))), cache)
    }

    #[test]
    fn own_slots_come_first_then_the_cache_lends_up_to_its_share() {
        let (b, cache) = budget(8 * MIB, 50);
        assert!(b.add_memtable(false) && b.add_memtable(false), "slots 2 and 3 are the budget's own");
        assert_eq!((b.memtables(), b.borrowed_slots(), cache.reserved()), (3, 0, 0));
        for n in 4..=7 {
            assert!(b.has_room());
            assert!(b.add_memtable(false), "memtable {n} borrows");
        }
        assert_eq!((b.borrowed_slots(), cache.reserved()), (4, 4 * MIB));
        assert!(!b.has_room(), "half of an 8 MiB cache is lent");
        assert!(!b.add_memtable(false));
        assert_eq!(b.memtables(), 7, "a refused memtable is not counted");
        b.remove_memtable();
        assert_eq!((b.memtables(), b.borrowed_slots(), cache.reserved()), (6, 3, 3 * MIB));
        for _ in 0..5 {
            b.remove_memtable();
        }
        assert_eq!((b.memtables(), b.borrowed_slots(), cache.reserved()), (1, 0, 0));
        b.remove_memtable();
        assert_eq!(b.memtables(), 1, "the mutable memtable is always counted");
    }

    #[test]
    fn a_cache_in_use_lends_only_what_it_leaves_free() {
        let (b, cache) = budget(8 * MIB, 100);
        let mut builder = crate::sst::block::BlockBuilder::new(8);
        builder.add(b"k", b"v");
        let block = Arc::new(crate::sst::Block::new(builder.finish().to_vec()).unwrap());
        for i in 0..(6 * 1024) {
            cache.insert((1, i), Arc::clone(&block), 1024);
        }
        assert!(b.add_memtable(false) && b.add_memtable(false));
        let free_slots = (8 * MIB - cache.usage()) / MIB;
        for _ in 0..free_slots {
            assert!(b.add_memtable(false));
        }
        assert!(!b.add_memtable(false), "nothing is evicted to lend more");
        assert!(cache.usage() + cache.reserved() <= 8 * MIB);
    }

    #[test]
    fn borrowing_off_or_no_cache_keeps_the_own_slots() {
        let (b, cache) = budget(64 * MIB, 0);
        assert!(b.add_memtable(false) && b.add_memtable(false));
        assert!(!b.has_room() && !b.add_memtable(false));
        assert_eq!(cache.reserved(), 0);
        let opts = Options { max_write_buffer_number: 2, ..Options::default() };
        let b = MemtableBudget::new(&opts, None);
        assert!(b.add_memtable(false));
        assert!(!b.add_memtable(false));
    }

    #[test]
    fn a_forced_memtable_is_counted_even_without_a_slot() {
        let (b, cache) = budget(2 * MIB, 50);
        assert!(b.add_memtable(false) && b.add_memtable(false) && b.add_memtable(false));
        assert_eq!(b.borrowed_slots(), 1);
        assert!(!b.add_memtable(false));
        assert!(b.add_memtable(true));
        assert_eq!((b.memtables(), b.borrowed_slots()), (5, 1));
        b.remove_memtable();
        assert_eq!(
            (b.borrowed_slots(), cache.reserved()),
            (1, MIB),
            "4 memtables still need the borrowed slot"
        );
        b.remove_memtable();
        assert_eq!((b.borrowed_slots(), cache.reserved()), (0, 0));
    }

    #[test]
    fn borrowed_slots_are_capped_at_twice_the_own_ones() {
        let (b, cache) = budget(64 * MIB, 100);
        for _ in 0..(3 + 6 - 1) {
            assert!(b.add_memtable(false));
        }
        assert_eq!(b.borrowed_slots(), 6);
        assert!(!b.has_room(), "the cache could lend 58 MiB more, but 6 memtables is the cap");
        assert!(!b.add_memtable(false));
        assert_eq!(cache.reserved(), 6 * MIB);
    }

    #[test]
    fn dropping_the_budget_returns_what_it_borrowed() {
        let (b, cache) = budget(8 * MIB, 50);
        for _ in 0..4 {
            assert!(b.add_memtable(false));
        }
        assert_eq!(cache.reserved(), 2 * MIB);
        drop(b);
        assert_eq!(cache.reserved(), 0);
    }
}
