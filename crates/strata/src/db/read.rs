//! Point lookups. A get pins the current `SuperVersion` (one atomic load, no lock), then asks each
//! source newest to oldest: the mutable memtable, the immutable memtables, L0 files newest first,
//! then at most one file per deeper level. The first Put, Blob pointer or Delete visible at the
//! read's sequence number decides; merge operands met on the way are collected and folded onto it.
//! A source holding range tombstones (a flag on the memtable, a count on the file's metadata:
//! one branch when there are none) first says which of them, visible at the read's sequence
//! number, covers the key; an entry older than the newest such tombstone reads as deleted.
//! A multi-get does the same for each of its keys under one super version and sequence number.

use std::sync::atomic::Ordering;

use super::family::Family;
use super::{DbInner, SuperVersion};
use crate::blob::{BlobPointer, BlobWalk};
use crate::compaction::job::{BlobSource, JobEnv};
use crate::error::{Error, Result};
use crate::key::{self, SeqNo, ValueKind};
use crate::options::{ReadOptions, NUM_LEVELS};
use crate::range_del::Fragments;
use crate::version::edit::FileMeta;

/// What the newest visible entry of a key turned out to be.
pub(crate) enum Base {
    /// An inline value.
    Value(Vec<u8>),
    /// A value in a blob file (the encoded pointer).
    Blob(Vec<u8>),
    /// A tombstone, or no entry at all.
    Absent,
}

/// The state of one lookup as it visits sources newest to oldest.
pub(crate) struct Lookup<'k> {
    user_key: &'k [u8],
    /// Merge operands, newest first.
    operands: Vec<Vec<u8>>,
    base: Option<Base>,
    error: Option<Error>,
    /// The newest visible range tombstone over the key in the sources seen so far (0: none);
    /// entries older than it are deleted.
    hidden_below: SeqNo,
}

impl<'k> Lookup<'k> {
    pub fn new(user_key: &'k [u8]) -> Self {
        Self { user_key, operands: Vec::new(), base: None, error: None, hidden_below: 0 }
    }

    /// Notes a source's range tombstones, as seen by a read at `read_seq`.
    fn cover(&mut self, tombstones: Option<&Fragments>, read_seq: SeqNo) {
        if let Some(t) = tombstones.and_then(|f| f.newest_covering(self.user_key, read_seq)) {
            self.hidden_below = self.hidden_below.max(t);
        }
    }

    pub fn done(&self) -> bool {
        self.base.is_some() || self.error.is_some()
    }

    /// Visits one entry at or after the seek key; returns whether to look at the next one.
    pub fn visit(&mut self, ikey: &[u8], value: &[u8]) -> bool {
        let Some(parsed) = key::parse(ikey) else {
            self.error = Some(Error::corruption("undecodable internal key"));
            return false;
        };
        if !key::same_user_key(parsed.user_key, self.user_key) {
            return false;
        }
        if parsed.seq < self.hidden_below {
            self.base = Some(Base::Absent);
            return false;
        }
        match parsed.kind {
            ValueKind::RangeDelete => {
                self.error = Some(Error::corruption("a range deletion among point entries"));
            }
            ValueKind::Put => self.base = Some(Base::Value(value.to_vec())),
            ValueKind::Blob => self.base = Some(Base::Blob(value.to_vec())),
            ValueKind::Delete => self.base = Some(Base::Absent),
            ValueKind::Merge => {
                self.operands.push(value.to_vec());
                return true;
            }
        }
        false
    }

    fn take_error(&mut self) -> Result<()> {
        self.error.take().map_or(Ok(()), Err)
    }
}

impl DbInner {
    pub(crate) fn get(
        &self,
        family: &Family,
        opts: &ReadOptions,
        user_key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        let seq = self.read_sequence(opts);
        let sv = family.super_version.load();
        self.get_in(family, &sv, seq, user_key, opts.fill_cache)
    }

    /// Point reads of `keys`, all at one sequence number and one super version: a consistent
    /// view across the keys, as if read under one snapshot, for one load of the shared state.
    pub(crate) fn multi_get(
        &self,
        family: &Family,
        opts: &ReadOptions,
        keys: &[&[u8]],
    ) -> Vec<Result<Option<Vec<u8>>>> {
        let seq = self.read_sequence(opts);
        let sv = family.super_version.load();
        keys.iter().map(|k| self.get_in(family, &sv, seq, k, opts.fill_cache)).collect()
    }

    fn read_sequence(&self, opts: &ReadOptions) -> SeqNo {
        match &opts.snapshot {
            Some(s) => s.sequence(),
            None => self.last_sequence.load(Ordering::Acquire),
        }
    }

    fn get_in(
        &self,
        family: &Family,
        sv: &SuperVersion,
        seq: SeqNo,
        user_key: &[u8],
        fill_cache: bool,
    ) -> Result<Option<Vec<u8>>> {
        let lookup_key = key::seek_key(user_key, seq);
        let mut lookup = Lookup::new(user_key);
        for mem in std::iter::once(&sv.mem).chain(&sv.imm) {
            if lookup.done() {
                break;
            }
            if mem.has_range_dels() {
                lookup.cover(mem.range_dels().as_deref(), seq);
            }
            let mut visit = |k: &[u8], v: &[u8]| lookup.visit(k, v);
            mem.get(&lookup_key, &mut visit);
        }
        if !lookup.done() {
            self.get_from_files(&sv.version, &lookup_key, fill_cache, &mut lookup)?;
        }
        lookup.take_error()?;
        self.stats.gets.fetch_add(1, Ordering::Relaxed);
        self.resolve(family, user_key, lookup)
    }

    fn get_from_files(
        &self,
        version: &crate::version::version::Version,
        lookup_key: &[u8],
        fill_cache: bool,
        lookup: &mut Lookup<'_>,
    ) -> Result<()> {
        let user_key = key::user_key(lookup_key);
        let l0 = version.files[0]
            .iter()
            .filter(|f| key::user_key(&f.smallest) <= user_key && key::user_key(&f.largest) >= user_key);
        let deeper = (1..NUM_LEVELS).filter_map(|level| version.find_file(level, user_key));
        for f in l0.chain(deeper) {
            self.get_from_file(f, lookup_key, fill_cache, lookup)?;
            if lookup.done() {
                return Ok(());
            }
        }
        Ok(())
    }

    fn get_from_file(
        &self,
        f: &FileMeta,
        lookup_key: &[u8],
        fill_cache: bool,
        lookup: &mut Lookup<'_>,
    ) -> Result<()> {
        let has_range_dels = f.num_range_deletions > 0;
        self.table_cache.with_table(f.number, |t| {
            if has_range_dels {
                let read_seq = key::trailer(lookup_key) >> 8;
                lookup.cover(t.range_dels().map(|f| &**f), read_seq);
            }
            t.get(lookup_key, fill_cache, &mut |k, v| lookup.visit(k, v))
        })?
    }

    /// Turns a finished lookup into the user's value: reads a blob, folds merge operands.
    fn resolve(&self, family: &Family, user_key: &[u8], lookup: Lookup<'_>) -> Result<Option<Vec<u8>>> {
        let base = match lookup.base {
            Some(Base::Value(v)) => Some(v),
            Some(Base::Blob(ptr)) => Some(self.read_blob(user_key, &ptr)?),
            Some(Base::Absent) | None => None,
        };
        if lookup.operands.is_empty() {
            return Ok(base);
        }
        self.full_merge(family, user_key, base.as_deref(), lookup.operands.iter().rev().map(Vec::as_slice))
            .map(Some)
    }

    /// The sequence number of the newest entry of `user_key` in `family` (put, delete, merge
    /// operand, or range tombstone over it), whatever it is, or `None` when the family holds no
    /// entry of it: what a transaction's conflict check compares with its snapshot. Reads every
    /// source newest first and stops at the first that holds the key.
    pub(crate) fn newest_sequence(&self, family: &Family, user_key: &[u8]) -> Result<Option<SeqNo>> {
        let sv = family.super_version.load();
        let lookup_key = key::seek_key(user_key, key::MAX_SEQ);
        let found = std::cell::Cell::new(None);
        let note = |seq: Option<SeqNo>| {
            if let Some(s) = seq {
                found.set(Some(found.get().map_or(s, |f: SeqNo| f.max(s))));
            }
        };
        let newest_tombstone =
            |f: Option<&Fragments>| f.and_then(|f| f.newest_covering(user_key, key::MAX_SEQ));
        let mut visit = |k: &[u8], _: &[u8]| {
            note(key::parse(k).filter(|p| key::same_user_key(p.user_key, user_key)).map(|p| p.seq));
            false
        };
        for mem in std::iter::once(&sv.mem).chain(&sv.imm) {
            if mem.has_range_dels() {
                note(newest_tombstone(mem.range_dels().as_deref()));
            }
            mem.get(&lookup_key, &mut visit);
            if found.get().is_some() {
                return Ok(found.get());
            }
        }
        let version = &sv.version;
        let l0 = version.files[0]
            .iter()
            .filter(|f| key::user_key(&f.smallest) <= user_key && key::user_key(&f.largest) >= user_key);
        let deeper = (1..NUM_LEVELS).filter_map(|level| version.find_file(level, user_key));
        for f in l0.chain(deeper) {
            self.table_cache.with_table(f.number, |t| {
                if f.num_range_deletions > 0 {
                    note(newest_tombstone(t.range_dels().map(|f| &**f)));
                }
                t.get(&lookup_key, true, &mut visit)
            })??;
            if found.get().is_some() {
                return Ok(found.get());
            }
        }
        Ok(found.get())
    }

    /// What a flush or compaction job of `family` may use (`compaction::job`).
    pub(crate) fn job_env<'a>(
        &'a self,
        family: &'a Family,
        new_file_number: &'a dyn Fn() -> u64,
    ) -> JobEnv<'a> {
        JobEnv {
            fs: self.fs.as_ref(),
            dir: &self.dir,
            opts: &family.opts,
            new_file_number,
            blobs: self,
            cancel: &self.closing,
            compaction_filter: None,
        }
    }

    /// Reads the value an encoded blob pointer refers to.
    pub(crate) fn read_blob(&self, user_key: &[u8], encoded: &[u8]) -> Result<Vec<u8>> {
        self.read_blob_walking(user_key, encoded, None)
    }

    /// [`DbInner::read_blob`] for a reader going through blob records in file order, which
    /// notes each read in `walk` (see `BlobReader::note_walk`).
    pub(crate) fn read_blob_walking(
        &self,
        user_key: &[u8],
        encoded: &[u8],
        walk: Option<&mut BlobWalk>,
    ) -> Result<Vec<u8>> {
        let ptr = BlobPointer::decode(encoded)?;
        self.stats.blob_reads.fetch_add(1, Ordering::Relaxed);
        let mut out = Vec::new();
        self.table_cache.with_blob(ptr.file_number, |reader| match walk {
            Some(walk) => reader.get_into_walking(&ptr, user_key, &mut out, walk),
            None => reader.get_into(&ptr, user_key, &mut out),
        })??;
        Ok(out)
    }

    /// Applies merge operands (oldest first) to `base` with the configured operator.
    pub(crate) fn full_merge<'a>(
        &self,
        family: &Family,
        user_key: &[u8],
        base: Option<&[u8]>,
        operands_oldest_first: impl Iterator<Item = &'a [u8]>,
    ) -> Result<Vec<u8>> {
        let op =
            family.opts.merge_operator.as_ref().ok_or_else(|| {
                Error::Merge("merge operands found but no merge operator is configured".into())
            })?;
        let operands: Vec<&[u8]> = operands_oldest_first.collect();
        op.full_merge(user_key, base, &operands)
            .ok_or_else(|| Error::Merge(format!("operator {} failed on key {:?}", op.name(), user_key)))
    }
}

impl BlobSource for DbInner {
    fn read_blob(&self, user_key: &[u8], encoded: &[u8], walk: Option<&mut BlobWalk>) -> Result<Vec<u8>> {
        self.read_blob_walking(user_key, encoded, walk)
    }
}
