//! Reading an SST file: [`Table`] pins the footer, index block, filter, properties and range
//! tombstones in memory and serves point lookups and two-level iterators, fetching data blocks
//! through the block cache.
//!
//! This module owns the read path of one file. It must not merge tables, hide versions or
//! interpret values; and it must never return bytes that failed verification: every bad block is
//! `Error::Corruption` naming the file number and block offset.

use std::cell::RefCell;
use std::sync::Arc;

use crate::cache::PinnedCharge;
use crate::error::{Error, Result};
use crate::fs::{RandomAccessFile, SequentialHint};
use crate::iter::InternalIterator;
use crate::key;
use crate::options::PrefixExtractor;
use crate::range_del::{self, Fragments};
use crate::util::prefetch::prefetch_read;
use crate::util::verified::VerifiedOffsets;

use super::block::{key_prefix, Block, BlockIter};
use super::bloom::BloomFilter;
use super::format::{
    mapped_block_range, read_block, read_block_as, BlockHandle, Footer, TableProperties, BLOCK_TRAILER_LEN,
    FOOTER_LEN,
};
use super::prefix_index::PrefixIndex;
use super::BlockCache;

mod iter;

pub use iter::TableIterator;

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
    /// The range tombstones of the range-deletion block, fragmented; `None` without one.
    range_dels: Option<Arc<Fragments>>,
    /// What the fields above hold in memory, charged to the block cache for as long as the
    /// table is open, so that the cache's capacity bounds the metadata of a database too large
    /// for memory as well as its data blocks.
    _charge: Option<PinnedCharge<Arc<Block>>>,
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
        let range_dels = Self::read_range_dels(&*file, file_number, &props)?;
        if let Some(h) = props.range_del_handle() {
            data_end = data_end.min(h.offset);
        }
        let verified = match file.mapped() {
            Some(_) => VerifiedOffsets::new(data_end, VERIFIED_GRANULE),
            None => VerifiedOffsets::none(),
        };
        let index_prefixes = index.restart_key_prefixes().map(PrefixIndex::new);
        let index_handles = index_prefixes.as_ref().and_then(|_| Self::all_handles(&index));
        let pinned = index.charge()
            + filter.as_ref().map_or(0, BloomFilter::size)
            + index_prefixes.as_ref().map_or(0, PrefixIndex::memory_usage)
            + index_handles.as_ref().map_or(0, |h| h.capacity() * std::mem::size_of::<BlockHandle>())
            + props.range_del_size as usize;
        let _charge = cache.as_ref().map(|c| c.pin(pinned));
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
            range_dels,
            _charge,
        })
    }

    /// Reads, checks and fragments the range-deletion block the properties list, if any.
    fn read_range_dels(
        file: &dyn RandomAccessFile,
        file_number: u64,
        props: &TableProperties,
    ) -> Result<Option<Arc<Fragments>>> {
        let Some(h) = props.range_del_handle() else { return Ok(None) };
        let tombstones = range_del::block::decode(read_block(file, file_number, &h)?)
            .map_err(|e| annotate(e, file_number, &h))?;
        if tombstones.len() as u64 != props.num_range_deletions {
            return Err(annotate(
                Error::corruption(format!(
                    "{} range tombstones, the properties say {}",
                    tombstones.len(),
                    props.num_range_deletions
                )),
                file_number,
                &h,
            ));
        }
        Ok(Some(Arc::new(Fragments::new(tombstones))))
    }

    /// The table's range tombstones, fragmented; `None` when it has none.
    pub fn range_dels(&self) -> Option<&Arc<Fragments>> {
        self.range_dels.as_ref()
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
        Self::read_block_as(file, file_number, h, false)
    }

    /// Reads and parses a block; `forward` for a reader walking the table forward.
    fn read_block_as(
        file: &dyn RandomAccessFile,
        file_number: u64,
        h: &BlockHandle,
        forward: bool,
    ) -> Result<Block> {
        Block::new(read_block_as(file, file_number, h, forward)?).map_err(|e| annotate(e, file_number, h))
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

    /// False only if no key starting with `wanted` is in the table: the filter holds the
    /// prefixes of `extractor` and `wanted` is at least a prefix long (true otherwise).
    pub fn may_contain_prefix(&self, extractor: &PrefixExtractor, wanted: &[u8]) -> bool {
        if self.props.prefix_extractor != extractor.code() {
            return true;
        }
        extractor.probe_for(wanted).is_none_or(|probe| self.may_contain(probe))
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
            let block = self.data_block(&h, fill_cache, false)?;
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
    /// it, as a block cache would on load); anything else goes through the block cache, read
    /// with `read_exact_at_forward` when `forward` (a reader walking the table forward).
    fn data_block(&self, h: &BlockHandle, fill_cache: bool, forward: bool) -> Result<Arc<Block>> {
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
        let block = Arc::new(Self::read_block_as(&*self.file, self.file_number, h, forward)?);
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
        TableIterator::new(Arc::clone(self), fill_cache, SequentialHint::new())
    }

    /// An iterator for a reader that walks the whole table forward once (a compaction's input):
    /// fills no cache and asks for read-ahead from its first block.
    pub fn iter_whole_file(self: &Arc<Self>) -> TableIterator {
        TableIterator::new(Arc::clone(self), false, SequentialHint::whole_file())
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
            let block = Arc::new(Self::read_block_as(&*self.file, self.file_number, &h, true)?);
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

#[cfg(test)]
mod tests;
