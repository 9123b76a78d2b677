//! Backpressure before a group goes in: slowing writers down as memtables, L0 or pending
//! compaction bytes near their limits, stopping them at the limits, and switching a family's
//! full memtable. It decides how long a writer waits; it must not write the WAL or memtables.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::LeaderState;
use crate::db::family::Family;
use crate::db::{DbInner, SuperVersion};
use crate::error::Result;

/// The least write rate a slowdown starts from: the last flush's drain rate, which it stands
/// for before the first flush. The rate falls towards `MIN_DELAYED_RATE` as the pressure
/// approaches its stop threshold (`delayed_write_rate`).
const MAX_DELAYED_RATE: f64 = 64.0 * 1024.0 * 1024.0;
const MIN_DELAYED_RATE: f64 = 1024.0 * 1024.0;

/// A delayed write that owes less than this waits it out spinning on its CPU instead of
/// sleeping: a plain sleep on this project's machine took ~250 us however short it was asked to
/// be (timer slack and wake-up latency), so sleeping in slices made every slowed-down workload's
/// P99.99 ~250 us, while a slowdown asks for ~1-12 us per 800-byte write. Spinning (not
/// yielding: a yield lets a flush or compaction thread take the core for a whole scheduler
/// slice, measured as a worse P99.99 and Max) is only done with more than one CPU, where the
/// background threads have another core, and only while memtable pressure alone slows writes:
/// under L0 or pending-compaction pressure the compaction needs the CPU a spin would burn. A
/// write that owes more (a slowdown near its stop threshold) sleeps, and the sleep's overshoot is
/// credited against the next writes, up to this much. Such sleeps are timed by a
/// [`SleepTimer`], which lowers the timer slack and asks for the learned wake-up latency less,
/// so a sleep owed 100 us ends near 100 us rather than ~250 us.
const SPIN_LIMIT: Duration = Duration::from_micros(100);

/// Slowdown time waited out spinning is added to the stall statistics in batches of this
/// much: one write's wait is ~1 us, below the counters' microsecond resolution.
const STALL_REPORT_BATCH: Duration = Duration::from_millis(1);

/// A pressure in the slowdown range: above 0 (off) and below 1 (stop).
fn in_slowdown(pressure: f64) -> bool {
    pressure > 0.0 && pressure < 1.0
}

impl DbInner {
    /// Waits or slows down until `family`'s mutable memtable has room, switching it when full.
    pub(super) fn make_room_for_write(
        &self,
        leader: &mut LeaderState,
        family: &Family,
        bytes: usize,
    ) -> Result<()> {
        let mut delayed = false;
        loop {
            if let Some(e) = self.background_error() {
                return Err(e);
            }
            let sv = family.super_version.load();
            let usage = sv.mem.approximate_memory_usage();
            let pressure = write_pressure(&family.opts, &sv);
            let memtables = memtable_pressure(family, usage);
            if !delayed && (in_slowdown(pressure) || in_slowdown(memtables)) {
                let rate = self.delayed_write_rate(pressure, memtables);
                let reason = self.stall_reason(&sv, false);
                if leader.delay_reason.is_some_and(|r| r != reason) {
                    self.report_delay(leader); // what was owed under the old reason
                }
                leader.delay_reason = Some(reason);
                // Spinning keeps the writer's core busy: fine while only flush is behind (it has
                // a core of its own), wrong while compaction is, which needs that CPU.
                self.delay_write(leader, bytes, rate, !in_slowdown(pressure));
                delayed = true;
                continue;
            }
            if usage < family.opts.write_buffer_size {
                return Ok(());
            }
            // Counted before the switch, so that a flush finishing meanwhile cannot hand back a
            // borrowed slot the new memtable needs.
            if pressure >= 1.0 || !family.memtable_budget.add_memtable(false) {
                self.report_delay(leader);
                self.stall_until_background_progress(family, &sv);
                continue;
            }
            return self.switch_memtable(leader, family);
        }
    }
    /// Bytes per second writes may go at under the given pressures (each 0 when off): the
    /// lowest of the rates they allow, each starting from the rate the last flush drained a
    /// memtable at (at least `MAX_DELAYED_RATE`), so that crossing a slowdown threshold slows
    /// writers a little, not to a fixed floor far below what they were doing. Memtable
    /// pressure shrinks that rate linearly: the writer slows to about what flush keeps up with,
    /// and the last spare memtable fills roughly as the oldest flush completes. L0 and
    /// pending-compaction pressure shrink it with the square of the pressure left, so the rate
    /// falls faster as L0 nears its stop trigger: the compaction that drains L0 runs at a lower
    /// CPU priority and only gets a core once writers sleep. The measurements are in docs/performance.md
    /// ("Write-path choices, as measured").
    fn delayed_write_rate(&self, pressure: f64, memtables: f64) -> f64 {
        delayed_rate(self.flush_rate.load(Ordering::Relaxed) as f64, pressure, memtables)
    }

    /// Charges `bytes` against `rate` (bytes per second) and waits the debt out before the write
    /// by spinning while it is below [`SPIN_LIMIT`] (when `may_spin`, given a second CPU);
    /// otherwise lets it accumulate and sleeps once it reaches [`SPIN_LIMIT`]. A sleep that
    /// overshoots is credited against the next debt, up to [`SPIN_LIMIT`].
    fn delay_write(&self, leader: &mut LeaderState, bytes: usize, rate: f64, may_spin: bool) {
        leader.delay_debt += bytes as f64 / rate;
        if leader.delay_debt <= 0.0 {
            return;
        }
        let owed = Duration::from_secs_f64(leader.delay_debt);
        let spin = owed < SPIN_LIMIT && may_spin && self.spin_waits;
        if !spin && owed < SPIN_LIMIT {
            // Not worth a sleep yet: even a timed one costs a wake-up (tens of us on this VM),
            // so sleeping for every write's microsecond would slow writers far more than the
            // rate asks, and each of them would be a slow write.
            return;
        }
        let start = Instant::now();
        if spin {
            while start.elapsed() < owed {
                std::hint::spin_loop();
            }
        } else {
            leader.delay_timer.sleep(owed);
        }
        let waited = start.elapsed();
        leader.delay_debt = (leader.delay_debt - waited.as_secs_f64()).max(-SPIN_LIMIT.as_secs_f64());
        leader.delay_unreported += waited;
        if leader.delay_unreported >= STALL_REPORT_BATCH || owed >= SPIN_LIMIT {
            self.report_delay(leader);
        }
    }

    /// Adds the slowdown time not yet reported to the stall statistics.
    fn report_delay(&self, leader: &mut LeaderState) {
        let waited = std::mem::take(&mut leader.delay_unreported);
        if !waited.is_zero() {
            self.stats.add_stall(waited, false);
            let sv = self.default.super_version.load();
            let reason = leader.delay_reason.unwrap_or_else(|| self.stall_reason(&sv, false));
            self.record_stall(&sv, reason, false, waited);
        }
    }

    fn stall_until_background_progress(&self, family: &Family, seen: &SuperVersion) {
        let start = Instant::now();
        let mut bg = self.bg.lock();
        let unchanged = std::ptr::eq(&**family.super_version.load(), seen);
        if unchanged && bg.error.is_none() && !bg.shutting_down {
            self.bg_cv.wait_for(&mut bg, Duration::from_millis(100));
        }
        drop(bg);
        let waited = start.elapsed();
        self.stats.add_stall(waited, true);
        self.report_stall(seen, true, waited);
    }
}

/// 0 while switching the mutable memtable would leave writes room; once no slot is left for
/// another memtable (of the budget's own, or one the block cache could lend), rising from 0
/// to 1 as the mutable one fills from half to full. Writes then slow down instead of running
/// into a stop that lasts a whole flush (tens to hundreds of ms on two cores, where the
/// writer also takes CPU from that flush). RocksDB delays
/// writes at `max_write_buffer_number - 1` unflushed memtables for the same reason.
/// The measurements are in docs/performance.md ("Write-path choices, as measured").
fn memtable_pressure(family: &Family, usage: usize) -> f64 {
    let fill = usage as f64 / family.opts.write_buffer_size as f64;
    if fill < 0.5 || family.memtable_budget.has_room() {
        return 0.0;
    }
    ((fill - 0.5) * 2.0).clamp(f64::EPSILON, 1.0)
}

/// 0 below the slowdown thresholds, 1 at or above a stop threshold, linear in between.
fn write_pressure(o: &crate::options::Options, sv: &SuperVersion) -> f64 {
    let l0 = sv.version.files[0].len();
    let l0_pressure = if l0 < o.level0_slowdown_trigger {
        0.0
    } else {
        let span = (o.level0_stop_trigger - o.level0_slowdown_trigger).max(1) as f64;
        ((l0 - o.level0_slowdown_trigger) as f64 / span).max(f64::EPSILON)
    };
    let pending =
        sv.version.pending_compaction_bytes(|v| crate::compaction::picker::pending_compaction_bytes(v, o));
    let pending_pressure = if pending < o.soft_pending_compaction_bytes {
        0.0
    } else {
        let span = (o.hard_pending_compaction_bytes - o.soft_pending_compaction_bytes).max(1) as f64;
        ((pending - o.soft_pending_compaction_bytes) as f64 / span).max(f64::EPSILON)
    };
    l0_pressure.max(pending_pressure).min(1.0)
}

/// [`DbInner::delayed_write_rate`] for a last flush that drained `flush_rate` bytes per second.
fn delayed_rate(flush_rate: f64, pressure: f64, memtables: f64) -> f64 {
    let shrink = |full_rate: f64, p: f64| full_rate * (1.0 - p) + MIN_DELAYED_RATE;
    let flush_rate = flush_rate.max(MAX_DELAYED_RATE);
    let mut rate = f64::INFINITY;
    if in_slowdown(pressure) {
        rate = shrink(flush_rate * (1.0 - pressure), pressure);
    }
    if in_slowdown(memtables) {
        rate = rate.min(shrink(flush_rate, memtables));
    }
    rate
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: f64 = 1024.0 * 1024.0;

    #[test]
    fn no_pressure_no_limit() {
        assert_eq!(delayed_rate(400.0 * MIB, 0.0, 0.0), f64::INFINITY);
        assert_eq!(delayed_rate(400.0 * MIB, 1.0, 1.0), f64::INFINITY, "a stop is not a slowdown");
    }

    #[test]
    fn crossing_a_threshold_starts_near_the_flush_rate_and_falls_to_the_floor() {
        let flush = 400.0 * MIB;
        for (p, m) in [(f64::EPSILON, 0.0), (0.0, f64::EPSILON)] {
            let start = delayed_rate(flush, p, m);
            assert!(start > 0.99 * flush && start <= flush + MIN_DELAYED_RATE, "{start}");
        }
        let mut last = f64::INFINITY;
        for step in 1..100 {
            let p = f64::from(step) / 100.0;
            let l0 = delayed_rate(flush, p, 0.0);
            assert!(l0 < last, "the rate falls as L0 pressure rises");
            assert!(l0 <= delayed_rate(flush, 0.0, p), "L0 pressure slows at least as much as memtables");
            last = l0;
        }
        assert!(last < MIN_DELAYED_RATE + 0.001 * flush, "{last}");
        // Halfway to the stop trigger L0 pressure allows a quarter of the flush rate.
        let half = delayed_rate(flush, 0.5, 0.0);
        assert!((half - (0.25 * flush + MIN_DELAYED_RATE)).abs() < 1.0, "{half}");
    }

    #[test]
    fn before_the_first_flush_the_start_rate_is_the_fixed_one() {
        let start = delayed_rate(0.0, f64::EPSILON, 0.0);
        assert!((start - MAX_DELAYED_RATE - MIN_DELAYED_RATE).abs() < 1.0, "{start}");
        assert_eq!(delayed_rate(0.0, 0.5, 0.7), delayed_rate(0.0, 0.5, 0.0).min(delayed_rate(0.0, 0.0, 0.7)));
    }
}
