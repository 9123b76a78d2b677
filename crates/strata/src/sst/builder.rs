//! Writes one SST file from internal keys added in order: data blocks (compressed when it pays),
//! the range-deletion block (when range tombstones were added), the bloom filter, the
//! properties block, the index block and the footer, then fdatasync.
//!
//! This module owns the write path only. It must not decide file names, levels or when to cut a
//! file; callers do. It never writes a file that claims more than was added: after any error the
//! builder refuses to finish.

use std::cmp::Ordering;

use crate::error::{Error, Result};
use crate::fs::{BufferedWriter, WritableFile};
use crate::key::{self, ValueKind};
use crate::options::PrefixExtractor;
use crate::range_del::{self, RangeTombstone};
use crate::util::coding;
use crate::util::compress::Compression;
use crate::util::compress::Compressor;
use crate::util::kill_point::kill_point;

use super::block::BlockBuilder;
use super::bloom::BloomBuilder;
use super::format::{
    block_trailer, BlockHandle, Footer, TableProperties, BLOCK_TRAILER_LEN, FORMAT_VERSION,
    PLAIN_FORMAT_VERSION,
};

/// How a table is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableBuilderOptions {
    /// Target uncompressed size of a data block.
    pub block_size: usize,
    /// Keys between restart points in data blocks (runs of short entries go up to twice as
    /// many, see [`BlockBuilder::for_data`]).
    pub restart_interval: usize,
    /// Bloom filter bits per key; 0 writes no filter.
    pub bloom_bits_per_key: u32,
    /// Compression for data blocks.
    pub compression: Compression,
    /// Adds each key's prefix to the bloom filter too.
    pub prefix_extractor: Option<PrefixExtractor>,
}

impl Default for TableBuilderOptions {
    fn default() -> Self {
        Self {
            block_size: 4096,
            restart_interval: 16,
            bloom_bits_per_key: 10,
            compression: Compression::None,
            prefix_extractor: None,
        }
    }
}

/// What a finished table holds, for the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSummary {
    /// Bytes in the file.
    pub file_size: u64,
    /// Entries written.
    pub num_entries: u64,
    /// Entries of kind `Delete`.
    pub num_deletions: u64,
    /// Range tombstones in the range-deletion block.
    pub num_range_deletions: u64,
    /// Smallest internal key, or the smallest bound of a range tombstone when that is lower
    /// (`range_del::widen_bounds`).
    pub smallest: Vec<u8>,
    /// Largest internal key, or the largest bound of a range tombstone when that is higher.
    pub largest: Vec<u8>,
    /// Smallest sequence number.
    pub smallest_seq: u64,
    /// Largest sequence number.
    pub largest_seq: u64,
}

/// Streams sorted internal keys into an SST file.
pub struct TableBuilder {
    w: BufferedWriter,
    opts: TableBuilderOptions,
    data: BlockBuilder,
    index: BlockBuilder,
    bloom: Option<BloomBuilder>,
    /// The last prefix added to the bloom filter (keys sharing it add it once); valid when
    /// `has_prefix`, kept allocated across prefixes.
    last_prefix: Vec<u8>,
    has_prefix: bool,
    /// Handle of the last flushed data block, indexed once the next key shows a separator.
    pending_index: Option<BlockHandle>,
    last_key: Vec<u8>,
    smallest: Vec<u8>,
    props: TableProperties,
    /// Reused for index separators.
    scratch: Vec<u8>,
    compressor: Compressor,
    handle_buf: Vec<u8>,
    range_dels: Vec<RangeTombstone>,
    failed: bool,
}

impl TableBuilder {
    /// Starts a table in a freshly created, empty file.
    pub fn new(file: Box<dyn WritableFile>, opts: TableBuilderOptions) -> Self {
        let props = TableProperties {
            compression: opts.compression,
            bloom_bits_per_key: opts.bloom_bits_per_key,
            // The filter holds prefixes only when there is a filter.
            prefix_extractor: opts
                .prefix_extractor
                .filter(|_| opts.bloom_bits_per_key > 0)
                .map_or(0, |p| p.code()),
            ..TableProperties::default()
        };
        Self {
            w: BufferedWriter::new(file),
            data: BlockBuilder::for_data(opts.restart_interval),
            // Index entries are looked up by binary search alone, so every entry is a restart.
            index: BlockBuilder::new(1),
            bloom: (opts.bloom_bits_per_key > 0).then(|| BloomBuilder::new(opts.bloom_bits_per_key)),
            last_prefix: Vec::new(),
            has_prefix: false,
            opts,
            pending_index: None,
            last_key: Vec::new(),
            smallest: Vec::new(),
            props,
            scratch: Vec::new(),
            compressor: Compressor::new(),
            handle_buf: Vec::new(),
            range_dels: Vec::new(),
            failed: false,
        }
    }

    /// Adds an entry; internal keys must be strictly increasing by `key::compare`.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        debug_assert!(ikey.len() >= key::TRAILER_LEN, "not an internal key");
        debug_assert!(
            self.props.num_entries == 0 || key::compare(&self.last_key, ikey) == Ordering::Less,
            "keys added out of order"
        );
        self.check_usable()?;
        if let Some(h) = self.pending_index.take() {
            let mut sep = std::mem::take(&mut self.scratch);
            shortest_separator(&self.last_key, ikey, &mut sep);
            self.add_index_entry(&sep, h);
            self.scratch = sep;
        }
        if let Some(b) = &mut self.bloom {
            let user_key = key::user_key(ikey);
            b.add_key(user_key);
            let prefix = self.opts.prefix_extractor.and_then(|p| p.prefix_of(user_key));
            if let Some(prefix) = prefix.filter(|p| !self.has_prefix || self.last_prefix != *p) {
                b.add_key(prefix);
                self.last_prefix.clear();
                self.last_prefix.extend_from_slice(prefix);
                self.has_prefix = true;
            }
        }
        self.note_entry(ikey, value);
        self.data.add(ikey, value);
        if self.data.size_estimate() >= self.opts.block_size {
            return self.guard(Self::flush_data_block);
        }
        Ok(())
    }

    /// The last internal key added (empty before the first).
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Adds range tombstones, written to the range-deletion block at `finish` (in any order,
    /// before or after the entries). The table's bounds and sequence range grow to cover them.
    pub fn add_range_dels(&mut self, tombstones: impl IntoIterator<Item = RangeTombstone>) {
        self.range_dels.extend(tombstones.into_iter().filter(|t| t.begin < t.end));
    }

    fn check_usable(&self) -> Result<()> {
        if self.failed {
            return Err(Error::InvalidArgument("table builder used after a failed write".into()));
        }
        Ok(())
    }

    /// Runs a write step, poisoning the builder if it fails.
    fn guard(&mut self, step: fn(&mut Self) -> Result<()>) -> Result<()> {
        let r = step(self);
        self.failed |= r.is_err();
        r
    }

    fn note_entry(&mut self, ikey: &[u8], value: &[u8]) {
        let p = &mut self.props;
        if p.num_entries == 0 {
            self.smallest.clear();
            self.smallest.extend_from_slice(ikey);
        }
        let t = key::trailer(ikey);
        let seq = t >> 8;
        p.num_entries += 1;
        p.num_deletions += u64::from(t as u8 == ValueKind::Delete as u8);
        p.raw_key_bytes += ikey.len() as u64;
        p.raw_value_bytes += value.len() as u64;
        p.smallest_seq = p.smallest_seq.min(seq);
        p.largest_seq = p.largest_seq.max(seq);
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
    }

    fn add_index_entry(&mut self, index_key: &[u8], h: BlockHandle) {
        self.handle_buf.clear();
        h.encode_to(&mut self.handle_buf);
        self.index.add(index_key, &self.handle_buf);
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data.is_empty() {
            return Ok(());
        }
        let raw = self.data.finish();
        let mut kind = self.opts.compression;
        let mut contents = raw;
        if kind != Compression::None {
            let compressed = self.compressor.compress(kind, raw)?;
            // Keep compression only when it saves at least 12.5%: decompression costs CPU.
            if compressed.len() > raw.len() - raw.len() / 8 {
                kind = Compression::None;
            } else {
                contents = compressed;
            }
        }
        let h = write_block(&mut self.w, kind, contents)?;
        self.props.num_data_blocks += 1;
        self.props.data_size += h.size + BLOCK_TRAILER_LEN as u64;
        self.pending_index = Some(h);
        self.data.reset();
        Ok(())
    }

    /// Approximate size of the file if finished now.
    pub fn estimated_file_size(&self) -> u64 {
        self.w.offset() + self.data.size_estimate() as u64 + self.index.size_estimate() as u64
    }

    /// Writes the remaining blocks and the footer and syncs the file. A table with neither
    /// entries nor range tombstones is refused with `InvalidArgument` (it would have no smallest
    /// or largest key).
    pub fn finish(mut self) -> Result<TableSummary> {
        self.check_usable()?;
        if self.props.num_entries == 0 && self.range_dels.is_empty() {
            return Err(Error::InvalidArgument("cannot finish an sst with no entries".into()));
        }
        self.flush_data_block()?;
        if let Some(h) = self.pending_index.take() {
            let mut succ = Vec::new();
            short_successor(&self.last_key, &mut succ);
            self.add_index_entry(&succ, h);
        }
        let mut smallest = std::mem::take(&mut self.smallest);
        let mut largest = std::mem::take(&mut self.last_key);
        let version = self.write_range_dels(&mut smallest, &mut largest)?;
        let filter = match &self.bloom {
            Some(b) => write_block(&mut self.w, Compression::None, &b.finish())?,
            None => BlockHandle { offset: 0, size: 0 },
        };
        self.props.filter_size = if filter.size == 0 { 0 } else { filter.size + BLOCK_TRAILER_LEN as u64 };
        self.props.index_size = (self.index.size_estimate() + BLOCK_TRAILER_LEN) as u64;
        let properties = write_block(&mut self.w, Compression::None, &self.props.encode())?;
        let index = write_block(&mut self.w, Compression::None, self.index.finish())?;
        self.w.write(&Footer { filter, index, properties }.encode_version(version))?;
        kill_point("table.finish.before_sync");
        let file_size = self.w.finish()?;
        kill_point("table.finish.after_sync");
        let p = &self.props;
        Ok(TableSummary {
            file_size,
            num_entries: p.num_entries,
            num_deletions: p.num_deletions,
            num_range_deletions: p.num_range_deletions,
            smallest,
            largest,
            smallest_seq: p.smallest_seq,
            largest_seq: p.largest_seq,
        })
    }

    /// Writes the range-deletion block, if there are tombstones, and widens the bounds and
    /// sequence range over them; returns the footer's format version.
    fn write_range_dels(&mut self, smallest: &mut Vec<u8>, largest: &mut Vec<u8>) -> Result<u32> {
        if self.range_dels.is_empty() {
            return Ok(PLAIN_FORMAT_VERSION);
        }
        let (contents, count) = range_del::block::encode(&self.range_dels);
        let h = write_block(&mut self.w, Compression::None, &contents)?;
        let p = &mut self.props;
        p.num_range_deletions = count as u64;
        p.range_del_offset = h.offset;
        p.range_del_size = h.size;
        range_del::widen_bounds(
            smallest,
            largest,
            (&mut p.smallest_seq, &mut p.largest_seq),
            &self.range_dels,
        );
        Ok(FORMAT_VERSION)
    }
}

fn write_block(w: &mut BufferedWriter, kind: Compression, contents: &[u8]) -> Result<BlockHandle> {
    let h = BlockHandle { offset: w.offset(), size: contents.len() as u64 };
    w.write(contents)?;
    w.write(&block_trailer(kind, contents))?;
    Ok(h)
}

/// Sets `out` to an internal key `k` with `a <= k < b`, shorter than `a` when the user keys allow.
/// As RocksDB's bytewise comparator: where the user keys first differ, `a`'s byte plus one when
/// that still sorts before `b` (so a block boundary between keys `..07|...` and `..08|...` is
/// indexed as `..08`, a proper prefix of `b`), else the first byte after it that can grow.
/// Shorter index entries leave more of the block cache to data blocks.
fn shortest_separator(a: &[u8], b: &[u8], out: &mut Vec<u8>) {
    let (ua, ub) = (key::user_key(a), key::user_key(b));
    out.clear();
    if let Some(len) = separator_len(ua, ub) {
        if len < ua.len() {
            out.extend_from_slice(&ua[..len]);
            if let Some(last) = out.last_mut() {
                *last += 1;
            }
            put_seek_trailer(out);
            return;
        }
    }
    out.extend_from_slice(a);
}

/// The length of the user key separator between `ua < ub`: `ua[..len]` with its last byte
/// incremented is `> ua` and `< ub`. `None` when no key shorter than `ua` works this way.
fn separator_len(ua: &[u8], ub: &[u8]) -> Option<usize> {
    let shared = ua.iter().zip(ub).take_while(|(x, y)| x == y).count();
    let (&c, &limit) = (ua.get(shared)?, ub.get(shared)?);
    if c >= limit {
        return None; // not ordered; keep the full key
    }
    if c + 1 < limit || shared + 1 < ub.len() {
        // ua[..shared] + (c + 1) is below ub's byte, or a proper prefix of ub.
        return Some(shared + 1);
    }
    // ub ends at c + 1: grow the first byte of ua after it that is not 0xff.
    let i = shared + 1 + ua[shared + 1..].iter().position(|&x| x < 0xff)?;
    Some(i + 1)
}

/// Sets `out` to a short internal key `>= a`.
fn short_successor(a: &[u8], out: &mut Vec<u8>) {
    let ua = key::user_key(a);
    out.clear();
    if let Some(i) = ua.iter().position(|&c| c != 0xff) {
        if i + 1 < ua.len() {
            out.extend_from_slice(&ua[..=i]);
            if let Some(last) = out.last_mut() {
                *last += 1;
            }
            put_seek_trailer(out);
            return;
        }
    }
    out.extend_from_slice(a);
}

/// Appends the largest trailer, making `out` the first internal key of its user key.
fn put_seek_trailer(out: &mut Vec<u8>) {
    coding::put_u64(out, key::pack_trailer(key::MAX_SEQ, key::KIND_FOR_SEEK));
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use proptest::prelude::*;

    use super::*;

    fn ikey(user: &[u8], seq: u64) -> Vec<u8> {
        key::make_internal_key(user, seq, key::ValueKind::Put)
    }

    fn separator(a: &[u8], b: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        shortest_separator(&ikey(a, 7), &ikey(b, 9), &mut out);
        out
    }

    #[test]
    fn keys_differing_by_one_in_a_byte_still_get_a_short_separator() {
        // Big-endian ids 0x..07 and 0x..08 followed by more bytes, as LinkBench's link keys.
        let a = [0, 0, 0, 0, 0, 0, 0, 7, 1, 2, 3, 4, 5, 6, 7, 8];
        let b = [0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(key::user_key(&separator(&a, &b)), &[0, 0, 0, 0, 0, 0, 0, 8]);
        // b ends where it differs: grow the next byte of a that can grow.
        assert_eq!(key::user_key(&separator(b"ab\xff\x05xyz", b"ac")), b"ab\xff\x06");
        // Nothing shorter than a exists: the full key.
        assert_eq!(separator(b"ab", b"ac"), ikey(b"ab", 7));
        assert_eq!(separator(b"ab\xff\xff", b"ac"), ikey(b"ab\xff\xff", 7));
        assert_eq!(separator(b"ab", b"abc"), ikey(b"ab", 7));
    }

    proptest! {
        #[test]
        fn a_separator_sorts_between_its_keys_and_is_never_longer(
            mut keys in proptest::collection::btree_set(proptest::collection::vec(any::<u8>(), 0..12), 2..3),
            seq_a in 1u64..1000,
            seq_b in 1u64..1000,
        ) {
            let (ua, ub) = (keys.pop_first().unwrap(), keys.pop_first().unwrap());
            let (a, b) = (ikey(&ua, seq_a), ikey(&ub, seq_b));
            let mut sep = Vec::new();
            shortest_separator(&a, &b, &mut sep);
            prop_assert_ne!(key::compare(&a, &sep), Ordering::Greater);
            prop_assert_eq!(key::compare(&sep, &b), Ordering::Less);
            prop_assert!(sep.len() <= a.len());
        }

        #[test]
        fn keys_that_share_a_prefix_and_differ_by_one_separate_in_few_bytes(
            prefix in proptest::collection::vec(any::<u8>(), 0..8),
            c in 0u8..255,
            tail_a in proptest::collection::vec(any::<u8>(), 1..16),
            tail_b in proptest::collection::vec(any::<u8>(), 1..16),
        ) {
            let ua = [prefix.as_slice(), &[c], &tail_a].concat();
            let ub = [prefix.as_slice(), &[c + 1], &tail_b].concat();
            let sep = separator(&ua, &ub);
            prop_assert_eq!(key::user_key(&sep).len(), prefix.len() + 1);
        }
    }
}
