//! The SST container format: block handles, the per-block trailer (compression type + masked
//! CRC32C), verified block reads, the fixed-size footer and the properties block encoding.
//! `docs/format.md` is the normative description; change both together.
//!
//! This module owns framing only. It must not interpret block entries beyond the properties
//! block, and must never return bytes that failed their checksum.

use crate::error::{Error, Result};
use crate::fs::RandomAccessFile;
use crate::util::coding::{self, Reader};
use crate::util::compress::Compression;
use crate::util::{compress, crc};

use super::block::{Block, BlockBuilder};
use crate::iter::InternalIterator;

/// The newest SST format version this build reads, and the one it writes for a table holding
/// range tombstones (a range-deletion block, listed in the properties). A reader of version 1
/// would not know the block and would resurrect the keys it deletes, so such a table must be
/// refused by it rather than misread.
pub const FORMAT_VERSION: u32 = 2;
/// The version written for a table without range tombstones: version 1, byte for byte, so
/// that a database that never deletes a range stays readable by builds before version 2.
pub const PLAIN_FORMAT_VERSION: u32 = 1;
/// The last 8 bytes of every SST file ("STRATASS" read as little-endian u64 bytes).
pub const MAGIC: u64 = u64::from_le_bytes(*b"STRATASS");
/// Bytes after each block: compression type (1) + masked CRC32C (4).
pub const BLOCK_TRAILER_LEN: usize = 5;
/// Room reserved in the footer for the three varint-encoded handles.
const HANDLES_LEN: usize = 3 * BlockHandle::MAX_ENCODED_LEN;
/// Footer: handles (60, zero padded) | version u32 | masked crc32c u32 of the first 64 bytes | magic u64.
pub const FOOTER_LEN: usize = HANDLES_LEN + 4 + 4 + 8;
/// Largest uncompressed block accepted; protects against absurd sizes in corrupt files.
pub const MAX_BLOCK_SIZE: usize = 64 << 20;

/// Where a block lives: its offset and the size of its contents (excluding the trailer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockHandle {
    /// File offset of the first byte of the block.
    pub offset: u64,
    /// Bytes of block contents, not counting the 5-byte trailer.
    pub size: u64,
}

impl BlockHandle {
    /// Two varint64s take at most 20 bytes.
    pub const MAX_ENCODED_LEN: usize = 20;

    /// Appends `varint(offset) varint(size)`.
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        coding::put_varint(dst, self.offset);
        coding::put_varint(dst, self.size);
    }

    /// Decodes a handle from the front of `r`.
    pub fn decode_from(r: &mut Reader<'_>) -> Result<Self> {
        match (r.varint(), r.varint()) {
            (Some(offset), Some(size)) => Ok(Self { offset, size }),
            _ => Err(Error::corruption("bad block handle")),
        }
    }

    /// Decodes a handle that must fill `src` exactly (an index entry's value).
    pub fn decode_exact(src: &[u8]) -> Result<Self> {
        let mut r = Reader::new(src);
        let h = Self::decode_from(&mut r)?;
        if !r.is_empty() {
            return Err(Error::corruption("trailing bytes after block handle"));
        }
        Ok(h)
    }

    /// Offset just past the block's trailer.
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.size).saturating_add(BLOCK_TRAILER_LEN as u64)
    }
}

/// The trailer for `contents` stored with compression `kind`: the checksum covers the contents
/// and the type byte, so a flipped type byte is caught too.
pub fn block_trailer(kind: Compression, contents: &[u8]) -> [u8; BLOCK_TRAILER_LEN] {
    let c = crc::mask(crc::extend(crc::crc32c(contents), &[kind as u8]));
    let b = c.to_le_bytes();
    [kind as u8, b[0], b[1], b[2], b[3]]
}

fn block_error(file_number: u64, h: &BlockHandle, why: impl std::fmt::Display) -> Error {
    Error::corruption(format!("sst {file_number}: block at offset {} size {}: {why}", h.offset, h.size))
}

/// Reads the block at `h`, verifies its checksum and returns its uncompressed contents.
/// For a memory-mapped file: the byte range of an uncompressed block (after verifying its
/// checksum when `verify`), or `None` if the block is compressed (the caller then decodes it with
/// `read_block`).
pub fn mapped_block_range(
    map: &[u8],
    file_number: u64,
    h: &BlockHandle,
    verify: bool,
) -> Result<Option<(usize, usize)>> {
    let range = usize::try_from(h.offset).ok().zip(usize::try_from(h.size).ok());
    let Some((start, len)) =
        range.filter(|&(s, l)| l <= MAX_BLOCK_SIZE && s.checked_add(l + BLOCK_TRAILER_LEN).is_some())
    else {
        return Err(block_error(file_number, h, "handle outside the file"));
    };
    let (Some(contents), Some(trailer)) =
        (map.get(start..start + len), map.get(start + len..start + len + BLOCK_TRAILER_LEN))
    else {
        return Err(block_error(file_number, h, "handle outside the file"));
    };
    let kind_byte = trailer[0];
    if kind_byte != Compression::None as u8 {
        return Ok(None);
    }
    let stored = coding::get_u32(&trailer[1..]).unwrap_or(0);
    if verify && crc::unmask(stored) != crc::extend(crc::crc32c(contents), &[kind_byte]) {
        return Err(block_error(file_number, h, "checksum mismatch"));
    }
    Ok(Some((start, len)))
}

/// Reads the block at `h` of table `file_number`, checks its checksum and decompresses it;
/// `Corruption` for a handle outside the file, a checksum mismatch or an unknown codec.
pub fn read_block(file: &dyn RandomAccessFile, file_number: u64, h: &BlockHandle) -> Result<Vec<u8>> {
    read_block_as(file, file_number, h, false)
}

/// [`read_block`] with `RandomAccessFile::read_exact_at_forward` when `forward` (a reader
/// walking the table forward).
pub fn read_block_as(
    file: &dyn RandomAccessFile,
    file_number: u64,
    h: &BlockHandle,
    forward: bool,
) -> Result<Vec<u8>> {
    let size = usize::try_from(h.size).ok().filter(|&s| s <= MAX_BLOCK_SIZE);
    let Some(size) = size.filter(|_| h.end() <= file.size() && h.offset.checked_add(h.size).is_some()) else {
        return Err(block_error(file_number, h, "handle outside the file"));
    };
    let stored_len = size + BLOCK_TRAILER_LEN;
    if stored_len > SCRATCH_MAX {
        let mut buf = vec![0u8; stored_len];
        return decode_stored_block(file, file_number, h, forward, &mut buf);
    }
    SCRATCH.with(|scratch| {
        // Taken out for the call, so a nested read (there is none today) would find it empty
        // and grow its own rather than alias this one.
        let mut buf = scratch.take();
        if buf.len() < stored_len {
            buf.resize(stored_len, 0);
        }
        let result = decode_stored_block(file, file_number, h, forward, &mut buf[..stored_len]);
        scratch.replace(buf);
        result
    })
}

/// Stored blocks up to this size are read into a per-thread buffer and only the decoded block is
/// allocated: a block read from disk used to cost two allocations, the stored bytes zeroed
/// first, and glibc's malloc and free were a tenth of the CPU of LinkBench's out-of-memory
/// phase (docs/performance.md). Larger blocks get a buffer of their own, so a thread keeps at
/// most this much.
const SCRATCH_MAX: usize = 64 << 10;

thread_local! {
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Reads the stored block (contents and trailer) at `h` into `buf`, exactly its length, checks
/// its checksum and returns the contents, decompressed when they are compressed.
fn decode_stored_block(
    file: &dyn RandomAccessFile,
    file_number: u64,
    h: &BlockHandle,
    forward: bool,
    buf: &mut [u8],
) -> Result<Vec<u8>> {
    crate::fs::read_exact_at_as(file, h.offset, buf, forward)?;
    let (contents, trailer) = buf.split_at(buf.len() - BLOCK_TRAILER_LEN);
    let kind_byte = trailer.first().copied().unwrap_or(0);
    let stored = coding::get_u32(trailer.get(1..).unwrap_or(&[])).unwrap_or(0);
    let actual = crc::extend(crc::crc32c(contents), &[kind_byte]);
    if crc::unmask(stored) != actual {
        return Err(block_error(file_number, h, "checksum mismatch"));
    }
    match Compression::from_u8(kind_byte) {
        Some(Compression::None) => Ok(contents.to_vec()),
        Some(kind) => decompress_block(kind, contents).map_err(|e| block_error(file_number, h, e)),
        None => Err(block_error(file_number, h, format!("unknown compression type {kind_byte}"))),
    }
}

/// Decompresses block contents into a right-sized buffer: the buffer's capacity is what the block
/// cache charges, so it must not keep slack.
fn decompress_block(kind: Compression, contents: &[u8]) -> Result<Vec<u8>> {
    let mut out = compress::decompress(kind, contents, MAX_BLOCK_SIZE)?;
    if out.capacity() > out.len() + out.len() / 8 + 64 {
        out.shrink_to_fit();
    }
    Ok(out)
}

/// The fixed-size record at the end of every SST file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// The bloom filter block; `size == 0` means the table has no filter.
    pub filter: BlockHandle,
    /// The index block.
    pub index: BlockHandle,
    /// The properties block.
    pub properties: BlockHandle,
}

impl Footer {
    /// Encodes the footer ([`FOOTER_LEN`] bytes) of a table without range tombstones.
    pub fn encode(&self) -> Vec<u8> {
        self.encode_version(PLAIN_FORMAT_VERSION)
    }

    /// Encodes the footer with format version `version`.
    pub fn encode_version(&self, version: u32) -> Vec<u8> {
        let mut out = Vec::with_capacity(FOOTER_LEN);
        self.filter.encode_to(&mut out);
        self.index.encode_to(&mut out);
        self.properties.encode_to(&mut out);
        out.resize(HANDLES_LEN, 0);
        coding::put_u32(&mut out, version);
        let c = crc::mask(crc::crc32c(&out));
        coding::put_u32(&mut out, c);
        coding::put_u64(&mut out, MAGIC);
        out
    }

    /// Decodes and checks a footer: magic, then version, then checksum, then handles.
    pub fn decode(src: &[u8], file_number: u64) -> Result<Self> {
        let bad = |why: &str| Error::corruption(format!("sst {file_number}: footer: {why}"));
        if src.len() != FOOTER_LEN {
            return Err(bad("wrong length"));
        }
        let mut tail = Reader::new(src.get(HANDLES_LEN..).unwrap_or(&[]));
        let (version, stored, magic) = match (tail.u32(), tail.u32(), tail.u64()) {
            (Some(v), Some(c), Some(m)) => (v, c, m),
            _ => return Err(bad("truncated")),
        };
        if magic != MAGIC {
            return Err(bad("bad magic number (not an sst file)"));
        }
        if version > FORMAT_VERSION {
            return Err(Error::UnsupportedVersion { what: "sst", found: version, supported: FORMAT_VERSION });
        }
        if version == 0 {
            return Err(bad("format version 0"));
        }
        if crc::unmask(stored) != crc::crc32c(src.get(..HANDLES_LEN + 4).unwrap_or(&[])) {
            return Err(bad("checksum mismatch"));
        }
        let mut r = Reader::new(src.get(..HANDLES_LEN).unwrap_or(&[]));
        let filter = BlockHandle::decode_from(&mut r)?;
        let index = BlockHandle::decode_from(&mut r)?;
        let properties = BlockHandle::decode_from(&mut r)?;
        Ok(Self { filter, index, properties })
    }
}

/// Statistics stored in the properties block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableProperties {
    /// Entries in the table.
    pub num_entries: u64,
    /// Entries of kind `Delete`.
    pub num_deletions: u64,
    /// Sum of internal key lengths.
    pub raw_key_bytes: u64,
    /// Sum of value lengths.
    pub raw_value_bytes: u64,
    /// Number of data blocks.
    pub num_data_blocks: u64,
    /// Bytes of data blocks as stored, trailers included.
    pub data_size: u64,
    /// Bytes of the index block as stored.
    pub index_size: u64,
    /// Bytes of the filter block as stored (0 without a filter).
    pub filter_size: u64,
    /// Smallest sequence number of any entry.
    pub smallest_seq: u64,
    /// Largest sequence number of any entry.
    pub largest_seq: u64,
    /// Compression requested for data blocks (blocks that did not shrink are stored raw).
    pub compression: Compression,
    /// Bloom filter bits per key (0: no filter).
    pub bloom_bits_per_key: u32,
    /// `PrefixExtractor::code` of the extractor whose prefixes the filter also holds (0: none).
    pub prefix_extractor: u64,
    /// Range tombstones in the range-deletion block (0: no such block; a version-1 table).
    pub num_range_deletions: u64,
    /// Offset of the range-deletion block (when `num_range_deletions > 0`).
    pub range_del_offset: u64,
    /// Size of the range-deletion block's contents, trailer excluded.
    pub range_del_size: u64,
}

impl Default for TableProperties {
    fn default() -> Self {
        Self {
            num_entries: 0,
            num_deletions: 0,
            raw_key_bytes: 0,
            raw_value_bytes: 0,
            num_data_blocks: 0,
            data_size: 0,
            index_size: 0,
            filter_size: 0,
            smallest_seq: u64::MAX,
            largest_seq: 0,
            compression: Compression::None,
            bloom_bits_per_key: 0,
            prefix_extractor: 0,
            num_range_deletions: 0,
            range_del_offset: 0,
            range_del_size: 0,
        }
    }
}

impl TableProperties {
    /// The range-deletion block's handle, when the table has one.
    pub fn range_del_handle(&self) -> Option<BlockHandle> {
        (self.num_range_deletions > 0)
            .then_some(BlockHandle { offset: self.range_del_offset, size: self.range_del_size })
    }

    fn fields(&self) -> Vec<(&'static str, u64)> {
        let mut fields = self.plain_fields().to_vec();
        // Only in tables with range tombstones, so that others stay version 1 byte for byte.
        if self.num_range_deletions > 0 {
            fields.extend([
                ("strata.num_range_deletions", self.num_range_deletions),
                ("strata.range_del_offset", self.range_del_offset),
                ("strata.range_del_size", self.range_del_size),
            ]);
        }
        // Only when set: tables without an extractor keep their old bytes.
        if self.prefix_extractor != 0 {
            fields.push(("strata.prefix_extractor", self.prefix_extractor));
        }
        // Sorted by name: the properties block is a block, and blocks hold sorted keys.
        fields.sort_unstable_by_key(|&(name, _)| name);
        fields
    }

    fn plain_fields(&self) -> [(&'static str, u64); 12] {
        [
            ("strata.bloom_bits_per_key", u64::from(self.bloom_bits_per_key)),
            ("strata.compression", self.compression as u64),
            ("strata.data_size", self.data_size),
            ("strata.filter_size", self.filter_size),
            ("strata.index_size", self.index_size),
            ("strata.largest_seq", self.largest_seq),
            ("strata.num_data_blocks", self.num_data_blocks),
            ("strata.num_deletions", self.num_deletions),
            ("strata.num_entries", self.num_entries),
            ("strata.raw_key_bytes", self.raw_key_bytes),
            ("strata.raw_value_bytes", self.raw_value_bytes),
            ("strata.smallest_seq", self.smallest_seq),
        ]
    }

    /// Encodes the properties as block contents: name → varint value.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = BlockBuilder::new(1);
        let mut v = Vec::new();
        for (name, value) in self.fields() {
            v.clear();
            coding::put_varint(&mut v, value);
            b.add(name.as_bytes(), &v);
        }
        b.finish().to_vec()
    }

    /// Decodes a properties block; unknown names are ignored so newer writers can add more.
    pub fn decode(contents: Vec<u8>) -> Result<Self> {
        let block = std::sync::Arc::new(Block::new(contents)?);
        let mut p = Self::default();
        let mut it = block.iter();
        it.seek_to_first();
        while it.valid() {
            let v = coding::get_varint(it.value())
                .map(|(v, _)| v)
                .ok_or_else(|| Error::corruption("properties: bad varint value"))?;
            p.set(it.key(), v)?;
            it.next();
        }
        it.status()?;
        Ok(p)
    }

    fn set(&mut self, name: &[u8], v: u64) -> Result<()> {
        let small = |v: u64| u32::try_from(v).map_err(|_| Error::corruption("properties: value too large"));
        match name {
            b"strata.bloom_bits_per_key" => self.bloom_bits_per_key = small(v)?,
            b"strata.compression" => {
                self.compression = u8::try_from(v)
                    .ok()
                    .and_then(Compression::from_u8)
                    .ok_or_else(|| Error::corruption("properties: unknown compression"))?
            }
            b"strata.data_size" => self.data_size = v,
            b"strata.prefix_extractor" => self.prefix_extractor = v,
            b"strata.filter_size" => self.filter_size = v,
            b"strata.index_size" => self.index_size = v,
            b"strata.largest_seq" => self.largest_seq = v,
            b"strata.num_data_blocks" => self.num_data_blocks = v,
            b"strata.num_deletions" => self.num_deletions = v,
            b"strata.num_entries" => self.num_entries = v,
            b"strata.raw_key_bytes" => self.raw_key_bytes = v,
            b"strata.raw_value_bytes" => self.raw_value_bytes = v,
            b"strata.smallest_seq" => self.smallest_seq = v,
            b"strata.num_range_deletions" => self.num_range_deletions = v,
            b"strata.range_del_offset" => self.range_del_offset = v,
            b"strata.range_del_size" => self.range_del_size = v,
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Stored blocks (contents as written, then the trailer) back to back, and their handles.
    fn stored_blocks(blocks: &[(&[u8], Compression)]) -> (Vec<u8>, Vec<BlockHandle>) {
        let (mut file, mut handles) = (Vec::new(), Vec::new());
        let mut compressor = compress::Compressor::new();
        for (contents, kind) in blocks {
            let stored = compressor.compress(*kind, contents).unwrap().to_vec();
            handles.push(BlockHandle { offset: file.len() as u64, size: stored.len() as u64 });
            file.extend_from_slice(&stored);
            file.extend_from_slice(&block_trailer(*kind, &stored));
        }
        (file, handles)
    }

    #[test]
    fn block_reads_on_one_thread_share_a_buffer_but_never_each_others_bytes() {
        use crate::fs::testfs::MemRandom;
        let big: Vec<u8> = (0..20_000u32).map(|i| (i % 13) as u8).collect();
        let text = b"abcabcabcabc-some-text-".repeat(40);
        let huge: Vec<u8> = (0..SCRATCH_MAX as u32 + 100).map(|i| (i % 251) as u8).collect();
        let blocks: [(&[u8], Compression); 5] = [
            (&big, Compression::None),
            (&text, Compression::Snappy),
            (b"xyz", Compression::None),
            (&huge, Compression::Snappy),
            (&huge, Compression::None),
        ];
        let (bytes, handles) = stored_blocks(&blocks);
        assert!(handles[4].size as usize > SCRATCH_MAX, "the last block takes a buffer of its own");
        let file = MemRandom(bytes.clone());
        // Large, small, large again, in both directions: each read returns exactly its block.
        for i in [0, 1, 2, 3, 4, 2, 1, 0, 2] {
            assert_eq!(read_block(&file, 7, &handles[i]).unwrap(), blocks[i].0, "block {i}");
        }
        // A damaged small block after a large good one is still a checksum mismatch, and the
        // next good read is unaffected.
        let mut damaged = bytes;
        damaged[handles[2].offset as usize + 1] ^= 1;
        let damaged = MemRandom(damaged);
        assert!(read_block(&damaged, 7, &handles[0]).is_ok());
        let e = read_block(&damaged, 7, &handles[2]).unwrap_err();
        assert!(e.is_corruption() && e.to_string().contains("checksum mismatch"), "{e}");
        assert_eq!(read_block(&damaged, 7, &handles[1]).unwrap(), text);
    }

    #[test]
    fn footer_round_trips_and_rejects_damage() {
        let f = Footer {
            filter: BlockHandle { offset: 1000, size: 77 },
            index: BlockHandle { offset: 1082, size: u64::MAX / 3 },
            properties: BlockHandle { offset: 5, size: 0 },
        };
        let bytes = f.encode();
        assert_eq!(bytes.len(), FOOTER_LEN);
        assert_eq!(Footer::decode(&bytes, 1).unwrap(), f);
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x10;
            let e = Footer::decode(&b, 1).unwrap_err();
            assert!(e.is_corruption() || matches!(e, Error::UnsupportedVersion { .. }), "byte {i}");
        }
        let mut newer = bytes.clone();
        newer[HANDLES_LEN..HANDLES_LEN + 4].copy_from_slice(&3u32.to_le_bytes());
        assert!(matches!(
            Footer::decode(&newer, 1),
            Err(Error::UnsupportedVersion { what: "sst", found: 3, supported: 2 })
        ));
        let v2 = f.encode_version(FORMAT_VERSION);
        assert_eq!(&v2[HANDLES_LEN..HANDLES_LEN + 4], &2u32.to_le_bytes());
        assert_eq!(Footer::decode(&v2, 1).unwrap(), f);
    }

    #[test]
    fn properties_round_trip() {
        let p = TableProperties {
            num_entries: 10,
            num_deletions: 2,
            raw_key_bytes: 300,
            raw_value_bytes: 1 << 40,
            num_data_blocks: 3,
            data_size: 9000,
            index_size: 40,
            filter_size: 70,
            smallest_seq: 4,
            largest_seq: 99,
            compression: Compression::Lz4,
            bloom_bits_per_key: 10,
            prefix_extractor: (1 << 32) | 6,
            num_range_deletions: 0,
            range_del_offset: 0,
            range_del_size: 0,
        };
        assert_eq!(TableProperties::decode(p.encode()).unwrap(), p);
        let with_range_dels = TableProperties {
            num_range_deletions: 3,
            range_del_offset: 8000,
            range_del_size: 64,
            ..p.clone()
        };
        let bytes = with_range_dels.encode();
        assert!(bytes.len() > p.encode().len());
        assert_eq!(TableProperties::decode(bytes).unwrap(), with_range_dels);
    }

    #[test]
    fn handle_round_trip() {
        let h = BlockHandle { offset: 1 << 50, size: 4096 };
        let mut v = Vec::new();
        h.encode_to(&mut v);
        assert_eq!(BlockHandle::decode_exact(&v).unwrap(), h);
        v.push(0);
        assert!(BlockHandle::decode_exact(&v).is_err());
    }

    proptest! {
        #[test]
        fn garbage_footers_and_properties_never_panic(data in proptest::collection::vec(any::<u8>(), 0..120)) {
            let _ = Footer::decode(&data, 1);
            let mut padded = data.clone();
            padded.resize(FOOTER_LEN, 0);
            let _ = Footer::decode(&padded, 1);
            let _ = TableProperties::decode(data);
        }
    }
}
