//! The write path: group commit. Writers queue up; the writer at the front becomes the leader,
//! takes every compatible write behind it (same `disable_wal`, at most `MAX_GROUP_BYTES`),
//! assigns consecutive sequence numbers, appends ONE WAL record for the whole group, issues at
//! most one fdatasync (if any member asked for `sync`), inserts into the memtables of the
//! families the group writes to, publishes the new last sequence, and wakes the group. WAL order
//! = sequence order = visibility order. Only the leader touches the WAL and the mutable
//! memtables, under `leader`. The WAL record format is the write batch format with the group's
//! first sequence number and total count in the header.
//!
//! Its parts: this file (the queue, the leader and the WAL append), `insert` (a group into
//! memtables), `pressure` (slowdowns and stops before a group goes in), `wal_lifecycle`
//! (memtable switches, new WALs, closed WALs and their syncs). It must not flush or compact:
//! a switch hands the old memtable to `background`.
//!
//! A writer that finds no leader and nobody queued is a group of one and skips the queue: it
//! marks the queue `solo` (so writers arriving meanwhile queue up behind it), writes its batch
//! from the caller's stack, and wakes the queue when done (the single-threaded case).
//!
//! Synced writes gather: a group's fdatasync is the whole cost of a synced write, so when the
//! last synced group found N writers queued, the next synced leader waits (at most
//! `Options::sync_gather_micros`) until N are queued again before it takes its group, and a
//! synced writer does not go solo while N > 1. A leader that waits in vain lowers N to what it
//! found, so a burst of concurrency costs at most one wasted wait afterwards.
//!
//! Waits spin before they block (`Options::write_spin_micros`, `util::spin`): a queued writer
//! watches `WriteQueue::wakeups` and a gathering leader watches `WriteQueue::queued`, both
//! unlocked and yielding the CPU between looks, then blocks on its condition variable if the
//! spin ran out. The measurements behind each choice are in docs/performance.md ("Synced
//! writers gather", "Queued writers spin before they block", "Synced writes").

mod insert;
mod pressure;
mod wal_lifecycle;

pub(crate) use wal_lifecycle::{start_wal, ClosedWal};

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

use super::DbInner;
use crate::batch::{WriteBatch, HEADER_LEN};
use crate::db::info_log::StallReason;
use crate::error::{Error, Result};
use crate::options::WriteOptions;
use crate::util::kill_point::kill_point;
use crate::util::sleep::SleepTimer;
use crate::util::spin::AdaptiveSpin;
use crate::wal::LogWriter;
use crate::wal_header::RecordFlags;
use insert::{insert_group, insert_group_families, touched_families};

/// A group is cut once it holds this many bytes, bounding the latency a leader adds.
const MAX_GROUP_BYTES: usize = 1 << 20;

pub(crate) struct Writer {
    batch: WriteBatch,
    opts: WriteOptions,
    result: Mutex<Option<Result<()>>>,
}

/// One write of a group: a queued [`Writer`] or a solo writer's own batch.
pub(super) trait GroupMember {
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
pub(super) struct SoloWriter<'a> {
    pub(super) batch: &'a WriteBatch,
    pub(super) opts: &'a WriteOptions,
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
    /// The WALs closed since the oldest one some family still needs, with their sizes
    /// (`wal_lifecycle::limit_live_wals`).
    closed_wal_bytes: VecDeque<(u64, u64)>,
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
            closed_wal_bytes: VecDeque::new(),
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

    /// Writes `batch` as a group of its own after `check` passes, with no other write committed
    /// between the check and the batch: `check` runs under the leader lock, after every earlier
    /// write is in the memtables and before this batch takes its sequence numbers (a
    /// transaction's conflict check). Nothing is written when `check` fails.
    pub(crate) fn write_checked(
        &self,
        opts: &WriteOptions,
        batch: &WriteBatch,
        check: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        if batch.is_empty() {
            // Nothing to write, but the check still runs with no write committing beside it.
            let _leader = self.leader.lock();
            return check();
        }
        let solo = [SoloWriter { batch, opts }];
        let mut leader = self.leader.lock();
        self.timed(&self.stats.write_latency, || self.write_group_locked(&mut leader, &solo, Some(check)))
    }

    fn write_group<M: GroupMember>(&self, group: &[M]) -> Result<()> {
        let mut leader = self.leader.lock();
        self.write_group_locked(&mut leader, group, None)
    }

    fn write_group_locked<M: GroupMember>(
        &self,
        leader: &mut LeaderState,
        group: &[M],
        check: Option<&mut dyn FnMut() -> Result<()>>,
    ) -> Result<()> {
        let group_bytes: usize = group.iter().map(|w| w.batch().size_in_bytes()).sum();
        let with_families = group.iter().any(|w| w.batch().has_families());
        // Loaded under the leader lock: families are created and dropped under it too.
        let families = self.families.load();
        if families.len() > 1 {
            self.limit_live_wals(leader, &families)?;
        }
        if with_families {
            for family in touched_families(&families, group) {
                self.make_room_for_write(leader, family, group_bytes)?;
            }
        } else {
            self.make_room_for_write(leader, &self.default, group_bytes)?;
        }
        let first_seq = self.last_sequence.load(Ordering::Relaxed) + 1;
        let count: u64 = group.iter().map(|w| w.batch().len() as u64).sum();
        if let Some(check) = check {
            check()?;
        }
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
