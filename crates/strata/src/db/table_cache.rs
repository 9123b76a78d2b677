//! Open SST readers and blob readers, bounded by `max_open_files`, keyed by file number.
//! Opening a file reads and verifies its footer and pins its index and filter; this cache makes
//! that happen once per file rather than once per read. It owns no policy about which files live.
//!
//! Lookups are on every read's path, so they take no lock: the map is immutable and swapped
//! whole (read-copy-update) on the rare open or eviction.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::Mutex;

use crate::blob::BlobReader;
use crate::error::{Error, Result};
use crate::filenames;
use crate::fs::FileSystem;
use crate::sst::{BlockCache, Table, TableIterator};

/// A multiplicative hash for file numbers: they are small distinct integers, no DoS concern.
#[derive(Default)]
struct FileNumberHasher(u64);

impl Hasher for FileNumberHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type FileMap<T> = HashMap<u64, Arc<T>, BuildHasherDefault<FileNumberHasher>>;

/// Open readers of one kind, read without locks and bounded by `capacity` entries.
struct OpenFiles<T> {
    map: ArcSwap<FileMap<T>>,
    update: Mutex<()>,
    capacity: usize,
}

impl<T> OpenFiles<T> {
    fn new(capacity: usize) -> Self {
        Self { map: ArcSwap::from_pointee(FileMap::default()), update: Mutex::new(()), capacity }
    }

    fn get(&self, number: u64) -> Option<Arc<T>> {
        self.map.load().get(&number).cloned()
    }

    fn insert(&self, number: u64, value: Arc<T>) {
        let _guard = self.update.lock();
        let mut next = FileMap::clone(&self.map.load());
        while next.len() >= self.capacity {
            // Any victim will do: a reader holding it keeps it alive, a later read reopens it.
            let Some(&victim) = next.keys().next() else { break };
            next.remove(&victim);
        }
        next.insert(number, value);
        self.map.store(Arc::new(next));
    }

    fn remove(&self, number: u64) {
        let _guard = self.update.lock();
        if self.map.load().contains_key(&number) {
            let mut next = FileMap::clone(&self.map.load());
            next.remove(&number);
            self.map.store(Arc::new(next));
        }
    }
}

/// Shared handle to the open files of one database.
pub struct TableCache {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    tables: OpenFiles<Table>,
    blobs: OpenFiles<BlobReader>,
    block_cache: Option<Arc<BlockCache>>,
    /// Files are mapped while `db_bytes` is at most this (0: never mapped); see
    /// `Options::mmap_reads_max_db_size`.
    mmap_max_db_bytes: u64,
    /// The live SST and blob bytes of the database, as of the last installed version.
    db_bytes: AtomicU64,
}

impl TableCache {
    /// A cache keeping about `max_open_files` files open, memory-mapped while the database's
    /// files total at most `mmap_max_db_bytes` (0: never).
    pub fn new(
        dir: PathBuf,
        fs: Arc<dyn FileSystem>,
        max_open_files: usize,
        block_cache: Option<Arc<BlockCache>>,
        mmap_max_db_bytes: u64,
    ) -> Self {
        let cap = max_open_files.max(16);
        let (tables, blobs) = (OpenFiles::new(cap), OpenFiles::new(cap / 2));
        let db_bytes = AtomicU64::new(0);
        Self { dir, fs, tables, blobs, block_cache, mmap_max_db_bytes, db_bytes }
    }

    /// Records the live SST and blob bytes of the database; files opened from now on are mapped
    /// only if it is at most the mapping limit.
    pub fn note_db_bytes(&self, bytes: u64) {
        self.db_bytes.store(bytes, Ordering::Relaxed);
    }

    /// Whether a file opened now would be memory-mapped.
    pub fn maps_new_files(&self) -> bool {
        self.mmap_max_db_bytes > 0 && self.db_bytes.load(Ordering::Relaxed) <= self.mmap_max_db_bytes
    }

    fn open_file(&self, path: &std::path::Path) -> Result<Arc<dyn crate::fs::RandomAccessFile>> {
        if self.maps_new_files() {
            self.fs.open_random(path)
        } else {
            self.fs.open_random_unmapped(path)
        }
    }

    /// How many table readers stay open.
    pub fn table_capacity(&self) -> usize {
        self.tables.capacity
    }

    /// How many blob readers stay open.
    pub fn blob_capacity(&self) -> usize {
        self.blobs.capacity
    }

    /// The open reader for SST `number`.
    pub fn table(&self, number: u64) -> Result<Arc<Table>> {
        if let Some(t) = self.tables.get(number) {
            return Ok(t);
        }
        let file = self.open_file(&filenames::table(&self.dir, number))?;
        let table = Arc::new(Table::open(file, number, self.block_cache.clone())?);
        self.tables.insert(number, Arc::clone(&table));
        Ok(table)
    }

    /// An iterator over table `number`. It takes one reference to the table, not the two that
    /// `table(number)?.iter()` takes and drops: each is a write to a counter every reading
    /// thread shares, and iterators are made per seek.
    pub fn table_iter(&self, number: u64, fill_cache: bool) -> Result<TableIterator> {
        if let Some(t) = self.tables.map.load().get(&number) {
            return Ok(t.iter(fill_cache));
        }
        Ok(self.table(number)?.iter(fill_cache))
    }

    /// Runs `f` on the open reader for table `number`, borrowed from the map without touching
    /// its reference count: on a point lookup from several threads, that shared counter was a
    /// cache line every read wrote.
    pub fn with_table<R>(&self, number: u64, f: impl FnOnce(&Table) -> R) -> Result<R> {
        if let Some(t) = self.tables.map.load().get(&number) {
            return Ok(f(t));
        }
        Ok(f(&*self.table(number)?))
    }

    /// [`TableCache::with_table`] for blob file `number`.
    pub fn with_blob<R>(&self, number: u64, f: impl FnOnce(&BlobReader) -> R) -> Result<R> {
        if let Some(b) = self.blobs.map.load().get(&number) {
            return Ok(f(b));
        }
        Ok(f(&*self.blob(number)?))
    }

    /// The open reader for blob file `number`.
    pub fn blob(&self, number: u64) -> Result<Arc<BlobReader>> {
        if let Some(b) = self.blobs.get(number) {
            return Ok(b);
        }
        let file = self.open_file(&filenames::blob(&self.dir, number)).map_err(|e| match e {
            // A table points into a blob file that is gone (repair moves a damaged one to
            // lost/): the database is damaged, which is corruption, not an IO failure.
            Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                Error::corruption(format!("blob file {number:06}.blob is missing"))
            }
            e => e,
        })?;
        let reader = Arc::new(BlobReader::open(file, number)?);
        self.blobs.insert(number, Arc::clone(&reader));
        Ok(reader)
    }

    /// Forgets a deleted file and its cached blocks.
    pub fn evict(&self, number: u64) {
        self.tables.remove(number);
        self.blobs.remove(number);
        if let Some(c) = &self.block_cache {
            c.erase_file(number);
        }
    }

    /// The block cache, if any.
    pub fn block_cache(&self) -> Option<&Arc<BlockCache>> {
        self.block_cache.as_ref()
    }
}
