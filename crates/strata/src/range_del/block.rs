//! The range-deletion block of a table (docs/format.md, "Range-deletion block"): a block in the
//! data-block format, restart interval 1, with one entry per tombstone: key
//! `begin ++ fixed64(seq << 8 | 4)` (an internal key of kind `RangeDelete`), value `end`, in
//! internal-key order. Encoding and checked decoding only; reading the block from a file is the
//! table's business.

use std::cmp::Ordering;
use std::sync::Arc;

use super::RangeTombstone;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{self, ValueKind};
use crate::sst::block::{Block, BlockBuilder, BlockIter};

/// Block contents holding `tombstones` (in any order; exact duplicates are written once, and of
/// two with the same begin and sequence number the wider one), and how many entries it holds.
pub fn encode(tombstones: &[RangeTombstone]) -> (Vec<u8>, usize) {
    let mut sorted: Vec<&RangeTombstone> = tombstones.iter().filter(|t| t.begin < t.end).collect();
    sorted.sort_by(|a, b| a.begin.cmp(&b.begin).then(b.seq.cmp(&a.seq)).then(b.end.cmp(&a.end)));
    sorted.dedup_by(|later, first| later.begin == first.begin && later.seq == first.seq);
    let mut b = BlockBuilder::new(1);
    for t in &sorted {
        b.add(&key::make_internal_key(&t.begin, t.seq, ValueKind::RangeDelete), &t.end);
    }
    (b.finish().to_vec(), sorted.len())
}

/// Decodes block contents written by [`encode`]. `Corruption` for a malformed block, a key that
/// is not a `RangeDelete` internal key, keys out of order, or an empty range.
pub fn decode(contents: Vec<u8>) -> Result<Vec<RangeTombstone>> {
    let bad = |why: &str| Error::corruption(format!("range-deletion block: {why}"));
    let mut it = BlockIter::new(Arc::new(Block::new(contents)?));
    let mut out: Vec<RangeTombstone> = Vec::new();
    let mut last: Vec<u8> = Vec::new();
    it.seek_to_first();
    while it.valid() {
        let ikey = it.key();
        let parsed = key::parse(ikey).ok_or_else(|| bad("undecodable key"))?;
        if parsed.kind != ValueKind::RangeDelete {
            return Err(bad("an entry is not a range deletion"));
        }
        if !last.is_empty() && key::compare(&last, ikey) != Ordering::Less {
            return Err(bad("entries out of order"));
        }
        if parsed.user_key >= it.value() {
            return Err(bad("an empty range"));
        }
        out.push(RangeTombstone::new(parsed.user_key, it.value(), parsed.seq));
        last.clear();
        last.extend_from_slice(ikey);
        it.next();
    }
    it.status()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn t(b: &[u8], e: &[u8], s: u64) -> RangeTombstone {
        RangeTombstone::new(b, e, s)
    }

    #[test]
    fn tombstones_round_trip_in_internal_key_order() {
        let ts = vec![t(b"m", b"q", 3), t(b"", b"b", 9), t(b"m", b"z", 8), t(b"m", b"q", 3)];
        let got = decode(encode(&ts).0).unwrap();
        assert_eq!(got, vec![t(b"", b"b", 9), t(b"m", b"z", 8), t(b"m", b"q", 3)]);
        assert_eq!(decode(encode(&[]).0).unwrap(), Vec::new());
    }

    #[test]
    fn foreign_or_disordered_entries_are_corruption() {
        let mut b = BlockBuilder::new(1);
        b.add(&key::make_internal_key(b"a", 1, ValueKind::Put), b"b");
        assert!(decode(b.finish().to_vec()).unwrap_err().is_corruption());
        let mut b = BlockBuilder::new(1);
        b.add(&key::make_internal_key(b"c", 1, ValueKind::RangeDelete), b"b");
        assert!(decode(b.finish().to_vec()).unwrap_err().is_corruption());
        let mut b = BlockBuilder::new(1);
        b.add(&key::make_internal_key(b"a", 1, ValueKind::RangeDelete), b"b");
        b.add(&key::make_internal_key(b"a", 2, ValueKind::RangeDelete), b"c");
        assert!(decode(b.finish().to_vec()).unwrap_err().is_corruption());
        assert!(decode(vec![1, 2, 3]).is_err());
    }

    proptest! {
        #[test]
        fn damaged_blocks_never_panic_and_truncation_is_caught(
            ts in proptest::collection::vec((proptest::collection::vec(any::<u8>(), 0..6),
                                              proptest::collection::vec(any::<u8>(), 0..6), 1u64..1000), 1..8),
            flip in any::<(usize, u8)>()) {
            let ts: Vec<RangeTombstone> = ts.into_iter().map(|(b, e, s)| t(&b, &e, s)).collect();
            let (bytes, count) = encode(&ts);
            let decoded = decode(bytes.clone()).unwrap();
            let mut want: Vec<RangeTombstone> = ts.iter().filter(|t| t.begin < t.end).cloned().collect();
            want.sort_by(|a, b| a.begin.cmp(&b.begin).then(b.seq.cmp(&a.seq)).then(b.end.cmp(&a.end)));
            want.dedup_by(|l, f| l.begin == f.begin && l.seq == f.seq);
            prop_assert_eq!(&decoded, &want);
            prop_assert_eq!(count, want.len());
            let mut damaged = bytes.clone();
            let i = flip.0 % damaged.len();
            damaged[i] ^= flip.1 | 1;
            let _ = decode(damaged);
            for cut in 0..bytes.len() {
                let _ = decode(bytes[..cut].to_vec());
            }
        }
    }
}
