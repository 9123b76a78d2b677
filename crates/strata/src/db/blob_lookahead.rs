//! Reads ahead of a forward scan over values kept in blob files that are not memory-mapped
//! (WiscKey's answer for range queries over separated values): a second internal iterator over
//! the same super version runs a window of keys ahead of the user's position and asks the
//! filesystem to start reading the blob records it passes (`RandomAccessFile::will_need`,
//! `posix_fadvise(WILLNEED)` on Linux), so that the records of a scan, which after random
//! writes lie in different places of different files, are read in parallel rather than one
//! disk read after another.
//!
//! A scan that ends short of the window wastes every hint past its end: a disk read, and the
//! kernel's work to start it (on a 5M-key database out of memory, seek + 20 next spent 60% of
//! its CPU in `posix_fadvise`). So the first window is as long as the scans of this database
//! have been lately ([`ScanLengths`]), and no hint goes past that length until the scan does.
//!
//! It only hints. Values are still read, checked and returned by `DbIterator`; a hint that is
//! wrong (a shadowed version, a key the user never reaches) or late costs a read, never a
//! result, and an error met while looking ahead stops the lookahead, not the scan. It must stay
//! idle for point reads, reverse scans and mapped files (`DbIterator` only calls it after a
//! blob value came from an unmapped file).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::blob::{BlobPointer, BlobReader};
use crate::error::Result;
use crate::iter::merging::MergingIterator;
use crate::iter::InternalIterator;
use crate::key::{self, SeqNo, ValueKind};

/// Keys looked ahead when a scan starts (unless recent scans were longer); the window doubles
/// each time the user gets within a quarter of its end, up to `MAX_WINDOW`, so a long scan keeps
/// up to `MAX_WINDOW` records in flight.
const FIRST_WINDOW: usize = 8;
const MAX_WINDOW: usize = 64;
/// Blob readers kept between hints (a window's records come from a few files).
const KEPT_FILES: usize = 8;
/// Hints for records of one file that lie at most this far apart are given as one range.
const MERGE_GAP: u64 = 4096;

/// What the lookahead needs from the iterator it runs ahead of.
pub(super) trait LookaheadSource {
    /// A new internal iterator over the same entries as the user's (same super version).
    fn internal_iter(&self) -> Result<MergingIterator>;
    /// Steps forward that recent scans took ([`ScanLengths::expected`]).
    fn expected_steps(&self) -> usize;
    /// The open blob file `number`.
    fn blob_file(&self, number: u64) -> Result<Arc<BlobReader>>;
}

/// How many steps forward the recent lookahead scans of a database took: a moving average
/// that every finished scan updates (concurrent updates may lose one; it is an estimate).
#[derive(Debug, Default)]
pub(crate) struct ScanLengths {
    /// The average in sixteenths of a step; 0 before the first scan.
    sixteenths: AtomicU32,
}

impl ScanLengths {
    /// A scan of `steps` forward steps ended; each weighs an eighth of the average.
    pub fn note(&self, steps: usize) {
        let steps = u64::try_from(steps).unwrap_or(u64::MAX).min(1 << 20) * 16;
        let old = u64::from(self.sixteenths.load(Ordering::Relaxed));
        let new = if old == 0 { steps } else { (old * 7 + steps + 4) / 8 };
        // At most 2^24: fits.
        self.sixteenths.store(new.max(1) as u32, Ordering::Relaxed);
    }

    /// The average steps of a scan, rounded up; 0 before any scan ended.
    pub fn expected(&self) -> usize {
        self.sixteenths.load(Ordering::Relaxed).div_ceil(16) as usize
    }
}

/// One `DbIterator`'s lookahead. See the module comment.
#[derive(Default)]
pub(super) struct BlobLookahead {
    iter: Option<MergingIterator>,
    /// Looking ahead of the current scan (reset by every seek and direction change).
    active: bool,
    /// The user key of the last entry the lookahead passed.
    last_key: Vec<u8>,
    /// Keys passed that the user has not reached yet (an estimate: the user may skip some).
    ahead: usize,
    window: usize,
    /// Steps forward the user took in this scan, and what recent scans took when it began.
    steps: usize,
    expected: usize,
    /// The lookahead reached the end, its bound, or an error: nothing more to hint.
    done: bool,
    files: Vec<Arc<BlobReader>>,
    /// A hinted range not yet given: (index into `files`, start, end).
    pending: Option<(usize, u64, u64)>,
    /// Records hinted (tests check who looks ahead and how far).
    hinted: u64,
}

impl BlobLookahead {
    /// Forgets the current scan (a seek, a reverse step, the end of the iterator): the next
    /// `step` starts again. Returns the steps forward of the scan it ended, if it looked ahead,
    /// for the database's [`ScanLengths`].
    pub fn reset(&mut self) -> Option<usize> {
        std::mem::take(&mut self.active).then_some(self.steps)
    }

    /// Whether hints are being given for the current scan (its reads then ask for the record
    /// alone: a wider read-ahead window would wait for bytes nobody hinted).
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// Records hinted since this lookahead was made.
    #[cfg(test)]
    pub fn hinted(&self) -> u64 {
        self.hinted
    }

    /// The user is about to step forward from `current` (a key whose value was read from an
    /// unmapped blob file): keep the window ahead of it filled. `seq` is the user's sequence
    /// number, `upper` its exclusive upper bound.
    pub fn step(&mut self, src: &dyn LookaheadSource, current: &[u8], seq: SeqNo, upper: Option<&[u8]>) {
        if !self.active {
            self.steps = 0;
            self.expected = src.expected_steps();
        }
        self.steps += 1;
        if !self.active || self.last_key.as_slice() <= current {
            // A new scan, or the user caught up with the lookahead: start from the user's key.
            if !self.start(src, current) {
                return;
            }
        } else {
            self.ahead = self.ahead.saturating_sub(1);
        }
        if self.done || self.ahead > self.window / 4 {
            return;
        }
        if self.ahead > 0 {
            self.window = (self.window * 2).min(MAX_WINDOW);
        }
        self.fill(src, seq, upper);
    }

    /// Keys past the user's that may be hinted now: up to the window, and while the scan is
    /// shorter than recent scans, not past their length.
    fn may_hint_more(&self) -> bool {
        let within_expected = self.steps > self.expected || self.steps - 1 + self.ahead < self.expected;
        self.ahead < self.window && within_expected
    }

    /// Places the lookahead just after `current`'s entries; false if it cannot look ahead.
    fn start(&mut self, src: &dyn LookaheadSource, current: &[u8]) -> bool {
        if self.iter.is_none() {
            match src.internal_iter() {
                Ok(iter) => self.iter = Some(iter),
                Err(_) => return false,
            }
        }
        let Some(iter) = self.iter.as_mut() else { return false };
        // The last internal key of `current` sorts before every other key's entries.
        iter.seek(&key::make_internal_key(current, 0, ValueKind::Delete));
        let resumed = self.active;
        self.active = true;
        self.done = false;
        self.ahead = 0;
        if !resumed {
            self.window = self.expected.clamp(FIRST_WINDOW, MAX_WINDOW);
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(current);
        true
    }

    /// Walks forward until `window` keys are ahead of the user, hinting each newest visible
    /// version that lives in a blob file.
    fn fill(&mut self, src: &dyn LookaheadSource, seq: SeqNo, upper: Option<&[u8]>) {
        let Some(mut iter) = self.iter.take() else { return };
        while self.may_hint_more() {
            if !iter.valid() {
                self.done = true;
                break;
            }
            let Some(p) = key::parse(iter.key()) else {
                self.done = true;
                break;
            };
            if p.seq > seq || key::same_user_key(p.user_key, &self.last_key) {
                iter.next();
                continue;
            }
            if upper.is_some_and(|u| p.user_key >= u) {
                self.done = true;
                break;
            }
            self.last_key.clear();
            self.last_key.extend_from_slice(p.user_key);
            self.ahead += 1;
            if p.kind == ValueKind::Blob {
                if let Ok(ptr) = BlobPointer::decode(iter.value()) {
                    self.hint(src, &ptr);
                }
            }
            iter.next();
        }
        self.flush();
        self.iter = Some(iter);
    }

    /// Adds the record `ptr` names to the pending range, or gives the pending range and starts
    /// a new one.
    fn hint(&mut self, src: &dyn LookaheadSource, ptr: &BlobPointer) {
        let Some(file) = self.file_index(src, ptr.file_number) else { return };
        let (start, end) = (ptr.offset, ptr.offset.saturating_add(ptr.size));
        if let Some((f, s, e)) = &mut self.pending {
            if *f == file && start >= *s && start <= e.saturating_add(MERGE_GAP) {
                *e = (*e).max(end);
                self.hinted += 1;
                return;
            }
        }
        self.flush();
        self.pending = Some((file, start, end));
        self.hinted += 1;
    }

    fn flush(&mut self) {
        if let Some((f, start, end)) = self.pending.take() {
            self.files[f].will_need(start, end - start);
        }
    }

    /// Where blob file `number` is in `files`, opening it if needed; None if it cannot be
    /// opened (the user's read of it will report why).
    fn file_index(&mut self, src: &dyn LookaheadSource, number: u64) -> Option<usize> {
        if let Some(i) = self.files.iter().position(|f| f.file_number() == number) {
            return Some(i);
        }
        let reader = src.blob_file(number).ok()?;
        if self.files.len() == KEPT_FILES {
            // Give the pending hint before its file's slot is reused.
            self.flush();
            self.files.remove(0);
        }
        self.files.push(reader);
        Some(self.files.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use crate::{Db, Options, ReadOptions};

    fn open(dir: &std::path::Path, mmap: bool) -> Db {
        let opts = Options {
            min_blob_size: 16,
            use_mmap_reads: mmap,
            write_buffer_size: 64 << 10,
            ..Options::default()
        };
        Db::open(dir, opts).unwrap()
    }

    fn value(k: u16, round: u8, len: usize) -> Vec<u8> {
        let mut v = vec![round; len];
        v[..2].copy_from_slice(&k.to_be_bytes());
        v
    }

    /// Keys written in rounds of scattered order, each round flushed: the values of neighbouring
    /// keys lie in different blob files, as after random overwrites.
    fn scattered(db: &Db, keys: u16, rounds: u8) -> BTreeMap<Vec<u8>, Vec<u8>> {
        let mut model = BTreeMap::new();
        for round in 0..rounds {
            for i in 0..keys {
                let k = (i.wrapping_mul(7919) ^ u16::from(round)) % keys;
                let v = value(k, round, 40 + usize::from(k % 50));
                db.put(k.to_be_bytes(), &v).unwrap();
                model.insert(k.to_be_bytes().to_vec(), v);
            }
            db.flush().unwrap();
        }
        model
    }

    #[test]
    fn a_forward_scan_over_unmapped_blob_files_hints_the_records_ahead() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), false);
        let model = scattered(&db, 500, 3);
        let mut it = db.cursor(&ReadOptions::new()).unwrap();
        it.seek_to_first();
        let mut got = Vec::new();
        while it.valid() {
            got.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        it.status().unwrap();
        assert_eq!(got, model.into_iter().collect::<Vec<_>>());
        // Every key after the first was looked ahead of, give or take the last window.
        assert!(it.lookahead_hints() >= 490, "hinted {}", it.lookahead_hints());
    }

    /// Hints of one scan of `steps` steps forward from `start`, on a fresh iterator.
    fn hints_of_scan(db: &Db, start: u16, steps: usize) -> u64 {
        let mut it = db.cursor(&ReadOptions::new()).unwrap();
        it.seek(&start.to_be_bytes());
        for _ in 0..steps {
            assert!(it.valid());
            it.next();
        }
        it.status().unwrap();
        it.lookahead_hints()
    }

    #[test]
    fn short_scans_teach_the_lookahead_to_hint_no_further_than_they_read() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), false);
        scattered(&db, 2000, 3);
        let first = hints_of_scan(&db, 100, 20);
        assert!(first > 20, "with no history the window grows past the scan: {first}");
        for start in (200..1200).step_by(50) {
            hints_of_scan(&db, start, 20);
        }
        assert_eq!(db.inner.scan_lengths.expected(), 20);
        let learned = hints_of_scan(&db, 1500, 20);
        assert!(learned <= 20, "a scan as long as the recent ones hints only what it reads: {learned}");
        // A longer scan than the recent ones is looked ahead of past their length.
        let long = hints_of_scan(&db, 0, 400);
        assert!(long >= 400, "hinted {long}");
    }

    #[test]
    fn scan_lengths_average_the_recent_scans() {
        let l = super::ScanLengths::default();
        assert_eq!(l.expected(), 0);
        l.note(20);
        assert_eq!(l.expected(), 20);
        for _ in 0..40 {
            l.note(100);
        }
        assert!((99..=101).contains(&l.expected()), "{}", l.expected());
        for _ in 0..40 {
            l.note(0);
        }
        assert!(l.expected() <= 1, "{}", l.expected());
        l.note(usize::MAX);
        assert!(l.expected() > 100_000);
    }

    #[test]
    fn mapped_files_point_reads_and_reverse_scans_hint_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), true);
        scattered(&db, 200, 2);
        let mut it = db.cursor(&ReadOptions::new()).unwrap();
        it.seek_to_first();
        while it.valid() {
            it.next();
        }
        assert_eq!(it.lookahead_hints(), 0, "mapped files need no hints");
        drop((it, db));

        let db = open(dir.path(), false);
        let mut it = db.cursor(&ReadOptions::new()).unwrap();
        for k in [3u16, 50, 150] {
            it.seek(&k.to_be_bytes());
            assert!(it.valid());
        }
        it.seek_to_last();
        while it.valid() {
            it.prev();
        }
        it.status().unwrap();
        assert_eq!(it.lookahead_hints(), 0, "only forward steps look ahead");
    }

    #[test]
    fn the_lookahead_stops_at_the_upper_bound() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), false);
        scattered(&db, 300, 2);
        let opts = ReadOptions { upper_bound: Some(104u16.to_be_bytes().to_vec()), ..ReadOptions::new() };
        let mut it = db.cursor(&opts).unwrap();
        it.seek(&100u16.to_be_bytes());
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.next();
        }
        assert_eq!(n, 4);
        // Keys 101, 102 and 103 at most: nothing at or past the bound.
        assert!(it.lookahead_hints() <= 3, "hinted {}", it.lookahead_hints());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

        /// Seeks and forward runs of any length, with deletes, small inline values and a
        /// snapshot taken between rounds, return what a model holds: the lookahead's hints
        /// never change a result.
        #[test]
        fn scans_with_the_lookahead_match_a_model(
            ops in prop::collection::vec((0u16..400, prop::option::of(0usize..120)), 1..1500),
            scans in prop::collection::vec((0u16..400, 0usize..60), 1..20),
            snapshot_at in 0usize..1500,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let db = open(dir.path(), false);
            let mut model = BTreeMap::new();
            let mut snap = None;
            for (i, (k, v)) in ops.iter().enumerate() {
                if i == snapshot_at {
                    snap = Some((db.snapshot(), model.clone()));
                }
                let key = k.to_be_bytes().to_vec();
                match v {
                    Some(len) => {
                        let val = value(*k, i as u8, 2 + len);
                        db.put(&key, &val).unwrap();
                        model.insert(key, val);
                    }
                    None => {
                        db.delete(&key).unwrap();
                        model.remove(&key);
                    }
                }
                if i % 300 == 299 {
                    db.flush().unwrap();
                }
            }
            let views = [(ReadOptions::new(), model)].into_iter().chain(
                snap.map(|(s, m)| (ReadOptions { snapshot: Some(s), ..ReadOptions::new() }, m)),
            );
            for (opts, model) in views {
                let mut it = db.cursor(&opts).unwrap();
                for &(from, steps) in &scans {
                    it.seek(&from.to_be_bytes());
                    let want: Vec<_> = model.range(from.to_be_bytes().to_vec()..).take(steps + 1).collect();
                    let mut got = Vec::new();
                    while it.valid() && got.len() < want.len() {
                        got.push((it.key().to_vec(), it.value().to_vec()));
                        it.next();
                    }
                    it.status().unwrap();
                    let want: Vec<_> = want.into_iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                    prop_assert_eq!(got, want);
                }
            }
        }
    }
}
