//! Lazily zero-filled memory for the hash index's tables: an anonymous mapping, whose pages the
//! kernel zeroes as they are first touched. A fresh 16 MiB table then costs the writer one
//! `mmap` at a memtable switch instead of a 16 MiB clearing pass (milliseconds the writer
//! would wait), and a small one that is never filled never becomes resident. It owns the
//! mapping; it must not know what is stored in it.
//!
//! On Linux the mapping is shared anonymous memory. A private one would map the kernel's shared
//! zero page on a slot's first read (a lookup of an absent key), and the first write to that
//! slot's page then replaces it: a copy-on-write fault that must flush the page from every
//! other CPU's TLB with an inter-processor interrupt, which on this VM costs up to hundreds of
//! microseconds when the other vCPU is not running. A shared mapping allocates the page on the
//! first touch, read or write, and maps it writable (docs/performance.md, "TLB shootdowns in
//! the hash index"). It is excluded from `fork` children, which must not write into it.
//!
//! Not done: advising these mappings onto transparent huge pages made the slowest writes much
//! slower for no throughput (docs/performance.md, "Write-path choices, as measured").

use std::alloc::{handle_alloc_error, Layout};
use std::ptr::NonNull;

/// One zero-filled mapping, unmapped on drop.
pub(super) struct ZeroedMap {
    start: NonNull<u8>,
    /// The mapping's length, for `munmap`.
    #[cfg(target_os = "linux")]
    len: usize,
    /// Owns the mapping where memmap2 made it (targets other than Linux).
    #[cfg(not(target_os = "linux"))]
    _map: memmap2::MmapMut,
}

// SAFETY: the mapping is plain memory owned by this value; the pointer only addresses it.
// What callers store in it, and how they share it, is their business.
unsafe impl Send for ZeroedMap {}
// SAFETY: see the `Send` impl above; `&ZeroedMap` only hands out the address.
unsafe impl Sync for ZeroedMap {}

impl ZeroedMap {
    /// `len` (non-zero) zero bytes, page-aligned. Running out of address space is treated like
    /// any failed allocation.
    pub(super) fn new(len: usize) -> ZeroedMap {
        let len = len.max(1);
        #[cfg(target_os = "linux")]
        let map = ZeroedMap { start: map_shared_zeroes(len), len };
        #[cfg(not(target_os = "linux"))]
        let map = {
            let Ok(mut map) = memmap2::MmapMut::map_anon(len) else { out_of_memory(len) };
            ZeroedMap { start: NonNull::new(map.as_mut_ptr()).unwrap_or(NonNull::dangling()), _map: map }
        };
        map
    }

    /// The first byte; page-aligned, valid for `len` bytes for as long as `self` lives.
    pub(super) fn start(&self) -> NonNull<u8> {
        self.start
    }
}

/// Maps `len` bytes of shared anonymous memory, left out of `fork` children.
#[cfg(target_os = "linux")]
fn map_shared_zeroes(len: usize) -> NonNull<u8> {
    use rustix::mm::{madvise, mmap_anonymous, Advice, MapFlags, ProtFlags};
    let prot = ProtFlags::READ | ProtFlags::WRITE;
    // SAFETY: a new mapping at an address the kernel picks cannot overlap memory anything else
    // owns; only this `ZeroedMap` addresses it, and its `Drop` unmaps it.
    let Ok(ptr) = (unsafe { mmap_anonymous(std::ptr::null_mut(), len, prot, MapFlags::SHARED) }) else {
        out_of_memory(len)
    };
    // A child of `fork` would otherwise share the pages and could write into a live index.
    // Failure only loses that protection (kernels before 2.6.16), so it is not an error.
    // SAFETY: `ptr..ptr + len` is exactly the mapping made above; the advice changes no contents.
    let _ = unsafe { madvise(ptr, len, Advice::LinuxDontFork) };
    NonNull::new(ptr.cast()).unwrap_or_else(|| out_of_memory(len))
}

#[cfg(target_os = "linux")]
impl Drop for ZeroedMap {
    fn drop(&mut self) {
        // SAFETY: `start..start + len` is the mapping `map_shared_zeroes` made, unmapped only
        // here; whoever stored pointers into it (the hash index) is gone or going with it.
        // An error would mean the range was not mapped, which cannot happen; nothing to do.
        let _ = unsafe { rustix::mm::munmap(self.start.as_ptr().cast(), self.len) };
    }
}

/// Reports a failed mapping the way a failed allocation is reported.
fn out_of_memory(len: usize) -> ! {
    handle_alloc_error(Layout::from_size_align(len, 4096).unwrap_or(Layout::new::<u8>()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_are_zeroed_aligned_and_writable() {
        for len in [8, 4096, 3 << 20] {
            let map = ZeroedMap::new(len);
            let p = map.start().as_ptr();
            assert_eq!(p.addr() % 4096, 0, "{len}");
            // SAFETY: `p` is valid for `len` bytes, exclusively ours.
            let bytes = unsafe { std::slice::from_raw_parts_mut(p, len) };
            assert!(bytes.iter().all(|&b| b == 0));
            bytes[len - 1] = 7;
            bytes[0] = 9;
            assert_eq!((bytes[0], bytes[len - 1]), (9, 7));
        }
    }

    /// The read-then-write pattern of the index must not go through the zero page: the mapping
    /// is shared (`s` in /proc/self/maps) and not inherited by `fork` (`dc` in its VmFlags).
    #[cfg(target_os = "linux")]
    #[test]
    fn linux_maps_are_shared_and_not_inherited_by_fork() {
        let map = ZeroedMap::new(3 << 20);
        let start = map.start().as_ptr().addr();
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("read /proc/self/smaps");
        let mut lines = smaps.lines().skip_while(|line| !line.starts_with(&format!("{start:x}-")));
        let header = lines.next().expect("the mapping is listed in /proc/self/smaps");
        assert_eq!(header.split_whitespace().nth(1), Some("rw-s"), "{header}");
        let flags = lines.find(|line| line.starts_with("VmFlags:")).expect("a VmFlags line");
        assert!(flags.split_whitespace().any(|f| f == "dc"), "{flags}");
    }
}
