//! Background work: flushing immutable memtables, running compactions, deleting obsolete files,
//! and the background-error state. At most one flush and one compaction run at a time (flushes
//! must land in L0 in memtable order, and one compaction at a time keeps inputs disjoint). With
//! `max_background_jobs` >= 2, one thread runs flushes and the others compactions, at
//! `compaction_nice` (or under `SCHED_IDLE`, `compaction_sched_idle`); with one thread, it runs
//! both, a flush always first.
//!
//! A failed flush or compaction puts the database into a read-only error state: writes return
//! the error, reads keep working, and reopening recovers from the WAL and MANIFEST, or
//! `Db::resume` clears a retryable error (`resume.rs`). While a resume runs, the error stays
//! set and no compaction starts, but flushes run again; a job that fails meanwhile replaces the
//! error and ends the resume.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::family::Family;
use super::info_log::{Event, Level};
use super::{filenames, DbInner, SuperVersion};
use crate::compaction::job::{self, OutputSpec, Outputs};
use crate::compaction::picker::{self, Compaction};
use crate::error::{Error, Result};
use crate::iter::merging::MergingIterator;
use crate::iter::InternalIterator;
use crate::memtable::MemTable;
use crate::options::NUM_LEVELS;
use crate::util::kill_point::kill_point;
use crate::version::edit::VersionEdit;
use crate::version::version::Version;

/// An immutable memtable waiting for flush, with its family and the WAL that was started
/// after it.
pub(crate) struct ImmEntry {
    pub family: Arc<Family>,
    pub mem: Arc<MemTable>,
    pub next_log: u64,
}

/// Background scheduling state, under `DbInner::bg`.
#[derive(Default)]
pub(crate) struct BgState {
    /// Immutable memtables of every family, oldest first.
    pub imm_queue: VecDeque<ImmEntry>,
    /// Where the next search for a family that needs compaction starts, so that one busy
    /// family does not starve the others.
    pub compaction_turn: usize,
    pub flushing: bool,
    pub compacting: bool,
    pub manual_waiting: usize,
    /// The error that made the database read-only: always an `Error::Background`.
    pub error: Option<Error>,
    /// `Db::resume` is retrying the failed work: flushes run despite `error`, and a job that
    /// fails replaces `error` and clears this flag, which is how the resume learns of it.
    pub resuming: bool,
    pub shutting_down: bool,
    pub threads: Vec<JoinHandle<()>>,
    /// Files removed from the version, to delete once no reader holds them.
    pub obsolete_tables: Vec<u64>,
    pub obsolete_blobs: Vec<u64>,
}

impl BgState {
    /// Err when a caller waiting for background work must stop: the database went into the
    /// error state, or is closing, so the work it waits for may never run.
    fn end_of_wait(&self) -> Result<()> {
        if let Some(e) = &self.error {
            return Err(e.duplicate());
        }
        if self.shutting_down {
            return Err(Error::Closed);
        }
        Ok(())
    }
}

enum Work {
    Flush,
    Compact(Arc<Family>, Compaction),
}

/// Stops background work when the last `Db` clone is dropped.
pub(crate) struct Closer {
    inner: Arc<DbInner>,
}

impl Drop for Closer {
    fn drop(&mut self) {
        // Writes made with disable_wal exist only in memtables: flush them so a clean close
        // loses nothing (RocksDB does the same unless avoid_flush_during_shutdown is set).
        if self.inner.unpersisted_writes.load(Ordering::Acquire) && self.inner.background_error().is_none() {
            if let Err(e) = self.inner.flush_all_and_wait() {
                tracing::warn!(error = %e, "flushing unlogged writes at close failed");
            }
        }
        let threads = {
            let mut bg = self.inner.bg.lock();
            bg.shutting_down = true;
            self.inner.closing.store(true, Ordering::Relaxed);
            self.inner.bg_cv.notify_all();
            std::mem::take(&mut bg.threads)
        };
        for t in threads {
            let _ = t.join();
        }
        // `closing` is set: iterators dropped from now on keep nothing, so this sweep leaves
        // no reference that would keep the database alive after its last iterator.
        self.inner.iter_pool.close();
        self.inner.log(Level::Info, format_args!("Shutdown: background work stopped"));
        // After a failed WAL write or sync the log's tail is unknown: a sync now could not be
        // trusted and is not retried (docs/durability.md).
        if self.inner.background_error().is_none() && !self.inner.read_only {
            if let Err(e) = self.inner.sync_wal() {
                tracing::warn!(error = %e, "syncing the WAL at close failed");
            }
        }
    }
}

/// Starts the background threads.
pub(crate) fn start(inner: &Arc<DbInner>) -> Arc<Closer> {
    let mut threads = Vec::new();
    let jobs = if inner.read_only { 0 } else { inner.opts.max_background_jobs };
    for i in 0..jobs {
        let db = Arc::clone(inner);
        let (role, name) = match (jobs, i) {
            (1, _) => (Role::Any, "strata-bg".to_string()),
            (_, 0) => (Role::Flushes, "strata-flush".to_string()),
            _ => (Role::Compactions, format!("strata-comp-{i}")),
        };
        let spawned = std::thread::Builder::new().name(name).spawn(move || db.background_loop(role));
        match spawned {
            Ok(t) => threads.push(t),
            Err(e) => tracing::error!(error = %e, "could not start a background thread"),
        }
    }
    inner.bg.lock().threads = threads;
    inner.bg_cv.notify_all();
    inner.log_open();
    Arc::new(Closer { inner: Arc::clone(inner) })
}

/// A background step at least this long is logged (`LOG`, WARN) with what it did.
const SLOW_STEP: Duration = Duration::from_millis(50);

/// What a background thread runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    /// Flushes first, then compactions: the only background thread.
    Any,
    Flushes,
    Compactions,
}

/// Lowers the calling thread's CPU priority to `nice`, or to the `SCHED_IDLE` policy when
/// `idle` (a thread may always lower its own; on Linux both are per thread). Failure only costs
/// the priority, so it is logged.
fn lower_priority(nice: u8, idle: bool) {
    #[cfg(target_os = "linux")]
    if idle {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: pid 0 is the calling thread, and `param` is a valid, initialised
        // `sched_param` that outlives the call, which only reads it.
        let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            tracing::warn!(error = %e, "could not put the compaction thread under SCHED_IDLE");
        }
        return;
    }
    #[cfg(not(target_os = "linux"))]
    let _ = idle;
    #[cfg(target_os = "linux")]
    if nice > 0 {
        let tid = rustix::thread::gettid();
        if let Err(e) = rustix::process::setpriority_process(Some(tid), i32::from(nice)) {
            tracing::warn!(error = %e, nice, "could not lower the compaction thread's priority");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}

impl DbInner {
    fn background_loop(&self, role: Role) {
        if role == Role::Compactions {
            lower_priority(self.opts.compaction_nice, self.opts.compaction_sched_idle);
        }
        loop {
            let work = {
                let mut bg = self.bg.lock();
                loop {
                    if bg.shutting_down {
                        return;
                    }
                    if let Some(w) = self.next_work(&mut bg, role) {
                        break w;
                    }
                    self.bg_cv.wait(&mut bg);
                }
            };
            let flush = matches!(work, Work::Flush);
            let what = if flush { "flush" } else { "compaction" };
            let result = run_job(what, || match work {
                Work::Flush => self.flush_oldest(),
                Work::Compact(family, c) => self.run_compaction(&family, &c, false),
            });
            let mut bg = self.bg.lock();
            if flush {
                bg.flushing = false;
            } else {
                bg.compacting = false;
            }
            if let Err(e) = result {
                if !matches!(e, Error::Closed) {
                    tracing::error!(error = %e, what, "background job failed; database is now read-only");
                    self.log_background_error(what, &e);
                    self.record_background_error(&mut bg, Error::background(what, e));
                }
            }
            self.bg_cv.notify_all();
        }
    }

    fn next_work(&self, bg: &mut BgState, role: Role) -> Option<Work> {
        // In the error state nothing runs, except the flushes a resume waits for.
        if bg.error.is_some() && !bg.resuming {
            return None;
        }
        if role != Role::Compactions && !bg.flushing && !bg.imm_queue.is_empty() {
            bg.flushing = true;
            return Some(Work::Flush);
        }
        if bg.error.is_none() && role != Role::Flushes && !bg.compacting && bg.manual_waiting == 0 {
            let families: Vec<Arc<Family>> = self.families.load().iter().cloned().collect();
            let n = families.len().max(1);
            let start = bg.compaction_turn % n;
            for (i, family) in families.iter().enumerate().cycle().skip(start).take(n) {
                if let Some(c) = picker::pick(&family.super_version.load().version, &family.opts) {
                    bg.compaction_turn = i + 1;
                    bg.compacting = true;
                    return Some(Work::Compact(Arc::clone(family), c));
                }
            }
        }
        None
    }

    /// Whether any family's picker would start a compaction now.
    fn compaction_due(&self) -> bool {
        let families = self.families.load();
        let due = families.iter().any(|f| picker::pick(&f.super_version.load().version, &f.opts).is_some());
        due
    }

    /// Records a failure of `what` that makes the database read-only.
    pub(crate) fn set_background_error(&self, e: &Error, what: &str) {
        tracing::error!(error = %e, what, "database is now read-only");
        self.log_background_error(what, e);
        self.record_background_error(&mut self.bg.lock(), Error::background(what, e.duplicate()));
        self.bg_cv.notify_all();
    }

    /// Keeps `e` (an `Error::Background`) as the background error unless one is already kept;
    /// the only way one is set. During a resume the new failure replaces the one being retried
    /// and ends the resume.
    fn record_background_error(&self, bg: &mut BgState, e: Error) {
        if std::mem::take(&mut bg.resuming) {
            bg.error = Some(e);
        } else {
            bg.error.get_or_insert(e);
        }
        self.has_background_error.store(true, Ordering::Release);
    }

    /// The error that made the database read-only, if any.
    pub(crate) fn background_error(&self) -> Option<Error> {
        if !self.has_background_error.load(Ordering::Acquire) {
            return None;
        }
        self.bg.lock().error.as_ref().map(Error::duplicate)
    }

    /// Flushes the oldest immutable memtable to an L0 table.
    fn flush_oldest(&self) -> Result<()> {
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
                .nums("output_files", out.tables.iter().map(|t| t.number))
                .num("bytes_written", out.bytes_written)
                .num("duration_micros", micros)
                .nums("lsm_state", self.lsm_state()),
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

    /// Logs a background step that took [`SLOW_STEP`] or longer, so that a flush that starts
    /// late (and the write stop behind it) can be traced to the step that held its thread.
    fn log_if_slow(&self, job_id: Option<u64>, what: &str, took: Duration, detail: fmt::Arguments<'_>) {
        if took >= SLOW_STEP {
            let micros = took.as_micros();
            match job_id {
                Some(id) => self.log(Level::Warn, format_args!("[JOB {id}] {what} took {micros} us{detail}")),
                None => self.log(Level::Warn, format_args!("{what} took {micros} us{detail}")),
            }
        }
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

    /// Applies `edit` (and `others`, edits of other families, in the same MANIFEST record) and
    /// publishes `family`'s new super version built by `make`. A family dropped meanwhile gets
    /// nothing installed: the files the edit adds become obsolete.
    fn install(
        &self,
        family: &Family,
        edit: VersionEdit,
        others: Vec<VersionEdit>,
        make: impl FnOnce(&mut BgState, &SuperVersion, Arc<Version>) -> SuperVersion,
    ) -> Result<()> {
        // A trivially moved file is deleted from one level and added to another: not obsolete.
        let moved: HashSet<u64> = edit.new_files.iter().map(|(_, f)| f.number).collect();
        let deleted_tables: Vec<u64> =
            edit.deleted_files.iter().map(|&(_, n)| n).filter(|n| !moved.contains(n)).collect();
        let deleted_blobs = edit.deleted_blob_files.clone();
        // Open the new files before any reader can see them, so that the first read of each does
        // not pay on its own thread for reading the footer and pinning the index and filter
        // (about a millisecond per 64 MiB table); RocksDB's flush and compaction jobs open their
        // outputs too. A new file that cannot be opened fails the job rather than reach a version.
        for (_, file) in &edit.new_files {
            self.table_cache.table(file.number)?;
        }
        for blob in &edit.new_blob_files {
            self.table_cache.blob(blob.number)?;
        }
        let start = Instant::now();
        let mut versions = self.versions.lock();
        let locked = start.elapsed();
        if family.is_dropped() {
            let mut bg = self.bg.lock();
            bg.obsolete_tables.extend(edit.new_files.iter().map(|(_, f)| f.number));
            bg.obsolete_blobs.extend(edit.new_blob_files.iter().map(|b| b.number));
            let sv = family.super_version.load();
            let _ = make(&mut bg, &sv, Arc::clone(&sv.version));
            self.bg_cv.notify_all();
            return Ok(());
        }
        let live = versions.families();
        let mut edits = vec![edit];
        edits.extend(others.into_iter().filter(|e| live.contains_key(&e.column_family)));
        let version = versions.log_and_apply_group(edits)?.swap_remove(0);
        self.log_if_slow(
            None,
            "writing a version edit to the MANIFEST",
            start.elapsed(),
            format_args!(" ({} us waiting for the versions lock)", locked.as_micros()),
        );
        let mut bg = self.bg.lock();
        let sv = family.super_version.load();
        let next = make(&mut bg, &sv, version);
        family.super_version.store(Arc::new(next));
        bg.obsolete_tables.extend(deleted_tables);
        bg.obsolete_blobs.extend(deleted_blobs);
        self.bg_cv.notify_all();
        drop(bg);
        drop(versions);
        // Outside the locks: a pooled iterator may hold the last reference to a flushed
        // memtable, and freeing it takes a while.
        self.iter_pool.clear();
        Ok(())
    }

    /// Runs one compaction; `manual` relocates every blob file that holds any garbage.
    pub(crate) fn run_compaction(&self, family: &Family, c: &Compaction, manual: bool) -> Result<()> {
        let start = Instant::now();
        let job_id = self.next_job_id();
        let input_bytes = c.input_bytes();
        tracing::info!(
            target: "strata",
            job = job_id,
            level = c.level,
            output_level = c.output_level,
            inputs = c.inputs.len() + c.output_inputs.len(),
            bytes_in = input_bytes,
            trivial_move = c.trivial_move,
            manual,
            "compaction started"
        );
        self.log(
            Level::Info,
            format_args!(
                "[JOB {job_id}] Compacting {}@{} + {}@{} files to L{}, {input_bytes} bytes{}",
                c.inputs.len(),
                c.level,
                c.output_inputs.len(),
                c.output_level,
                c.output_level,
                if c.trivial_move { " (trivial move)" } else { "" }
            ),
        );
        self.log_event(
            Event::new(job_id, "compaction_started")
                .num("level", c.level as u64)
                .num("output_level", c.output_level as u64)
                .nums("files_L", c.inputs.iter().map(|f| f.number))
                .nums("files_output_level", c.output_inputs.iter().map(|f| f.number))
                .num("input_data_size", input_bytes)
                .boolean("trivial_move", c.trivial_move)
                .boolean("manual", manual),
        );
        let mut bytes_out = 0;
        let mut output_files: Vec<u64> = Vec::new();
        let mut edit = VersionEdit { column_family: family.id, ..VersionEdit::default() };
        for (level, f) in c.all_inputs() {
            edit.deleted_files.push((level as u32, f.number));
        }
        if c.trivial_move {
            for f in &c.inputs {
                edit.new_files.push((c.output_level as u32, (**f).clone()));
            }
            self.stats.trivial_moves.fetch_add(1, Ordering::Relaxed);
        } else {
            let version = family.super_version.load().version.clone();
            let spec = OutputSpec {
                level: c.output_level,
                max_file_size: family.opts.target_file_size,
                bottommost: c.bottommost,
                snapshots: self.snapshots.sequences(),
                relocate_blob_files: blob_files_to_relocate(&version, family.opts.blob_gc_age_cutoff, manual),
            };
            let mut input = self.compaction_input(c)?;
            let new_file_number = || self.versions.lock().new_file_number();
            let out = job::run(&self.job_env(family, &new_file_number), &mut input, &spec)?;
            bytes_out = out.bytes_written;
            output_files.extend(out.tables.iter().map(|t| t.number));
            let out_edit = edit_for(&out, c.output_level);
            edit.new_files.extend(out_edit.new_files);
            edit.new_blob_files.extend(out_edit.new_blob_files);
            edit.blob_garbage.extend(out_edit.blob_garbage);
            // Pointers into a blob file no version lists (repair moved a damaged one to lost/)
            // have no file to count garbage against: the MANIFEST would reject the edit.
            edit.blob_garbage.retain(|(n, ..)| version.blob_files.contains_key(n));
            edit.deleted_blob_files = fully_garbage_blob_files(&version, &edit.blob_garbage);
            self.stats.compaction_bytes_read.fetch_add(c.input_bytes(), Ordering::Relaxed);
            self.stats.compaction_bytes_written.fetch_add(out.bytes_written, Ordering::Relaxed);
        }
        self.stats.compactions.fetch_add(1, Ordering::Relaxed);
        self.install(family, edit, Vec::new(), |_, sv, version| SuperVersion {
            mem: Arc::clone(&sv.mem),
            imm: sv.imm.clone(),
            version,
        })?;
        let micros = start.elapsed().as_micros() as u64;
        if c.trivial_move {
            output_files.extend(c.inputs.iter().map(|f| f.number));
        }
        tracing::info!(
            target: "strata",
            job = job_id,
            level = c.level,
            output_level = c.output_level,
            bytes_in = if c.trivial_move { 0 } else { input_bytes },
            bytes_out,
            output_files = output_files.len(),
            trivial_move = c.trivial_move,
            duration_micros = micros,
            "compaction finished"
        );
        self.log(
            Level::Info,
            format_args!(
                "[JOB {job_id}] Compaction finished to L{}: {} files, {} bytes read, {bytes_out} bytes written in {micros} us{}",
                c.output_level,
                output_files.len(),
                if c.trivial_move { 0 } else { input_bytes },
                if c.trivial_move { " (trivial move)" } else { "" }
            ),
        );
        self.log_event(
            Event::new(job_id, "compaction_finished")
                .num("output_level", c.output_level as u64)
                .nums("output_files", output_files.iter().copied())
                .num("bytes_read", if c.trivial_move { 0 } else { input_bytes })
                .num("bytes_written", bytes_out)
                .boolean("trivial_move", c.trivial_move)
                .num("duration_micros", micros)
                .nums("lsm_state", self.lsm_state()),
        );
        self.delete_obsolete_files();
        Ok(())
    }

    fn compaction_input(&self, c: &Compaction) -> Result<MergingIterator> {
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        for (_, f) in c.all_inputs() {
            children.push(Box::new(self.table_cache.table(f.number)?.iter_whole_file()));
        }
        Ok(MergingIterator::new(children))
    }

    /// Deletes files no version references any more: flushed WALs, old MANIFESTs, and tables
    /// and blob files removed by compaction once no reader holds a version that lists them.
    pub(crate) fn delete_obsolete_files(&self) {
        let start = Instant::now();
        // The live set and the obsolete lists are read under the versions lock: every install
        // adds to the lists while holding it, so no file listed here can have joined a version
        // after the live set was computed (a moved file is live again at its new level).
        let (tables, blobs, log_number, manifest, locked) = {
            let v = self.versions.lock();
            let locked = start.elapsed();
            let (live_tables, live_blobs) = v.live_files();
            let mut bg = self.bg.lock();
            let tables: Vec<u64> = std::mem::take(&mut bg.obsolete_tables);
            let blobs: Vec<u64> = std::mem::take(&mut bg.obsolete_blobs);
            let (dead_t, keep_t): (Vec<u64>, Vec<u64>) =
                tables.into_iter().partition(|n| !live_tables.contains(n));
            let (dead_b, keep_b): (Vec<u64>, Vec<u64>) =
                blobs.into_iter().partition(|n| !live_blobs.contains(n));
            bg.obsolete_tables = keep_t;
            bg.obsolete_blobs = keep_b;
            (dead_t, dead_b, v.log_number(), v.manifest_number(), locked)
        };
        self.drop_flushed_wals(log_number);
        let deleted = (tables.len(), blobs.len());
        for n in tables {
            self.table_cache.evict(n);
            kill_point("obsolete.delete.table");
            self.remove(&filenames::table(&self.dir, n));
        }
        for n in blobs {
            self.table_cache.evict(n);
            kill_point("obsolete.delete.blob");
            self.remove(&filenames::blob(&self.dir, n));
        }
        let Ok(names) = self.fs.list_dir(&self.dir) else { return };
        for name in names {
            match filenames::parse(&name) {
                Some((filenames::FileKind::Wal, n)) if n < log_number => kill_point("obsolete.delete.wal"),
                Some((filenames::FileKind::Manifest, n)) if n < manifest => {
                    kill_point("obsolete.delete.manifest")
                }
                _ => continue,
            }
            self.remove(&self.dir.join(&name));
        }
        self.log_if_slow(
            None,
            "deleting obsolete files",
            start.elapsed(),
            format_args!(
                " ({} tables and {} blob files; {} us waiting for the versions lock)",
                deleted.0,
                deleted.1,
                locked.as_micros()
            ),
        );
    }

    fn remove(&self, path: &std::path::Path) {
        if let Err(e) = self.fs.remove_file(path) {
            tracing::warn!(error = %e, "could not delete an obsolete file");
        }
    }

    /// Switches `family`'s memtable (if it holds anything) and waits until every immutable
    /// memtable of it is flushed.
    pub(crate) fn flush_and_wait(&self, family: &Family) -> Result<()> {
        {
            let mut leader = self.leader.lock();
            if let Some(e) = self.background_error() {
                return Err(e);
            }
            if family.is_dropped() {
                return Err(super::families::dropped(family));
            }
            if !family.super_version.load().mem.is_empty() {
                // A flush asked for switches even with every memtable slot taken.
                family.memtable_budget.add_memtable(true);
                self.switch_memtable(&mut leader, family)?;
            }
        }
        let mut bg = self.bg.lock();
        while bg.imm_queue.iter().any(|e| e.family.id == family.id) {
            bg.end_of_wait()?;
            self.bg_cv.wait(&mut bg);
        }
        Ok(())
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

    /// Waits until the background work that is due has run: no immutable memtable
    /// waits for its flush, no flush or compaction runs, and the picker would start none.
    /// Returns false if `deadline` passes first. A handle without background threads (read-only)
    /// has nothing to wait for.
    pub(crate) fn wait_for_background_work(&self, deadline: Option<Instant>) -> Result<bool> {
        let mut bg = self.bg.lock();
        if bg.threads.is_empty() {
            return Ok(true);
        }
        loop {
            bg.end_of_wait()?;
            let idle = bg.imm_queue.is_empty() && !bg.flushing && !bg.compacting && !self.compaction_due();
            if idle {
                return Ok(true);
            }
            match deadline {
                Some(d) => {
                    if self.bg_cv.wait_until(&mut bg, d).timed_out() {
                        return Ok(false);
                    }
                }
                None => self.bg_cv.wait(&mut bg),
            }
        }
    }

    /// Compacts every level's files overlapping `[start, end]` into the level below, top-down,
    /// until the data sits in the last level.
    pub(crate) fn compact_range(
        &self,
        family: &Family,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<()> {
        {
            let mut bg = self.bg.lock();
            bg.manual_waiting += 1;
            while bg.compacting && bg.error.is_none() {
                self.bg_cv.wait(&mut bg);
            }
            bg.manual_waiting -= 1;
            if let Some(e) = &bg.error {
                return Err(e.duplicate());
            }
            bg.compacting = true;
        }
        let result = run_job("manual compaction", || self.compact_levels(family, start, end));
        self.delete_obsolete_files();
        let mut bg = self.bg.lock();
        bg.compacting = false;
        self.bg_cv.notify_all();
        if let Err(e) = &result {
            // A family dropped while it was compacted only ends this call: nothing is wrong
            // with the database, which must stay writable.
            let dropped = family.is_dropped() && matches!(e, Error::InvalidArgument(_));
            if !matches!(e, Error::Closed) && !dropped {
                self.log_background_error("manual compaction", e);
                self.record_background_error(&mut bg, Error::background("manual compaction", e.duplicate()));
            }
        }
        result
    }

    fn compact_levels(&self, family: &Family, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        let last = NUM_LEVELS - 1;
        for level in 0..last {
            if family.is_dropped() {
                return Err(super::families::dropped(family));
            }
            let version = family.super_version.load().version.clone();
            let inputs =
                if level == 0 { version.files[0].clone() } else { version.overlapping(level, start, end) };
            if inputs.is_empty() {
                continue;
            }
            if let Some(c) = picker::compaction_for(&version, level, level + 1, inputs) {
                self.run_compaction(family, &c, false)?;
            }
        }
        // Rewrite the last level in place so tombstones and blob garbage are dropped.
        let version = family.super_version.load_full().version.clone();
        let inputs = version.overlapping(last, start, end);
        let chosen =
            if inputs.is_empty() { None } else { picker::compaction_for(&version, last, last, inputs) };
        drop(version);
        if let Some(mut c) = chosen {
            c.trivial_move = false;
            self.run_compaction(family, &c, true)?;
        }
        Ok(())
    }
}

/// Runs a flush or compaction; a panic inside it (an application's merge operator, or an engine
/// bug) becomes a `Background` error, which puts the database into its read-only error state,
/// instead of ending the thread with its job flag still set and every writer waiting for it.
fn run_job<T>(what: &str, job: impl FnOnce() -> Result<T>) -> Result<T> {
    crate::util::panics::catch_panic(job)
        .unwrap_or_else(|message| Err(Error::background_panic(what, &message)))
}

fn edit_for(out: &Outputs, level: usize) -> VersionEdit {
    let mut edit = VersionEdit::default();
    for t in &out.tables {
        edit.new_files.push((level as u32, t.clone()));
    }
    edit.new_blob_files = out.blob_files.clone();
    edit.blob_garbage = out.garbage.iter().map(|(&n, &(c, b))| (n, c, b)).collect();
    edit
}

/// Blob files whose live values a compaction should rewrite: for a manual compaction every file
/// holding garbage, otherwise files in the oldest `age_cutoff` fraction that are at least a
/// quarter garbage, and any file that is mostly garbage.
fn blob_files_to_relocate(v: &Version, age_cutoff: f64, manual: bool) -> HashSet<u64> {
    let n = v.blob_files.len();
    let old = (n as f64 * age_cutoff).ceil() as usize;
    v.blob_files
        .values()
        .enumerate()
        .filter(|(i, s)| {
            let ratio = s.garbage_bytes as f64 / s.meta.total_bytes.max(1) as f64;
            (manual && s.garbage_count > 0) || ratio >= 0.75 || (*i < old && ratio >= 0.25)
        })
        .map(|(_, s)| s.meta.number)
        .collect()
}

/// Blob files that become entirely garbage once `garbage` is added.
fn fully_garbage_blob_files(v: &Version, garbage: &[(u64, u64, u64)]) -> Vec<u64> {
    garbage
        .iter()
        .filter(|&&(n, count, _)| {
            v.blob_files.get(&n).is_some_and(|s| s.garbage_count + count >= s.meta.total_count)
        })
        .map(|&(n, _, _)| n)
        .collect()
}
