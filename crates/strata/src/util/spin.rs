//! Bounded, adaptive spin-waiting for a thread about to block on a condition variable.
//!
//! Owns when such a wait spins first (yielding its CPU between checks of the condition) and for
//! how long. It must not be used while holding a lock the awaited thread needs, and it never
//! replaces the blocking wait: a spin that runs out returns and the caller blocks as before.
//!
//! Why: a blocked thread is woken through a futex, and on a virtual machine whose idle CPU has
//! halted the wake-up costs an inter-processor interrupt and a VM exit before the thread runs.
//! Group commit wakes a whole group at once, so those wake-ups come in a chain. Spinning with
//! `sched_yield` keeps the waiters runnable instead: the CPU goes to whoever has work (the
//! leader, a writer coming back), and a waiter sees its condition as soon as it is scheduled.
//! RocksDB does the same (`enable_write_thread_adaptive_yield`, 100 us by default).
//!
//! Adaptive: a moving average of how often a spin ended before its limit decides whether the
//! next wait spins at all, so waits that are long (a stalled write, a leader behind a slow
//! device) stop burning CPU after a few misses; every `PROBE_EVERY`-th wait spins anyway to
//! notice when spinning pays again.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Fixed-point 1.0 for the success average.
const ONE: u32 = 1 << 16;
/// Spin while at least this share of recent spins ended in time (a quarter).
const WORTH_SPINNING: u32 = ONE / 4;
/// The average moves 1/16 of the way towards each new outcome.
const SMOOTHING_SHIFT: u32 = 4;
/// While spinning does not pay, one wait in this many spins anyway to measure it again.
const PROBE_EVERY: u32 = 32;

/// A spin-wait policy shared by the threads waiting on one kind of event.
#[derive(Debug)]
pub struct AdaptiveSpin {
    limit: Duration,
    /// Moving average of spins that saw their condition before the limit, `ONE` = all.
    success: AtomicU32,
    /// Waits that skipped spinning since the last probe.
    skipped: AtomicU32,
}

impl AdaptiveSpin {
    /// A policy that spins at most `limit` per wait; a zero limit never spins.
    pub fn new(limit: Duration) -> Self {
        Self { limit, success: AtomicU32::new(ONE), skipped: AtomicU32::new(0) }
    }

    /// Whether this policy ever spins (its limit is not zero).
    pub fn enabled(&self) -> bool {
        !self.limit.is_zero()
    }

    /// Spins, yielding the CPU between calls of `done`, until `done` returns true or the limit
    /// (or `deadline`, if earlier) passes. Returns whether `done` returned true. Returns false
    /// without spinning when the limit is zero or recent spins mostly ran out.
    pub fn spin_until(&self, deadline: Option<Instant>, mut done: impl FnMut() -> bool) -> bool {
        if self.limit.is_zero() || !self.worth_spinning() {
            return false;
        }
        let own_deadline = Instant::now() + self.limit;
        let end = deadline.map_or(own_deadline, |d| d.min(own_deadline));
        let saw = loop {
            if done() {
                break true;
            }
            if Instant::now() >= end {
                break false;
            }
            std::thread::yield_now();
        };
        self.record(saw);
        saw
    }

    fn worth_spinning(&self) -> bool {
        if self.success.load(Ordering::Relaxed) >= WORTH_SPINNING {
            return true;
        }
        // Racy increments only shift when the next probe happens.
        let skipped = self.skipped.load(Ordering::Relaxed) + 1;
        if skipped >= PROBE_EVERY {
            self.skipped.store(0, Ordering::Relaxed);
            return true;
        }
        self.skipped.store(skipped, Ordering::Relaxed);
        false
    }

    fn record(&self, saw: bool) {
        // A lost update between racing waiters only drops one sample of a moving average.
        let old = self.success.load(Ordering::Relaxed);
        let target = if saw { ONE } else { 0 };
        let new = if target > old {
            old + ((target - old) >> SMOOTHING_SHIFT)
        } else {
            old - ((old - target) >> SMOOTHING_SHIFT)
        };
        self.success.store(new, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn a_zero_limit_never_calls_the_condition() {
        let spin = AdaptiveSpin::new(Duration::ZERO);
        assert!(!spin.spin_until(None, || panic!("a zero limit must not spin")));
    }

    #[test]
    fn a_condition_that_holds_returns_at_once() {
        let spin = AdaptiveSpin::new(Duration::from_secs(10));
        let start = Instant::now();
        assert!(spin.spin_until(None, || true));
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn sees_another_threads_change_within_the_limit() {
        let spin = AdaptiveSpin::new(Duration::from_secs(30));
        let flag = Arc::new(AtomicBool::new(false));
        let setter = {
            let flag = Arc::clone(&flag);
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(5));
                flag.store(true, Ordering::Release);
            })
        };
        assert!(spin.spin_until(None, || flag.load(Ordering::Acquire)));
        setter.join().unwrap();
    }

    #[test]
    fn stops_at_the_earlier_deadline() {
        let spin = AdaptiveSpin::new(Duration::from_secs(30));
        let start = Instant::now();
        assert!(!spin.spin_until(Some(start + Duration::from_millis(2)), || false));
        assert!(start.elapsed() < Duration::from_secs(10), "the caller's deadline bounds the spin");
    }

    #[test]
    fn stops_spinning_after_misses_and_probes_again() {
        let spin = AdaptiveSpin::new(Duration::from_micros(50));
        let mut spun = 0;
        for _ in 0..40 {
            spin.spin_until(None, || {
                spun += 1;
                false
            });
        }
        let calls_after_misses = spun;
        // 22 misses take the average from 1.0 below a quarter; after that only probes spin.
        let mut spins = 0;
        for _ in 0..(2 * PROBE_EVERY) {
            let mut called = false;
            spin.spin_until(None, || {
                called = true;
                false
            });
            spins += usize::from(called);
        }
        assert!(calls_after_misses > 0);
        assert_eq!(spins, 2, "only one wait in PROBE_EVERY spins while spinning does not pay");
        // Successful probes bring spinning back.
        for _ in 0..(40 * PROBE_EVERY) {
            spin.spin_until(None, || true);
        }
        assert!(spin.success.load(Ordering::Relaxed) >= WORTH_SPINNING);
        let mut called = false;
        spin.spin_until(None, || {
            called = true;
            true
        });
        assert!(called);
    }
}
