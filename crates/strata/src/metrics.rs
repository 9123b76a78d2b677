//! Lock-free latency histograms and event counters, striped so that threads on different cores
//! record into different cache lines: a single shared atomic that every `get` increments costs a
//! cache-line transfer per operation once two cores read at once. Recording costs two relaxed
//! atomic adds (the bucket and the sum of nanoseconds) in the calling thread's stripe; counts are
//! summed over the stripes when read. Buckets have fixed upper bounds from 1 µs to 10 s (1-2-5
//! steps) plus an overflow bucket, the same bounds the Prometheus exposition
//! (`strata.prometheus`) reports as `le` labels.

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// Upper bounds of the finite buckets, in nanoseconds (inclusive): 1 µs, 2 µs, 5 µs, 10 µs, ...
/// 10 s. Bucket `i` of a [`HistogramSnapshot`] counts observations in
/// `(BUCKET_BOUNDS_NANOS[i - 1], BUCKET_BOUNDS_NANOS[i]]`.
///
/// ```
/// use strata::metrics::{Histogram, BUCKET_BOUNDS_NANOS};
/// assert_eq!(BUCKET_BOUNDS_NANOS[0], 1_000); // 1 µs
/// let h = Histogram::default();
/// h.record(std::time::Duration::from_micros(3)); // in (2 µs, 5 µs]
/// let i = BUCKET_BOUNDS_NANOS.iter().position(|&b| b == 5_000).unwrap();
/// assert_eq!(h.snapshot().buckets[i], 1);
/// ```
pub const BUCKET_BOUNDS_NANOS: [u64; 22] = [
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
    200_000_000,
    500_000_000,
    1_000_000_000,
    2_000_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// Number of buckets, the overflow (`+Inf`) bucket included: the length of
/// [`HistogramSnapshot::buckets`].
///
/// ```
/// use strata::metrics::{Histogram, NUM_BUCKETS};
/// let h = Histogram::default();
/// h.record(std::time::Duration::from_secs(60)); // beyond the last bound
/// assert_eq!(h.snapshot().buckets[NUM_BUCKETS - 1], 1);
/// ```
pub const NUM_BUCKETS: usize = BUCKET_BOUNDS_NANOS.len() + 1;

/// Stripes per histogram or counter; threads take them round-robin.
const STRIPES: usize = 8;

/// The stripe of the calling thread.
fn stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: usize = NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES;
    }
    STRIPE.with(|s| *s)
}

/// One cache line (two, for adjacent-line prefetchers) per stripe.
#[derive(Default)]
#[repr(align(128))]
struct Padded<T>(T);

/// An event counter that many threads add to without sharing a cache line. It reads like an
/// `AtomicU64`; the value is the sum over the stripes, so a read concurrent with additions may
/// miss the ones in flight.
///
/// ```
/// use std::sync::atomic::Ordering::Relaxed;
/// use strata::metrics::Counter;
/// let c = Counter::default();
/// std::thread::scope(|s| {
///     for _ in 0..4 {
///         s.spawn(|| (0..1000).for_each(|_| { c.fetch_add(1, Relaxed); }));
///     }
/// });
/// assert_eq!(c.load(Relaxed), 4000);
/// ```
#[derive(Default)]
pub struct Counter {
    stripes: [Padded<AtomicU64>; STRIPES],
}

impl Counter {
    /// Adds `n` in the calling thread's stripe; returns that stripe's previous value (not the
    /// total). See the example on [`Counter`].
    #[inline]
    pub fn fetch_add(&self, n: u64, order: Ordering) -> u64 {
        self.stripes[stripe()].0.fetch_add(n, order)
    }

    /// The sum over all stripes. See the example on [`Counter`].
    pub fn load(&self, order: Ordering) -> u64 {
        self.stripes.iter().map(|s| s.0.load(order)).fold(0, u64::wrapping_add)
    }
}

impl fmt::Debug for Counter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.load(Ordering::Relaxed))
    }
}

#[derive(Default)]
struct HistogramStripe {
    buckets: [AtomicU64; NUM_BUCKETS],
    sum_nanos: AtomicU64,
}

/// A latency histogram that many threads record into without locks. The database keeps two,
/// [`Stats::get_latency`](crate::Stats::get_latency) and
/// [`Stats::write_latency`](crate::Stats::write_latency); applications may use their own.
///
/// ```
/// use std::time::Duration;
/// use strata::metrics::Histogram;
/// let h = Histogram::default();
/// std::thread::scope(|s| {
///     for _ in 0..4 {
///         s.spawn(|| {
///             for us in 1..=25 {
///                 h.record(Duration::from_micros(us));
///             }
///         });
///     }
/// });
/// let snap = h.snapshot();
/// assert_eq!(snap.count(), 100);
/// assert_eq!(snap.sum_nanos, 4 * (1..=25).sum::<u64>() * 1_000);
/// ```
#[derive(Default)]
pub struct Histogram {
    stripes: [Padded<HistogramStripe>; STRIPES],
}

impl fmt::Debug for Histogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.snapshot();
        f.debug_struct("Histogram").field("count", &s.count()).field("sum_nanos", &s.sum_nanos).finish()
    }
}

impl Histogram {
    /// Records one observation (two relaxed atomic adds). Durations beyond the last bound land in
    /// the overflow bucket. See the example on [`Histogram`].
    #[inline]
    pub fn record(&self, d: Duration) {
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let i = BUCKET_BOUNDS_NANOS.partition_point(|&b| b < nanos);
        let stripe = &self.stripes[stripe()].0;
        stripe.buckets[i].fetch_add(1, Ordering::Relaxed);
        stripe.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// A copy of the current counts. Concurrent recording may make the sum and the buckets
    /// differ by the observations in flight. See the example on [`Histogram`].
    pub fn snapshot(&self) -> HistogramSnapshot {
        let sum = |f: &dyn Fn(&HistogramStripe) -> u64| {
            self.stripes.iter().map(|s| f(&s.0)).fold(0, u64::wrapping_add)
        };
        HistogramSnapshot {
            buckets: std::array::from_fn(|i| sum(&|s| s.buckets[i].load(Ordering::Relaxed))),
            sum_nanos: sum(&|s| s.sum_nanos.load(Ordering::Relaxed)),
        }
    }
}

/// Counts copied out of a [`Histogram`] by [`Histogram::snapshot`], with the statistics computed
/// from them. Two snapshots can be subtracted bucket by bucket to get the observations between
/// them.
///
/// ```
/// use std::time::Duration;
/// use strata::metrics::Histogram;
/// let h = Histogram::default();
/// for us in [100, 100, 100, 4_000] {
///     h.record(Duration::from_micros(us));
/// }
/// let s = h.snapshot();
/// assert_eq!(s.count(), 4);
/// assert_eq!(s.mean_nanos(), 1_075_000.0);
/// assert!(s.percentile_nanos(50.0) <= 100_000.0); // in the (50 µs, 100 µs] bucket
/// assert!((2_000_000.0..=5_000_000.0).contains(&s.percentile_nanos(100.0)));
/// assert!(s.rocksdb_line("app.op.micros").starts_with("app.op.micros P50 : "));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistogramSnapshot {
    /// Observations per bucket (not cumulative); the last is the overflow bucket.
    pub buckets: [u64; NUM_BUCKETS],
    /// Sum of all observations in nanoseconds.
    pub sum_nanos: u64,
}

impl HistogramSnapshot {
    /// Number of observations: the sum of the buckets. See the example on [`HistogramSnapshot`].
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// Mean in nanoseconds (exact: from the recorded sum; 0 when empty). See the example on
    /// [`HistogramSnapshot`].
    pub fn mean_nanos(&self) -> f64 {
        let n = self.count();
        if n == 0 {
            0.0
        } else {
            self.sum_nanos as f64 / n as f64
        }
    }

    /// Estimated `p`-th percentile (0..=100) in nanoseconds, interpolated linearly inside the
    /// bucket that holds it. An estimate: its error is bounded by the bucket's width. Values in
    /// the overflow bucket are reported as the last finite bound; 0 when empty. See the example on
    /// [`HistogramSnapshot`].
    pub fn percentile_nanos(&self, p: f64) -> f64 {
        let n = self.count();
        if n == 0 {
            return 0.0;
        }
        let rank = (p.clamp(0.0, 100.0) / 100.0 * n as f64).max(1.0);
        let mut seen = 0u64;
        for (i, &c) in self.buckets.iter().enumerate() {
            if c == 0 {
                continue;
            }
            if (seen + c) as f64 >= rank {
                let lo = if i == 0 { 0 } else { BUCKET_BOUNDS_NANOS[i - 1] } as f64;
                let Some(&hi) = BUCKET_BOUNDS_NANOS.get(i) else { return lo };
                let within = (rank - seen as f64) / c as f64;
                return lo + (hi as f64 - lo) * within;
            }
            seen += c;
        }
        BUCKET_BOUNDS_NANOS[BUCKET_BOUNDS_NANOS.len() - 1] as f64
    }

    /// One line in RocksDB's statistics-dump shape, values in microseconds:
    /// `name P50 : x P95 : x P99 : x P100 : x COUNT : n SUM : s` (percentiles with three decimals,
    /// `SUM` in whole microseconds).
    ///
    /// ```
    /// let h = strata::metrics::Histogram::default();
    /// h.record(std::time::Duration::from_micros(1));
    /// assert_eq!(
    ///     h.snapshot().rocksdb_line("op"),
    ///     "op P50 : 1.000 P95 : 1.000 P99 : 1.000 P100 : 1.000 COUNT : 1 SUM : 1"
    /// );
    /// ```
    pub fn rocksdb_line(&self, name: &str) -> String {
        let us = |p: f64| self.percentile_nanos(p) / 1e3;
        format!(
            "{name} P50 : {:.3} P95 : {:.3} P99 : {:.3} P100 : {:.3} COUNT : {} SUM : {}",
            us(50.0),
            us(95.0),
            us(99.0),
            us(100.0),
            self.count(),
            self.sum_nanos / 1_000
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_into_the_right_buckets() {
        let h = Histogram::default();
        h.record(Duration::from_nanos(500));
        h.record(Duration::from_nanos(1_000));
        h.record(Duration::from_nanos(1_001));
        h.record(Duration::from_millis(3));
        h.record(Duration::from_secs(60));
        let s = h.snapshot();
        assert_eq!(s.count(), 5);
        assert_eq!(s.buckets[0], 2);
        assert_eq!(s.buckets[1], 1);
        assert_eq!(s.buckets[11], 1);
        assert_eq!(s.buckets[NUM_BUCKETS - 1], 1);
        assert_eq!(s.sum_nanos, 500 + 1_000 + 1_001 + 3_000_000 + 60_000_000_000);
    }

    #[test]
    fn percentiles_are_monotonic_and_inside_the_bucket() {
        let h = Histogram::default();
        for i in 1..=1000u64 {
            h.record(Duration::from_micros(i));
        }
        let s = h.snapshot();
        let p50 = s.percentile_nanos(50.0);
        let p99 = s.percentile_nanos(99.0);
        assert!((200_000.0..=500_000.0).contains(&p50), "{p50}");
        assert!(p99 >= p50 && p99 <= 1_000_000.0, "{p99}");
        assert!(s.rocksdb_line("strata.get.micros").contains("COUNT : 1000"));
        assert_eq!(Histogram::default().snapshot().percentile_nanos(99.0), 0.0);
    }
}
