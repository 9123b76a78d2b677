//! An iterator over one table whose first key is already known (the smallest key the MANIFEST
//! records for the file). A seek at or before that key leaves the table unread and reports the
//! known key; the table is read only when the iterator steps or its value is asked for
//! ([`InternalIterator::prepare_value`]). In a merge, a table that starts after a range scan's
//! end then costs one key comparison instead of an index search, a data block and a block seek:
//! after a time-ordered load, every L0 table but the newest range sits in that position for
//! most seeks. RocksDB's index with first keys defers data blocks the same way.
//!
//! This module owns the deferred state and checks, on the first read, that the table's first
//! entry is the key it reported. It must not be used by a caller that reads `value` without
//! `prepare_value` (the merging iterator prepares its current child).

use std::cmp::Ordering;

use super::InternalIterator;
use crate::error::{Error, Result};
use crate::key;

/// Wraps the iterator of a table whose first internal key is `first_key`.
pub struct KnownFirstKey<I> {
    inner: I,
    first_key: Vec<u8>,
    file_number: u64,
    /// Positioned on `first_key` without having read the table.
    deferred: bool,
    /// The table's first entry was not `first_key`.
    error: Option<Error>,
}

impl<I: InternalIterator> KnownFirstKey<I> {
    /// Wraps `inner`, the iterator of table `file_number`, whose smallest internal key is
    /// `first_key` (an empty key defers nothing).
    pub fn new(inner: I, first_key: Vec<u8>, file_number: u64) -> Self {
        Self { inner, first_key, file_number, deferred: false, error: None }
    }

    /// Positions on the first key without reading, when it is known.
    fn defer(&mut self) -> bool {
        self.deferred = !self.first_key.is_empty();
        self.deferred
    }

    /// Reads the table up to the entry a deferred seek reported; false when the iterator is
    /// invalid afterwards (the read failed or the entry was not the reported key). Requires
    /// `deferred`. Kept out of line: steps that find nothing deferred stay a flag test.
    #[inline(never)]
    fn settle(&mut self) -> bool {
        self.deferred = false;
        self.inner.seek_to_first();
        if self.inner.valid() {
            if self.inner.key() != self.first_key.as_slice() {
                self.error = Some(self.mismatch("starts with a different key"));
            }
        } else if self.inner.status().is_ok() {
            self.error = Some(self.mismatch("has no entries"));
        }
        self.valid()
    }

    #[cold]
    fn mismatch(&self, what: &str) -> Error {
        Error::corruption(format!(
            "sst {}: {what} than the smallest key the MANIFEST records for it",
            self.file_number
        ))
    }
}

impl<I: InternalIterator> InternalIterator for KnownFirstKey<I> {
    fn valid(&self) -> bool {
        self.error.is_none() && (self.deferred || self.inner.valid())
    }

    fn seek_to_first(&mut self) {
        if !self.defer() {
            self.inner.seek_to_first();
        }
    }

    fn seek_to_last(&mut self) {
        self.deferred = false;
        self.inner.seek_to_last();
    }

    fn seek(&mut self, target: &[u8]) {
        let at_or_before_first = key::compare(target, &self.first_key) != Ordering::Greater;
        if !(at_or_before_first && self.defer()) {
            self.deferred = false;
            self.inner.seek(target);
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.deferred = false;
        self.inner.seek_for_prev(target);
    }

    fn next(&mut self) {
        if self.deferred && !self.settle() {
            return;
        }
        self.inner.next();
    }

    fn prev(&mut self) {
        if self.deferred && !self.settle() {
            return;
        }
        self.inner.prev();
    }

    fn key(&self) -> &[u8] {
        if self.deferred {
            &self.first_key
        } else {
            self.inner.key()
        }
    }

    fn value(&self) -> &[u8] {
        debug_assert!(!self.deferred, "value() of a deferred position without prepare_value()");
        self.inner.value()
    }

    fn prepare_value(&mut self) -> bool {
        if self.deferred {
            return self.settle();
        }
        self.valid()
    }

    fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.duplicate()),
            None => self.inner.status(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
    use std::sync::Arc;

    use super::*;
    use crate::iter::merging::tests::VecIter;
    use crate::iter::merging::MergingIterator;
    use crate::key::{make_internal_key, ValueKind};

    /// Counts the positioning calls that reach the wrapped iterator.
    struct Counting {
        inner: VecIter,
        reads: Arc<AtomicUsize>,
    }

    impl InternalIterator for Counting {
        fn valid(&self) -> bool {
            self.inner.valid()
        }
        fn seek_to_first(&mut self) {
            self.reads.fetch_add(1, AtomicOrdering::Relaxed);
            self.inner.seek_to_first();
        }
        fn seek_to_last(&mut self) {
            self.reads.fetch_add(1, AtomicOrdering::Relaxed);
            self.inner.seek_to_last();
        }
        fn seek(&mut self, t: &[u8]) {
            self.reads.fetch_add(1, AtomicOrdering::Relaxed);
            self.inner.seek(t);
        }
        fn seek_for_prev(&mut self, t: &[u8]) {
            self.reads.fetch_add(1, AtomicOrdering::Relaxed);
            self.inner.seek_for_prev(t);
        }
        fn next(&mut self) {
            self.inner.next();
        }
        fn prev(&mut self) {
            self.inner.prev();
        }
        fn key(&self) -> &[u8] {
            self.inner.key()
        }
        fn value(&self) -> &[u8] {
            self.inner.value()
        }
        fn status(&self) -> Result<()> {
            self.inner.status()
        }
    }

    fn ikey(k: &str, seq: u64) -> Vec<u8> {
        make_internal_key(k.as_bytes(), seq, ValueKind::Put)
    }

    fn table(keys: &[&str], reads: &Arc<AtomicUsize>) -> Counting {
        let entries = keys.iter().map(|k| (ikey(k, 1), k.as_bytes().to_vec())).collect();
        Counting { inner: VecIter::new(entries), reads: Arc::clone(reads) }
    }

    #[test]
    fn a_seek_before_the_first_key_reads_nothing_until_the_table_is_needed() {
        let (early, late) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let a = table(&["a", "b", "c"], &early);
        let z = KnownFirstKey::new(table(&["x", "y"], &late), ikey("x", 1), 7);
        let mut m = MergingIterator::new(vec![Box::new(a), Box::new(z)]);
        m.seek(&ikey("b", key::MAX_SEQ));
        assert_eq!((m.key(), m.value()), (ikey("b", 1).as_slice(), &b"b"[..]));
        m.next();
        assert_eq!(m.value(), b"c");
        assert_eq!(late.load(AtomicOrdering::Relaxed), 0, "the later table was not read");
        m.next();
        assert_eq!((m.key(), m.value()), (ikey("x", 1).as_slice(), &b"x"[..]));
        assert_eq!(late.load(AtomicOrdering::Relaxed), 1, "read once it became current");
        m.next();
        assert_eq!(m.value(), b"y");
        m.next();
        assert!(!m.valid());
        m.status().unwrap();
        assert_eq!(early.load(AtomicOrdering::Relaxed), 1);
    }

    #[test]
    fn a_table_that_does_not_start_at_the_known_key_is_corrupt() {
        let reads = Arc::new(AtomicUsize::new(0));
        let mut it = KnownFirstKey::new(table(&["b", "c"], &reads), ikey("a", 1), 9);
        it.seek_to_first();
        assert!(it.valid());
        assert!(!it.prepare_value());
        assert!(!it.valid());
        let err = it.status().unwrap_err();
        assert!(err.is_corruption() && err.to_string().contains("sst 9"), "{err}");

        let mut empty = KnownFirstKey::new(table(&[], &reads), ikey("a", 1), 9);
        empty.seek(&ikey("a", key::MAX_SEQ));
        empty.next();
        assert!(!empty.valid());
        assert!(empty.status().unwrap_err().is_corruption());
    }

    #[test]
    fn moving_backward_or_past_the_first_key_reads_the_table() {
        let reads = Arc::new(AtomicUsize::new(0));
        let mut it = KnownFirstKey::new(table(&["b", "d"], &reads), ikey("b", 1), 3);
        it.seek(&ikey("c", key::MAX_SEQ));
        assert_eq!(reads.load(AtomicOrdering::Relaxed), 1);
        assert_eq!(it.value(), b"d");
        it.seek(&ikey("a", key::MAX_SEQ));
        assert_eq!(reads.load(AtomicOrdering::Relaxed), 1, "deferred");
        it.prev();
        assert!(!it.valid(), "nothing before the first key");
        it.status().unwrap();
        it.seek_for_prev(&ikey("c", key::MAX_SEQ));
        assert_eq!(it.value(), b"b");
        it.seek_to_last();
        assert_eq!(it.value(), b"d");
    }
}
