//! A bump arena for memtable nodes: it owns large chunks of raw memory, hands out 8-byte aligned
//! pieces that never move and are freed only when the whole arena drops, and counts the bytes it
//! has handed out. It must not know anything about what is stored in it, and it must not
//! synchronize writers: callers of [`Arena::allocate`] serialize themselves.
//!
//! Chunks are anonymous mappings of their own, not heap allocations, so a dropped memtable's
//! memory goes back to the kernel at once. From the heap, glibc's malloc raises its mmap
//! threshold when the first freed chunk was mapped, then serves later chunks from its arenas,
//! where freed memtables left holes that block-cache entries and table metadata pinned: an
//! insert benchmark reached 444 MB of anonymous memory for 282 MB of live heap and was killed
//! in a 512 MiB cgroup (docs/performance.md, "Memtable chunks are mapped, not malloc'd").

use std::alloc::{self, Layout};
use std::cell::UnsafeCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Size of an ordinary chunk. Large enough that chunk allocation is rare, small enough that a
/// fresh memtable costs little (untouched chunk pages are never faulted in).
const CHUNK_SIZE: usize = 1 << 20;

/// Requests above this get a chunk of their own, so a big value does not strand the unused
/// tail of the current chunk.
const DEDICATED_THRESHOLD: usize = CHUNK_SIZE / 4;

/// Every allocation is aligned to this, which is what atomic pointers need.
pub(super) const ALIGN: usize = 8;

/// The bump arena. Readers may hold pointers into it from any thread; only one thread at a time
/// may allocate.
pub(super) struct Arena {
    bump: UnsafeCell<Bump>,
    /// Bytes handed out, including alignment padding and abandoned chunk tails. Written only
    /// by the (single) allocating thread, read by anyone.
    usage: AtomicUsize,
}

/// The allocator state, touched only by `allocate` and `drop`.
struct Bump {
    /// Next free byte of the current chunk (dangling when there is no chunk yet).
    cursor: *mut u8,
    /// Bytes left in the current chunk after `cursor`.
    remaining: usize,
    /// Every chunk ever mapped, unmapped on drop.
    chunks: Vec<memmap2::MmapMut>,
}

// SAFETY: `Arena` owns its chunks outright (no thread affinity), so moving it to another thread
// is fine. Sharing it is fine because the only mutation through `&Arena` happens in
// `allocate`, whose contract forbids concurrent calls; `usage` is atomic. The bytes inside the
// chunks are the callers' business: they must publish what they write with Release/Acquire.
unsafe impl Send for Arena {}
// SAFETY: see the `Send` impl above.
unsafe impl Sync for Arena {}

impl Arena {
    /// An empty arena; the first chunk is allocated on first use.
    pub(super) fn new() -> Arena {
        Arena {
            bump: UnsafeCell::new(Bump {
                cursor: NonNull::dangling().as_ptr(),
                remaining: 0,
                chunks: Vec::new(),
            }),
            usage: AtomicUsize::new(0),
        }
    }

    /// Returns `size` bytes aligned to [`ALIGN`], uninitialized, valid until the arena drops and
    /// never moved. The pointer carries the provenance of its whole chunk.
    ///
    /// # Safety
    /// No other call to `allocate` on this arena may run at the same time (single writer).
    pub(super) unsafe fn allocate(&self, size: usize) -> NonNull<u8> {
        let size = size.max(1).next_multiple_of(ALIGN);
        // SAFETY: the caller guarantees this is the only `allocate` running, and nothing else
        // touches `bump` except `drop`, which has `&mut self`; so this is the only reference.
        let bump = unsafe { &mut *self.bump.get() };
        let (ptr, consumed) = bump.take(size);
        // A plain load+store instead of fetch_add: only the single allocator writes `usage`.
        self.usage.store(self.usage.load(Ordering::Relaxed) + consumed, Ordering::Relaxed);
        ptr
    }

    /// Bytes handed out so far (the arena's share of the memtable's footprint).
    pub(super) fn memory_usage(&self) -> usize {
        self.usage.load(Ordering::Relaxed)
    }
}

impl Bump {
    /// Carves `size` (a multiple of `ALIGN`) bytes; returns them and the bytes this consumed.
    fn take(&mut self, size: usize) -> (NonNull<u8>, usize) {
        if size > DEDICATED_THRESHOLD {
            return (self.new_chunk(size), size);
        }
        let mut consumed = size;
        if size > self.remaining {
            consumed += self.remaining; // the old tail is lost for good
            self.cursor = self.new_chunk(CHUNK_SIZE).as_ptr();
            self.remaining = CHUNK_SIZE;
        }
        let ptr = self.cursor;
        // SAFETY: `size <= remaining`, so `cursor + size` stays inside (or one past) the chunk.
        self.cursor = unsafe { ptr.add(size) };
        self.remaining -= size;
        // SAFETY: `ptr` points into a live chunk, so it is not null.
        (unsafe { NonNull::new_unchecked(ptr) }, consumed)
    }

    /// Maps and records a chunk of `size` bytes (non-zero, multiple of `ALIGN`), unmapped when
    /// the arena drops.
    #[cold]
    fn new_chunk(&mut self, size: usize) -> NonNull<u8> {
        // A mapping starts on a page, so an arena that only hands out multiples of 64 bytes
        // hands out cache-line-aligned pieces (the key tree's nodes).
        let failed =
            || alloc::handle_alloc_error(Layout::from_size_align(size, 4096).unwrap_or(Layout::new::<u8>()));
        let Ok(mut map) = memmap2::MmapMut::map_anon(size) else { failed() };
        let Some(chunk) = NonNull::new(map.as_mut_ptr()) else { failed() };
        self.chunks.push(map);
        chunk
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_aligned_disjoint_and_counted() {
        let arena = Arena::new();
        let mut last_end = 0usize;
        let mut total = 0;
        for size in [1usize, 7, 8, 13, 100, 4096] {
            // SAFETY: single-threaded test; no concurrent `allocate`.
            let p = unsafe { arena.allocate(size) }.as_ptr() as usize;
            assert_eq!(p % ALIGN, 0);
            assert!(p >= last_end, "allocations from one chunk must not overlap");
            last_end = p + size;
            total += size.next_multiple_of(ALIGN);
        }
        assert_eq!(arena.memory_usage(), total);
    }

    #[test]
    fn big_requests_get_their_own_chunk_and_memory_is_writable() {
        let arena = Arena::new();
        // SAFETY: single-threaded test; no concurrent `allocate`.
        let small = unsafe { arena.allocate(16) };
        // SAFETY: as above.
        let big = unsafe { arena.allocate(CHUNK_SIZE * 2) };
        // SAFETY: as above.
        let small2 = unsafe { arena.allocate(16) };
        assert_eq!(small2.as_ptr() as usize, small.as_ptr() as usize + 16, "current chunk kept");
        // SAFETY: `big` is a fresh, exclusive allocation of CHUNK_SIZE * 2 bytes.
        unsafe { big.as_ptr().write_bytes(0xab, CHUNK_SIZE * 2) };
        assert_eq!(arena.memory_usage(), 32 + CHUNK_SIZE * 2);
    }
}
