//! A range of a memory-mapped file that remembers its address, so hot readers (block iterators,
//! blob readers) reach the bytes without a dynamic call to [`RandomAccessFile::mapped`] per
//! access. It owns the one unsafe step this needs; it must not read or interpret the bytes.

use std::ops::Range;
use std::sync::Arc;

use super::RandomAccessFile;

/// Bytes `range` of `file.mapped()`, with the file kept open (and so mapped) by an `Arc`.
pub struct MappedRange {
    _file: Arc<dyn RandomAccessFile>,
    ptr: *const u8,
    len: usize,
}

// SAFETY: the pointer only reads memory owned by `_file`, which is `Send + Sync`; nothing ever
// writes through it.
unsafe impl Send for MappedRange {}
// SAFETY: as above: shared access is read-only.
unsafe impl Sync for MappedRange {}

impl MappedRange {
    /// `range` of the file's mapping; `None` when the file is not mapped or the range does not
    /// lie inside the mapping.
    pub fn new(file: Arc<dyn RandomAccessFile>, range: Range<usize>) -> Option<Self> {
        let bytes = file.mapped()?.get(range)?;
        let (ptr, len) = (bytes.as_ptr(), bytes.len());
        Some(Self { _file: file, ptr, len })
    }

    /// The bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr..ptr + len` was a subslice of `_file.mapped()` (checked in `new`). That
        // slice borrows from the file object, which `_file` keeps alive at a fixed address and
        // which nothing can reach mutably while this `Arc` exists, so the bytes stay valid and
        // unchanged for as long as `self` lives (strata maps only immutable files read-only,
        // see `fs::posix::map_file`).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Number of bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty range.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Result;

    struct Mem(Vec<u8>);

    impl RandomAccessFile for Mem {
        fn read_exact_at(&self, _offset: u64, _buf: &mut [u8]) -> Result<()> {
            unreachable!("mapped reads only")
        }
        fn size(&self) -> u64 {
            self.0.len() as u64
        }
        fn mapped(&self) -> Option<&[u8]> {
            Some(&self.0)
        }
    }

    struct Unmapped;

    impl RandomAccessFile for Unmapped {
        fn read_exact_at(&self, _offset: u64, _buf: &mut [u8]) -> Result<()> {
            Ok(())
        }
        fn size(&self) -> u64 {
            8
        }
    }

    #[test]
    fn outlives_every_other_handle_and_crosses_threads() {
        let file: Arc<dyn RandomAccessFile> = Arc::new(Mem((0..100u8).collect()));
        let r = Arc::new(MappedRange::new(Arc::clone(&file), 10..20).unwrap());
        drop(file);
        assert_eq!(r.bytes(), &(10..20u8).collect::<Vec<_>>()[..]);
        assert_eq!((r.len(), r.is_empty()), (10, false));
        let other = Arc::clone(&r);
        let seen = std::thread::spawn(move || other.bytes().to_vec()).join().unwrap();
        assert_eq!(seen, r.bytes());
    }

    #[test]
    fn ranges_outside_the_mapping_and_unmapped_files_are_refused() {
        let file: Arc<dyn RandomAccessFile> = Arc::new(Mem(vec![1; 10]));
        assert!(MappedRange::new(Arc::clone(&file), 5..11).is_none());
        assert!(MappedRange::new(file, 0..10).is_some_and(|r| r.len() == 10));
        assert!(MappedRange::new(Arc::new(Unmapped), 0..1).is_none());
    }
}
