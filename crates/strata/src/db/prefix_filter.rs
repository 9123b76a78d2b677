//! The internal iterators of an iterator over one prefix, when the family has a
//! `prefix_extractor`: like `db_iter::children`, but a table whose bloom filter holds none of
//! the prefix is left out (an L0 table) or read as empty (a table of a deeper level, found by the
//! level's iterator). This module owns that choice only; merging and visibility stay in
//! `db_iter`.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::family::Family;
use super::{DbInner, SuperVersion};
use crate::error::{Error, Result};
use crate::iter::first_key::KnownFirstKey;
use crate::iter::level::{LevelIterator, TableOpener};
use crate::iter::{EmptyIterator, InternalIterator};
use crate::options::{PrefixExtractor, ReadOptions, NUM_LEVELS};

/// The prefix an iterator may filter tables by: set when `opts.prefix` is at least as long as
/// the family's extractor's prefixes (shorter ones match keys of many prefixes).
pub(super) struct PrefixFilter {
    extractor: PrefixExtractor,
    wanted: Vec<u8>,
}

pub(super) fn prefix_filter(family: &Family, opts: &ReadOptions) -> Option<PrefixFilter> {
    let extractor = family.opts.prefix_extractor?;
    let wanted = opts.prefix.as_ref()?;
    extractor.probe_for(wanted)?;
    Some(PrefixFilter { extractor, wanted: wanted.clone() })
}

/// Every memtable, then the L0 tables and levels that may hold keys starting with the prefix.
pub(super) fn children_for_prefix(
    db: &Arc<DbInner>,
    sv: &SuperVersion,
    fill_cache: bool,
    filter: &PrefixFilter,
) -> Result<Vec<Box<dyn InternalIterator>>> {
    let mut out: Vec<Box<dyn InternalIterator>> = Vec::new();
    out.push(Box::new(sv.mem.iter()));
    for imm in &sv.imm {
        out.push(Box::new(imm.iter()));
    }
    for f in &sv.version.files[0] {
        let table = db.table_cache.table(f.number)?;
        if !table.may_contain_prefix(&filter.extractor, &filter.wanted) {
            db.stats.prefix_filter_skips.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let it = db.table_cache.table_iter(f.number, fill_cache)?;
        // As in `db_iter::children`: a table with range tombstones may start below its first entry.
        let first = if f.num_range_deletions > 0 { Vec::new() } else { f.smallest.clone() };
        out.push(Box::new(KnownFirstKey::new(it, first, f.number)));
    }
    let weak = Arc::downgrade(db);
    let (extractor, wanted) = (filter.extractor, filter.wanted.clone());
    let open: TableOpener = Arc::new(move |f| {
        let db = weak.upgrade().ok_or(Error::Closed)?;
        if !db.table_cache.table(f.number)?.may_contain_prefix(&extractor, &wanted) {
            db.stats.prefix_filter_skips.fetch_add(1, Ordering::Relaxed);
            return Ok(Box::new(EmptyIterator::new()) as Box<dyn InternalIterator>);
        }
        Ok(Box::new(db.table_cache.table_iter(f.number, fill_cache)?) as Box<dyn InternalIterator>)
    });
    for level in 1..NUM_LEVELS {
        if !sv.version.files[level].is_empty() {
            out.push(Box::new(LevelIterator::new(Arc::clone(&sv.version), level, Arc::clone(&open))));
        }
    }
    Ok(out)
}
