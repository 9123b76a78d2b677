//! Iterates one level of L1+ files (sorted, non-overlapping) as a single stream, opening each
//! table only when the iteration reaches it.

use std::cmp::Ordering;
use std::sync::Arc;

use super::{EmptyIterator, InternalIterator};
use crate::error::{Error, Result};
use crate::key;
use crate::version::edit::FileMeta;
use crate::version::version::Version;

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
    error: Option<Error>,
}

impl LevelIterator {
    /// Iterates the files of `level` (1 or deeper: sorted and non-overlapping) in `version`.
    pub fn new(version: Arc<Version>, level: usize, open: TableOpener) -> Self {
        Self { version, level, open, index: 0, current: None, error: None }
    }

    fn files(&self) -> &[Arc<FileMeta>] {
        self.version.files.get(self.level).map_or(&[], |f| f.as_slice())
    }

    fn open_file(&mut self, index: usize) -> bool {
        self.index = index;
        let Some(f) = self.files().get(index) else {
            self.current = None;
            return false;
        };
        match (self.open)(f) {
            Ok(it) => self.current = Some(it),
            Err(e) => {
                self.error.get_or_insert(e);
                self.current = Some(Box::new(EmptyIterator::new()));
            }
        }
        true
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
                self.current = None;
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
            self.current = None;
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
            self.current = None;
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
