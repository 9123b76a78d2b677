//! Zero-filled anonymous memory for a large, randomly probed table (the memtable's hash
//! index), placed on 2 MiB boundaries and advised onto transparent huge pages: with 4 KiB pages
//! a probe into a 16 MiB table is a TLB miss as well as a cache miss. It owns the mapping and
//! its alignment; it must not know what is stored in it. Without huge pages (another OS, THP
//! switched off, the advice refused) the memory works the same on ordinary pages.
//!
//! Only the index uses it. Skiplist nodes on huge pages were measured too (2026-11-25): no
//! gain on updaterandom or mergerandom, and slower loads, since every 2 MiB chunk is then a
//! fresh mapping faulted in at once.

use std::alloc::{handle_alloc_error, Layout};
use std::ptr::NonNull;

/// A transparent huge page on x86-64 and most aarch64 kernels.
pub(super) const HUGE_PAGE: usize = 2 << 20;

/// One zero-filled mapping, unmapped on drop.
pub(super) struct HugePageMap {
    /// Owns the mapping; never read through, only kept alive.
    _map: memmap2::MmapMut,
    start: NonNull<u8>,
}

// SAFETY: the mapping is plain memory owned by this value; the pointer only addresses it.
// What callers store in it, and how they share it, is their business.
unsafe impl Send for HugePageMap {}
// SAFETY: see the `Send` impl above; `&HugePageMap` only hands out the address.
unsafe impl Sync for HugePageMap {}

impl HugePageMap {
    /// `len` zero bytes; when `len` is at least a huge page they start on a huge-page
    /// boundary and are advised onto huge pages. Running out of address space is treated like
    /// any allocation failure.
    pub(super) fn new(len: usize) -> HugePageMap {
        let huge = len >= HUGE_PAGE;
        // One extra huge page of address space (never touched, so never backed) lets the region
        // start on a boundary wherever the kernel places the mapping.
        let reserve = if huge { len + HUGE_PAGE } else { len.max(1) };
        let Ok(mut map) = memmap2::MmapMut::map_anon(reserve) else {
            handle_alloc_error(Layout::from_size_align(reserve, HUGE_PAGE).unwrap_or(Layout::new::<u8>()))
        };
        let offset = if huge { map.as_ptr().addr().wrapping_neg() % HUGE_PAGE } else { 0 };
        #[cfg(target_os = "linux")]
        if huge {
            // Advice only: refused, the memory still works on ordinary pages.
            let _ = map.advise_range(memmap2::Advice::HugePage, offset, len);
        }
        // SAFETY: `offset + len <= reserve`, so the result stays inside the mapping.
        let start = unsafe { map.as_mut_ptr().add(offset) };
        let start = NonNull::new(start).unwrap_or(NonNull::dangling());
        HugePageMap { _map: map, start }
    }

    /// The first byte; page-aligned, valid for `len` bytes for as long as `self` lives.
    pub(super) fn start(&self) -> NonNull<u8> {
        self.start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_are_zeroed_aligned_and_writable() {
        for len in [8, 4096, HUGE_PAGE, 3 * HUGE_PAGE] {
            let map = HugePageMap::new(len);
            let p = map.start().as_ptr();
            if len >= HUGE_PAGE {
                assert_eq!(p.addr() % HUGE_PAGE, 0, "{len}");
            }
            // SAFETY: `p` is valid for `len` bytes, exclusively ours.
            let bytes = unsafe { std::slice::from_raw_parts_mut(p, len) };
            assert!(bytes.iter().all(|&b| b == 0));
            bytes[len - 1] = 7;
            bytes[0] = 9;
            assert_eq!((bytes[0], bytes[len - 1]), (9, 7));
        }
    }
}
