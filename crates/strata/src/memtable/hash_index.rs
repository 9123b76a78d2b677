//! The memtable's point index: an open-addressing hash table from a user key to the list
//! node of its newest version, so that a point read, and an update of a key already in the
//! memtable, skip the search for its place in the list.
//! It owns the slot layout, probing and growth. It must not know the node layout (callers
//! implement [`Nodes`]) and never removes a key. One writer at a time, any number of lock-free
//! readers.
//!
//! A slot is one `u64`: zero when empty, otherwise the node's address in the low 48 bits and
//! the top 16 bits of the key's hash above it, so a probe rejects almost every foreign key
//! without touching its node. Linear probing from a home slot that the hash's low 32 bits pick
//! by multiplying and shifting ([`home_slot`]), so a table may have any number of slots.
//!
//! Sizing: the index's bytes count against `write_buffer_size`, so they decide how many
//! entries a memtable holds before it is flushed. A table is sized for its expected keys at 3/4
//! full and grows only past 7/8, so a memtable that holds a few more keys than its predecessor
//! still fits. Power-of-two tables cost 10.7 to 21.3 bytes per key depending on where the
//! count fell (LinkBench's memtables: 14 on average, with a cliff to 21 once a memtable held
//! more keys than a power of two allowed); these cost 10.7 to 12.2.
//!
//! Growing never stops the writer for long: it publishes an empty table twice the size, and
//! each later `set` moves a few slots of the old table across (re-hashing means reading each
//! node's key, ~10 ms for a million keys if done at once). Until the old table is drained, a
//! key missing from the new table is looked up in the old one. That is exact for any reader:
//! it loads `drained` before probing, a key moves before the sequence number of any later
//! write is published, and a key updated meanwhile is found in the new table first. Old tables
//! stay allocated until the index drops, because a reader may still be probing one (together
//! they are smaller than the live table). A memtable sized from its predecessor's key count
//! never grows.
//!
//! Should an address not fit in 48 bits (no current Linux target hands those out unasked), the
//! index switches itself off for good and every lookup answers [`Probe::Unknown`].

use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::slot_hint::SlotHint;
use super::zeroed::ZeroedMap;
use crate::util::prefetch::prefetch_read;

const ADDR_BITS: u32 = 48;
const TAG_MASK: u64 = !0 << ADDR_BITS;
const MIN_SLOTS: usize = 1024;
/// A table holds at most this share of its slots in use (numerator, denominator)...
const MAX_LOAD: (usize, usize) = (7, 8);
/// ...and is sized to hold its expected keys at this share.
const SIZED_LOAD: (usize, usize) = (3, 4);
/// Old-table slots moved per `set` while draining: a table fills from 7/16 to at most 1/2 of
/// its slots before the previous one is empty, far from the 7/8 that would make it grow again.
const DRAIN_STEP: usize = 8;

/// Most slots a table may have: home slots come from 32 bits of the hash. A memtable with more
/// keys than 7/8 of this (3.7 billion) is far past any `write_buffer_size` a machine can hold;
/// should one get there, the index switches itself off as for a wide address.
pub(super) const MAX_SLOTS: usize = u32::MAX as usize;

/// The slot where a probe for `hash` starts in a table of `len` slots: the hash's low 32 bits
/// scaled to `len` (Lemire's multiply-shift), uniform for any `len` up to 2^32.
#[inline]
pub(super) fn home_slot(hash: u64, len: usize) -> usize {
    // Wrapping only matters for a `len` beyond MAX_SLOTS, which only a torn `SlotHint` has.
    ((hash & 0xffff_ffff).wrapping_mul(len as u64) >> 32) as usize
}

/// How the index reads the nodes it points at.
pub(super) trait Nodes {
    /// The user key held by `node`, an address the index was given by `set`.
    fn user_key(&self, node: NonNull<u8>) -> &[u8];
    /// The hash `key` is filed under; the same function callers pass hashes from.
    fn hash(&self, key: &[u8]) -> u64;
}

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
    /// The table readers probe first; points into `tables`.
    current: AtomicPtr<Table>,
    /// Every table built, the current one last. Only the writer locks it, and only to grow.
    /// Boxed so that `current` and `Table::previous` stay valid when the vector reallocates.
    #[allow(clippy::vec_box)]
    tables: Mutex<Vec<Box<Table>>>,
    /// Keys indexed. Written only by the writer.
    len: AtomicUsize,
    /// Next slot of the previous table to move into the current one. Writer only.
    drain_cursor: AtomicUsize,
    /// Bytes of all tables, for the memtable's footprint.
    bytes: AtomicUsize,
    /// False once an address did not fit in a slot.
    enabled: AtomicBool,
}

/// A table: its slots live in a [`ZeroedMap`], so a new one needs no clearing pass.
struct Table {
    slots: ZeroedMap,
    /// Number of slots.
    len: usize,
    /// The table this one replaced (null for the first); its keys move here gradually.
    previous: *const Table,
    /// True once every key of `previous` is in this table too (or there is none). Release
    /// store by the writer after the last move; readers load it before probing.
    drained: AtomicBool,
}

// SAFETY: `previous` only ever points at another table owned by the same `HashIndex`, which
// outlives every `&Table`; everything else in a table is atomics or owned memory.
unsafe impl Send for Table {}
// SAFETY: see the `Send` impl above.
unsafe impl Sync for Table {}

impl Table {
    fn with_slots(n: usize, previous: *const Table) -> Box<Table> {
        debug_assert!(n > 0 && u32::try_from(n).is_ok());
        let slots = ZeroedMap::new(n * size_of::<AtomicU64>());
        Box::new(Table { slots, len: n, previous, drained: AtomicBool::new(previous.is_null()) })
    }

    #[inline]
    fn slots(&self) -> &[AtomicU64] {
        // SAFETY: the mapping is page-aligned (so aligned for AtomicU64), `len` slots long
        // (`with_slots`), zero-filled at creation (a valid AtomicU64), only ever accessed
        // through atomics, and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.slots.start().as_ptr().cast::<AtomicU64>(), self.len) }
    }

    fn bytes(&self) -> usize {
        self.len * size_of::<AtomicU64>()
    }

    /// The table still being drained into this one, if any. `drained` must have been loaded
    /// (Acquire) as false before the probe this serves.
    fn previous(&self) -> &Table {
        debug_assert!(!self.previous.is_null());
        // SAFETY: a table that is not drained has a predecessor, owned (boxed, never freed or
        // moved) by the same index as `self`, so it lives at least as long as `&self`.
        unsafe { &*self.previous }
    }

    /// The slot holding `key`'s node, or the empty slot ending its probe run.
    #[inline]
    fn probe(&self, nodes: &impl Nodes, hash: u64, key: &[u8]) -> (usize, u64) {
        let tag = hash & TAG_MASK;
        let mut i = home_slot(hash, self.len);
        loop {
            let slot = self.slots()[i].load(Ordering::Acquire);
            if slot == 0 || (slot & TAG_MASK == tag && nodes.user_key(unpack(slot)) == key) {
                return (i, slot);
            }
            i += 1;
            if i == self.len {
                i = 0;
            }
        }
    }
}

impl HashIndex {
    /// An index that holds `keys` keys without growing.
    pub(super) fn with_capacity(keys: usize) -> HashIndex {
        let slots = (keys.saturating_mul(SIZED_LOAD.1) / SIZED_LOAD.0 + 1).clamp(MIN_SLOTS, MAX_SLOTS);
        let table = Table::with_slots(slots, ptr::null());
        let bytes = table.bytes();
        let current = AtomicPtr::new(ptr::from_ref::<Table>(&table).cast_mut());
        HashIndex {
            current,
            tables: Mutex::new(vec![table]),
            len: AtomicUsize::new(0),
            drain_cursor: AtomicUsize::new(0),
            bytes: AtomicUsize::new(bytes),
            enabled: AtomicBool::new(true),
        }
    }

    /// The node of `key` (whose hash is `hash`).
    #[inline]
    pub(super) fn find(&self, nodes: &impl Nodes, hash: u64, key: &[u8]) -> Probe {
        if !self.enabled.load(Ordering::Acquire) {
            return Probe::Unknown;
        }
        let table = self.table();
        let drained = table.drained.load(Ordering::Acquire);
        let mut slot = table.probe(nodes, hash, key).1;
        if slot == 0 && !drained {
            slot = table.previous().probe(nodes, hash, key).1;
        }
        if slot == 0 {
            Probe::Absent
        } else {
            Probe::Found(unpack(slot))
        }
    }

    /// Starts loading the slot where a probe for `hash` begins.
    #[inline]
    pub(super) fn prefetch(&self, hash: u64) {
        let table = self.table();
        prefetch_read(ptr::from_ref(&table.slots()[home_slot(hash, table.len)]).cast());
    }

    /// Where probes of the current table start, for a prefetch ahead of time.
    pub(super) fn slot_hint(&self) -> SlotHint {
        if !self.enabled.load(Ordering::Relaxed) {
            return SlotHint::default();
        }
        let table = self.table();
        SlotHint { slots: table.slots.start().as_ptr().addr(), len: table.len }
    }

    /// Points `key` (whose hash is `hash`) at `node`, replacing the node it named before.
    ///
    /// REQUIRES: one writer at a time (the memtable's). `node` holds `key`, and it is fully
    /// written and linked into the list before this publishes it.
    pub(super) fn set(&self, nodes: &impl Nodes, hash: u64, key: &[u8], node: NonNull<u8>) {
        if !self.enabled.load(Ordering::Relaxed) {
            return;
        }
        let addr = node.as_ptr().expose_provenance() as u64;
        if addr & TAG_MASK != 0 {
            // Release: a reader that can see this node's sequence number sees the switch-off.
            self.enabled.store(false, Ordering::Release);
            return;
        }
        let table = self.table();
        let drained = table.drained.load(Ordering::Relaxed);
        let (i, old) = table.probe(nodes, hash, key);
        if old == 0 && (drained || table.previous().probe(nodes, hash, key).1 == 0) {
            let len = self.len.load(Ordering::Relaxed);
            if (len + 1) * MAX_LOAD.1 > table.len * MAX_LOAD.0 {
                if table.len == MAX_SLOTS {
                    self.enabled.store(false, Ordering::Release);
                    return;
                }
                self.grow(nodes);
                return self.set(nodes, hash, key, node);
            }
            self.len.store(len + 1, Ordering::Relaxed);
        }
        table.slots()[i].store(hash & TAG_MASK | addr, Ordering::Release);
        if !drained {
            self.drain(nodes, table, DRAIN_STEP);
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

    /// Publishes an empty table twice the size of the current one, which drains into it.
    #[cold]
    fn grow(&self, nodes: &impl Nodes) {
        let old = self.table();
        if !old.drained.load(Ordering::Relaxed) {
            self.drain(nodes, old, usize::MAX);
        }
        let new = Table::with_slots((old.len * 2).min(MAX_SLOTS), old);
        self.bytes.store(self.bytes.load(Ordering::Relaxed) + new.bytes(), Ordering::Relaxed);
        self.drain_cursor.store(0, Ordering::Relaxed);
        let mut tables = self.tables.lock();
        self.current.store(ptr::from_ref::<Table>(&new).cast_mut(), Ordering::Release);
        tables.push(new);
    }

    /// Moves up to `step` slots of `table`'s predecessor into `table`, skipping keys already
    /// there (set again since the growth); marks `table` drained after the last one.
    fn drain(&self, nodes: &impl Nodes, table: &Table, step: usize) {
        let previous = table.previous().slots();
        let start = self.drain_cursor.load(Ordering::Relaxed);
        let end = start.saturating_add(step).min(previous.len());
        const AHEAD: usize = 4;
        for i in start..end {
            if let Some(next) = previous.get(i + AHEAD) {
                prefetch_read(unpack(next.load(Ordering::Relaxed)).as_ptr());
            }
            let slot = previous[i].load(Ordering::Relaxed);
            if slot == 0 {
                continue;
            }
            let key = nodes.user_key(unpack(slot));
            let (j, there) = table.probe(nodes, nodes.hash(key), key);
            if there == 0 {
                table.slots()[j].store(slot, Ordering::Release);
            }
        }
        self.drain_cursor.store(end, Ordering::Relaxed);
        if end == previous.len() {
            table.drained.store(true, Ordering::Release);
        }
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

    /// Test nodes: 8-byte keys (big-endian numbers) at stable addresses. The hash spreads keys
    /// over buckets but gives them only five tags, so tags clash all the time.
    struct U64Nodes;

    impl Nodes for U64Nodes {
        fn user_key(&self, node: NonNull<u8>) -> &[u8] {
            // SAFETY: the tests only index addresses of live `[u8; 8]`s.
            unsafe { std::slice::from_raw_parts(node.as_ptr(), 8) }
        }

        fn hash(&self, key: &[u8]) -> u64 {
            let k = u64::from_be_bytes(key.try_into().unwrap_or_default());
            (k.wrapping_mul(0x9e37_79b9_7f4a_7c15) & !TAG_MASK) | (k % 5) << 60
        }
    }

    type TestNode = [u8; 8];

    fn nodes(n: u64) -> Vec<TestNode> {
        (0..n).map(u64::to_be_bytes).collect()
    }

    fn number(node: &TestNode) -> u64 {
        u64::from_be_bytes(*node)
    }

    fn set(index: &HashIndex, node: &TestNode) {
        index.set(&U64Nodes, U64Nodes.hash(node), node, NonNull::from(node).cast());
    }

    fn find(index: &HashIndex, key: u64) -> Probe {
        let key = key.to_be_bytes();
        index.find(&U64Nodes, U64Nodes.hash(&key), &key)
    }

    fn found(node: &TestNode) -> Probe {
        Probe::Found(NonNull::from(node).cast())
    }

    #[test]
    fn finds_what_was_set_across_growth_and_nothing_else() {
        let index = HashIndex::with_capacity(0);
        let first = nodes(5000);
        for (i, node) in first.iter().enumerate() {
            set(&index, node);
            // Every key set so far is found at every point of every drain.
            if i % 97 == 0 {
                assert!(first[..=i].iter().all(|n| find(&index, number(n)) == found(n)), "after {i}");
            }
        }
        assert_eq!(index.len(), 5000);
        assert!(index.tables.lock().len() > 1, "5000 keys outgrow the smallest table");
        assert_eq!(find(&index, 5000), Probe::Absent);
        // Replacing a key keeps one entry per key, also while a table drains.
        let newer = nodes(5000);
        for node in &newer {
            set(&index, node);
            assert_eq!(find(&index, number(node)), found(node));
        }
        assert_eq!(index.len(), 5000);
        assert!(newer.iter().all(|n| find(&index, number(n)) == found(n)));
        let live = index.table().slots().len() * 8;
        assert!(index.memory_usage() > live && index.memory_usage() < 2 * live);
    }

    #[test]
    fn a_key_replaced_before_its_slot_drains_keeps_the_new_node() {
        let index = HashIndex::with_capacity(0);
        let old = nodes(896); // exactly 7/8 of the smallest table
        for node in &old {
            set(&index, node);
        }
        assert_eq!(index.tables.lock().len(), 1);
        let extra = 896u64.to_be_bytes();
        set(&index, &extra); // grows; 8 slots drain
        assert_eq!(index.tables.lock().len(), 2);
        assert!(!index.table().drained.load(Ordering::Relaxed));
        // Replace the keys whose old slots drain last.
        let last_slots: Vec<u64> = {
            let previous = index.table().previous().slots();
            let keys = previous.iter().rev().map(|s| s.load(Ordering::Relaxed)).filter(|&s| s != 0);
            keys.take(50)
                .map(|s| u64::from_be_bytes(U64Nodes.user_key(unpack(s)).try_into().unwrap()))
                .collect()
        };
        let newer = nodes(896);
        for &key in &last_slots {
            set(&index, &newer[key as usize]);
            assert_eq!(find(&index, key), found(&newer[key as usize]));
        }
        assert!(!index.table().drained.load(Ordering::Relaxed), "50 sets drain 400 of 1024 slots");
        while !index.table().drained.load(Ordering::Relaxed) {
            index.drain(&U64Nodes, index.table(), DRAIN_STEP);
        }
        for &key in &last_slots {
            assert_eq!(find(&index, key), found(&newer[key as usize]), "the drained old node must not win");
        }
        let untouched = old.iter().filter(|k| !last_slots.contains(&number(k)));
        assert!(
            untouched.clone().count() == 846
                && untouched.into_iter().all(|n| find(&index, number(n)) == found(n))
        );
        assert_eq!(index.len(), 897);
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
    fn a_sized_index_takes_an_eighth_more_keys_without_growing() {
        // A memtable often holds a few more keys than the one it was sized from: growing then
        // would triple the index's bytes and flush the memtable early.
        let index = HashIndex::with_capacity(3000);
        let slots = index.table().slots().len();
        assert_eq!(slots, 4001);
        let more = slots * 7 / 8;
        // The index holds the nodes' addresses: they must outlive every probe.
        let all = nodes(more as u64 + 1);
        for node in &all[..more] {
            set(&index, node);
        }
        assert_eq!(index.tables.lock().len(), 1, "{more} keys in {slots} slots");
        assert!(index.memory_usage() * 100 < 3000 * 1075, "at most 10.75 bytes per expected key");
        set(&index, &all[more]);
        assert_eq!(index.tables.lock().len(), 2, "one more key grows it");
        assert!(all.iter().all(|n| find(&index, number(n)) == found(n)));
    }

    #[test]
    fn home_slots_cover_any_table_length_evenly() {
        for len in [1usize, 2, 3, 1000, 1024, 4001, 266_667, MAX_SLOTS] {
            let mut counts = [0u32; 8];
            for i in 0..80_000u64 {
                let home = home_slot(crate::util::hash::hash64(&i.to_le_bytes()), len);
                assert!(home < len, "{home} of {len}");
                counts[home * 8 / len] += 1;
            }
            if len >= 8 {
                // Each eighth of the table gets about an eighth of the keys.
                assert!(counts.iter().all(|&c| (9_000..11_000).contains(&c)), "{len}: {counts:?}");
            }
        }
        assert_eq!(home_slot(u64::MAX, MAX_SLOTS), MAX_SLOTS - 1);
        assert_eq!(home_slot(0, MAX_SLOTS), 0);
    }

    #[test]
    fn a_large_sized_table_works_the_same() {
        let index = HashIndex::with_capacity(200_000);
        assert_eq!(index.table().slots().len(), 266_667, "200k keys 3/4 full");
        let all = nodes(1000);
        for node in &all {
            set(&index, node);
            index.prefetch(U64Nodes.hash(node));
        }
        assert!(all.iter().all(|n| find(&index, number(n)) == found(n)));
        assert_eq!(find(&index, 1000), Probe::Absent);
    }

    #[test]
    fn readers_never_miss_a_key_set_before_they_looked() {
        let index = HashIndex::with_capacity(0);
        let all = nodes(20_000);
        // The writer publishes how many keys it has set, as the DB publishes sequence numbers.
        let published = AtomicUsize::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                for (i, node) in all.iter().enumerate() {
                    set(&index, node);
                    published.store(i + 1, Ordering::Release);
                }
            });
            s.spawn(|| {
                for round in 0..2000u64 {
                    let visible = published.load(Ordering::Acquire) as u64;
                    for key in (round % 97..visible).step_by(997) {
                        match find(&index, key) {
                            Probe::Found(n) => assert_eq!(U64Nodes.user_key(n), key.to_be_bytes()),
                            other => panic!("key {key} of {visible} published: {other:?}"),
                        }
                    }
                }
            });
        });
        assert_eq!(index.len(), 20_000);
    }

    #[test]
    fn slots_pack_address_and_tag() {
        let node = Box::new(7u64.to_be_bytes());
        let addr = NonNull::from(&*node).cast::<u8>();
        let slot = 0xabcd_u64 << ADDR_BITS | addr.as_ptr().expose_provenance() as u64;
        assert_eq!(unpack(slot), addr);
        assert_eq!(U64Nodes.user_key(unpack(slot)), 7u64.to_be_bytes());
    }
}
