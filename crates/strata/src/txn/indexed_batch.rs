//! [`WriteBatchWithIndex`]: a write batch plus an ordered index of its operations per column
//! family and key, so the batch's own writes can be read before it is written (RocksDB's
//! `WriteBatchWithIndex`); transactions keep their writes in one. It owns the batch, the index and
//! the savepoints, and reads the database only through `Db`'s public reads. It must not write the
//! database: the caller writes [`WriteBatchWithIndex::into_batch`].

use std::collections::BTreeMap;
use std::sync::Arc;

use super::batch_iter::BatchAndDbIterator;
use super::batch_ops::{fold, resolve, FamilyIndex, IndexedOp, Resolved};
use crate::batch::WriteBatch;
use crate::db::{ColumnFamily, Db, DbIterator};
use crate::error::{Error, Result};
use crate::key::{ValueKind, DEFAULT_FAMILY};
use crate::merge::MergeOperator;
use crate::options::ReadOptions;

fn merge_operator(cf: &ColumnFamily) -> Option<&Arc<dyn MergeOperator>> {
    cf.family.opts.merge_operator.as_ref()
}

/// What a [`WriteBatchWithIndex`] says about one key on its own, without the database: see
/// [`WriteBatchWithIndex::get_from_batch`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchLookup {
    /// The batch sets the key to this value (a put, with any later merges folded over it; or
    /// merges after a delete, folded over no value).
    Found(Vec<u8>),
    /// The batch deletes the key (its last put or delete is a delete, and no merge follows).
    Deleted,
    /// The batch holds only merge operands for the key (oldest first): the value depends on the
    /// database's.
    MergeOnly(Vec<Vec<u8>>),
    /// The batch does not touch the key.
    NotFound,
}

/// A [`WriteBatch`] that can also be read: every put, delete and merge is recorded in the batch
/// (encoded exactly as `WriteBatch` encodes it) and in an ordered index per column family, so
/// reads see the batch's own writes before it is written with
/// [`Db::write`]`(opts, wbwi.into_batch())`. Reads can look at the batch alone
/// ([`get_from_batch`](Self::get_from_batch)), at the batch over the database
/// ([`get_from_batch_and_db`](Self::get_from_batch_and_db),
/// [`multi_get_from_batch_and_db`](Self::multi_get_from_batch_and_db)) or iterate both
/// ([`iter_with_base`](Self::iter_with_base)). Savepoints undo the operations added since.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::txn::WriteBatchWithIndex;
/// use strata::{Db, Options, ReadOptions, WriteOptions};
/// let db = Db::open(dir.path(), Options::default())?;
/// db.put(b"a", b"old")?;
/// db.put(b"b", b"kept")?;
///
/// let mut wb = WriteBatchWithIndex::new();
/// wb.put(b"a", b"new").delete(b"b").put(b"c", b"added");
/// let ro = ReadOptions::new();
/// assert_eq!(wb.get_from_batch_and_db(&db, None, &ro, b"a")?, Some(b"new".to_vec()));
/// assert_eq!(wb.get_from_batch_and_db(&db, None, &ro, b"b")?, None);
/// assert_eq!(db.get_opt(&ro, b"b")?, Some(b"kept".to_vec())); // not written yet
///
/// db.write(wb.into_batch())?;
/// assert_eq!(db.get_opt(&ro, b"b")?, None);
/// assert_eq!(db.get_opt(&ro, b"c")?, Some(b"added".to_vec()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default)]
pub struct WriteBatchWithIndex {
    batch: WriteBatch,
    index: BTreeMap<u32, FamilyIndex>,
    /// The number of operations at each savepoint, innermost last.
    save_points: Vec<usize>,
}

impl std::fmt::Debug for WriteBatchWithIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatchWithIndex")
            .field("count", &self.batch.len())
            .field("save_points", &self.save_points.len())
            .finish()
    }
}

/// Iterators over families the batch has no operation in read this.
static EMPTY: FamilyIndex = BTreeMap::new();

fn no_save_point() -> Error {
    Error::InvalidArgument("no savepoint is set in the write batch".into())
}

impl WriteBatchWithIndex {
    /// An empty batch (same as `WriteBatchWithIndex::default()`).
    ///
    /// ```
    /// let wb = strata::txn::WriteBatchWithIndex::new();
    /// assert!(wb.is_empty() && wb.batch().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    fn record(&mut self, family: u32, key: &[u8], op: IndexedOp) -> &mut Self {
        let (kind, value) = match &op {
            IndexedOp::Put(v) => (ValueKind::Put, Some(v.as_slice())),
            IndexedOp::Delete => (ValueKind::Delete, None),
            IndexedOp::Merge(v) => (ValueKind::Merge, Some(v.as_slice())),
        };
        self.batch.record_in(family, kind, key, value);
        let keys = self.index.entry(family).or_default();
        match keys.get_mut(key) {
            Some(ops) => ops.push(op),
            None => {
                keys.insert(key.to_vec(), vec![op]);
            }
        }
        self
    }

    /// Adds a put of `key` to `value` in the default family; returns `self` so calls chain. As
    /// with [`WriteBatch`], a bad key or value is reported when the batch is written. See the
    /// example on [`WriteBatchWithIndex`].
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> &mut Self {
        self.record(DEFAULT_FAMILY, key.as_ref(), IndexedOp::Put(value.as_ref().to_vec()))
    }

    /// Adds a delete of `key` in the default family. See the example on [`WriteBatchWithIndex`].
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> &mut Self {
        self.record(DEFAULT_FAMILY, key.as_ref(), IndexedOp::Delete)
    }

    /// Refuses a range deletion with [`Error::NotSupported`], as RocksDB's
    /// `WriteBatchWithIndex::DeleteRange` does: the batch's index answers reads key by key and
    /// could not hide the keys of a range. The batch is left unchanged. Write a range
    /// deletion with [`Db::delete_range`](crate::Db::delete_range) or a plain
    /// [`WriteBatch::delete_range`].
    pub fn delete_range(&mut self, begin: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        let (begin, end) = (begin.as_ref(), end.as_ref());
        Err(Error::NotSupported(format!(
            "range deletion [{begin:?}, {end:?}) in a WriteBatchWithIndex; use Db::delete_range"
        )))
    }

    /// Adds a merge operand for `key` in the default family; reads fold it with the family's
    /// merge operator.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::txn::WriteBatchWithIndex;
    /// use strata::{merge, Db, Options, ReadOptions, WriteOptions};
    /// let db = Db::open(dir.path(), Options { merge_operator: merge::builtin("uint64add"), ..Options::default() })?;
    /// db.put(b"n", &10u64.to_le_bytes())?;
    /// let mut wb = WriteBatchWithIndex::new();
    /// wb.merge(b"n", 5u64.to_le_bytes());
    /// let n = wb.get_from_batch_and_db(&db, None, &ReadOptions::new(), b"n")?;
    /// assert_eq!(n, Some(15u64.to_le_bytes().to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn merge(&mut self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> &mut Self {
        self.record(DEFAULT_FAMILY, key.as_ref(), IndexedOp::Merge(operand.as_ref().to_vec()))
    }

    /// Adds a put of `key` to `value` in column family `cf`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::txn::{BatchLookup, WriteBatchWithIndex};
    /// use strata::{Db, Options, ReadOptions, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// let users = db.create_cf("users", Options::default())?;
    /// let mut wb = WriteBatchWithIndex::new();
    /// wb.put_cf(&users, b"u1", b"ada");
    /// assert_eq!(wb.get_from_batch(Some(&users), b"u1")?, BatchLookup::Found(b"ada".to_vec()));
    /// assert_eq!(wb.get_from_batch(None, b"u1")?, BatchLookup::NotFound); // other family
    /// db.write(wb.into_batch())?;
    /// assert_eq!(db.get_cf(&users, b"u1")?, Some(b"ada".to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put_cf(&mut self, cf: &ColumnFamily, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> &mut Self {
        self.record(cf.id(), key.as_ref(), IndexedOp::Put(value.as_ref().to_vec()))
    }

    /// Adds a delete of `key` in column family `cf`. See [`put_cf`](Self::put_cf).
    pub fn delete_cf(&mut self, cf: &ColumnFamily, key: impl AsRef<[u8]>) -> &mut Self {
        self.record(cf.id(), key.as_ref(), IndexedOp::Delete)
    }

    /// Adds a merge operand for `key` in column family `cf`, folded by that family's merge
    /// operator. See [`merge`](Self::merge).
    pub fn merge_cf(
        &mut self,
        cf: &ColumnFamily,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
    ) -> &mut Self {
        self.record(cf.id(), key.as_ref(), IndexedOp::Merge(operand.as_ref().to_vec()))
    }

    /// Number of operations in the batch (every put, delete and merge, including repeated
    /// writes of one key).
    ///
    /// ```
    /// let mut wb = strata::txn::WriteBatchWithIndex::new();
    /// wb.put(b"k", b"1").put(b"k", b"2");
    /// assert_eq!(wb.len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        self.batch.len()
    }

    /// True when the batch holds no operations.
    ///
    /// ```
    /// assert!(strata::txn::WriteBatchWithIndex::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.batch.is_empty()
    }

    /// Removes every operation and every savepoint.
    ///
    /// ```
    /// let mut wb = strata::txn::WriteBatchWithIndex::new();
    /// wb.put(b"k", b"v");
    /// wb.set_save_point();
    /// wb.clear();
    /// assert!(wb.is_empty());
    /// assert!(wb.rollback_to_save_point().is_err());
    /// ```
    pub fn clear(&mut self) {
        self.batch.clear();
        self.index.clear();
        self.save_points.clear();
    }

    /// The batch as it would be written.
    ///
    /// ```
    /// let mut wb = strata::txn::WriteBatchWithIndex::new();
    /// wb.put(b"k", b"v").delete(b"k");
    /// let mut plain = strata::WriteBatch::new();
    /// plain.put(b"k", b"v").delete(b"k");
    /// assert_eq!(wb.batch().size_in_bytes(), plain.size_in_bytes());
    /// assert_eq!(wb.batch().len(), 2);
    /// ```
    pub fn batch(&self) -> &WriteBatch {
        &self.batch
    }

    /// The batch, ready for [`Db::write`]. See the example on [`WriteBatchWithIndex`].
    pub fn into_batch(self) -> WriteBatch {
        self.batch
    }

    /// Marks the current state, for [`rollback_to_save_point`](Self::rollback_to_save_point).
    /// Savepoints nest.
    ///
    /// ```
    /// use strata::txn::{BatchLookup, WriteBatchWithIndex};
    /// let mut wb = WriteBatchWithIndex::new();
    /// wb.put(b"a", b"1");
    /// wb.set_save_point();
    /// wb.put(b"a", b"2").put(b"b", b"3");
    /// wb.set_save_point();
    /// wb.delete(b"a");
    /// wb.rollback_to_save_point()?; // undoes the delete
    /// assert_eq!(wb.get_from_batch(None, b"a")?, BatchLookup::Found(b"2".to_vec()));
    /// wb.rollback_to_save_point()?; // undoes the put of "a" to 2 and of "b"
    /// assert_eq!(wb.get_from_batch(None, b"a")?, BatchLookup::Found(b"1".to_vec()));
    /// assert_eq!(wb.get_from_batch(None, b"b")?, BatchLookup::NotFound);
    /// assert_eq!(wb.len(), 1);
    /// assert!(wb.rollback_to_save_point().is_err()); // none left
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn set_save_point(&mut self) {
        self.save_points.push(self.batch.len());
    }

    /// Undoes every operation added since the last savepoint, in the batch and in the index,
    /// and removes that savepoint. See the example on [`set_save_point`](Self::set_save_point).
    ///
    /// # Errors
    /// `InvalidArgument` when no savepoint is set (the batch is unchanged).
    pub fn rollback_to_save_point(&mut self) -> Result<()> {
        let keep = *self.save_points.last().ok_or_else(no_save_point)?;
        let records = self.batch.records().collect::<Result<Vec<_>>>()?;
        let mut kept = WriteBatch::new();
        for &(family, kind, key, value) in &records[..keep] {
            kept.record_in(family, kind, key, (kind != ValueKind::Delete).then_some(value));
        }
        for &(family, _, key, _) in records[keep..].iter().rev() {
            unindex_last(&mut self.index, family, key);
        }
        self.batch = kept;
        self.save_points.pop();
        Ok(())
    }

    /// Removes the last savepoint without undoing anything.
    ///
    /// ```
    /// let mut wb = strata::txn::WriteBatchWithIndex::new();
    /// wb.set_save_point();
    /// wb.put(b"k", b"v");
    /// wb.pop_save_point()?;
    /// assert!(wb.rollback_to_save_point().is_err());
    /// assert_eq!(wb.len(), 1);
    /// # Ok::<(), strata::Error>(())
    /// ```
    ///
    /// # Errors
    /// `InvalidArgument` when no savepoint is set.
    pub fn pop_save_point(&mut self) -> Result<()> {
        self.save_points.pop().map(drop).ok_or_else(no_save_point)
    }

    fn ops(&self, family: u32, key: &[u8]) -> Option<&[IndexedOp]> {
        self.index.get(&family)?.get(key).map(Vec::as_slice)
    }

    /// What the batch alone says about `key` in `cf` (`None`: the default family). A put or
    /// delete followed by merges is folded with `cf`'s merge operator; pass
    /// `Some(&db.default_cf())` rather than `None` to fold the default family's.
    ///
    /// ```
    /// use strata::txn::{BatchLookup, WriteBatchWithIndex};
    /// let mut wb = WriteBatchWithIndex::new();
    /// wb.put(b"p", b"v").delete(b"d").merge(b"m", b"+1").merge(b"m", b"+2");
    /// assert_eq!(wb.get_from_batch(None, b"p")?, BatchLookup::Found(b"v".to_vec()));
    /// assert_eq!(wb.get_from_batch(None, b"d")?, BatchLookup::Deleted);
    /// assert_eq!(wb.get_from_batch(None, b"m")?, BatchLookup::MergeOnly(vec![b"+1".to_vec(), b"+2".to_vec()]));
    /// assert_eq!(wb.get_from_batch(None, b"x")?, BatchLookup::NotFound);
    /// wb.merge(b"p", b"+3"); // a merge over a put needs the operator
    /// assert!(matches!(wb.get_from_batch(None, b"p"), Err(strata::Error::Merge(_))));
    /// # Ok::<(), strata::Error>(())
    /// ```
    ///
    /// # Errors
    /// `Merge` when merges over a put or delete cannot be folded (no operator known, or the
    /// operator fails).
    pub fn get_from_batch(&self, cf: Option<&ColumnFamily>, key: &[u8]) -> Result<BatchLookup> {
        let Some(ops) = self.ops(cf.map_or(DEFAULT_FAMILY, ColumnFamily::id), key) else {
            return Ok(BatchLookup::NotFound);
        };
        let r = resolve(ops);
        Ok(match r.base {
            None => BatchLookup::MergeOnly(r.operands.iter().map(|o| o.to_vec()).collect()),
            Some(base) if r.operands.is_empty() => {
                base.map_or(BatchLookup::Deleted, |v| BatchLookup::Found(v.to_vec()))
            }
            Some(base) => BatchLookup::Found(fold(cf.and_then(merge_operator), key, base, &r.operands)?),
        })
    }

    /// The value of `key` in `cf` (`None`: the default family) with the batch applied over the
    /// database's value as read with `opts` (RocksDB's `GetFromBatchAndDB`): the batch's put or
    /// delete wins, and its merges fold over the database's value with the family's merge
    /// operator. See the examples on [`WriteBatchWithIndex`] and
    /// [`merge`](Self::merge).
    ///
    /// # Errors
    /// As [`Db::get_cf`]; `Merge` when operands cannot be folded (as `Db::get`).
    pub fn get_from_batch_and_db(
        &self,
        db: &Db,
        cf: Option<&ColumnFamily>,
        opts: &ReadOptions,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        let family = cf.map_or_else(|| db.default_cf(), Clone::clone);
        let Some(ops) = self.ops(family.id(), key) else {
            return db.get_cf_opt(&family, opts, key);
        };
        let r = resolve(ops);
        let db_value = match r.base {
            Some(_) => None,
            None => db.get_cf_opt(&family, opts, key)?,
        };
        r.value_over(merge_operator(&family), key, db_value.as_deref())
    }

    /// [`get_from_batch_and_db`](Self::get_from_batch_and_db) for several keys, one result per
    /// key in the order given; the keys the batch does not decide are read from the database
    /// with one [`Db::multi_get_cf`] (one consistent view).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::txn::WriteBatchWithIndex;
    /// use strata::{Db, Options, ReadOptions, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"a", b"db")?;
    /// db.put(b"b", b"db")?;
    /// let mut wb = WriteBatchWithIndex::new();
    /// wb.put(b"b", b"batch").put(b"c", b"batch");
    /// let got = wb.multi_get_from_batch_and_db(&db, None, &ReadOptions::new(), &[b"a", b"b", b"c", b"d"]);
    /// let got: Vec<_> = got.into_iter().collect::<Result<_, _>>()?;
    /// assert_eq!(got, [Some(b"db".to_vec()), Some(b"batch".to_vec()), Some(b"batch".to_vec()), None]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn multi_get_from_batch_and_db(
        &self,
        db: &Db,
        cf: Option<&ColumnFamily>,
        opts: &ReadOptions,
        keys: &[&[u8]],
    ) -> Vec<Result<Option<Vec<u8>>>> {
        let family = cf.map_or_else(|| db.default_cf(), Clone::clone);
        let resolved: Vec<Option<Resolved>> =
            keys.iter().map(|k| self.ops(family.id(), k).map(resolve)).collect();
        let needs_db = |r: &Option<Resolved>| r.as_ref().is_none_or(|r| r.base.is_none());
        let wanted: Vec<&[u8]> =
            keys.iter().zip(&resolved).filter(|(_, r)| needs_db(r)).map(|(k, _)| *k).collect();
        let mut from_db = db.multi_get_cf_opt(&family, opts, &wanted).into_iter();
        let op = merge_operator(&family);
        keys.iter()
            .zip(&resolved)
            .map(|(key, r)| {
                let db_value = if needs_db(r) {
                    from_db.next().ok_or_else(|| Error::InvalidArgument("multi_get lost a key".into()))??
                } else {
                    None
                };
                match r {
                    Some(r) => r.value_over(op, key, db_value.as_deref()),
                    None => Ok(db_value),
                }
            })
            .collect()
    }

    /// An iterator over `base` (a [`Db::iter_cf`] iterator of `cf`, `None`: the default family)
    /// with the batch laid over it (RocksDB's `NewIteratorWithBase`): the batch's puts appear,
    /// keys it deletes do not, its merges fold over the database's values. It honours `base`'s
    /// bounds and prefix, and reads the batch as it is now (the borrow keeps it unchanged).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::txn::WriteBatchWithIndex;
    /// use strata::{Db, Options, ReadOptions, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// for k in [b"a", b"b", b"c"] {
    ///     db.put(k, b"db")?;
    /// }
    /// let mut wb = WriteBatchWithIndex::new();
    /// wb.delete(b"b").put(b"bb", b"batch").put(b"c", b"batch");
    /// let mut it = wb.iter_with_base(None, db.cursor(&ReadOptions::new())?);
    /// let mut seen = Vec::new();
    /// it.seek_to_first();
    /// while it.valid() {
    ///     seen.push((it.key().to_vec(), it.value().to_vec()));
    ///     it.next();
    /// }
    /// it.status()?;
    /// let want = [("a", "db"), ("bb", "batch"), ("c", "batch")];
    /// assert_eq!(seen, want.map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec())));
    /// it.seek_for_prev(b"bz");
    /// assert_eq!(it.key(), b"bb");
    /// it.prev();
    /// assert_eq!(it.key(), b"a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// If `base` reads another family than `cf`, the iterator is never valid and its
    /// [`status`](BatchAndDbIterator::status) is `InvalidArgument`.
    pub fn iter_with_base(&self, cf: Option<&ColumnFamily>, base: DbIterator) -> BatchAndDbIterator<'_> {
        let family = cf.map_or(DEFAULT_FAMILY, ColumnFamily::id);
        BatchAndDbIterator::new(self.index.get(&family).unwrap_or(&EMPTY), family, base)
    }
}

/// Drops the newest operation on `key` in `family` from the index (undoing its `record`).
fn unindex_last(index: &mut BTreeMap<u32, FamilyIndex>, family: u32, key: &[u8]) {
    let Some(keys) = index.get_mut(&family) else { return };
    if let Some(ops) = keys.get_mut(key) {
        ops.pop();
        if ops.is_empty() {
            keys.remove(key);
        }
    }
    if keys.is_empty() {
        index.remove(&family);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{merge, Options, WriteOptions};

    #[test]
    fn resolve_finds_the_last_base_and_the_merges_after_it() {
        use IndexedOp::*;
        let ops = [Merge(b"0".to_vec()), Put(b"p".to_vec()), Merge(b"1".to_vec()), Merge(b"2".to_vec())];
        let r = resolve(&ops);
        assert_eq!(r.base, Some(Some(&b"p"[..])));
        assert_eq!(r.operands, [&b"1"[..], &b"2"[..]]);
        let ops = [Put(b"p".to_vec()), Delete];
        let r = resolve(&ops);
        assert_eq!((r.base, r.operands.len()), (Some(None), 0));
        let ops = [Merge(b"1".to_vec())];
        assert_eq!(resolve(&ops).base, None);
    }

    #[test]
    fn rollback_restores_the_encoded_batch_and_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        let cf = db.create_cf("other", Options::default()).unwrap();
        let mut wb = WriteBatchWithIndex::new();
        wb.put(b"a", b"1").put_cf(&cf, b"a", b"x");
        let before = wb.batch().clone();
        wb.set_save_point();
        wb.delete(b"a").put_cf(&cf, b"b", b"y").merge(b"c", b"m");
        wb.rollback_to_save_point().unwrap();
        let records = |b: &WriteBatch| -> Vec<_> {
            b.records().map(|r| r.map(|(f, k, key, v)| (f, k, key.to_vec(), v.to_vec())).unwrap()).collect()
        };
        assert_eq!(records(wb.batch()), records(&before));
        assert_eq!(wb.batch().size_in_bytes(), before.size_in_bytes());
        assert_eq!(wb.get_from_batch(None, b"a").unwrap(), BatchLookup::Found(b"1".to_vec()));
        assert_eq!(wb.get_from_batch(Some(&cf), b"b").unwrap(), BatchLookup::NotFound);
        assert_eq!(wb.get_from_batch(None, b"c").unwrap(), BatchLookup::NotFound);
        assert_eq!(wb.index.values().map(BTreeMap::len).sum::<usize>(), 2);
        assert!(matches!(wb.pop_save_point(), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn merges_without_an_operator_fail_like_db_get() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        let ro = ReadOptions::new();
        let mut wb = WriteBatchWithIndex::new();
        wb.merge(b"m", b"1");
        assert!(matches!(wb.get_from_batch_and_db(&db, None, &ro, b"m"), Err(Error::Merge(_))));
        let mut it = wb.iter_with_base(None, db.cursor(&ro).unwrap());
        it.seek_to_first();
        assert!(!it.valid());
        assert!(matches!(it.status(), Err(Error::Merge(_))));
        // Writing it is refused as a merge without an operator always is.
        let w = WriteOptions::default();
        assert!(matches!(db.write_opt(&w, wb.into_batch()), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn a_merge_over_a_batch_delete_ignores_the_database_value() {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options { merge_operator: merge::builtin("uint64add"), ..Options::default() };
        let db = Db::open(dir.path(), opts).unwrap();
        db.put(b"n", 100u64.to_le_bytes()).unwrap();
        let mut wb = WriteBatchWithIndex::new();
        wb.delete(b"n").merge(b"n", 2u64.to_le_bytes());
        let ro = ReadOptions::new();
        let two = Some(2u64.to_le_bytes().to_vec());
        assert_eq!(wb.get_from_batch_and_db(&db, None, &ro, b"n").unwrap(), two);
        let default = db.default_cf();
        assert_eq!(
            wb.get_from_batch(Some(&default), b"n").unwrap(),
            BatchLookup::Found(two.clone().unwrap())
        );
        db.write(wb.into_batch()).unwrap();
        assert_eq!(db.get_opt(&ro, b"n").unwrap(), two);
    }

    #[test]
    fn an_iterator_of_another_family_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        let cf = db.create_cf("other", Options::default()).unwrap();
        db.put(b"k", b"v").unwrap();
        let wb = WriteBatchWithIndex::new();
        let mut it = wb.iter_with_base(Some(&cf), db.cursor(&ReadOptions::new()).unwrap());
        it.seek_to_first();
        assert!(!it.valid());
        assert!(matches!(it.status(), Err(Error::InvalidArgument(_))));
    }
}
