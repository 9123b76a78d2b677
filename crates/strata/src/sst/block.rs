//! Prefix-compressed sorted blocks (data and index blocks of an SST): the builder that lays out
//! entries and restart points, the immutable [`Block`], and its cursor [`BlockIter`].
//!
//! This module owns the byte layout *inside* a block only; it knows nothing of trailers,
//! checksums, compression or files (see `format.rs`). Decoding treats the bytes as hostile: every
//! offset and length is checked, and bad bytes become `Error::Corruption` recorded in the
//! iterator, never a panic or an out-of-bounds read.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::{MappedRange, RandomAccessFile};
use crate::iter::InternalIterator;
use crate::key;
use crate::util::coding::{self, Reader};
use crate::util::prefetch::prefetch_read;

/// Builds one block. Keys must be added in the order readers will search them (the table builder
/// checks internal-key order; the properties block uses bytewise order and is only scanned).
#[derive(Debug)]
pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    /// Whether a run of small entries may go past `restart_interval` (see [`Self::for_data`]).
    stretch_short_runs: bool,
    counter: usize,
    num_entries: usize,
    last_key: Vec<u8>,
}

/// A run of entries since a restart point that takes fewer bytes than this is short: a data
/// block's run goes on past `restart_interval` keys, up to twice as many, until it is not.
/// A seek scans one run after its binary search, and what that costs is mostly the cache lines
/// it touches, so a run of 16 entries of 30 bytes reads as fast as 8 of 60; and each restart
/// stores a whole key, which for short entries is a large share of the block (restarts every 8
/// keys made LinkBench's families of 30-byte entries 2-4% larger than at RocksDB's 16).
pub const SHORT_RUN_BYTES: usize = 512;

impl BlockBuilder {
    /// A builder placing a restart point every `restart_interval` keys (values below 1 mean 1).
    /// Index, properties and range-deletion blocks use this: their readers rely on the exact
    /// spacing (every entry a restart).
    pub fn new(restart_interval: usize) -> Self {
        Self {
            buf: Vec::new(),
            restarts: vec![0],
            restart_interval: restart_interval.max(1),
            stretch_short_runs: false,
            counter: 0,
            num_entries: 0,
            last_key: Vec::new(),
        }
    }

    /// A data-block builder: a restart point after `restart_interval` keys, unless those keys
    /// took fewer than [`SHORT_RUN_BYTES`], in which case the run goes on until it has or until
    /// it holds twice `restart_interval` keys. An interval of 1 stays exact. Readers find
    /// restart points through the restart array, so any spacing reads the same.
    pub fn for_data(restart_interval: usize) -> Self {
        Self { stretch_short_runs: restart_interval > 1, ..Self::new(restart_interval) }
    }

    /// Whether the next entry starts a new restart run.
    fn at_restart(&self) -> bool {
        if self.counter < self.restart_interval {
            return false;
        }
        if !self.stretch_short_runs || self.counter >= 2 * self.restart_interval {
            return true;
        }
        let run_start = self.restarts.last().map_or(0, |&r| r as usize);
        self.buf.len() - run_start >= SHORT_RUN_BYTES
    }

    /// Appends an entry, sharing a prefix with the previous key unless at a restart point.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let shared = if !self.at_restart() {
            common_prefix_len(&self.last_key, key)
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
            0
        };
        let unshared = &key[shared..];
        coding::put_varint(&mut self.buf, shared as u64);
        coding::put_varint(&mut self.buf, unshared.len() as u64);
        coding::put_varint(&mut self.buf, value.len() as u64);
        self.buf.extend_from_slice(unshared);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(unshared);
        self.counter += 1;
        self.num_entries += 1;
    }

    /// Size of the block if finished now.
    pub fn size_estimate(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// True when no entry was added since the last reset.
    pub fn is_empty(&self) -> bool {
        self.num_entries == 0
    }

    /// Appends the restart array and returns the finished block; call [`reset`](Self::reset)
    /// before adding again.
    pub fn finish(&mut self) -> &[u8] {
        for &r in &self.restarts {
            coding::put_u32(&mut self.buf, r);
        }
        coding::put_u32(&mut self.buf, self.restarts.len() as u32);
        &self.buf
    }

    /// Clears the builder for the next block, keeping its allocations.
    pub fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.num_entries = 0;
        self.last_key.clear();
    }
}

fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Where a block's bytes live: decoded into memory, or borrowed from a memory-mapped file.
/// The mapped range keeps its address, rather than asking `file.mapped()` again, because a block
/// iterator reads the bytes for every key and value it decodes, and that call is dynamic
/// dispatch (4% of a warm seekrandom's samples, and it kept the accessors from being inlined).
enum Storage {
    Owned(Vec<u8>),
    Mapped(MappedRange),
}

/// A decoded, immutable block: its uncompressed bytes and where the restart array starts.
pub struct Block {
    data: Storage,
    restarts_offset: usize,
    num_restarts: usize,
}

impl std::fmt::Debug for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Block").field("size", &self.size()).field("restarts", &self.num_restarts).finish()
    }
}

/// Reads the restart-array framing at the end of `data`: (restarts offset, restart count).
fn restart_framing(data: &[u8]) -> Result<(usize, usize)> {
    let n = coding::get_u32(data.get(data.len().saturating_sub(4)..).unwrap_or(&[]))
        .ok_or_else(|| Error::corruption("block shorter than its restart count"))? as usize;
    let max = (data.len() - 4) / 4;
    if n == 0 || n > max {
        return Err(Error::corruption(format!("block claims {n} restarts, room for {max}")));
    }
    Ok((data.len() - 4 - 4 * n, n))
}

impl Block {
    /// Takes ownership of uncompressed block bytes, checking only the restart-array framing;
    /// entries are validated lazily as iterators decode them.
    pub fn new(data: Vec<u8>) -> Result<Self> {
        let (restarts_offset, num_restarts) = restart_framing(&data)?;
        Ok(Self { data: Storage::Owned(data), restarts_offset, num_restarts })
    }

    /// A block whose (uncompressed, already verified) bytes are `start..start + len` of the
    /// memory-mapped `file`; nothing is copied.
    pub fn mapped(file: Arc<dyn RandomAccessFile>, start: usize, len: usize) -> Result<Self> {
        let range = start.checked_add(len).and_then(|end| MappedRange::new(file, start..end));
        let range = range.ok_or_else(|| Error::corruption("mapped block outside the file"))?;
        let (restarts_offset, num_restarts) = restart_framing(range.bytes())?;
        Ok(Self { data: Storage::Mapped(range), restarts_offset, num_restarts })
    }

    /// The block contents.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        match &self.data {
            Storage::Owned(v) => v,
            Storage::Mapped(range) => range.bytes(),
        }
    }

    /// Bytes of the block contents.
    pub fn size(&self) -> usize {
        match &self.data {
            Storage::Owned(v) => v.len(),
            Storage::Mapped(range) => range.len(),
        }
    }

    /// Memory the block holds, charged to the block cache.
    pub fn charge(&self) -> usize {
        let owned = match &self.data {
            Storage::Owned(v) => v.capacity(),
            Storage::Mapped(_) => 0,
        };
        owned + std::mem::size_of::<Self>()
    }

    /// A cursor over the block, not yet positioned.
    pub fn iter(self: &Arc<Self>) -> BlockIter {
        BlockIter::new(Arc::clone(self))
    }

    /// Number of restart points.
    pub fn num_restarts(&self) -> usize {
        self.num_restarts
    }

    /// For a block whose every entry is a restart point (index blocks): the first 8 bytes of each
    /// entry's user key as a big-endian integer, zero-padded, in entry order. `None` if some entry
    /// is not a restart point or does not decode. Comparing these integers orders entries the way
    /// their keys do (ties aside), so a search can run over a dense array instead of the block.
    pub fn restart_key_prefixes(&self) -> Option<Vec<u64>> {
        let data = self.bytes();
        let limit = self.restarts_offset;
        let mut out = Vec::with_capacity(self.num_restarts);
        let mut expected_next = 0;
        for i in 0..self.num_restarts {
            let p = self.restart_point(i)?;
            if p != expected_next {
                return None;
            }
            let (shared, unshared, vlen, hlen) = decode_header(data, p, limit)?;
            if shared != 0 {
                return None;
            }
            let ikey = data.get(p + hlen..p + hlen + unshared)?;
            out.push(key_prefix(key::user_key(ikey)));
            expected_next = p + hlen + unshared + vlen;
        }
        (expected_next == limit).then_some(out)
    }

    fn restart_point(&self, i: usize) -> Option<usize> {
        let at = self.restarts_offset.checked_add(i.checked_mul(4)?)?;
        coding::get_u32(self.bytes().get(at..)?).map(|v| v as usize)
    }
}

/// The first 8 bytes of `user_key` as a big-endian integer, zero-padded.
#[inline]
pub fn key_prefix(user_key: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = user_key.len().min(8);
    b[..n].copy_from_slice(&user_key[..n]);
    u64::from_be_bytes(b)
}

/// Entry header: (shared, unshared, value length, header length).
type Header = (usize, usize, usize, usize);

/// Decodes the entry header at `p`, checking the entry lies before `limit`.
#[inline(always)]
fn decode_header(data: &[u8], p: usize, limit: usize) -> Option<Header> {
    let src = data.get(p..limit)?;
    let (shared, unshared, vlen, hlen) = match src {
        // Fast path: all three varints are single bytes (the common case).
        [a, b, c, ..] if (a | b | c) < 0x80 => (*a as usize, *b as usize, *c as usize, 3),
        _ => decode_long_header(src)?,
    };
    let body = hlen.checked_add(unshared)?.checked_add(vlen)?;
    (body <= src.len()).then_some((shared, unshared, vlen, hlen))
}

/// `decode_header`'s path for entries with a multi-byte length (kept out of the inlined part).
fn decode_long_header(src: &[u8]) -> Option<Header> {
    let mut r = Reader::new(src);
    let (s, u, v) = (r.varint32()?, r.varint32()?, r.varint32()?);
    Some((s as usize, u as usize, v as usize, src.len() - r.remaining().len()))
}

/// A cursor over one block. Owns an `Arc` of its block, so it is `'static` and can outlive the
/// cache entry it came from. Keys at restart points are borrowed from the block; others are
/// rebuilt in one reused buffer, so stepping allocates nothing once the buffer has grown.
pub struct BlockIter {
    block: Arc<Block>,
    /// Offset of the current entry; `restarts_offset` when not valid.
    current: usize,
    next: usize,
    restart_index: usize,
    /// Offset of restart point `restart_index + 1` (`usize::MAX` past the last), so a step
    /// compares one field instead of decoding the restart array.
    next_restart: usize,
    key_buf: Vec<u8>,
    /// When true the key is `block.data[key_start..key_end]`, else `key_buf`.
    key_borrowed: bool,
    key_start: usize,
    key_end: usize,
    val_start: usize,
    val_end: usize,
    err: Option<Error>,
}

impl BlockIter {
    /// A cursor over `block`, not yet positioned.
    pub fn new(block: Arc<Block>) -> Self {
        Self::with_buffer(block, Vec::new())
    }

    /// Like [`new`](Self::new) but reuses `buf` (e.g. from [`into_buffer`](Self::into_buffer))
    /// for rebuilt keys, so moving between blocks allocates nothing.
    pub fn with_buffer(block: Arc<Block>, mut buf: Vec<u8>) -> Self {
        buf.clear();
        let end = block.restarts_offset;
        Self {
            block,
            current: end,
            next: end,
            restart_index: 0,
            next_restart: usize::MAX,
            key_buf: buf,
            key_borrowed: true,
            key_start: 0,
            key_end: 0,
            val_start: 0,
            val_end: 0,
            err: None,
        }
    }

    /// Gives back the key buffer for reuse.
    pub fn into_buffer(self) -> Vec<u8> {
        self.key_buf
    }

    /// The block this cursor walks.
    pub fn block(&self) -> &Arc<Block> {
        &self.block
    }

    fn mark_invalid(&mut self) {
        self.current = self.block.restarts_offset;
        self.next = self.current;
        self.restart_index = self.block.num_restarts;
        self.next_restart = usize::MAX;
        self.key_borrowed = true;
        self.key_start = 0;
        self.key_end = 0;
    }

    fn corrupt(&mut self, what: &str) {
        let at = self.current;
        self.mark_invalid();
        if self.err.is_none() {
            self.err = Some(Error::corruption(format!("block entry at offset {at}: {what}")));
        }
    }

    fn seek_to_restart_point(&mut self, index: usize) -> bool {
        let Some(off) = self.block.restart_point(index).filter(|&o| o <= self.block.restarts_offset) else {
            self.corrupt("bad restart point");
            return false;
        };
        self.set_restart_index(index);
        self.next = off;
        self.current = off;
        self.key_borrowed = true;
        self.key_start = 0;
        self.key_end = 0;
        true
    }

    /// Decodes the entry at `self.next`; false at the end of the block or on corruption.
    fn parse_next_key(&mut self) -> bool {
        self.current = self.next;
        let limit = self.block.restarts_offset;
        if self.current >= limit {
            self.mark_invalid();
            return false;
        }
        let Some((shared, unshared, vlen, hlen)) = decode_header(self.block.bytes(), self.current, limit)
        else {
            self.corrupt("truncated entry");
            return false;
        };
        if shared > self.key_len() {
            self.corrupt("shared prefix longer than previous key");
            return false;
        }
        let delta_start = self.current + hlen;
        let delta_end = delta_start + unshared;
        self.rebuild_key(shared, delta_start, delta_end);
        self.val_start = delta_end;
        self.val_end = delta_end + vlen;
        self.next = self.val_end;
        self.advance_restart_index();
        true
    }

    fn key_len(&self) -> usize {
        if self.key_borrowed {
            self.key_end - self.key_start
        } else {
            self.key_buf.len()
        }
    }

    /// Ranges were checked by `decode_header` and `shared <= key_len`, so slicing cannot fail.
    fn rebuild_key(&mut self, shared: usize, delta_start: usize, delta_end: usize) {
        let data = self.block.bytes();
        if shared == 0 {
            self.key_borrowed = true;
            self.key_start = delta_start;
            self.key_end = delta_end;
            return;
        }
        if self.key_borrowed {
            self.key_buf.clear();
            self.key_buf.extend_from_slice(&data[self.key_start..self.key_start + shared]);
            self.key_borrowed = false;
        } else {
            self.key_buf.truncate(shared);
        }
        self.key_buf.extend_from_slice(&data[delta_start..delta_end]);
    }

    fn advance_restart_index(&mut self) {
        while self.next_restart < self.current {
            self.set_restart_index(self.restart_index + 1);
        }
    }

    fn set_restart_index(&mut self, index: usize) {
        self.restart_index = index;
        let following = index.checked_add(1).filter(|&i| i < self.block.num_restarts);
        // An unreadable restart point stops the index here, as a failed decode always did.
        self.next_restart = following.and_then(|i| self.block.restart_point(i)).unwrap_or(usize::MAX);
    }

    /// The key stored at restart point `i`, which must not share a prefix.
    fn restart_key(&mut self, i: usize) -> Option<&[u8]> {
        let limit = self.block.restarts_offset;
        let p = self.block.restart_point(i).filter(|&p| p < limit);
        let header = p.and_then(|p| Some((p, decode_header(self.block.bytes(), p, limit)?)));
        match header {
            Some((p, (0, unshared, _, hlen))) => self.block.bytes().get(p + hlen..p + hlen + unshared),
            _ => {
                self.corrupt("bad restart entry");
                None
            }
        }
    }

    /// A binary search over a freshly fetched block misses cache on every probe, one after the
    /// other. When the candidates are few (a data block has ~16 restart points), start loading
    /// all of their keys at once, so the probes wait for about one miss instead of four.
    fn prefetch_restart_keys(&self, left: usize, right: usize) {
        const MAX_PREFETCHED: usize = 32;
        if right <= left || right - left > MAX_PREFETCHED {
            return;
        }
        let bytes = self.block.bytes();
        for i in left..=right {
            if let Some(p) = self.block.restart_point(i) {
                prefetch_read(bytes.as_ptr().wrapping_add(p));
            }
        }
    }

    /// The entries after restart point `i` are scanned one by one, each decode waiting for the
    /// previous one's cache line; start loading the lines of the whole interval at once.
    fn prefetch_restart_interval(&self, i: usize) {
        const MAX_PREFETCHED_BYTES: usize = 2048;
        let (Some(start), limit) = (self.block.restart_point(i), self.block.restarts_offset) else { return };
        let next = (i + 1 < self.block.num_restarts).then(|| self.block.restart_point(i + 1)).flatten();
        let end = next.unwrap_or(limit).min(limit);
        let end = end.min(start.saturating_add(MAX_PREFETCHED_BYTES));
        let bytes = self.block.bytes();
        // The line of `start` itself is loaded by the first decode.
        for line in (start..end).step_by(64).skip(1) {
            prefetch_read(bytes.as_ptr().wrapping_add(line));
        }
    }

    /// Index of the last restart point whose key is `< target` (0 if none).
    fn find_restart(&mut self, target: &[u8]) -> Option<usize> {
        let (mut left, mut right) = (0, self.block.num_restarts - 1);
        if self.valid() {
            // Sequential seeks usually land near the current entry: narrow the search with it.
            match key::compare(self.key(), target) {
                Ordering::Less => left = self.restart_index,
                Ordering::Greater => right = self.restart_index,
                Ordering::Equal => return None,
            }
        }
        self.prefetch_restart_keys(left, right);
        while left < right {
            let mid = left + (right - left).div_ceil(2);
            let k = self.restart_key(mid)?;
            if key::compare(k, target) == Ordering::Less {
                left = mid;
            } else {
                right = mid - 1;
            }
        }
        Some(left)
    }
}

impl BlockIter {
    /// For blocks whose every entry is a restart point: positions at the first entry `>= target`,
    /// knowing that entries before `lo` are smaller and entries from `hi` on are larger.
    pub fn seek_between(&mut self, target: &[u8], lo: usize, hi: usize) {
        self.err = None;
        let hi = hi.min(self.block.num_restarts);
        let (mut left, mut right) = (lo.min(hi), hi);
        while left < right {
            let mid = left + (right - left) / 2;
            let Some(k) = self.restart_key(mid) else { return };
            if key::compare(k, target) == Ordering::Less {
                left = mid + 1;
            } else {
                right = mid;
            }
        }
        if left >= self.block.num_restarts {
            self.mark_invalid();
        } else if self.seek_to_restart_point(left) {
            self.parse_next_key();
        }
    }
}

impl InternalIterator for BlockIter {
    fn valid(&self) -> bool {
        self.current < self.block.restarts_offset
    }

    fn seek_to_first(&mut self) {
        self.err = None;
        if self.seek_to_restart_point(0) {
            self.parse_next_key();
        }
    }

    fn seek_to_last(&mut self) {
        self.err = None;
        if self.seek_to_restart_point(self.block.num_restarts - 1) {
            while self.parse_next_key() && self.next < self.block.restarts_offset {}
        }
    }

    fn seek(&mut self, target: &[u8]) {
        self.err = None;
        let Some(start) = self.find_restart(target) else {
            return; // already at target, or corruption recorded
        };
        if !self.seek_to_restart_point(start) {
            return;
        }
        self.prefetch_restart_interval(start);
        while self.parse_next_key() {
            if key::compare(self.key(), target) != Ordering::Less {
                return;
            }
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
        while self.valid() && key::compare(self.key(), target) == Ordering::Greater {
            self.prev();
        }
    }

    fn next(&mut self) {
        debug_assert!(self.valid());
        self.parse_next_key();
    }

    fn prev(&mut self) {
        debug_assert!(self.valid());
        let original = self.current;
        // Back up to the last restart point before the current entry, then scan forward.
        loop {
            match self.block.restart_point(self.restart_index) {
                Some(p) if p < original => break,
                Some(_) if self.restart_index == 0 => {
                    self.mark_invalid();
                    return;
                }
                Some(_) => self.restart_index -= 1,
                None => return self.corrupt("bad restart point"),
            }
        }
        if !self.seek_to_restart_point(self.restart_index) {
            return;
        }
        while self.parse_next_key() && self.next < original {}
    }

    fn key(&self) -> &[u8] {
        if self.key_borrowed {
            self.block.bytes().get(self.key_start..self.key_end).unwrap_or(&[])
        } else {
            &self.key_buf
        }
    }

    fn value(&self) -> &[u8] {
        self.block.bytes().get(self.val_start..self.val_end).unwrap_or(&[])
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
    use crate::key::{make_internal_key, seek_key, ValueKind};
    use proptest::prelude::*;

    fn ikey(i: u32) -> Vec<u8> {
        make_internal_key(format!("key{:08}", i * 2).as_bytes(), 100, ValueKind::Put)
    }

    fn build(n: u32, interval: usize) -> Arc<Block> {
        let mut b = BlockBuilder::new(interval);
        for i in 0..n {
            b.add(&ikey(i), format!("v{i}").as_bytes());
        }
        Arc::new(Block::new(b.finish().to_vec()).unwrap())
    }

    #[test]
    fn a_mapped_block_reads_its_bytes_after_every_other_handle_on_the_file_is_gone() {
        use crate::fs::testfs::{MappedMemRandom, MemRandom};
        let owned = build(40, 4);
        let bytes = owned.bytes().to_vec();
        // The block sits at offset 3 of the file, between other bytes.
        let mut file_bytes = vec![0xAA; 3];
        file_bytes.extend_from_slice(&bytes);
        file_bytes.extend_from_slice(&[0xBB; 5]);
        let file: Arc<dyn RandomAccessFile> = Arc::new(MappedMemRandom(MemRandom(file_bytes)));
        let mapped = Arc::new(Block::mapped(Arc::clone(&file), 3, bytes.len()).unwrap());
        drop(file);
        assert_eq!(mapped.bytes(), &bytes[..]);
        assert_eq!(collect_forward(&mut mapped.iter()), collect_forward(&mut owned.iter()));
        // Shared across threads, as the block cache and iterators do.
        let other = Arc::clone(&mapped);
        let from_thread = std::thread::spawn(move || other.bytes().to_vec()).join().unwrap();
        assert_eq!(from_thread, bytes);
        let outside = Arc::new(MappedMemRandom(MemRandom(vec![0; 8])));
        assert!(Block::mapped(outside, 4, 8).is_err(), "a range past the mapping is refused");
    }

    fn collect_forward(it: &mut BlockIter) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            out.push(it.key().to_vec());
            it.next();
        }
        out
    }

    #[test]
    fn round_trip_forward_and_backward() {
        for interval in [1, 2, 16, 1000] {
            let block = build(1000, interval);
            let mut it = block.iter();
            let want: Vec<_> = (0..1000).map(ikey).collect();
            assert_eq!(collect_forward(&mut it), want);
            it.seek_to_last();
            for i in (0..1000).rev() {
                assert!(it.valid(), "interval {interval} at {i}");
                assert_eq!(it.key(), &ikey(i)[..]);
                assert_eq!(it.value(), format!("v{i}").as_bytes());
                it.prev();
            }
            assert!(!it.valid());
            assert!(it.status().is_ok());
        }
    }

    #[test]
    fn seek_and_seek_for_prev_across_restart_points() {
        let block = build(500, 16);
        let mut it = block.iter();
        for probe in 0..1001u32 {
            // Odd probes fall between stored keys (which are even).
            let target = seek_key(format!("key{probe:08}").as_bytes(), 200);
            let ge = probe.div_ceil(2);
            it.seek(&target);
            if ge < 500 {
                assert_eq!(it.key(), &ikey(ge)[..], "seek {probe}");
            } else {
                assert!(!it.valid());
            }
            it.seek_for_prev(&target);
            match ge.checked_sub(1) {
                Some(le) => assert_eq!(it.key(), &ikey(le.min(499))[..], "seek_for_prev {probe}"),
                None => assert!(!it.valid(), "seek_for_prev {probe}"),
            }
        }
        // Exact hits, then prev across a restart boundary.
        it.seek(&ikey(32));
        assert_eq!(it.key(), &ikey(32)[..]);
        it.prev();
        assert_eq!(it.key(), &ikey(31)[..]);
        it.seek_for_prev(&ikey(17));
        assert_eq!(it.key(), &ikey(17)[..]);
    }

    /// Offsets of a finished block's restart points.
    fn restart_offsets(block: &Block) -> Vec<usize> {
        (0..block.num_restarts()).map(|i| block.restart_point(i).unwrap()).collect()
    }

    #[test]
    fn data_blocks_stretch_runs_of_short_entries_and_only_those() {
        // 19-byte internal keys, 2-byte values: entries of about 12-25 bytes, so 8 of them are
        // a short run and each run takes 16 keys.
        let mut short = BlockBuilder::for_data(8);
        for i in 0..64 {
            short.add(&ikey(i), b"vv");
        }
        let short = Block::new(short.finish().to_vec()).unwrap();
        assert_eq!(short.num_restarts(), 4, "64 short entries in runs of 16");

        // 200-byte values: 8 entries already exceed SHORT_RUN_BYTES, so runs stay at 8.
        let mut long = BlockBuilder::for_data(8);
        for i in 0..64 {
            long.add(&ikey(i), &[7u8; 200]);
        }
        let long = Block::new(long.finish().to_vec()).unwrap();
        assert_eq!(long.num_restarts(), 8, "64 long entries in runs of 8");

        // Runs of middling entries end as soon as they reach SHORT_RUN_BYTES.
        let mut mid = BlockBuilder::for_data(8);
        for i in 0..64 {
            mid.add(&ikey(i), &[7u8; 40]);
        }
        let mid = Arc::new(Block::new(mid.finish().to_vec()).unwrap());
        let offsets = restart_offsets(&mid);
        let mut entries = Vec::new();
        let mut it = mid.iter();
        it.seek_to_first();
        while it.valid() {
            entries.push(it.current);
            it.next();
        }
        assert_eq!(entries.len(), 64);
        for pair in offsets.windows(2) {
            let len = pair[1] - pair[0];
            let keys = entries.iter().filter(|&&e| (pair[0]..pair[1]).contains(&e)).count();
            assert!((8..=16).contains(&keys), "a run of {keys} keys");
            assert!(keys == 16 || len >= SHORT_RUN_BYTES, "a run of {keys} keys ended at {len} bytes");
            // ... and not one entry later: without its last entry a stretched run was short.
            let last = entries.iter().copied().filter(|&e| e < pair[1]).max().unwrap();
            assert!(keys == 8 || last - pair[0] < SHORT_RUN_BYTES, "a run of {keys} keys went past");
        }

        // An interval of 1 stays exact, and `new` never stretches.
        let mut exact = BlockBuilder::for_data(1);
        let mut strict = BlockBuilder::new(8);
        for i in 0..64 {
            exact.add(&ikey(i), b"vv");
            strict.add(&ikey(i), b"vv");
        }
        assert_eq!(Block::new(exact.finish().to_vec()).unwrap().num_restarts(), 64);
        assert_eq!(Block::new(strict.finish().to_vec()).unwrap().num_restarts(), 8);
    }

    proptest! {
        /// Whatever the entry sizes, a stretched data block reads back every entry, and seeks
        /// land on the first key at or after the target.
        #[test]
        fn stretched_runs_read_back_and_seek(
            values in proptest::collection::vec(0usize..120, 1..300),
            interval in 1usize..20,
        ) {
            let mut b = BlockBuilder::for_data(interval);
            for (i, len) in values.iter().enumerate() {
                b.add(&ikey(i as u32), &vec![i as u8; *len]);
            }
            let block = Arc::new(Block::new(b.finish().to_vec()).unwrap());
            let mut it = block.iter();
            it.seek_to_first();
            for (i, len) in values.iter().enumerate() {
                prop_assert!(it.valid());
                prop_assert_eq!(it.key(), &ikey(i as u32)[..]);
                prop_assert_eq!(it.value(), &vec![i as u8; *len][..]);
                it.next();
            }
            prop_assert!(!it.valid());
            for probe in 0..(2 * values.len() as u32 + 1) {
                let target = seek_key(format!("key{probe:08}").as_bytes(), 200);
                it.seek(&target);
                let ge = probe.div_ceil(2) as usize;
                if ge < values.len() {
                    prop_assert_eq!(it.key(), &ikey(ge as u32)[..]);
                } else {
                    prop_assert!(!it.valid());
                }
            }
            it.seek_to_last();
            for i in (0..values.len()).rev() {
                prop_assert_eq!(it.key(), &ikey(i as u32)[..]);
                it.prev();
            }
            prop_assert!(!it.valid());
        }
    }

    #[test]
    fn empty_block_is_never_valid() {
        let mut b = BlockBuilder::new(16);
        let block = Arc::new(Block::new(b.finish().to_vec()).unwrap());
        let mut it = block.iter();
        it.seek_to_first();
        assert!(!it.valid());
        it.seek_to_last();
        assert!(!it.valid());
        it.seek(b"anything");
        assert!(!it.valid());
        assert!(it.status().is_ok());
    }

    fn exercise(data: Vec<u8>) {
        let Ok(block) = Block::new(data) else { return };
        let block = Arc::new(block);
        let mut it = block.iter();
        let mut steps = 0;
        it.seek_to_first();
        while it.valid() && steps < 1000 {
            let _ = (it.key(), it.value());
            it.next();
            steps += 1;
        }
        it.seek_to_last();
        while it.valid() && steps < 2000 {
            it.prev();
            steps += 1;
        }
        it.seek(b"key00000100\x01\0\0\0\0\0\0\0");
        it.seek_for_prev(b"m");
        let _ = it.status();
    }

    proptest! {
        #[test]
        fn garbage_blocks_never_panic(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            exercise(data);
        }

        #[test]
        fn mutated_blocks_never_panic(pos in 0usize..4000, byte in any::<u8>()) {
            let block = build(100, 4);
            let mut data = block.bytes().to_vec();
            let p = pos % data.len();
            data[p] = byte;
            exercise(data);
        }
    }
}
