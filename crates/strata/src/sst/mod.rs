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

pub use block::Block;
pub use builder::{TableBuilder, TableBuilderOptions};
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
        sendable::<super::block::BlockIter>();
    }
}
