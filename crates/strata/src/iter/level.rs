//! Iterates one level of L1+ files (sorted, non-overlapping) as a single stream, opening each
//! table only when the iteration reaches it, and keeping the last few tables it left open for
//! the next seek that lands in one of them.

use std::cmp::Ordering;
use std::sync::Arc;

use super::{EmptyIterator, InternalIterator};
use crate::error::{Error, Result};
use crate::key;
use crate::version::edit::FileMeta;
use crate::version::version::Version;

/// Table iterators a level iterator keeps after leaving their file. Readers that seek at random
/// (and reuse their iterator through the database's per-thread pool) move to another file on
/// most seeks; opening a table iterator clones the table's and its index block's shared
/// reference counts and allocates, which with two reading threads was a cache line bounced
/// between their cores per seek. A parked iterator pins nothing its version does not already
/// pin (its table and one data block).
const PARKED_TABLES: usize = 16;

/// Opens the iterator of one table file.
pub type TableOpener = Arc<dyn Fn(&FileMeta) -> Result<Box<dyn InternalIterator>> + Send + Sync>;

/// A concatenation of the files of one level.
pub struct LevelIterator {
    /// The version whose level `level` this walks, kept alive by the iterator. Readers create
    /// an iterator per seek; cloning every file's `Arc` instead had two threads bouncing a
    /// dozen shared reference counts between their caches on each seek.
    version: Arc<Version>,
    level: usize,
    open: TableOpener,
    index: usize,
    current: Option<Box<dyn InternalIterator>>,
    /// `current` is file `index`'s own iterator (not a stand-in for a file that failed to open).
    current_is_table: bool,
    /// Iterators of files left earlier, by file index, oldest first.
    parked: Vec<(usize, Box<dyn InternalIterator>)>,
    error: Option<Error>,
}

impl LevelIterator {
    /// Iterates the files of `level` (1 or deeper: sorted and non-overlapping) in `version`.
    pub fn new(version: Arc<Version>, level: usize, open: TableOpener) -> Self {
        Self {
            version,
            level,
            open,
            index: 0,
            current: None,
            current_is_table: false,
            parked: Vec::new(),
            error: None,
        }
    }

    fn files(&self) -> &[Arc<FileMeta>] {
        self.version.files.get(self.level).map_or(&[], |f| f.as_slice())
    }

    /// Makes file `index`'s iterator current (unpositioned: the caller seeks it), reusing the
    /// current one or a parked one. Returns false past the last file.
    fn open_file(&mut self, index: usize) -> bool {
        if index == self.index && self.current_is_table && self.current.is_some() {
            return true;
        }
        self.park_current();
        self.index = index;
        // Only files of this level are ever parked, so a hit is in range.
        if let Some(at) = self.parked.iter().position(|(i, _)| *i == index) {
            self.current = Some(self.parked.remove(at).1);
            self.current_is_table = true;
            return true;
        }
        let Some(f) = self.files().get(index) else { return false };
        match (self.open)(f) {
            Ok(it) => {
                self.current = Some(it);
                self.current_is_table = true;
            }
            Err(e) => {
                self.error.get_or_insert(e);
                self.current = Some(Box::new(EmptyIterator::new()));
            }
        }
        true
    }

    /// Keeps the current file's iterator for a later seek into that file, unless it failed.
    fn park_current(&mut self) {
        let Some(it) = self.current.take() else { return };
        if !std::mem::take(&mut self.current_is_table) || it.status().is_err() {
            return;
        }
        if self.parked.len() >= PARKED_TABLES {
            self.parked.remove(0);
        }
        self.parked.push((self.index, it));
    }

    fn skip_forward(&mut self) {
        while self.current.as_ref().is_some_and(|c| !c.valid() && c.status().is_ok()) {
            if !self.open_file(self.index + 1) {
                return;
            }
            if let Some(c) = self.current.as_mut() {
                c.seek_to_first();
            }
        }
    }

    fn skip_backward(&mut self) {
        while self.current.as_ref().is_some_and(|c| !c.valid() && c.status().is_ok()) {
            if self.index == 0 {
                self.park_current();
                return;
            }
            self.open_file(self.index - 1);
            if let Some(c) = self.current.as_mut() {
                c.seek_to_last();
            }
        }
    }
}

impl InternalIterator for LevelIterator {
    fn valid(&self) -> bool {
        self.current.as_ref().is_some_and(|c| c.valid())
    }

    fn seek_to_first(&mut self) {
        if self.open_file(0) {
            if let Some(c) = self.current.as_mut() {
                c.seek_to_first();
            }
        }
        self.skip_forward();
    }

    fn seek_to_last(&mut self) {
        let Some(last) = self.files().len().checked_sub(1) else {
            self.park_current();
            return;
        };
        self.open_file(last);
        if let Some(c) = self.current.as_mut() {
            c.seek_to_last();
        }
        self.skip_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        let i = self.files().partition_point(|f| key::compare(&f.largest, target) == Ordering::Less);
        if self.open_file(i) {
            if let Some(c) = self.current.as_mut() {
                c.seek(target);
            }
        }
        self.skip_forward();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        let i = self.files().partition_point(|f| key::compare(&f.smallest, target) != Ordering::Greater);
        let Some(i) = i.checked_sub(1) else {
            self.park_current();
            return;
        };
        self.open_file(i);
        if let Some(c) = self.current.as_mut() {
            c.seek_for_prev(target);
        }
        self.skip_backward();
    }

    fn next(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.next();
        }
        self.skip_forward();
    }

    fn prev(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.prev();
        }
        self.skip_backward();
    }

    fn key(&self) -> &[u8] {
        self.current.as_ref().map_or(&[][..], |c| c.key())
    }

    fn value(&self) -> &[u8] {
        self.current.as_ref().map_or(&[][..], |c| c.value())
    }

    fn status(&self) -> Result<()> {
        if let Some(e) = &self.error {
            return Err(e.duplicate());
        }
        self.current.as_ref().map_or(Ok(()), |c| c.status())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

    use super::*;
    use crate::key::ValueKind;
    use crate::memtable::MemTable;
    use crate::version::edit::VersionEdit;

    const FILES: u64 = 40;
    const KEYS_PER_FILE: u64 = 10;

    fn user_key(i: u64) -> Vec<u8> {
        format!("k{i:06}").into_bytes()
    }

    /// A level of `FILES` files of `KEYS_PER_FILE` keys each, and an opener that counts opens.
    fn level() -> (Arc<Version>, TableOpener, Arc<AtomicUsize>) {
        let mut edit = VersionEdit::default();
        let mut tables = HashMap::new();
        for f in 0..FILES {
            let mem = Arc::new(MemTable::new());
            for i in f * KEYS_PER_FILE..(f + 1) * KEYS_PER_FILE {
                mem.add(i + 1, ValueKind::Put, &user_key(i), &i.to_le_bytes());
            }
            let first = f * KEYS_PER_FILE;
            let last = first + KEYS_PER_FILE - 1;
            edit.new_files.push((
                1,
                FileMeta {
                    number: f + 1,
                    smallest: key::make_internal_key(&user_key(first), first + 1, ValueKind::Put),
                    largest: key::make_internal_key(&user_key(last), last + 1, ValueKind::Put),
                    ..FileMeta::default()
                },
            ));
            tables.insert(f + 1, mem);
        }
        let version = Arc::new(Version::default().apply(&edit).unwrap());
        let opens = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&opens);
        let open: TableOpener = Arc::new(move |f: &FileMeta| -> Result<Box<dyn InternalIterator>> {
            counter.fetch_add(1, AtomicOrdering::Relaxed);
            if f.number == 13 {
                return Err(Error::corruption("file 13 is unreadable"));
            }
            Ok(Box::new(tables[&f.number].iter()))
        });
        (version, open, opens)
    }

    fn found(it: &LevelIterator) -> Option<u64> {
        it.valid().then(|| u64::from_le_bytes(it.value().try_into().unwrap()))
    }

    #[test]
    fn seeks_reuse_parked_tables_and_return_what_fresh_ones_would() {
        let (version, open, opens) = level();
        let mut it = LevelIterator::new(version, 1, open);
        // Seeks that stay among a few files open each file once.
        for round in 0..5 {
            for f in [0u64, 3, 7, 3, 0, 9] {
                let i = f * KEYS_PER_FILE + round;
                it.seek(&key::make_internal_key(&user_key(i), u64::MAX >> 8, ValueKind::Put));
                assert_eq!(found(&it), Some(i));
            }
        }
        assert_eq!(opens.load(AtomicOrdering::Relaxed), 4);
        // A full scan and a backward one visit every key in order, reusing what is parked.
        it.seek_to_first();
        for i in 0..FILES * KEYS_PER_FILE {
            if (120..130).contains(&i) {
                continue; // file 13 failed to open: the scan skips it and reports the error
            }
            assert_eq!(found(&it), Some(i), "forward");
            it.next();
        }
        assert!(!it.valid());
        assert!(it.status().is_err());
        let (version, open, _) = level();
        let mut back = LevelIterator::new(version, 1, open);
        back.seek_to_last();
        for i in (130..FILES * KEYS_PER_FILE).rev() {
            assert_eq!(found(&back), Some(i), "backward");
            back.prev();
        }
    }

    #[test]
    fn at_most_parked_tables_stay_open_and_the_oldest_goes_first() {
        let (version, open, opens) = level();
        let mut it = LevelIterator::new(version, 1, open);
        // Files 20 and up (file 13, index 12, is the unreadable one).
        let seek_file = |it: &mut LevelIterator, f: u64| {
            let i = (20 + f) * KEYS_PER_FILE;
            it.seek(&key::make_internal_key(&user_key(i), u64::MAX >> 8, ValueKind::Put));
            assert_eq!(found(it), Some(i));
        };
        for f in 0..=PARKED_TABLES as u64 {
            seek_file(&mut it, f);
        }
        assert_eq!(it.parked.len(), PARKED_TABLES);
        let before = opens.load(AtomicOrdering::Relaxed);
        seek_file(&mut it, 1); // parked
        assert_eq!(opens.load(AtomicOrdering::Relaxed), before);
        seek_file(&mut it, PARKED_TABLES as u64 + 1); // new: the oldest parked one was dropped
        seek_file(&mut it, 0);
        assert_eq!(opens.load(AtomicOrdering::Relaxed), before + 2);
        assert!(it.parked.len() <= PARKED_TABLES);
    }
}
