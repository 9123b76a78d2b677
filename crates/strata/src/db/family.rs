//! Column families: the per-family state of an open database ([`Family`]: options, memtables
//! and version published together, memtable budget, slot hint), the table of live families
//! ([`FamilyTable`]), and the public handle [`ColumnFamily`].
//!
//! Per database, not here: the WAL and write group (`write`), the background scheduler
//! (`background`), the table cache and the version set. This module must not touch files: a
//! family is created or dropped by `families`, which logs the change to the MANIFEST first.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;

use super::memtable_budget::MemtableBudget;
use super::SuperVersion;
use crate::batch::WriteBatch;
use crate::key::ValueKind;
use crate::memtable::{MemTable, SharedSlotHint};
use crate::options::Options;
use crate::sst::BlockCache;
use crate::version::version::Version;

/// One column family of an open database. Aligned so the reference counts readers change have
/// a cache line of their own.
#[repr(align(128))]
pub(crate) struct Family {
    pub id: u32,
    pub name: String,
    /// The family's options: its own memtable, table, blob and compaction settings, with the
    /// database-wide ones (filesystem, cache, threads) taken from the database's options.
    pub opts: Options,
    /// The mutable memtable, the immutable ones and the version, published together.
    pub super_version: ArcSwap<SuperVersion>,
    /// The mutable memtable's index layout (`memtable::slot_hint`).
    pub slot_hint: SharedSlotHint,
    /// How many memtables of this family may be unflushed at once.
    pub memtable_budget: MemtableBudget,
    /// Set once the family is dropped: nothing of it is flushed or compacted any more.
    pub dropped: AtomicBool,
}

impl Family {
    pub fn new(
        id: u32,
        name: String,
        opts: Options,
        version: Arc<Version>,
        cache: Option<Arc<BlockCache>>,
    ) -> Self {
        let mem = Arc::new(MemTable::with_expected_keys(opts.write_buffer_size / 256));
        let memtable_budget = MemtableBudget::new(&opts, cache);
        Self {
            id,
            name,
            super_version: ArcSwap::from_pointee(SuperVersion { mem, imm: Vec::new(), version }),
            slot_hint: SharedSlotHint::default(),
            memtable_budget,
            dropped: AtomicBool::new(false),
            opts,
        }
    }

    pub fn is_dropped(&self) -> bool {
        self.dropped.load(Ordering::Acquire)
    }
}

/// The live families of a database, by id and by name; replaced whole when one is created or
/// dropped, so the write path reads it without a lock.
#[derive(Default)]
pub(crate) struct FamilyTable {
    by_id: BTreeMap<u32, Arc<Family>>,
}

impl FamilyTable {
    pub fn with(&self, family: Arc<Family>) -> FamilyTable {
        let mut by_id = self.by_id.clone();
        by_id.insert(family.id, family);
        FamilyTable { by_id }
    }

    pub fn without(&self, id: u32) -> FamilyTable {
        let mut by_id = self.by_id.clone();
        by_id.remove(&id);
        FamilyTable { by_id }
    }

    pub fn get(&self, id: u32) -> Option<&Arc<Family>> {
        self.by_id.get(&id)
    }

    pub fn by_name(&self, name: &str) -> Option<&Arc<Family>> {
        self.by_id.values().find(|f| f.name == name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<Family>> {
        self.by_id.values()
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }
}

/// The options a family runs with: `family`'s own settings, with what is shared by the whole
/// database (filesystem, cache, background threads, WAL and MANIFEST settings) from `db`.
pub(crate) fn family_options(db: &Options, family: &Options) -> Options {
    Options {
        write_buffer_size: family.write_buffer_size,
        max_write_buffer_number: family.max_write_buffer_number,
        block_size: family.block_size,
        block_restart_interval: family.block_restart_interval,
        bloom_bits_per_key: family.bloom_bits_per_key,
        optimize_filters_for_hits: family.optimize_filters_for_hits,
        prefix_extractor: family.prefix_extractor,
        compression_per_level: family.compression_per_level.clone(),
        blob_compression: family.blob_compression,
        min_blob_size: family.min_blob_size,
        blob_gc_age_cutoff: family.blob_gc_age_cutoff,
        blob_gc_min_garbage_ratio: family.blob_gc_min_garbage_ratio,
        blob_scan_runs: family.blob_scan_runs,
        target_file_size: family.target_file_size,
        max_bytes_for_level_base: family.max_bytes_for_level_base,
        level_size_multiplier: family.level_size_multiplier,
        level0_compaction_trigger: family.level0_compaction_trigger,
        level0_slowdown_trigger: family.level0_slowdown_trigger,
        level0_stop_trigger: family.level0_stop_trigger,
        soft_pending_compaction_bytes: family.soft_pending_compaction_bytes,
        hard_pending_compaction_bytes: family.hard_pending_compaction_bytes,
        merge_operator: family.merge_operator.clone(),
        ..db.clone()
    }
}

/// A handle on one column family of an open database: pass it to the `_cf` methods of
/// [`Db`](crate::Db) and [`WriteBatch`]. Cheap to clone. A handle whose family was dropped makes
/// reads and writes through it fail with `InvalidArgument`.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::{Db, Options, ReadOptions, WriteBatch, WriteOptions};
/// let db = Db::open(dir.path(), Options::default())?;
/// let users = db.create_cf("users", Options::default())?;
/// let by_email = db.create_cf("users_by_email", Options::default())?;
///
/// // One batch across families is applied atomically.
/// let mut batch = WriteBatch::new();
/// batch.put_cf(&users, b"u1", b"ada").put_cf(&by_email, b"ada@example.com", b"u1");
/// db.write(batch)?;
///
/// assert_eq!(db.get_cf(&users, b"u1")?.as_deref(), Some(&b"ada"[..]));
/// assert_eq!(db.get(b"u1")?, None); // the default family is separate
/// assert_eq!(db.cf_names(), ["default", "users", "users_by_email"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ColumnFamily {
    pub(crate) family: Arc<Family>,
}

impl ColumnFamily {
    /// The family's name.
    pub fn name(&self) -> &str {
        &self.family.name
    }

    /// The family's id: 0 for `default`, then assigned in creation order, never reused.
    pub fn id(&self) -> u32 {
        self.family.id
    }
}

impl std::fmt::Debug for ColumnFamily {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColumnFamily").field("name", &self.family.name).field("id", &self.family.id).finish()
    }
}

impl WriteBatch {
    /// Adds a put of `key` to `value` in column family `cf`; returns `self` so calls chain.
    /// See the example on [`ColumnFamily`].
    pub fn put_cf(&mut self, cf: &ColumnFamily, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> &mut Self {
        self.record_in(cf.id(), ValueKind::Put, key.as_ref(), Some(value.as_ref()));
        self
    }

    /// Adds a delete of `key` in column family `cf`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, ReadOptions, WriteBatch, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// let cf = db.create_cf("sessions", Options::default())?;
    /// db.put_cf(&cf, b"s1", b"x")?;
    /// let mut batch = WriteBatch::new();
    /// batch.delete_cf(&cf, b"s1");
    /// db.write(batch)?;
    /// assert_eq!(db.get_cf(&cf, b"s1")?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete_cf(&mut self, cf: &ColumnFamily, key: impl AsRef<[u8]>) -> &mut Self {
        self.record_in(cf.id(), ValueKind::Delete, key.as_ref(), None);
        self
    }

    /// Adds a deletion of every key in `[begin, end)` of column family `cf` (see
    /// [`WriteBatch::delete_range`]).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, WriteBatch};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// let cf = db.create_cf("sessions", Options::default())?;
    /// db.put_cf(&cf, b"s1", b"x")?;
    /// db.put(b"s1", b"kept")?; // the default family is another keyspace
    /// let mut batch = WriteBatch::new();
    /// batch.delete_range_cf(&cf, b"s", b"t");
    /// db.write(batch)?;
    /// assert_eq!(db.get_cf(&cf, b"s1")?, None);
    /// assert_eq!(db.get(b"s1")?, Some(b"kept".to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete_range_cf(
        &mut self,
        cf: &ColumnFamily,
        begin: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
    ) -> &mut Self {
        self.range_in(cf.id(), begin.as_ref(), end.as_ref());
        self
    }

    /// Adds a merge operand for `key` in column family `cf`, folded by that family's merge
    /// operator.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{merge, Db, Options, ReadOptions, WriteBatch, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// let counters = Options { merge_operator: merge::builtin("uint64add"), ..Options::default() };
    /// let cf = db.create_cf("counters", counters)?;
    /// let mut batch = WriteBatch::new();
    /// batch.merge_cf(&cf, b"hits", 2u64.to_le_bytes()).merge_cf(&cf, b"hits", 3u64.to_le_bytes());
    /// db.write(batch)?;
    /// assert_eq!(db.get_cf(&cf, b"hits")?, Some(5u64.to_le_bytes().to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn merge_cf(
        &mut self,
        cf: &ColumnFamily,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
    ) -> &mut Self {
        self.record_in(cf.id(), ValueKind::Merge, key.as_ref(), Some(operand.as_ref()));
        self
    }
}
