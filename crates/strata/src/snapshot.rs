//! Snapshots: a sequence number registered with the database so compaction keeps every version a
//! live snapshot can see. Dropping the last clone of a [`Snapshot`] releases it.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::key::SeqNo;

/// The live snapshots of one database, by sequence number with reference counts.
#[derive(Debug, Default)]
pub(crate) struct SnapshotList {
    live: Mutex<BTreeMap<SeqNo, usize>>,
}

impl SnapshotList {
    pub(crate) fn acquire(self: &Arc<Self>, seq: SeqNo) -> Snapshot {
        *self.live.lock().entry(seq).or_insert(0) += 1;
        Snapshot { inner: Arc::new(SnapshotInner { seq, list: Arc::clone(self) }) }
    }

    /// All live snapshot sequence numbers, ascending.
    pub(crate) fn sequences(&self) -> Vec<SeqNo> {
        self.live.lock().keys().copied().collect()
    }

    fn release(&self, seq: SeqNo) {
        let mut live = self.live.lock();
        if let Some(n) = live.get_mut(&seq) {
            *n -= 1;
            if *n == 0 {
                live.remove(&seq);
            }
        }
    }
}

#[derive(Debug)]
struct SnapshotInner {
    seq: SeqNo,
    list: Arc<SnapshotList>,
}

impl Drop for SnapshotInner {
    fn drop(&mut self) {
        self.list.release(self.seq);
    }
}

/// A consistent point-in-time view, taken with [`Db::snapshot`](crate::Db::snapshot); pass it in
/// [`ReadOptions::snapshot`](crate::ReadOptions::snapshot). Reads through it see the database as
/// it was when it was taken, whatever is written later. While a snapshot lives, compaction keeps
/// the versions it can see, so drop snapshots you no longer need. Clones share one registration;
/// dropping the last clone releases it.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::{Db, Options, ReadOptions, WriteOptions};
/// let db = Db::open(dir.path(), Options::default())?;
/// db.put(b"k", b"v1")?;
/// let snap = db.snapshot();
/// db.put(b"k", b"v2")?;
/// db.delete(b"k")?;
/// db.compact_range(None, None)?; // the old version survives compaction for the snapshot
///
/// let at_snap = ReadOptions { snapshot: Some(snap.clone()), ..ReadOptions::new() };
/// assert_eq!(db.get_opt(&at_snap, b"k")?, Some(b"v1".to_vec()));
/// assert_eq!(db.get(b"k")?, None);
/// assert_eq!(db.property("strata.num-snapshots").as_deref(), Some("1"));
/// drop((snap, at_snap));
/// assert_eq!(db.property("strata.num-snapshots").as_deref(), Some("0"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Snapshot {
    inner: Arc<SnapshotInner>,
}

impl Snapshot {
    /// The sequence number this snapshot reads at: it sees every write with a sequence number up
    /// to and including this one (see [`Db::latest_sequence`](crate::Db::latest_sequence)).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options, WriteOptions};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// db.put(b"k", b"v")?;
    /// let snap = db.snapshot();
    /// assert_eq!(snap.sequence(), db.latest_sequence());
    /// db.put(b"k", b"w")?;
    /// assert!(db.latest_sequence() > snap.sequence());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sequence(&self) -> u64 {
        self.inner.seq
    }
}
