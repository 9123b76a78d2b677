//! Flushing: the oldest immutable memtable of any family becomes an L0 table of that family,
//! recorded in the MANIFEST together with the log numbers of idle families (docs/durability.md,
//! "Column families"); and the waits for it. It must not pick or run compactions.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::{edit_for, SuperVersion};
use crate::compaction::job::{self, OutputSpec};
use crate::db::family::Family;
use crate::db::info_log::{Event, Level};
use crate::db::DbInner;
use crate::error::{Error, Result};
use crate::version::edit::VersionEdit;

impl DbInner {
    /// Flushes the oldest immutable memtable to an L0 table.
    pub(super) fn flush_oldest(&self) -> Result<()> {
        let (family, mem, next_log) = {
            let bg = self.bg.lock();
            let e = bg.imm_queue.front().ok_or(Error::Closed)?;
            (Arc::clone(&e.family), Arc::clone(&e.mem), e.next_log)
        };
        if family.is_dropped() {
            self.bg.lock().imm_queue.pop_front();
            family.memtable_budget.remove_memtable();
            self.bg_cv.notify_all();
            return Ok(());
        }
        let start = Instant::now();
        let job_id = self.next_job_id();
        tracing::info!(
            target: "strata",
            job = job_id,
            entries = mem.num_entries(),
            memtable_bytes = mem.approximate_memory_usage() as u64,
            "flush started"
        );
        self.log(
            Level::Info,
            format_args!("[JOB {job_id}] Flushing memtable with {} entries", mem.num_entries()),
        );
        self.log_event(
            Event::new(job_id, "flush_started")
                .string("cf_name", &family.name)
                .num("num_entries", mem.num_entries())
                .num("num_deletes", mem.num_deletes())
                .num("memory_usage", mem.approximate_memory_usage() as u64),
        );
        let spec = OutputSpec {
            level: 0,
            max_file_size: u64::MAX,
            bottommost: false,
            snapshots: self.snapshots.sequences(),
            relocate_blob_files: HashSet::new(),
            scan_runs: 0,
            range_dels: mem.range_tombstones(),
        };
        let mut input = mem.iter();
        let new_file_number = || self.versions.lock().new_file_number();
        let out = job::run(&self.job_env(&family, &new_file_number), &mut input, &spec)?;
        let mut edit = edit_for(&out, 0);
        edit.column_family = family.id;
        edit.log_number = Some(next_log);
        edit.last_sequence = Some(self.last_sequence.load(Ordering::Acquire));
        self.stats.flush_bytes.fetch_add(out.bytes_written, Ordering::Relaxed);
        self.stats.flushes.fetch_add(1, Ordering::Relaxed);
        let idle = self.idle_family_edits(&family)?;
        self.install(&family, edit, idle, |bg, sv, version| {
            bg.imm_queue.pop_front();
            // Before writers waiting for a slot are woken.
            family.memtable_budget.remove_memtable();
            let imm = sv.imm.iter().filter(|m| !Arc::ptr_eq(m, &mem)).cloned().collect();
            SuperVersion { mem: Arc::clone(&sv.mem), imm, version }
        })?;
        let micros = start.elapsed().as_micros() as u64;
        let drained = mem.approximate_memory_usage() as u64 * 1_000_000 / micros.max(1);
        self.flush_rate.store(drained, Ordering::Relaxed);
        tracing::info!(
            target: "strata",
            job = job_id,
            tables = out.tables.len(),
            bytes = out.bytes_written,
            duration_micros = micros,
            "flush finished"
        );
        self.log(
            Level::Info,
            format_args!(
                "[JOB {job_id}] Flush finished: {} tables, {} bytes in {micros} us",
                out.tables.len(),
                out.bytes_written
            ),
        );
        self.log_event(
            Event::new(job_id, "flush_finished")
                .string("cf_name", &family.name)
                .nums("output_files", out.tables.iter().map(|t| t.number))
                .num("bytes_written", out.bytes_written)
                .num("duration_micros", micros)
                .nums("lsm_state", self.lsm_state(&family)),
        );
        self.delete_obsolete_files();
        let released = Instant::now();
        drop(mem);
        self.log_if_slow(
            Some(job_id),
            "releasing the flushed memtable",
            released.elapsed(),
            format_args!(""),
        );
        Ok(())
    }

    /// What a flush of `flushed` must make durable and record besides its own edit, when the
    /// database has other families:
    /// - every closed WAL is synced first: the flushed table holds writes that came after
    ///   other families' writes still only in those WALs, and a power loss that dropped their
    ///   unsynced tails would leave a state that never existed (docs/durability.md);
    /// - each other family whose memtables are empty moves its log number up to the current
    ///   WAL, so that the WALs before it can be deleted.
    fn idle_family_edits(&self, flushed: &Family) -> Result<Vec<VersionEdit>> {
        let families = self.families.load();
        if families.len() == 1 {
            return Ok(Vec::new());
        }
        self.sync_closed_wals()?;
        // Read before looking at the memtables: a write into an empty family after this goes
        // to this WAL or a later one.
        let current_wal = self.current_wal.load(Ordering::Acquire);
        let bg = self.bg.lock();
        let idle = families
            .iter()
            .filter(|f| f.id != flushed.id && !f.is_dropped())
            .filter(|f| f.super_version.load().mem.is_empty())
            .filter(|f| !bg.imm_queue.iter().any(|e| e.family.id == f.id))
            .map(|f| VersionEdit {
                column_family: f.id,
                log_number: Some(current_wal),
                ..VersionEdit::default()
            })
            .collect();
        Ok(idle)
    }

    /// Switches `family`'s memtable (if it holds anything) and waits until every immutable
    /// memtable of it switched before this call is flushed. Memtables that writers fill and
    /// switch meanwhile are not waited for: under a steady writer there always is one, and the
    /// wait would never end.
    pub(crate) fn flush_and_wait(&self, family: &Family) -> Result<()> {
        let newest = {
            let mut leader = self.leader.lock();
            if let Some(e) = self.background_error() {
                return Err(e);
            }
            if family.is_dropped() {
                return Err(crate::db::families::dropped(family));
            }
            if !family.super_version.load().mem.is_empty() {
                // A flush asked for switches even with every memtable slot taken.
                family.memtable_budget.add_memtable(true);
                self.switch_memtable(&mut leader, family)?;
            }
            let bg = self.bg.lock();
            bg.imm_queue.iter().rev().find(|e| e.family.id == family.id).map(|e| Arc::clone(&e.mem))
        };
        let Some(newest) = newest else { return Ok(()) };
        // The queue is flushed in order: once the newest is gone, so are the older ones.
        let mut bg = self.bg.lock();
        while bg.imm_queue.iter().any(|e| Arc::ptr_eq(&e.mem, &newest)) {
            bg.end_of_wait()?;
            self.bg_cv.wait(&mut bg);
        }
        Ok(())
    }

    /// Flushes every family so that their tables hold exactly the writes made before one point,
    /// and runs `capture` (which records the current versions) at that point, with writers held
    /// off. Flushing family by family is not enough for a copy of the whole database: a batch
    /// written across two families between their flushes would land in the tables of one and
    /// the memtable of the other, and the copy would hold half of it (a Raft snapshot would hold
    /// an applied index whose effects are missing). Most of the data is flushed first with
    /// writers free, so they are held off only while what came in meanwhile is flushed.
    pub(crate) fn at_flushed_cut<T>(&self, capture: impl FnOnce() -> Result<T>) -> Result<T> {
        self.flush_all_and_wait()?;
        let mut leader = self.leader.lock();
        if let Some(e) = self.background_error() {
            return Err(e);
        }
        for family in self.families.load_full().iter() {
            if !family.is_dropped() && !family.super_version.load().mem.is_empty() {
                family.memtable_budget.add_memtable(true);
                self.switch_memtable(&mut leader, family)?;
            }
        }
        // Flushes run without the leader lock (a writer stalled on a full memtable holds it too).
        let mut bg = self.bg.lock();
        while !bg.imm_queue.is_empty() {
            bg.end_of_wait()?;
            self.bg_cv.wait(&mut bg);
        }
        drop(bg);
        let captured = capture();
        drop(leader);
        captured
    }

    /// [`DbInner::flush_and_wait`] for every family.
    pub(crate) fn flush_all_and_wait(&self) -> Result<()> {
        let families = self.families.load_full();
        // A family dropped since the load has nothing left to flush; its refusal is not an
        // error of this whole-database flush (a checkpoint would fail for a family it never named).
        let flushed = families.iter().try_for_each(|f| match self.flush_and_wait(f) {
            Err(Error::InvalidArgument(_)) if f.is_dropped() => Ok(()),
            r => r,
        });
        flushed
    }
}
