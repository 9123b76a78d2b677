//! Reading a [`TtlDb`](super::TtlDb) in order: [`TtlIter`] (a Rust iterator) and [`TtlCursor`]
//! (seek, next, prev) over the wrapped database's, skipping expired entries and stripping the
//! write-time suffix. Expiry is judged once, at the time the iterator or cursor is made, so one
//! walk sees one consistent set of live entries.
//!
//! Owns nothing of the engine: both wrap the public `Iter` and `DbIterator`.

use super::Expiry;
use crate::db::{DbIterator, Iter};
use crate::error::{Error, Result};

/// One entry of an [`Iter`] or a [`TtlIter`].
type Entry = Result<(Vec<u8>, Vec<u8>)>;

/// A double-ended iterator over the live `(key, value)` pairs of a
/// [`TtlDb`](super::TtlDb) in key order, values without their write-time suffix; as
/// [`Iter`], it yields `Err` once when a read fails (or a stored value is too short to carry a
/// write time), then ends.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use std::time::Duration;
/// use strata::ttl::TtlDb;
/// let db = TtlDb::open(dir.path(), strata::Options::default(), Duration::from_secs(60))?;
/// db.put("a", "1")?;
/// db.put("b", "2")?;
/// let all: Vec<_> = db.iter().rev().collect::<Result<_, _>>()?;
/// assert_eq!(all, [(b"b".to_vec(), b"2".to_vec()), (b"a".to_vec(), b"1".to_vec())]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TtlIter {
    inner: Iter,
    expiry: Expiry,
    now: u64,
    failed: bool,
}

impl TtlIter {
    pub(super) fn new(inner: Iter, expiry: Expiry) -> Self {
        let now = expiry.now();
        TtlIter { inner, expiry, now, failed: false }
    }

    /// The next live entry from `step` (one end of the inner iterator).
    fn live(&mut self, step: fn(&mut Iter) -> Option<Entry>) -> Option<Entry> {
        if self.failed {
            return None;
        }
        loop {
            let entry = step(&mut self.inner)?.and_then(|(key, stored)| {
                Ok(self.expiry.live_owned(stored, self.now)?.map(|value| (key, value)))
            });
            match entry {
                Ok(Some(kv)) => return Some(Ok(kv)),
                Ok(None) => continue,
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

impl Iterator for TtlIter {
    type Item = Entry;

    fn next(&mut self) -> Option<Self::Item> {
        self.live(Iterator::next)
    }
}

impl DoubleEndedIterator for TtlIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.live(DoubleEndedIterator::next_back)
    }
}

impl std::iter::FusedIterator for TtlIter {}

impl std::fmt::Debug for TtlIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TtlIter").field("inner", &self.inner).field("now", &self.now).finish()
    }
}

/// A cursor over the live entries of a [`TtlDb`](super::TtlDb): [`DbIterator`]'s API, stepping
/// over expired entries, with [`TtlCursor::value`] the value without its write-time suffix. A
/// stored value too short to carry a write time stops the cursor: `valid()` turns false and
/// [`TtlCursor::status`] returns the `Corruption`.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use std::time::Duration;
/// use strata::ttl::TtlDb;
/// use strata::ReadOptions;
/// let db = TtlDb::open(dir.path(), strata::Options::default(), Duration::from_secs(60))?;
/// db.put("a", "1")?;
/// db.put("c", "3")?;
/// let mut c = db.cursor(&ReadOptions::new())?;
/// c.seek(b"b");
/// assert!(c.valid());
/// assert_eq!((c.key(), c.value()), (&b"c"[..], &b"3"[..]));
/// c.prev();
/// assert_eq!(c.value(), b"1");
/// c.status()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TtlCursor {
    inner: DbIterator,
    expiry: Expiry,
    now: u64,
    error: Option<Error>,
}

impl TtlCursor {
    pub(super) fn new(inner: DbIterator, expiry: Expiry) -> Self {
        let now = expiry.now();
        TtlCursor { inner, expiry, now, error: None }
    }

    /// Moves on (in the direction `step` goes) while the cursor is at an expired entry.
    fn settle(&mut self, step: fn(&mut DbIterator)) {
        self.error = None;
        while self.inner.valid() {
            match self.expiry.live(self.inner.value(), self.now) {
                Ok(Some(_)) => return,
                Ok(None) => step(&mut self.inner),
                Err(e) => {
                    self.error = Some(e);
                    return;
                }
            }
        }
    }

    /// True when positioned at a live entry.
    pub fn valid(&self) -> bool {
        self.error.is_none() && self.inner.valid()
    }

    /// The current key. Requires `valid()`.
    pub fn key(&self) -> &[u8] {
        self.inner.key()
    }

    /// The current value, without its write-time suffix. Requires `valid()` (otherwise empty).
    pub fn value(&self) -> &[u8] {
        let stored = self.inner.value();
        match super::split(stored) {
            Ok((value, _)) if self.valid() => value,
            _ => &[],
        }
    }

    /// `Ok(())` unless a read failed or a stored value was too short to carry a write time.
    ///
    /// # Errors
    /// As [`DbIterator::status`], or `Corruption`.
    pub fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.duplicate()),
            None => self.inner.status(),
        }
    }

    /// Positions at the first live key.
    pub fn seek_to_first(&mut self) {
        self.inner.seek_to_first();
        self.settle(DbIterator::next);
    }

    /// Positions at the last live key.
    pub fn seek_to_last(&mut self) {
        self.inner.seek_to_last();
        self.settle(DbIterator::prev);
    }

    /// Positions at the first live key at or after `target`.
    pub fn seek(&mut self, target: &[u8]) {
        self.inner.seek(target);
        self.settle(DbIterator::next);
    }

    /// Positions at the last live key at or before `target`.
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        self.inner.seek_for_prev(target);
        self.settle(DbIterator::prev);
    }

    /// Moves to the next live key. Requires `valid()`.
    pub fn next(&mut self) {
        if self.valid() {
            self.inner.next();
            self.settle(DbIterator::next);
        }
    }

    /// Moves to the previous live key. Requires `valid()`.
    pub fn prev(&mut self) {
        if self.valid() {
            self.inner.prev();
            self.settle(DbIterator::prev);
        }
    }
}

impl std::fmt::Debug for TtlCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TtlCursor").field("valid", &self.valid()).field("now", &self.now).finish()
    }
}
