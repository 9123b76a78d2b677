//! RocksDB's latency histogram (`monitoring/histogram.cc`), reproduced so percentiles from
//! strata and from db_bench are computed the same way.
//!
//! Owns: the bucket limits (1, 2, then x1.5 per step trimmed to two significant digits), the
//! percentile interpolation inside a bucket (clamped to [min, max]) and the exact text blocks.
//! Must not: allocate in [`Histogram::add`] or change the printed format (scripts parse it).

use std::fmt::Write as _;
use std::sync::OnceLock;

/// Upper limits of the buckets, inclusive.
fn limits() -> &'static [u64] {
    static LIMITS: OnceLock<Vec<u64>> = OnceLock::new();
    LIMITS.get_or_init(|| {
        let mut l = vec![1u64, 2];
        let mut v = 2.0f64;
        loop {
            v *= 1.5;
            if v > u64::MAX as f64 {
                break;
            }
            l.push(two_significant_digits(v as u64));
        }
        l
    })
}

/// Keeps the two leading decimal digits, so limits read 110, 170, 250 rather than 115, 173, 259.
fn two_significant_digits(mut b: u64) -> u64 {
    let mut scale = 1;
    while b / 10 > 10 {
        b /= 10;
        scale *= 10;
    }
    b * scale
}

/// A latency histogram in whole microseconds.
#[derive(Clone)]
pub struct Histogram {
    buckets: Vec<u64>,
    min: u64,
    max: u64,
    num: u64,
    sum: f64,
    sum_squares: f64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Self { buckets: vec![0; limits().len()], min: u64::MAX, max: 0, num: 0, sum: 0.0, sum_squares: 0.0 }
    }

    /// Records one value.
    pub fn add(&mut self, v: u64) {
        let l = limits();
        let b = l.partition_point(|&limit| limit < v).min(self.buckets.len() - 1);
        self.buckets[b] += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.num += 1;
        self.sum += v as f64;
        self.sum_squares += v as f64 * v as f64;
    }

    /// Adds another histogram's values into this one.
    pub fn merge(&mut self, o: &Histogram) {
        for (a, b) in self.buckets.iter_mut().zip(&o.buckets) {
            *a += b;
        }
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.num += o.num;
        self.sum += o.sum;
        self.sum_squares += o.sum_squares;
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.num
    }

    /// Largest value recorded (0 when empty).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Mean of the values (0 when empty).
    pub fn average(&self) -> f64 {
        if self.num == 0 {
            0.0
        } else {
            self.sum / self.num as f64
        }
    }

    fn std_dev(&self) -> f64 {
        if self.num == 0 {
            return 0.0;
        }
        let n = self.num as f64;
        let var = (self.sum_squares * n - self.sum * self.sum) / (n * n);
        var.max(0.0).sqrt()
    }

    /// The `p`th percentile (0..=100), interpolated linearly inside its bucket.
    pub fn percentile(&self, p: f64) -> f64 {
        let l = limits();
        let threshold = self.num as f64 * (p / 100.0);
        let mut cum = 0u64;
        for (b, &n) in self.buckets.iter().enumerate() {
            cum += n;
            if cum as f64 >= threshold {
                let left = if b == 0 { 0.0 } else { l[b - 1] as f64 };
                let right = l[b] as f64;
                let left_sum = (cum - n) as f64;
                let pos = if n == 0 { 0.0 } else { (threshold - left_sum) / n as f64 };
                let r = left + (right - left) * pos;
                return r.max(self.min_or_zero() as f64).min(self.max as f64);
            }
        }
        self.max as f64
    }

    fn min_or_zero(&self) -> u64 {
        if self.num == 0 {
            0
        } else {
            self.min
        }
    }

    /// db_bench's `Percentiles: P50: … P99.99: …` line, with its newline.
    pub fn percentiles_line(&self) -> String {
        format!(
            "Percentiles: P50: {:.2} P75: {:.2} P99: {:.2} P99.9: {:.2} P99.99: {:.2}\n",
            self.percentile(50.0),
            self.percentile(75.0),
            self.percentile(99.0),
            self.percentile(99.9),
            self.percentile(99.99)
        )
    }

    /// The full block of `HistogramStat::ToString`: summary lines, dashes, then one line per
    /// non-empty bucket with a bar of `#` (20 marks for 100 %).
    pub fn to_db_bench_string(&self) -> String {
        let mut r =
            format!("Count: {} Average: {:.4}  StdDev: {:.2}\n", self.num, self.average(), self.std_dev());
        let _ = writeln!(
            r,
            "Min: {}  Median: {:.4}  Max: {}",
            self.min_or_zero(),
            self.percentile(50.0),
            self.max
        );
        r.push_str(&self.percentiles_line());
        r.push_str("------------------------------------------------------\n");
        if self.num > 0 {
            self.write_buckets(&mut r);
        }
        r
    }

    fn write_buckets(&self, r: &mut String) {
        let l = limits();
        let mult = 100.0 / self.num as f64;
        let mut cum = 0u64;
        for (b, &n) in self.buckets.iter().enumerate() {
            if n == 0 {
                continue;
            }
            cum += n;
            let (open, left) = if b == 0 { ('[', 0) } else { ('(', l[b - 1]) };
            let pct = mult * n as f64;
            let _ =
                write!(r, "{open} {left:>7}, {:>7} ] {n:>8} {pct:>7.3}% {:>7.3}% ", l[b], mult * cum as f64);
            r.extend(std::iter::repeat_n('#', (pct / 5.0 + 0.5) as usize));
            r.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_match_rocksdb() {
        let want = [1, 2, 3, 4, 6, 10, 15, 22, 34, 51, 76, 110, 170, 250, 380, 580, 870, 1300];
        assert_eq!(&limits()[..want.len()], &want);
        assert!(limits().windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn percentiles_on_uniform_1_to_100() {
        let mut h = Histogram::new();
        for v in 1..=100 {
            h.add(v);
        }
        assert_eq!(h.count(), 100);
        assert_eq!(h.average(), 50.5);
        // 50th value falls in (34, 51]: 17 values there, 34 before; 34 + 17 * (50-34)/17 = 50.
        assert!((h.percentile(50.0) - 50.0).abs() < 1e-9);
        // 90th: bucket (76, 110] holds 77..=100 (24 values), 76 before: 76 + 34 * 14/24.
        assert!((h.percentile(90.0) - (76.0 + 34.0 * 14.0 / 24.0)).abs() < 1e-9);
        // 99th interpolates to 108.6, past the largest value, so it is clamped to it.
        assert_eq!(h.percentile(99.0), 100.0);
        assert_eq!(h.percentile(100.0), 100.0, "clamped to max");
    }

    #[test]
    fn single_value_is_clamped() {
        let mut h = Histogram::new();
        h.add(7);
        assert_eq!(h.percentile(50.0), 7.0);
        assert_eq!(h.percentile(99.99), 7.0);
    }

    #[test]
    fn block_format_matches_db_bench() {
        let mut h = Histogram::new();
        for _ in 0..3 {
            h.add(1);
        }
        h.add(5);
        let s = h.to_db_bench_string();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "Count: 4 Average: 2.0000  StdDev: 1.73");
        // The in-bucket interpolation gives 0.67, which is clamped to the minimum.
        assert_eq!(lines[1], "Min: 1  Median: 1.0000  Max: 5");
        assert!(lines[2].starts_with("Percentiles: P50: 1.00 P75: 1.00 P99: "));
        assert_eq!(lines[3], "-".repeat(54));
        assert_eq!(lines[4], "[       0,       1 ]        3  75.000%  75.000% ###############");
        assert_eq!(lines[5], "(       4,       6 ]        1  25.000% 100.000% #####");
    }

    #[test]
    fn merge_adds_counts() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        a.add(1);
        b.add(1000);
        a.merge(&b);
        assert_eq!(a.count(), 2);
        assert_eq!(a.max(), 1000);
    }
}
