//! The column-family half of [`Db`]'s API (RocksDB's `CreateColumnFamily`, `DropColumnFamily`,
//! `ListColumnFamilies` and the `_cf` variants of reads and writes). Each method checks its
//! handle and hands over to the same engine paths the default family uses; nothing here holds
//! state of its own.

use std::path::Path;
use std::sync::Arc;

use super::families::dropped;
use super::family::{ColumnFamily, Family};
use super::{open, Db, DbIterator};
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::version::set::VersionSet;

impl Db {
    /// Opens the database at `path` as [`Db::open`] does, giving the column families named in
    /// `families` their own options (write buffer, compression, bloom bits, merge operator, blob
    /// threshold, block size, compaction shape); database-wide settings come from `opts`. A
    /// named family that does not exist is created when `opts.create_if_missing` is set, and is
    /// an `InvalidArgument` error otherwise. Families that exist but are not named open with
    /// `opts` (unlike RocksDB, which refuses): name every family that uses a merge operator, or
    /// its merges cannot be read.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{merge, Db, Options, ReadOptions, WriteOptions};
    /// let counters = || Options { merge_operator: merge::builtin("uint64add"), ..Options::default() };
    /// let db = Db::open_cf(dir.path(), Options::default(), [("counters", counters())])?;
    /// let cf = db.cf("counters").unwrap();
    /// db.merge_cf(&cf, b"n", &7u64.to_le_bytes())?;
    /// db.close()?;
    ///
    /// assert_eq!(Db::list_cf(dir.path(), Options::default())?, ["default", "counters"]);
    /// let db = Db::open_cf(dir.path(), Options::default(), [("counters", counters())])?;
    /// let cf = db.cf("counters").unwrap();
    /// assert_eq!(db.get_cf(&cf, b"n")?, Some(7u64.to_le_bytes().to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Db::open`]; `InvalidArgument` for a bad family name or options.
    pub fn open_cf<N: Into<String>>(
        path: impl AsRef<Path>,
        opts: Options,
        families: impl IntoIterator<Item = (N, Options)>,
    ) -> Result<Db> {
        let named: open::NamedFamilies = families.into_iter().map(|(n, o)| (n.into(), o)).collect();
        let create = opts.create_if_missing;
        let db = Db::from_inner(open::open(path.as_ref(), opts, &named)?);
        for (name, family_opts) in &named {
            if db.inner.family_by_name(name).is_some() {
                continue;
            }
            if !create {
                return Err(Error::InvalidArgument(format!("column family {name:?} does not exist")));
            }
            db.inner.create_family(name, family_opts)?;
        }
        Ok(db)
    }

    /// The names of the column families of the database at `path`, `default` first, then in
    /// creation order, read from its MANIFEST without opening it (RocksDB's
    /// `ListColumnFamilies`). `opts` supplies the filesystem.
    ///
    /// # Errors
    /// `NotADatabase` when there is no database at `path`; `Corruption` when its MANIFEST is
    /// damaged.
    pub fn list_cf(path: impl AsRef<Path>, opts: Options) -> Result<Vec<String>> {
        let path = path.as_ref();
        let fs = Arc::clone(&opts.fs);
        if fs.is_dir(&path.join(crate::filenames::CURRENT))?.is_none() {
            return Err(Error::NotADatabase(path.to_path_buf()));
        }
        let recovered = VersionSet::recover(path, fs)?;
        Ok(recovered.set.families().values().map(|f| f.name.clone()).collect())
    }

    /// Creates the column family `name` with its own `opts` (see [`Db::open_cf`] for which
    /// settings are the family's), durably: it exists after a crash once this returns.
    ///
    /// # Errors
    /// `InvalidArgument` when a family of that name exists, the name is empty, longer than
    /// 255 bytes or holds a control character, or the options are invalid; `ReadOnly` on a
    /// read-only handle; `Io` when the MANIFEST cannot be written.
    pub fn create_cf(&self, name: &str, opts: Options) -> Result<ColumnFamily> {
        let family = self.inner.create_family(name, &opts)?;
        Ok(ColumnFamily { family })
    }

    /// Drops a column family, durably: its data is gone after a crash once this returns, and
    /// its files are deleted once no reader or iterator holds them. Handles on it fail from
    /// then on; a family of the same name can be created again (it starts empty).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, ReadOptions, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// let cf = db.create_cf("scratch", Options::default())?;
    /// db.put_cf(&cf, b"k", b"v")?;
    /// db.drop_cf(&cf)?;
    /// assert!(db.get_cf(&cf, b"k").is_err());
    /// let again = db.create_cf("scratch", Options::default())?;
    /// assert_eq!(db.get_cf(&again, b"k")?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// `InvalidArgument` for the default family or one already dropped; `ReadOnly`; `Io`.
    pub fn drop_cf(&self, cf: &ColumnFamily) -> Result<()> {
        self.inner.drop_family(&cf.family)
    }

    /// The handle of the live column family `name`, if there is one.
    pub fn cf(&self, name: &str) -> Option<ColumnFamily> {
        self.inner.family_by_name(name).map(|family| ColumnFamily { family })
    }

    /// The handle of the default column family (what the methods without `_cf` use).
    pub fn default_cf(&self) -> ColumnFamily {
        ColumnFamily { family: Arc::clone(&self.inner.default) }
    }

    /// The names of the live column families, `default` first, then in creation order.
    pub fn cf_names(&self) -> Vec<String> {
        self.inner.families.load().iter().map(|f| f.name.clone()).collect()
    }

    /// [`Db::get`] in column family `cf`.
    ///
    /// # Errors
    /// As [`Db::get`]; `InvalidArgument` when the family was dropped.
    pub fn get_cf_opt(&self, cf: &ColumnFamily, opts: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let family = live(cf)?;
        self.inner.timed(&self.inner.stats.get_latency, || self.inner.get(family, opts, key))
    }

    /// [`Db::multi_get`] in column family `cf`.
    pub fn multi_get_cf_opt(
        &self,
        cf: &ColumnFamily,
        opts: &ReadOptions,
        keys: &[&[u8]],
    ) -> Vec<Result<Option<Vec<u8>>>> {
        match live(cf) {
            Ok(family) => self.multi_get_in(family, opts, keys),
            Err(_) => keys.iter().map(|_| Err(dropped(&cf.family))).collect(),
        }
    }

    /// [`Db::iter`] over column family `cf`.
    ///
    /// # Errors
    /// As [`Db::iter`]; `InvalidArgument` when the family was dropped.
    pub fn cursor_cf(&self, cf: &ColumnFamily, opts: &ReadOptions) -> Result<DbIterator> {
        live(cf)?;
        let family = (cf.family.id != self.inner.default.id).then(|| Arc::clone(&cf.family));
        DbIterator::new(&self.inner, family, opts)
    }

    /// [`Db::put`] in column family `cf`.
    ///
    /// # Errors
    /// As [`Db::put`]; `InvalidArgument` when the family was dropped.
    pub fn put_cf_opt(&self, cf: &ColumnFamily, opts: &WriteOptions, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::for_one_record(key.len() + 5, value.len());
        b.put_cf(cf, key, value);
        self.write_opt(opts, b)
    }

    /// [`Db::delete`] in column family `cf`.
    ///
    /// # Errors
    /// As [`Db::delete`]; `InvalidArgument` when the family was dropped.
    pub fn delete_cf_opt(&self, cf: &ColumnFamily, opts: &WriteOptions, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::for_one_record(key.len() + 5, 0);
        b.delete_cf(cf, key);
        self.write_opt(opts, b)
    }

    /// [`Db::delete_range_opt`] in column family `cf`.
    ///
    /// # Errors
    /// As [`Db::delete_range_opt`]; `InvalidArgument` when the family was dropped.
    pub fn delete_range_cf_opt(
        &self,
        cf: &ColumnFamily,
        opts: &WriteOptions,
        begin: &[u8],
        end: &[u8],
    ) -> Result<()> {
        let mut b = WriteBatch::for_one_record(begin.len() + 5, end.len());
        b.delete_range_cf(cf, begin, end);
        self.write_opt(opts, b)
    }

    /// [`Db::merge`] in column family `cf`, folded by that family's merge operator.
    ///
    /// # Errors
    /// As [`Db::merge`]; `InvalidArgument` when the family was dropped or has no merge operator.
    pub fn merge_cf_opt(
        &self,
        cf: &ColumnFamily,
        opts: &WriteOptions,
        key: &[u8],
        operand: &[u8],
    ) -> Result<()> {
        let mut b = WriteBatch::for_one_record(key.len() + 5, operand.len());
        b.merge_cf(cf, key, operand);
        self.write_opt(opts, b)
    }

    /// [`Db::flush`] for column family `cf`: its memtable goes to a table, and WALs no family
    /// still needs are deleted.
    ///
    /// # Errors
    /// As [`Db::flush`]; `InvalidArgument` when the family was dropped.
    pub fn flush_cf(&self, cf: &ColumnFamily) -> Result<()> {
        if self.inner.read_only {
            return Err(Error::ReadOnly);
        }
        self.inner.flush_and_wait(live(cf)?)
    }

    /// [`Db::compact_range`] in column family `cf`.
    ///
    /// # Errors
    /// As [`Db::compact_range`]; `InvalidArgument` when the family was dropped.
    pub fn compact_range_cf(
        &self,
        cf: &ColumnFamily,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<()> {
        if self.inner.read_only {
            return Err(Error::ReadOnly);
        }
        let family = live(cf)?;
        self.inner.flush_and_wait(family)?;
        self.inner.compact_range(family, start, end)
    }
}

/// The family behind `cf`, unless it was dropped.
pub(super) fn live(cf: &ColumnFamily) -> Result<&Family> {
    if cf.family.is_dropped() {
        return Err(dropped(&cf.family));
    }
    Ok(&cf.family)
}

impl Db {
    /// [`Db::property`] of column family `cf`: the per-family properties (`num-files-at-level<N>`,
    /// `levelstats`, `estimate-pending-compaction-bytes`, `num-immutable-mem-table`,
    /// `total-sst-files-size`, `total-blob-file-size`) describe that family; the others the
    /// whole database. `None` for an unknown name or a dropped family.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// let cf = db.create_cf("events", Options::default())?;
    /// db.put_cf(&cf, b"k", b"v")?;
    /// db.flush_cf(&cf)?;
    /// assert_eq!(db.property_cf(&cf, "strata.num-files-at-level0").as_deref(), Some("1"));
    /// assert_eq!(db.property("strata.num-files-at-level0").as_deref(), Some("0"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn property_cf(&self, cf: &ColumnFamily, name: &str) -> Option<String> {
        self.inner.property_of(live(cf).ok()?, name)
    }
}

/// The hooks transactions (`crate::txn`) commit and validate through.
impl Db {
    /// Writes `batch` after `check` passes, with no other write committed between the two (see
    /// `DbInner::write_checked`); validated as [`Db::write`] validates.
    pub(crate) fn write_checked(
        &self,
        opts: &WriteOptions,
        batch: &WriteBatch,
        check: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        if self.inner.read_only {
            return Err(Error::ReadOnly);
        }
        batch.validate()?;
        self.inner.check_families(batch)?;
        self.inner.write_checked(opts, batch, check)
    }

    /// The sequence number of the newest entry of `key` in `cf`, if it has one.
    pub(crate) fn newest_sequence(&self, cf: &ColumnFamily, key: &[u8]) -> Result<Option<u64>> {
        self.inner.newest_sequence(live(cf)?, key)
    }
}
