//! The memtable's point index: an open-addressing hash table from a user key to the skiplist
//! node of its newest version, so that a point read, and an update of a key already in the
//! memtable, skip the skiplist search (on a 1M-key memtable that search is ~20 cache misses).
//! It owns the slot layout, probing and growth. It must not know the node layout (callers pass
//! the key's hash and closures that test or re-hash a node's key) and never removes an entry.
//! One writer at a time, any number of lock-free readers.
//!
//! A slot is one `u64`: zero when empty, otherwise the node's address in the low 48 bits and
//! the top 16 bits of the key's hash above it, so a probe rejects almost every foreign key
//! without touching its node. Linear probing from the hash's low bits, at most 3/4 full.
//! Growing builds a table twice the size and publishes it with one Release store; the old
//! tables stay allocated until the index drops, because a reader may still be probing one
//! (together they are smaller than the live table). A memtable sized from its predecessor's
//! key count never grows.
//!
//! Should an address not fit in 48 bits (no current Linux target hands those out unasked), the
//! index switches itself off for good and every lookup answers [`Probe::Unknown`].

use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::huge_pages::{HugePageMap, HUGE_PAGE};
use crate::util::prefetch::prefetch_read;

const ADDR_BITS: u32 = 48;
const TAG_MASK: u64 = !0 << ADDR_BITS;
const MIN_SLOTS: usize = 1024;

/// What the index knows about a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Probe {
    /// The node of the key's newest version.
    Found(NonNull<u8>),
    /// The key has no version in the memtable.
    Absent,
    /// The index is switched off; search the list.
    Unknown,
}

/// The hash index. See the module docs.
pub(super) struct HashIndex {
    /// The table readers probe; points into `tables`.
    current: AtomicPtr<Table>,
    /// Every table built, the current one last. Only the writer locks it, and only to grow.
    /// Boxed so that `current` stays valid when the vector reallocates.
    #[allow(clippy::vec_box)]
    tables: Mutex<Vec<Box<Table>>>,
    /// Keys indexed. Written only by the writer.
    len: AtomicUsize,
    /// Bytes of all tables, for the memtable's footprint.
    bytes: AtomicUsize,
    /// False once an address did not fit in a slot.
    enabled: AtomicBool,
}

/// A table's slots. One probed at random across many megabytes sits on huge pages, where a
/// probe is one cache miss instead of a cache miss plus a TLB miss; a small one stays on the
/// heap, whose pages are already faulted in.
struct Table {
    storage: Storage,
    mask: usize,
}

enum Storage {
    Heap(Box<[AtomicU64]>),
    Mapped(HugePageMap),
}

impl Table {
    fn with_slots(n: usize) -> Box<Table> {
        debug_assert!(n.is_power_of_two());
        let bytes = n * size_of::<AtomicU64>();
        let storage = if bytes >= HUGE_PAGE {
            Storage::Mapped(HugePageMap::new(bytes))
        } else {
            Storage::Heap((0..n).map(|_| AtomicU64::new(0)).collect())
        };
        Box::new(Table { storage, mask: n - 1 })
    }

    #[inline]
    fn slots(&self) -> &[AtomicU64] {
        match &self.storage {
            Storage::Heap(slots) => slots,
            // SAFETY: the mapping is page-aligned (so aligned for AtomicU64), `mask + 1` slots
            // long (`with_slots`), zero-filled at creation (a valid AtomicU64), only ever
            // accessed through atomics, and lives as long as `self`.
            Storage::Mapped(map) => unsafe {
                std::slice::from_raw_parts(map.start().as_ptr().cast::<AtomicU64>(), self.mask + 1)
            },
        }
    }

    fn bytes(&self) -> usize {
        (self.mask + 1) * size_of::<AtomicU64>()
    }

    /// The slot holding a node that `is_key` accepts, or the empty slot ending its probe run.
    #[inline]
    fn probe(&self, hash: u64, is_key: impl Fn(NonNull<u8>) -> bool) -> (usize, u64) {
        let tag = hash & TAG_MASK;
        let mut i = hash as usize & self.mask;
        loop {
            let slot = self.slots()[i].load(Ordering::Acquire);
            if slot == 0 || (slot & TAG_MASK == tag && is_key(unpack(slot))) {
                return (i, slot);
            }
            i = (i + 1) & self.mask;
        }
    }
}

impl HashIndex {
    /// An index that holds `keys` keys without growing.
    pub(super) fn with_capacity(keys: usize) -> HashIndex {
        let table = Table::with_slots((keys.saturating_mul(4) / 3 + 1).next_power_of_two().max(MIN_SLOTS));
        let bytes = table.bytes();
        let current = AtomicPtr::new(ptr::from_ref::<Table>(&table).cast_mut());
        HashIndex {
            current,
            tables: Mutex::new(vec![table]),
            len: AtomicUsize::new(0),
            bytes: AtomicUsize::new(bytes),
            enabled: AtomicBool::new(true),
        }
    }

    /// The node `is_key` accepts among those indexed under `hash`.
    #[inline]
    pub(super) fn find(&self, hash: u64, is_key: impl Fn(NonNull<u8>) -> bool) -> Probe {
        if !self.enabled.load(Ordering::Acquire) {
            return Probe::Unknown;
        }
        match self.table().probe(hash, is_key) {
            (_, 0) => Probe::Absent,
            (_, slot) => Probe::Found(unpack(slot)),
        }
    }

    /// Starts loading the slot where a probe for `hash` begins.
    #[inline]
    pub(super) fn prefetch(&self, hash: u64) {
        let table = self.table();
        prefetch_read(ptr::from_ref(&table.slots()[hash as usize & table.mask]).cast());
    }

    /// Points the key of `node` (whose hash is `hash`) at `node`, replacing the node `is_key`
    /// accepts if there is one. `hash_of` re-hashes an indexed node's key when the table grows.
    ///
    /// REQUIRES: one writer at a time (the memtable's). The node must be fully written and
    /// linked into the list before this publishes it.
    pub(super) fn set(
        &self,
        hash: u64,
        node: NonNull<u8>,
        is_key: impl Fn(NonNull<u8>) -> bool,
        hash_of: impl Fn(NonNull<u8>) -> u64,
    ) {
        if !self.enabled.load(Ordering::Relaxed) {
            return;
        }
        let addr = node.as_ptr().expose_provenance() as u64;
        if addr & TAG_MASK != 0 {
            // Release: a reader that can see this node's sequence number sees the switch-off.
            self.enabled.store(false, Ordering::Release);
            return;
        }
        let (i, old) = self.table().probe(hash, &is_key);
        let len = self.len.load(Ordering::Relaxed);
        if old == 0 && (len + 1) * 4 > self.table().slots().len() * 3 {
            self.grow(&hash_of);
            return self.set(hash, node, is_key, hash_of);
        }
        self.table().slots()[i].store(hash & TAG_MASK | addr, Ordering::Release);
        if old == 0 {
            self.len.store(len + 1, Ordering::Relaxed);
        }
    }

    /// Keys indexed.
    pub(super) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Bytes of every table allocated so far.
    pub(super) fn memory_usage(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    fn table(&self) -> &Table {
        // SAFETY: `current` always points at a table boxed in `self.tables`, which never drops
        // or moves a table before `self` drops; the Acquire load pairs with the Release store
        // in `grow`, so the table's slots are initialized.
        unsafe { &*self.current.load(Ordering::Acquire) }
    }

    /// Moves every entry into a table twice the size and publishes it.
    #[cold]
    fn grow(&self, hash_of: &impl Fn(NonNull<u8>) -> u64) {
        let old = self.table();
        let new = Table::with_slots(old.slots().len() * 2);
        const AHEAD: usize = 8;
        for (i, slot) in old.slots().iter().enumerate() {
            if let Some(next) = old.slots().get(i + AHEAD) {
                prefetch_read(unpack(next.load(Ordering::Relaxed)).as_ptr());
            }
            let s = slot.load(Ordering::Relaxed);
            if s != 0 {
                let mut j = hash_of(unpack(s)) as usize & new.mask;
                while new.slots()[j].load(Ordering::Relaxed) != 0 {
                    j = (j + 1) & new.mask;
                }
                new.slots()[j].store(s, Ordering::Relaxed);
            }
        }
        self.bytes.store(self.bytes.load(Ordering::Relaxed) + new.bytes(), Ordering::Relaxed);
        let mut tables = self.tables.lock();
        self.current.store(ptr::from_ref::<Table>(&new).cast_mut(), Ordering::Release);
        tables.push(new);
    }
}

/// The node address in a non-empty slot.
#[inline]
fn unpack(slot: u64) -> NonNull<u8> {
    let addr = (slot & !TAG_MASK) as usize;
    // A slot's address came from `expose_provenance` in `set`, so it may be dereferenced.
    NonNull::new(ptr::with_exposed_provenance_mut(addr)).unwrap_or(NonNull::dangling())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Test "nodes": u64 keys at stable addresses; the hash is deliberately weak so that
    /// probing collides.
    fn nodes(n: u64) -> Vec<u64> {
        (0..n).collect()
    }

    fn key_of(node: NonNull<u8>) -> u64 {
        // SAFETY: the tests only index addresses of live `u64`s.
        unsafe { node.cast::<u64>().read() }
    }

    fn weak_hash(key: u64) -> u64 {
        (key % 37) | (key % 5) << 60
    }

    fn set(index: &HashIndex, node: &u64) {
        let key = *node;
        index.set(weak_hash(key), NonNull::from(node).cast(), |n| key_of(n) == key, |n| weak_hash(key_of(n)));
    }

    fn find(index: &HashIndex, key: u64) -> Probe {
        index.find(weak_hash(key), |n| key_of(n) == key)
    }

    #[test]
    fn finds_what_was_set_across_growth_and_nothing_else() {
        let index = HashIndex::with_capacity(0);
        let first = nodes(5000);
        for node in &first {
            set(&index, node);
        }
        assert_eq!(index.len(), 5000);
        assert!(index.tables.lock().len() > 1, "5000 keys outgrow the smallest table");
        for node in &first {
            assert_eq!(find(&index, *node), Probe::Found(NonNull::from(node).cast()));
        }
        assert_eq!(find(&index, 5000), Probe::Absent);
        // Replacing a key keeps one entry per key.
        let newer = nodes(100);
        for node in &newer {
            set(&index, node);
            assert_eq!(find(&index, *node), Probe::Found(NonNull::from(node).cast()));
        }
        assert_eq!(index.len(), 5000);
        let live = index.table().slots().len() * 8;
        assert!(index.memory_usage() > live && index.memory_usage() < 2 * live);
    }

    #[test]
    fn a_sized_index_does_not_grow() {
        let index = HashIndex::with_capacity(3000);
        for node in &nodes(3000) {
            set(&index, node);
        }
        assert_eq!(index.tables.lock().len(), 1);
        assert!(index.len() * 4 <= index.table().slots().len() * 3);
    }

    #[test]
    fn a_large_table_lives_on_its_own_mapping_and_works_the_same() {
        let index = HashIndex::with_capacity(200_000);
        assert!(matches!(index.table().storage, Storage::Mapped(_)), "16 MiB of slots are mapped");
        let all = nodes(1000);
        for node in &all {
            set(&index, node);
            index.prefetch(weak_hash(*node));
        }
        for node in &all {
            assert_eq!(find(&index, *node), Probe::Found(NonNull::from(node).cast()));
        }
        assert_eq!(find(&index, 1000), Probe::Absent);
        assert!(matches!(HashIndex::with_capacity(10).table().storage, Storage::Heap(_)));
    }

    #[test]
    fn readers_probe_while_the_writer_grows_the_table() {
        let index = HashIndex::with_capacity(0);
        let all = nodes(20_000);
        std::thread::scope(|s| {
            s.spawn(|| {
                for node in &all {
                    set(&index, node);
                }
            });
            s.spawn(|| {
                for round in 0..20u64 {
                    for key in (round..20_000).step_by(97) {
                        match find(&index, key) {
                            Probe::Found(n) => assert_eq!(key_of(n), key),
                            Probe::Absent => {}
                            Probe::Unknown => panic!("index switched off"),
                        }
                    }
                }
            });
        });
        assert_eq!(index.len(), 20_000);
    }

    #[test]
    fn slots_pack_address_and_tag() {
        let node = Box::new(7u64);
        let addr = NonNull::from(&*node).cast::<u8>();
        let slot = 0xabcd_u64 << ADDR_BITS | addr.as_ptr().expose_provenance() as u64;
        assert_eq!(unpack(slot), addr);
        assert_eq!(key_of(unpack(slot)), 7);
    }
}
