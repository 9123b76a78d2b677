//! Reading an SST file: [`Table`] pins the footer, index block, filter and properties in memory
//! and serves point lookups and two-level iterators, fetching data blocks through the block cache.
//!
//! This module owns the read path of one file. It must not merge tables, hide versions or
//! interpret values; and it must never return bytes that failed verification: every bad block is
//! `Error::Corruption` naming the file number and block offset.

use std::cell::RefCell;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::RandomAccessFile;
use crate::iter::InternalIterator;
use crate::key;

use super::block::{Block, BlockIter};
use super::bloom::BloomFilter;
use super::format::{read_block, BlockHandle, Footer, TableProperties, FOOTER_LEN};
use super::BlockCache;

/// An open, immutable SST file.
pub struct Table {
    file: Arc<dyn RandomAccessFile>,
    file_number: u64,
    file_size: u64,
    cache: Option<Arc<BlockCache>>,
    index: Arc<Block>,
    filter: Option<BloomFilter>,
    props: TableProperties,
    /// Where the data blocks end (the first meta block); the offset of keys past the last block.
    data_end: u64,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table").field("file_number", &self.file_number).field("file_size", &self.file_size).finish()
    }
}

thread_local! {
    /// Key buffer reused by `Table::get`, so a lookup allocates nothing but the block it reads.
    static GET_KEY_BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl Table {
    /// Opens a table: reads and verifies the footer, index, filter and properties blocks.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        file_number: u64,
        cache: Option<Arc<BlockCache>>,
    ) -> Result<Table> {
        let file_size = file.size();
        let footer_at = file_size.checked_sub(FOOTER_LEN as u64).ok_or_else(|| {
            Error::corruption(format!("sst {file_number}: file of {file_size} bytes is too short"))
        })?;
        let mut buf = [0u8; FOOTER_LEN];
        file.read_exact_at(footer_at, &mut buf)?;
        let footer = Footer::decode(&buf, file_number)?;
        let index = Arc::new(Self::read_meta_block(&*file, file_number, &footer.index)?);
        let props = TableProperties::decode(read_block(&*file, file_number, &footer.properties)?)
            .map_err(|e| annotate(e, file_number, &footer.properties))?;
        let filter = if footer.filter.size == 0 {
            None
        } else {
            let bytes = read_block(&*file, file_number, &footer.filter)?;
            Some(BloomFilter::decode(bytes).map_err(|e| annotate(e, file_number, &footer.filter))?)
        };
        let mut data_end = footer.index.offset.min(footer.properties.offset);
        if filter.is_some() {
            data_end = data_end.min(footer.filter.offset);
        }
        Ok(Table { file, file_number, file_size, cache, index, filter, props, data_end })
    }

    fn read_meta_block(file: &dyn RandomAccessFile, file_number: u64, h: &BlockHandle) -> Result<Block> {
        Block::new(read_block(file, file_number, h)?).map_err(|e| annotate(e, file_number, h))
    }

    /// The file number given at open (also the block cache key prefix).
    pub fn file_number(&self) -> u64 {
        self.file_number
    }

    /// Bytes in the file.
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// The statistics written with the table.
    pub fn properties(&self) -> &TableProperties {
        &self.props
    }

    /// False only if no entry of `user_key` is in the table (true without a filter).
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.filter.as_ref().is_none_or(|f| f.may_contain(user_key))
    }

    /// Calls `f(ikey, value)` for the first entry `>= lookup` and the entries after it, in order,
    /// until `f` returns false or the table ends. Returns at once if the filter rules out
    /// `key::user_key(lookup)`.
    pub fn get(&self, lookup: &[u8], fill_cache: bool, f: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<()> {
        if !self.may_contain(key::user_key(lookup)) {
            return Ok(());
        }
        // Taken rather than borrowed, so a re-entrant `get` from `f` simply allocates its own.
        let mut buf = GET_KEY_BUF.with(|b| b.take());
        let r = self.get_with_buffer(lookup, fill_cache, f, &mut buf);
        GET_KEY_BUF.with(|b| *b.borrow_mut() = buf);
        r
    }

    fn get_with_buffer(
        &self,
        lookup: &[u8],
        fill_cache: bool,
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        let mut index = self.index.iter();
        index.seek(lookup);
        let mut first = true;
        while index.valid() {
            let h = self.decode_handle(&index)?;
            let block = self.data_block(&h, fill_cache)?;
            let mut it = BlockIter::with_buffer(block, std::mem::take(buf));
            if first {
                it.seek(lookup);
                first = false;
            } else {
                it.seek_to_first();
            }
            while it.valid() {
                if !f(it.key(), it.value()) {
                    *buf = it.into_buffer();
                    return Ok(());
                }
                it.next();
            }
            it.status().map_err(|e| annotate(e, self.file_number, &h))?;
            *buf = it.into_buffer();
            index.next();
        }
        index.status().map_err(|e| self.index_error(e))
    }

    fn index_error(&self, e: Error) -> Error {
        Error::corruption(format!("sst {}: index block: {e}", self.file_number))
    }

    fn decode_handle(&self, index: &BlockIter) -> Result<BlockHandle> {
        BlockHandle::decode_exact(index.value()).map_err(|e| self.index_error(e))
    }

    /// Fetches a data block through the cache.
    fn data_block(&self, h: &BlockHandle, fill_cache: bool) -> Result<Arc<Block>> {
        let cache_key = (self.file_number, h.offset);
        if let Some(b) = self.cache.as_ref().and_then(|c| c.get(&cache_key)) {
            return Ok(b);
        }
        let block = Arc::new(Self::read_meta_block(&*self.file, self.file_number, h)?);
        if let (Some(c), true) = (&self.cache, fill_cache) {
            c.insert(cache_key, Arc::clone(&block), block.charge());
        }
        Ok(block)
    }

    /// A two-level iterator over every entry.
    pub fn iter(self: &Arc<Self>, fill_cache: bool) -> TableIterator {
        TableIterator {
            index: self.index.iter(),
            table: Arc::clone(self),
            fill_cache,
            data: None,
            data_handle: BlockHandle::default(),
            spare_buf: Vec::new(),
            err: None,
        }
    }

    /// Approximate file offset where `ikey` is or would be stored.
    pub fn approximate_offset_of(&self, ikey: &[u8]) -> u64 {
        let mut index = self.index.iter();
        index.seek(ikey);
        if index.valid() {
            if let Ok(h) = BlockHandle::decode_exact(index.value()) {
                return h.offset;
            }
        }
        self.data_end
    }

    /// Reads every data block, bypassing the cache, and checks its checksum and entry encoding.
    pub fn verify_checksums(&self) -> Result<()> {
        let mut index = self.index.iter();
        index.seek_to_first();
        while index.valid() {
            let h = self.decode_handle(&index)?;
            let block = Arc::new(Self::read_meta_block(&*self.file, self.file_number, &h)?);
            let mut it = block.iter();
            it.seek_to_first();
            while it.valid() {
                it.next();
            }
            it.status().map_err(|e| annotate(e, self.file_number, &h))?;
            index.next();
        }
        index.status().map_err(|e| self.index_error(e))
    }
}

/// Names the file and block in an error found inside a block's bytes.
fn annotate(e: Error, file_number: u64, h: &BlockHandle) -> Error {
    match e {
        Error::Corruption(m) if !m.starts_with("sst ") => {
            Error::corruption(format!("sst {file_number}: block at offset {} size {}: {m}", h.offset, h.size))
        }
        e => e,
    }
}

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
}

impl TableIterator {
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
        match self.table.data_block(&h, self.fill_cache) {
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
        self.index.seek(target);
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
