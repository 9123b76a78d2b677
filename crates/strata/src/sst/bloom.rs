//! The per-file bloom filter over user keys: a cache-line-blocked bloom (every key's probes fall in
//! one 64-byte line, so a lookup touches one cache line), keyed by `util::hash::hash64`.
//!
//! This module owns the filter's bytes only; the hash lives in `util::hash`, shared with the
//! memtable and the blob cache. It must not see internal keys (callers strip the trailer, so all
//! versions of a user key share one hash) and must not do IO.
//! Decoding never panics: malformed bytes are `Error::Corruption`.

use crate::error::{Error, Result};
use crate::util::coding;
use crate::util::hash::hash64;

/// Bytes per filter line (one CPU cache line).
pub const LINE_BYTES: usize = 64;
const LINE_BITS_LOG2: u32 = 9;
/// Filter kind byte for this layout; other values are rejected.
pub const KIND_BLOCKED_BLOOM: u8 = 1;
/// Trailer: num_probes u8, kind u8, num_lines u32 LE.
const TRAILER_LEN: usize = 6;
const PROBE_MULTIPLIER: u32 = 0x9e37_79b9;

/// Probes per key for a bits-per-key budget (values chosen for blocked blooms, after RocksDB).
fn num_probes(bits_per_key: u32) -> u8 {
    match bits_per_key {
        0..=2 => 1,
        3 => 2,
        4..=5 => 3,
        6 => 4,
        7..=8 => 5,
        9..=10 => 6,
        11 => 7,
        12..=14 => 8,
        15..=16 => 9,
        17..=18 => 10,
        19..=22 => 11,
        23..=25 => 12,
        _ => 24.min((bits_per_key / 2).saturating_sub(1) as u8).max(12),
    }
}

#[inline]
fn line_of(h: u64, num_lines: u32) -> usize {
    // Lemire's fast range reduction of the low 32 hash bits onto [0, num_lines).
    ((u64::from(h as u32) * u64::from(num_lines)) >> 32) as usize
}

/// Bit positions (0..512) probed within a line, from the high 32 hash bits.
#[inline]
fn probes(h: u64, n: u8) -> impl Iterator<Item = usize> {
    let mut p = (h >> 32) as u32;
    (0..n).map(move |_| {
        let bit = (p >> (32 - LINE_BITS_LOG2)) as usize;
        p = p.wrapping_mul(PROBE_MULTIPLIER);
        bit
    })
}

/// Collects key hashes while a table is written and lays out the filter at the end.
#[derive(Debug)]
pub struct BloomBuilder {
    bits_per_key: u32,
    hashes: Vec<u64>,
}

impl BloomBuilder {
    /// A builder spending about `bits_per_key` bits per distinct key.
    pub fn new(bits_per_key: u32) -> Self {
        Self { bits_per_key: bits_per_key.max(1), hashes: Vec::new() }
    }

    /// Adds a user key; consecutive duplicates (versions of one key) are added once.
    pub fn add_key(&mut self, user_key: &[u8]) {
        let h = hash64(user_key);
        if self.hashes.last() != Some(&h) {
            self.hashes.push(h);
        }
    }

    /// Number of hashes collected.
    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    /// True when no key was added.
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// Lays out the filter bytes (lines, then the trailer).
    pub fn finish(&self) -> Vec<u8> {
        let total_bits = self.hashes.len() as u64 * u64::from(self.bits_per_key);
        let lines = total_bits.div_ceil(LINE_BYTES as u64 * 8).min(u64::from(u32::MAX)) as u32;
        let lines = if self.hashes.is_empty() { 0 } else { lines.max(1) };
        let probes_n = num_probes(self.bits_per_key);
        let mut out = vec![0u8; lines as usize * LINE_BYTES];
        for &h in &self.hashes {
            let base = line_of(h, lines) * LINE_BYTES;
            for bit in probes(h, probes_n) {
                out[base + bit / 8] |= 1 << (bit % 8);
            }
        }
        out.push(probes_n);
        out.push(KIND_BLOCKED_BLOOM);
        coding::put_u32(&mut out, lines);
        out
    }
}

/// A decoded filter: answers "definitely absent" or "maybe present" for a user key.
#[derive(Debug, Clone)]
pub struct BloomFilter {
    bits: Vec<u8>,
    num_lines: u32,
    num_probes: u8,
}

impl BloomFilter {
    /// Decodes filter bytes written by [`BloomBuilder::finish`].
    pub fn decode(mut data: Vec<u8>) -> Result<Self> {
        let bad = |why: &str| Error::corruption(format!("bloom filter: {why}"));
        let body_len = data.len().checked_sub(TRAILER_LEN).ok_or_else(|| bad("too short"))?;
        let trailer = data.get(body_len..).unwrap_or(&[]);
        let (num_probes, kind) = (trailer.first().copied(), trailer.get(1).copied());
        let num_lines = coding::get_u32(trailer.get(2..).unwrap_or(&[])).ok_or_else(|| bad("too short"))?;
        if kind != Some(KIND_BLOCKED_BLOOM) {
            return Err(bad("unknown filter kind"));
        }
        let num_probes =
            num_probes.filter(|&p| (1..=30).contains(&p)).ok_or_else(|| bad("bad probe count"))?;
        if (num_lines as usize).checked_mul(LINE_BYTES) != Some(body_len) {
            return Err(bad("size does not match line count"));
        }
        data.truncate(body_len);
        Ok(Self { bits: data, num_lines, num_probes })
    }

    /// False only if `user_key` was certainly never added.
    #[inline]
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        if self.num_lines == 0 {
            return false;
        }
        let h = hash64(user_key);
        let base = line_of(h, self.num_lines) * LINE_BYTES;
        let Some(line) = self.bits.get(base..base + LINE_BYTES) else { return true };
        probes(h, self.num_probes).all(|bit| line[bit / 8] & (1 << (bit % 8)) != 0)
    }

    /// Memory held by the filter.
    pub fn size(&self) -> usize {
        self.bits.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn build(n: u32, bits: u32) -> BloomFilter {
        let mut b = BloomBuilder::new(bits);
        for i in 0..n {
            b.add_key(format!("user-key-{i}").as_bytes());
        }
        BloomFilter::decode(b.finish()).unwrap()
    }

    #[test]
    fn no_false_negatives_and_about_one_percent_false_positives() {
        let n = 100_000;
        let f = build(n, 10);
        for i in 0..n {
            assert!(f.may_contain(format!("user-key-{i}").as_bytes()));
        }
        let trials = 200_000;
        let fp = (0..trials).filter(|i| f.may_contain(format!("other-key-{i}").as_bytes())).count();
        let rate = fp as f64 / trials as f64;
        assert!(rate < 0.015, "false positive rate {rate}");
        assert!(rate > 0.002, "suspiciously low false positive rate {rate}");
    }

    #[test]
    fn rate_improves_with_more_bits_and_small_filters_work() {
        let f = build(1, 10);
        assert!(f.may_contain(b"user-key-0"));
        let loose = build(10_000, 5);
        let tight = build(10_000, 20);
        let fp = |f: &BloomFilter| (0..20_000).filter(|i| f.may_contain(format!("x{i}").as_bytes())).count();
        assert!(fp(&tight) < fp(&loose));
        let empty = BloomFilter::decode(BloomBuilder::new(10).finish()).unwrap();
        assert!(!empty.may_contain(b"a"));
    }

    #[test]
    fn bad_trailers_are_corruption() {
        let mut good = BloomBuilder::new(10);
        good.add_key(b"k");
        let bytes = good.finish();
        let mut wrong_kind = bytes.clone();
        let n = wrong_kind.len();
        wrong_kind[n - 5] = 9;
        assert!(BloomFilter::decode(wrong_kind).unwrap_err().is_corruption());
        assert!(BloomFilter::decode(bytes[1..].to_vec()).unwrap_err().is_corruption());
        assert!(BloomFilter::decode(vec![1, 2]).unwrap_err().is_corruption());
    }

    proptest! {
        #[test]
        fn garbage_filters_never_panic(data in proptest::collection::vec(any::<u8>(), 0..200), key in any::<Vec<u8>>()) {
            if let Ok(f) = BloomFilter::decode(data) {
                let _ = f.may_contain(&key);
            }
        }
    }
}
