//! Options for opening a database, writing and reading; validated once at open so that a bad
//! value is an `InvalidArgument` naming the option, never a misbehaving engine later.
//!
//! This module owns the option structs, their defaults and `validate`. Options by name live in
//! [`table`] (names, aliases, parsing and formatting: `Options::set`, `Options::get`), value
//! syntax in `value.rs`; the options file's layout is `db/options_file.rs`'s.

mod prefix;
pub mod table;
mod value;

use std::fmt;
use std::sync::Arc;

pub use prefix::PrefixExtractor;
pub use table::Scope;

use crate::compaction_filter::CompactionFilter;
use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::merge::MergeOperator;
use crate::snapshot::Snapshot;

pub use crate::util::compress::Compression;

/// Number of levels in the tree (L0 .. L6): the valid `N` in the `strata.num-files-at-level<N>`
/// property, and the levels [`Options::compression_for_level`] is asked about.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::{options::NUM_LEVELS, Db, Options};
/// let db = Db::open(dir.path(), Options::default())?;
/// let last = format!("strata.num-files-at-level{}", NUM_LEVELS - 1);
/// assert_eq!(db.property(&last).as_deref(), Some("0"));
/// assert_eq!(db.property(&format!("strata.num-files-at-level{NUM_LEVELS}")), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const NUM_LEVELS: usize = 7;

/// How many separated values in a row `blob_scan_runs` counts runs over, and so its largest
/// useful value. Defined here, below the compaction that applies it
/// (`compaction/scan_locality.rs`), so that validation can name it.
pub(crate) const BLOB_SCAN_WINDOW: usize = 64;

/// Options fixed when the database is opened. Start from `Options::default()`, a preset, or an
/// options file, and override fields; `Db::open` validates them.
///
/// ```
/// use strata::{Compression, Options};
/// let mut opts = Options { write_buffer_size: 128 << 20, cache_size: 1 << 30, ..Options::default() };
/// opts.set_compression(Compression::Lz4);
/// assert!(opts.validate().is_ok());
/// let bad = Options { max_write_buffer_number: 1, ..Options::default() };
/// assert!(bad.validate().unwrap_err().to_string().contains("max_write_buffer_number"));
/// ```
#[derive(Clone)]
pub struct Options {
    /// Create the directory and an empty database if none exists (default true).
    pub create_if_missing: bool,
    /// Fail if a database already exists (default false).
    pub error_if_exists: bool,
    /// Bytes a memtable holds before it is switched to immutable and flushed (default 64 MiB).
    pub write_buffer_size: usize,
    /// Memtables kept in memory, mutable plus immutable (default 3). Writes slow down while the
    /// last spare one fills and wait for a flush when all are full.
    pub max_write_buffer_number: usize,
    /// Share of the block cache's capacity, in percent, that memtables waiting for flush may
    /// borrow beyond `max_write_buffer_number` while the cache leaves it unused (default 25;
    /// 0 turns borrowing off). A borrowed memtable never evicts a cached block, and the cache
    /// keeps clear of what is lent until a flush returns it, so memory stays within
    /// `cache_size + max_write_buffer_number * write_buffer_size`. More memtables let a burst
    /// of writes run at memtable speed while flush catches up; a point read that misses them
    /// checks each one, so at most `2 * max_write_buffer_number` memtables are borrowed.
    pub write_buffer_borrow_percent: u32,
    /// Target size of an SST data block before compression (default 4 KiB).
    pub block_size: usize,
    /// Keys between restart points in a data block (default 8: a point read scans at most 8
    /// entries after its binary search; 16, LevelDB's, read 10-15% slower on 100-byte values).
    /// A run of keys that together take under 512 bytes goes on, up to twice this many: each
    /// restart stores a whole key, and short entries are cheap to scan.
    pub block_restart_interval: usize,
    /// Bloom filter bits per key; 0 disables filters (default 10).
    pub bloom_bits_per_key: u32,
    /// Tables that compaction writes to the last level get no bloom filter (RocksDB's
    /// `optimize_filters_for_hits`; default false). The last level holds about nine tenths of
    /// the keys, so this drops about nine tenths of the filters' bytes, on disk and in the block
    /// cache, where they compete with data blocks. A point read that reaches the last level
    /// then reads the data block the index points to even when the key is absent: worth it
    /// when reads mostly find their keys, as LinkBench's do, and the cache is much smaller
    /// than the database.
    pub optimize_filters_for_hits: bool,
    /// Adds each key's prefix to the tables' bloom filters, so an iterator with
    /// `ReadOptions::prefix` (at least as long as the prefix) skips tables holding none of it
    /// (RocksDB's `prefix_extractor`; default none). Needs `bloom_bits_per_key > 0`; tables
    /// written with another extractor, or none, are simply not skipped.
    pub prefix_extractor: Option<PrefixExtractor>,
    /// Block cache capacity in bytes (default 32 MiB).
    pub cache_size: usize,
    /// Compression per level, indexed by level; the last entry applies to deeper levels
    /// (default: none for L0 and L1, snappy below).
    pub compression_per_level: Vec<Compression>,
    /// Compression of blob records (default snappy).
    pub blob_compression: Compression,
    /// Values at least this long are stored in blob files; 0 disables separation (default 512).
    /// Below 512 bytes a value compressed alone, with its own record header and key, cost
    /// LinkBench's nodes 44% more bytes than the same value compressed in a table block
    /// (docs/tuning.md, `min_blob_size`).
    pub min_blob_size: usize,
    /// Blob files older than this fraction of all blob files have their live values rewritten by
    /// compaction (default 0.25).
    pub blob_gc_age_cutoff: f64,
    /// The files in `blob_gc_age_cutoff` are rewritten only while garbage makes up at least this
    /// fraction of all blob bytes (files that are 75% garbage always are); 0 rewrites them
    /// whenever they are a quarter garbage (default 0.25).
    pub blob_gc_min_garbage_ratio: f64,
    /// A compaction writing the last level moves a separated value into its own blob file (in
    /// key order) when the 64 values around it would otherwise lie in more than this many runs
    /// of older blob files, so that a range scan over values out of memory reads a few places
    /// rather than one per value. 0 never moves values for scans (default: 0; each moved value
    /// is read and written once more, which cost a random load out of memory a quarter of its
    /// throughput).
    pub blob_scan_runs: usize,
    /// Target size of one SST file (default 64 MiB).
    pub target_file_size: u64,
    /// Target size of the base level; deeper levels grow by `level_size_multiplier` (default 256 MiB).
    pub max_bytes_for_level_base: u64,
    /// Size ratio between adjacent levels (default 10).
    pub level_size_multiplier: u64,
    /// L0 files that trigger a compaction (default 4).
    pub level0_compaction_trigger: usize,
    /// L0 files at which writes start to slow down (default 20).
    pub level0_slowdown_trigger: usize,
    /// L0 files at which writes stop until compaction catches up (default 36).
    pub level0_stop_trigger: usize,
    /// Pending compaction bytes at which writes slow down (default 64 GiB).
    pub soft_pending_compaction_bytes: u64,
    /// Pending compaction bytes at which writes stop (default 256 GiB).
    pub hard_pending_compaction_bytes: u64,
    /// Background threads for flush and compaction (default 2). With two or more, one thread
    /// runs flushes and the others compactions; with one, it runs both.
    pub max_background_jobs: usize,
    /// Nice value (0-19) the compaction threads lower themselves to when they have threads of
    /// their own (`max_background_jobs` >= 2; Linux only, ignored elsewhere).
    /// Default 10. Flushes keep the priority the database was opened at: when the writers, the
    /// flush and a compaction want more cores than there are, an equal share for the
    /// compaction slows the flush, and every writer waits for the flush. A compaction that then
    /// falls behind raises L0 pressure, which slows writers down until it catches up, as at any
    /// priority. 0 leaves compactions at the opening thread's priority (RocksDB's default;
    /// its `Env::LowerThreadPoolCPUPriority` does what this does).
    pub compaction_nice: u8,
    /// Compaction threads with threads of their own run under Linux's `SCHED_IDLE` policy
    /// instead of at `compaction_nice` (RocksDB's `CpuPriority::kIdle`). Default false.
    /// A writer or flush that wakes onto a compaction's core then takes it at once, where at a
    /// nice value it can wait out the rest of a scheduler tick (4 ms with `CONFIG_HZ=250`). The
    /// price: the compaction gets almost no CPU while other threads keep every core busy, so
    /// under sustained overload it falls further behind (writes slow down through L0 pressure),
    /// and a busy neighbour process can starve it. Ignored elsewhere than Linux.
    pub compaction_sched_idle: bool,
    /// Group commit for synced writes: the longest, in microseconds, a synced write's group
    /// leader waits for as many writers to queue up as the last synced group found, so that
    /// writers who keep writing share one fdatasync (default 100, about one fdatasync on an SSD;
    /// 0 disables it, at most 10,000). A lone synced writer never waits. The wait is spent only
    /// when other synced writers were seen queued; one that waits in vain lowers the
    /// expectation to what it found (PostgreSQL's `commit_delay` is the same trade).
    pub sync_gather_micros: u32,
    /// The longest, in microseconds, a queued writer (or a synced leader gathering its group)
    /// spins before it blocks, yielding its CPU between looks (default 200; 0 disables it, at
    /// most 10,000; never with a single CPU). A woken thread waits for a futex wake-up and, on a
    /// virtual machine with halted CPUs, an interrupt; a spinning one sees its group finish as
    /// soon as it is scheduled. Spinning stops by itself while most spins run out (long waits,
    /// stalls) and is tried again on one wait in 32. RocksDB's
    /// `enable_write_thread_adaptive_yield` and `write_thread_max_yield_usec` are the same trade
    /// of CPU time for commit latency.
    pub write_spin_micros: u32,
    /// Open SST and blob files kept in the table cache (default 1000).
    pub max_open_files: usize,
    /// Read SST and blob files through a memory mapping (default true), as LMDB does: a block
    /// or value that needs no decompression is read in place, with no copy and no block cache
    /// entry. false reads every block with `pread` into the block cache, as RocksDB does by
    /// default (`use_mmap_reads = false` there): slower on warm reads, but a disk that fails to
    /// read a page, or a file truncated behind the database's back, is then an `Error::Io`
    /// instead of a SIGBUS that kills the process, and memory use is bounded by `cache_size`
    /// rather than by the page cache (docs/durability.md, "Memory-mapped reads"). For a
    /// database larger than memory, mapped reads are slower (docs/tuning.md), so by default a
    /// file is mapped only while the database is small enough: see `mmap_reads_max_db_size`.
    pub use_mmap_reads: bool,
    /// With `use_mmap_reads`, a file opened while the database's live SST and blob files total
    /// more than this many bytes is read with `pread` through the block cache instead of mapped
    /// (default 0: half the memory this process may use, the smaller of physical memory and its
    /// memory cgroups' limits). Out of memory, a mapped point read faults a block's pages in one
    /// at a time and its pages compete with values in the page cache, where `pread` reads a
    /// block in one request and keeps index-sized blocks in the block cache. Files already open
    /// stay as they were opened until they are closed or rewritten.
    pub mmap_reads_max_db_size: u64,
    /// Skip damaged WAL records instead of failing open: the same as `wal_recovery_mode =
    /// SkipAnyCorruptedRecords` (default false; kept from before the recovery modes existed).
    pub skip_corrupted_wal_records: bool,
    /// What recovery does with a damaged or missing part of the WALs (default
    /// [`WalRecoveryMode::PointInTime`]); docs/durability.md, "Recovery modes", says what each
    /// may lose.
    pub wal_recovery_mode: WalRecoveryMode,
    /// Write an info `LOG` file (flush, compaction, stall and error lines plus `EVENT_LOG_v1`
    /// JSON events) in the database directory (default true). Read-only opens never write it.
    pub info_log: bool,
    /// The `LOG` file is rotated to `LOG.old.<micros>` once it would exceed this many bytes
    /// (default 4 MiB).
    pub max_log_file_size: u64,
    /// Rotated `LOG.old.*` files kept; older ones are deleted (default 10).
    pub keep_log_file_num: usize,
    /// Once the MANIFEST is larger than this many bytes, the next version change writes a new
    /// MANIFEST holding a snapshot of the current state and makes `CURRENT` name it, instead of
    /// appending (default 64 MiB; RocksDB's option of the same name). Recovery replays the whole
    /// MANIFEST, so this bounds its time; each roll costs writing the snapshot and replacing
    /// `CURRENT`. A MANIFEST whose snapshot alone exceeds it rolls at every change.
    pub max_manifest_file_size: u64,
    /// With more than one column family: once the WALs still needed hold more than this many
    /// bytes, the families whose unflushed writes keep the oldest WAL are flushed, so that a
    /// family written rarely does not keep every WAL since its last flush (RocksDB's option of
    /// the same name). 0 (the default) means four times the memtable bytes every family may
    /// hold (`write_buffer_size * max_write_buffer_number`, summed over families).
    pub max_total_wal_size: u64,
    /// Time every `get`, `multi_get` and write into the latency histograms
    /// ([`Stats::get_latency`](crate::Stats::get_latency) and
    /// [`Stats::write_latency`](crate::Stats::write_latency), the `strata.histograms` property
    /// and the Prometheus latency families). Default false, as RocksDB keeps statistics off
    /// until asked: the timing costs two clock reads and two atomic adds per call, which measured
    /// 10-19% of the throughput of warm point reads and of 8-byte and 800-byte writes on a 2-vCPU
    /// machine (docs/performance.md, "Latency histograms are off by default"). The event counters
    /// (`strata.stats`) are always kept.
    pub latency_histograms: bool,
    /// The merge operator for `merge` (default none); see [`MergeOperator`].
    pub merge_operator: Option<Arc<dyn MergeOperator>>,
    /// The filter compactions pass values through (default none); see [`CompactionFilter`] for
    /// which values it sees and what its decisions do. Recorded by name in the OPTIONS file.
    pub compaction_filter: Option<Arc<dyn CompactionFilter>>,
    /// The filesystem all IO goes through (default [`default_fs`](crate::fs::default_fs), the
    /// operating system's). Replace it to add instrumentation or inject faults; see
    /// [`FileSystem`].
    pub fs: Arc<dyn FileSystem>,
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("create_if_missing", &self.create_if_missing)
            .field("write_buffer_size", &self.write_buffer_size)
            .field("write_buffer_borrow_percent", &self.write_buffer_borrow_percent)
            .field("min_blob_size", &self.min_blob_size)
            .field("blob_scan_runs", &self.blob_scan_runs)
            .field("cache_size", &self.cache_size)
            .field("merge_operator", &self.merge_operator.as_ref().map(|m| m.name().to_string()))
            .field("compaction_filter", &self.compaction_filter.as_ref().map(|f| f.name().to_string()))
            .finish_non_exhaustive()
    }
}

impl Default for Options {
    fn default() -> Self {
        Self {
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_size: 64 << 20,
            max_write_buffer_number: 3,
            write_buffer_borrow_percent: 25,
            block_size: 4096,
            block_restart_interval: 8,
            bloom_bits_per_key: 10,
            optimize_filters_for_hits: false,
            prefix_extractor: None,
            cache_size: 32 << 20,
            compression_per_level: vec![Compression::None, Compression::None, Compression::Snappy],
            blob_compression: Compression::Snappy,
            min_blob_size: 512,
            blob_gc_age_cutoff: 0.25,
            blob_gc_min_garbage_ratio: 0.25,
            blob_scan_runs: 0,
            target_file_size: 64 << 20,
            max_bytes_for_level_base: 256 << 20,
            level_size_multiplier: 10,
            level0_compaction_trigger: 4,
            level0_slowdown_trigger: 20,
            level0_stop_trigger: 36,
            soft_pending_compaction_bytes: 64 << 30,
            hard_pending_compaction_bytes: 256 << 30,
            max_background_jobs: 2,
            compaction_nice: 10,
            compaction_sched_idle: false,
            sync_gather_micros: 100,
            write_spin_micros: 200,
            max_open_files: 1000,
            use_mmap_reads: true,
            mmap_reads_max_db_size: 0,
            skip_corrupted_wal_records: false,
            wal_recovery_mode: WalRecoveryMode::PointInTime,
            info_log: true,
            max_log_file_size: 4 << 20,
            keep_log_file_num: 10,
            max_manifest_file_size: 64 << 20,
            max_total_wal_size: 0,
            latency_histograms: false,
            merge_operator: None,
            compaction_filter: None,
            fs: crate::fs::default_fs(),
        }
    }
}

fn invalid(name: &str, why: impl fmt::Display) -> Error {
    Error::InvalidArgument(format!("{name}: {why}"))
}

impl Options {
    /// The compression used for files written to `level`: `compression_per_level[level]`, the last
    /// entry for deeper levels, `None` when the list is empty. See the example on
    /// [`Compression`].
    pub fn compression_for_level(&self, level: usize) -> Compression {
        let n = self.compression_per_level.len();
        if n == 0 {
            return Compression::None;
        }
        self.compression_per_level[level.min(n - 1)]
    }

    /// Bloom filter bits per key of a table written to `level`: none on the last level when
    /// `optimize_filters_for_hits` is set.
    pub fn bloom_bits_for_level(&self, level: usize) -> u32 {
        if self.optimize_filters_for_hits && level + 1 >= NUM_LEVELS {
            0
        } else {
            self.bloom_bits_per_key
        }
    }

    /// Uses one compression for every level and for blobs.
    ///
    /// ```
    /// use strata::{Compression, Options};
    /// let mut opts = Options::default();
    /// opts.set_compression(Compression::Lz4);
    /// assert_eq!(opts.compression_for_level(0), Compression::Lz4);
    /// assert_eq!(opts.blob_compression, Compression::Lz4);
    /// ```
    pub fn set_compression(&mut self, c: Compression) {
        self.compression_per_level = vec![c];
        self.blob_compression = c;
    }

    /// Checks every option; [`Db::open`](crate::Db::open) calls it too. See the example on
    /// [`Options`].
    ///
    /// # Errors
    /// `InvalidArgument` naming the first bad option and its allowed range (for example a
    /// `write_buffer_size` under 64 KiB, or triggers out of order), or `zstd` compression when
    /// the `zstd` feature is off.
    pub fn validate(&self) -> Result<()> {
        if self.write_buffer_size < 64 << 10 {
            return Err(invalid("write_buffer_size", "must be at least 64 KiB"));
        }
        if self.write_buffer_size > 4 << 30 {
            return Err(invalid("write_buffer_size", "must be at most 4 GiB"));
        }
        if self.max_write_buffer_number < 2 {
            return Err(invalid("max_write_buffer_number", "must be at least 2"));
        }
        if self.write_buffer_borrow_percent > 100 {
            return Err(invalid("write_buffer_borrow_percent", "must be at most 100"));
        }
        if !(256..=(64 << 20)).contains(&self.block_size) {
            return Err(invalid("block_size", "must be between 256 B and 64 MiB"));
        }
        if !(1..=1024).contains(&self.block_restart_interval) {
            return Err(invalid("block_restart_interval", "must be between 1 and 1024"));
        }
        if self.bloom_bits_per_key > 64 {
            return Err(invalid("bloom_bits_per_key", "must be at most 64"));
        }
        if self.prefix_extractor.is_some_and(|p| p.is_empty() || p.len() > crate::batch::MAX_KEY_LEN) {
            return Err(invalid("prefix_extractor", "length must be between 1 and the key size limit"));
        }
        if !(0.0..=1.0).contains(&self.blob_gc_age_cutoff) {
            return Err(invalid("blob_gc_age_cutoff", "must be between 0 and 1"));
        }
        if !(0.0..=1.0).contains(&self.blob_gc_min_garbage_ratio) {
            return Err(invalid("blob_gc_min_garbage_ratio", "must be between 0 and 1"));
        }
        if self.blob_scan_runs > BLOB_SCAN_WINDOW {
            // A run limit above the values it is counted over never moves anything.
            return Err(invalid("blob_scan_runs", format_args!("must be at most {BLOB_SCAN_WINDOW}")));
        }
        if self.target_file_size < 64 << 10 {
            return Err(invalid("target_file_size", "must be at least 64 KiB"));
        }
        if self.max_bytes_for_level_base < 1 << 20 {
            return Err(invalid("max_bytes_for_level_base", "must be at least 1 MiB"));
        }
        if self.level_size_multiplier < 2 {
            return Err(invalid("level_size_multiplier", "must be at least 2"));
        }
        if self.level0_compaction_trigger < 1 {
            return Err(invalid("level0_compaction_trigger", "must be at least 1"));
        }
        if self.level0_slowdown_trigger < self.level0_compaction_trigger {
            return Err(invalid("level0_slowdown_trigger", "must be >= level0_compaction_trigger"));
        }
        if self.level0_stop_trigger < self.level0_slowdown_trigger {
            return Err(invalid("level0_stop_trigger", "must be >= level0_slowdown_trigger"));
        }
        if self.hard_pending_compaction_bytes < self.soft_pending_compaction_bytes {
            return Err(invalid("hard_pending_compaction_bytes", "must be >= soft_pending_compaction_bytes"));
        }
        if self.max_background_jobs < 1 {
            return Err(invalid("max_background_jobs", "must be at least 1"));
        }
        if self.compaction_nice > 19 {
            return Err(invalid("compaction_nice", "must be between 0 and 19"));
        }
        if self.sync_gather_micros > 10_000 {
            return Err(invalid("sync_gather_micros", "must be at most 10000"));
        }
        if self.write_spin_micros > 10_000 {
            return Err(invalid("write_spin_micros", "must be at most 10000"));
        }
        if self.max_open_files < 16 {
            return Err(invalid("max_open_files", "must be at least 16"));
        }
        if self.max_log_file_size < 1024 {
            return Err(invalid("max_log_file_size", "must be at least 1 KiB"));
        }
        if self.max_manifest_file_size == 0 {
            return Err(invalid("max_manifest_file_size", "must be at least 1"));
        }
        #[cfg(not(feature = "zstd"))]
        if self.compression_per_level.contains(&Compression::Zstd)
            || self.blob_compression == Compression::Zstd
        {
            return Err(invalid("compression", "zstd support was not compiled in (feature \"zstd\")"));
        }
        Ok(())
    }
}

/// Options for one write. The default (`sync: false, disable_wal: false`) survives a process
/// crash but not a power loss (the WAL is in the OS cache); `docs/durability.md` has the details.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::{Db, Options, ReadOptions, WriteOptions};
/// let db = Db::open(dir.path(), Options::default())?;
/// let durable = WriteOptions { sync: true, disable_wal: false }; // survives power loss on return
/// let bulk = WriteOptions { sync: false, disable_wal: true }; // lost on a crash until flushed
/// db.put_opt(&durable, b"account", b"42")?;
/// db.put_opt(&bulk, b"cache-entry", b"x")?;
/// db.flush()?; // now the unlogged write is on disk too
/// assert!(db.stats().wal_syncs.load(std::sync::atomic::Ordering::Relaxed) >= 1);
/// assert_eq!(db.get(b"cache-entry")?, Some(b"x".to_vec()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// fdatasync the WAL before acknowledging (survives power loss).
    pub sync: bool,
    /// Skip the WAL: the write is lost on any crash until the memtable is flushed.
    pub disable_wal: bool,
}

/// Options for reads and iterators. Bounds and prefix apply to iterators only; `get` ignores
/// them. When both a prefix and bounds are set, the iterator uses the tighter of each.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::{Db, Options, ReadOptions, WriteOptions};
/// let db = Db::open(dir.path(), Options::default())?;
/// for id in [99, 100, 150, 200] {
///     db.put(format!("user:{id}").as_bytes(), b"")?;
/// }
/// let ro = ReadOptions {
///     lower_bound: Some(b"user:100".to_vec()), // inclusive
///     upper_bound: Some(b"user:200".to_vec()), // exclusive
///     fill_cache: false,                       // a one-off scan: keep the cache for hot data
///     ..ReadOptions::new()
/// };
/// let mut it = db.cursor(&ro)?;
/// let mut keys = Vec::new();
/// it.seek_to_first();
/// while it.valid() {
///     keys.push(String::from_utf8(it.key().to_vec())?);
///     it.next();
/// }
/// it.status()?;
/// assert_eq!(keys, ["user:100", "user:150"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ReadOptions {
    /// Read as of this snapshot instead of the latest state; see [`Snapshot`].
    pub snapshot: Option<Snapshot>,
    /// Put blocks read by this operation into the block cache (default true).
    pub fill_cache: bool,
    /// Iterators start at or after this user key (inclusive).
    pub lower_bound: Option<Vec<u8>>,
    /// Iterators stop before this user key (exclusive).
    pub upper_bound: Option<Vec<u8>>,
    /// Iterators only return keys with this prefix (see the example on
    /// [`Db::iter`](crate::Db::iter)).
    pub prefix: Option<Vec<u8>>,
}

impl ReadOptions {
    /// Default read options: latest state, cache filled, no bounds (same as
    /// `ReadOptions::default()`).
    ///
    /// ```
    /// let ro = strata::ReadOptions::new();
    /// assert!(ro.snapshot.is_none() && ro.fill_cache && ro.prefix.is_none());
    /// ```
    pub fn new() -> Self {
        Self { snapshot: None, fill_cache: true, lower_bound: None, upper_bound: None, prefix: None }
    }
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ReadOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadOptions")
            .field("snapshot", &self.snapshot.as_ref().map(Snapshot::sequence))
            .field("fill_cache", &self.fill_cache)
            .field("lower_bound", &self.lower_bound)
            .field("upper_bound", &self.upper_bound)
            .field("prefix", &self.prefix)
            .finish()
    }
}

/// How `Db::open` treats damage in the write-ahead logs, as RocksDB's `WALRecoveryMode`.
/// "Torn-shaped" damage is what a power cut can leave of an unsynced append: a record cut off
/// by the end of the file, a page of zeros, or a WAL whose predecessor lost its unsynced tail.
/// Anything else (a complete record whose checksum fails) is corruption in every mode but
/// `SkipAnyCorruptedRecords`. docs/durability.md, "Recovery modes", has the details.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WalRecoveryMode {
    /// Open only a log that reads back whole: any damage, even a torn last record, is
    /// `Error::Corruption`. For databases closed cleanly, or kept on storage that never tears.
    AbsoluteConsistency,
    /// Drop a torn-shaped damage at the very end of the last WAL; anything else is corruption,
    /// including a torn tail of an earlier WAL. LevelDB's original behaviour.
    TolerateCorruptedTailRecords,
    /// Stop at the first torn-shaped damage and drop everything after it (later WALs too), so
    /// the recovered state is a prefix of the writes, unless a later record proves the damaged
    /// part was durable (then it is corruption). The default. Loses only writes that no
    /// acknowledged sync covered.
    #[default]
    PointInTime,
    /// Salvage: skip every damaged record and missing predecessor and replay the rest. The
    /// recovered state may have holes (a later write without an earlier one).
    SkipAnyCorruptedRecords,
}

impl WalRecoveryMode {
    /// RocksDB's spelling, as written in OPTIONS files (`kPointInTimeRecovery`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::AbsoluteConsistency => "kAbsoluteConsistency",
            Self::TolerateCorruptedTailRecords => "kTolerateCorruptedTailRecords",
            Self::PointInTime => "kPointInTimeRecovery",
            Self::SkipAnyCorruptedRecords => "kSkipAnyCorruptedRecords",
        }
    }

    /// Parses RocksDB's spelling, or the Rust variant name, or RocksDB's integer value.
    pub fn parse(s: &str) -> Option<Self> {
        let all = [
            Self::TolerateCorruptedTailRecords,
            Self::AbsoluteConsistency,
            Self::PointInTime,
            Self::SkipAnyCorruptedRecords,
        ];
        all.into_iter().enumerate().find_map(|(i, m)| {
            let matches = s == m.name() || s == format!("{m:?}") || s == i.to_string();
            matches.then_some(m)
        })
    }
}

#[cfg(test)]
mod recovery_mode_tests {
    use super::WalRecoveryMode;

    #[test]
    fn names_round_trip_and_match_rocksdb_numbers() {
        for (i, m) in [
            "kTolerateCorruptedTailRecords",
            "kAbsoluteConsistency",
            "kPointInTimeRecovery",
            "kSkipAnyCorruptedRecords",
        ]
        .iter()
        .enumerate()
        {
            let mode = WalRecoveryMode::parse(m).unwrap();
            assert_eq!(mode.name(), *m);
            assert_eq!(WalRecoveryMode::parse(&i.to_string()), Some(mode));
            assert_eq!(WalRecoveryMode::parse(&format!("{mode:?}")), Some(mode));
        }
        assert_eq!(WalRecoveryMode::parse("kNoSuchMode"), None);
        assert_eq!(WalRecoveryMode::default(), WalRecoveryMode::PointInTime);
    }
}
