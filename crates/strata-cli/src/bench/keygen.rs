//! Keys exactly as RocksDB's db_bench makes them, and the random key sequence it draws.
//!
//! Owns: the key byte layout (the integer as up to 8 big-endian bytes, then `'0'` padding up
//! to `--key_size`) and the key RNG (`std::mt19937_64` seeded `seed + thread number`, key =
//! `next() % num`, as db_bench's `Random64` and peerbench do), so that strata, RocksDB and the
//! peers see byte-identical keys in the same order.
//! Must not: allocate per key (callers reuse one [`KeyBuf`]) or use any other RNG for keys.

/// A reusable buffer holding one encoded key.
pub struct KeyBuf {
    buf: Vec<u8>,
}

impl KeyBuf {
    /// A buffer for keys of `key_size` bytes.
    pub fn new(key_size: usize) -> Self {
        Self { buf: vec![b'0'; key_size] }
    }

    /// Encodes `n` into the buffer and returns the key bytes.
    pub fn key(&mut self, n: u64) -> &[u8] {
        encode_key(n, &mut self.buf);
        &self.buf
    }
}

/// Writes db_bench's layout of `n` into `out` (its length is the key size).
pub fn encode_key(n: u64, out: &mut [u8]) {
    // Keys shorter than 8 bytes keep the low-order bytes, as db_bench's GenerateKeyFromInt does.
    let fill = out.len().min(8);
    let be = n.to_be_bytes();
    out[..fill].copy_from_slice(&be[8 - fill..]);
    out[fill..].fill(b'0');
}

/// The 64-bit Mersenne Twister (`std::mt19937_64`), which db_bench's `Random64` wraps.
pub struct Mt19937_64 {
    state: [u64; NN],
    index: usize,
}

const NN: usize = 312;
const MM: usize = 156;
const MATRIX_A: u64 = 0xB502_6F5A_A966_19E9;
const UPPER_MASK: u64 = 0xFFFF_FFFF_8000_0000;
const LOWER_MASK: u64 = 0x7FFF_FFFF;

impl Mt19937_64 {
    /// Seeds the generator as `std::mt19937_64(seed)` does.
    pub fn new(seed: u64) -> Self {
        let mut state = [0u64; NN];
        state[0] = seed;
        for i in 1..NN {
            let prev = state[i - 1];
            state[i] = 6_364_136_223_846_793_005u64.wrapping_mul(prev ^ (prev >> 62)).wrapping_add(i as u64);
        }
        Self { state, index: NN }
    }

    /// The next 64-bit output.
    pub fn next_u64(&mut self) -> u64 {
        if self.index >= NN {
            self.twist();
        }
        let mut x = self.state[self.index];
        self.index += 1;
        x ^= (x >> 29) & 0x5555_5555_5555_5555;
        x ^= (x << 17) & 0x71D6_7FFF_EDA6_0000;
        x ^= (x << 37) & 0xFFF7_EEE0_0000_0000;
        x ^ (x >> 43)
    }

    fn twist(&mut self) {
        for i in 0..NN {
            let x = (self.state[i] & UPPER_MASK) | (self.state[(i + 1) % NN] & LOWER_MASK);
            let mut xa = x >> 1;
            if x & 1 != 0 {
                xa ^= MATRIX_A;
            }
            self.state[i] = self.state[(i + MM) % NN] ^ xa;
        }
        self.index = 0;
    }
}

/// Uniform random keys in `[0, num)`, one generator per benchmark thread.
pub struct KeyRng {
    rng: Mt19937_64,
    num: u64,
}

impl KeyRng {
    /// The generator for a thread; `seed` is `--seed` plus the run-wide thread counter.
    pub fn new(seed: u64, num: u64) -> Self {
        Self { rng: Mt19937_64::new(seed), num: num.max(1) }
    }

    /// The next key number.
    pub fn next_key(&mut self) -> u64 {
        self.rng.next_u64() % self.num
    }
}

/// Every key of `[0, num)` exactly once, in an order that looks random: the order of
/// db_bench's `filluniquerandom` (which shuffles a vector of all the keys) without the vector.
/// Position `i` maps through a four-round Feistel network over the smallest square power of two
/// that holds `num` (a bijection), walking the cycle until the result is below `num`; that
/// domain is under 4 x `num`, so a position takes fewer than four walks on average.
pub struct UniqueKeys {
    num: u64,
    half_bits: u32,
    round_keys: [u64; 4],
}

impl UniqueKeys {
    /// The permutation `seed` chooses.
    pub fn new(seed: u64, num: u64) -> Self {
        let num = num.max(1);
        let bits = 64 - (num - 1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let mut rng = Mt19937_64::new(seed);
        Self { num, half_bits, round_keys: std::array::from_fn(|_| rng.next_u64()) }
    }

    /// The key at position `i` (`i < num`).
    pub fn at(&self, i: u64) -> u64 {
        debug_assert!(i < self.num);
        let mut x = self.feistel(i);
        while x >= self.num {
            x = self.feistel(x);
        }
        x
    }

    fn feistel(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut left, mut right) = (x >> self.half_bits, x & mask);
        for k in self.round_keys {
            (left, right) = (right, left ^ (mix(right ^ k) & mask));
        }
        (left << self.half_bits) | right
    }
}

/// SplitMix64's finaliser: every input bit moves every output bit.
pub(super) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_one_with_size_16_matches_db_bench() {
        let mut k = KeyBuf::new(16);
        assert_eq!(k.key(1), b"\0\0\0\0\0\0\0\x0100000000");
    }

    #[test]
    fn key_bytes_are_big_endian_and_ordered() {
        let mut k = KeyBuf::new(16);
        assert_eq!(k.key(0x0102_0304_0506_0708)[..8], [1, 2, 3, 4, 5, 6, 7, 8]);
        let a = k.key(255).to_vec();
        let b = k.key(256).to_vec();
        assert!(a < b, "big-endian keys sort numerically");
    }

    #[test]
    fn short_keys_keep_low_order_bytes() {
        let mut k = KeyBuf::new(4);
        assert_eq!(k.key(0x0102_0304_0506_0708), [5, 6, 7, 8]);
    }

    #[test]
    fn mt19937_64_matches_the_standard() {
        // The C++ standard requires the 10000th output of a default-seeded mt19937_64.
        let mut m = Mt19937_64::new(5489);
        let mut last = 0;
        for _ in 0..10000 {
            last = m.next_u64();
        }
        assert_eq!(last, 9_981_545_732_273_789_042);
    }

    #[test]
    fn unique_keys_visit_every_key_once_out_of_order() {
        for num in [1u64, 2, 3, 1000, 4097] {
            let u = UniqueKeys::new(7, num);
            let mut seen: Vec<u64> = (0..num).map(|i| u.at(i)).collect();
            let in_order = seen.windows(2).filter(|w| w[1] == w[0] + 1).count();
            seen.sort_unstable();
            assert_eq!(seen, (0..num).collect::<Vec<_>>(), "num {num}");
            assert!(num < 1000 || in_order < num as usize / 50, "num {num}: {in_order} ascending steps");
        }
        let (a, b) = (UniqueKeys::new(1, 1000), UniqueKeys::new(2, 1000));
        assert!((0..1000).any(|i| a.at(i) != b.at(i)), "the seed chooses the order");
    }

    #[test]
    fn key_rng_stays_in_range() {
        let mut r = KeyRng::new(7, 10);
        assert!((0..1000).all(|_| r.next_key() < 10));
    }
}
