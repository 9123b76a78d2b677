//! A table's in-memory search structure over its index block: the 8-byte key prefix of every
//! index entry, in a dense array, with a small array of every 64th prefix on top, so a lookup
//! touches a few cache lines instead of binary-searching the index block (one miss per probe).
//!
//! Owns: finding the run of index entries whose prefix equals a lookup key's prefix.
//! Must not: compare whole keys or decode the index block; the caller finishes the search
//! inside the run with the real keys (`BlockIter::seek_between`).

use std::ops::Range;

/// Prefixes per sample: 64 prefixes are 512 bytes, eight cache lines searched after the samples.
const SAMPLE_EVERY: usize = 64;

/// The prefixes of a table's index entries, searchable in two cache-friendly steps.
#[derive(Debug)]
pub struct PrefixIndex {
    prefixes: Vec<u64>,
    /// `prefixes[i * SAMPLE_EVERY]` for every i: small enough to stay in the L1 cache.
    samples: Vec<u64>,
}

impl PrefixIndex {
    /// Builds the index over `prefixes`, which must be sorted (as index entries are).
    pub fn new(prefixes: Vec<u64>) -> Self {
        let samples = prefixes.iter().step_by(SAMPLE_EVERY).copied().collect();
        Self { prefixes, samples }
    }

    /// Bytes this index holds.
    pub fn memory_usage(&self) -> usize {
        (self.prefixes.capacity() + self.samples.capacity()) * std::mem::size_of::<u64>()
    }

    /// The index entries whose prefix equals `prefix`: every entry before the range has a smaller
    /// prefix, every entry from its end on a larger one. Empty (at the insertion point) if none.
    pub fn equal_range(&self, prefix: u64) -> Range<usize> {
        let lo = self.first_not_below(prefix);
        let hi = lo + gallop_past(&self.prefixes[lo..], prefix);
        lo..hi
    }

    /// The first position whose prefix is `>= prefix` (`prefixes.len()` if none).
    fn first_not_below(&self, prefix: u64) -> usize {
        // samples[s - 1] < prefix <= samples[s]: the answer lies in the window between them.
        let s = self.samples.partition_point(|&x| x < prefix);
        if s == 0 {
            return 0;
        }
        let start = (s - 1) * SAMPLE_EVERY + 1;
        let end = (s * SAMPLE_EVERY).min(self.prefixes.len());
        start + self.prefixes[start..end].partition_point(|&x| x < prefix)
    }
}

/// How many leading elements of sorted `v` are `<= prefix`, found by doubling steps from the
/// front: runs of equal prefixes are short, so this touches one or two cache lines where a
/// binary search over the whole rest of the array would touch a dozen.
fn gallop_past(v: &[u64], prefix: u64) -> usize {
    let mut bound = 1;
    while bound <= v.len() && v[bound - 1] <= prefix {
        bound *= 2;
    }
    let start = bound / 2;
    let end = bound.min(v.len() + 1) - 1;
    start + v[start..end].partition_point(|&x| x <= prefix)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn expected(v: &[u64], p: u64) -> Range<usize> {
        let lo = v.partition_point(|&x| x < p);
        lo..lo + v[lo..].partition_point(|&x| x <= p)
    }

    #[test]
    fn edges() {
        let idx = PrefixIndex::new(Vec::new());
        assert_eq!(idx.equal_range(5), 0..0);
        let v: Vec<u64> = (0..200).map(|i| i / 3 * 10).collect();
        let idx = PrefixIndex::new(v.clone());
        for p in [0, 1, 10, 640, 650, 655, 660, 661, 10_000] {
            assert_eq!(idx.equal_range(p), expected(&v, p), "{p}");
        }
    }

    proptest! {
        #[test]
        fn matches_binary_search(mut v in proptest::collection::vec(0u64..50, 0..600), p in 0u64..55) {
            v.sort_unstable();
            prop_assert_eq!(PrefixIndex::new(v.clone()).equal_range(p), expected(&v, p));
        }

        #[test]
        fn long_equal_runs(run in 1usize..300, before in 0usize..200, after in 0usize..200) {
            let v: Vec<u64> = std::iter::repeat_n(1, before)
                .chain(std::iter::repeat_n(7, run))
                .chain(std::iter::repeat_n(9, after))
                .collect();
            let idx = PrefixIndex::new(v.clone());
            for p in [0, 1, 5, 7, 8, 9, 10] {
                prop_assert_eq!(idx.equal_range(p), expected(&v, p));
            }
        }
    }
}
