//! [`Iter`]: the database as a Rust iterator of `(key, value)` pairs, for `for` loops and
//! iterator adapters (the form fjall and redb give). It is built on the cursor API
//! ([`DbIterator`]) and owns no engine state of its own: both ends read through cursors at one
//! snapshot, so a double-ended walk sees one point in time. Seeks and stepping back and forth
//! stay with [`Db::cursor`].

use std::ops::{Bound, RangeBounds};

use super::{ColumnFamily, Db, DbIterator};
use crate::error::Result;
use crate::options::ReadOptions;

/// A double-ended iterator over `(key, value)` pairs in key order, as of the snapshot it was
/// created at (the caller's `ReadOptions::snapshot`, or one taken at creation). Yields `Err`
/// once when a read fails (a damaged block, an I/O error), then ends.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::{Db, Options};
/// let db = Db::open(dir.path(), Options::default())?;
/// for k in ["a", "b", "c", "d"] {
///     db.put(k, k.to_uppercase())?;
/// }
/// let keys: Vec<Vec<u8>> = db.iter().map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
/// assert_eq!(keys, [b"a", b"b", b"c", b"d"]);
/// let last_two: Vec<_> = db.range(b"b".as_slice()..).rev().take(2).collect::<Result<_, _>>()?;
/// assert_eq!(last_two[0], (b"d".to_vec(), b"D".to_vec()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Iter {
    db: Db,
    family: Option<ColumnFamily>,
    opts: ReadOptions,
    /// Each end's cursor once that end has been asked for; it stays on the last entry it gave.
    front: Option<DbIterator>,
    back: Option<DbIterator>,
    finished: bool,
}

impl Iter {
    fn new(db: &Db, family: Option<ColumnFamily>, opts: &ReadOptions) -> Self {
        let mut opts = opts.clone();
        if opts.snapshot.is_none() {
            // Both ends must read the same point in time, though their cursors start apart.
            opts.snapshot = Some(db.snapshot());
        }
        Iter { db: db.clone(), family, opts, front: None, back: None, finished: false }
    }

    /// Steps one end (opening and positioning its cursor on first use) and returns its entry,
    /// or `None` at the end of the range or where it meets the other end.
    fn step(&mut self, forward: bool) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        if self.finished {
            return None;
        }
        let (this, other) =
            if forward { (&mut self.front, &self.back) } else { (&mut self.back, &self.front) };
        let cursor = match this.as_mut() {
            Some(c) => {
                if forward {
                    c.next()
                } else {
                    c.prev()
                }
                c
            }
            None => {
                let opened = match &self.family {
                    Some(cf) => self.db.cursor_cf(cf, &self.opts),
                    None => self.db.cursor(&self.opts),
                };
                let mut c = match opened {
                    Ok(c) => c,
                    Err(e) => {
                        self.finished = true;
                        return Some(Err(e));
                    }
                };
                if forward {
                    c.seek_to_first()
                } else {
                    c.seek_to_last()
                }
                this.insert(c)
            }
        };
        if !cursor.valid() {
            self.finished = true;
            return cursor.status().err().map(Err);
        }
        let key = cursor.key();
        // The other end's cursor sits on the last entry it gave: meeting it ends both.
        let other_key = other.as_ref().filter(|c| c.valid()).map(DbIterator::key);
        let crossed = other_key.is_some_and(|o| if forward { key >= o } else { key <= o });
        if crossed {
            self.finished = true;
            return None;
        }
        Some(Ok((key.to_vec(), cursor.value().to_vec())))
    }
}

impl Iterator for Iter {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.step(true)
    }
}

impl DoubleEndedIterator for Iter {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.step(false)
    }
}

impl std::iter::FusedIterator for Iter {}

impl std::fmt::Debug for Iter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Iter").field("opts", &self.opts).field("finished", &self.finished).finish()
    }
}

/// `ReadOptions` bounds for a Rust range: the lower bound is inclusive and the upper exclusive,
/// so an excluded start and an included end move to the next key up (the key with a 0 byte
/// appended, the smallest key above it).
fn bounded<K: AsRef<[u8]>>(opts: &ReadOptions, range: &impl RangeBounds<K>) -> ReadOptions {
    let successor = |k: &[u8]| {
        let mut next = k.to_vec();
        next.push(0);
        next
    };
    let mut opts = opts.clone();
    opts.lower_bound = match range.start_bound() {
        Bound::Included(k) => Some(k.as_ref().to_vec()),
        Bound::Excluded(k) => Some(successor(k.as_ref())),
        Bound::Unbounded => opts.lower_bound,
    };
    opts.upper_bound = match range.end_bound() {
        Bound::Included(k) => Some(successor(k.as_ref())),
        Bound::Excluded(k) => Some(k.as_ref().to_vec()),
        Bound::Unbounded => opts.upper_bound,
    };
    opts
}

impl Db {
    /// Every key and value in key order, as of now; see [`Iter`]. For seeks, stepping both ways
    /// and bounds set by hand, use [`Db::cursor`].
    pub fn iter(&self) -> Iter {
        Iter::new(self, None, &ReadOptions::new())
    }

    /// [`Db::iter`] with read options: a snapshot, bounds, a prefix, `fill_cache`.
    pub fn iter_opt(&self, opts: &ReadOptions) -> Iter {
        Iter::new(self, None, opts)
    }

    /// The keys in `range` (any Rust range of byte strings: `a..b`, `a..=b`, `a..`, `..`).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// for k in ["a", "b", "c"] {
    ///     db.put(k, "v")?;
    /// }
    /// assert_eq!(db.range("a"..="b").count(), 2);
    /// assert_eq!(db.range::<&str, _>(..).count(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Iter {
        Iter::new(self, None, &bounded(&ReadOptions::new(), &range))
    }

    /// The keys that start with `prefix`.
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> Iter {
        let opts = ReadOptions { prefix: Some(prefix.as_ref().to_vec()), ..ReadOptions::new() };
        Iter::new(self, None, &opts)
    }

    /// [`Db::iter`] over column family `cf`.
    pub fn iter_cf(&self, cf: &ColumnFamily) -> Iter {
        Iter::new(self, Some(cf.clone()), &ReadOptions::new())
    }

    /// [`Db::iter_opt`] over column family `cf`.
    pub fn iter_cf_opt(&self, cf: &ColumnFamily, opts: &ReadOptions) -> Iter {
        Iter::new(self, Some(cf.clone()), opts)
    }

    /// [`Db::range`] over column family `cf`.
    pub fn range_cf<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, cf: &ColumnFamily, range: R) -> Iter {
        Iter::new(self, Some(cf.clone()), &bounded(&ReadOptions::new(), &range))
    }
}
