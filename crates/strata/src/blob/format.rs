//! The byte layout of blob files: header, records, footer, and the [`BlobPointer`] that the tree
//! stores. Pure encoding and decoding; no IO. Decoders never panic on any bytes.

use std::ops::Range;

use crate::error::{Error, Result};
use crate::util::coding::{self, Reader};
use crate::util::compress::Compression;
use crate::util::crc;

/// First and last 8 bytes of every blob file ("STRATABL" read as little-endian ASCII).
pub const MAGIC: u64 = u64::from_le_bytes(*b"STRATABL");

/// The newest format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// `magic u64 | version u32 | compression u8 | 3 zero bytes | file number u64 | 4 zero bytes |
/// masked crc32c of bytes 0..28 u32`.
pub const HEADER_LEN: usize = 32;

/// `record count u64 | record bytes u64 | value bytes u64 | masked crc32c of bytes 0..24 u32 |
/// magic u64`.
pub const FOOTER_LEN: usize = 36;

/// Record flag: the stored value is compressed with the file's compression.
pub const FLAG_COMPRESSED: u8 = 1;

/// Longest possible fixed part of a record: crc, flags and three 10-byte varints.
pub const MAX_RECORD_PREFIX: usize = 4 + 1 + 3 * 10;

/// Smallest possible record: crc, flags and three 1-byte varints, empty key and value.
pub const MIN_RECORD_LEN: usize = 4 + 1 + 3;

/// Where a value lives: the whole record `offset .. offset + size` of blob file `file_number`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct BlobPointer {
    /// The blob file's number.
    pub file_number: u64,
    /// Offset of the record in the file.
    pub offset: u64,
    /// Size of the whole record.
    pub size: u64,
}

impl BlobPointer {
    /// Appends the pointer as three varints.
    pub fn encode(&self, dst: &mut Vec<u8>) {
        for v in [self.file_number, self.offset, self.size] {
            coding::put_varint(dst, v);
        }
    }

    /// Parses a pointer; malformed input or trailing bytes are `Error::Corruption`.
    #[inline]
    pub fn decode(src: &[u8]) -> Result<BlobPointer> {
        // Positions rather than a `Reader`: every blob value an iterator reads decodes one.
        let (file_number, a) = coding::get_varint(src).ok_or_else(|| Self::malformed(src))?;
        let rest = src.get(a..).unwrap_or_default();
        let (offset, b) = coding::get_varint(rest).ok_or_else(|| Self::malformed(src))?;
        let rest = rest.get(b..).unwrap_or_default();
        match coding::get_varint(rest) {
            Some((size, c)) if c == rest.len() => Ok(BlobPointer { file_number, offset, size }),
            _ => Err(Self::malformed(src)),
        }
    }

    /// The error for bytes that are not exactly one pointer (kept out of the inlined decode).
    #[cold]
    fn malformed(src: &[u8]) -> Error {
        let mut r = Reader::new(src);
        if r.varint().and(r.varint()).and(r.varint()).is_none() {
            return Error::corruption("blob pointer: truncated or malformed varint");
        }
        Error::corruption(format!("blob pointer: {} trailing bytes", r.remaining().len()))
    }
}

/// Builds the header of blob file `file_number`.
pub fn encode_header(file_number: u64, compression: Compression) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER_LEN);
    coding::put_u64(&mut h, MAGIC);
    coding::put_u32(&mut h, FORMAT_VERSION);
    h.extend_from_slice(&[compression as u8, 0, 0, 0]);
    coding::put_u64(&mut h, file_number);
    coding::put_u32(&mut h, 0);
    let sum = crc::mask(crc::crc32c(&h));
    coding::put_u32(&mut h, sum);
    h
}

/// Checks a header read from blob file `file_number`; returns the file's record compression.
/// The version is checked before the checksum because a newer version may lay the header out
/// differently, and "unsupported version" is the more useful error.
pub fn decode_header(h: &[u8], file_number: u64) -> Result<Compression> {
    let bad = |what: String| Error::corruption(format!("blob file {file_number}: header {what}"));
    let mut r = Reader::new(h);
    if r.u64() != Some(MAGIC) {
        return Err(bad("has a bad magic number (not a blob file)".into()));
    }
    let version = r.u32().ok_or_else(|| bad("is truncated".into()))?;
    if version > FORMAT_VERSION {
        return Err(Error::UnsupportedVersion {
            what: "blob file",
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    let (Some(body), Some(stored)) = (h.get(..HEADER_LEN - 4), h.get(HEADER_LEN - 4..HEADER_LEN)) else {
        return Err(bad("is truncated".into()));
    };
    if coding::get_u32(stored) != Some(crc::mask(crc::crc32c(body))) {
        return Err(bad("checksum mismatch".into()));
    }
    if version == 0 {
        return Err(bad("has format version 0".into()));
    }
    let compression =
        r.u8().and_then(Compression::from_u8).ok_or_else(|| bad("has unknown compression".into()))?;
    let found = r.bytes(3).and(r.u64()).ok_or_else(|| bad("is truncated".into()))?;
    if found != file_number {
        return Err(bad(format!("names file {found}")));
    }
    Ok(compression)
}

/// Totals stored in the footer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Footer {
    /// Number of records.
    pub record_count: u64,
    /// Sum of record sizes.
    pub record_bytes: u64,
    /// Sum of the uncompressed value lengths.
    pub value_bytes: u64,
}

impl Footer {
    /// Serializes the footer.
    pub fn encode(&self) -> Vec<u8> {
        let mut f = Vec::with_capacity(FOOTER_LEN);
        coding::put_u64(&mut f, self.record_count);
        coding::put_u64(&mut f, self.record_bytes);
        coding::put_u64(&mut f, self.value_bytes);
        let sum = crc::mask(crc::crc32c(&f));
        coding::put_u32(&mut f, sum);
        coding::put_u64(&mut f, MAGIC);
        f
    }

    /// Parses and checks a footer.
    pub fn decode(src: &[u8]) -> Result<Footer> {
        let bad = |what: &str| Error::corruption(format!("blob footer {what}"));
        let mut r = Reader::new(src);
        let (Some(record_count), Some(record_bytes), Some(value_bytes), Some(sum), Some(magic)) =
            (r.u64(), r.u64(), r.u64(), r.u32(), r.u64())
        else {
            return Err(bad("is truncated"));
        };
        if magic != MAGIC {
            return Err(bad("has a bad magic number (file truncated or not finished)"));
        }
        if Some(sum) != src.get(..24).map(|b| crc::mask(crc::crc32c(b))) {
            return Err(bad("checksum mismatch"));
        }
        Ok(Footer { record_count, record_bytes, value_bytes })
    }
}

/// Appends the record's fixed part and key to `dst`, with the checksum slot zeroed; the caller
/// finishes it with [`record_checksum`] once the stored value is known.
pub fn encode_record_head(dst: &mut Vec<u8>, flags: u8, key: &[u8], value_len: usize, stored_len: usize) {
    coding::put_u32(dst, 0);
    dst.push(flags);
    coding::put_varint(dst, key.len() as u64);
    coding::put_varint(dst, value_len as u64);
    coding::put_varint(dst, stored_len as u64);
    dst.extend_from_slice(key);
}

/// The masked checksum of a record: everything after the checksum field.
pub fn record_checksum(head_after_crc: &[u8], stored: &[u8]) -> u32 {
    crc::mask(crc::extend(crc::crc32c(head_after_crc), stored))
}

/// A checked record: ranges index into the record's bytes.
#[derive(Debug, Clone)]
pub struct RecordView {
    /// Record flags.
    pub flags: u8,
    /// The user key.
    pub key: Range<usize>,
    /// Uncompressed value length.
    pub value_len: usize,
    /// The stored (maybe compressed) value.
    pub stored: Range<usize>,
}

struct Lengths {
    flags: u8,
    key_len: usize,
    value_len: usize,
    stored_len: usize,
    head_len: usize,
}

fn parse_lengths(rec: &[u8]) -> Option<Lengths> {
    let mut r = Reader::new(rec.get(4..)?);
    let flags = r.u8()?;
    let key_len = usize::try_from(r.varint()?).ok()?;
    let value_len = usize::try_from(r.varint()?).ok()?;
    let stored_len = usize::try_from(r.varint()?).ok()?;
    let head_len = rec.len() - r.remaining().len();
    Some(Lengths { flags, key_len, value_len, stored_len, head_len })
}

/// The total length of the record starting with `prefix` (which holds at least its fixed part,
/// or runs to the end of the data), or `None` if the fixed part is malformed.
pub fn record_len(prefix: &[u8]) -> Option<usize> {
    let l = parse_lengths(prefix)?;
    l.head_len.checked_add(l.key_len)?.checked_add(l.stored_len)
}

/// Checks a whole record (checksum, lengths, flags) and locates its parts.
pub fn parse_record(rec: &[u8]) -> std::result::Result<RecordView, &'static str> {
    let (Some(stored_sum), Some(body)) = (coding::get_u32(rec), rec.get(4..)) else {
        return Err("record too short");
    };
    if crc::mask(crc::crc32c(body)) != stored_sum {
        return Err("record checksum mismatch");
    }
    check_layout(rec)
}

/// Checks a record's lengths and flags (not its checksum) and locates its parts: for a record
/// whose checksum already passed once while its bytes stayed in the same mapping.
pub fn check_layout(rec: &[u8]) -> std::result::Result<RecordView, &'static str> {
    let l = parse_lengths(rec).ok_or("malformed record header")?;
    if l.flags & !FLAG_COMPRESSED != 0 {
        return Err("unknown record flags");
    }
    let key = l.head_len..l.head_len.checked_add(l.key_len).ok_or("record key too long")?;
    let stored = key.end..key.end.checked_add(l.stored_len).ok_or("record value too long")?;
    if stored.end != rec.len() {
        return Err("record length does not match its pointer");
    }
    if l.flags & FLAG_COMPRESSED == 0 && l.stored_len != l.value_len {
        return Err("raw record value length mismatch");
    }
    Ok(RecordView { flags: l.flags, key, value_len: l.value_len, stored })
}
