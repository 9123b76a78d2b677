//! Values exactly as RocksDB's db_bench `RandomGenerator` makes them.
//!
//! Owns: the value pool (at least 1 MiB of 100-byte fragments, each `100 * compression_ratio`
//! random printable bytes repeated to 100 bytes, drawn from LevelDB's Park-Miller `Random(301)`)
//! and the cursor that hands out successive windows of it. The pool is built once and shared;
//! each thread has its own cursor, which yields the same bytes as db_bench's per-thread generator.
//! Must not: allocate in [`ValueGen::generate`] or change the pool bytes (peers compare them).

use std::sync::Arc;

/// LevelDB/RocksDB `Random`: the Park-Miller minimal standard generator.
struct ParkMiller {
    seed: u32,
}

impl ParkMiller {
    const M: u64 = 2_147_483_647;

    fn new(seed: u32) -> Self {
        let s = u64::from(seed) & Self::M;
        Self { seed: if s == 0 || s == Self::M { 1 } else { s as u32 } }
    }

    fn next(&mut self) -> u32 {
        self.seed = (u64::from(self.seed) * 16807 % Self::M) as u32;
        self.seed
    }

    fn uniform(&mut self, n: u32) -> u32 {
        self.next() % n
    }
}

/// The shared pool of compressible value bytes.
#[derive(Clone)]
pub struct ValuePool {
    data: Arc<[u8]>,
}

impl ValuePool {
    /// Builds the pool for values of `value_size` bytes compressing to `compression_ratio`.
    pub fn new(value_size: usize, compression_ratio: f64) -> Self {
        let target = value_size.max(1_048_576);
        let mut rnd = ParkMiller::new(301);
        let mut data = Vec::with_capacity(target + 100);
        while data.len() < target {
            append_compressible_fragment(&mut rnd, compression_ratio, &mut data);
        }
        Self { data: data.into() }
    }

    /// A cursor over this pool for one thread.
    pub fn generator(&self) -> ValueGen {
        ValueGen { pool: self.data.clone(), pos: 0 }
    }
}

/// db_bench's `CompressibleString(rnd, ratio, 100)`: random printable bytes repeated to 100.
fn append_compressible_fragment(rnd: &mut ParkMiller, ratio: f64, out: &mut Vec<u8>) {
    const LEN: usize = 100;
    let raw = ((LEN as f64 * ratio) as usize).max(1);
    let piece: Vec<u8> = (0..raw).map(|_| b' ' + rnd.uniform(95) as u8).collect();
    let start = out.len();
    while out.len() - start < LEN {
        out.extend_from_slice(&piece);
    }
    out.truncate(start + LEN);
}

/// One thread's cursor: successive windows of the pool, wrapping to the start when needed.
pub struct ValueGen {
    pool: Arc<[u8]>,
    pos: usize,
}

impl ValueGen {
    /// The next `len` bytes of the pool (`len` is at most the pool size, which is at least the
    /// value size by construction).
    pub fn generate(&mut self, len: usize) -> &[u8] {
        let r = self.next_range(len);
        &self.pool[r]
    }

    /// Like [`generate`](Self::generate) but returns where the bytes are in [`pool`](Self::pool),
    /// so a batch can hold several values at once without copying them.
    pub fn next_range(&mut self, len: usize) -> std::ops::Range<usize> {
        if self.pos + len > self.pool.len() {
            self.pos = 0;
        }
        self.pos += len;
        self.pos - len..self.pos
    }

    /// The whole pool.
    pub fn pool(&self) -> &[u8] {
        &self.pool
    }
}

/// The "(N bytes after compression)" figure of db_bench's header.
pub fn compressed_value_size(value_size: usize, compression_ratio: f64) -> i64 {
    (value_size as f64 * compression_ratio + 0.5) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snappy_ratio(ratio: f64) -> f64 {
        let pool = ValuePool::new(100, ratio);
        let mut g = pool.generator();
        let mut total_in = 0usize;
        let mut total_out = 0usize;
        let mut enc = snap::raw::Encoder::new();
        for _ in 0..200 {
            // 4 KiB: about one SST block, as the engine would compress it.
            let v = g.generate(4096);
            total_in += v.len();
            total_out += enc.compress_vec(v).unwrap().len();
        }
        total_out as f64 / total_in as f64
    }

    #[test]
    fn values_compress_near_the_requested_ratio() {
        for ratio in [0.25, 0.5, 0.75] {
            let got = snappy_ratio(ratio);
            assert!((got - ratio).abs() <= 0.1, "ratio {ratio}: snappy gave {got}");
        }
    }

    #[test]
    fn pool_starts_like_db_bench() {
        // Random(301): the first outputs are 5058907, ... ; ' ' + 5058907 % 95 = ' ' + 42 = 'J'.
        let pool = ValuePool::new(100, 0.5);
        let mut g = pool.generator();
        let v = g.generate(100).to_vec();
        assert_eq!(v[0], b' ' + (5_058_907u32 % 95) as u8);
        assert_eq!(v[..50], v[50..], "a fragment is its random half repeated");
        assert!(v.iter().all(|b| (b' '..=b'~').contains(b)));
    }

    #[test]
    fn generate_returns_successive_windows_and_wraps() {
        let pool = ValuePool::new(100, 0.5);
        let mut g = pool.generator();
        let a = g.generate(10).to_vec();
        let b = g.generate(10).to_vec();
        assert_ne!(a, b);
        let len = pool.data.len();
        let mut g2 = pool.generator();
        g2.generate(len - 5);
        assert_eq!(g2.generate(10), &pool.data[..10]);
    }

    #[test]
    fn header_compressed_size_rounds() {
        assert_eq!(compressed_value_size(100, 0.5), 50);
        assert_eq!(compressed_value_size(800, 0.5), 400);
        assert_eq!(compressed_value_size(3, 0.5), 2);
    }
}
