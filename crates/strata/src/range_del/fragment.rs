//! Fragmented range tombstones: any set of possibly overlapping tombstones cut at every begin
//! and end into non-overlapping pieces, each listing the sequence numbers of the tombstones
//! covering all of it (newest first). A point question ("which tombstones hide key `k`?") is
//! then one binary search, and an iterator walking keys in order keeps a [`PieceCursor`] so that
//! consecutive keys usually need no search at all. Pure data structure: no IO, no retention
//! policy.

use super::RangeTombstone;
use crate::key::SeqNo;

/// One piece `[begin, end)` and the sequence numbers of the tombstones over it, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// First user key of the piece.
    pub begin: Vec<u8>,
    /// First user key past the piece.
    pub end: Vec<u8>,
    /// Sequence numbers, descending, without duplicates (never empty).
    pub seqs: Vec<SeqNo>,
}

impl Piece {
    /// The newest sequence number visible at `read_seq`.
    fn newest_at(&self, read_seq: SeqNo) -> Option<SeqNo> {
        self.seqs.iter().copied().find(|&s| s <= read_seq)
    }
}

/// Non-overlapping pieces sorted by key. See the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fragments {
    pieces: Vec<Piece>,
}

/// Where an ordered walk last found a piece, so the next key's piece is usually found without
/// a search. Any value is valid for any [`Fragments`]: a stale hint only costs a search.
#[derive(Debug, Clone, Copy, Default)]
pub struct PieceCursor {
    at: usize,
}

impl Fragments {
    /// Fragments `tombstones` (empty ranges are ignored).
    pub fn new(tombstones: impl IntoIterator<Item = RangeTombstone>) -> Self {
        let mut ts: Vec<RangeTombstone> = tombstones.into_iter().filter(|t| t.begin < t.end).collect();
        ts.sort_by(|a, b| a.begin.cmp(&b.begin));
        let mut points: Vec<&[u8]> = ts.iter().flat_map(|t| [t.begin.as_slice(), t.end.as_slice()]).collect();
        points.sort_unstable();
        points.dedup();
        let mut pieces: Vec<Piece> = Vec::new();
        // Tombstones over the current point: (end, seq). Every begin and end is a point, so a
        // tombstone still active at `lo` reaches at least the next point.
        let mut active: Vec<(&[u8], SeqNo)> = Vec::new();
        let mut next = 0;
        for w in points.windows(2) {
            let (lo, hi) = (w[0], w[1]);
            active.retain(|&(end, _)| end > lo);
            while let Some(t) = ts.get(next).filter(|t| t.begin.as_slice() <= lo) {
                active.push((&t.end, t.seq));
                next += 1;
            }
            if active.is_empty() {
                continue;
            }
            let mut seqs: Vec<SeqNo> = active.iter().map(|&(_, s)| s).collect();
            seqs.sort_unstable_by(|a, b| b.cmp(a));
            seqs.dedup();
            match pieces.last_mut() {
                Some(p) if p.end.as_slice() == lo && p.seqs == seqs => p.end = hi.to_vec(),
                _ => pieces.push(Piece { begin: lo.to_vec(), end: hi.to_vec(), seqs }),
            }
        }
        Self { pieces }
    }

    /// True when there is no tombstone.
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// The pieces, in key order.
    pub fn pieces(&self) -> &[Piece] {
        &self.pieces
    }

    /// The piece holding `user_key`, if any.
    pub fn piece(&self, user_key: &[u8]) -> Option<&Piece> {
        self.index_of(user_key).map(|i| &self.pieces[i])
    }

    fn index_of(&self, user_key: &[u8]) -> Option<usize> {
        let i = self.pieces.partition_point(|p| p.end.as_slice() <= user_key);
        self.pieces.get(i).filter(|p| p.begin.as_slice() <= user_key).map(|_| i)
    }

    /// The sequence number of the newest tombstone over `user_key` visible at `read_seq`.
    pub fn newest_covering(&self, user_key: &[u8], read_seq: SeqNo) -> Option<SeqNo> {
        self.piece(user_key).and_then(|p| p.newest_at(read_seq))
    }

    /// [`Fragments::newest_covering`] for a walk in key order (either direction): tries the
    /// cursor's piece and its neighbours before searching.
    pub fn newest_covering_at(
        &self,
        user_key: &[u8],
        read_seq: SeqNo,
        cursor: &mut PieceCursor,
    ) -> Option<SeqNo> {
        let holds = |i: usize| {
            self.pieces.get(i).is_some_and(|p| p.begin.as_slice() <= user_key && user_key < p.end.as_slice())
        };
        let near = [cursor.at, cursor.at + 1, cursor.at.wrapping_sub(1)];
        let found = match near.into_iter().find(|&i| holds(i)) {
            Some(i) => Some(i),
            None => self.index_of(user_key),
        };
        let i = found?;
        cursor.at = i;
        self.pieces[i].newest_at(read_seq)
    }

    /// The oldest tombstone over `user_key` newer than `seq` (what compaction compares with
    /// the snapshots to decide whether an entry at `seq` can go).
    pub fn oldest_covering_above(&self, user_key: &[u8], seq: SeqNo) -> Option<SeqNo> {
        self.piece(user_key).and_then(|p| p.seqs.iter().rev().copied().find(|&s| s > seq))
    }

    /// Every (piece, sequence number) pair as a tombstone, in key order then newest first.
    pub fn tombstones(&self) -> impl Iterator<Item = RangeTombstone> + '_ {
        self.pieces.iter().flat_map(|p| p.seqs.iter().map(|&s| RangeTombstone::new(&p.begin, &p.end, s)))
    }

    /// How many (piece, sequence number) pairs there are.
    pub fn len(&self) -> usize {
        self.pieces.iter().map(|p| p.seqs.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    fn t(b: &str, e: &str, s: SeqNo) -> RangeTombstone {
        RangeTombstone::new(b.as_bytes(), e.as_bytes(), s)
    }

    #[test]
    fn overlapping_tombstones_become_disjoint_pieces() {
        let f = Fragments::new([t("a", "e", 5), t("c", "g", 9), t("x", "y", 1), t("b", "b", 3)]);
        let got: Vec<(&[u8], &[u8], Vec<SeqNo>)> =
            f.pieces().iter().map(|p| (&p.begin[..], &p.end[..], p.seqs.clone())).collect();
        assert_eq!(
            got,
            vec![
                (&b"a"[..], &b"c"[..], vec![5]),
                (&b"c"[..], &b"e"[..], vec![9, 5]),
                (&b"e"[..], &b"g"[..], vec![9]),
                (&b"x"[..], &b"y"[..], vec![1]),
            ]
        );
        assert_eq!(f.newest_covering(b"d", 8), Some(5));
        assert_eq!(f.newest_covering(b"d", 9), Some(9));
        assert_eq!(f.newest_covering(b"d", 4), None);
        assert_eq!(f.newest_covering(b"g", 100), None);
        assert_eq!(f.oldest_covering_above(b"d", 5), Some(9));
        assert_eq!(f.oldest_covering_above(b"d", 4), Some(5));
        assert_eq!(f.len(), 5);
    }

    #[test]
    fn adjacent_pieces_with_the_same_tombstones_merge() {
        let f = Fragments::new([t("a", "c", 4), t("c", "e", 4), t("a", "b", 4)]);
        assert_eq!(f.pieces().len(), 1);
        assert_eq!((&f.pieces()[0].begin[..], &f.pieces()[0].end[..]), (&b"a"[..], &b"e"[..]));
        assert!(Fragments::new([t("b", "a", 1)]).is_empty());
    }

    fn tombstone() -> impl Strategy<Value = RangeTombstone> {
        (0u8..12, 0u8..12, 1u64..20).prop_map(|(a, b, s)| RangeTombstone::new(&[a], &[b], s))
    }

    proptest! {
        #[test]
        fn fragments_answer_like_the_raw_tombstones(ts in proptest::collection::vec(tombstone(), 0..12),
                                                    keys in proptest::collection::vec(0u8..13, 1..20),
                                                    read in 0u64..22) {
            let f = Fragments::new(ts.clone());
            let mut cursor = PieceCursor::default();
            for w in f.pieces().windows(2) {
                prop_assert!(w[0].end <= w[1].begin);
            }
            for k in keys {
                let want = ts.iter().filter(|t| t.contains(&[k]) && t.seq <= read).map(|t| t.seq).max();
                prop_assert_eq!(f.newest_covering(&[k], read), want);
                prop_assert_eq!(f.newest_covering_at(&[k], read, &mut cursor), want);
                let above = ts.iter().filter(|t| t.contains(&[k]) && t.seq > read).map(|t| t.seq).min();
                prop_assert_eq!(f.oldest_covering_above(&[k], read), above);
            }
            // Re-expanding and fragmenting again changes nothing.
            prop_assert_eq!(Fragments::new(f.tombstones()), f.clone());
            let seqs: BTreeSet<SeqNo> = ts.iter().filter(|t| t.begin < t.end).map(|t| t.seq).collect();
            let kept: BTreeSet<SeqNo> = f.tombstones().map(|t| t.seq).collect();
            prop_assert_eq!(seqs, kept);
        }
    }
}
