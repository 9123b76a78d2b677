//! Ingesting external table files (RocksDB's `IngestExternalFile`): files written by
//! [`SstFileWriter`] join the database as one atomic step, newer than every write before it,
//! without passing through the WAL and the memtable.
//!
//! How: the files are checked (sequence numbers 0, keys in order, no overlap between them), the
//! family's memtables are flushed if they hold keys in the files' range, then, with writers and
//! compactions held off, the files' entries are rewritten into the database's own tables (values
//! over the blob threshold into blob files) under one new sequence number and installed in the
//! deepest level whose files, and every level's above it, leave the range free. The caller's
//! files are only read. This module must not change how the write path or compactions work; it
//! only takes their locks in their order (leader, then the compaction slot, versions and bg).

mod file_writer;
mod sequenced;

pub use file_writer::{ExternalFileInfo, SstFileWriter};

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::background::run_job;
use super::family::{ColumnFamily, Family};
use super::{Db, DbInner, SuperVersion};
use crate::compaction::job::{self, OutputSpec};
use crate::error::{Error, Result};
use crate::iter::merging::MergingIterator;
use crate::iter::InternalIterator;
use crate::key;
use crate::options::NUM_LEVELS;
use crate::sst::table::Table;
use crate::version::version::Version;
use sequenced::Sequenced;

/// How to ingest. There are no knobs yet beyond the defaults RocksDB users rely on; the struct
/// keeps room for them (`#[non_exhaustive]`).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct IngestOptions {}

/// Tries to find the memtables free of the files' range before giving up with `Busy`: writers
/// that keep writing into the range can refill a memtable between the flush and the check.
const ATTEMPTS: usize = 8;

/// The files, opened and checked, and the user-key range they cover.
struct Checked {
    tables: Vec<Arc<Table>>,
    smallest: Vec<u8>,
    largest: Vec<u8>,
}

impl Db {
    /// Adds the entries of the table files at `paths` (written by [`SstFileWriter`]) to the
    /// database atomically: a reader sees all of them or none, and they are newer than every
    /// write acknowledged before the call. Writers wait while the entries are copied in.
    ///
    /// # Errors
    /// `InvalidArgument` when a file was not written by `SstFileWriter` (an entry's sequence
    /// number is not 0), when two files' key ranges overlap, or when no path is given;
    /// `Corruption` for a damaged file; `Busy` when writers kept filling the memtable with keys
    /// in the files' range; `ReadOnly` on a read-only handle.
    pub fn ingest_external_file(&self, paths: &[impl AsRef<Path>], opts: &IngestOptions) -> Result<()> {
        self.ingest_into(&self.inner.default, paths, opts)
    }

    /// [`Db::ingest_external_file`] into column family `cf`.
    pub fn ingest_external_file_cf(
        &self,
        cf: &ColumnFamily,
        paths: &[impl AsRef<Path>],
        opts: &IngestOptions,
    ) -> Result<()> {
        self.ingest_into(super::family_api::live(cf)?, paths, opts)
    }

    fn ingest_into(&self, family: &Family, paths: &[impl AsRef<Path>], _opts: &IngestOptions) -> Result<()> {
        if self.inner.read_only {
            return Err(Error::ReadOnly);
        }
        let checked = check_files(&self.inner, paths)?;
        let result = self.inner.ingest_checked(family, &checked);
        self.inner.delete_obsolete_files();
        result
    }
}

/// Opens each file, checks every entry and that the files' ranges are disjoint.
fn check_files(db: &DbInner, paths: &[impl AsRef<Path>]) -> Result<Checked> {
    if paths.is_empty() {
        return Err(Error::InvalidArgument("no files to ingest".into()));
    }
    let mut files = Vec::new();
    for path in paths {
        let path = path.as_ref();
        let table = Arc::new(Table::open(db.fs.open_random_unmapped(path)?, 0, None)?);
        let (smallest, largest) = check_entries(&table, path)?;
        files.push((smallest, largest, table));
    }
    files.sort_by(|a, b| key::compare_user_keys(&a.0, &b.0));
    for pair in files.windows(2) {
        if key::compare_user_keys(&pair[1].0, &pair[0].1).is_le() {
            return Err(Error::InvalidArgument(format!(
                "ingested files overlap: one ends at {:?}, another starts at {:?}",
                String::from_utf8_lossy(&pair[0].1),
                String::from_utf8_lossy(&pair[1].0)
            )));
        }
    }
    let smallest = files[0].0.clone();
    let largest = files[files.len() - 1].1.clone();
    Ok(Checked { tables: files.into_iter().map(|f| f.2).collect(), smallest, largest })
}

/// Reads a whole file: every entry has sequence 0, a kind an external file may hold, and a
/// user key above the one before. Returns the first and last user keys.
fn check_entries(table: &Arc<Table>, path: &Path) -> Result<(Vec<u8>, Vec<u8>)> {
    let bad = |why: String| Error::InvalidArgument(format!("{}: {why}", path.display()));
    let mut it = table.iter_whole_file();
    it.seek_to_first();
    let mut first: Option<Vec<u8>> = None;
    let mut last: Vec<u8> = Vec::new();
    while it.valid() {
        let parsed = key::parse(it.key()).ok_or_else(|| bad("an entry has a malformed key".into()))?;
        let foreign_kind = matches!(parsed.kind, key::ValueKind::Blob | key::ValueKind::RangeDelete);
        if parsed.seq != 0 || foreign_kind {
            return Err(bad("not written by SstFileWriter (sequence numbers or blob references)".into()));
        }
        if first.is_some() && key::compare_user_keys(parsed.user_key, &last).is_le() {
            return Err(bad("keys are not in increasing order".into()));
        }
        last.clear();
        last.extend_from_slice(parsed.user_key);
        first.get_or_insert_with(|| parsed.user_key.to_vec());
        it.next();
    }
    it.status()?;
    let first = first.ok_or_else(|| bad("the file has no entries".into()))?;
    Ok((first, last))
}

impl DbInner {
    /// Takes the compaction slot as a manual compaction does, so that no compaction changes
    /// the levels while an ingestion picks one and installs into it.
    fn hold_compactions(&self) -> Result<()> {
        let mut bg = self.bg.lock();
        bg.manual_waiting += 1;
        while bg.compacting && bg.error.is_none() {
            self.bg_cv.wait(&mut bg);
        }
        bg.manual_waiting -= 1;
        if let Some(e) = &bg.error {
            return Err(e.duplicate());
        }
        bg.compacting = true;
        Ok(())
    }

    fn release_compactions(&self) {
        let mut bg = self.bg.lock();
        bg.compacting = false;
        self.bg_cv.notify_all();
    }

    /// Flushes until the memtables hold nothing in the files' range, then copies the files in
    /// with writers held off, so no write can slip between the check and the new entries.
    fn ingest_checked(&self, family: &Family, files: &Checked) -> Result<()> {
        for _ in 0..ATTEMPTS {
            if self.memtables_overlap(family, files) {
                self.flush_and_wait(family)?;
            }
            let _leader = self.leader.lock();
            if let Some(e) = self.background_error() {
                return Err(e);
            }
            if family.is_dropped() {
                return Err(super::families::dropped(family));
            }
            if self.memtables_overlap(family, files) {
                continue;
            }
            // Only now, with the leader lock held: a writer stalled on L0 holds that lock while it
            // waits for a compaction, so holding compactions off before taking it could deadlock.
            // A running compaction finishes without the leader lock.
            self.hold_compactions()?;
            let copied = run_job("ingestion", || self.copy_in(family, files));
            self.release_compactions();
            return copied;
        }
        Err(Error::Busy("writers kept writing into the range of the files being ingested".into()))
    }

    /// Whether a memtable holds an entry or a range tombstone in the files' range. A tombstone
    /// counts too: left in a memtable above tables whose entries are newer than it, it would
    /// hide them once a compaction gives those entries sequence number 0.
    fn memtables_overlap(&self, family: &Family, files: &Checked) -> bool {
        let sv = family.super_version.load();
        std::iter::once(&sv.mem).chain(sv.imm.iter()).any(|mem| {
            let mut it = mem.iter();
            it.seek(&key::seek_key(&files.smallest, key::MAX_SEQ));
            let entry = it.valid() && key::compare_user_keys(key::user_key(it.key()), &files.largest).is_le();
            entry
                || (mem.has_range_dels()
                    && mem.range_tombstones().iter().any(|t| t.overlaps(&files.smallest, &files.largest)))
        })
    }

    /// Under the leader lock: rewrites the entries with the next sequence number, installs the
    /// tables, then publishes the sequence number (readers and snapshots see it only then).
    fn copy_in(&self, family: &Family, files: &Checked) -> Result<()> {
        let seq = self.last_sequence.load(Ordering::Acquire) + 1;
        let version = family.super_version.load().version.clone();
        let level = target_level(&version, &files.smallest, &files.largest);
        let children: Vec<Box<dyn InternalIterator>> =
            files.tables.iter().map(|t| Box::new(t.iter_whole_file()) as Box<dyn InternalIterator>).collect();
        let mut input = Sequenced::new(MergingIterator::new(children), seq);
        let spec = OutputSpec {
            level,
            max_file_size: family.opts.target_file_size,
            bottommost: false,
            snapshots: self.snapshots.sequences(),
            relocate_blob_files: Default::default(),
            scan_runs: 0,
            // SstFileWriter writes no range deletions.
            range_dels: Vec::new(),
        };
        let new_file_number = || self.versions.lock().new_file_number();
        let out = job::run(&self.job_env(family, &new_file_number), &mut input, &spec)?;
        let mut edit = super::background::edit_for(&out, level);
        edit.column_family = family.id;
        edit.last_sequence = Some(seq);
        self.install(family, edit, Vec::new(), |_, sv, version| SuperVersion {
            mem: Arc::clone(&sv.mem),
            imm: sv.imm.clone(),
            version,
        })?;
        self.last_sequence.store(seq, Ordering::Release);
        Ok(())
    }
}

/// The deepest level where the range `[smallest, largest]` can go: no file of that level or of
/// any level above overlaps it (their entries are older and must stay below the new ones).
fn target_level(version: &Version, smallest: &[u8], largest: &[u8]) -> usize {
    let mut level = 0;
    for l in 0..NUM_LEVELS {
        if !version.overlapping(l, Some(smallest), Some(largest)).is_empty() {
            break;
        }
        level = l;
    }
    level
}
