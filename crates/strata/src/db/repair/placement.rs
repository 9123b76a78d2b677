//! Repair's placement of tables: every table goes on L0 where L0 reads it correctly; the tables
//! whose key and sequence ranges overlap in a way no level layout can read are merged into one
//! new sorted run and their originals moved to `lost/`. It must not drop an entry the merge
//! would keep, nor read the WALs (that is `salvage.rs`).

use std::sync::Arc;

use super::{scan_table, table_name, Repair, TableInfo};
use crate::compaction::job::{self, OutputSpec};
use crate::db::DbInner;
use crate::error::Result;
use crate::filenames;
use crate::iter::merging::MergingIterator;
use crate::iter::InternalIterator;
use crate::key;
use crate::options::NUM_LEVELS;
use crate::sst::Table;
use crate::version::edit::FileMeta;

// Placement: every table on L0 where that reads correctly, else a rewrite of the ones in the way.
impl Repair {
    /// Rewrites the tables [`tables_to_rewrite`] picks into one sorted run (moving the originals
    /// to `lost/`) and puts every table on its level.
    pub(super) fn resolve_overlaps(&mut self, db: &DbInner) -> Result<()> {
        let spans: Vec<Span<'_>> = self.tables.iter().map(|t| Span::of(&t.meta)).collect();
        let chosen = tables_to_rewrite(&spans);
        if !chosen.iter().any(|&c| c) {
            return Ok(());
        }
        let merged = Span::union(spans.iter().zip(&chosen).filter(|(_, &c)| c).map(|(s, _)| *s));
        // An untouched table overlapping the rewritten keys is wholly newer or wholly older
        // (`tables_to_rewrite` saw to that). With no older one the run can go to the last
        // level, under everything, with nothing left below it.
        let older_remains = spans
            .iter()
            .zip(&chosen)
            .any(|(s, &c)| !c && s.keys_overlap(&merged) && s.largest_seq < merged.smallest_seq);
        let level = if older_remains { 0 } else { NUM_LEVELS - 1 };
        let mut inputs = Vec::new();
        for (t, c) in std::mem::take(&mut self.tables).into_iter().zip(chosen) {
            if c {
                inputs.push(t);
            } else {
                self.tables.push(t);
            }
        }
        let outputs = self.rewrite(db, &inputs, level, !older_remains)?;
        let into = match (outputs.first(), outputs.last()) {
            (Some(&a), Some(&b)) if a != b => {
                format!("{} new tables, {} to {}", outputs.len(), table_name(a), table_name(b))
            }
            (Some(&a), _) => table_name(a),
            _ => "nothing (every entry was a tombstone with nothing left to hide)".to_string(),
        };
        for t in &inputs {
            let reason = format!(
                "rewritten with {} other tables into {into}: its key and sequence ranges overlap others'",
                inputs.len() - 1
            );
            let moved = self.move_to_lost(&table_name(t.meta.number), reason)?;
            self.report.tables_replaced.push(moved);
        }
        Ok(())
    }

    /// Merges `inputs` into new tables at `level`; returns their numbers.
    fn rewrite(
        &mut self,
        db: &DbInner,
        inputs: &[TableInfo],
        level: usize,
        bottommost: bool,
    ) -> Result<Vec<u64>> {
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::with_capacity(inputs.len());
        let mut range_dels = Vec::new();
        for t in inputs {
            let file = self.fs.open_random_unmapped(&filenames::table(&self.dir, t.meta.number))?;
            let table = Arc::new(Table::open(file, t.meta.number, None)?);
            range_dels.extend(table.range_dels().into_iter().flat_map(|f| f.tombstones()));
            children.push(Box::new(table.iter_whole_file()));
        }
        let spec = OutputSpec {
            level,
            max_file_size: db.opts.target_file_size,
            bottommost,
            snapshots: Vec::new(),
            relocate_blob_files: Default::default(),
            scan_runs: 0,
            range_dels,
        };
        let new_file_number = || db.versions.lock().new_file_number();
        let out =
            job::run(&db.job_env(&db.default, &new_file_number), &mut MergingIterator::new(children), &spec)?;
        for meta in out.blob_files {
            self.blob_files.insert(meta.number, meta);
        }
        let mut numbers = Vec::with_capacity(out.tables.len());
        for t in out.tables {
            let mut info = scan_table(self.fs.as_ref(), &self.dir, t.number)?;
            info.level = level as u32;
            numbers.push(t.number);
            self.tables.push(info);
        }
        self.report.tables_rewritten.extend(&numbers);
        Ok(numbers)
    }
}

/// A table's user-key and sequence ranges.
#[derive(Clone, Copy, Debug)]
struct Span<'a> {
    smallest: &'a [u8],
    largest: &'a [u8],
    smallest_seq: u64,
    largest_seq: u64,
}

impl<'a> Span<'a> {
    fn of(meta: &'a FileMeta) -> Self {
        Span {
            smallest: key::user_key(&meta.smallest),
            largest: key::user_key(&meta.largest),
            smallest_seq: meta.smallest_seq,
            largest_seq: meta.largest_seq,
        }
    }

    fn keys_overlap(&self, other: &Span<'_>) -> bool {
        self.smallest <= other.largest && other.smallest <= self.largest
    }

    /// Two tables that share keys and sequence numbers: neither is wholly newer than the other
    /// where they overlap, so L0 (read newest file first, stopping at the first hit) cannot hold
    /// both.
    fn conflicts(&self, other: &Span<'_>) -> bool {
        self.smallest_seq <= other.largest_seq
            && other.smallest_seq <= self.largest_seq
            && self.keys_overlap(other)
    }

    fn union(spans: impl Iterator<Item = Span<'a>>) -> Span<'a> {
        spans
            .reduce(|a, b| Span {
                smallest: a.smallest.min(b.smallest),
                largest: a.largest.max(b.largest),
                smallest_seq: a.smallest_seq.min(b.smallest_seq),
                largest_seq: a.largest_seq.max(b.largest_seq),
            })
            .unwrap_or(Span { smallest: &[], largest: &[], smallest_seq: 0, largest_seq: 0 })
    }
}

/// Which tables must be rewritten so the rest can sit on L0, ordered newest first by largest
/// sequence number: L0 reads the first file holding a key and stops, which is right only when
/// every pair of files sharing keys has disjoint sequence ranges. Tables written by flushes
/// always do; tables from deeper levels (written by compactions) usually do not.
///
/// Picks every table in a conflicting pair, then (since the rewrite's outputs may span the
/// union of their ranges) every table that conflicts with that union, until none does. The
/// outputs of the rewrite then conflict with nothing left.
fn tables_to_rewrite(spans: &[Span<'_>]) -> Vec<bool> {
    let mut chosen = vec![false; spans.len()];
    for (i, a) in spans.iter().enumerate() {
        for (j, b) in spans.iter().enumerate().skip(i + 1) {
            if a.conflicts(b) {
                chosen[i] = true;
                chosen[j] = true;
            }
        }
    }
    if !chosen.iter().any(|&c| c) {
        return chosen;
    }
    loop {
        let merged = Span::union(spans.iter().zip(&chosen).filter(|(_, &c)| c).map(|(s, _)| *s));
        let mut grew = false;
        for (s, c) in spans.iter().zip(chosen.iter_mut()) {
            if !*c && s.conflicts(&merged) {
                *c = true;
                grew = true;
            }
        }
        if !grew {
            return chosen;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(lo: &'static str, hi: &'static str, s: u64, l: u64) -> Span<'static> {
        Span { smallest: lo.as_bytes(), largest: hi.as_bytes(), smallest_seq: s, largest_seq: l }
    }

    #[test]
    fn flushed_tables_need_no_rewrite() {
        // Consecutive flushes: key ranges overlap, sequence ranges do not.
        let spans = [span("a", "z", 1, 10), span("a", "z", 11, 20), span("c", "d", 21, 21)];
        assert_eq!(tables_to_rewrite(&spans), [false; 3]);
    }

    #[test]
    fn tables_from_two_levels_sharing_keys_and_sequences_are_rewritten() {
        // An L1 table [10, 960] and an L2 table [5, 2000] over shared keys: whichever L0 reads
        // first answers for both, wrongly for some key. A disjoint table stays.
        let spans = [span("b", "c", 10, 960), span("c", "d", 5, 2000), span("x", "y", 1, 3000)];
        assert_eq!(tables_to_rewrite(&spans), [true, true, false]);
    }

    #[test]
    fn the_rewrite_grows_to_what_overlaps_its_union() {
        // 0 and 1 conflict; their union [a..f, 5..30] then conflicts with 2 (keys e..g, seq
        // 5..8) though 2 conflicts with neither alone. 3 is newer than the union: it stays.
        let spans =
            [span("a", "d", 5, 20), span("c", "f", 10, 30), span("e", "g", 5, 8), span("a", "z", 31, 60)];
        assert_eq!(tables_to_rewrite(&spans), [true, true, true, false]);
    }
}
