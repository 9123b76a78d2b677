//! Open SST readers and blob readers, bounded by `max_open_files`, keyed by file number.
//! Opening a file reads and verifies its footer and pins its index and filter; this cache makes
//! that happen once per file rather than once per read. It owns no policy about which files live.

use std::path::PathBuf;
use std::sync::Arc;

use crate::blob::BlobReader;
use crate::cache::ShardedCache;
use crate::db::filenames;
use crate::error::Result;
use crate::fs::FileSystem;
use crate::sst::{BlockCache, Table};

/// Shared handle to the open files of one database.
pub struct TableCache {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    tables: ShardedCache<Arc<Table>>,
    blobs: ShardedCache<Arc<BlobReader>>,
    block_cache: Option<Arc<BlockCache>>,
}

impl TableCache {
    /// A cache keeping about `max_open_files` files open.
    pub fn new(
        dir: PathBuf,
        fs: Arc<dyn FileSystem>,
        max_open_files: usize,
        block_cache: Option<Arc<BlockCache>>,
    ) -> Self {
        // Charge 1 per file, so capacity counts files; each of the 32 shards gets an equal part.
        let cap = max_open_files.max(64);
        Self { dir, fs, tables: ShardedCache::new(cap), blobs: ShardedCache::new(cap / 2), block_cache }
    }

    /// The open reader for SST `number`.
    pub fn table(&self, number: u64) -> Result<Arc<Table>> {
        if let Some(t) = self.tables.get(&(number, 0)) {
            return Ok(t);
        }
        let file = self.fs.open_random(&filenames::table(&self.dir, number))?;
        let table = Arc::new(Table::open(file, number, self.block_cache.clone())?);
        self.tables.insert((number, 0), Arc::clone(&table), 1);
        Ok(table)
    }

    /// The open reader for blob file `number`.
    pub fn blob(&self, number: u64) -> Result<Arc<BlobReader>> {
        if let Some(b) = self.blobs.get(&(number, 0)) {
            return Ok(b);
        }
        let file = self.fs.open_random(&filenames::blob(&self.dir, number))?;
        let reader = Arc::new(BlobReader::open(file, number)?);
        self.blobs.insert((number, 0), Arc::clone(&reader), 1);
        Ok(reader)
    }

    /// Forgets a deleted file and its cached blocks.
    pub fn evict(&self, number: u64) {
        self.tables.erase_file(number);
        self.blobs.erase_file(number);
        if let Some(c) = &self.block_cache {
            c.erase_file(number);
        }
    }

    /// The block cache, if any.
    pub fn block_cache(&self) -> Option<&Arc<BlockCache>> {
        self.block_cache.as_ref()
    }
}
