//! A memtable's range tombstones, kept beside its point entries: few, so a plain list under a
//! lock, plus the fragmented form readers ask for, built on first use after each change. A flag
//! on a cache line of its own tells every read whether there is anything here, so that a
//! memtable without range deletions costs a read one untaken branch. It must not decide
//! visibility: callers pass their sequence numbers to [`Fragments`].

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::key::SeqNo;
use crate::range_del::{Fragments, RangeTombstone};

/// The tombstones of one memtable. Single writer (the memtable's), any number of readers.
#[derive(Default)]
pub(super) struct RangeDels {
    present: Present,
    state: RwLock<State>,
    bytes: AtomicUsize,
}

#[derive(Default)]
#[repr(align(64))]
struct Present(AtomicBool);

#[derive(Default)]
struct State {
    raw: Vec<RangeTombstone>,
    fragments: Option<Arc<Fragments>>,
}

impl RangeDels {
    /// Adds the tombstone `[begin, end)` at `seq`; an empty range is ignored.
    pub(super) fn add(&self, seq: SeqNo, begin: &[u8], end: &[u8]) {
        if begin >= end {
            return;
        }
        let mut state = self.state.write();
        state.raw.push(RangeTombstone::new(begin, end, seq));
        state.fragments = None;
        drop(state);
        self.bytes.fetch_add(begin.len() + end.len() + 64, Ordering::Relaxed);
        // After the tombstone is in: a reader that sees the flag finds it under the lock.
        self.present.0.store(true, Ordering::Release);
    }

    /// Whether any tombstone was added.
    #[inline]
    pub(super) fn any(&self) -> bool {
        self.present.0.load(Ordering::Acquire)
    }

    /// The tombstones, fragmented; `None` when there are none.
    pub(super) fn fragments(&self) -> Option<Arc<Fragments>> {
        if !self.any() {
            return None;
        }
        if let Some(f) = &self.state.read().fragments {
            return Some(Arc::clone(f));
        }
        let mut state = self.state.write();
        let built = match &state.fragments {
            Some(f) => Arc::clone(f),
            None => Arc::new(Fragments::new(state.raw.iter().cloned())),
        };
        state.fragments = Some(Arc::clone(&built));
        Some(built)
    }

    /// Every tombstone as written, in insertion order.
    pub(super) fn raw(&self) -> Vec<RangeTombstone> {
        if !self.any() {
            return Vec::new();
        }
        self.state.read().raw.clone()
    }

    /// Bytes the tombstones take, roughly.
    pub(super) fn memory_usage(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }
}
