//! A hint to the CPU that memory will be read soon. Only a hint: it never reads, faults or
//! changes anything observable, so callers may pass any address, valid or not.

/// Starts loading the cache line holding `addr` into every cache level.
#[inline]
pub fn prefetch_read(addr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: SSE is part of the x86_64 baseline, and a prefetch never dereferences its
        // address in any observable way: it does not fault, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(addr.cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

#[cfg(test)]
mod tests {
    use super::prefetch_read;

    #[test]
    fn any_address_is_accepted() {
        let data = [7u8; 64];
        prefetch_read(data.as_ptr());
        prefetch_read(std::ptr::null());
        prefetch_read(usize::MAX as *const u8);
        prefetch_read(data.as_ptr().wrapping_add(1 << 40));
        assert_eq!(data[0], 7);
    }
}
