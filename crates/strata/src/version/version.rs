//! `Version`: one immutable view of the files that make up the tree: SST files per level and the
//! blob files they point into, with garbage counts. A new version is built by applying a
//! `VersionEdit` to the previous one; readers hold an `Arc<Version>` and never lock.
//!
//! Invariants: L0 files are ordered newest first (by largest sequence number); in L1 and below
//! files are ordered by smallest key and their user-key ranges do not overlap.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use crate::error::{Error, Result};
use crate::key;
use crate::options::NUM_LEVELS;
use crate::version::edit::{BlobFileMeta, FileMeta, VersionEdit};

/// A blob file and how much of it is garbage (values no longer referenced by any SST entry).
#[derive(Debug, Clone, PartialEq)]
pub struct BlobFileState {
    /// What the file holds.
    pub meta: BlobFileMeta,
    /// Records no longer referenced.
    pub garbage_count: u64,
    /// Bytes of records no longer referenced.
    pub garbage_bytes: u64,
}

impl BlobFileState {
    /// True when no SST entry references the file any more.
    pub fn is_all_garbage(&self) -> bool {
        self.garbage_count >= self.meta.total_count
    }
}

/// The set of live files at one point in time. Aligned so the `Arc` reference count every
/// iterator changes has a cache line of its own.
#[derive(Debug, Clone, Default)]
#[repr(align(128))]
pub struct Version {
    /// SST files per level.
    pub files: [Vec<Arc<FileMeta>>; NUM_LEVELS],
    /// Blob files by number.
    pub blob_files: BTreeMap<u64, Arc<BlobFileState>>,
    /// Pending compaction bytes, computed once per version (every write checks it).
    pending_bytes: OnceLock<u64>,
    /// Files holding range tombstones: while 0, reads skip every range-deletion step.
    range_del_files: usize,
}

fn corrupt(msg: String) -> Error {
    Error::corruption(format!("version edit does not apply: {msg}"))
}

impl Version {
    /// Builds the version that results from applying `edit` to `self`.
    pub fn apply(&self, edit: &VersionEdit) -> Result<Version> {
        let mut next = self.clone();
        next.pending_bytes = OnceLock::new();
        for &(level, number) in &edit.deleted_files {
            let files =
                next.files.get_mut(level as usize).ok_or_else(|| corrupt(format!("level {level}")))?;
            let before = files.len();
            files.retain(|f| f.number != number);
            if files.len() == before {
                return Err(corrupt(format!("deletes missing file {number} at L{level}")));
            }
        }
        for (level, meta) in &edit.new_files {
            let files =
                next.files.get_mut(*level as usize).ok_or_else(|| corrupt(format!("level {level}")))?;
            files.push(Arc::new(meta.clone()));
        }
        for meta in &edit.new_blob_files {
            let state = BlobFileState { meta: meta.clone(), garbage_count: 0, garbage_bytes: 0 };
            next.blob_files.insert(meta.number, Arc::new(state));
        }
        for &(number, count, bytes) in &edit.blob_garbage {
            let state = next
                .blob_files
                .get_mut(&number)
                .ok_or_else(|| corrupt(format!("garbage for missing blob {number}")))?;
            let s = Arc::make_mut(state);
            s.garbage_count += count;
            s.garbage_bytes += bytes;
        }
        for number in &edit.deleted_blob_files {
            if next.blob_files.remove(number).is_none() {
                return Err(corrupt(format!("deletes missing blob file {number}")));
            }
        }
        next.sort_and_check()?;
        Ok(next)
    }

    /// Whether some file holds range tombstones.
    #[inline]
    pub fn has_range_dels(&self) -> bool {
        self.range_del_files > 0
    }

    fn sort_and_check(&mut self) -> Result<()> {
        self.range_del_files = self.files.iter().flatten().filter(|f| f.num_range_deletions > 0).count();
        self.files[0].sort_by(|a, b| b.largest_seq.cmp(&a.largest_seq).then(b.number.cmp(&a.number)));
        for level in 1..NUM_LEVELS {
            let files = &mut self.files[level];
            files.sort_by(|a, b| key::compare(&a.smallest, &b.smallest));
            for pair in files.windows(2) {
                if key::user_key(&pair[0].largest) >= key::user_key(&pair[1].smallest) {
                    return Err(corrupt(format!(
                        "files {} and {} overlap in L{level}",
                        pair[0].number, pair[1].number
                    )));
                }
            }
        }
        Ok(())
    }

    /// `compute`'s result, computed on first use and kept for the life of this version.
    pub fn pending_compaction_bytes(&self, compute: impl FnOnce(&Version) -> u64) -> u64 {
        *self.pending_bytes.get_or_init(|| compute(self))
    }

    /// Total file bytes in `level`.
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.files[level].iter().map(|f| f.file_size).sum()
    }

    /// Bytes of every SST and blob file of this version.
    pub fn live_bytes(&self) -> u64 {
        let tables: u64 = (0..NUM_LEVELS).map(|l| self.level_bytes(l)).sum();
        tables + self.blob_files.values().map(|b| b.meta.file_size).sum::<u64>()
    }

    /// Number of files in `level`.
    pub fn level_files(&self, level: usize) -> usize {
        self.files[level].len()
    }

    /// In L1 and below: the one file whose range may contain `user_key`.
    pub fn find_file(&self, level: usize, user_key: &[u8]) -> Option<&Arc<FileMeta>> {
        let files = &self.files[level];
        let idx = files.partition_point(|f| key::user_key(&f.largest) < user_key);
        files.get(idx).filter(|f| key::user_key(&f.smallest) <= user_key)
    }

    /// Files in `level` whose user-key range intersects `[lo, hi]` (`None` is unbounded).
    pub fn overlapping(&self, level: usize, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Vec<Arc<FileMeta>> {
        self.files[level]
            .iter()
            .filter(|f| {
                let below = hi.is_some_and(|hi| key::user_key(&f.smallest) > hi);
                let above = lo.is_some_and(|lo| key::user_key(&f.largest) < lo);
                !below && !above
            })
            .cloned()
            .collect()
    }

    /// The deepest level holding any file, if any.
    pub fn deepest_nonempty_level(&self) -> Option<usize> {
        (0..NUM_LEVELS).rev().find(|&l| !self.files[l].is_empty())
    }

    /// Every SST file number.
    pub fn table_numbers(&self) -> impl Iterator<Item = u64> + '_ {
        self.files.iter().flatten().map(|f| f.number)
    }

    /// The edit that recreates this version from nothing (written at the head of a new MANIFEST).
    pub fn snapshot_edit(&self) -> VersionEdit {
        let mut edit = VersionEdit::default();
        for (level, files) in self.files.iter().enumerate() {
            for f in files {
                edit.new_files.push((level as u32, (**f).clone()));
            }
        }
        for state in self.blob_files.values() {
            edit.new_blob_files.push(state.meta.clone());
            if state.garbage_count > 0 {
                edit.blob_garbage.push((state.meta.number, state.garbage_count, state.garbage_bytes));
            }
        }
        edit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, ValueKind};

    fn meta(number: u64, lo: &[u8], hi: &[u8], seq: u64) -> FileMeta {
        FileMeta {
            number,
            file_size: 100,
            smallest: make_internal_key(lo, seq, ValueKind::Put),
            largest: make_internal_key(hi, seq, ValueKind::Put),
            smallest_seq: seq,
            largest_seq: seq,
            num_entries: 1,
            num_deletions: 0,
            num_range_deletions: 0,
        }
    }

    #[test]
    fn apply_adds_deletes_and_rejects_overlap() {
        let mut e = VersionEdit::default();
        e.new_files.push((1, meta(1, b"a", b"c", 1)));
        e.new_files.push((1, meta(2, b"d", b"f", 2)));
        let v = Version::default().apply(&e).unwrap();
        assert_eq!(v.find_file(1, b"e").unwrap().number, 2);
        assert!(v.find_file(1, b"cc").is_none());
        assert_eq!(v.overlapping(1, Some(b"b"), Some(b"d")).len(), 2);

        let mut bad = VersionEdit::default();
        bad.new_files.push((1, meta(3, b"b", b"e", 3)));
        assert!(v.apply(&bad).unwrap_err().is_corruption());

        let mut del = VersionEdit::default();
        del.deleted_files.push((1, 9));
        assert!(v.apply(&del).is_err());
    }

    #[test]
    fn level0_is_newest_first() {
        let mut e = VersionEdit::default();
        e.new_files.push((0, meta(1, b"a", b"z", 5)));
        e.new_files.push((0, meta(2, b"a", b"z", 9)));
        let v = Version::default().apply(&e).unwrap();
        assert_eq!(v.files[0][0].number, 2);
    }
}
