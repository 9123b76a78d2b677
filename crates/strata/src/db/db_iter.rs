//! The user-facing iterator. It merges every memtable and file of one pinned `SuperVersion` and
//! turns the stream of internal entries into user entries: hides versions newer than its
//! sequence number, shadowed versions and tombstones (range tombstones too, see
//! `iter_range_dels`: an entry a newer visible one covers reads as deleted), folds merge operands,
//! reads blob values, and honours bounds (a prefix becomes a pair of bounds).
//!
//! Invariant, moving forward: the internal iterator sits after the current user key's newest
//! visible entry and before the next user key's entries; the current key's older entries in
//! between are skipped by the next step (`skip_pending`), which compares each entry's key once
//! for both purposes. Moving backward: just before the current key's entries. A direction change
//! re-seeks to restore them.

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::blob_lookahead::{BlobLookahead, LookaheadSource};
use super::family::Family;
use super::iter_pool::{PooledIter, ThreadDb};
use super::iter_range_dels::{hidden, IterRangeDels};
use super::prefix_filter::{prefix_filter, PrefixFilter};
use super::{DbInner, SuperVersion};
use crate::blob::readahead::Readahead;
use crate::blob::{BlobPointer, BlobReader, BlobWalk};
use crate::error::{Error, Result};
use crate::iter::first_key::KnownFirstKey;
use crate::iter::level::{LevelIterator, TableOpener};
use crate::iter::merging::MergingIterator;
use crate::iter::{EmptyIterator, InternalIterator};
use crate::key::{self, SeqNo, ValueKind, MAX_SEQ};
use crate::options::{ReadOptions, NUM_LEVELS};
use crate::snapshot::Snapshot;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// An iterator over user keys and values in ascending byte order, created by
/// [`Db::iter`](crate::Db::iter). Like RocksDB's, it is a cursor rather than a Rust `Iterator`:
/// it is not positioned until a `seek*` call, [`valid`](DbIterator::valid) says whether it is on
/// an entry, and [`next`](DbIterator::next) / [`prev`](DbIterator::prev) move it. Once it becomes
/// invalid, check [`status`](DbIterator::status) to tell the end from an error (moving methods
/// cannot fail themselves).
///
/// The iterator reads one consistent view: the snapshot in its `ReadOptions`, or the state when
/// it was created. It keeps the files of that view alive, so do not hold it longer than needed.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::{Db, Options, ReadOptions, WriteOptions};
/// let db = Db::open(dir.path(), Options::default())?;
/// for (k, v) in [("a", "1"), ("c", "3"), ("e", "5")] {
///     db.put(k.as_bytes(), v.as_bytes())?;
/// }
/// let mut it = db.cursor(&ReadOptions::new())?;
/// assert!(!it.valid()); // not positioned yet
///
/// // A full forward scan.
/// let mut all = Vec::new();
/// it.seek_to_first();
/// while it.valid() {
///     all.push((it.key().to_vec(), it.value().to_vec()));
///     it.next();
/// }
/// it.status()?; // the loop ended at the end, not on an error
/// assert_eq!(all, [(b"a".to_vec(), b"1".to_vec()), (b"c".to_vec(), b"3".to_vec()), (b"e".to_vec(), b"5".to_vec())]);
///
/// it.seek(b"b"); // first key >= "b"
/// assert_eq!(it.key(), b"c");
/// it.seek_for_prev(b"d"); // last key <= "d"
/// assert_eq!(it.key(), b"c");
/// it.prev();
/// assert_eq!((it.key(), it.value()), (&b"a"[..], &b"1"[..]));
/// it.prev();
/// assert!(!it.valid()); // before the first key
/// it.seek_to_last();
/// assert_eq!(it.key(), b"e");
/// it.seek(b"f");
/// assert!(!it.valid()); // past the last key
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct DbIterator {
    /// The database, through this thread's handle (see `iter_pool`).
    db: Arc<ThreadDb>,
    iter: MergingIterator,
    seq: SeqNo,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    direction: Direction,
    /// Moving forward: the internal iterator may still be on older entries of `key`, which the
    /// next step skips before anything else.
    skip_pending: bool,
    valid: bool,
    key: Vec<u8>,
    value: Vec<u8>,
    /// The internal key of the last `seek`, kept to spare an allocation per seek.
    seek_target: Vec<u8>,
    /// The blob files of the last blob values read, most recent first (at most
    /// `KEPT_BLOB_FILES`): a scan through one file looks it up once rather than per entry, and
    /// seeks that land in files read before take no shared reference count.
    blob_files: Vec<Arc<BlobReader>>,
    /// When set, the current value is these bytes of the mapping of `blob_files[0]` (no copy)
    /// instead of `value`.
    mapped_value: Option<Range<usize>>,
    /// Blob bytes read ahead for a scan, when blob files are not mapped (`use_mmap_reads`).
    readahead: Readahead,
    /// Asks for read-ahead of a blob file when this iterator walks its mapping forward for long.
    blob_walk: BlobWalk,
    /// Hints the blob records of the keys ahead of a forward scan over unmapped blob files.
    lookahead: BlobLookahead,
    /// The current value came from a blob file that is not mapped (a `pread`).
    value_was_read: bool,
    error: Option<Error>,
    /// Blob values read since the last seek, added to `Stats::blob_reads` at the next seek or
    /// on drop: a locked add per entry would fence every step of a scan.
    blob_reads: u64,
    /// The super version `iter` reads; `None` only once `drop` handed it to the pool.
    pinned: Option<Arc<SuperVersion>>,
    /// False when the children were chosen for one prefix (`db::prefix_filter`).
    poolable: bool,
    fill_cache: bool,
    /// The column family read; `None` for the default one (no reference count to touch).
    family: Option<Arc<Family>>,
    /// The range tombstones visible to this iterator; `None` (the usual case) when none.
    range_dels: Option<IterRangeDels>,
    _snapshot: Option<Snapshot>,
}

/// Buffers larger than this are not kept for the next iterator of the thread.
const POOLED_BUFFER_LIMIT: usize = 64 << 10;

/// Blob readers an iterator keeps open (see `DbIterator::blob_files`).
const KEPT_BLOB_FILES: usize = 16;

impl Drop for DbIterator {
    /// Leaves the internals to this thread's next iterator of the same super version, unless
    /// something failed (children keep their first error).
    fn drop(&mut self) {
        self.publish_counts();
        self.end_lookahead();
        if !self.poolable || self.error.is_some() || self.iter.status().is_err() {
            return;
        }
        let Some(sv) = self.pinned.take() else { return };
        let keep = |buf: &mut Vec<u8>| {
            let buf = std::mem::take(buf);
            if buf.capacity() <= POOLED_BUFFER_LIMIT {
                buf
            } else {
                Vec::new()
            }
        };
        let entry = PooledIter {
            sv,
            fill_cache: self.fill_cache,
            iter: std::mem::replace(&mut self.iter, MergingIterator::new(Vec::new())),
            key: keep(&mut self.key),
            value: keep(&mut self.value),
            seek_target: keep(&mut self.seek_target),
            blob_files: std::mem::take(&mut self.blob_files),
        };
        let family = self.family.as_deref().unwrap_or(&self.db.default);
        self.db.iter_pool.put(entry, &family.super_version, &self.db.closing);
    }
}

/// The smallest key greater than every key starting with `prefix`, if one exists.
fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut s = prefix.to_vec();
    while let Some(last) = s.pop() {
        if last != 0xff {
            s.push(last + 1);
            return Some(s);
        }
    }
    None
}

fn tighter(a: Option<Vec<u8>>, b: Option<Vec<u8>>, pick_max: bool) -> Option<Vec<u8>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if (a > b) == pick_max { a } else { b }),
        (a, b) => a.or(b),
    }
}

impl DbIterator {
    pub(crate) fn new(db: &Arc<DbInner>, family: Option<Arc<Family>>, opts: &ReadOptions) -> Result<Self> {
        let current = family.as_deref().unwrap_or(&db.default).super_version.load();
        let seq = match &opts.snapshot {
            Some(s) => s.sequence(),
            None => db.last_sequence.load(Ordering::Acquire),
        };
        // The internals the thread's last iterator left, if they read this super version: no
        // shared reference count is touched (see `iter_pool`).
        let (handle, pooled) = db.iter_pool.take(db, &current, opts.fill_cache);
        // An iterator whose children were chosen for its prefix is neither built from nor
        // left to the pool: another iterator may want other tables.
        let prefix_filter = prefix_filter(family.as_deref().unwrap_or(&db.default), opts);
        let pooled = pooled.filter(|_| prefix_filter.is_none());
        let (pinned, mut iter, key, value, seek_target, blob_files) = match pooled {
            Some(p) => (p.sv, p.iter, p.key, p.value, p.seek_target, p.blob_files),
            None => {
                let pinned = arc_swap::Guard::into_inner(current);
                let kids = children(db, &pinned, opts.fill_cache, prefix_filter.as_ref())?;
                (pinned, MergingIterator::new(kids), Vec::new(), Vec::new(), Vec::new(), Vec::new())
            }
        };
        iter.forget_position();
        let range_dels = IterRangeDels::gather(db, &pinned, seq)?;
        let prefix_upper = opts.prefix.as_deref().and_then(prefix_successor);
        Ok(Self {
            iter,
            seq,
            lower: tighter(opts.lower_bound.clone(), opts.prefix.clone(), true),
            upper: tighter(opts.upper_bound.clone(), prefix_upper, false),
            direction: Direction::Forward,
            skip_pending: false,
            valid: false,
            key,
            value,
            seek_target,
            blob_files,
            mapped_value: None,
            readahead: Readahead::default(),
            blob_walk: BlobWalk::default(),
            lookahead: BlobLookahead::default(),
            value_was_read: false,
            error: None,
            blob_reads: 0,
            pinned: Some(pinned),
            poolable: prefix_filter.is_none(),
            fill_cache: opts.fill_cache,
            family,
            range_dels,
            _snapshot: opts.snapshot.clone(),
            db: handle,
        })
    }

    /// The family read and the effective key bounds (`[lower, upper)`, a prefix already turned
    /// into bounds), for iterators layered on this one (`txn::BatchAndDbIterator`).
    pub(crate) fn family_and_bounds(&self) -> (&Family, Option<&[u8]>, Option<&[u8]>) {
        let family = self.family.as_deref().unwrap_or(&self.db.default);
        (family, self.lower.as_deref(), self.upper.as_deref())
    }

    /// True when positioned at an entry; `false` before the first seek, after moving past either
    /// end, or after an error (see [`DbIterator::status`]). See the example on [`DbIterator`].
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current key. Requires `valid()` (otherwise the result is unspecified, but safe). See the
    /// example on [`DbIterator`].
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The current value, borrowed from the iterator (no copy for values in blob files). Requires
    /// `valid()`. See the example on [`DbIterator`].
    pub fn value(&self) -> &[u8] {
        match (&self.mapped_value, self.blob_files.first()) {
            (Some(range), Some(file)) => file.mapped_bytes(range.clone()),
            _ => &self.value,
        }
    }

    /// `Ok(())` unless an error was met while reading: the first one, typically `Corruption` (a
    /// block or blob failed its checksum), `Io` or `Merge`. Check it once `valid()` turns false.
    /// See the example on [`DbIterator`].
    pub fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.duplicate()),
            None => self.iter.status(),
        }
    }

    /// Positions at the first key (the first at or after `lower_bound` / the prefix, when set).
    /// See the example on [`DbIterator`].
    pub fn seek_to_first(&mut self) {
        match self.lower.clone() {
            Some(lower) => self.seek(&lower),
            None => {
                self.iter.seek_to_first();
                self.direction = Direction::Forward;
                self.skip_pending = false;
                self.end_lookahead();
                self.find_next_user_entry();
            }
        }
    }

    /// Positions at the last key (the last before `upper_bound` / past the prefix, when set).
    /// See the example on [`DbIterator`].
    pub fn seek_to_last(&mut self) {
        match self.upper.clone() {
            Some(upper) => self.seek_before(&upper),
            None => {
                self.iter.seek_to_last();
                self.direction = Direction::Reverse;
                self.find_prev_user_entry();
            }
        }
    }

    /// Positions at the first key `>= target` (and within the bounds); invalid if there is none.
    /// See the example on [`DbIterator`].
    pub fn seek(&mut self, target: &[u8]) {
        self.publish_counts();
        let target = match &self.lower {
            Some(lower) if target < lower.as_slice() => lower.as_slice(),
            _ => target,
        };
        self.seek_target.clear();
        key::append_internal_key(&mut self.seek_target, target, MAX_SEQ, key::KIND_FOR_SEEK);
        self.iter.seek(&self.seek_target);
        self.direction = Direction::Forward;
        self.skip_pending = false;
        self.end_lookahead();
        self.find_next_user_entry();
    }

    /// Positions at the last key `<= target` (and within the bounds); invalid if there is none.
    /// See the example on [`DbIterator`].
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        if let Some(upper) = self.upper.clone() {
            if target >= upper.as_slice() {
                return self.seek_before(&upper);
            }
        }
        self.iter.seek_for_prev(&key::make_internal_key(target, 0, ValueKind::Delete));
        self.direction = Direction::Reverse;
        self.find_prev_user_entry();
    }

    /// Positions at the last key `< bound`.
    fn seek_before(&mut self, bound: &[u8]) {
        self.place_internal_before(bound);
        self.find_prev_user_entry();
    }

    /// Puts the internal iterator on the last entry whose user key is `< user_key` (the
    /// reverse-direction invariant) and sets the direction to reverse.
    fn place_internal_before(&mut self, user_key: &[u8]) {
        self.iter.seek(&key::seek_key(user_key, MAX_SEQ));
        if self.iter.valid() {
            self.iter.prev();
        } else if self.iter.status().is_ok() {
            self.iter.seek_to_last();
        }
        self.direction = Direction::Reverse;
    }

    /// Moves to the next key; becomes invalid past the last one. Does nothing when not `valid()`.
    /// See the example on [`DbIterator`].
    pub fn next(&mut self) {
        if !self.valid {
            return;
        }
        if self.direction == Direction::Reverse {
            self.iter.seek(&key::seek_key(&self.key, MAX_SEQ));
            self.skip_pending = true;
            self.direction = Direction::Forward;
        } else if self.value_was_read {
            self.look_ahead();
        }
        self.find_next_user_entry();
    }

    /// Blob records the lookahead has hinted so far.
    #[cfg(test)]
    pub(crate) fn lookahead_hints(&self) -> u64 {
        self.lookahead.hinted()
    }

    /// Ends the lookahead's current scan, noting its length for the next scans' first window.
    fn end_lookahead(&mut self) {
        if let Some(steps) = self.lookahead.reset() {
            self.db.scan_lengths.note(steps);
        }
    }

    /// Keeps the blob records of the next keys in flight while a forward scan reads values
    /// from unmapped blob files (see `blob_lookahead`).
    fn look_ahead(&mut self) {
        let mut lookahead = std::mem::take(&mut self.lookahead);
        lookahead.step(&*self, &self.key, self.seq, self.upper.as_deref());
        self.lookahead = lookahead;
    }

    /// Moves to the previous key; becomes invalid before the first one. Does nothing when not
    /// `valid()`. See the example on [`DbIterator`].
    pub fn prev(&mut self) {
        if !self.valid {
            return;
        }
        if self.direction == Direction::Forward {
            let current = std::mem::take(&mut self.key);
            self.place_internal_before(&current);
            self.key = current;
        }
        self.find_prev_user_entry();
    }

    /// Adds what this iterator counted to the database's statistics.
    fn publish_counts(&mut self) {
        if self.blob_reads > 0 {
            self.db.stats.blob_reads.fetch_add(std::mem::take(&mut self.blob_reads), Ordering::Relaxed);
        }
    }

    fn fail(&mut self, e: Error) {
        self.error.get_or_insert(e);
        self.valid = false;
    }

    /// Finds the next visible user entry at or after the internal position (after skipping what
    /// is left of `key`'s entries when `skip_pending`).
    fn find_next_user_entry(&mut self) {
        self.valid = false;
        self.mapped_value = None;
        self.value_was_read = false;
        while self.iter.valid() {
            let Some(p) = key::parse(self.iter.key()) else {
                return self.fail(Error::corruption("undecodable internal key in iterator"));
            };
            if self.skip_pending {
                if key::same_user_key(p.user_key, &self.key) {
                    self.iter.next();
                    continue;
                }
                self.skip_pending = false;
            }
            if p.seq > self.seq {
                self.iter.next();
                continue;
            }
            if self.upper.as_deref().is_some_and(|u| p.user_key >= u) {
                return;
            }
            let kind =
                if hidden(&mut self.range_dels, p.user_key, p.seq) { ValueKind::Delete } else { p.kind };
            self.key.clear();
            self.key.extend_from_slice(p.user_key);
            let outcome = self.collect_forward(kind);
            if kind != ValueKind::Merge {
                // Still on the entry just read, the key's newest visible one: step off it
                // rather than compare it with itself.
                self.iter.next();
            }
            self.skip_pending = true;
            match outcome {
                Ok(true) => {
                    self.valid = true;
                    return;
                }
                Ok(false) => {}
                Err(e) => return self.fail(e),
            }
        }
    }

    /// At the newest visible entry of `self.key`: computes its value. Returns false for a
    /// deleted key. Leaves the internal iterator somewhere within the key's entries.
    fn collect_forward(&mut self, kind: ValueKind) -> Result<bool> {
        match kind {
            ValueKind::Delete => Ok(false),
            ValueKind::RangeDelete => Err(Error::corruption("a range deletion among point entries")),
            ValueKind::Put => {
                self.value.clear();
                self.value.extend_from_slice(self.iter.value());
                Ok(true)
            }
            ValueKind::Blob => {
                self.read_blob_value()?;
                Ok(true)
            }
            ValueKind::Merge => {
                let mut operands = vec![self.iter.value().to_vec()];
                let mut base = None;
                self.iter.next();
                while self.iter.valid() {
                    let Some(p) = key::parse(self.iter.key()) else {
                        return Err(Error::corruption("undecodable internal key in iterator"));
                    };
                    if !key::same_user_key(p.user_key, &self.key) {
                        break;
                    }
                    let kind = if hidden(&mut self.range_dels, p.user_key, p.seq) {
                        ValueKind::Delete
                    } else {
                        p.kind
                    };
                    match kind {
                        ValueKind::RangeDelete => {
                            return Err(Error::corruption("a range deletion among point entries"))
                        }
                        ValueKind::Merge => operands.push(self.iter.value().to_vec()),
                        ValueKind::Put => {
                            base = Some(self.iter.value().to_vec());
                            break;
                        }
                        ValueKind::Blob => {
                            base = Some(self.db.read_blob(&self.key, self.iter.value())?);
                            break;
                        }
                        ValueKind::Delete => break,
                    }
                    self.iter.next();
                }
                self.value = self.db.full_merge(
                    self.family.as_deref().unwrap_or(&self.db.default),
                    &self.key,
                    base.as_deref(),
                    operands.iter().rev().map(Vec::as_slice),
                )?;
                Ok(true)
            }
        }
    }

    /// Reads the blob value the internal iterator's entry points to: borrowed from the file's
    /// mapping when it is stored raw, else copied (decompressed) into `value`.
    fn read_blob_value(&mut self) -> Result<()> {
        let ptr = BlobPointer::decode(self.iter.value())?;
        if self.blob_files.first().is_none_or(|f| f.file_number() != ptr.file_number) {
            self.switch_blob_file(ptr.file_number)?;
        }
        self.blob_reads += 1;
        let file = &self.blob_files[0];
        file.note_walk(&mut self.blob_walk, &ptr);
        match file.mapped_value(&ptr, &self.key)? {
            Some(range) => self.mapped_value = Some(range),
            None if file.is_mapped() => file.get_into(&ptr, &self.key, &mut self.value)?,
            None => {
                self.value_was_read = true;
                // The lookahead hinted this record alone: a wider window would wait on the disk
                // for bytes around it.
                if self.lookahead.is_active() {
                    file.get_into(&ptr, &self.key, &mut self.value)?
                } else {
                    file.get_into_ahead(&ptr, &self.key, &mut self.value, &mut self.readahead)?
                }
            }
        }
        Ok(())
    }

    /// Makes blob file `number` the first of `blob_files`, from those kept or from the table
    /// cache (dropping the least recently used beyond `KEPT_BLOB_FILES`).
    fn switch_blob_file(&mut self, number: u64) -> Result<()> {
        match self.blob_files.iter().position(|f| f.file_number() == number) {
            Some(i) => self.blob_files[..=i].rotate_right(1),
            None => {
                self.blob_files.insert(0, self.db.table_cache.blob(number)?);
                self.blob_files.truncate(KEPT_BLOB_FILES);
            }
        }
        Ok(())
    }

    /// Finds the previous visible user entry ending at the internal position.
    fn find_prev_user_entry(&mut self) {
        self.valid = false;
        self.mapped_value = None;
        self.value_was_read = false;
        self.end_lookahead();
        while self.iter.valid() {
            let uk = key::user_key(self.iter.key()).to_vec();
            if self.lower.as_deref().is_some_and(|l| uk.as_slice() < l) {
                return;
            }
            // Positioning puts the internal iterator below `upper`, but a child that failed a
            // read during that seek drops out of the merge and comes back on the re-seek of a
            // direction change, possibly at or above `upper`: skip back past it.
            if self.upper.as_deref().is_some_and(|u| uk.as_slice() >= u) {
                self.iter.prev();
                continue;
            }
            match self.collect_backward(&uk) {
                Ok(Some(value)) => {
                    self.key = uk;
                    self.value = value;
                    self.valid = true;
                    return;
                }
                Ok(None) => {}
                Err(e) => return self.fail(e),
            }
        }
    }

    /// Walks `uk`'s entries oldest to newest (moving backward) and computes its visible value.
    fn collect_backward(&mut self, uk: &[u8]) -> Result<Option<Vec<u8>>> {
        enum Base {
            Absent,
            Inline(Vec<u8>),
            Blob(Vec<u8>),
        }
        let mut base = Base::Absent;
        let mut operands: Vec<Vec<u8>> = Vec::new();
        let mut visible = false;
        while self.iter.valid() {
            let Some(p) = key::parse(self.iter.key()) else {
                return Err(Error::corruption("undecodable internal key in iterator"));
            };
            if !key::same_user_key(p.user_key, uk) {
                break;
            }
            if p.seq <= self.seq {
                visible = true;
                let kind =
                    if hidden(&mut self.range_dels, p.user_key, p.seq) { ValueKind::Delete } else { p.kind };
                let v = self.iter.value();
                match kind {
                    ValueKind::RangeDelete => {
                        return Err(Error::corruption("a range deletion among point entries"))
                    }
                    ValueKind::Put => (base, operands) = (Base::Inline(v.to_vec()), Vec::new()),
                    ValueKind::Blob => (base, operands) = (Base::Blob(v.to_vec()), Vec::new()),
                    ValueKind::Delete => (base, operands) = (Base::Absent, Vec::new()),
                    ValueKind::Merge => operands.push(v.to_vec()),
                }
            }
            self.iter.prev();
        }
        if !visible {
            return Ok(None);
        }
        let base = match base {
            Base::Absent => None,
            Base::Inline(v) => Some(v),
            Base::Blob(ptr) => Some(self.db.read_blob(uk, &ptr)?),
        };
        if operands.is_empty() {
            return Ok(base);
        }
        self.db
            .full_merge(
                self.family.as_deref().unwrap_or(&self.db.default),
                uk,
                base.as_deref(),
                operands.iter().map(Vec::as_slice),
            )
            .map(Some)
    }
}

impl LookaheadSource for DbIterator {
    fn internal_iter(&self) -> Result<MergingIterator> {
        let sv = self.pinned.as_ref().ok_or(Error::Closed)?;
        Ok(MergingIterator::new(children(self.db.inner(), sv, self.fill_cache, None)?))
    }

    fn blob_file(&self, number: u64) -> Result<Arc<BlobReader>> {
        self.db.table_cache.blob(number)
    }

    fn expected_steps(&self) -> usize {
        self.db.scan_lengths.expected()
    }
}

/// The internal iterators of every memtable and file in `sv`, newest first; with `filter`,
/// without the tables it rules out (an L0 table is left out, a deeper one reads as empty).
pub(super) fn children(
    db: &Arc<DbInner>,
    sv: &SuperVersion,
    fill_cache: bool,
    filter: Option<&PrefixFilter>,
) -> Result<Vec<Box<dyn InternalIterator>>> {
    let mut out: Vec<Box<dyn InternalIterator>> = Vec::new();
    out.push(Box::new(sv.mem.iter()));
    for imm in &sv.imm {
        out.push(Box::new(imm.iter()));
    }
    // L0 tables are children of their own; one that starts after a seek's target is not read
    // until the scan reaches it (after a time-ordered load, that is most of them).
    for f in &sv.version.files[0] {
        if let Some(filter) = filter {
            if filter.rules_out(db, f.number)? {
                continue;
            }
        }
        let table = db.table_cache.table_iter(f.number, fill_cache)?;
        // A table with range tombstones may start below its first entry: nothing to defer.
        let first = if f.num_range_deletions > 0 { Vec::new() } else { f.smallest.clone() };
        out.push(Box::new(KnownFirstKey::new(table, first, f.number)));
    }
    // Weak: the database's iterator pool keeps these children, and a strong reference would
    // make the database own itself.
    let weak = Arc::downgrade(db);
    let filter = filter.cloned();
    let open: TableOpener = Arc::new(move |f| {
        let db = weak.upgrade().ok_or(Error::Closed)?;
        if let Some(filter) = &filter {
            if filter.rules_out(&db, f.number)? {
                return Ok(Box::new(EmptyIterator::new()) as Box<dyn InternalIterator>);
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_reads_are_counted_at_the_next_seek_and_on_drop() {
        use crate::{Db, Options};
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options { min_blob_size: 64, ..Options::default() }).unwrap();
        for k in [b"a", b"b", b"c"] {
            db.put(k, [7u8; 100]).unwrap();
        }
        db.flush().unwrap();
        let reads = || db.stats().blob_reads.load(Ordering::Relaxed);
        let mut it = db.cursor(&ReadOptions::new()).unwrap();
        it.seek(b"a");
        it.next();
        assert_eq!(it.value(), [7u8; 100]);
        assert_eq!(reads(), 0, "not yet published");
        it.seek(b"c");
        assert_eq!(reads(), 2);
        drop(it);
        assert_eq!(reads(), 3);
    }

    #[test]
    fn seeks_across_more_blob_files_than_an_iterator_keeps_read_the_right_values() {
        use crate::{Db, Options};
        let dir = tempfile::tempdir().unwrap();
        let opts = Options { min_blob_size: 8, ..Options::default() };
        let db = Db::open(dir.path(), opts).unwrap();
        let files = KEPT_BLOB_FILES as u32 + 4;
        for i in 0..files {
            db.put(i.to_be_bytes(), [i as u8; 32]).unwrap();
            db.flush().unwrap(); // one blob file per key
        }
        let mut it = db.cursor(&ReadOptions::new()).unwrap();
        // Each key once, then again in another order, so kept files are found, rotated and
        // evicted.
        let order = (0..files).chain((0..files).rev()).chain((0..files).step_by(3));
        for i in order {
            it.seek(&i.to_be_bytes());
            assert_eq!((it.key(), it.value()), (&i.to_be_bytes()[..], &[i as u8; 32][..]), "key {i}");
            assert!(it.blob_files.len() <= KEPT_BLOB_FILES);
        }
        it.status().unwrap();
    }

    #[test]
    fn prefix_successor_handles_ff() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\xff\xff"), None);
    }
}
