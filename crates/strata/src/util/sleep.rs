//! Short sleeps that end when asked to.
//!
//! Owns sleeping for well under a millisecond without Linux's timer slack: a normal thread's
//! sleep may end up to 50 us late so the kernel can batch wake-ups, on top of the time the
//! wake-up itself takes. Must not be used for waits that may end early (those block on a
//! condition) nor for long sleeps, where 50 us does not matter and the batching is fair.
//!
//! Why: a write slowed down under compaction pressure sleeps off ~100 us of debt at a time, and
//! such sleeps are the slowest writes of an overwrite run; the default timer slack makes them
//! much longer than asked (docs/performance.md, "Slowed writes sleep to the microsecond"). The slack is a per-thread attribute, so it is lowered only for the sleep
//! and put back after it: the thread belongs to the caller. What remains late is the wake-up
//! itself; [`SleepTimer`] learns it and asks for that much less.

use std::time::{Duration, Instant};

/// The least a [`SleepTimer`] asks the kernel for: a real sleep, which measures the overshoot
/// again even when the last ones overshot the whole target.
const LEAST_ASKED: Duration = Duration::from_micros(1);

/// Sleeps that land near their target: each asks for the target less the overshoot recent
/// sleeps had (the wake-up's own latency, which lowering the timer slack does not remove).
/// Whatever is left over is the caller's to credit, as the write path's delay debt does.
#[derive(Debug, Default)]
pub struct SleepTimer {
    /// Moving average (1/8 per sleep) of how much longer than asked a sleep took, each sample
    /// capped at its target so that one preempted sleep does not skew the next many.
    overshoot: Duration,
}

impl SleepTimer {
    pub const fn new() -> SleepTimer {
        SleepTimer { overshoot: Duration::ZERO }
    }

    /// Sleeps about `target`; returns how long it actually slept.
    pub fn sleep(&mut self, target: Duration) -> Duration {
        let asked = target.saturating_sub(self.overshoot).max(LEAST_ASKED);
        let start = Instant::now();
        sleep_precisely(asked);
        let slept = start.elapsed();
        let over = slept.saturating_sub(asked).min(target);
        self.overshoot = (self.overshoot * 7 + over) / 8;
        slept
    }

    /// The overshoot the next sleep expects.
    #[cfg(test)]
    pub fn expected_overshoot(&self) -> Duration {
        self.overshoot
    }
}

/// Sleeps for `duration` with the calling thread's timer slack at its minimum, then restores
/// the slack the thread had. Where the slack cannot be read or set, sleeps as usual.
pub fn sleep_precisely(duration: Duration) {
    #[cfg(target_os = "linux")]
    {
        use rustix::thread::{current_timer_slack, set_current_timer_slack};
        use std::num::NonZeroU64;
        if let Ok(slack) = current_timer_slack() {
            if slack > 1 && set_current_timer_slack(NonZeroU64::new(1)).is_ok() {
                std::thread::sleep(duration);
                // 0 would mean "the thread's default", which is not necessarily what it had.
                let _ = set_current_timer_slack(NonZeroU64::new(slack));
                return;
            }
        }
    }
    std::thread::sleep(duration);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timer_learns_the_overshoot_and_asks_for_less() {
        let mut timer = SleepTimer::new();
        let target = Duration::from_micros(500);
        for _ in 0..20 {
            assert!(timer.sleep(target) >= LEAST_ASKED);
        }
        // Every sleep overshoots a little on any kernel, so the estimate is positive, and it
        // never exceeds the target (samples are capped at it).
        let learned = timer.expected_overshoot();
        assert!(learned > Duration::ZERO && learned <= target, "{learned:?}");
    }

    #[test]
    fn one_long_sleep_moves_the_estimate_by_at_most_an_eighth_of_the_target() {
        let mut timer = SleepTimer::new();
        // Asked 1 us against a target of 1 us: whatever the kernel does, the sample is capped.
        timer.sleep(Duration::from_micros(1));
        assert!(timer.expected_overshoot() <= Duration::from_micros(1) / 8 + Duration::from_nanos(1));
    }

    #[test]
    fn sleeps_at_least_as_long_as_asked() {
        for micros in [1, 50, 100, 1_000] {
            let asked = Duration::from_micros(micros);
            let start = Instant::now();
            sleep_precisely(asked);
            assert!(start.elapsed() >= asked, "{micros} us asked, {:?} slept", start.elapsed());
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn puts_the_threads_timer_slack_back() {
        use rustix::thread::{current_timer_slack, set_current_timer_slack};
        // On a thread of its own: the slack is per thread, and the test harness reuses threads.
        std::thread::spawn(|| {
            set_current_timer_slack(std::num::NonZeroU64::new(37_000)).unwrap();
            sleep_precisely(Duration::from_micros(10));
            assert_eq!(current_timer_slack().unwrap(), 37_000);
        })
        .join()
        .unwrap();
    }
}
