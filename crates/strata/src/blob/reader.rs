//! Reads values back from a finished blob file by pointer, and walks or verifies whole files for
//! `strata check`, garbage collection and tests. This module must never return bytes that did not
//! pass their checksum or that belong to a different key, and must never panic on any bytes. A
//! mapped record is checked in full on its first read; later reads of it by the same key and
//! pointer borrow the value without touching the record (see `KnownRecord`).

use std::ops::Range;
use std::sync::Arc;

use super::format::{self, BlobPointer, Footer, RecordView, FLAG_COMPRESSED, FOOTER_LEN, HEADER_LEN};
use super::readahead::Readahead;
use crate::error::{Error, Result};
use crate::fs::{RandomAccessFile, SequentialHint};
use crate::util::compress::decompress;
use crate::util::compress::Compression;
use crate::util::prefetch::prefetch_read;
use crate::util::verified::VerifiedOffsets;
use crate::version::edit::BlobFileMeta;

/// Bytes read at once while walking a file record by record.
const WALK_CHUNK: usize = 1 << 20;

/// A mapped file remembers one verified record start per granule of this many bytes (4 bytes
/// each: 1.6% of the file). Records are at least `min_blob_size` (default 512) plus a header
/// long, so each has a slot of its own and a re-read skips its checksum. With 1 KiB granules,
/// 800-byte records shared a slot one time in four and a scan reading both neighbours
/// re-verified them on every pass (crc32c was 17% of a warm seekrandom's samples).
const VERIFIED_GRANULE: u64 = 256;

/// An open blob file; shared by all readers (`get` takes `&self`). Aligned so its fields do not
/// share a cache line with the `Arc` reference count that every reader's iterator changes.
#[repr(align(128))]
pub struct BlobReader {
    file: Arc<dyn RandomAccessFile>,
    file_number: u64,
    compression: Compression,
    /// End of the record area (start of the footer).
    data_end: u64,
    /// Mapped files only: records whose checksum and key passed, each with its `KnownRecord`
    /// note. The mapping is read-only and the file immutable, so a checked record stays checked,
    /// as a block does once it is in a block cache.
    verified: VerifiedOffsets,
}

impl std::fmt::Debug for BlobReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobReader")
            .field("file_number", &self.file_number)
            .field("compression", &self.compression)
            .field("data_end", &self.data_end)
            .finish_non_exhaustive()
    }
}

/// What a verified record's slot in `verified` remembers (23 bits): where a raw value starts,
/// and a fingerprint of the key and pointer size it was checked against, so a later read by the
/// same key can borrow the value without touching the record. A record whose value is stored
/// compressed has no note (it must be decompressed from the record anyway).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct KnownRecord {
    /// Bytes before the key: crc, flags and the three length varints (at most 35).
    head_len: usize,
    fingerprint: u16,
}

impl KnownRecord {
    const RAW: u32 = 1 << 6;

    fn of(view: &RecordView, user_key: &[u8], size: u64) -> Option<Self> {
        let raw = view.flags & FLAG_COMPRESSED == 0;
        raw.then(|| Self { head_len: view.key.start, fingerprint: Self::fingerprint(user_key, size) })
    }

    /// Bits 0..6 the head length, bit 6 set (so 0 means "no note"), bits 7..23 the fingerprint.
    fn encode(self) -> u32 {
        const { assert!(format::MAX_RECORD_PREFIX < 64, "the head length must fit 6 bits") };
        u32::from(self.fingerprint) << 7 | Self::RAW | self.head_len as u32
    }

    fn decode(note: u32) -> Option<Self> {
        let head_len = (note & 0x3f) as usize;
        (note & Self::RAW != 0).then_some(Self { head_len, fingerprint: (note >> 7) as u16 })
    }

    /// 16 bits of a hash of the key and the record size: a pointer that reaches a verified
    /// record through another key (which only a bug could produce) goes through the full check,
    /// and fails it, with a probability of 1 - 2^-16.
    fn fingerprint(user_key: &[u8], size: u64) -> u16 {
        let h = crate::util::hash::hash64(user_key) ^ size.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h >> 48) as u16
    }
}

/// Where one reader that goes through blob records in file order (a scan, a compaction moving
/// live values) is, for [`BlobReader::note_walk`].
#[derive(Debug, Clone, Default)]
pub struct BlobWalk {
    file_number: u64,
    hint: SequentialHint,
}

/// One [`BlobWalk`] per blob file for a reader that goes through several files in file order
/// at once, their records interleaved: a compaction relocating live values meets the records
/// of every file its input's keys point into, each file's in order. One walk for all would
/// start over at every switch of file and never reach the length that asks for read-ahead.
#[derive(Debug, Default)]
pub struct BlobWalks {
    /// Most recently used last; at most `KEPT_WALKS`.
    walks: Vec<BlobWalk>,
}

impl BlobWalks {
    /// Files followed at once. A compaction writing the last level moves values out of every
    /// flush that wrote into its key range (`compaction::scan_locality`): often dozens of files,
    /// visited in turn.
    const KEPT_WALKS: usize = 128;

    /// The walk through file `file_number` (a new one if it was not followed, or no longer is).
    pub fn of(&mut self, file_number: u64) -> &mut BlobWalk {
        match self.walks.iter().rposition(|w| w.file_number == file_number) {
            Some(i) => {
                let last = self.walks.len() - 1;
                self.walks[i..].rotate_left(1);
                &mut self.walks[last]
            }
            None => {
                if self.walks.len() == Self::KEPT_WALKS {
                    self.walks.remove(0);
                }
                // A compaction's walk is forward from its first record: read-ahead (and, on an
                // unmapped file, reads without the random advice) from the start.
                self.walks.push(BlobWalk { file_number, hint: SequentialHint::whole_file() });
                self.walks.last_mut().expect("just pushed")
            }
        }
    }
}

impl BlobReader {
    /// Opens blob file `file_number` and checks its header. A file from a newer format version
    /// is `Error::UnsupportedVersion`; one too short to hold a header and footer is corruption.
    pub fn open(file: Arc<dyn RandomAccessFile>, file_number: u64) -> Result<Self> {
        let size = file.size();
        if size < (HEADER_LEN + FOOTER_LEN) as u64 {
            return Err(Error::corruption(format!("blob file {file_number}: {size} bytes is too short")));
        }
        let mut header = [0u8; HEADER_LEN];
        file.read_exact_at(0, &mut header)?;
        let compression = format::decode_header(&header, file_number)?;
        let data_end = size - FOOTER_LEN as u64;
        let verified = match file.mapped() {
            Some(_) => VerifiedOffsets::new(data_end, VERIFIED_GRANULE),
            None => VerifiedOffsets::none(),
        };
        Ok(Self { file, file_number, compression, data_end, verified })
    }

    /// The file's number.
    pub fn file_number(&self) -> u64 {
        self.file_number
    }

    /// The compression of this file's records.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// Reads the value `ptr` points to, checking that the record is intact and belongs to
    /// `user_key`: a stale or misdirected pointer is corruption, never someone else's value.
    pub fn get(&self, ptr: &BlobPointer, user_key: &[u8]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.get_into(ptr, user_key, &mut out)?;
        Ok(out)
    }

    /// Like [`BlobReader::get`], replacing the contents of `out` (so a scan reuses one buffer).
    pub fn get_into(&self, ptr: &BlobPointer, user_key: &[u8], out: &mut Vec<u8>) -> Result<()> {
        self.get_into_as(ptr, user_key, out, false)
    }

    /// [`BlobReader::get_into`] for a reader going through this file's records in file order:
    /// notes the read in `walk` (see [`BlobReader::note_walk`]) and, once the walk is a long
    /// forward run, reads with `RandomAccessFile::read_exact_at_forward`.
    pub fn get_into_walking(
        &self,
        ptr: &BlobPointer,
        user_key: &[u8],
        out: &mut Vec<u8>,
        walk: &mut BlobWalk,
    ) -> Result<()> {
        self.note_walk(walk, ptr);
        self.get_into_as(ptr, user_key, out, walk.hint.is_forward_run())
    }

    fn get_into_as(
        &self,
        ptr: &BlobPointer,
        user_key: &[u8],
        out: &mut Vec<u8>,
        forward: bool,
    ) -> Result<()> {
        let known = self.known_raw_value(ptr, user_key)?;
        if let Some(value) = known.and_then(|range| self.file.mapped()?.get(range)) {
            out.clear();
            out.extend_from_slice(value);
            return Ok(());
        }
        if let Some(rec) = self.mapped_record(ptr)? {
            // Borrow the record from the mapping: one copy of the value, no buffer to zero.
            return self.value_of(rec, ptr.offset, user_key, out);
        }
        let mut rec = vec![0u8; self.record_size(ptr)?];
        crate::fs::read_exact_at_as(&*self.file, ptr.offset, &mut rec, forward)?;
        self.value_of(&rec, ptr.offset, user_key, out)
    }

    /// Like [`BlobReader::get_into`], for a file that is not memory-mapped: the record comes from
    /// a scan's `ahead` window, so neighbouring records cost one `pread` between them rather
    /// than one each. The record is checked the same way.
    pub fn get_into_ahead(
        &self,
        ptr: &BlobPointer,
        user_key: &[u8],
        out: &mut Vec<u8>,
        ahead: &mut Readahead,
    ) -> Result<()> {
        let size = self.record_size(ptr)? as u64;
        let rec = ahead.read(&*self.file, self.file_number, ptr.offset..ptr.offset + size, self.data_end)?;
        self.value_of(rec, ptr.offset, user_key, out)
    }

    /// Notes that `walk`'s reader is about to read the record `ptr` names, so that a long forward
    /// walk over a mapped file asks for read-ahead (see `SequentialHint`).
    pub fn note_walk(&self, walk: &mut BlobWalk, ptr: &BlobPointer) {
        if walk.file_number != self.file_number {
            *walk = BlobWalk { file_number: self.file_number, hint: SequentialHint::new() };
        }
        walk.hint.note(&*self.file, ptr.offset, ptr.size, self.data_end);
    }

    /// Asks the filesystem to start reading bytes `offset..offset + len` of this file (a scan's
    /// lookahead, see `db::blob_lookahead`). Only a hint: nothing is read or checked here.
    pub fn will_need(&self, offset: u64, len: u64) {
        let len = len.min(self.data_end.saturating_sub(offset));
        if len > 0 {
            self.file.will_need(offset, len);
        }
    }

    /// Whether the file is memory-mapped (`Options::use_mmap_reads` and a filesystem that maps).
    pub fn is_mapped(&self) -> bool {
        self.file.mapped().is_some()
    }

    /// Where the value `ptr` points to lies in the file's mapping, after the same checks as
    /// [`BlobReader::get`]: the zero-copy read of an iterator. `None` when the file is not
    /// mapped or the value is stored compressed; use `get_into` then.
    pub fn mapped_value(&self, ptr: &BlobPointer, user_key: &[u8]) -> Result<Option<Range<usize>>> {
        if let Some(range) = self.known_raw_value(ptr, user_key)? {
            return Ok(Some(range));
        }
        let Some(rec) = self.mapped_record(ptr)? else { return Ok(None) };
        self.prefetch_following(ptr);
        let view = self.checked_view(rec, ptr.offset, user_key)?;
        if view.flags & FLAG_COMPRESSED != 0 {
            return Ok(None);
        }
        // `mapped_record` proved the record's range fits in usize and in the mapping.
        let start = ptr.offset as usize;
        Ok(Some(start + view.stored.start..start + view.stored.end))
    }

    /// Iterators read the records of neighbouring keys, which flush and compaction wrote next
    /// to each other: start loading the headers of the next two records (assuming they are
    /// about this one's size) while the caller works on this one. A scan's time otherwise goes
    /// to a cache miss on each record's first byte.
    fn prefetch_following(&self, ptr: &BlobPointer) {
        let Some(map) = self.file.mapped() else { return };
        let Ok(offset) = usize::try_from(ptr.offset.saturating_add(ptr.size)) else { return };
        let size = ptr.size as usize;
        for ahead in [offset, offset.saturating_add(size)] {
            if ahead < map.len() {
                prefetch_read(map.as_ptr().wrapping_add(ahead));
            }
        }
    }

    /// The bytes of a range returned by [`BlobReader::mapped_value`] (empty for any other range).
    pub fn mapped_bytes(&self, range: Range<usize>) -> &[u8] {
        self.file.mapped().and_then(|m| m.get(range)).unwrap_or_default()
    }

    /// The record `ptr` names, borrowed from the mapping; `None` when the file is not mapped.
    fn mapped_record(&self, ptr: &BlobPointer) -> Result<Option<&[u8]>> {
        let size = self.record_size(ptr)?;
        let Some(map) = self.file.mapped() else { return Ok(None) };
        let start = usize::try_from(ptr.offset).ok();
        let rec = start.and_then(|s| map.get(s..s.checked_add(size)?));
        rec.map(Some).ok_or_else(|| self.corrupt(ptr.offset, "record outside the mapped file"))
    }

    /// Checks the pointer against this file and returns the record's size.
    fn record_size(&self, ptr: &BlobPointer) -> Result<usize> {
        self.check_pointer(ptr)?;
        usize::try_from(ptr.size).map_err(|_| self.corrupt(ptr.offset, "record size too large"))
    }

    /// Checks a record's framing, checksum and key, and puts its (decompressed) value in `out`.
    fn value_of(&self, rec: &[u8], offset: u64, user_key: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let view = self.checked_view(rec, offset, user_key)?;
        if view.flags & FLAG_COMPRESSED == 0 {
            out.clear();
            out.extend_from_slice(rec.get(view.stored.clone()).unwrap_or_default());
            return Ok(());
        }
        *out = self.decompress(rec, &view, offset)?;
        Ok(())
    }

    /// Checks a record's framing and key, and its checksum unless this mapped record already
    /// passed it (see `verified`).
    fn checked_view(&self, rec: &[u8], offset: u64, user_key: &[u8]) -> Result<RecordView> {
        let old_note = self.verified.note(offset);
        let view = if old_note.is_some() { format::check_layout(rec) } else { format::parse_record(rec) };
        let view = view.map_err(|why| self.corrupt(offset, why))?;
        if !rec.get(view.key.clone()).is_some_and(|k| crate::key::same_user_key(k, user_key)) {
            return Err(self.corrupt(offset, "record belongs to a different key"));
        }
        let note = KnownRecord::of(&view, user_key, rec.len() as u64).map_or(0, KnownRecord::encode);
        // Compressed records come through here on every read: leave an unchanged slot unwritten,
        // so concurrent readers do not take its cache line from each other.
        if old_note != Some(note) {
            self.verified.insert_with_note(offset, note);
        }
        Ok(view)
    }

    /// Where a raw value lies in the mapping, without touching the record, when this record
    /// passed `checked_view` before for the same key and pointer size. A scan that only needs
    /// the value's location (or reads it later) then costs no cache or TLB miss on the record:
    /// without this, the record header's miss was the largest cost of a warm seekrandom.
    /// `None` sends the caller through the full check.
    fn known_raw_value(&self, ptr: &BlobPointer, user_key: &[u8]) -> Result<Option<Range<usize>>> {
        let size = self.record_size(ptr)?;
        let Some(known) = self.verified.note(ptr.offset).and_then(KnownRecord::decode) else {
            return Ok(None);
        };
        if known.fingerprint != KnownRecord::fingerprint(user_key, ptr.size) {
            return Ok(None);
        }
        // `record_size` checked the record against `data_end`, and only a mapped file has notes;
        // `mapped_bytes` re-checks the range against the mapping anyway.
        let start = usize::try_from(ptr.offset).ok();
        let end = start.and_then(|s| s.checked_add(size));
        let value_start = start.and_then(|s| s.checked_add(known.head_len + user_key.len()));
        Ok(value_start.zip(end).filter(|(vs, e)| vs <= e).map(|(vs, e)| vs..e))
    }

    /// Whether a read of `ptr` by `user_key` would borrow the value without touching the record.
    #[cfg(test)]
    pub(super) fn knows(&self, ptr: &BlobPointer, user_key: &[u8]) -> bool {
        matches!(self.known_raw_value(ptr, user_key), Ok(Some(_)))
    }

    fn check_pointer(&self, ptr: &BlobPointer) -> Result<()> {
        if ptr.file_number != self.file_number {
            return Err(self.corrupt(ptr.offset, &format!("pointer names blob file {}", ptr.file_number)));
        }
        let in_bounds = ptr.offset >= HEADER_LEN as u64
            && ptr.size >= format::MIN_RECORD_LEN as u64
            && ptr.offset.checked_add(ptr.size).is_some_and(|end| end <= self.data_end);
        if !in_bounds {
            return Err(self.corrupt(ptr.offset, &format!("pointer of size {} is out of bounds", ptr.size)));
        }
        Ok(())
    }

    fn decompress(&self, rec: &[u8], view: &RecordView, offset: u64) -> Result<Vec<u8>> {
        if self.compression == Compression::None {
            return Err(self.corrupt(offset, "compressed record in an uncompressed file"));
        }
        let stored = rec.get(view.stored.clone()).unwrap_or_default();
        let value = decompress(self.compression, stored, view.value_len)
            .map_err(|e| self.corrupt(offset, &e.to_string()))?;
        if value.len() != view.value_len {
            return Err(self.corrupt(offset, "decompressed value has the wrong length"));
        }
        Ok(value)
    }

    /// Every record's key and pointer, in file order, with every record checksum verified.
    pub fn records(&self) -> Result<Vec<(Vec<u8>, BlobPointer)>> {
        let mut out = Vec::new();
        self.walk(|rec, view, ptr| {
            out.push((rec.get(view.key.clone()).unwrap_or_default().to_vec(), ptr));
            Ok(())
        })?;
        Ok(out)
    }

    /// Calls `f(key, value, pointer)` for every record in file order (values decompressed).
    pub fn for_each(&self, mut f: impl FnMut(&[u8], Vec<u8>, BlobPointer) -> Result<()>) -> Result<()> {
        self.walk(|rec, view, ptr| {
            let value = if view.flags & FLAG_COMPRESSED == 0 {
                rec.get(view.stored.clone()).unwrap_or_default().to_vec()
            } else {
                self.decompress(rec, view, ptr.offset)?
            };
            f(rec.get(view.key.clone()).unwrap_or_default(), value, ptr)
        })
    }

    /// Checks the whole file: every record's checksum and decompression, and the footer against
    /// what the records add up to. Returns the file's metadata.
    pub fn verify(&self) -> Result<BlobFileMeta> {
        let mut seen = Footer::default();
        self.for_each(|_, value, ptr| {
            seen.record_count += 1;
            seen.record_bytes += ptr.size;
            seen.value_bytes += value.len() as u64;
            Ok(())
        })?;
        let mut raw = [0u8; FOOTER_LEN];
        self.file.read_exact_at(self.data_end, &mut raw)?;
        let footer = Footer::decode(&raw).map_err(|e| self.corrupt(self.data_end, &e.to_string()))?;
        if footer != seen {
            return Err(
                self.corrupt(self.data_end, &format!("footer says {footer:?}, records add up to {seen:?}"))
            );
        }
        Ok(BlobFileMeta {
            number: self.file_number,
            file_size: self.data_end + FOOTER_LEN as u64,
            total_count: footer.record_count,
            total_bytes: footer.record_bytes,
        })
    }

    /// Walks the record area, reading it in large chunks, and hands each checked record over.
    fn walk(&self, mut f: impl FnMut(&[u8], &RecordView, BlobPointer) -> Result<()>) -> Result<()> {
        let mut window = Window { start: 0, buf: Vec::new() };
        let mut offset = HEADER_LEN as u64;
        while offset < self.data_end {
            let left = self.data_end - offset;
            let prefix = window.get(self, offset, left.min(format::MAX_RECORD_PREFIX as u64))?;
            let len = format::record_len(prefix)
                .filter(|&n| n >= format::MIN_RECORD_LEN && n as u64 <= left)
                .ok_or_else(|| self.corrupt(offset, "malformed record header"))?;
            let rec = window.get(self, offset, len as u64)?;
            let view = format::parse_record(rec).map_err(|why| self.corrupt(offset, why))?;
            f(rec, &view, BlobPointer { file_number: self.file_number, offset, size: len as u64 })?;
            offset += len as u64;
        }
        Ok(())
    }

    fn corrupt(&self, offset: u64, why: &str) -> Error {
        Error::corruption(format!("blob file {} at offset {offset}: {why}", self.file_number))
    }
}

/// A read-ahead buffer over the record area so walking costs one read per chunk, not per record.
struct Window {
    start: u64,
    buf: Vec<u8>,
}

impl Window {
    /// The `n` bytes at `offset`; the caller guarantees they lie within the record area.
    fn get(&mut self, r: &BlobReader, offset: u64, n: u64) -> Result<&[u8]> {
        let covered = offset >= self.start && offset + n <= self.start + self.buf.len() as u64;
        if !covered {
            let len = n.max(WALK_CHUNK as u64).min(r.data_end - offset);
            self.buf.resize(len as usize, 0);
            r.file.read_exact_at_forward(offset, &mut self.buf)?;
            self.start = offset;
        }
        let from = (offset - self.start) as usize;
        Ok(self.buf.get(from..from + n as usize).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_record_note_round_trips_and_fits_the_granule() {
        let room = VerifiedOffsets::new(1 << 20, VERIFIED_GRANULE).note_bits();
        for (head_len, fingerprint) in [(0, 0), (format::MAX_RECORD_PREFIX, u16::MAX), (7, 0x1234)] {
            let known = KnownRecord { head_len, fingerprint };
            let note = known.encode();
            assert!(note >> room == 0, "{known:?} needs more than {room} bits");
            assert_eq!(KnownRecord::decode(note), Some(known));
        }
        assert_eq!(KnownRecord::decode(0), None, "a plain mark is not a known raw record");
    }

    #[test]
    fn fingerprints_tell_keys_and_sizes_apart() {
        let base = KnownRecord::fingerprint(b"key-000001", 830);
        assert_ne!(base, KnownRecord::fingerprint(b"key-000002", 830));
        assert_ne!(base, KnownRecord::fingerprint(b"key-000001", 831));
    }
}
