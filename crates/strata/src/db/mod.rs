//! The database handle [`Db`], its iterator [`DbIterator`] and its counters [`Stats`], all
//! re-exported at the crate root. The options-file readers ([`Options::from_ini_str`],
//! [`Options::load`], [`Options::load_latest`]) live here too.
//!
//! ```
//! # let dir = tempfile::tempdir()?;
//! use strata::{Db, Options, ReadOptions, WriteOptions};
//! let db = Db::open(dir.path(), Options::default())?;
//! db.put(b"hello", b"world")?;
//! assert_eq!(db.get(b"hello")?, Some(b"world".to_vec()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// The handle ties the WAL, memtables, version set, caches and background work together. Submodules
// own one concern each: `open` (recovery phases), `write` (group commit and backpressure), `read`
// (point lookups), `background` (flush, compaction scheduling, obsolete files), `resume`
// (leaving the background-error state), `db_iter` (user iterators), `properties` (statistics),
// `wal_replay` (WAL recovery rules), `repair` (rebuilding a MANIFEST from the data files).
//
// Reads never take a lock: the current memtables and version are published together as one
// immutable `SuperVersion` behind an atomic pointer (arc-swap). Lock order when several are held:
// `leader` → `versions` → `bg`; `closed_wals` is taken last and never held while taking another.

mod approximate;
mod background;
mod blob_lookahead;
mod checkpoint;
mod db_iter;
mod destroy;
mod entries;
mod families;
mod family;
mod family_api;
mod info_log;
mod ingest;
pub(crate) mod internal_entries;
mod iter_pool;
mod iter_range_dels;
mod memtable_budget;
mod open;
mod options_file;
mod prefix_filter;
mod properties;
mod read;
mod recovery_report;
mod repair;
mod resume;
mod short_forms;
mod table_cache;
pub(crate) mod wal_replay;
mod write;

pub use recovery_report::{DroppedTail, RecoveryReport};

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::{Condvar, Mutex};

pub use db_iter::DbIterator;
pub use entries::Iter;
pub use family::ColumnFamily;
pub use ingest::{ExternalFileInfo, IngestOptions, SstFileWriter};
pub use properties::Stats;
pub use repair::{DanglingBlobs, LostFile, RepairReport, LOST_DIR};

use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::fs::{FileLock, FileSystem};
use crate::memtable::MemTable;
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::snapshot::{Snapshot, SnapshotList};
use crate::version::set::VersionSet;
use crate::version::version::Version;
use table_cache::TableCache;

/// The memtables and files a reader needs, published atomically as one unit. Aligned (as
/// `DbInner`) so readers' reference-count changes do not evict the fields beside them.
#[repr(align(128))]
pub(crate) struct SuperVersion {
    /// The mutable memtable.
    pub mem: Arc<MemTable>,
    /// Immutable memtables waiting for flush, newest first.
    pub imm: Vec<Arc<MemTable>>,
    /// The files.
    pub version: Arc<Version>,
}

/// State shared by the handle and the background threads. Aligned so the `Arc` reference
/// count every iterator changes has a cache line of its own.
#[repr(align(128))]
pub(crate) struct DbInner {
    pub dir: PathBuf,
    pub opts: Options,
    pub fs: Arc<dyn FileSystem>,
    pub table_cache: TableCache,
    pub versions: Mutex<VersionSet>,
    /// The default column family: every database has it, and it cannot be dropped.
    pub default: Arc<family::Family>,
    /// Every live column family, the default one included.
    pub families: ArcSwap<family::FamilyTable>,
    /// The WAL the write leader appends to: a family whose memtables are empty holds nothing
    /// in WALs numbered below it (`background`, flush edits).
    pub current_wal: AtomicU64,
    /// The last sequence number visible to readers.
    pub last_sequence: AtomicU64,
    pub snapshots: Arc<SnapshotList>,
    pub write_queue: write::WriteQueue,
    pub leader: Mutex<write::LeaderState>,
    /// WALs a memtable switch closed while they held unsynced records, oldest first: synced
    /// before a `sync=true` write's own fdatasync and at close, dropped once flushed.
    pub closed_wals: Mutex<Vec<write::ClosedWal>>,
    pub bg: Mutex<background::BgState>,
    pub bg_cv: Condvar,
    pub stats: Stats,
    /// Per thread, the internals of its last dropped iterator (see `iter_pool`).
    pub(crate) iter_pool: iter_pool::IterPool,
    /// How long recent scans over unmapped blob files were (`blob_lookahead`).
    pub(crate) scan_lengths: blob_lookahead::ScanLengths,
    /// Set when the last handle is dropped, so long jobs can stop early.
    pub closing: AtomicBool,
    /// Set once `BgState::error` holds an error, cleared only by a successful `Db::resume`:
    /// every write asks, and a load is cheaper than the background mutex it would otherwise take.
    pub(crate) has_background_error: AtomicBool,
    /// What the open that built this handle dropped, skipped or set aside.
    pub(crate) recovery: parking_lot::Mutex<RecoveryReport>,
    /// Set once a write skipped the WAL; such writes are flushed at close.
    pub unpersisted_writes: AtomicBool,
    /// Memtable bytes per second the last flush drained (0 before the first flush): the write
    /// rate memtable pressure slows writers towards.
    pub flush_rate: AtomicU64,
    /// Short write delays spin instead of sleeping (more than one CPU; `write::SPIN_LIMIT`).
    pub spin_waits: bool,
    /// Opened with `Db::open_read_only`: writes and maintenance are refused.
    pub read_only: bool,
    pub(crate) _lock: Box<dyn FileLock>,
}

/// An open database. Cheap to clone; all clones share one engine, which closes (stopping
/// background work and syncing the WAL) when the last clone is dropped or [`Db::close`] is called.
/// `Db` is `Send + Sync`: share it between threads by cloning it (or in an `Arc`).
///
/// Reads never block writes: they go through a lock-free published view. Writes from many
/// threads are committed in groups (one WAL append and, with `sync`, one fdatasync per group).
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::{Db, Options, ReadOptions, WriteOptions};
/// let db = Db::open(dir.path(), Options::default())?;
/// let writers: Vec<_> = (0..4u32)
///     .map(|t| {
///         let db = db.clone();
///         std::thread::spawn(move || -> strata::Result<()> {
///             for i in 0..100u32 {
///                 db.put(format!("{t}-{i:03}").as_bytes(), b"v")?;
///             }
///             Ok(())
///         })
///     })
///     .collect();
/// for w in writers {
///     w.join().unwrap()?;
/// }
/// let mut it = db.cursor(&ReadOptions::new())?;
/// it.seek_to_first();
/// let mut n = 0;
/// while it.valid() {
///     n += 1;
///     it.next();
/// }
/// it.status()?;
/// assert_eq!(n, 400);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Db {
    inner: Arc<DbInner>,
    _closer: Arc<background::Closer>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("path", &self.inner.dir).finish()
    }
}

impl Db {
    /// Opens (or with `create_if_missing`, creates) the database at `path`.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad option or a path that is not a directory, `NotADatabase` when
    /// no database exists and `create_if_missing` is off, `AlreadyExists` with `error_if_exists`,
    /// `Locked` when another handle has it open, `Corruption` when its files are damaged.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// assert!(matches!(Db::open(dir.path(), Options::default()), Err(strata::Error::Locked(_))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        Ok(Db::from_inner(open::open(path.as_ref(), opts, &Vec::new())?))
    }

    /// Wraps an opened engine and starts its background work.
    fn from_inner(inner: Arc<DbInner>) -> Db {
        let closer = background::start(&inner);
        Db { inner, _closer: closer }
    }

    /// Opens an existing database for reading only, changing nothing in its directory: no lock is
    /// taken (another process may have it open for writing), WAL records not yet flushed are
    /// replayed into memory, and no background work runs. The view is the state at open time.
    /// Writes, `flush` and `compact_range` return `Error::ReadOnly`.
    ///
    /// # Errors
    /// `NotADatabase` when there is no database at `path` (one is never created), `InvalidArgument`
    /// for a bad option, `Corruption` when its files are damaged.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, ReadOptions, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"k", b"v")?;
    /// let reader = Db::open_read_only(dir.path(), Options::default())?;
    /// assert_eq!(reader.get(b"k")?.as_deref(), Some(&b"v"[..]));
    /// assert!(reader.put(b"k", b"w").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_read_only(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        Ok(Db::from_inner(open::open_read_only(path.as_ref(), opts, &Vec::new())?))
    }

    /// Rebuilds a database that will not open (RocksDB's `RepairDB`) from the files in its
    /// directory: every table and blob file that reads whole (checksums verified) is kept, every
    /// WAL record that still reads is written to a new table, and a fresh MANIFEST listing them
    /// replaces the old ones. CURRENT, the MANIFEST and any WAL may be damaged or missing. Files
    /// it takes out of the database (unreadable tables and blob files, the WALs it salvaged, the
    /// old MANIFESTs) are moved to `lost/` inside the directory, never deleted; the returned
    /// report lists each. Pass the options the database is used with (`min_blob_size`,
    /// `compression`, `target_file_size` shape the tables it writes). See docs/durability.md, "Repair".
    ///
    /// What may be lost: tables and blob files that do not read whole (keys whose only copy was
    /// there disappear, or read as `Corruption` when a kept table points into a lost blob file),
    /// and WAL records in damaged stretches. A WAL that was already flushed but not yet deleted
    /// is replayed again, which can bring back keys whose deletion a compaction had since
    /// dropped.
    ///
    /// # Errors
    /// `Locked` when another handle has the database open, `NotADatabase` when `path` holds no
    /// CURRENT, MANIFEST or data file, `InvalidArgument` for a bad option or a path that is not
    /// a directory, `Io` when a file cannot be written or moved.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, ReadOptions, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"k", b"v")?;
    /// db.flush()?;
    /// db.put(b"only-in-the-wal", b"w")?;
    /// drop(db);
    /// std::fs::remove_file(dir.path().join("CURRENT"))?; // the database no longer opens
    ///
    /// let report = Db::repair(dir.path(), Options::default())?;
    /// assert!(report.is_clean(), "{report:?}");
    /// assert_eq!(report.wal_records_salvaged, 1);
    /// let db = Db::open(dir.path(), Options::default())?;
    /// assert_eq!(db.get(b"k")?.as_deref(), Some(&b"v"[..]));
    /// assert_eq!(db.get(b"only-in-the-wal")?.as_deref(), Some(&b"w"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn repair(path: impl AsRef<Path>, opts: Options) -> Result<RepairReport> {
        repair::repair(path.as_ref(), opts)
    }

    /// Sets `key` to `value`, replacing any previous value.
    ///
    /// # Errors
    /// `InvalidArgument` for a key or value over
    /// [`MAX_KEY_LEN`](crate::batch::MAX_KEY_LEN) / [`MAX_VALUE_LEN`](crate::batch::MAX_VALUE_LEN),
    /// `ReadOnly` on a read-only handle, `Background` after a background failure, `Io` when the
    /// WAL cannot be written.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, ReadOptions, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put_opt(&WriteOptions { sync: true, disable_wal: false }, b"k", b"v")?; // durable on return
    /// assert_eq!(db.get(b"k")?, Some(b"v".to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put_opt(&self, opts: &WriteOptions, key: &[u8], value: &[u8]) -> Result<()> {
        self.inner.default.slot_hint.load().prefetch(key);
        let mut b = WriteBatch::for_one_record(key.len(), value.len());
        b.put(key, value);
        self.write_opt(opts, b)
    }

    /// Deletes `key` (a no-op if absent).
    ///
    /// # Errors
    /// As [`Db::put`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, ReadOptions, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"k", b"v")?;
    /// db.delete(b"k")?;
    /// assert_eq!(db.get(b"k")?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete_opt(&self, opts: &WriteOptions, key: &[u8]) -> Result<()> {
        self.inner.default.slot_hint.load().prefetch(key);
        let mut b = WriteBatch::for_one_record(key.len(), 0);
        b.delete(key);
        self.write_opt(opts, b)
    }

    /// Deletes every key `k` with `begin <= k < end` (RocksDB's `DeleteRange`): one record,
    /// whatever the number of keys. `begin >= end` deletes nothing. Reads, iterators, flushes
    /// and compactions honour it; a snapshot taken before it still sees the keys.
    ///
    /// # Errors
    /// As [`Db::put`] (`InvalidArgument` for a key longer than
    /// [`MAX_KEY_LEN`](crate::batch::MAX_KEY_LEN)).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// for k in ["a", "b", "c", "d"] {
    ///     db.put(k, "v")?;
    /// }
    /// db.delete_range_opt(&WriteOptions { sync: true, ..WriteOptions::default() }, b"b", b"d")?;
    /// let keys: Vec<Vec<u8>> = db.iter().map(|kv| kv.map(|(k, _)| k)).collect::<strata::Result<_>>()?;
    /// assert_eq!(keys, [b"a".to_vec(), b"d".to_vec()]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete_range_opt(&self, opts: &WriteOptions, begin: &[u8], end: &[u8]) -> Result<()> {
        let mut b = WriteBatch::for_one_record(begin.len(), end.len());
        b.delete_range(begin, end);
        self.write_opt(opts, b)
    }

    /// Adds a merge operand for `key`; reads fold the operands onto the value with the
    /// configured [`MergeOperator`](crate::MergeOperator).
    ///
    /// # Errors
    /// `InvalidArgument` when `Options::merge_operator` is not set, else as [`Db::put`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{merge, Db, Options, ReadOptions, WriteOptions};
    /// let opts = Options { merge_operator: merge::builtin("uint64add"), ..Options::default() };
    /// let db = Db::open(dir.path(), opts)?;
    /// for _ in 0..3 {
    ///     db.merge(b"hits", &1u64.to_le_bytes())?;
    /// }
    /// assert_eq!(db.get(b"hits")?, Some(3u64.to_le_bytes().to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn merge_opt(&self, opts: &WriteOptions, key: &[u8], operand: &[u8]) -> Result<()> {
        self.inner.default.slot_hint.load().prefetch(key);
        let mut b = WriteBatch::for_one_record(key.len(), operand.len());
        b.merge(key, operand);
        self.write_opt(opts, b)
    }

    /// Applies `batch` atomically: after a crash either all of it or none of it is present. An
    /// empty batch is a no-op.
    ///
    /// # Errors
    /// `InvalidArgument` when the batch holds a bad key or value, or merges without
    /// `Options::merge_operator` (nothing is applied), else as [`Db::put`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, ReadOptions, WriteBatch, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"c", b"0")?;
    /// let mut batch = WriteBatch::new();
    /// batch.put(b"a", b"1").put(b"b", b"2").delete(b"c");
    /// db.write(batch)?; // all three or none, even across a crash
    /// assert_eq!(db.get(b"b")?, Some(b"2".to_vec()));
    /// assert_eq!(db.get(b"c")?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_opt(&self, opts: &WriteOptions, batch: WriteBatch) -> Result<()> {
        if self.inner.read_only {
            return Err(Error::ReadOnly);
        }
        batch.validate()?;
        self.inner.check_families(&batch)?;
        if batch.is_empty() {
            return Ok(());
        }
        self.inner.write(opts, batch)
    }

    /// The newest value of `key` visible to `opts.snapshot` (or the latest state); `None` when
    /// the key is absent or deleted.
    ///
    /// # Errors
    /// `Corruption` when a block or blob read fails its checksum, `Merge` when merge operands
    /// cannot be folded, `Io` on a read error.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, ReadOptions, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// assert_eq!(db.get(b"missing")?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_opt(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.timed(&self.inner.stats.get_latency, || self.inner.get(&self.inner.default, opts, key))
    }

    /// Point reads of several keys at once (RocksDB's `MultiGet`), one result per key in the
    /// order given. All keys are read at one sequence number and one view of the files, as if
    /// under a snapshot taken at the call, so the results are consistent with each other even
    /// while writers run; a failed read of one key does not stop the others.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, ReadOptions, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"a", b"1")?;
    /// db.put(b"c", b"3")?;
    /// let got = db.multi_get([&b"a"[..], b"b", b"c"]);
    /// assert_eq!(got.len(), 3);
    /// assert_eq!(got[0].as_ref().unwrap().as_deref(), Some(&b"1"[..]));
    /// assert_eq!(got[1].as_ref().unwrap(), &None);
    /// assert_eq!(got[2].as_ref().unwrap().as_deref(), Some(&b"3"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn multi_get_opt(&self, opts: &ReadOptions, keys: &[&[u8]]) -> Vec<Result<Option<Vec<u8>>>> {
        self.multi_get_in(&self.inner.default, opts, keys)
    }

    fn multi_get_in(
        &self,
        family: &family::Family,
        opts: &ReadOptions,
        keys: &[&[u8]],
    ) -> Vec<Result<Option<Vec<u8>>>> {
        if !self.inner.opts.latency_histograms {
            return self.inner.multi_get(family, opts, keys);
        }
        let start = std::time::Instant::now();
        let r = self.inner.multi_get(family, opts, keys);
        if let Some(n) = u32::try_from(keys.len()).ok().filter(|&n| n > 0) {
            // One sample of the time per key, so the get histogram stays comparable across
            // both ways of reading.
            self.inner.stats.get_latency.record(start.elapsed() / n);
        }
        r
    }

    /// An iterator over the database as of `opts.snapshot` (or now), honouring bounds and prefix.
    /// It starts unpositioned: call a `seek*` method first. See [`DbIterator`].
    ///
    /// # Errors
    /// `Io` or `Corruption` when a table needed to build the iterator cannot be opened; errors
    /// met while iterating are reported by [`DbIterator::status`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, ReadOptions, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// for k in ["a1", "a2", "b1"] {
    ///     db.put(k.as_bytes(), b"v")?;
    /// }
    /// let mut it = db.cursor(&ReadOptions { prefix: Some(b"a".to_vec()), ..ReadOptions::new() })?;
    /// it.seek_to_last();
    /// let mut keys = Vec::new();
    /// while it.valid() {
    ///     keys.push(it.key().to_vec());
    ///     it.prev();
    /// }
    /// it.status()?;
    /// assert_eq!(keys, vec![b"a2".to_vec(), b"a1".to_vec()]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cursor(&self, opts: &ReadOptions) -> Result<DbIterator> {
        DbIterator::new(&self.inner, None, opts)
    }

    /// A consistent point-in-time view for reads and iterators; see [`Snapshot`]. Never fails.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, ReadOptions, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"k", b"old")?;
    /// let snap = db.snapshot();
    /// db.put(b"k", b"new")?;
    /// let at = ReadOptions { snapshot: Some(snap), ..ReadOptions::new() };
    /// assert_eq!(db.get_opt(&at, b"k")?, Some(b"old".to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn snapshot(&self) -> Snapshot {
        self.inner.snapshots.acquire(self.inner.last_sequence.load(Ordering::Acquire))
    }

    /// Flushes the memtable to an SST file and waits until it is done, so the data no longer
    /// needs the WAL (writes made with `disable_wal` are durable once this returns).
    ///
    /// # Errors
    /// `ReadOnly` on a read-only handle, `Background` when this or an earlier background job
    /// failed.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"k", b"v")?;
    /// db.flush()?;
    /// assert_eq!(db.property("strata.num-files-at-level0").as_deref(), Some("1"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn flush(&self) -> Result<()> {
        if self.inner.read_only {
            return Err(Error::ReadOnly);
        }
        self.inner.flush_and_wait(&self.inner.default)
    }

    /// Makes every write acknowledged so far survive a power loss, as if the last one had been
    /// made with `sync = true`: fdatasyncs each WAL file that holds unsynced writes (including
    /// WALs closed by a memtable switch and not yet flushed) and makes the current WAL's
    /// directory entry durable. Cheaper than syncing every write when an application can
    /// choose its own durability points (RocksDB's `SyncWAL`). Writes made with `disable_wal`
    /// are in no WAL and are not covered: [`Db::flush`] persists those.
    ///
    /// # Errors
    /// `ReadOnly` on a read-only handle; `Background` when the database is already in the
    /// error state; `Io` when a sync fails, which also puts the database into the read-only
    /// error state, since a failed fsync is never retried (docs/durability.md; [`Db::resume`]
    /// moves on to a new WAL instead).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// for i in 0..100u32 {
    ///     db.put(&i.to_be_bytes(), b"v")?; // sync = false
    /// }
    /// db.sync_wal()?; // all 100 now survive a power loss
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sync_wal(&self) -> Result<()> {
        if self.inner.read_only {
            return Err(Error::ReadOnly);
        }
        self.inner.sync_wal_on_request()
    }

    /// Leaves the read-only error state a retryable background error put the database in
    /// (RocksDB's `DB::Resume`), so that writes are accepted again without reopening.
    ///
    /// With no background error it returns `Ok` at once. An error that is not
    /// [retryable](Error::is_retryable) (corruption, a panic in a job or a merge operator, an IO
    /// error such as EIO) is returned unchanged, and only reopening the database recovers.
    /// A retryable one (a full disk or quota) is retried while writes stay refused:
    /// - after a failed WAL write, sync or creation, the memtable is switched to a new WAL and
    ///   the failed WAL is never written or synced again (after a failed fsync its unsynced
    ///   pages may be lost); every memtable is then flushed, so that no acknowledged write
    ///   depends on that WAL;
    /// - after a failed flush, the memtables waiting for it are flushed;
    /// - after a failed compaction, the error is cleared and the compaction is scheduled again
    ///   (if it fails again, the database turns read-only again and later calls report it).
    ///
    /// Writes blocked meanwhile wait for the outcome. Acknowledged writes are never lost; a
    /// write that failed may or may not be present after a later reopen, but never in part.
    ///
    /// # Errors
    /// The error unchanged when it is not retryable; when the retried work fails again (the disk
    /// is still full), its new `Background` error, and the database stays read-only.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Error, Options, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.resume()?; // no background error: nothing to do
    /// if let Err(e) = db.put(b"k", b"v") {
    ///     if e.is_retryable() {
    ///         // e.g. ENOSPC: free some space, then
    ///         db.resume()?;
    ///     }
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resume(&self) -> Result<()> {
        self.inner.resume()
    }

    /// Writes an openable copy of the database to `target`, a directory that must not exist
    /// yet (RocksDB's `Checkpoint::CreateCheckpoint`): a backup, or the snapshot a replica is
    /// seeded from. It holds every write acknowledged before the call, including those made
    /// with `disable_wal`, since it starts with a flush; writes made meanwhile may or may not
    /// be in it. Table and blob files are hard-linked, so on the same filesystem a checkpoint
    /// takes little time and space until compactions replace the shared files; elsewhere they
    /// are copied. The copy is assembled in `<target>.tmp` and renamed into place, so after a
    /// crash `target` is either absent or complete. Open it like any database; it shares
    /// nothing with the source afterwards.
    ///
    /// # Errors
    /// `InvalidArgument` if `target` exists; `ReadOnly` on a read-only handle; as
    /// [`Db::flush`]; `Io` from writing the copy (the source is unaffected).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, ReadOptions, WriteOptions};
    /// let db = Db::open(dir.path().join("live"), Options::default())?;
    /// db.put(b"k", b"v1")?;
    /// db.checkpoint(dir.path().join("backup"))?;
    /// db.put(b"k", b"v2")?;
    ///
    /// let backup = Db::open(dir.path().join("backup"), Options::default())?;
    /// assert_eq!(backup.get(b"k")?, Some(b"v1".to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn checkpoint(&self, target: impl AsRef<Path>) -> Result<()> {
        if self.inner.read_only {
            return Err(Error::ReadOnly);
        }
        self.inner.checkpoint(target.as_ref())
    }

    /// Compacts every file overlapping `[start, end]` (None = unbounded) down to the last level,
    /// after flushing the memtable. Drops deleted and overwritten data no snapshot needs.
    ///
    /// # Errors
    /// As [`Db::flush`], plus `Io` or `Corruption` from reading the input files.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"k", b"v")?;
    /// db.compact_range(None, None)?; // everything ends up in the last level
    /// assert_eq!(db.property("strata.num-files-at-level0").as_deref(), Some("0"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        if self.inner.read_only {
            return Err(Error::ReadOnly);
        }
        self.inner.flush_and_wait(&self.inner.default)?;
        self.inner.compact_range(&self.inner.default, start, end)
    }

    /// Waits until the background work that is due has run: every memtable already switched out
    /// is flushed, no flush or compaction is running, and none is needed, so the files stay as
    /// they are until more writes arrive (RocksDB's `WaitForCompact`). It does not flush the
    /// active memtable: call [`Db::flush`] first for that. Tests and tools use it to measure or
    /// inspect a settled database; an application that keeps writing meanwhile can keep it
    /// waiting, which is what `timeout` bounds.
    ///
    /// Returns `Ok(true)` once the work is done, `Ok(false)` if `timeout` passed first. A
    /// read-only handle runs no background work and returns `Ok(true)` at once.
    ///
    /// # Errors
    /// `Background` if the database is, or goes, into the read-only error state while waiting;
    /// `Closed` if it is being closed.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// for round in 0..4u8 {
    ///     db.put(&[round], b"v")?;
    ///     db.flush()?; // the fourth flush reaches the level-0 compaction trigger
    /// }
    /// assert!(db.wait_for_compactions(None)?);
    /// assert_eq!(db.property("strata.num-files-at-level0").as_deref(), Some("0"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_for_compactions(&self, timeout: Option<std::time::Duration>) -> Result<bool> {
        // A timeout too long to add to the clock waits as long as it takes.
        let deadline = timeout.and_then(|t| std::time::Instant::now().checked_add(t));
        self.inner.wait_for_background_work(deadline)
    }

    /// What the open that produced this handle did not replay or set aside: a torn MANIFEST
    /// tail, dropped or skipped WAL stretches, WALs not replayed, files moved to `lost/`. Empty
    /// after a clean shutdown. The `strata.recovery` property renders it as text.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// assert!(db.recovery_report().is_clean());
    /// assert_eq!(db.property("strata.recovery").as_deref(), Some("clean\n"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recovery_report(&self) -> RecoveryReport {
        self.inner.recovery.lock().clone()
    }

    /// A named property: `strata.stats`, `strata.levelstats`, `strata.num-files-at-level<N>`,
    /// `strata.estimate-pending-compaction-bytes`, `strata.block-cache-usage`,
    /// `strata.block-cache-pinned-usage` (open tables' index and filter memory, charged to the
    /// block cache's capacity), `strata.mmap-reads`
    /// (1 while files opened now are memory-mapped, see [`Options::mmap_reads_max_db_size`]),
    /// `strata.num-immutable-mem-table` (memtables waiting for flush),
    /// `strata.memtable-borrowed-bytes` (block-cache capacity they borrow, see
    /// [`Options::write_buffer_borrow_percent`]), `strata.total-sst-files-size`, `strata.total-blob-file-size`, `strata.background-error`,
    /// `strata.num-snapshots`, `strata.histograms` (latency percentiles) and `strata.prometheus`
    /// (counters, gauges and histograms in the Prometheus text exposition format). The `rocksdb.`
    /// prefix is accepted too. Returns `None` for an unknown name.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// println!("{}", db.property("strata.stats").unwrap_or_default());
    /// assert!(db.property("strata.no-such-property").is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn property(&self, name: &str) -> Option<String> {
        self.inner.property(name)
    }

    /// Counters of work done since open; see the example on [`Stats`].
    pub fn stats(&self) -> &Stats {
        &self.inner.stats
    }

    /// The last sequence number assigned to a write. Every operation in a write (each entry of a
    /// batch) takes the next number, and sequence numbers survive reopening.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, WriteBatch, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// let before = db.latest_sequence();
    /// let mut batch = WriteBatch::new();
    /// batch.put(b"a", b"1").put(b"b", b"2").delete(b"c");
    /// db.write(batch)?;
    /// assert_eq!(db.latest_sequence(), before + 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn latest_sequence(&self) -> u64 {
        self.inner.last_sequence.load(Ordering::Acquire)
    }

    /// The directory of this database, as given to [`Db::open`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// assert_eq!(db.path(), dir.path());
    /// assert!(db.path().join("CURRENT").exists());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// Stops background work, syncs the WAL and releases the lock once every clone is gone.
    /// Dropping the last clone does the same but cannot report an error.
    ///
    /// # Errors
    /// `Background` when a background failure had put the database into read-only mode.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, ReadOptions, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"k", b"v")?;
    /// db.close()?;
    /// let again = Db::open(dir.path(), Options::default())?; // the lock was released
    /// assert_eq!(again.get(b"k")?, Some(b"v".to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(self) -> Result<()> {
        let err = self.inner.background_error();
        drop(self);
        err.map_or(Ok(()), Err)
    }
}
