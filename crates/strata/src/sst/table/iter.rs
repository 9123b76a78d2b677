//! [`TableIterator`]: the two-level cursor over one table (the index block picks a data block,
//! a block cursor walks it).
//!
//! It owns only cursor movement and block switching; reading, verifying and caching a block is
//! [`Table`]'s. It must not skip an unreadable block: it stops there with `status()` set.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::SequentialHint;
use crate::iter::InternalIterator;
use crate::key;
use crate::sst::block::BlockIter;
use crate::sst::format::BlockHandle;

use super::{annotate, Table};

/// A two-level cursor: the index block picks a data block, a block cursor walks it.
/// Stops (invalid, with `status()` set) at the first unreadable block rather than skipping it.
pub struct TableIterator {
    table: Arc<Table>,
    fill_cache: bool,
    index: BlockIter,
    data: Option<BlockIter>,
    data_handle: BlockHandle,
    spare_buf: Vec<u8>,
    err: Option<Error>,
    /// Asks for read-ahead once the cursor walks a mapped file forward for long.
    hint: SequentialHint,
}

impl TableIterator {
    /// A cursor over `table`, not yet positioned.
    pub(super) fn new(table: Arc<Table>, fill_cache: bool, hint: SequentialHint) -> TableIterator {
        TableIterator {
            index: table.index.iter(),
            table,
            fill_cache,
            data: None,
            data_handle: BlockHandle::default(),
            spare_buf: Vec::new(),
            err: None,
            hint,
        }
    }

    fn fail(&mut self, e: Error) {
        if self.err.is_none() {
            self.err = Some(e);
        }
        self.drop_data();
    }

    fn drop_data(&mut self) {
        if let Some(d) = self.data.take() {
            self.spare_buf = d.into_buffer();
        }
    }

    /// Points `data` at the block the index is on (reusing it if it is already loaded).
    /// Returns false if there is no such block or it could not be read.
    fn init_data_block(&mut self) -> bool {
        if !self.index.valid() {
            if let Err(e) = self.index.status() {
                let e = self.table.index_error(e);
                self.fail(e);
            }
            self.drop_data();
            return false;
        }
        let h = match self.table.decode_handle(&self.index) {
            Ok(h) => h,
            Err(e) => {
                self.fail(e);
                return false;
            }
        };
        if self.data.is_some() && h == self.data_handle {
            return true;
        }
        self.table.hint_sequential(&mut self.hint, &h);
        self.table.prefetch_mapped_block(&h);
        match self.table.data_block(&h, self.fill_cache, self.hint.is_forward_run()) {
            Ok(block) => {
                let old = self.data.take().map(BlockIter::into_buffer);
                let buf = old.unwrap_or_else(|| std::mem::take(&mut self.spare_buf));
                self.data = Some(BlockIter::with_buffer(block, buf));
                self.data_handle = h;
                true
            }
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    /// After a step, records a block-level error; returns true if the data cursor is usable.
    fn data_ok(&mut self) -> bool {
        let Some(d) = &self.data else { return false };
        if let Err(e) = d.status() {
            let e = annotate(e, self.table.file_number, &self.data_handle);
            self.fail(e);
            return false;
        }
        true
    }

    fn skip_empty_forward(&mut self) {
        while self.data_ok() && !self.data.as_ref().is_some_and(BlockIter::valid) {
            self.index.next();
            if !self.init_data_block() {
                return;
            }
            if let Some(d) = &mut self.data {
                d.seek_to_first();
            }
        }
    }

    fn skip_empty_backward(&mut self) {
        while self.data_ok() && !self.data.as_ref().is_some_and(BlockIter::valid) {
            self.index.prev();
            if !self.init_data_block() {
                return;
            }
            if let Some(d) = &mut self.data {
                d.seek_to_last();
            }
        }
    }

    fn reset(&mut self) {
        self.err = None;
    }
}

impl InternalIterator for TableIterator {
    fn valid(&self) -> bool {
        self.err.is_none() && self.data.as_ref().is_some_and(BlockIter::valid)
    }

    fn seek_to_first(&mut self) {
        self.reset();
        self.index.seek_to_first();
        if self.init_data_block() {
            if let Some(d) = &mut self.data {
                d.seek_to_first();
            }
            self.skip_empty_forward();
        }
    }

    fn seek_to_last(&mut self) {
        self.reset();
        self.index.seek_to_last();
        if self.init_data_block() {
            if let Some(d) = &mut self.data {
                d.seek_to_last();
            }
            self.skip_empty_backward();
        }
    }

    fn seek(&mut self, target: &[u8]) {
        self.reset();
        self.table.seek_index(&mut self.index, target);
        if self.init_data_block() {
            if let Some(d) = &mut self.data {
                d.seek(target);
            }
            self.skip_empty_forward();
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if !self.valid() {
            if self.err.is_none() {
                self.seek_to_last();
            }
            return;
        }
        // Keys are unique, so at most one step back is needed; the loop is for robustness.
        while self.valid() && key::compare(self.key(), target) == std::cmp::Ordering::Greater {
            self.prev();
        }
    }

    fn next(&mut self) {
        debug_assert!(self.valid());
        if let Some(d) = &mut self.data {
            d.next();
        }
        self.skip_empty_forward();
    }

    fn prev(&mut self) {
        debug_assert!(self.valid());
        if let Some(d) = &mut self.data {
            d.prev();
        }
        self.skip_empty_backward();
    }

    fn key(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.key())
    }

    fn value(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.value())
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}
