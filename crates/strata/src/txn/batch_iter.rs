//! [`BatchAndDbIterator`]: a database iterator with a [`WriteBatchWithIndex`]'s writes laid over
//! it (RocksDB's `BaseDeltaIterator`, made by `NewIteratorWithBase`). It only reads: the batch's
//! index of one family through a shared borrow, the database through the `DbIterator` it owns.
//!
//! Invariant: moving forward, the base iterator and the batch cursor each sit on their first key
//! at or after the current key; moving backward, on their last key at or before it. The current
//! entry is the smaller (larger) of the two keys, the batch's result when both have it. A
//! direction change re-seeks both sides past the current key.
//!
//! [`WriteBatchWithIndex`]: super::WriteBatchWithIndex

use std::ops::Bound::{self, Excluded, Included, Unbounded};
use std::sync::Arc;

use super::batch_ops::{resolve, FamilyIndex, IndexedOp};
use crate::db::DbIterator;
use crate::error::{Error, Result};
use crate::merge::MergeOperator;

/// One key of the batch and its operations, oldest first.
type Entry<'a> = (&'a Vec<u8>, &'a Vec<IndexedOp>);

/// Which side the current entry comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Current {
    /// Not positioned.
    Nothing,
    /// The base iterator's entry, untouched by the batch.
    Base,
    /// The batch cursor's key, with its value (folded over the base's, if any) in `value`.
    Batch,
}

/// A cursor over a database iterator's entries with a batch's writes applied, made by
/// [`WriteBatchWithIndex::iter_with_base`](super::WriteBatchWithIndex::iter_with_base). It has
/// [`DbIterator`]'s methods and behaves like one over the database as it would be after the
/// batch is written: keys the batch puts appear, keys it deletes do not, its merges are folded
/// over the database's values. Keys outside the base iterator's bounds (or prefix) do not
/// appear. After an error (a merge that cannot be folded, a failed read, a base iterator of
/// another family) it stays invalid and [`status`](Self::status) reports the error.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::txn::WriteBatchWithIndex;
/// use strata::{Db, Options, ReadOptions, WriteOptions};
/// let db = Db::open(dir.path(), Options::default())?;
/// let logs = db.create_cf("logs", Options::default())?;
/// db.put_cf(&logs, b"log:1", b"db")?;
/// db.put_cf(&logs, b"log:3", b"db")?;
/// let mut wb = WriteBatchWithIndex::new();
/// wb.put_cf(&logs, b"log:2", b"batch").put_cf(&logs, b"zzz", b"outside the prefix");
///
/// let ro = ReadOptions { prefix: Some(b"log:".to_vec()), ..ReadOptions::new() };
/// let mut it = wb.iter_with_base(Some(&logs), db.cursor_cf(&logs, &ro)?);
/// it.seek_to_last();
/// let mut keys = Vec::new();
/// while it.valid() {
///     keys.push(it.key().to_vec());
///     it.prev();
/// }
/// it.status()?;
/// assert_eq!(keys, [b"log:3", b"log:2", b"log:1"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct BatchAndDbIterator<'a> {
    base: DbIterator,
    batch: &'a FamilyIndex,
    /// The batch cursor (see the module's invariant); `None` past either end.
    batch_at: Option<Entry<'a>>,
    /// The base iterator's bounds, `[lower, upper)`.
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    merge_operator: Option<Arc<dyn MergeOperator>>,
    forward: bool,
    current: Current,
    /// The current value when `current` is `Batch`.
    value: Vec<u8>,
    error: Option<Error>,
}

impl<'a> BatchAndDbIterator<'a> {
    pub(crate) fn new(batch: &'a FamilyIndex, family: u32, base: DbIterator) -> Self {
        let (base_family, lower, upper) = base.family_and_bounds();
        let error = (base_family.id != family).then(|| {
            Error::InvalidArgument(format!(
                "the base iterator reads column family {} but the batch iterator family {family}",
                base_family.id
            ))
        });
        let merge_operator = base_family.opts.merge_operator.clone();
        let (lower, upper) = (lower.map(<[u8]>::to_vec), upper.map(<[u8]>::to_vec));
        Self {
            base,
            batch,
            batch_at: None,
            lower,
            upper,
            merge_operator,
            forward: true,
            current: Current::Nothing,
            value: Vec::new(),
            error,
        }
    }

    /// True when positioned at an entry. See the example on [`BatchAndDbIterator`].
    pub fn valid(&self) -> bool {
        self.current != Current::Nothing
    }

    /// The current key; requires `valid()` (otherwise empty). See the example on
    /// [`BatchAndDbIterator`].
    pub fn key(&self) -> &[u8] {
        match (self.current, self.batch_at) {
            (Current::Base, _) => self.base.key(),
            (Current::Batch, Some((key, _))) => key,
            _ => &[],
        }
    }

    /// The current value; requires `valid()` (otherwise empty).
    pub fn value(&self) -> &[u8] {
        match self.current {
            Current::Base => self.base.value(),
            Current::Batch => &self.value,
            Current::Nothing => &[],
        }
    }

    /// `Ok(())` unless an error was met: the first one. Check it once `valid()` turns false.
    pub fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.duplicate()),
            None => self.base.status(),
        }
    }

    /// Positions at the first key (within the base iterator's bounds).
    pub fn seek_to_first(&mut self) {
        self.base.seek_to_first();
        self.batch_at = self.batch_from(Unbounded);
        self.settle_forward();
    }

    /// Positions at the last key (within the base iterator's bounds).
    pub fn seek_to_last(&mut self) {
        self.base.seek_to_last();
        self.batch_at = self.batch_to(Unbounded);
        self.settle_backward();
    }

    /// Positions at the first key `>= target`; invalid if there is none.
    pub fn seek(&mut self, target: &[u8]) {
        self.base.seek(target);
        self.batch_at = self.batch_from(Included(target));
        self.settle_forward();
    }

    /// Positions at the last key `<= target`; invalid if there is none.
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        self.base.seek_for_prev(target);
        self.batch_at = self.batch_to(Included(target));
        self.settle_backward();
    }

    /// Moves to the next key; becomes invalid past the last one. Does nothing when not
    /// `valid()`.
    pub fn next(&mut self) {
        if !self.valid() {
            return;
        }
        if !self.forward {
            let key = self.key().to_vec();
            self.base.seek(&key);
            if self.base.valid() && self.base.key() == key.as_slice() {
                self.base.next();
            }
            self.batch_at = self.batch_from(Excluded(&key));
        } else if let (Current::Batch, Some((key, _))) = (self.current, self.batch_at) {
            // Both sides are at or after `key`: step off it where they are on it.
            if self.base.valid() && self.base.key() == key.as_slice() {
                self.base.next();
            }
            self.batch_at = self.batch_from(Excluded(key));
        } else {
            self.base.next(); // the batch cursor is already past the base's key
        }
        self.settle_forward();
    }

    /// Moves to the previous key; becomes invalid before the first one. Does nothing when not
    /// `valid()`.
    pub fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        if self.forward {
            let key = self.key().to_vec();
            self.base.seek_for_prev(&key);
            if self.base.valid() && self.base.key() == key.as_slice() {
                self.base.prev();
            }
            self.batch_at = self.batch_to(Excluded(&key));
        } else if let (Current::Batch, Some((key, _))) = (self.current, self.batch_at) {
            if self.base.valid() && self.base.key() == key.as_slice() {
                self.base.prev();
            }
            self.batch_at = self.batch_to(Excluded(key));
        } else {
            self.base.prev();
        }
        self.settle_backward();
    }

    /// The first batch key after `from` within the bounds.
    fn batch_from(&self, from: Bound<&[u8]>) -> Option<Entry<'a>> {
        let start = match (from, self.lower.as_deref()) {
            (Included(k) | Excluded(k), Some(lower)) if k < lower => Included(lower),
            (Unbounded, Some(lower)) => Included(lower),
            (from, _) => from,
        };
        let (key, ops) = self.batch.range::<[u8], _>((start, Unbounded)).next()?;
        self.upper.as_deref().is_none_or(|u| key.as_slice() < u).then_some((key, ops))
    }

    /// The last batch key before `to` within the bounds.
    fn batch_to(&self, to: Bound<&[u8]>) -> Option<Entry<'a>> {
        let end = match (to, self.upper.as_deref()) {
            (Included(k) | Excluded(k), Some(upper)) if k >= upper => Excluded(upper),
            (Unbounded, Some(upper)) => Excluded(upper),
            (to, _) => to,
        };
        let (key, ops) = self.batch.range::<[u8], _>((Unbounded, end)).next_back()?;
        self.lower.as_deref().is_none_or(|l| key.as_slice() >= l).then_some((key, ops))
    }

    /// From the forward invariant, makes the smaller of the two keys current, skipping keys the
    /// batch deletes.
    fn settle_forward(&mut self) {
        self.forward = true;
        self.settle(|base_key, batch_key| base_key < batch_key);
    }

    /// From the backward invariant, makes the larger of the two keys current.
    fn settle_backward(&mut self) {
        self.forward = false;
        self.settle(|base_key, batch_key| base_key > batch_key);
    }

    /// Makes the nearer side current: `base_first(base key, batch key)` says whether the base
    /// key comes first in the direction of travel.
    fn settle(&mut self, base_first: fn(&[u8], &[u8]) -> bool) {
        self.current = Current::Nothing;
        loop {
            if self.error.is_some() {
                return;
            }
            if !self.base.valid() {
                if let Err(e) = self.base.status() {
                    return self.fail(e);
                }
            }
            let Some((key, ops)) = self.batch_at else {
                if self.base.valid() {
                    self.current = Current::Base;
                }
                return;
            };
            if self.base.valid() && base_first(self.base.key(), key) {
                self.current = Current::Base;
                return;
            }
            let on_base = self.base.valid() && self.base.key() == key.as_slice();
            let db_value = on_base.then(|| self.base.value());
            match resolve(ops).value_over(self.merge_operator.as_ref(), key, db_value) {
                Ok(Some(value)) => {
                    self.value = value;
                    self.current = Current::Batch;
                    return;
                }
                Ok(None) => self.skip_deleted(key, on_base),
                Err(e) => return self.fail(e),
            }
        }
    }

    /// Steps both sides off `key`, which the batch deletes, in the direction of travel.
    fn skip_deleted(&mut self, key: &[u8], on_base: bool) {
        if self.forward {
            if on_base {
                self.base.next();
            }
            self.batch_at = self.batch_from(Excluded(key));
        } else {
            if on_base {
                self.base.prev();
            }
            self.batch_at = self.batch_to(Excluded(key));
        }
    }

    fn fail(&mut self, e: Error) {
        self.error.get_or_insert(e);
        self.current = Current::Nothing;
    }
}
