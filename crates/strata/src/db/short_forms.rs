//! The option-free forms of [`Db`]'s reads and writes, as rust-rocksdb has them: `put(k, v)`
//! beside `put_opt(&WriteOptions, k, v)`, taking anything that is bytes (`&str`, `String`,
//! `Vec<u8>`, arrays). Each uses the default options and hands over to its `_opt` form; nothing
//! here has behaviour of its own.

use super::{ColumnFamily, Db};
use crate::batch::WriteBatch;
use crate::error::Result;
use crate::options::{ReadOptions, WriteOptions};

impl Db {
    /// Sets `key` to `value` with the default [`WriteOptions`] (in the WAL, not synced); see
    /// [`Db::put_opt`] for the errors and for a synced write.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put("user:1", "ada")?;
    /// assert_eq!(db.get("user:1")?.as_deref(), Some(&b"ada"[..]));
    /// db.delete("user:1")?;
    /// assert_eq!(db.get("user:1")?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_opt(&WriteOptions::default(), key.as_ref(), value.as_ref())
    }

    /// Deletes `key` with the default [`WriteOptions`]; see [`Db::delete_opt`].
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_opt(&WriteOptions::default(), key.as_ref())
    }

    /// Deletes every key in `[begin, end)` with the default [`WriteOptions`]; see
    /// [`Db::delete_range_opt`].
    pub fn delete_range(&self, begin: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        self.delete_range_opt(&WriteOptions::default(), begin.as_ref(), end.as_ref())
    }

    /// Adds a merge operand with the default [`WriteOptions`]; see [`Db::merge_opt`].
    pub fn merge(&self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        self.merge_opt(&WriteOptions::default(), key.as_ref(), operand.as_ref())
    }

    /// Applies `batch` atomically with the default [`WriteOptions`]; see [`Db::write_opt`].
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(&WriteOptions::default(), batch)
    }

    /// The latest value of `key`; see [`Db::get_opt`] to read at a snapshot.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_opt(&ReadOptions::new(), key.as_ref())
    }

    /// The latest values of `keys`, read at one point in time; see [`Db::multi_get_opt`].
    pub fn multi_get<K: AsRef<[u8]>>(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> Vec<Result<Option<Vec<u8>>>> {
        let keys: Vec<K> = keys.into_iter().collect();
        let slices: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
        self.multi_get_opt(&ReadOptions::new(), &slices)
    }

    /// [`Db::put`] in column family `cf`.
    pub fn put_cf(&self, cf: &ColumnFamily, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_cf_opt(cf, &WriteOptions::default(), key.as_ref(), value.as_ref())
    }

    /// [`Db::delete`] in column family `cf`.
    pub fn delete_cf(&self, cf: &ColumnFamily, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_cf_opt(cf, &WriteOptions::default(), key.as_ref())
    }

    /// [`Db::delete_range`] in column family `cf`.
    pub fn delete_range_cf(
        &self,
        cf: &ColumnFamily,
        begin: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.delete_range_cf_opt(cf, &WriteOptions::default(), begin.as_ref(), end.as_ref())
    }

    /// [`Db::merge`] in column family `cf`.
    pub fn merge_cf(
        &self,
        cf: &ColumnFamily,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.merge_cf_opt(cf, &WriteOptions::default(), key.as_ref(), operand.as_ref())
    }

    /// [`Db::get`] in column family `cf`.
    pub fn get_cf(&self, cf: &ColumnFamily, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_cf_opt(cf, &ReadOptions::new(), key.as_ref())
    }

    /// [`Db::multi_get`] in column family `cf`.
    pub fn multi_get_cf<K: AsRef<[u8]>>(
        &self,
        cf: &ColumnFamily,
        keys: impl IntoIterator<Item = K>,
    ) -> Vec<Result<Option<Vec<u8>>>> {
        let keys: Vec<K> = keys.into_iter().collect();
        let slices: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
        self.multi_get_cf_opt(cf, &ReadOptions::new(), &slices)
    }
}
