//! `Db::resume`: leaving the read-only error state after a retryable background error (a full
//! disk), as RocksDB's `DB::Resume`. This module decides whether an error may be cleared and
//! orders the steps that make clearing it safe. It must not append to or sync a WAL whose write
//! or sync failed (after a failed fsync its unsynced pages may be gone: docs/durability.md,
//! "Assumptions"), and must not let a write in before the work it retries has succeeded.
//!
//! The steps, all under the leader lock, so that no write, WAL sync or memtable switch runs in
//! between and a second `resume` waits for the first:
//! 1. No error: done. An error that is not retryable (`Error::is_retryable`: corruption, a
//!    panic, an IO error such as EIO) is returned unchanged.
//! 2. The error stays set, so writes are still refused, but `BgState::resuming` lets flushes run.
//! 3. After a failed WAL append, sync or creation (`LeaderState::wal_failed`), the memtable is
//!    switched to a new WAL and the old one is abandoned (`DbInner::abandon_wal`).
//! 4. Every immutable memtable is flushed: the one a failed flush left behind, and after a WAL
//!    failure everything that was in the abandoned WAL. A failed compaction has nothing to
//!    wait for: clearing the error lets the picker schedule it again.
//! 5. If a job failed meanwhile, its error replaces the old one and is returned (still
//!    read-only); otherwise the error is cleared.

use std::sync::atomic::Ordering;

use super::info_log::{Event, Level};
use super::write::LeaderState;
use super::DbInner;
use crate::error::{Error, Result};

impl DbInner {
    /// [`Db::resume`](crate::Db::resume).
    pub(crate) fn resume(&self) -> Result<()> {
        let mut leader = self.leader.lock();
        let Some(error) = self.background_error() else { return Ok(()) };
        if !error.is_retryable() {
            return Err(error);
        }
        tracing::info!(target: "strata", error = %error, "resuming after a background error");
        self.log(Level::Info, format_args!("Resuming after background error: {error}"));
        self.bg.lock().resuming = true;
        self.bg_cv.notify_all();
        let retried = self.retry_failed_work(&mut leader);
        self.finish_resume(retried)
    }

    /// Steps 3 and 4 of the module doc.
    fn retry_failed_work(&self, leader: &mut LeaderState) -> Result<()> {
        if leader.wal_failed {
            self.abandon_wal(leader).map_err(|e| Error::background("creating a WAL", e))?;
        }
        let mut bg = self.bg.lock();
        while !bg.imm_queue.is_empty() {
            if !bg.resuming {
                // A flush failed again and recorded its error: `finish_resume` returns it.
                return Ok(());
            }
            self.bg_cv.wait(&mut bg);
        }
        Ok(())
    }

    /// Step 5 of the module doc: clears the error, or keeps the one the retry met.
    fn finish_resume(&self, retried: Result<()>) -> Result<()> {
        let mut bg = self.bg.lock();
        // Cleared by `record_background_error` when a job failed during the retry.
        let undisturbed = std::mem::take(&mut bg.resuming);
        let outcome = match retried {
            Ok(()) if undisturbed => {
                bg.error = None;
                self.has_background_error.store(false, Ordering::Release);
                Ok(())
            }
            Err(e) if undisturbed => {
                self.log_background_error("resume", &e);
                bg.error = Some(e.duplicate());
                Err(e)
            }
            _ => bg.error.as_ref().map_or(Ok(()), |e| Err(e.duplicate())),
        };
        // Wakes the background threads (compactions may run again) and anyone waiting on them.
        self.bg_cv.notify_all();
        drop(bg);
        match &outcome {
            Ok(()) => {
                tracing::info!(target: "strata", "resumed: the database accepts writes again");
                self.log(Level::Info, format_args!("Resumed: the database accepts writes again"));
                self.log_event(Event::new(0, "background_error_cleared"));
            }
            Err(e) => {
                tracing::error!(target: "strata", error = %e, "resume failed; the database stays read-only")
            }
        }
        outcome
    }
}
