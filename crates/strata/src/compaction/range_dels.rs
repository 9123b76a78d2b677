//! What a flush or compaction does with range tombstones. An entry a newer tombstone covers is
//! dropped when no snapshot separates the two (the stripe rule of `retention`: every reader
//! that sees the entry also sees the tombstone). The tombstones written out are the inputs'
//! fragments, minus a piece's older tombstones that a newer one in the same stripe already
//! answers for, minus (at the bottommost level) those older than every snapshot, which hide
//! nothing left. Each output table gets the part of them between the previous table's last key
//! and its own, so output tables never overlap. Pure logic: no IO.

use crate::key::SeqNo;
use crate::range_del::{Fragments, RangeTombstone};

/// The range tombstones of one job. See the module docs.
pub(crate) struct JobRangeDels {
    /// Every input tombstone, for the coverage test.
    all: Fragments,
    /// What is written, in key order.
    kept: Vec<RangeTombstone>,
    /// Where the next output table's share starts (`None`: at the beginning).
    lower: Option<Vec<u8>>,
    snapshots: Vec<SeqNo>,
}

/// The index of the snapshot stripe `seq` falls in (`retention`'s rule).
fn stripe(snapshots: &[SeqNo], seq: SeqNo) -> usize {
    snapshots.partition_point(|&s| s < seq)
}

impl JobRangeDels {
    /// `None` when the inputs hold no tombstone (the job then pays nothing per entry).
    pub fn new(input: Vec<RangeTombstone>, snapshots: &[SeqNo], bottommost: bool) -> Option<Self> {
        if input.is_empty() {
            return None;
        }
        let all = Fragments::new(input);
        let mut kept = Vec::new();
        for p in all.pieces() {
            let mut last_stripe = None;
            for &seq in &p.seqs {
                let s = stripe(snapshots, seq);
                let hides_nothing_left = bottommost && snapshots.first().is_none_or(|&oldest| seq <= oldest);
                if last_stripe != Some(s) && !hides_nothing_left {
                    kept.push(RangeTombstone::new(&p.begin, &p.end, seq));
                }
                last_stripe = Some(s);
            }
        }
        Some(Self { all, kept, lower: None, snapshots: snapshots.to_vec() })
    }

    /// Whether the entry `(user_key, seq)` is hidden from every reader by a tombstone.
    #[inline]
    pub fn drops(&self, user_key: &[u8], seq: SeqNo) -> bool {
        self.all
            .oldest_covering_above(user_key, seq)
            .is_some_and(|t| stripe(&self.snapshots, t) == stripe(&self.snapshots, seq))
    }

    /// The tombstones for the output table being finished: up to and including user key
    /// `last` when another table follows (cut at `last ++ [0]`, the first key after it), or
    /// everything left when `last` is `None`.
    pub fn take_for_table(&mut self, last: Option<&[u8]>) -> Vec<RangeTombstone> {
        let upper = last.map(|k| {
            let mut u = k.to_vec();
            u.push(0);
            u
        });
        let lower = self.lower.as_deref();
        let share = self.kept.iter().filter_map(|t| t.clipped(lower, upper.as_deref())).collect();
        if let Some(u) = upper {
            self.lower = Some(u);
        } else {
            self.kept.clear();
        }
        share
    }

    /// Whether tombstones remain to be written.
    pub fn pending(&self) -> bool {
        !self.kept.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(b: &str, e: &str, s: SeqNo) -> RangeTombstone {
        RangeTombstone::new(b.as_bytes(), e.as_bytes(), s)
    }

    #[test]
    fn covered_entries_go_only_when_no_snapshot_separates_them() {
        let r = JobRangeDels::new(vec![t("b", "f", 10)], &[], false).unwrap();
        assert!(r.drops(b"c", 9) && !r.drops(b"c", 11) && !r.drops(b"f", 1) && !r.drops(b"a", 1));
        let r = JobRangeDels::new(vec![t("b", "f", 10)], &[5], false).unwrap();
        assert!(r.drops(b"c", 6), "stripe (5, 10]");
        assert!(!r.drops(b"c", 5), "snapshot 5 sees it");
        assert!(JobRangeDels::new(Vec::new(), &[], true).is_none());
    }

    #[test]
    fn tombstones_thin_out_by_stripe_and_leave_at_the_bottom() {
        let input = vec![t("a", "z", 3), t("a", "z", 7), t("a", "z", 9)];
        let mut r = JobRangeDels::new(input.clone(), &[5], false).unwrap();
        assert_eq!(r.take_for_table(None), vec![t("a", "z", 9), t("a", "z", 3)]);
        assert!(!r.pending());
        let mut r = JobRangeDels::new(input.clone(), &[5], true).unwrap();
        assert_eq!(r.take_for_table(None), vec![t("a", "z", 9)]);
        assert!(JobRangeDels::new(input, &[], true).is_some_and(|r| !r.pending()));
    }

    #[test]
    fn output_tables_get_disjoint_shares() {
        let mut r = JobRangeDels::new(vec![t("a", "m", 4), t("k", "q", 6)], &[], false).unwrap();
        assert_eq!(r.take_for_table(Some(b"c")), vec![t("a", "c\0", 4)]);
        // Without snapshots only a piece's newest tombstone is kept.
        assert_eq!(r.take_for_table(Some(b"l")), vec![t("c\0", "k", 4), t("k", "l\0", 6)]);
        assert!(r.pending());
        assert_eq!(r.take_for_table(None), vec![t("l\0", "m", 6), t("m", "q", 6)]);
        assert!(!r.pending());
    }
}
