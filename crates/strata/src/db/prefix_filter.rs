//! Which tables an iterator over one prefix may leave out, when the family has a
//! `prefix_extractor`: those whose bloom filter holds none of the prefix (`db_iter::children`
//! leaves such an L0 table out and reads a deeper one as empty). This module owns that choice
//! only; merging and visibility stay in `db_iter`.

use std::sync::atomic::Ordering;

use super::family::Family;
use super::DbInner;
use crate::error::Result;
use crate::options::{PrefixExtractor, ReadOptions};

/// The prefix an iterator may filter tables by: set when `opts.prefix` is at least as long as
/// the family's extractor's prefixes (shorter ones match keys of many prefixes).
#[derive(Clone)]
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

impl PrefixFilter {
    /// True when table `number` holds no key with the prefix (counted in
    /// `Stats::prefix_filter_skips`).
    pub(super) fn rules_out(&self, db: &DbInner, number: u64) -> Result<bool> {
        let out = !db.table_cache.table(number)?.may_contain_prefix(&self.extractor, &self.wanted);
        if out {
            db.stats.prefix_filter_skips.fetch_add(1, Ordering::Relaxed);
        }
        Ok(out)
    }
}
