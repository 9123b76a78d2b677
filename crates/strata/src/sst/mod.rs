//! Sorted string tables: the immutable, sorted, checksummed files that hold flushed and compacted
//! data. `builder` writes them, `table` reads them; `block`, `bloom` and `format` are the layers
//! of the byte format described normatively in `docs/format.md`.
//!
//! This module owns the SST file format and nothing above it: it does not pick file names or
//! levels, merge tables, or hide obsolete versions.

pub mod block;
pub mod bloom;
pub mod builder;
pub mod format;
pub mod prefix_index;
pub mod table;

use std::sync::Arc;

pub use block::{Block, BlockBuilder, BlockIter};
pub use builder::{TableBuilder, TableBuilderOptions, TableSummary};
pub use format::{TableProperties, FORMAT_VERSION};
pub use table::{Table, TableIterator};

/// The shared cache of uncompressed data blocks, keyed by (file number, block offset).
pub type BlockCache = crate::cache::ShardedCache<Arc<Block>>;

#[cfg(test)]
mod tests {
    #[test]
    fn shared_types_are_thread_safe() {
        fn is<T: Send + Sync + 'static>() {}
        is::<super::Block>();
        is::<super::Table>();
        is::<super::BlockCache>();
        fn sendable<T: Send + 'static>() {}
        sendable::<super::TableIterator>();
        sendable::<super::BlockIter>();
    }
}

#[cfg(test)]
pub(crate) mod testfs {
    //! In-memory files for SST tests.

    use std::sync::Arc;

    use parking_lot::Mutex;

    use crate::error::{Error, Result};
    use crate::fs::{RandomAccessFile, WritableFile};

    /// A writable file whose bytes stay readable through the shared handle.
    #[derive(Clone, Default)]
    pub struct MemWritable(pub Arc<Mutex<Vec<u8>>>);

    impl WritableFile for MemWritable {
        fn append(&mut self, data: &[u8]) -> Result<()> {
            self.0.lock().extend_from_slice(data);
            Ok(())
        }
        fn sync_data(&mut self) -> Result<()> {
            Ok(())
        }
        fn len(&self) -> u64 {
            self.0.lock().len() as u64
        }
    }

    /// A read-only file over a byte vector.
    pub struct MemRandom(pub Vec<u8>);

    impl RandomAccessFile for MemRandom {
        fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
            let start = usize::try_from(offset).map_err(|_| Error::InvalidArgument("offset".into()))?;
            let src = self.0.get(start..start.saturating_add(buf.len())).ok_or_else(|| {
                Error::from(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "read past end"))
            })?;
            buf.copy_from_slice(src);
            Ok(())
        }
        fn size(&self) -> u64 {
            self.0.len() as u64
        }
    }

    /// A read-only file over a byte vector that also offers itself as a memory mapping, so the
    /// table's zero-copy path runs.
    pub struct MappedMemRandom(pub MemRandom);

    impl RandomAccessFile for MappedMemRandom {
        fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
            self.0.read_exact_at(offset, buf)
        }
        fn size(&self) -> u64 {
            self.0.size()
        }
        fn mapped(&self) -> Option<&[u8]> {
            Some(&self.0 .0)
        }
    }
}
