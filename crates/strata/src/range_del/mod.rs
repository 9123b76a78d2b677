//! Range tombstones (`delete_range(begin, end)`): a tombstone at sequence number `seq` hides every
//! entry of a user key `k` with `begin <= k < end` and a sequence number below `seq`. This module
//! owns the tombstone value type, their fragmentation into non-overlapping pieces (`fragment`),
//! the table block that stores them (`block`, docs/format.md "Range-deletion block") and the rule
//! that widens a table's key range to cover them. It must not read files or decide retention:
//! the memtable, tables, the read path and compaction call it.

pub mod block;
pub mod fragment;

pub use fragment::{Fragments, PieceCursor};

use std::cmp::Ordering;

use crate::key::{self, SeqNo, ValueKind, MAX_SEQ};

/// One `delete_range(begin, end)` written at `seq`. `begin < end`: an empty range is never
/// stored (the write path drops it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RangeTombstone {
    /// First user key deleted.
    pub begin: Vec<u8>,
    /// First user key past the range (exclusive).
    pub end: Vec<u8>,
    /// Sequence number of the delete.
    pub seq: SeqNo,
}

impl RangeTombstone {
    /// A tombstone over `[begin, end)` at `seq`.
    pub fn new(begin: &[u8], end: &[u8], seq: SeqNo) -> Self {
        Self { begin: begin.to_vec(), end: end.to_vec(), seq }
    }

    /// Whether `user_key` lies in `[begin, end)`.
    pub fn contains(&self, user_key: &[u8]) -> bool {
        self.begin.as_slice() <= user_key && user_key < self.end.as_slice()
    }

    /// Whether it deletes any user key in `[smallest, largest]` (both inclusive).
    pub fn overlaps(&self, smallest: &[u8], largest: &[u8]) -> bool {
        self.begin.as_slice() <= largest && smallest < self.end.as_slice()
    }

    /// This tombstone clipped to `[lo, hi)` (`None`: unbounded), or `None` when nothing is left.
    pub fn clipped(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Option<Self> {
        let begin = match lo {
            Some(lo) if lo > self.begin.as_slice() => lo,
            _ => self.begin.as_slice(),
        };
        let end = match hi {
            Some(hi) if hi < self.end.as_slice() => hi,
            _ => self.end.as_slice(),
        };
        (begin < end).then(|| Self::new(begin, end, self.seq))
    }
}

/// The user key of the largest key a tombstone over `[.., end)` can hide, as a table bound
/// (inclusive): `end` itself in general (a bound past every hidden key), but exactly `k` when
/// `end = k ++ [0]`, the first key after `k`. Compaction cuts a tombstone at `last ++ [0]` after
/// an output table's last key `last`, so that table's bound stays `last` and the next table,
/// whose keys are all above `last`, does not overlap it.
pub fn largest_hidden_bound(end: &[u8]) -> &[u8] {
    match end.split_last() {
        Some((0, k)) => k,
        _ => end,
    }
}

/// Widens a table's internal-key bounds and sequence range so they cover `tombstones`. Empty
/// bounds (a table with no point entry) take the tombstones' alone. The smallest bound of a
/// tombstone is `(begin, MAX_SEQ, RangeDelete)`, which sorts before every entry of `begin`; the
/// largest is `(largest_hidden_bound(end), MAX_SEQ, RangeDelete)`, so a real entry of that user
/// key, when the table holds one, stays the largest.
pub fn widen_bounds<'a>(
    smallest: &mut Vec<u8>,
    largest: &mut Vec<u8>,
    seqs: (&mut SeqNo, &mut SeqNo),
    tombstones: impl IntoIterator<Item = &'a RangeTombstone>,
) {
    for t in tombstones {
        let lo = key::make_internal_key(&t.begin, MAX_SEQ, ValueKind::RangeDelete);
        if smallest.is_empty() || key::compare(&lo, smallest) == Ordering::Less {
            *smallest = lo;
        }
        let hi = key::make_internal_key(largest_hidden_bound(&t.end), MAX_SEQ, ValueKind::RangeDelete);
        if largest.is_empty() || key::compare(&hi, largest) == Ordering::Greater {
            *largest = hi;
        }
        *seqs.0 = (*seqs.0).min(t.seq);
        *seqs.1 = (*seqs.1).max(t.seq);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_keeps_the_overlap_or_nothing() {
        let t = RangeTombstone::new(b"b", b"f", 7);
        assert_eq!(t.clipped(None, None), Some(t.clone()));
        assert_eq!(t.clipped(Some(b"c"), Some(b"e")), Some(RangeTombstone::new(b"c", b"e", 7)));
        assert_eq!(t.clipped(Some(b"a"), Some(b"z")), Some(t.clone()));
        assert_eq!(t.clipped(Some(b"f"), None), None);
        assert_eq!(t.clipped(None, Some(b"b")), None);
        assert!(t.contains(b"b") && t.contains(b"ezz") && !t.contains(b"f") && !t.contains(b"a"));
    }

    #[test]
    fn the_largest_bound_is_exact_after_a_cut_and_conservative_otherwise() {
        assert_eq!(largest_hidden_bound(b"abc\0"), b"abc");
        assert_eq!(largest_hidden_bound(b"abc"), b"abc");
        assert_eq!(largest_hidden_bound(b""), b"");
        assert_eq!(largest_hidden_bound(b"\0"), b"");
    }

    #[test]
    fn bounds_widen_to_cover_tombstones_but_real_entries_stay_largest() {
        let mut lo = key::make_internal_key(b"c", 5, ValueKind::Put);
        let mut hi = key::make_internal_key(b"d", 6, ValueKind::Put);
        let (mut s, mut l) = (5, 6);
        let ts = [RangeTombstone::new(b"a", b"d\0", 9), RangeTombstone::new(b"b", b"c", 2)];
        widen_bounds(&mut lo, &mut hi, (&mut s, &mut l), &ts);
        assert_eq!(key::user_key(&lo), b"a");
        assert_eq!(hi, key::make_internal_key(b"d", 6, ValueKind::Put));
        assert_eq!((s, l), (2, 9));
        let (mut lo, mut hi) = (Vec::new(), Vec::new());
        let (mut s, mut l) = (u64::MAX, 0);
        widen_bounds(&mut lo, &mut hi, (&mut s, &mut l), &ts[..1]);
        assert_eq!((key::user_key(&lo), key::user_key(&hi)), (&b"a"[..], &b"d"[..]));
    }
}
