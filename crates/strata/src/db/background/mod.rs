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
//!
//! Its parts: this file (threads, scheduling, the error state, installing a job's edit),
//! `flush`, `compaction` (picked and manual), `obsolete` (deleting files no version needs).

mod compaction;
mod flush;
mod obsolete;

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::family::Family;
use super::info_log::Level;
use super::{DbInner, SuperVersion};
use crate::compaction::job::Outputs;
use crate::compaction::picker::{self, Compaction};
use crate::error::{Error, Result};
use crate::memtable::MemTable;
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
    /// The version the compaction was picked from rides along until the job ends: while it is
    /// held, `live_files` counts its tables, so a drop of the family (or any later change)
    /// cannot have the job's input files deleted under it.
    Compact(Arc<Family>, Compaction, Arc<Version>),
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
                Work::Compact(family, c, input_version) => {
                    self.run_compaction(&family, &c, false, input_version)
                }
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
                let version = Arc::clone(&family.super_version.load().version);
                if let Some(c) = picker::pick(&version, &family.opts) {
                    bg.compaction_turn = i + 1;
                    bg.compacting = true;
                    return Some(Work::Compact(Arc::clone(family), c, version));
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
    pub(super) fn record_background_error(&self, bg: &mut BgState, e: Error) {
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

    /// Logs a background step that took [`SLOW_STEP`] or longer, so that a flush that starts
    /// late (and the write stop behind it) can be traced to the step that held its thread.
    pub(super) fn log_if_slow(
        &self,
        job_id: Option<u64>,
        what: &str,
        took: Duration,
        detail: fmt::Arguments<'_>,
    ) {
        if took >= SLOW_STEP {
            let micros = took.as_micros();
            match job_id {
                Some(id) => self.log(Level::Warn, format_args!("[JOB {id}] {what} took {micros} us{detail}")),
                None => self.log(Level::Warn, format_args!("{what} took {micros} us{detail}")),
            }
        }
    }

    /// Applies `edit` (and `others`, edits of other families, in the same MANIFEST record) and
    /// publishes `family`'s new super version built by `make`. A family dropped meanwhile gets
    /// nothing installed: the files the edit adds become obsolete.
    pub(super) fn install(
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
        self.table_cache.note_db_bytes(versions.live_bytes());
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
}

/// Runs a flush or compaction; a panic inside it (an application's merge operator, or an engine
/// bug) becomes a `Background` error, which puts the database into its read-only error state,
/// instead of ending the thread with its job flag still set and every writer waiting for it.
pub(super) fn run_job<T>(what: &str, job: impl FnOnce() -> Result<T>) -> Result<T> {
    crate::util::panics::catch_panic(job)
        .unwrap_or_else(|message| Err(Error::background_panic(what, &message)))
}

pub(super) fn edit_for(out: &Outputs, level: usize) -> VersionEdit {
    let mut edit = VersionEdit::default();
    for t in &out.tables {
        edit.new_files.push((level as u32, t.clone()));
    }
    edit.new_blob_files = out.blob_files.clone();
    edit.blob_garbage = out.garbage.iter().map(|(&n, &(c, b))| (n, c, b)).collect();
    edit
}
