//! The write path: group commit and backpressure.
//!
//! Writers queue up; the writer at the front becomes the leader, takes every compatible write
//! behind it (same `disable_wal`, at most `MAX_GROUP_BYTES`), assigns consecutive sequence
//! numbers, appends ONE WAL record for the whole group, issues at most one fdatasync (if any
//! member asked for `sync`), inserts into the memtable, publishes the new last sequence, and wakes
//! the group. WAL order = sequence order = visibility order. Only the leader touches the WAL and
//! the mutable memtable, under `leader`. The WAL record format is the write batch format with the
//! group's first sequence number and total count in the header.
//!
//! A writer that finds no leader and nobody queued is a group of one and skips the queue: it
//! marks the queue `solo` (so writers arriving meanwhile queue up behind it), writes its batch
//! from the caller's stack, and wakes the queue when done. This is the single-threaded case:
//! skipping the queue's allocation, reference counts and extra locks made single-threaded
//! mergerandom and updaterandom ~3% faster (4 alternating rounds each, 2026-11-26).
//!
//! Synced writes gather: a group's fdatasync is the whole cost of a synced write, so when the
//! last synced group found N writers queued, the next synced leader waits (at most
//! `Options::sync_gather_micros`) until N are queued again before it takes its group, and a
//! synced writer does not go solo while N > 1. Without the wait, the writers of a finished
//! group are still waking up when the next leader takes the queue, so groups alternate between
//! the writers that queued during the last sync and those that just returned (~4.8 per
//! fdatasync at 8 writers); with it, all of them share one. A leader that waits in vain lowers
//! N to what it found, so a burst of concurrency costs at most one wasted wait afterwards.
//! `strata bench
//! --benchmarks=fillrandom --sync=1 --disable_wal=0 --value_size=100 --num=20000`
//! (2026-11-26) at t=2 / 4 / 8 writers: 10.5k / 17.7k / 31.7k writes/s without the wait, 14.5k /
//! 22.7k / 40k with it (limits of 50 and 100 us alike; 8 writers take ~100 us to return and
//! queue up again on two cores); t=1 never waits.
//!
//! Waits spin before they block (`Options::write_spin_micros`, `util::spin`): a queued writer
//! watches `WriteQueue::wakeups` and a gathering leader watches `WriteQueue::queued`, both
//! unlocked and yielding the CPU between looks, then blocks on its condition variable if the
//! spin ran out. Blocked, the writers of a finished group were woken in a chain of futex
//! wake-ups, each needing a halted virtual CPU to be interrupted, and that chain, not the
//! writers' own work, was most of the ~100 us a group of 8 took to come back after its sync.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

use super::family::{Family, FamilyTable};
use super::{DbInner, SuperVersion};
use crate::batch::{WriteBatch, HEADER_LEN};
use crate::db::info_log::StallReason;
use crate::error::{Error, Result};
use crate::filenames;
use crate::fs::WritableFile;
use crate::memtable::MemTable;
use crate::options::WriteOptions;
use crate::util::kill_point::kill_point;
use crate::util::sleep::SleepTimer;
use crate::util::spin::AdaptiveSpin;
use crate::wal::LogWriter;
use crate::wal_header::{RecordFlags, WalHeader};

/// How far ahead of a synced WAL's records its file is zero-filled: an fdatasync that only
/// overwrites allocated blocks costs about half of one that grows the file (ext4 on this
/// project's machine, 128-byte `dd oflag=dsync` writes: 113 us vs 209 us). The first sync after
/// each extension also writes the new zeros, so the chunk bounds that write's latency: with
/// 1 MiB the slowest synced 100-byte write took 1.6-4.5 ms, with 128 KiB 0.5-1.6 ms, at the same
/// throughput (`strata bench --benchmarks=fillrandom --sync=1 --value_size=100 --num=20000
/// --writes=10000`, 3 alternating rounds, 2026-11-23). 128 KiB is ~1,000 such writes per growth.
pub(crate) const WAL_PREALLOCATION_BYTES: u64 = 128 << 10;

/// A group is cut once it holds this many bytes, bounding the latency a leader adds.
const MAX_GROUP_BYTES: usize = 1 << 20;

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

/// How many records ahead of the one it inserts a group's memtable insert starts loading the
/// hash-index slot (`insert_group`): far enough that a ~100 ns miss is covered by the inserts
/// in between, near enough that the lines are still cached when their turn comes.
const SLOT_PREFETCH_AHEAD: usize = 4;

/// Slowdown time waited out spinning is added to the stall statistics in batches of this
/// much: one write's wait is ~1 us, below the counters' microsecond resolution.
const STALL_REPORT_BATCH: Duration = Duration::from_millis(1);

/// A pressure in the slowdown range: above 0 (off) and below 1 (stop).
fn in_slowdown(pressure: f64) -> bool {
    pressure > 0.0 && pressure < 1.0
}

pub(crate) struct Writer {
    batch: WriteBatch,
    opts: WriteOptions,
    result: Mutex<Option<Result<()>>>,
}

/// One write of a group: a queued [`Writer`] or a solo writer's own batch.
trait GroupMember {
    fn batch(&self) -> &WriteBatch;
    fn opts(&self) -> &WriteOptions;
}

impl GroupMember for Arc<Writer> {
    fn batch(&self) -> &WriteBatch {
        &self.batch
    }
    fn opts(&self) -> &WriteOptions {
        &self.opts
    }
}

/// A writer that found the queue idle: borrowed, never shared with another thread.
struct SoloWriter<'a> {
    batch: &'a WriteBatch,
    opts: &'a WriteOptions,
}

impl GroupMember for SoloWriter<'_> {
    fn batch(&self) -> &WriteBatch {
        self.batch
    }
    fn opts(&self) -> &WriteOptions {
        self.opts
    }
}

/// Held by a leader across `write_group` and forgotten when it returns, so that it only acts
/// when a panic unwinds out (a custom `FileSystem`'s, or an engine bug): it puts the database
/// into its read-only error state, takes the leader's group off the queue (or clears `solo`),
/// fails the group's other writers and wakes the queue. Otherwise the group would stay at the
/// front, and every later writer would wait for a leader that is gone. The WAL and memtable may
/// hold part of the group, which is why nothing is written after it; a reopen recovers, as after
/// a failed WAL write. The panic goes on unwinding in the leader's thread. A guard instead of
/// `catch_unwind`: the closure kept `write_group` from being inlined, which cost ~125
/// instructions per single-threaded write (callgrind).
struct UnwindGuard<'a> {
    db: &'a DbInner,
    /// The leader's group, itself first; empty for a solo writer.
    group: &'a [Arc<Writer>],
}

impl Drop for UnwindGuard<'_> {
    fn drop(&mut self) {
        self.fail_the_turn();
    }
}

impl UnwindGuard<'_> {
    /// Out of line, so that the unwinding path adds only a call to the inlined write path.
    #[cold]
    #[inline(never)]
    fn fail_the_turn(&self) {
        let e = Error::Background { context: "a write panicked".to_string(), cause: None };
        self.db.set_background_error(&e, "write");
        if self.group.is_empty() {
            self.db.write_queue.finish_solo();
        } else {
            self.db.write_queue.finish_group(self.group, &Err(e));
        }
    }
}

/// A WAL closed by a memtable switch while it held unsynced write batches.
pub(crate) struct ClosedWal {
    pub number: u64,
    /// The last sequence number appended to it.
    last_seq: u64,
    wal: LogWriter,
}

/// Writers waiting for (or being served by) a leader.
pub(crate) struct WriteQueue {
    state: Mutex<QueueState>,
    cv: Condvar,
    /// Wakes a synced leader that is gathering (`QueueState::gather_target`).
    gather_cv: Condvar,
    /// Bumped under `state` whenever `cv` is notified: what a spinning writer watches.
    wakeups: AtomicU64,
    /// `QueueState::waiting.len()`, stored under `state`: what a spinning gatherer watches.
    queued: AtomicUsize,
    /// How writers and gathering leaders spin before they block (module doc).
    spin: AdaptiveSpin,
}

impl WriteQueue {
    /// A queue whose waits spin at most `spin_limit` before blocking (zero: never).
    pub fn new(spin_limit: Duration) -> Self {
        Self {
            state: Mutex::default(),
            cv: Condvar::new(),
            gather_cv: Condvar::new(),
            wakeups: AtomicU64::new(0),
            queued: AtomicUsize::new(0),
            spin: AdaptiveSpin::new(spin_limit),
        }
    }

    /// Queues `writer`, waking a gathering leader once enough writers are queued.
    fn push(&self, state: &mut QueueState, writer: Arc<Writer>) {
        state.waiting.push_back(writer);
        self.queued.store(state.waiting.len(), Ordering::Relaxed);
        if state.gather_target.is_some_and(|n| state.waiting.len() >= n) {
            self.gather_cv.notify_one();
        }
    }

    /// Ends a solo writer's turn: the next writer may lead, and whoever queued meanwhile wakes.
    fn finish_solo(&self) {
        let mut state = self.state.lock();
        state.solo = false;
        if !state.waiting.is_empty() {
            self.wake_all();
        }
    }

    /// Ends a leader's turn: takes its group (the leader first) off the queue, hands the other
    /// members the group's result and wakes the queue.
    fn finish_group(&self, group: &[Arc<Writer>], result: &Result<()>) {
        let mut state = self.state.lock();
        for (i, w) in group.iter().enumerate() {
            state.waiting.pop_front();
            if i > 0 {
                *w.result.lock() = Some(result.as_ref().map(|_| ()).map_err(Error::duplicate));
            }
        }
        self.queued.store(state.waiting.len(), Ordering::Relaxed);
        self.wake_all();
    }

    /// Wakes every queued writer; called with `state` held.
    fn wake_all(&self) {
        self.wakeups.fetch_add(1, Ordering::Release);
        self.cv.notify_all();
    }

    /// Blocks a queued writer until the next `wake_all`, first spinning (unlocked) for it.
    fn wait_for_wakeup(&self, state: &mut MutexGuard<'_, QueueState>) {
        let seen = self.wakeups.load(Ordering::Relaxed);
        if self.spin.enabled() {
            MutexGuard::unlocked(state, || {
                self.spin.spin_until(None, || self.wakeups.load(Ordering::Acquire) != seen);
            });
        }
        // A wake-up between the spin's last look and the relock was notified to nobody.
        if self.wakeups.load(Ordering::Relaxed) == seen {
            self.cv.wait(state);
        }
    }
}

#[derive(Default)]
struct QueueState {
    /// Queued writers; the front one leads while `solo` is false.
    waiting: VecDeque<Arc<Writer>>,
    /// A writer that found `waiting` empty is writing without queueing. Nobody else leads
    /// until it is done.
    solo: bool,
    /// Writers queued when the last synced group was taken: how many a synced leader expects.
    synced_writers: usize,
    /// Set while a synced leader waits for this many queued writers.
    gather_target: Option<usize>,
}

/// What only the current leader touches.
pub(crate) struct LeaderState {
    pub wal: LogWriter,
    pub wal_number: u64,
    scratch: Vec<u8>,
    /// Seconds of delay owed by slowed-down writes; negative: overslept, credited (delay_write).
    delay_debt: f64,
    /// Slowdown time waited out spinning and not yet added to the stall statistics.
    delay_unreported: Duration,
    /// Why the last write was slowed down, decided when it was (reported later, in batches).
    delay_reason: Option<StallReason>,
    /// Times a slowed write's sleeps so they end when the debt is paid, not a wake-up later.
    delay_timer: SleepTimer,
    /// The WAL holds write batches appended since its last fdatasync.
    wal_unsynced: bool,
    /// The last sequence number appended to the WAL (0: none yet).
    wal_last_seq: u64,
    /// The WAL's directory entry has been made durable.
    wal_dir_synced: bool,
    /// A WAL append, sync or creation failed (the database is in the error state). After a
    /// failed fsync the WAL's unsynced pages may be lost, and after a failed append it may end
    /// in a torn record, so `Db::resume` does not write or sync it again: it switches to a new
    /// WAL and flushes every memtable (`abandon_wal`).
    pub wal_failed: bool,
}

impl LeaderState {
    pub fn new(wal: LogWriter, wal_number: u64) -> Self {
        Self {
            wal,
            wal_number,
            scratch: Vec::new(),
            delay_debt: 0.0,
            delay_unreported: Duration::ZERO,
            delay_reason: None,
            delay_timer: SleepTimer::new(),
            wal_unsynced: false,
            wal_last_seq: 0,
            wal_dir_synced: true,
            wal_failed: false,
        }
    }
}

impl DbInner {
    pub(crate) fn write(&self, opts: &WriteOptions, batch: WriteBatch) -> Result<()> {
        self.timed(&self.stats.write_latency, || self.write_queued(opts, batch))
    }

    fn write_queued(&self, opts: &WriteOptions, batch: WriteBatch) -> Result<()> {
        // A synced write that may gather (module doc).
        let gathers = opts.sync && !opts.disable_wal && self.opts.sync_gather_micros > 0;
        let mut state = self.write_queue.state.lock();
        if state.waiting.is_empty() && !state.solo && !(gathers && state.synced_writers > 1) {
            state.solo = true;
            drop(state);
            let unwinding = UnwindGuard { db: self, group: &[] };
            let result = self.write_group(&[SoloWriter { batch: &batch, opts }]);
            std::mem::forget(unwinding);
            self.write_queue.finish_solo();
            return result;
        }
        let me = Arc::new(Writer { batch, opts: *opts, result: Mutex::new(None) });
        self.write_queue.push(&mut state, Arc::clone(&me));
        loop {
            if let Some(r) = me.result.lock().take() {
                return r;
            }
            if !state.solo && state.waiting.front().is_some_and(|f| Arc::ptr_eq(f, &me)) {
                break;
            }
            self.write_queue.wait_for_wakeup(&mut state);
        }
        if gathers {
            self.gather_synced_writers(&mut state);
        }
        let group = collect_group(&state.waiting);
        drop(state);

        let unwinding = UnwindGuard { db: self, group: &group };
        let result = self.write_group(&group);
        std::mem::forget(unwinding);
        self.write_queue.finish_group(&group, &result);
        result
    }

    /// Called by a synced leader at the front of the queue: waits (bounded) until as many
    /// writers are queued as the last synced group found, then records how many it found.
    fn gather_synced_writers(&self, state: &mut MutexGuard<'_, QueueState>) {
        let target = state.synced_writers;
        if state.waiting.len() < target {
            let deadline = Instant::now() + Duration::from_micros(u64::from(self.opts.sync_gather_micros));
            let queue = &self.write_queue;
            if queue.spin.enabled() {
                MutexGuard::unlocked(state, || {
                    queue.spin.spin_until(Some(deadline), || queue.queued.load(Ordering::Relaxed) >= target);
                });
            }
            state.gather_target = Some(target);
            while state.waiting.len() < target {
                if self.write_queue.gather_cv.wait_until(state, deadline).timed_out() {
                    break;
                }
            }
            state.gather_target = None;
        }
        state.synced_writers = state.waiting.len();
    }

    fn write_group<M: GroupMember>(&self, group: &[M]) -> Result<()> {
        let mut leader = self.leader.lock();
        let group_bytes: usize = group.iter().map(|w| w.batch().size_in_bytes()).sum();
        let with_families = group.iter().any(|w| w.batch().has_families());
        // Loaded under the leader lock: families are created and dropped under it too.
        let families = self.families.load();
        if with_families {
            for family in touched_families(&families, group) {
                self.make_room_for_write(&mut leader, family, group_bytes)?;
            }
        } else {
            self.make_room_for_write(&mut leader, &self.default, group_bytes)?;
        }
        let first_seq = self.last_sequence.load(Ordering::Relaxed) + 1;
        let count: u64 = group.iter().map(|w| w.batch().len() as u64).sum();
        let leader = &mut *leader;
        if group[0].opts().disable_wal {
            if !self.unpersisted_writes.load(Ordering::Relaxed) {
                self.unpersisted_writes.store(true, Ordering::Release);
            }
        } else {
            encode_group(&mut leader.scratch, first_seq, count, group);
            let sync = group.iter().any(|w| w.opts().sync);
            if let Err(e) = self.append_wal(leader, sync) {
                leader.wal_failed = true;
                self.set_background_error(&e, "WAL write");
                self.seal_failed_wal(leader);
                return Err(e);
            }
            leader.wal_last_seq = first_seq + count - 1;
        }
        let seq = if with_families {
            insert_group_families(&families, group, first_seq)?
        } else {
            let mem = self.default.super_version.load();
            let seq = insert_group(&mem.mem, group, first_seq, count)?;
            self.default.slot_hint.publish(mem.mem.slot_hint());
            seq
        };
        self.last_sequence.store(seq - 1, Ordering::Release);
        self.stats.add_user_write(count, group_bytes as u64);
        Ok(())
    }

    fn append_wal(&self, leader: &mut LeaderState, sync: bool) -> Result<()> {
        if sync {
            self.make_earlier_writes_durable(leader)?;
        }
        // What was durable before this record: recovery's evidence that damage before it is
        // corruption, not a torn unsynced tail (wal_header::RecordFlags).
        let earlier_wals_durable = self.closed_wals.lock().is_empty();
        let prefix_durable = !leader.wal_unsynced && leader.wal_dir_synced && leader.wal.has_synced();
        RecordFlags::new(earlier_wals_durable, prefix_durable).store(&mut leader.scratch);
        kill_point("wal.append.before");
        leader.wal.add_record(&leader.scratch)?;
        kill_point("wal.append.after");
        leader.wal_unsynced = true;
        self.stats.wal_bytes.fetch_add(leader.scratch.len() as u64, Ordering::Relaxed);
        if sync {
            self.sync_current_wal(leader)?;
        }
        Ok(())
    }

    fn sync_current_wal(&self, leader: &mut LeaderState) -> Result<()> {
        kill_point("wal.sync.before");
        leader.wal.sync()?;
        kill_point("wal.sync.after");
        leader.wal_unsynced = false;
        self.stats.wal_syncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// What a `sync=true` group needs durable besides its own record, done before that record
    /// is appended so that a failure leaves nothing of the group behind: the current WAL's
    /// directory entry (deferred from the switch that created it: `sync=false` writes promise
    /// nothing across power loss, so they do not pay for it), and the unsynced tails of the WALs
    /// closed since (see `switch_memtable`).
    fn make_earlier_writes_durable(&self, leader: &mut LeaderState) -> Result<()> {
        if !leader.wal_dir_synced {
            self.fs.sync_dir(&self.dir)?;
            leader.wal_dir_synced = true;
        }
        self.sync_closed_wals()
    }

    /// Waits or slows down until `family`'s mutable memtable has room, switching it when full.
    fn make_room_for_write(&self, leader: &mut LeaderState, family: &Family, bytes: usize) -> Result<()> {
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
}

/// The families `group`'s records go to, each once; a family dropped meanwhile is left out
/// (its records are not applied, as RocksDB ignores writes to a dropped family).
fn touched_families<'a, M: GroupMember>(families: &'a FamilyTable, group: &[M]) -> Vec<&'a Arc<Family>> {
    let mut ids: Vec<u32> = Vec::new();
    for w in group {
        for rec in w.batch().records().flatten() {
            if !ids.contains(&rec.0) {
                ids.push(rec.0);
            }
        }
    }
    ids.iter().filter_map(|id| families.get(*id)).collect()
}

impl DbInner {
    /// Bytes per second writes may go at under the given pressures (each 0 when off): the
    /// lowest of the rates they allow, each starting from the rate the last flush drained a
    /// memtable at (at least `MAX_DELAYED_RATE`), so that crossing a slowdown threshold slows
    /// writers a little, not to a fixed floor far below what they were doing. Memtable
    /// pressure shrinks that rate linearly: the writer slows to about what flush keeps up with,
    /// and the last spare memtable fills roughly as the oldest flush completes. L0 and
    /// pending-compaction pressure shrink it with the square of the pressure left, so the rate
    /// falls faster as L0 nears its stop trigger: the compaction that drains L0 runs at a lower
    /// CPU priority and only gets a core once writers sleep. Measured (30 s fillrandom and
    /// overwrite of 800 B values, 2 alternating rounds each, 2026-11-27): with a fixed 64 MiB/s
    /// start the slowest second was 64-114k writes (fillrandom) and 73-85k (overwrite), since a
    /// write under L0 pressure at once fell to ~80k/s; this way 189-197k and 181-187k, at the
    /// same or higher throughput (381-392k against 361-362k; 351-375k against 342-355k) and no
    /// stop. Linear in L0 pressure too let L0 reach its stop trigger (a 220 ms stop).
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

    /// Turns the mutable memtable into an immutable one with a fresh WAL, and schedules a flush.
    ///
    /// The old WAL is not synced here: that would stall the writer for as long as the kernel
    /// takes to write a whole memtable's worth of log (~40 ms for 64 MiB on this project's
    /// machine). It is kept open in `closed_wals` instead, so that a later `sync=true` write
    /// syncs it before its own fdatasync, and the new WAL's header names it with its last
    /// sequence number, so that recovery stops before the new WAL if a power loss dropped part
    /// of the old one's tail (a lost suffix, never a hole; docs/durability.md).
    ///
    /// The caller has counted the new memtable in `memtable_budget`; a failed switch uncounts it.
    pub(crate) fn switch_memtable(&self, leader: &mut LeaderState, family: &Family) -> Result<()> {
        let switched = self.switch_wal(leader, true).map(|number| self.retire_memtable(family, number));
        if let Err(e) = &switched {
            family.memtable_budget.remove_memtable();
            leader.wal_failed = true;
            self.set_background_error(e, "creating a WAL");
        }
        switched
    }

    /// For `Db::resume` after a failed WAL append, sync or creation (`LeaderState::wal_failed`):
    /// switches the memtable, even an empty one, to a new WAL and drops the old WAL's writer
    /// without syncing it (nor any WAL in `closed_wals`). The old file stays on disk, never
    /// written again, until the flush of the memtables switched out makes it obsolete: the
    /// flush, not the old WAL, then holds its writes, and recovery no longer replays it, so no
    /// record of a failed write that reached it (a group whose sync failed) can come back beside
    /// the writes that reuse its sequence numbers. No write may go in until that flush is done
    /// (`resume` holds the leader lock throughout).
    pub(crate) fn abandon_wal(&self, leader: &mut LeaderState) -> Result<()> {
        let number = self.switch_wal(leader, false)?;
        for family in self.families.load().iter() {
            // The default family's memtable is switched even when empty, as it always was.
            if family.id == self.default.id || !family.super_version.load().mem.is_empty() {
                // Counted as a flush's switch is: taken even with every memtable slot in use.
                family.memtable_budget.add_memtable(true);
                self.retire_memtable(family, number);
            }
        }
        // The closed WALs' writes are in memtables the same flush covers, and one of them may
        // be the WAL whose fsync failed: none is synced again. (Left listed, one could be until
        // the flush thread drops it, after `resume` has returned.)
        self.closed_wals.lock().clear();
        leader.wal_failed = false;
        Ok(())
    }

    /// Starts a new WAL and returns its number. With `keep_old_wal` a WAL with unsynced
    /// records goes to `closed_wals`, to be synced later; without, it is just closed.
    fn switch_wal(&self, leader: &mut LeaderState, keep_old_wal: bool) -> Result<u64> {
        // The newest WAL that may have lost records in a power loss: this one, or (if it holds
        // no unsynced batch, e.g. only unlogged writes filled its memtable) an older one.
        let (unsynced_wal, unsynced_last_seq) = if leader.wal_unsynced {
            (leader.wal_number, leader.wal_last_seq)
        } else {
            self.closed_wals.lock().last().map_or((0, 0), |w| (w.number, w.last_seq))
        };
        let header = WalHeader {
            prev_wal: leader.wal_number,
            prev_last_seq: leader.wal_last_seq,
            unsynced_wal,
            unsynced_last_seq,
            ..WalHeader::first()
        };
        let number = self.versions.lock().new_file_number();
        let wal = self.create_wal(number, &header)?;
        let old_wal = std::mem::replace(&mut leader.wal, wal);
        if leader.wal_unsynced && keep_old_wal {
            let closed = ClosedWal { number: leader.wal_number, last_seq: leader.wal_last_seq, wal: old_wal };
            self.closed_wals.lock().push(closed);
        }
        leader.wal_number = number;
        leader.wal_unsynced = false;
        leader.wal_last_seq = 0;
        leader.wal_dir_synced = false;
        self.current_wal.store(number, Ordering::Release);
        Ok(number)
    }

    /// Turns `family`'s mutable memtable into an immutable one waiting for flush, whose writes
    /// are all in WALs before `next_log`, and schedules the flush. Under the leader lock.
    fn retire_memtable(&self, family: &Family, next_log: u64) {
        let mut bg = self.bg.lock();
        let sv = family.super_version.load();
        // Sized for as many keys as the full one held: workloads are steady, and a growing
        // index would pause the writer to rehash.
        let mem = Arc::new(MemTable::with_expected_keys(sv.mem.distinct_keys()));
        let old_mem = Arc::clone(&sv.mem);
        let entry_family = self.families.load().get(family.id).cloned();
        if let Some(f) = entry_family {
            bg.imm_queue.push_back(super::background::ImmEntry {
                family: f,
                mem: Arc::clone(&old_mem),
                next_log,
            });
        }
        let mut imm = Vec::with_capacity(sv.imm.len() + 1);
        imm.push(old_mem);
        imm.extend(sv.imm.iter().cloned());
        family.super_version.store(Arc::new(SuperVersion { mem, imm, version: Arc::clone(&sv.version) }));
        self.bg_cv.notify_all();
        drop(bg);
        self.iter_pool.clear();
    }

    /// After a failed WAL append or sync: starts a successor WAL whose header records the last
    /// sequence number acknowledged in the failed one, so that recovery can tell the partial
    /// record a failed append may have left (beyond that point) from damage to acknowledged
    /// records (docs/durability.md, "Torn versus corrupt"). Best effort: if this fails too, the
    /// next open reports such a partial record as corruption, and repair or salvage recovers.
    /// The failed WAL is never written or synced again; `Db::resume` switches away from the
    /// successor as from any WAL.
    fn seal_failed_wal(&self, leader: &mut LeaderState) {
        let header = WalHeader {
            prev_wal: leader.wal_number,
            prev_last_seq: leader.wal_last_seq,
            // Whatever the failed WAL held may not be durable: recovery must not take this
            // header as proof that it was.
            unsynced_wal: leader.wal_number,
            unsynced_last_seq: leader.wal_last_seq,
            ..WalHeader::first()
        };
        let number = self.versions.lock().new_file_number();
        let sealed = self.create_wal(number, &header).and_then(|mut wal| {
            wal.sync()?;
            self.fs.sync_dir(&self.dir)?;
            Ok(wal)
        });
        match sealed {
            Ok(wal) => {
                leader.wal = wal;
                leader.wal_number = number;
                leader.wal_last_seq = 0;
                leader.wal_unsynced = true;
                leader.wal_dir_synced = true;
            }
            Err(e) => {
                tracing::warn!(target: "strata", error = %e, "could not start a WAL after a failed WAL write")
            }
        }
    }

    /// Creates WAL `number` starting with `header`. Its directory entry is made durable later,
    /// by the first `sync=true` write in it (`append_wal`) or at close. A WAL that could not be
    /// started (no space for its header) is removed again if it can be: nothing refers to it,
    /// and a retried switch (`Db::resume`) creates another.
    fn create_wal(&self, number: u64, header: &WalHeader) -> Result<LogWriter> {
        let path = filenames::wal(&self.dir, number);
        let file = self.fs.create(&path)?;
        start_wal(file, header).inspect_err(|_| {
            if let Err(e) = self.fs.remove_file(&path) {
                tracing::warn!(error = %e, "could not remove a WAL that failed to start");
            }
        })
    }

    /// Syncs the WALs closed with unsynced records, oldest first. One that fails stays listed;
    /// the caller puts the database into the error state, so it is never synced again.
    pub(crate) fn sync_closed_wals(&self) -> Result<()> {
        let mut closed = self.closed_wals.lock();
        while let Some(oldest) = closed.first_mut() {
            oldest.wal.sync()?;
            closed.remove(0);
            self.stats.wal_syncs.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Forgets closed WALs below `log_number`: a flush put their records into tables.
    pub(crate) fn drop_flushed_wals(&self, log_number: u64) {
        self.closed_wals.lock().retain(|w| w.number >= log_number);
    }

    /// Syncs every WAL (used at close so `sync=false` writes also survive power loss after close).
    pub(crate) fn sync_wal(&self) -> Result<()> {
        let mut leader = self.leader.lock();
        self.sync_all_wals(&mut leader)
    }

    /// [`Db::sync_wal`](crate::Db::sync_wal): as [`DbInner::sync_wal`], but refused in the error
    /// state, and a failure puts the database into it (a failed sync is never retried).
    pub(crate) fn sync_wal_on_request(&self) -> Result<()> {
        let mut leader = self.leader.lock();
        if let Some(e) = self.background_error() {
            return Err(e);
        }
        self.sync_all_wals(&mut leader).inspect_err(|e| {
            leader.wal_failed = true;
            self.set_background_error(e, "syncing the WAL");
        })
    }

    fn sync_all_wals(&self, leader: &mut LeaderState) -> Result<()> {
        self.make_earlier_writes_durable(leader)?;
        self.sync_current_wal(leader)
    }
}

/// 0 while switching the mutable memtable would leave writes room; once no slot is left for
/// another memtable (of the budget's own, or one the block cache could lend), rising from 0
/// to 1 as the mutable one fills from half to full. Writes then slow down instead of running
/// into a stop that lasts a whole flush (tens to hundreds of ms on two cores, where the
/// writer also takes CPU from that flush). RocksDB delays
/// writes at `max_write_buffer_number - 1` unflushed memtables for the same reason.
/// Measured, 30 s fillrandom of 800 B values, 3 alternating rounds (2026-11-23): without it
/// 355k ops/s median, slowest write 33-106 ms; ramping from empty 338k, 8-42 ms; ramping
/// from half full (this) 341k, 9-19 ms.
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

/// The writer of a newly created WAL file, after appending its header record.
pub(crate) fn start_wal(file: Box<dyn WritableFile>, header: &WalHeader) -> Result<LogWriter> {
    let mut wal = LogWriter::new(file).preallocating(WAL_PREALLOCATION_BYTES);
    let mut record = Vec::with_capacity(crate::wal_header::HEADER_BYTES);
    header.encode_to(&mut record);
    wal.add_record(&record)?;
    Ok(wal)
}

/// Adds every record of `group` to `mem`, numbered from `first_seq`; returns the sequence number
/// after the last. With more than one record, each record's hash slot starts loading
/// [`SLOT_PREFETCH_AHEAD`] records before its insert, so that the slot misses of a batch
/// overlap instead of queueing one behind another. A single-key write prefetched its slot
/// before it queued (`Db::put`), so a group of one record goes straight in.
fn insert_group<M: GroupMember>(mem: &MemTable, group: &[M], first_seq: u64, count: u64) -> Result<u64> {
    let mut seq = first_seq;
    let mut ahead = (count > 1).then(|| group.iter().flat_map(|w| w.batch().records()));
    let mut prefetch_next = || {
        // The hint is read again for every prefetch: a big batch may grow the index midway.
        if let Some(Ok((_, _, key, _))) = ahead.as_mut().and_then(Iterator::next) {
            mem.slot_hint().prefetch(key);
        }
    };
    for _ in 0..SLOT_PREFETCH_AHEAD {
        prefetch_next();
    }
    for rec in group.iter().flat_map(|w| w.batch().records()) {
        prefetch_next();
        let (_, kind, key, value) = rec?;
        mem.add(seq, kind, key, value);
        seq += 1;
    }
    Ok(seq)
}

/// Adds every record of a group that names column families to its family's memtable,
/// numbered from `first_seq`; returns the sequence number after the last. A record of a family
/// no longer in `families` (dropped meanwhile) takes its sequence number and is not applied.
fn insert_group_families<M: GroupMember>(families: &FamilyTable, group: &[M], first_seq: u64) -> Result<u64> {
    let mut seq = first_seq;
    let mut mems: Vec<(u32, Option<arc_swap::Guard<Arc<SuperVersion>>>)> = Vec::new();
    for rec in group.iter().flat_map(|w| w.batch().records()) {
        let (id, kind, key, value) = rec?;
        let at = match mems.iter().position(|(i, _)| *i == id) {
            Some(at) => at,
            None => {
                mems.push((id, families.get(id).map(|f| f.super_version.load())));
                mems.len() - 1
            }
        };
        if let Some(sv) = &mems[at].1 {
            sv.mem.add(seq, kind, key, value);
        }
        seq += 1;
    }
    for (id, sv) in &mems {
        if let (Some(f), Some(sv)) = (families.get(*id), sv) {
            f.slot_hint.publish(sv.mem.slot_hint());
        }
    }
    Ok(seq)
}

fn collect_group(queue: &VecDeque<Arc<Writer>>) -> Vec<Arc<Writer>> {
    let first = &queue[0];
    let mut bytes = 0;
    let mut group = Vec::new();
    for w in queue {
        if w.opts.disable_wal != first.opts.disable_wal
            || (bytes > 0 && bytes + w.batch.size_in_bytes() > MAX_GROUP_BYTES)
        {
            break;
        }
        bytes += w.batch.size_in_bytes();
        group.push(Arc::clone(w));
    }
    group
}

fn encode_group<M: GroupMember>(dst: &mut Vec<u8>, first_seq: u64, count: u64, group: &[M]) {
    dst.clear();
    dst.extend_from_slice(&first_seq.to_le_bytes());
    dst.extend_from_slice(&(count as u32).to_le_bytes());
    debug_assert_eq!(dst.len(), HEADER_LEN);
    for w in group {
        dst.extend_from_slice(w.batch().body());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::ValueKind;

    const MIB: f64 = 1024.0 * 1024.0;

    /// The newest entry of `user_key` in `mem`: (sequence number, kind, value).
    fn newest(mem: &MemTable, user_key: &[u8]) -> Option<(u64, ValueKind, Vec<u8>)> {
        let mut found = None;
        mem.get(&crate::key::seek_key(user_key, crate::key::MAX_SEQ), &mut |ikey, value| {
            let parsed = crate::key::parse(ikey).expect("a well-formed internal key");
            if parsed.user_key == user_key {
                found = Some((parsed.seq, parsed.kind, value.to_vec()));
            }
            false
        });
        found
    }

    #[test]
    fn a_group_goes_in_whole_and_in_order_whatever_the_prefetch_ahead() {
        let opts = WriteOptions::default();
        let mut small = WriteBatch::new();
        small.put(b"a", b"1").delete(b"b").put(b"a", b"2");
        // Enough keys that the hash index grows while this one batch goes in.
        let mut big = WriteBatch::new();
        for i in 0..20_000u32 {
            big.put(format!("key{i:05}").as_bytes(), i.to_le_bytes());
        }
        let mut one = WriteBatch::new();
        one.put(b"z", b"last");
        let group = [
            SoloWriter { batch: &small, opts: &opts },
            SoloWriter { batch: &big, opts: &opts },
            SoloWriter { batch: &one, opts: &opts },
        ];
        let mem = MemTable::with_expected_keys(0);
        let count = 3 + 20_000 + 1;
        assert_eq!(insert_group(&mem, &group, 100, count).unwrap(), 100 + count);
        assert_eq!(mem.num_entries(), count);
        assert_eq!(newest(&mem, b"a"), Some((102, ValueKind::Put, b"2".to_vec())));
        assert_eq!(newest(&mem, b"b"), Some((101, ValueKind::Delete, Vec::new())));
        for i in [0u32, 1, 4, 5, 9_999, 19_999] {
            let want = Some((103 + u64::from(i), ValueKind::Put, i.to_le_bytes().to_vec()));
            assert_eq!(newest(&mem, format!("key{i:05}").as_bytes()), want, "key{i:05}");
        }
        assert_eq!(newest(&mem, b"z"), Some((100 + count - 1, ValueKind::Put, b"last".to_vec())));

        // A group of one record takes the path without the look-ahead.
        let single = MemTable::with_expected_keys(0);
        assert_eq!(insert_group(&single, &group[2..], 7, 1).unwrap(), 8);
        assert_eq!(newest(&single, b"z"), Some((7, ValueKind::Put, b"last".to_vec())));
    }

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
