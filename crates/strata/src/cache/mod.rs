//! A sharded CLOCK cache bounded by total charge in bytes, used for uncompressed data blocks.
//! Each shard is a hash map plus a clock ring behind its own reader-writer lock: a hit takes the
//! shard's lock shared, sets a reference bit (an atomic, written only when it was clear) and
//! clones an `Arc`, so hits never wait for each other, even when a reader holding the lock is
//! preempted (32 reader threads on 2 cores). Inserts and evictions take it exclusively. It owns
//! no IO and knows nothing of block formats.
//!
//! Capacity the cache does not use can be lent out (`try_reserve` / `release`): memory held
//! elsewhere on the cache's budget (unflushed memtables) that the cache then keeps clear of.
//! A reservation only takes what is free; it never evicts a cached entry to make room.
//!
//! Memory pinned elsewhere for as long as its owner lives (an open table's index and filter)
//! is charged with [`ShardedCache::pin`]: unlike a loan, a pin always succeeds and the cache
//! evicts entries to make room, so the cache's capacity bounds its entries and the pinned
//! memory together, as RocksDB's `cache_index_and_filter_blocks` bounds them.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use parking_lot::RwLock;

const SHARD_BITS: u32 = 5;
const SHARDS: usize = 1 << SHARD_BITS;

/// Cache key: (file number, block offset).
pub type CacheKey = (u64, u64);

/// A hash for cache keys: file numbers and block offsets are the engine's own, so no hostile
/// input can aim at one bucket, and SipHash (the std default) cost more than the rest of a hit.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        // Murmur3's finaliser: every input bit reaches the low bits (the map's bucket index) and
        // the high ones (its control bytes, and the shard).
        let mut h = self.0;
        h = (h ^ (h >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        h = (h ^ (h >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(23) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type KeyHash = BuildHasherDefault<KeyHasher>;

struct Slot<V> {
    key: CacheKey,
    value: V,
    charge: usize,
    referenced: AtomicBool,
}

struct Shard<V> {
    map: HashMap<CacheKey, usize, KeyHash>,
    ring: Vec<Option<Slot<V>>>,
    free: Vec<usize>,
    hand: usize,
    usage: usize,
}

impl<V: Clone> Shard<V> {
    fn get(&self, key: &CacheKey) -> Option<V> {
        let idx = *self.map.get(key)?;
        let slot = self.ring.get(idx)?.as_ref()?;
        // Read before writing: a hot block's bit is already set, and a store would pull its
        // cache line away from the other cores reading it.
        if !slot.referenced.load(Ordering::Relaxed) {
            slot.referenced.store(true, Ordering::Relaxed);
        }
        Some(slot.value.clone())
    }

    /// Inserts or replaces an entry, then evicts until the shard's usage fits `capacity` (its
    /// share of the cache's capacity less what is lent out).
    fn insert(&mut self, key: CacheKey, value: V, charge: usize, capacity: usize) {
        if let Some(&idx) = self.map.get(&key) {
            if let Some(Some(slot)) = self.ring.get_mut(idx) {
                self.usage = self.usage - slot.charge + charge;
                slot.value = value;
                slot.charge = charge;
                *slot.referenced.get_mut() = true;
            }
        } else {
            self.evict_for(charge, capacity);
            let slot = Slot { key, value, charge, referenced: AtomicBool::new(false) };
            let idx = match self.free.pop() {
                Some(i) => {
                    self.ring[i] = Some(slot);
                    i
                }
                None => {
                    self.ring.push(Some(slot));
                    self.ring.len() - 1
                }
            };
            self.map.insert(key, idx);
            self.usage += charge;
        }
        self.evict_for(0, capacity);
    }

    /// Sweeps the clock hand until `extra` more bytes fit in `capacity` (or the shard is empty).
    fn evict_for(&mut self, extra: usize, capacity: usize) {
        let mut sweeps = 0usize;
        while self.usage + extra > capacity && !self.map.is_empty() && sweeps < 3 * self.ring.len() {
            sweeps += 1;
            if self.hand >= self.ring.len() {
                self.hand = 0;
            }
            let idx = self.hand;
            self.hand += 1;
            let evict = match &mut self.ring[idx] {
                // A referenced entry gets a second chance: clear its bit and move on.
                Some(slot) => !std::mem::replace(slot.referenced.get_mut(), false),
                None => false,
            };
            if evict {
                if let Some(slot) = self.ring[idx].take() {
                    self.map.remove(&slot.key);
                    self.usage -= slot.charge;
                    self.free.push(idx);
                }
            }
        }
    }

    fn erase_file(&mut self, file: u64) {
        for idx in 0..self.ring.len() {
            if matches!(&self.ring[idx], Some(s) if s.key.0 == file) {
                if let Some(slot) = self.ring[idx].take() {
                    self.map.remove(&slot.key);
                    self.usage -= slot.charge;
                    self.free.push(idx);
                }
            }
        }
    }
}

/// A concurrent cache from `(file, offset)` to `V`, bounded by the sum of charges.
pub struct ShardedCache<V> {
    shards: Vec<RwLock<Shard<V>>>,
    hasher: KeyHash,
    capacity: usize,
    /// Bytes of `capacity` lent out by `try_reserve`: entries are evicted to keep the sum of
    /// charges within `capacity - reserved`.
    reserved: AtomicUsize,
    /// The shards' total charge, kept beside them so that a reservation is judged without
    /// locking every shard.
    usage: AtomicUsize,
    /// Bytes pinned outside the cache on its budget ([`pin`](Self::pin)); entries are evicted
    /// to keep their charges within `capacity - reserved - pinned`.
    pinned: AtomicUsize,
}

/// Memory charged to a cache while this value lives ([`ShardedCache::pin`]); dropping it
/// gives the capacity back.
pub struct PinnedCharge<V: Clone> {
    cache: std::sync::Arc<ShardedCache<V>>,
    bytes: usize,
}

impl<V: Clone> PinnedCharge<V> {
    /// The bytes charged.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl<V: Clone> Drop for PinnedCharge<V> {
    fn drop(&mut self) {
        self.cache.pinned.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

impl<V: Clone> std::fmt::Debug for PinnedCharge<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedCharge").field("bytes", &self.bytes).finish()
    }
}

impl<V: Clone> ShardedCache<V> {
    /// A cache holding at most `capacity` bytes of charge (0 disables caching).
    pub fn new(capacity: usize) -> Self {
        let shards = (0..SHARDS)
            .map(|_| {
                RwLock::new(Shard {
                    map: HashMap::default(),
                    ring: Vec::new(),
                    free: Vec::new(),
                    hand: 0,
                    usage: 0,
                })
            })
            .collect();
        Self {
            shards,
            hasher: Default::default(),
            capacity,
            reserved: AtomicUsize::new(0),
            usage: AtomicUsize::new(0),
            pinned: AtomicUsize::new(0),
        }
    }

    /// One shard's share of the capacity neither lent out nor pinned.
    fn shard_capacity(&self) -> usize {
        let taken = self.reserved.load(Ordering::Relaxed).saturating_add(self.pinned());
        self.capacity.saturating_sub(taken) / SHARDS
    }

    fn shard(&self, key: &CacheKey) -> &RwLock<Shard<V>> {
        let h = self.hasher.hash_one(key);
        &self.shards[(h >> (64 - SHARD_BITS)) as usize]
    }

    /// Looks up an entry, marking it recently used.
    pub fn get(&self, key: &CacheKey) -> Option<V> {
        if self.capacity == 0 {
            return None;
        }
        self.shard(key).read().get(key)
    }

    /// Inserts or replaces an entry, evicting others if needed.
    pub fn insert(&self, key: CacheKey, value: V, charge: usize) {
        if self.capacity == 0 {
            return;
        }
        let capacity = self.shard_capacity();
        let mut shard = self.shard(&key).write();
        let before = shard.usage;
        shard.insert(key, value, charge, capacity);
        self.account(before, shard.usage);
    }

    /// Drops every entry of a file (called when the file is deleted).
    pub fn erase_file(&self, file: u64) {
        for s in &self.shards {
            let mut shard = s.write();
            let before = shard.usage;
            shard.erase_file(file);
            self.account(before, shard.usage);
        }
    }

    /// Carries one shard's change of usage into the total; called with that shard locked.
    fn account(&self, before: usize, after: usize) {
        if after >= before {
            self.usage.fetch_add(after - before, Ordering::Relaxed);
        } else {
            self.usage.fetch_sub(before - after, Ordering::Relaxed);
        }
    }

    /// Total charge currently held.
    pub fn usage(&self) -> usize {
        self.usage.load(Ordering::Relaxed)
    }

    /// Bytes currently lent out by [`try_reserve`](Self::try_reserve).
    pub fn reserved(&self) -> usize {
        self.reserved.load(Ordering::Relaxed)
    }

    /// Whether [`try_reserve`](Self::try_reserve) of `bytes` would succeed now.
    pub fn can_reserve(&self, bytes: usize, max_reserved: usize) -> bool {
        self.fits(self.reserved.load(Ordering::Relaxed), bytes, max_reserved)
    }

    /// Lends `bytes` of capacity that no entry uses, keeping the total lent at most
    /// `max_reserved`; returns false (lending nothing) if either does not fit. The cache then
    /// holds at most `capacity - reserved` until [`release`](Self::release). Never evicts.
    pub fn try_reserve(&self, bytes: usize, max_reserved: usize) -> bool {
        self.reserved
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |r| {
                self.fits(r, bytes, max_reserved).then_some(r + bytes)
            })
            .is_ok()
    }

    /// Returns `bytes` lent by [`try_reserve`](Self::try_reserve) to the cache.
    pub fn release(&self, bytes: usize) {
        let _ = self
            .reserved
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |r| Some(r.saturating_sub(bytes)));
    }

    fn fits(&self, reserved: usize, bytes: usize, max_reserved: usize) -> bool {
        let lent = reserved.saturating_add(bytes);
        lent <= max_reserved
            && self.usage().saturating_add(lent).saturating_add(self.pinned()) <= self.capacity
    }

    /// Charges `bytes` held outside the cache to its capacity until the returned value drops.
    /// Always succeeds: entries are evicted as later inserts come, so a cache whose capacity
    /// is all pinned keeps nothing. A cache of capacity 0 (disabled) charges nothing.
    pub fn pin(self: &std::sync::Arc<Self>, bytes: usize) -> PinnedCharge<V> {
        let bytes = if self.capacity == 0 { 0 } else { bytes };
        self.pinned.fetch_add(bytes, Ordering::Relaxed);
        PinnedCharge { cache: std::sync::Arc::clone(self), bytes }
    }

    /// Bytes currently charged by [`pin`](Self::pin).
    pub fn pinned(&self) -> usize {
        self.pinned.load(Ordering::Relaxed)
    }

    /// The configured capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

impl<V> std::fmt::Debug for ShardedCache<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedCache").field("capacity", &self.capacity).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_within_capacity_and_keeps_hot_entries() {
        let c: ShardedCache<u64> = ShardedCache::new(SHARDS * 1000);
        for i in 0..100_000u64 {
            c.insert((1, i), i, 100);
            assert!(c.get(&(1, 0)).is_some() || i < 2, "hot entry evicted at {i}");
        }
        assert!(c.usage() <= SHARDS * 1000);
        assert_eq!(c.get(&(1, 99_999)), Some(99_999));
    }

    #[test]
    fn pinned_memory_evicts_entries_and_returns_on_drop() {
        let c = std::sync::Arc::new(ShardedCache::<u64>::new(SHARDS * 1000));
        for i in 0..10_000u64 {
            c.insert((1, i), i, 100);
        }
        assert!(c.usage() > SHARDS * 900, "the cache fills up first: {}", c.usage());
        let pin = c.pin(SHARDS * 600);
        assert_eq!((c.pinned(), pin.bytes()), (SHARDS * 600, SHARDS * 600));
        for i in 10_000..20_000u64 {
            c.insert((1, i), i, 100);
        }
        assert!(c.usage() <= SHARDS * 400, "entries fit beside the pinned bytes: {}", c.usage());
        assert!(!c.can_reserve(SHARDS * 100, usize::MAX), "nothing is free to lend");
        drop(pin);
        assert_eq!(c.pinned(), 0);
        for i in 20_000..30_000u64 {
            c.insert((1, i), i, 100);
        }
        assert!(c.usage() > SHARDS * 900, "the capacity is back: {}", c.usage());
        let disabled = std::sync::Arc::new(ShardedCache::<u64>::new(0));
        assert_eq!(disabled.pin(1 << 20).bytes(), 0);
    }

    #[test]
    fn erase_file_removes_only_that_file() {
        let c: ShardedCache<u64> = ShardedCache::new(1 << 20);
        c.insert((1, 0), 1, 10);
        c.insert((2, 0), 2, 10);
        c.erase_file(1);
        assert_eq!(c.get(&(1, 0)), None);
        assert_eq!(c.get(&(2, 0)), Some(2));
    }

    #[test]
    fn a_reservation_takes_only_free_capacity_and_keeps_the_cache_clear_of_it() {
        let c: ShardedCache<u64> = ShardedCache::new(SHARDS * 1000);
        for i in 0..(SHARDS as u64 * 5) {
            c.insert((1, i), i, 100);
        }
        let used = c.usage();
        assert!(used > 0 && used <= SHARDS * 1000);
        // More than is free, or more than the cap, is refused and lends nothing.
        assert!(!c.try_reserve(SHARDS * 1000 - used + 1, usize::MAX));
        assert!(!c.try_reserve(100, 99));
        assert_eq!(c.reserved(), 0);
        let lend = (SHARDS * 1000 - used) / 2;
        assert!(c.can_reserve(lend, lend));
        assert!(c.try_reserve(lend, lend));
        assert!(!c.can_reserve(1, lend), "the cap counts what is already lent");
        assert_eq!(c.usage(), used, "reserving evicts nothing");
        // Filling the cache now keeps usage within what is not lent.
        for i in 0..(SHARDS as u64 * 50) {
            c.insert((2, i), i, 100);
        }
        assert!(c.usage() + c.reserved() <= SHARDS * 1000, "{} + {}", c.usage(), c.reserved());
        c.release(lend);
        assert_eq!(c.reserved(), 0);
        c.release(lend);
        assert_eq!(c.reserved(), 0, "releasing more than lent saturates");
        for i in 0..(SHARDS as u64 * 50) {
            c.insert((3, i), i, 100);
        }
        assert!(c.usage() > SHARDS * 1000 - lend, "released capacity is used again");
    }

    #[test]
    fn the_usage_total_follows_inserts_replacements_and_erasures() {
        let c: ShardedCache<u64> = ShardedCache::new(1 << 20);
        c.insert((1, 0), 1, 10);
        c.insert((1, 1), 1, 30);
        c.insert((2, 0), 2, 5);
        assert_eq!(c.usage(), 45);
        c.insert((1, 1), 1, 20);
        assert_eq!(c.usage(), 35);
        c.erase_file(1);
        assert_eq!(c.usage(), 5);
    }

    #[test]
    fn concurrent_hits_and_inserts_return_only_the_value_stored_under_the_key() {
        let c: ShardedCache<u64> = ShardedCache::new(SHARDS * 2000);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let c = &c;
                s.spawn(move || {
                    for i in 0..20_000u64 {
                        let key = (t % 2, i % 500);
                        match c.get(&key) {
                            Some(v) => assert_eq!(v, key.0 * 1_000_000 + key.1),
                            None => c.insert(key, key.0 * 1_000_000 + key.1, 100),
                        }
                    }
                });
            }
        });
        assert!(c.usage() <= SHARDS * 2000);
    }

    #[test]
    fn keys_spread_over_every_shard() {
        let c: ShardedCache<u64> = ShardedCache::new(1 << 20);
        let mut hit = [false; SHARDS];
        for file in 1..4u64 {
            for block in 0..64u64 {
                let shard = c.shard(&(file, block * 4096)) as *const _;
                let i = c.shards.iter().position(|s| std::ptr::eq(s, shard)).unwrap();
                hit[i] = true;
            }
        }
        assert!(hit.iter().all(|&h| h), "{hit:?}");
    }

    #[test]
    fn zero_capacity_caches_nothing() {
        let c: ShardedCache<u64> = ShardedCache::new(0);
        c.insert((1, 0), 1, 10);
        assert_eq!(c.get(&(1, 0)), None);
    }
}
