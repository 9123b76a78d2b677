//! The memtable: the in-memory, sorted home of recent writes until they are flushed to an SST.
//! It owns entry storage (an arena-backed ordered list of entries, indexed by a B+-tree of
//! user keys and by a hash table from each user key to its newest version; see `list`),
//! point-lookup walking and an
//! [`InternalIterator`] over its entries, plus counters the DB uses to decide when to flush. It
//! Range tombstones (`delete_range`) are kept beside the entries, in `range_dels`, never in the
//! list. It
//! must not decide visibility (snapshots, tombstones, merges are resolved by the caller), must
//! not synchronize writers (the DB's write-group leader is the only writer), and never removes
//! or rewrites an entry.
//!
//! Entry encoding, stored in each list node right after its link to the next node:
//!
//! ```text
//! varint(ikey_len) | ikey = user_key ++ trailer (8 bytes LE, (seq << 8) | kind) | varint(value_len) | value
//! ```
//!
//! where a value longer than 64 bytes is replaced by the address of its bytes in a separate
//! value arena, so that the nodes a search walks stay close together (see `list`).
//!
//! Varints are LEB128 (as in `util::coding`). Entries order by [`key::compare`]: user key
//! ascending, then sequence number descending, so the newest version of a key comes first.
//!
//! Thread safety: `MemTable` is `Send + Sync` because all shared state is either atomic or
//! inside the entry list, whose nodes are fully written before a Release store publishes them and
//! are immutable afterwards; readers never take a lock. Readers' borrowed keys and values live
//! in the arena, which drops with the `MemTable`; iterators hold an `Arc` to keep it alive.

mod arena;
mod hash_index;
mod key_tree;
mod list;
mod range_dels;
mod slot_hint;
mod zeroed;

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::iter::InternalIterator;
use crate::key::{self, SeqNo, ValueKind};
use crate::range_del::{Fragments, RangeTombstone};
use list::{EntryList, Node};
use range_dels::RangeDels;
pub use slot_hint::{SharedSlotHint, SlotHint};

/// An in-memory sorted table of internal entries. See the module docs. Aligned so the `Arc`
/// reference count every reader's iterator changes has a cache line of its own.
#[repr(align(128))]
pub struct MemTable {
    list: EntryList,
    /// Whether anything was added: `entries > 0`, kept apart because every point read checks
    /// it, and `entries` shares its cache line with the counters `add` writes on every insert.
    has_entries: WrittenOnce,
    entries: AtomicU64,
    deletes: AtomicU64,
    first_seq: AtomicU64,
    largest_seq: AtomicU64,
    range_dels: RangeDels,
}

/// A flag on a cache line of its own, written once and then only read: readers keep their copy
/// of the line while the writer updates its neighbours.
#[repr(align(64))]
struct WrittenOnce(AtomicBool);

impl MemTable {
    /// An empty memtable.
    pub fn new() -> MemTable {
        MemTable::with_expected_keys(0)
    }

    /// An empty memtable sized for `keys` distinct user keys (typically the count of the
    /// memtable it replaces), so its hash index need not grow while the writer waits.
    pub fn with_expected_keys(keys: usize) -> MemTable {
        MemTable {
            list: EntryList::with_expected_keys(keys),
            has_entries: WrittenOnce(AtomicBool::new(false)),
            entries: AtomicU64::new(0),
            deletes: AtomicU64::new(0),
            first_seq: AtomicU64::new(0),
            largest_seq: AtomicU64::new(0),
            range_dels: RangeDels::default(),
        }
    }

    /// Adds the entry `(user_key, seq, kind) -> value`.
    ///
    /// REQUIRES: external synchronization among writers: only one thread calls `add` at a time
    /// (the DB's write-group leader). Safe to call concurrently with readers and iterators.
    /// Breaking this is memory-safe but serializes on an internal lock and may miscount stats.
    /// REQUIRES: `(user_key, seq, kind)` was not added before (sequence numbers are unique).
    /// A [`ValueKind::RangeDelete`] (`user_key` its begin, `value` its end) goes to the range
    /// tombstones, not the list.
    pub fn add(&self, seq: SeqNo, kind: ValueKind, user_key: &[u8], value: &[u8]) {
        if kind == ValueKind::RangeDelete {
            self.range_dels.add(seq, user_key, value);
        } else {
            self.list.insert(user_key, key::pack_trailer(seq, kind as u8), value);
        }
        // Load + store rather than read-modify-write: there is a single writer, and readers
        // only need approximate, eventually exact values.
        let n = self.entries.load(Ordering::Relaxed);
        if n == 0 {
            self.has_entries.0.store(true, Ordering::Relaxed);
        }
        if n == 0 || seq < self.first_seq.load(Ordering::Relaxed) {
            self.first_seq.store(seq, Ordering::Relaxed);
        }
        if seq > self.largest_seq.load(Ordering::Relaxed) {
            self.largest_seq.store(seq, Ordering::Relaxed);
        }
        if kind == ValueKind::Delete {
            self.deletes.store(self.deletes.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
        self.entries.store(n + 1, Ordering::Relaxed);
    }

    /// Calls `f(internal_key, value)` for the first entry whose internal key is `>= lookup` and
    /// each following entry in order, until `f` returns false or the entries run out. `lookup`
    /// is an internal key, typically `key::seek_key(user_key, snapshot_seq)`. When no entry has
    /// `lookup`'s user key, `f` may not be called at all: callers stop at another user key
    /// anyway. Allocation-free; a key whose newest version is visible costs no search.
    pub fn get(&self, lookup: &[u8], f: &mut dyn FnMut(&[u8], &[u8]) -> bool) {
        // An empty memtable (every read of a database that is not being written) must not pay
        // the hash index's probe: a random slot of a table sized for a full memtable is a cache
        // and TLB miss. A reader whose sequence covers an entry sees the flag `add` set before
        // the write was published, so this cannot hide a visible entry.
        if self.is_empty() {
            return;
        }
        let mut node = self.list.seek_versions(lookup);
        while let Some(n) = node {
            let (k, v) = self.list.entry(n);
            if !f(k, v) {
                return;
            }
            node = self.list.successor(n);
        }
    }

    /// Whether a range tombstone was added (one load: the read path's branch).
    #[inline]
    pub fn has_range_dels(&self) -> bool {
        self.range_dels.any()
    }

    /// The range tombstones, fragmented; `None` when there are none.
    pub fn range_dels(&self) -> Option<Arc<Fragments>> {
        self.range_dels.fragments()
    }

    /// The range tombstones as written (what a flush writes to its table).
    pub fn range_tombstones(&self) -> Vec<RangeTombstone> {
        self.range_dels.raw()
    }

    /// An iterator over every entry; it keeps this memtable alive.
    pub fn iter(self: &Arc<Self>) -> MemTableIterator {
        MemTableIterator { mem: Arc::clone(self), node: None }
    }

    /// Where this memtable's index probes start now, for writers to prefetch a key's slot
    /// before they reach [`MemTable::add`]. It goes stale when the index grows.
    pub fn slot_hint(&self) -> SlotHint {
        self.list.slot_hint()
    }

    /// Bytes of entry storage used so far, including node links and arena padding.
    pub fn approximate_memory_usage(&self) -> usize {
        self.list.memory_usage() + self.range_dels.memory_usage()
    }

    /// Number of distinct user keys added.
    pub fn distinct_keys(&self) -> usize {
        self.list.distinct_keys()
    }

    /// Number of entries added (range tombstones included).
    pub fn num_entries(&self) -> u64 {
        self.entries.load(Ordering::Relaxed)
    }

    /// Number of [`ValueKind::Delete`] entries added.
    pub fn num_deletes(&self) -> u64 {
        self.deletes.load(Ordering::Relaxed)
    }

    /// True when nothing has been added.
    pub fn is_empty(&self) -> bool {
        !self.has_entries.0.load(Ordering::Relaxed)
    }

    /// The smallest sequence number added, or 0 when empty.
    pub fn first_seq(&self) -> SeqNo {
        self.first_seq.load(Ordering::Relaxed)
    }

    /// The largest sequence number added, or 0 when empty.
    pub fn largest_seq(&self) -> SeqNo {
        self.largest_seq.load(Ordering::Relaxed)
    }
}

impl Default for MemTable {
    fn default() -> Self {
        MemTable::new()
    }
}

impl fmt::Debug for MemTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemTable")
            .field("entries", &self.num_entries())
            .field("deletes", &self.num_deletes())
            .field("first_seq", &self.first_seq())
            .field("largest_seq", &self.largest_seq())
            .field("memory", &self.approximate_memory_usage())
            .finish()
    }
}

/// An [`InternalIterator`] over a [`MemTable`]. It sees entries added before each positioning
/// call and possibly some added concurrently; what it sees is always sorted. `prev` costs a
/// search (O(log n)) because readers may not follow the writer's back links.
pub struct MemTableIterator {
    mem: Arc<MemTable>,
    /// Current node of `mem.list`, or `None` when not valid.
    node: Option<Node>,
}

impl MemTableIterator {
    fn list(&self) -> &EntryList {
        &self.mem.list
    }
}

impl InternalIterator for MemTableIterator {
    fn valid(&self) -> bool {
        self.node.is_some()
    }

    fn seek_to_first(&mut self) {
        self.node = self.list().first();
    }

    fn seek_to_last(&mut self) {
        self.node = self.list().last();
    }

    fn seek(&mut self, target: &[u8]) {
        self.node = self.list().seek(target);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.node = self.list().seek_before(target, true);
    }

    fn next(&mut self) {
        debug_assert!(self.valid());
        self.node = self.node.and_then(|n| self.list().successor(n));
        // A scan (flush above all: snappy on every value) spends long enough on each entry for
        // the next value and the node after it to arrive meanwhile; nodes and values sit in
        // insertion order, not key order, so without this each is a cache miss.
        if let Some(n) = self.node {
            self.list().prefetch_ahead(n);
        }
    }

    fn prev(&mut self) {
        debug_assert!(self.valid());
        self.node = self.node.and_then(|n| self.list().seek_before(self.list().key(n), false));
    }

    fn key(&self) -> &[u8] {
        debug_assert!(self.valid());
        self.node.map_or(&[], |n| self.list().key(n))
    }

    fn value(&self) -> &[u8] {
        debug_assert!(self.valid());
        self.node.map_or(&[], |n| self.list().value(n))
    }

    fn status(&self) -> crate::error::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
