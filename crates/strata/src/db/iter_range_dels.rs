//! The range tombstones a `DbIterator` honours: those of every memtable and table of its super
//! version that are visible at its sequence number, gathered once when the iterator is created
//! and fragmented so each piece carries the newest tombstone over it. `None` when there are
//! none, which the memtables' flags and the version's count tell without reading anything: the
//! iterator then pays one branch per entry. It must not position or read the iterator.

use super::{DbInner, SuperVersion};
use crate::error::Result;
use crate::key::SeqNo;
use crate::range_del::{Fragments, PieceCursor, RangeTombstone};

/// The visible range tombstones of one iterator, and where its walk last found a piece.
pub(super) struct IterRangeDels {
    tombstones: Fragments,
    cursor: PieceCursor,
}

impl IterRangeDels {
    /// The tombstones of `sv` visible at `seq`; `None` when there are none.
    pub(super) fn gather(db: &DbInner, sv: &SuperVersion, seq: SeqNo) -> Result<Option<Self>> {
        let mut visible: Vec<RangeTombstone> = Vec::new();
        for mem in std::iter::once(&sv.mem).chain(&sv.imm).filter(|m| m.has_range_dels()) {
            visible.extend(mem.range_tombstones().into_iter().filter(|t| t.seq <= seq));
        }
        if sv.version.has_range_dels() {
            for f in sv.version.files.iter().flatten().filter(|f| f.num_range_deletions > 0) {
                let table = db.table_cache.table(f.number)?;
                if let Some(frags) = table.range_dels() {
                    visible.extend(frags.tombstones().filter(|t| t.seq <= seq));
                }
            }
        }
        if visible.is_empty() {
            return Ok(None);
        }
        Ok(Some(Self { tombstones: Fragments::new(visible), cursor: PieceCursor::default() }))
    }

    /// Whether a visible tombstone newer than `seq` covers `user_key`.
    #[inline]
    pub(super) fn hides(&mut self, user_key: &[u8], seq: SeqNo) -> bool {
        self.tombstones.newest_covering_at(user_key, SeqNo::MAX, &mut self.cursor).is_some_and(|t| t > seq)
    }
}

/// [`IterRangeDels::hides`] when there are tombstones; false (one branch) when there are none.
#[inline]
pub(super) fn hidden(range_dels: &mut Option<IterRangeDels>, user_key: &[u8], seq: SeqNo) -> bool {
    match range_dels {
        None => false,
        Some(r) => r.hides(user_key, seq),
    }
}
