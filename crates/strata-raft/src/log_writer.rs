//! The log store's writer thread: every change to the `raft_log` and `raft_meta` families goes
//! through it, so they reach the database in the order openraft made them, and the thread
//! groups whatever is queued into one synced strata write (group commit: one fdatasync for
//! many clients' entries) before it reports each append flushed, in order.
//!
//! It owns the in-memory tail: entries accepted by `append` but not yet written. openraft
//! requires them readable as soon as `append` returns, before they are durable, so the log
//! reader overlays this tail on the database. The thread is a std thread, not a tokio task, so
//! an fsync never blocks the async runtime. It must not touch the state machine's families.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use openraft::storage::LogFlushed;
use openraft::{Entry, LogId};
use strata::{ColumnFamily, Db, WriteBatch, WriteOptions};

use crate::types::{NodeId, TypeConfig};

/// At most this many queued jobs share one write, so a flood of appends still completes some
/// callbacks early instead of building an unbounded batch.
const MAX_GROUP: usize = 1024;

/// One change to make, in order.
pub(crate) enum Change {
    Put(ColumnFamily, Vec<u8>, Vec<u8>),
    DeleteRange(ColumnFamily, Vec<u8>, Vec<u8>),
}

/// What the caller waits on.
enum Done {
    /// openraft's append callback; the written log ids leave the tail once written.
    Flushed(LogFlushed<TypeConfig>, Vec<LogId<NodeId>>),
    /// Nobody waits (the committed log id): written without sync unless grouped with a job
    /// that needs it.
    Nothing,
    /// An awaited write (vote, truncate, purge).
    Reply(tokio::sync::oneshot::Sender<strata::Result<()>>),
}

struct Job {
    changes: Vec<Change>,
    done: Done,
}

/// Entries appended but not yet written, by index.
pub(crate) type Tail = Arc<Mutex<BTreeMap<u64, Entry<TypeConfig>>>>;

/// Locks the tail; a panic elsewhere while holding it leaves a map that is still consistent
/// (each operation is one insert or remove), so poisoning is ignored.
pub(crate) fn lock(tail: &Tail) -> MutexGuard<'_, BTreeMap<u64, Entry<TypeConfig>>> {
    tail.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Handle to the writer thread. Dropping it lets the thread finish what is queued and waits
/// for it, so the database is closed when the last handle goes.
pub(crate) struct LogWriter {
    tx: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    pub(crate) tail: Tail,
}

impl LogWriter {
    /// Starts the thread writing into `db`.
    pub(crate) fn start(db: Arc<Db>) -> std::io::Result<LogWriter> {
        let (tx, rx) = mpsc::channel();
        let tail: Tail = Arc::default();
        let thread_tail = tail.clone();
        let thread = std::thread::Builder::new()
            .name("raft-log-writer".into())
            .spawn(move || run(&db, &rx, &thread_tail))?;
        Ok(LogWriter { tx: Some(tx), thread: Some(thread), tail })
    }

    /// Queues `entries` (already in the tail) with their changes; `callback` is completed once
    /// they are durable.
    pub(crate) fn append(
        &self,
        changes: Vec<Change>,
        ids: Vec<LogId<NodeId>>,
        callback: LogFlushed<TypeConfig>,
    ) {
        self.send(Job { changes, done: Done::Flushed(callback, ids) });
    }

    /// Writes `changes` durably, after everything queued before them.
    pub(crate) async fn write(&self, changes: Vec<Change>) -> strata::Result<()> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(Job { changes, done: Done::Reply(tx) });
        rx.await.unwrap_or_else(|_| Err(stopped()))
    }

    /// Queues `changes` without waiting for them.
    pub(crate) fn submit(&self, changes: Vec<Change>) {
        self.send(Job { changes, done: Done::Nothing });
    }

    fn send(&self, job: Job) {
        let Some(tx) = &self.tx else { return fail(job, &stopped()) };
        if let Err(mpsc::SendError(job)) = tx.send(job) {
            fail(job, &stopped());
        }
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(thread) = self.thread.take() {
            // A panic in the thread has already been reported by the panic hook.
            let _ = thread.join();
        }
    }
}

fn stopped() -> strata::Error {
    strata::Error::Closed
}

fn run(db: &Db, rx: &mpsc::Receiver<Job>, tail: &Tail) {
    while let Ok(first) = rx.recv() {
        let mut jobs = vec![first];
        while jobs.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        let mut batch = WriteBatch::new();
        for job in &jobs {
            add(&mut batch, &job.changes);
        }
        // The committed log id alone needs no fsync (losing it only means learning it again from
        // the leader); synced, it cost one more fsync per commit, in front of the next append.
        let sync = jobs.iter().any(|job| !matches!(job.done, Done::Nothing));
        match db.write_opt(&WriteOptions { sync, disable_wal: false }, batch) {
            Ok(()) => jobs.into_iter().for_each(|job| complete(job, tail)),
            Err(e) => jobs.into_iter().for_each(|job| fail(job, &e)),
        }
    }
}

fn add(batch: &mut WriteBatch, changes: &[Change]) {
    for change in changes {
        match change {
            Change::Put(cf, k, v) => batch.put_cf(cf, k, v),
            Change::DeleteRange(cf, a, b) => batch.delete_range_cf(cf, a, b),
        };
    }
}

/// Reports a job done; written entries leave the tail unless a truncate already replaced them.
fn complete(job: Job, tail: &Tail) {
    match job.done {
        Done::Flushed(callback, ids) => {
            let mut tail = lock(tail);
            for id in ids {
                if tail.get(&id.index).is_some_and(|e| e.log_id == id) {
                    tail.remove(&id.index);
                }
            }
            drop(tail);
            callback.log_io_completed(Ok(()));
        }
        Done::Nothing => {}
        Done::Reply(tx) => {
            // The waiter may have been dropped (its task cancelled); the write is done anyway.
            let _ = tx.send(Ok(()));
        }
    }
}

/// Reports a job failed. Its entries stay in the tail: openraft stops on a storage error.
fn fail(job: Job, e: &strata::Error) {
    match job.done {
        Done::Flushed(callback, _) => callback.log_io_completed(Err(std::io::Error::other(e.to_string()))),
        Done::Nothing => {}
        Done::Reply(tx) => {
            let _ =
                tx.send(Err(strata::Error::Io { path: None, source: std::io::Error::other(e.to_string()) }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;

    /// Everything queued when the thread looks is written with one fdatasync, and each caller
    /// is answered in order.
    #[test]
    fn queued_jobs_share_one_synced_write() {
        let dir = tempfile::tempdir().unwrap();
        let db =
            Db::open(dir.path(), strata::Options { create_if_missing: true, ..Default::default() }).unwrap();
        let (tx, rx) = mpsc::channel();
        let mut replies = Vec::new();
        for i in 0..100u32 {
            let (reply, answer) = tokio::sync::oneshot::channel();
            let change = Change::Put(db.default_cf(), i.to_be_bytes().to_vec(), b"v".to_vec());
            tx.send(Job { changes: vec![change], done: Done::Reply(reply) }).unwrap();
            replies.push(answer);
        }
        drop(tx);
        let syncs = db.stats().wal_syncs.load(Relaxed);
        run(&db, &rx, &Tail::default());
        assert_eq!(db.stats().wal_syncs.load(Relaxed) - syncs, 1);
        for mut answer in replies {
            assert!(matches!(answer.try_recv(), Ok(Ok(()))));
        }
        assert_eq!(db.iter().count(), 100);
    }

    #[test]
    fn a_failed_write_fails_every_job_of_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let db =
            Db::open(dir.path(), strata::Options { create_if_missing: true, ..Default::default() }).unwrap();
        let (tx, rx) = mpsc::channel();
        let (reply, mut answer) = tokio::sync::oneshot::channel();
        // An oversized key makes strata refuse the whole batch.
        let bad = Change::Put(db.default_cf(), vec![b'k'; strata::batch::MAX_KEY_LEN + 1], b"v".to_vec());
        let good = Change::Put(db.default_cf(), b"k".to_vec(), b"v".to_vec());
        tx.send(Job { changes: vec![good, bad], done: Done::Reply(reply) }).unwrap();
        drop(tx);
        run(&db, &rx, &Tail::default());
        assert!(matches!(answer.try_recv(), Ok(Err(_))));
        assert_eq!(db.get(b"k").unwrap(), None);
    }
}
