//! Golden bytes of the blob file format (docs/format.md, "Blob file format"): the 32-byte
//! header, records (raw and compressed), the `BlobPointer` encoding and the 36-byte footer, as
//! written today.
//!
//! Each test builds the structure with strata's own encoder or `BlobWriter`, compares it with a
//! checked-in hex literal, decodes the literal back, and checks the byte positions the spec's
//! tables give. A failure here means the bytes on disk changed: that needs a new blob format
//! version and a reader for version 1, not a new literal.

mod golden_support;

// Every strata item these tests use, in one place (internal modules are repointed here).
use golden_support::{assert_golden, hex, le32, le64, spec_masked_crc, spec_varint, unhex, MemDir};
use strata::internal::blob::format::{decode_header, encode_header, Footer, FOOTER_LEN, HEADER_LEN, MAGIC};
use strata::internal::blob::{BlobPointer, BlobReader, BlobWriter};
use strata::internal::version::edit::BlobFileMeta;
use strata::{Compression, Error};

const FILE_NUMBER: u64 = 7;

/// Writes a blob file of `records`; returns its bytes, the pointers and the writer's metadata.
fn write_blob_file(
    compression: Compression,
    records: &[(&[u8], &[u8])],
) -> (Vec<u8>, Vec<BlobPointer>, BlobFileMeta) {
    let dir = MemDir::new();
    let mut w = BlobWriter::new(dir.create("000007.blob"), FILE_NUMBER, compression).expect("create");
    let pointers = records.iter().map(|(k, v)| w.add(k, v).expect("add")).collect();
    let meta = w.finish().expect("finish");
    (dir.contents("000007.blob"), pointers, meta)
}

fn open_blob_file(bytes: &[u8]) -> BlobReader {
    let dir = MemDir::new();
    dir.store("000007.blob", bytes);
    BlobReader::open(dir.open_random("000007.blob"), FILE_NUMBER).expect("open")
}

/// The record's head as docs/format.md lays it out: (checksum, flags, key_len, value_len,
/// stored_len, offset of the key).
fn spec_record_head(rec: &[u8]) -> (u32, u8, u64, u64, u64, usize) {
    let mut pos = 5;
    let key_len = spec_varint(rec, &mut pos);
    let value_len = spec_varint(rec, &mut pos);
    let stored_len = spec_varint(rec, &mut pos);
    (le32(rec, 0), rec[4], key_len, value_len, stored_len, pos)
}

/// A header for `FILE_NUMBER` with byte `at` set to `value` and its checksum recomputed, so a
/// reader gets past the checksum to the check under test.
fn header_with(at: usize, value: u8) -> Vec<u8> {
    let mut h = encode_header(FILE_NUMBER, Compression::None);
    h[at] = value;
    let crc = spec_masked_crc(&[&h[..28]]);
    h[28..32].copy_from_slice(&crc.to_le_bytes());
    h
}

// ---- Header -----------------------------------------------------------------------------

#[test]
fn blob_header_is_32_bytes() {
    let golden = "535452415441424c 01000000 01 000000 0700000000000000 00000000 742ebe06";
    let bytes = encode_header(FILE_NUMBER, Compression::Snappy);
    assert_golden(&bytes, golden);
    assert_eq!((bytes.len(), HEADER_LEN), (32, 32));
    // | 0 | 8 | magic 0x4c42415441525453 (the ASCII bytes STRATABL) |
    assert_eq!(&bytes[0..8], b"STRATABL");
    assert_eq!((le64(&bytes, 0), MAGIC), (0x4c42415441525453, 0x4c42415441525453));
    // | 8 | 4 | format version, 1 | 12 | 1 | compression | 13 | 3 | zero |
    assert_eq!(le32(&bytes, 8), 1);
    assert_eq!(bytes[12], 1, "1 snappy");
    assert_eq!(&bytes[13..16], [0, 0, 0]);
    // | 16 | 8 | file number | 24 | 4 | zero | 28 | 4 | mask(crc32c(bytes 0..28)) |
    assert_eq!(le64(&bytes, 16), FILE_NUMBER);
    assert_eq!(le32(&bytes, 24), 0);
    assert_eq!(le32(&bytes, 28), spec_masked_crc(&[&bytes[..28]]));
    assert_eq!(decode_header(&unhex(golden), FILE_NUMBER).expect("valid"), Compression::Snappy);
}

#[test]
fn blob_header_compression_codes() {
    // "compression of records: 0 none, 1 snappy, 2 lz4, 3 zstd"
    for (kind, code) in
        [(Compression::None, 0), (Compression::Snappy, 1), (Compression::Lz4, 2), (Compression::Zstd, 3)]
    {
        let bytes = encode_header(FILE_NUMBER, kind);
        assert_eq!(bytes[12], code);
        assert_eq!(decode_header(&bytes, FILE_NUMBER).expect("valid"), kind);
    }
}

#[test]
fn blob_header_reader_checks_in_order() {
    let corrupt = |h: &[u8]| matches!(decode_header(h, FILE_NUMBER), Err(Error::Corruption(_)));
    // "magic (else Corruption), version (greater than 1 → Error::UnsupportedVersion, checked
    // before the checksum ...), checksum, version ≠ 0, known compression, file number"
    assert!(corrupt(&header_with(0, b'X')), "magic");
    let mut newer = encode_header(FILE_NUMBER, Compression::None);
    newer[8] = 2; // checksum left stale: the version is checked first
    let e = decode_header(&newer, FILE_NUMBER).expect_err("newer");
    assert!(matches!(e, Error::UnsupportedVersion { what: "blob file", found: 2, supported: 1 }), "{e:?}");
    let mut stale = encode_header(FILE_NUMBER, Compression::None);
    stale[20] = 1;
    assert!(corrupt(&stale), "checksum");
    assert!(corrupt(&header_with(8, 0)), "version 0");
    assert!(corrupt(&header_with(12, 4)), "unknown compression");
    assert!(corrupt(&header_with(16, 8)), "file number 8 in file 7");
    assert!(decode_header(&header_with(16, 7), FILE_NUMBER).is_ok());
    // "A file shorter than header plus footer is Corruption."
    let dir = MemDir::new();
    let short = [encode_header(FILE_NUMBER, Compression::None), vec![0; FOOTER_LEN - 1]].concat();
    dir.store("000007.blob", &short);
    let opened = BlobReader::open(dir.open_random("000007.blob"), FILE_NUMBER);
    assert!(matches!(opened, Err(Error::Corruption(_))), "{} bytes", short.len());
}

// ---- Records ----------------------------------------------------------------------------

#[test]
fn blob_record_raw() {
    let (file, pointers, _) = write_blob_file(Compression::None, &[(b"key", b"value")]);
    let rec = &file[HEADER_LEN..file.len() - FOOTER_LEN];
    let golden = "d14e7397 00 03 05 05 6b6579 76616c7565";
    assert_golden(rec, golden);
    let (crc, flags, key_len, value_len, stored_len, key_at) = spec_record_head(rec);
    // "checksum: mask(crc32c(everything after the checksum in this record))"
    assert_eq!(crc, spec_masked_crc(&[&rec[4..]]));
    assert_eq!((flags, key_len, value_len, stored_len), (0, 3, 5, 5), "raw: stored_len = value_len");
    assert_eq!(&rec[key_at..], b"keyvalue");
    // "Records are contiguous, starting at offset 32"; the pointer names the whole record.
    assert_eq!(pointers, [BlobPointer { file_number: FILE_NUMBER, offset: 32, size: rec.len() as u64 }]);
    let reader = open_blob_file(&file);
    assert_eq!(reader.get(&pointers[0], b"key").expect("reads"), b"value");
}

#[test]
fn blob_record_compressed() {
    let value = b"abcd".repeat(64);
    let (file, pointers, _) = write_blob_file(Compression::Snappy, &[(b"key", &value)]);
    let rec = &file[HEADER_LEN..file.len() - FOOTER_LEN];
    let (crc, flags, key_len, value_len, stored_len, key_at) = spec_record_head(rec);
    // Only the head is pinned: the compressed bytes are the snappy crate's output.
    assert_golden(&rec[4..8], "01 03 8002");
    assert_eq!(crc, spec_masked_crc(&[&rec[4..]]));
    assert_eq!((flags, key_len, value_len), (1, 3, 256), "bit 0 COMPRESSED");
    // "keeps the result only if it saved at least 12.5%"
    assert!(stored_len <= value_len - value_len / 8);
    assert_eq!(key_at + 3 + stored_len as usize, rec.len());
    let reader = open_blob_file(&file);
    assert_eq!(reader.get(&pointers[0], b"key").expect("reads"), value);
}

#[test]
fn blob_records_that_do_not_compress_are_raw() {
    // Incompressible and empty values in a snappy file are stored raw with flags 0.
    let noise: Vec<u8> = (0..64u32).map(|i| (i.wrapping_mul(0x9e37_79b9) >> 24) as u8).collect();
    let (file, pointers, _) = write_blob_file(Compression::Snappy, &[(b"n", &noise), (b"e", b"")]);
    let empty = &file[pointers[1].offset as usize..][..pointers[1].size as usize];
    let golden_empty =
        format!("{} 00 01 00 00 65", hex(&spec_masked_crc(&[&unhex("00 01 00 00 65")]).to_le_bytes()));
    assert_golden(empty, &golden_empty);
    let noisy = &file[pointers[0].offset as usize..][..pointers[0].size as usize];
    assert_eq!(spec_record_head(noisy).1, 0);
    let reader = open_blob_file(&file);
    assert_eq!(reader.get(&pointers[0], b"n").expect("reads"), noise);
    assert_eq!(reader.get(&pointers[1], b"e").expect("reads"), b"");
}

// ---- BlobPointer ------------------------------------------------------------------------

#[test]
fn blob_pointer_is_three_varints() {
    let ptr = BlobPointer { file_number: 7, offset: 32, size: 300 };
    let mut bytes = Vec::new();
    ptr.encode(&mut bytes);
    assert_golden(&bytes, "07 20 ac02");
    assert_eq!(BlobPointer::decode(&unhex("07 20 ac02")).expect("valid"), ptr);
    // "trailing bytes are Corruption"
    assert!(matches!(BlobPointer::decode(&unhex("07 20 ac02 00")), Err(Error::Corruption(_))));
    assert!(matches!(BlobPointer::decode(&unhex("07 20 ac")), Err(Error::Corruption(_))));
}

// ---- Footer -----------------------------------------------------------------------------

#[test]
fn blob_footer_is_36_bytes() {
    let footer = Footer { record_count: 2, record_bytes: 150, value_bytes: 260 };
    let golden = "0200000000000000 9600000000000000 0401000000000000 ba6391dc 535452415441424c";
    let bytes = footer.encode();
    assert_golden(&bytes, golden);
    assert_eq!((bytes.len(), FOOTER_LEN), (36, 36));
    // | 0 | 8 | record count | 8 | 8 | record bytes | 16 | 8 | value bytes |
    assert_eq!([le64(&bytes, 0), le64(&bytes, 8), le64(&bytes, 16)], [2, 150, 260]);
    // | 24 | 4 | mask(crc32c(footer bytes 0..24)) | 28 | 8 | magic (as in the header) |
    assert_eq!(le32(&bytes, 24), spec_masked_crc(&[&bytes[..24]]));
    assert_eq!(&bytes[28..36], b"STRATABL");
    assert_eq!(Footer::decode(&unhex(golden)).expect("valid"), footer);
}

// ---- A whole file -----------------------------------------------------------------------

#[test]
fn blob_file_bytes() {
    let long = vec![b'v'; 130];
    let (file, pointers, meta) = write_blob_file(Compression::None, &[(b"k1", b"v1"), (b"key2", &long)]);
    let golden = "535452415441424c 01000000 00 000000 0700000000000000 00000000 5c924922".to_string()
        + "906a2d80 00 02 02 02 6b31 7631 "
        + "b37d9929 00 04 8201 8201 6b657932 "
        + &"76".repeat(130)
        + "0200000000000000 9c00000000000000 8400000000000000 9dfb846d 535452415441424c";
    assert_golden(&file, &golden);
    let file = unhex(&golden);
    // "blob-file := header record* footer"; the footer is at file_size - 36 and its record
    // bytes are "file_size - 32 - 36".
    let footer = Footer::decode(&file[file.len() - FOOTER_LEN..]).expect("valid");
    let record_bytes = (file.len() - HEADER_LEN - FOOTER_LEN) as u64;
    assert_eq!(footer, Footer { record_count: 2, record_bytes, value_bytes: 132 });
    assert_eq!(pointers[0].offset, 32);
    assert_eq!(pointers[1].offset, pointers[0].offset + pointers[0].size, "contiguous, no padding");
    // "The MANIFEST's BlobFileMeta carries total_count = record count and total_bytes = record bytes."
    let expected = BlobFileMeta {
        number: FILE_NUMBER,
        file_size: file.len() as u64,
        total_count: 2,
        total_bytes: record_bytes,
    };
    assert_eq!(meta, expected);
    let reader = open_blob_file(&file);
    assert_eq!(reader.verify().expect("verifies"), expected);
    assert_eq!(reader.get(&pointers[0], b"k1").expect("reads"), b"v1");
    assert_eq!(reader.get(&pointers[1], b"key2").expect("reads"), long);
}

#[test]
fn blob_reader_returns_a_value_only_for_its_own_record() {
    let (file, pointers, _) = write_blob_file(Compression::None, &[(b"k1", b"v1"), (b"k2", b"v2")]);
    let reader = open_blob_file(&file);
    let p = pointers[0];
    let corrupt = |ptr: BlobPointer, key: &[u8]| matches!(reader.get(&ptr, key), Err(Error::Corruption(_)));
    // "the pointer names this file; the range lies within [32, file_size - 36) and is at least 8
    // bytes; the checksum matches; the record's lengths add up to exactly size; ... the stored key
    // equals user_key"
    assert!(corrupt(BlobPointer { file_number: 8, ..p }, b"k1"), "another file");
    assert!(corrupt(BlobPointer { offset: 31, ..p }, b"k1"), "inside the header");
    assert!(
        corrupt(BlobPointer { offset: pointers[1].offset, size: p.size + 1, ..p }, b"k2"),
        "into the footer"
    );
    assert!(corrupt(BlobPointer { size: 7, ..p }, b"k1"), "shorter than 8 bytes");
    assert!(corrupt(BlobPointer { size: p.size + pointers[1].size, ..p }, b"k1"), "two records");
    assert!(corrupt(p, b"k2"), "another key's record");
    assert_eq!(reader.get(&p, b"k1").expect("reads"), b"v1");
}
