//! Reading an SST file: [`Table`] pins the footer, index block, filter and properties in memory
//! and serves point lookups and two-level iterators, fetching data blocks through the block cache.
//!
//! This module owns the read path of one file. It must not merge tables, hide versions or
//! interpret values; and it must never return bytes that failed verification: every bad block is
//! `Error::Corruption` naming the file number and block offset.

use std::cell::RefCell;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::{RandomAccessFile, SequentialHint};
use crate::iter::InternalIterator;
use crate::key;
use crate::util::prefetch::prefetch_read;
use crate::util::verified::VerifiedOffsets;

use super::block::{key_prefix, Block, BlockIter};
use super::bloom::BloomFilter;
use super::format::{
    mapped_block_range, read_block, BlockHandle, Footer, TableProperties, BLOCK_TRAILER_LEN, FOOTER_LEN,
};
use super::prefix_index::PrefixIndex;
use super::BlockCache;

/// An open, immutable SST file. Aligned so its fields do not share a cache line with the
/// `Arc` reference count that every reader's iterator changes.
#[repr(align(128))]
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
    /// Mapped blocks whose checksum already passed, one slot per 4 KiB (data blocks are about
    /// that long, so most have a slot of their own).
    verified: VerifiedOffsets,
    /// `key_prefix` of every index entry, when each index entry is a restart point: lookups
    /// binary-search this dense array (a few cache lines) instead of the index block.
    index_prefixes: Option<PrefixIndex>,
    /// The block handle of every index entry, beside `index_prefixes`: a point lookup whose
    /// prefix falls strictly between two entries' prefixes knows its block without reading the
    /// index block (one dependent cache miss less per table probed). 16 bytes per data block.
    index_handles: Option<Vec<BlockHandle>>,
}

const VERIFIED_GRANULE: u64 = 4096;

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("file_number", &self.file_number)
            .field("file_size", &self.file_size)
            .finish()
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
        // The index, filter and properties blocks sit together at the end: one read-ahead for
        // them, or a mapping advised random faults them in a page at a time.
        let meta_start = footer.index.offset.min(footer.properties.offset).min(if footer.filter.size == 0 {
            u64::MAX
        } else {
            footer.filter.offset
        });
        file.will_need(meta_start, footer_at.saturating_sub(meta_start));
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
        let verified = match file.mapped() {
            Some(_) => VerifiedOffsets::new(data_end, VERIFIED_GRANULE),
            None => VerifiedOffsets::none(),
        };
        let index_prefixes = index.restart_key_prefixes().map(PrefixIndex::new);
        let index_handles = index_prefixes.as_ref().and_then(|_| Self::all_handles(&index));
        Ok(Table {
            file,
            file_number,
            file_size,
            cache,
            index,
            filter,
            props,
            data_end,
            verified,
            index_prefixes,
            index_handles,
        })
    }

    /// Every index entry's block handle, in order; `None` if one does not decode (lookups then
    /// read the index block, which reports the corruption where it matters).
    fn all_handles(index: &Arc<Block>) -> Option<Vec<BlockHandle>> {
        let mut it = index.iter();
        let mut out = Vec::with_capacity(index.num_restarts());
        it.seek_to_first();
        while it.valid() {
            out.push(BlockHandle::decode_exact(it.value()).ok()?);
            it.next();
        }
        it.status().ok()?;
        Some(out)
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
    pub fn get(
        &self,
        lookup: &[u8],
        fill_cache: bool,
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
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
        if let Some(handles) = self.handles_from(lookup) {
            return self.get_in_blocks(handles.iter().map(|h| Ok(*h)), lookup, fill_cache, f, buf);
        }
        let mut index = self.index.iter();
        self.seek_index(&mut index, lookup);
        let mut index_done = false;
        let handles = std::iter::from_fn(|| {
            if index_done {
                return None;
            }
            if !index.valid() {
                index_done = true;
                return index.status().err().map(|e| Err(self.index_error(e)));
            }
            let h = self.decode_handle(&index);
            index.next();
            Some(h)
        });
        self.get_in_blocks(handles, lookup, fill_cache, f, buf)
    }

    /// The handles of the blocks from the one that must hold the first entry `>= lookup` to
    /// the last, when the prefix array alone decides it (`lookup`'s 8-byte prefix equals no
    /// index entry's: every entry before the run is smaller, every one from it on larger).
    fn handles_from(&self, lookup: &[u8]) -> Option<&[BlockHandle]> {
        let (prefixes, handles) = (self.index_prefixes.as_ref()?, self.index_handles.as_ref()?);
        let run = prefixes.equal_range(key_prefix(key::user_key(lookup)));
        if !run.is_empty() {
            return None;
        }
        handles.get(run.start..)
    }

    /// The body of `get`: walks the blocks `handles` yields, seeking `lookup` in the first.
    fn get_in_blocks(
        &self,
        handles: impl Iterator<Item = Result<BlockHandle>>,
        lookup: &[u8],
        fill_cache: bool,
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        let mut first = true;
        for h in handles {
            let h = h?;
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
        }
        Ok(())
    }

    /// Positions `index` at the first entry `>= lookup`, narrowing the search with the prefix array.
    fn seek_index(&self, index: &mut BlockIter, lookup: &[u8]) {
        match &self.index_prefixes {
            Some(prefixes) => {
                let run = prefixes.equal_range(key_prefix(key::user_key(lookup)));
                index.seek_between(lookup, run.start, run.end);
            }
            None => index.seek(lookup),
        }
    }

    fn index_error(&self, e: Error) -> Error {
        Error::corruption(format!("sst {}: index block: {e}", self.file_number))
    }

    fn decode_handle(&self, index: &BlockIter) -> Result<BlockHandle> {
        BlockHandle::decode_exact(index.value()).map_err(|e| self.index_error(e))
    }

    /// Fetches a data block: an uncompressed block of a memory-mapped file is borrowed from the
    /// mapping (no copy, no cache; its checksum is verified the first time this reader fetches
    /// it, as a block cache would on load); anything else goes through the block cache.
    fn data_block(&self, h: &BlockHandle, fill_cache: bool) -> Result<Arc<Block>> {
        if let Some(map) = self.file.mapped() {
            let known_good = self.verified.contains(h.offset);
            if let Some((start, len)) = mapped_block_range(map, self.file_number, h, !known_good)? {
                if !known_good {
                    self.verified.insert(h.offset);
                }
                let block = Block::mapped(Arc::clone(&self.file), start, len);
                return block.map(Arc::new).map_err(|e| annotate(e, self.file_number, h));
            }
        }
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

    /// Starts loading every cache line of a mapped block at once. An iterator reads the block's
    /// trailer, then its restart array, then a binary search's worth of restart keys, then a run
    /// of entries: one cache miss after another unless they are all in flight together.
    fn prefetch_mapped_block(&self, h: &BlockHandle) {
        let Some(map) = self.file.mapped() else { return };
        let (Ok(start), Ok(len)) = (usize::try_from(h.offset), usize::try_from(h.size)) else { return };
        let end = start.saturating_add(len).saturating_add(BLOCK_TRAILER_LEN).min(map.len());
        for line in (end.saturating_sub(128).max(start)..end).step_by(64) {
            prefetch_read(map.as_ptr().wrapping_add(line));
        }
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
            hint: SequentialHint::new(),
        }
    }

    /// An iterator for a reader that walks the whole table forward once (a compaction's input):
    /// fills no cache and asks for read-ahead from its first block.
    pub fn iter_whole_file(self: &Arc<Self>) -> TableIterator {
        TableIterator { hint: SequentialHint::whole_file(), ..self.iter(false) }
    }

    /// Notes that a forward reader is about to read data block `h` (see `SequentialHint`).
    fn hint_sequential(&self, hint: &mut SequentialHint, h: &BlockHandle) {
        hint.note(&*self.file, h.offset, h.end() - h.offset, self.data_end);
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
    /// Asks for read-ahead once the cursor walks a mapped file forward for long.
    hint: SequentialHint,
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
        self.table.hint_sequential(&mut self.hint, &h);
        self.table.prefetch_mapped_block(&h);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::testfs::{MappedMemRandom, MemRandom, MemWritable};
    use crate::fs::RecordsHints;
    use crate::key::{make_internal_key, seek_key, ValueKind};
    use crate::sst::builder::{TableBuilder, TableBuilderOptions, TableSummary};
    use crate::util::compress::Compression;
    use proptest::prelude::*;

    type Entries = Vec<(Vec<u8>, Vec<u8>)>;

    fn build(entries: &Entries, opts: TableBuilderOptions) -> (Vec<u8>, TableSummary) {
        let file = MemWritable::default();
        let mut b = TableBuilder::new(Box::new(file.clone()), opts);
        for (k, v) in entries {
            b.add(k, v).unwrap();
        }
        let summary = b.finish().unwrap();
        let bytes = file.0.lock().clone();
        assert_eq!(summary.file_size, bytes.len() as u64);
        (bytes, summary)
    }

    fn open(bytes: Vec<u8>, cache: Option<Arc<BlockCache>>) -> Result<Arc<Table>> {
        Table::open(Arc::new(MemRandom(bytes)), 7, cache).map(Arc::new)
    }

    fn open_mapped(bytes: Vec<u8>) -> Result<Arc<Table>> {
        Table::open(Arc::new(MappedMemRandom(MemRandom(bytes))), 7, None).map(Arc::new)
    }

    #[test]
    fn a_long_scan_of_a_mapped_table_asks_for_read_ahead_and_point_reads_do_not() {
        let entries = sample(40_000);
        let (bytes, _) = build(&entries, TableBuilderOptions::default());
        let file = Arc::new(RecordsHints::new(MappedMemRandom(MemRandom(bytes))));
        let t = Arc::new(Table::open(Arc::clone(&file) as Arc<dyn RandomAccessFile>, 7, None).unwrap());
        // Opening reads the metadata blocks at the end after one hint for all of them.
        let at_open = file.hints();
        file.clear();
        assert_eq!(at_open.len(), 1, "{at_open:?}");
        assert_eq!(at_open[0].0, t.data_end);
        assert_eq!(at_open[0].0 + at_open[0].1, t.file_size - crate::sst::format::FOOTER_LEN as u64);
        for i in (0..40_000u32).step_by(7) {
            let uk = format!("k{:08}", i * 2);
            t.get(&seek_key(uk.as_bytes(), u64::MAX >> 8), true, &mut |_, _| false).unwrap();
        }
        assert!(file.hints().is_empty(), "point reads hinted {:?}", file.hints());
        let mut it = t.iter(false);
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.next();
        }
        assert_eq!(n, entries.len());
        let hints = file.hints();
        assert!(!hints.is_empty(), "a scan of {} bytes gave no hint", t.file_size);
        assert!(hints.iter().all(|&(o, l)| o + l <= t.data_end), "{hints:?} past {}", t.data_end);
        // A compaction's iterator hints from its first block.
        file.clear();
        let mut it = t.iter_whole_file();
        it.seek_to_first();
        assert_eq!(file.hints().first().map(|h| h.0), Some(0));
    }

    /// Keys `k00000000`, `k00000002`, ... with a few versions each; odd numbers are absent.
    fn sample(n: u32) -> Entries {
        let mut out = Vec::new();
        for i in 0..n {
            let uk = format!("k{:08}", i * 2);
            let versions = 1 + (i % 3) as u64;
            for s in (0..versions).rev() {
                let kind = if (i + s as u32).is_multiple_of(5) { ValueKind::Delete } else { ValueKind::Put };
                let seq = u64::from(i) * 4 + s + 1;
                let v = if kind == ValueKind::Delete {
                    Vec::new()
                } else {
                    format!("value-{i}-{s}").repeat(3).into_bytes()
                };
                out.push((make_internal_key(uk.as_bytes(), seq, kind), v));
            }
        }
        out
    }

    fn forward(it: &mut TableIterator) -> Entries {
        let mut got = Vec::new();
        it.seek_to_first();
        while it.valid() {
            got.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        got
    }

    fn backward(it: &mut TableIterator) -> Entries {
        let mut got = Vec::new();
        it.seek_to_last();
        while it.valid() {
            got.push((it.key().to_vec(), it.value().to_vec()));
            it.prev();
        }
        got.reverse();
        got
    }

    fn get_all(t: &Table, lookup: &[u8], limit: usize) -> Result<Entries> {
        let mut got = Vec::new();
        t.get(lookup, true, &mut |k, v| {
            got.push((k.to_vec(), v.to_vec()));
            got.len() < limit
        })?;
        Ok(got)
    }

    fn compressions() -> Vec<Compression> {
        let mut c = vec![Compression::None, Compression::Snappy, Compression::Lz4];
        if cfg!(feature = "zstd") {
            c.push(Compression::Zstd);
        }
        c
    }

    #[test]
    fn round_trip_with_every_compression() {
        let entries = sample(6000);
        assert!(entries.len() > 10_000);
        for compression in compressions() {
            let opts = TableBuilderOptions { compression, ..Default::default() };
            let (bytes, summary) = build(&entries, opts);
            assert_eq!(summary.num_entries, entries.len() as u64);
            assert_eq!(summary.smallest, entries[0].0);
            assert_eq!(summary.largest, entries[entries.len() - 1].0);
            let cache = Arc::new(BlockCache::new(1 << 20));
            let t = open(bytes, Some(cache.clone())).unwrap();
            let p = t.properties();
            assert_eq!((p.num_entries, p.num_deletions), (summary.num_entries, summary.num_deletions));
            assert_eq!((p.smallest_seq, p.largest_seq), (summary.smallest_seq, summary.largest_seq));
            assert_eq!(p.compression, compression);
            assert!(p.num_data_blocks > 10);
            t.verify_checksums().unwrap();
            let mut it = t.iter(true);
            assert_eq!(forward(&mut it), entries, "{compression:?}");
            assert_eq!(backward(&mut it), entries, "{compression:?}");
            assert!(it.status().is_ok());
            assert!(cache.usage() > 0, "{compression:?}: nothing cached");
            assert!(cache.usage() < 1 << 20);
            check_point_reads(&t, &mut it, &entries);
        }
    }

    fn check_point_reads(t: &Arc<Table>, it: &mut TableIterator, entries: &Entries) {
        for (i, (k, v)) in entries.iter().enumerate().step_by(7) {
            it.seek(k);
            assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
            it.seek_for_prev(k);
            assert_eq!(it.key(), &k[..]);
            let got = get_all(t, k, 2).unwrap();
            assert_eq!(got[..], entries[i..(i + 2).min(entries.len())]);
            let uk = key::user_key(k);
            assert!(t.may_contain(uk));
            // The newest visible version via a seek key.
            let first = entries.iter().position(|(e, _)| key::user_key(e) == uk).unwrap();
            assert_eq!(get_all(t, &seek_key(uk, key::MAX_SEQ), 1).unwrap()[0], entries[first]);
        }
        let absent = seek_key(b"k00000003", key::MAX_SEQ);
        let got = get_all(t, &absent, 1).unwrap();
        assert!(got.is_empty() || key::user_key(&got[0].0) == b"k00000004");
        it.seek(&seek_key(b"zzz", key::MAX_SEQ));
        assert!(!it.valid());
        it.seek_for_prev(&seek_key(b"zzz", key::MAX_SEQ));
        assert_eq!(it.key(), &entries[entries.len() - 1].0[..]);
        it.seek_for_prev(&seek_key(b"a", key::MAX_SEQ));
        assert!(!it.valid() && it.status().is_ok());
        let mut last = 0;
        for (k, _) in entries.iter().step_by(101) {
            let off = t.approximate_offset_of(k);
            assert!(off >= last && off < t.file_size());
            last = off;
        }
    }

    #[test]
    fn get_crosses_block_boundaries_and_skips_filtered_keys() {
        let uk = b"many-versions";
        let entries: Entries = (1..=500u64)
            .rev()
            .map(|s| (make_internal_key(uk, s, ValueKind::Put), s.to_le_bytes().to_vec()))
            .collect();
        let opts = TableBuilderOptions { block_size: 256, ..Default::default() };
        let t = open(build(&entries, opts).0, None).unwrap();
        assert!(t.properties().num_data_blocks > 5);
        assert_eq!(get_all(&t, &seek_key(uk, 300), usize::MAX).unwrap(), entries[200..]);
        let mut calls = 0;
        t.get(&seek_key(b"absent", 9), true, &mut |_, _| {
            calls += 1;
            true
        })
        .unwrap();
        assert_eq!(calls, 0, "filter should rule out the key (or it sorts before all entries)");
        assert!(!t.may_contain(b"absent"));
    }

    #[test]
    fn tables_without_filter_or_entries() {
        let entries = sample(50);
        let opts = TableBuilderOptions { bloom_bits_per_key: 0, ..Default::default() };
        let t = open(build(&entries, opts).0, None).unwrap();
        assert!(t.may_contain(b"anything"));
        assert_eq!(forward(&mut t.iter(false)), entries);
        let empty = TableBuilder::new(Box::new(MemWritable::default()), TableBuilderOptions::default());
        assert!(matches!(empty.finish(), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn short_or_foreign_files_are_rejected() {
        let (bytes, _) = build(&sample(10), TableBuilderOptions::default());
        assert!(open(bytes[..10].to_vec(), None).unwrap_err().is_corruption());
        assert!(open(bytes[..bytes.len() - 1].to_vec(), None).unwrap_err().is_corruption());
        assert!(open(vec![0u8; 200], None).unwrap_err().is_corruption());
    }

    /// Flips each byte of the data-block region and checks every read either fails with
    /// `Corruption` or returns exactly the right data.
    #[test]
    fn flipped_data_bytes_are_detected_never_misread() {
        let entries = sample(60);
        for compression in [Compression::None, Compression::Snappy] {
            let opts = TableBuilderOptions { block_size: 512, compression, ..Default::default() };
            let (bytes, _) = build(&entries, opts);
            let data_end = open(bytes.clone(), None).unwrap().data_end as usize;
            for pos in 0..data_end {
                let mut bad = bytes.clone();
                bad[pos] ^= 0x41;
                let t = open(bad.clone(), None).expect("meta blocks are intact");
                check_reads_after_damage(&t, &entries, pos);
                let t = open_mapped(bad).expect("meta blocks are intact");
                check_reads_after_damage(&t, &entries, pos);
            }
        }
    }

    fn check_reads_after_damage(t: &Arc<Table>, entries: &Entries, pos: usize) {
        assert!(t.verify_checksums().unwrap_err().is_corruption(), "byte {pos} not detected");
        let mut it = t.iter(false);
        let got = forward(&mut it);
        assert_eq!(got[..], entries[..got.len()], "byte {pos}");
        assert!(got.len() < entries.len() && it.status().unwrap_err().is_corruption());
        let got = backward(&mut it);
        assert_eq!(got[..], entries[entries.len() - got.len()..], "byte {pos}");
        assert!(it.status().unwrap_err().is_corruption());
        for (i, (k, _)) in entries.iter().enumerate() {
            match get_all(t, k, 1) {
                Ok(got) => assert_eq!(got[..], entries[i..=i], "byte {pos}"),
                Err(e) => assert!(e.is_corruption(), "byte {pos}: {e}"),
            }
        }
    }

    #[test]
    fn mapped_tables_read_the_same_as_copied_ones() {
        let entries = sample(3000);
        for compression in [Compression::None, Compression::Snappy] {
            let opts = TableBuilderOptions { block_size: 1024, compression, ..Default::default() };
            let (bytes, _) = build(&entries, opts);
            let t = open_mapped(bytes).unwrap();
            for _ in 0..2 {
                // The second pass reads blocks whose checksums were already verified.
                let mut it = t.iter(false);
                assert_eq!(forward(&mut it), entries);
                assert_eq!(backward(&mut it), entries);
                for (i, (k, _)) in entries.iter().enumerate().step_by(7) {
                    assert_eq!(get_all(&t, k, 1).unwrap()[..], entries[i..=i]);
                }
            }
        }
    }

    /// A cursor over the sorted model, mirroring `InternalIterator` semantics.
    fn model_seek(model: &Entries, target: &[u8]) -> Option<usize> {
        let i = model.partition_point(|(k, _)| key::compare(k, target) == std::cmp::Ordering::Less);
        (i < model.len()).then_some(i)
    }

    fn model_seek_for_prev(model: &Entries, target: &[u8]) -> Option<usize> {
        let i = model.partition_point(|(k, _)| key::compare(k, target) != std::cmp::Ordering::Greater);
        i.checked_sub(1)
    }

    #[derive(Debug, Clone)]
    enum Op {
        Seek(Vec<u8>, u64),
        SeekForPrev(Vec<u8>, u64),
        First,
        Last,
        Next,
        Prev,
    }

    fn op() -> impl Strategy<Value = Op> {
        let uk = || proptest::collection::vec(0u8..4, 0..4);
        prop_oneof![
            (uk(), 0u64..20).prop_map(|(k, s)| Op::Seek(k, s)),
            (uk(), 0u64..20).prop_map(|(k, s)| Op::SeekForPrev(k, s)),
            Just(Op::First),
            Just(Op::Last),
            Just(Op::Next),
            Just(Op::Next),
            Just(Op::Prev),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Point lookups, whether the prefix array decides the block alone (lookups whose first
        /// 8 bytes no index entry shares) or the index block is searched, return the model's
        /// entries from the first one `>= lookup` on.
        #[test]
        fn get_matches_sorted_model(
            keys in proptest::collection::btree_set((proptest::collection::vec(prop_oneof![Just(0u8), Just(7), Just(255)], 0..11), 0u64..4), 1..300),
            lookups in proptest::collection::vec((proptest::collection::vec(prop_oneof![Just(0u8), Just(7), Just(9), Just(255)], 0..11), 0u64..5), 1..40),
            block_size in 64usize..600,
            mapped in any::<bool>(),
        ) {
            let mut model: Entries = keys
                .iter()
                .map(|(uk, s)| (make_internal_key(uk, *s, ValueKind::Put), format!("{uk:?}@{s}").into_bytes()))
                .collect();
            model.sort_by(|a, b| key::compare(&a.0, &b.0));
            let opts = TableBuilderOptions { block_size, ..Default::default() };
            let bytes = build(&model, opts).0;
            let t = if mapped { open_mapped(bytes) } else { open(bytes, None) }.unwrap();
            prop_assert!(t.index_handles.is_some());
            for (uk, s) in lookups {
                let tg = seek_key(&uk, s);
                let from = model_seek(&model, &tg).unwrap_or(model.len());
                let expected = &model[from..(from + 3).min(model.len())];
                // A filtered-out key may return nothing; anything returned must be the model's.
                let got = get_all(&t, &tg, 3).unwrap();
                if t.may_contain(&uk) {
                    prop_assert_eq!(&got[..], expected);
                } else {
                    prop_assert!(got.is_empty());
                }
            }
        }

        #[test]
        fn iterator_matches_sorted_model(
            keys in proptest::collection::btree_set((proptest::collection::vec(0u8..4, 0..4), 0u64..20), 1..300),
            ops in proptest::collection::vec(op(), 1..60),
            block_size in 64usize..600,
            restart_interval in 1usize..8,
        ) {
            let mut model: Entries = keys
                .iter()
                .map(|(uk, s)| (make_internal_key(uk, *s, ValueKind::Put), format!("{uk:?}@{s}").into_bytes()))
                .collect();
            model.sort_by(|a, b| key::compare(&a.0, &b.0));
            let opts = TableBuilderOptions { block_size, restart_interval, compression: Compression::Lz4, ..Default::default() };
            let t = open(build(&model, opts).0, Some(Arc::new(BlockCache::new(1 << 16)))).unwrap();
            let mut it = t.iter(true);
            let mut pos: Option<usize> = None;
            for op in ops {
                pos = match op {
                    Op::Seek(k, s) => { let tg = seek_key(&k, s); it.seek(&tg); model_seek(&model, &tg) }
                    Op::SeekForPrev(k, s) => { let tg = seek_key(&k, s); it.seek_for_prev(&tg); model_seek_for_prev(&model, &tg) }
                    Op::First => { it.seek_to_first(); Some(0) }
                    Op::Last => { it.seek_to_last(); Some(model.len() - 1) }
                    Op::Next => match pos { Some(p) => { it.next(); (p + 1 < model.len()).then_some(p + 1) } None => None },
                    Op::Prev => match pos { Some(p) => { it.prev(); p.checked_sub(1) } None => None },
                };
                prop_assert_eq!(it.valid(), pos.is_some());
                if let Some(p) = pos {
                    prop_assert_eq!(it.key(), &model[p].0[..]);
                    prop_assert_eq!(it.value(), &model[p].1[..]);
                }
                prop_assert!(it.status().is_ok());
            }
        }
    }
}
