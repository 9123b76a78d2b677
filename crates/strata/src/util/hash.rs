//! The engine's 64-bit key hash: bloom filters persist it (so its output is part of the file
//! format, pinned by docs/format.md), and the memtable's hash index and the blob cache reuse it.
//!
//! This module owns the hash function only; it must not know what it hashes.

const H_SEED: u64 = 0x5354_5241_5441_4246;
const H_P1: u64 = 0xa076_1d64_78bd_642f;
const H_P2: u64 = 0xe703_7ed1_a0b4_28db;

#[inline]
fn fold_mul(a: u64, b: u64) -> u64 {
    let r = u128::from(a) * u128::from(b);
    (r as u64) ^ ((r >> 64) as u64)
}

/// The filter hash (normative, see docs/format.md): a multiply-fold hash over 8-byte
/// little-endian words, the tail zero-padded into a final word.
pub fn hash64(data: &[u8]) -> u64 {
    let mut h = H_SEED ^ (data.len() as u64).wrapping_mul(H_P1);
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        h = fold_mul(h ^ u64::from_le_bytes(b) ^ H_P2, H_P1);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        let mut b = [0u8; 8];
        b[..tail.len()].copy_from_slice(tail);
        h = fold_mul(h ^ u64::from_le_bytes(b) ^ H_P2, H_P1);
    }
    fold_mul(h ^ (h >> 29), H_P2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_matches_the_documented_vectors() {
        // Pinned by docs/format.md: changing the hash breaks every existing filter.
        assert_eq!(hash64(b""), 0xf76d_71c0_69c1_cfd4);
        assert_eq!(hash64(b"a"), 0xf7cc_ef79_3d63_ba76);
        assert_eq!(hash64(b"strata"), 0x9b83_50b4_dba1_dccd);
        assert_eq!(hash64(b"0123456789abcdef!"), 0xe212_d068_e4fd_69b2);
    }

    #[test]
    fn hash_spreads_similar_keys() {
        assert_ne!(hash64(b""), hash64(b"\0"));
        assert_ne!(hash64(b"abcdefgh"), hash64(b"abcdefgh\0"));
        assert_ne!(hash64(b"key1"), hash64(b"key2"));
    }
}
