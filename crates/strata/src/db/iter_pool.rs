//! Keeps, per thread, the internals of the last iterator that thread dropped, so that the next
//! [`Db::iter`](crate::Db::iter) on the same thread and super version reuses them. Building an
//! iterator clones and later drops about fifteen `Arc`s that every reading thread shares (the
//! super version, version, memtable, each L0 table and index block, ...); with two threads
//! seeking, those counter writes were most of the difference between one and two threads
//! (docs/performance.md, "seekrandom at t=2"). RocksDB keeps a thread-local super version for
//! the same reason. For the same reason each thread also keeps its own counted handle on the
//! database ([`ThreadDb`]): iterators hold that, so creating and dropping one changes a counter
//! only its thread writes, not the database's shared one.
//!
//! This module owns the slots and when they are emptied. It must not decide whether an
//! iterator may be reused (the iterator does: no error, same options) and must never hand out
//! internals pinned to a super version other than the current one. A pooled entry pins its
//! super version, so every slot is emptied when the super version changes; otherwise an idle
//! thread would keep obsolete files mapped. Entries hold no strong reference to the database
//! (the level iterators' table opener holds a weak one). The thread handles do, so the
//! database owns itself through them until the last `Db` handle closes it
//! ([`IterPool::close`]); after that nothing is kept, and the last iterator to go frees it.

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use thread_local::ThreadLocal;

use super::{DbInner, SuperVersion};
use crate::blob::BlobReader;
use crate::iter::merging::MergingIterator;

/// What an iterator leaves behind for reuse.
pub(crate) struct PooledIter {
    pub sv: Arc<SuperVersion>,
    pub fill_cache: bool,
    pub iter: MergingIterator,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub seek_target: Vec<u8>,
    pub blob_files: Vec<Arc<BlobReader>>,
}

/// A thread's counted reference to the database: the `Arc` around it is cloned and dropped
/// by that thread's iterators only, so its counter stays in that core's cache.
pub(crate) struct ThreadDb(Arc<DbInner>);

impl ThreadDb {
    /// The database this handle reaches.
    pub(crate) fn inner(&self) -> &Arc<DbInner> {
        &self.0
    }
}

impl Deref for ThreadDb {
    type Target = DbInner;
    fn deref(&self) -> &DbInner {
        &self.0
    }
}

#[derive(Default)]
struct Slot {
    handle: Option<Arc<ThreadDb>>,
    entry: Option<PooledIter>,
}

/// One slot per thread that has created an iterator of this database.
#[derive(Default)]
pub(crate) struct IterPool {
    slots: ThreadLocal<Mutex<Slot>>,
}

impl IterPool {
    /// This thread's handle on `db` (made on its first iterator) and its pooled internals if
    /// they were built for `sv` with `fill_cache`. A stale entry is dropped.
    pub fn take(
        &self,
        db: &Arc<DbInner>,
        sv: &Arc<SuperVersion>,
        fill_cache: bool,
    ) -> (Arc<ThreadDb>, Option<PooledIter>) {
        let mut slot = self.slots.get_or_default().lock();
        let handle = Arc::clone(slot.handle.get_or_insert_with(|| Arc::new(ThreadDb(Arc::clone(db)))));
        let entry = slot.entry.take();
        drop(slot);
        (handle, entry.filter(|e| Arc::ptr_eq(&e.sv, sv) && e.fill_cache == fill_cache))
    }

    /// Keeps `entry` in this thread's slot, replacing what was there, if it reads the current
    /// super version and the database is not closing. An iterator that outlived an install
    /// would otherwise land in a slot that install's `clear` already emptied, and pin obsolete
    /// files until the next change. The checks run under the slot's lock: an install swaps the
    /// super version (and a close sets `closing`) before its `clear` (`close`) locks the slot,
    /// so either the check sees the change or the sweep sees the entry.
    pub fn put(&self, entry: PooledIter, current: &ArcSwap<SuperVersion>, closing: &AtomicBool) {
        let mut slot = self.slots.get_or_default().lock();
        let replaced = slot.entry.replace(entry);
        let stale =
            slot.entry.take_if(|e| !Arc::ptr_eq(&e.sv, &current.load()) || closing.load(Ordering::Acquire));
        drop(slot);
        drop((replaced, stale));
    }

    /// Empties every thread's slot: the super version changed, so they are all stale.
    pub fn clear(&self) {
        let taken: Vec<PooledIter> = self.slots.iter().filter_map(|s| s.lock().entry.take()).collect();
        drop(taken);
    }

    /// Empties every slot and drops every thread's handle, so the database no longer owns
    /// itself. Called once the last `Db` handle is gone and `closing` is set; the caller must
    /// hold its own reference to the database.
    pub fn close(&self) {
        let taken: Vec<Slot> = self.slots.iter().map(|s| std::mem::take(&mut *s.lock())).collect();
        drop(taken);
    }

    /// Entries held across all threads.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.slots.iter().filter(|s| s.lock().entry.is_some()).count()
    }

    /// Thread handles held across all threads.
    #[cfg(test)]
    pub fn handles(&self) -> usize {
        self.slots.iter().filter(|s| s.lock().handle.is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    use crate::{Db, Options, ReadOptions, WriteOptions};

    fn keys(db: &Db, opts: &ReadOptions) -> Vec<Vec<u8>> {
        let mut it = db.cursor(opts).unwrap();
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            out.push(it.key().to_vec());
            it.next();
        }
        it.status().unwrap();
        out
    }

    #[test]
    fn the_next_iterator_reuses_the_last_and_reads_as_a_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        let w = WriteOptions::default();
        db.put_opt(&w, b"a", b"1").unwrap();
        assert_eq!(keys(&db, &ReadOptions::new()), [b"a".to_vec()]);
        assert_eq!(db.inner.iter_pool.len(), 1, "the dropped iterator was kept");
        let snap = db.snapshot();
        db.put_opt(&w, b"b", b"2").unwrap();
        db.put_opt(&w, b"c", b"3").unwrap();
        // Same memtable, so the same super version: reused, with the new sequence number.
        assert_eq!(keys(&db, &ReadOptions::new()), [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
        let at_snap = ReadOptions { snapshot: Some(snap), ..ReadOptions::new() };
        assert_eq!(keys(&db, &at_snap), [b"a".to_vec()]);
        let bounded = ReadOptions { lower_bound: Some(b"b".to_vec()), ..ReadOptions::new() };
        assert_eq!(keys(&db, &bounded), [b"b".to_vec(), b"c".to_vec()]);
        let mut it = db.cursor(&ReadOptions::new()).unwrap();
        assert!(!it.valid(), "a reused iterator starts unpositioned");
        it.next();
        assert!(!it.valid());
        it.seek(b"bb");
        assert_eq!((it.key(), it.value()), (&b"c"[..], &b"3"[..]));
    }

    #[test]
    fn a_new_super_version_empties_every_threads_slot() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        db.put(b"a", b"1").unwrap();
        keys(&db, &ReadOptions::new());
        std::thread::scope(|s| {
            s.spawn(|| keys(&db, &ReadOptions::new()));
        });
        assert_eq!(db.inner.iter_pool.len(), 2);
        db.flush().unwrap();
        assert_eq!(db.inner.iter_pool.len(), 0, "stale entries would keep old files mapped");
        assert_eq!(keys(&db, &ReadOptions::new()), [b"a".to_vec()]);
        // A compaction changes the version alone (the memtable is empty, nothing to switch).
        assert_eq!(db.inner.iter_pool.len(), 1);
        db.compact_range(None, None).unwrap();
        assert_eq!(db.inner.iter_pool.len(), 0);
        assert_eq!(keys(&db, &ReadOptions::new()), [b"a".to_vec()]);
    }

    #[test]
    fn an_iterator_that_outlived_an_install_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        db.put(b"a", b"1").unwrap();
        let mut it = db.cursor(&ReadOptions::new()).unwrap();
        it.seek_to_first();
        db.flush().unwrap();
        drop(it);
        assert_eq!(db.inner.iter_pool.len(), 0, "it would pin the flushed memtable until the next change");
    }

    #[test]
    fn other_read_options_get_a_fresh_iterator() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        db.put(b"a", b"1").unwrap();
        db.flush().unwrap();
        keys(&db, &ReadOptions::new());
        let no_fill = ReadOptions { fill_cache: false, ..ReadOptions::new() };
        let sv = db.inner.default.super_version.load_full();
        assert!(db.inner.iter_pool.take(&db.inner, &sv, false).1.is_none(), "built with fill_cache");
        assert_eq!(keys(&db, &no_fill), [b"a".to_vec()]);
        assert!(db.inner.iter_pool.take(&db.inner, &sv, false).1.is_some());
    }

    #[test]
    fn pooled_iterators_do_not_keep_the_database_open() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = Db::open(dir.path(), Options::default()).unwrap();
            db.put(b"a", b"1").unwrap();
            // In the last level, so the pooled iterator holds a level iterator and its opener.
            db.compact_range(None, None).unwrap();
            keys(&db, &ReadOptions::new());
            assert_eq!(db.inner.iter_pool.len(), 1);
        }
        // The lock is free again only if dropping the handle dropped the database.
        let db = Db::open(dir.path(), Options::default()).unwrap();
        assert_eq!(keys(&db, &ReadOptions::new()), [b"a".to_vec()]);
    }

    #[test]
    fn an_iterator_that_outlives_its_database_handle_frees_it_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        db.put(b"a", b"1").unwrap();
        db.compact_range(None, None).unwrap();
        let mut it = db.cursor(&ReadOptions::new()).unwrap();
        assert_eq!(db.inner.iter_pool.handles(), 1);
        let other_thread = std::thread::scope(|s| s.spawn(|| keys(&db, &ReadOptions::new())).join().unwrap());
        assert_eq!(other_thread, [b"a".to_vec()]);
        assert_eq!(db.inner.iter_pool.handles(), 2, "the other thread's slot keeps its handle");
        drop(db);
        it.seek_to_first();
        assert_eq!((it.key(), it.value()), (&b"a"[..], &b"1"[..]));
        assert!(
            Db::open(dir.path(), Options::default()).is_err(),
            "the iterator still holds the database (and its lock)"
        );
        drop(it);
        let db = Db::open(dir.path(), Options::default()).unwrap();
        assert_eq!(keys(&db, &ReadOptions::new()), [b"a".to_vec()]);
    }
}
