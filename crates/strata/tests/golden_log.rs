//! Golden bytes of the log format (docs/format.md, "Log format"), the WAL header record, the
//! write-batch payload and every MANIFEST tag ("MANIFEST record format"), as written today.
//!
//! Each test builds the structure with strata's own encoder, compares it with a checked-in hex
//! literal, decodes the literal back, and checks the byte positions docs/format.md states. A
//! failure here means the bytes on disk changed: that needs a new version number and a reader
//! for the old bytes (docs/format.md, "Versions"), not a new literal.

mod golden_support;

// Every strata item these tests use, in one place (internal modules are repointed here).
use std::sync::Arc;

use golden_support::{assert_golden, le16, le32, le64, spec_masked_crc, unhex, MemDir};
use strata::batch::decode_payload;
use strata::internal::key::{make_internal_key, ValueKind};
use strata::internal::version::edit::{BlobFileMeta, FileMeta, VersionEdit};
use strata::internal::wal::format::{RecordType, BLOCK_SIZE, HEADER_SIZE};
use strata::internal::wal::{LogReader, LogWriter};
use strata::internal::wal_header::{RecordFlags, WalHeader, HEADER_BYTES};
use strata::merge;
use strata::{Db, Error, Options, WriteBatch, WriteOptions};

/// Writes `records` as logical records of one log file and returns the file's bytes.
fn write_log(records: &[&[u8]]) -> Vec<u8> {
    let dir = MemDir::new();
    let mut w = LogWriter::new(dir.create("log"));
    for r in records {
        w.add_record(r).expect("add_record");
    }
    dir.contents("log")
}

/// Reads every logical record of a log file's bytes with the strict reader.
fn read_log(bytes: &[u8]) -> Vec<Vec<u8>> {
    let dir = MemDir::new();
    dir.store("log", bytes);
    let mut r = LogReader::new(dir.open_sequential("log"), false);
    let mut out = Vec::new();
    while let Some(rec) = r.read_record().expect("a well-formed log") {
        out.push(rec);
    }
    out
}

/// The 7-byte physical-record header at `at`: (checksum, length, type).
fn chunk_header(bytes: &[u8], at: usize) -> (u32, u16, u8) {
    (le32(bytes, at), le16(bytes, at + 4), bytes[at + 6])
}

/// `n` bytes of a recognisable pattern, for records too long to write out.
fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

// ---- Log format: physical records -------------------------------------------------------

#[test]
fn wal_chunk_full_record() {
    let golden = "0bb95758 0500 01 68656c6c6f";
    let bytes = write_log(&[b"hello"]);
    assert_golden(&bytes, golden);
    // "physical-record := checksum: u32 | length: u16 | type: u8 | payload: u8[length]"
    assert_eq!(HEADER_SIZE, 7);
    let (crc, len, kind) = chunk_header(&bytes, 0);
    assert_eq!(len, 5);
    assert_eq!(kind, 1, "1 FULL");
    assert_eq!(RecordType::from_u8(kind), Some(RecordType::Full));
    // "checksum: mask(crc32c(type ‖ payload))"
    assert_eq!(crc, spec_masked_crc(&[&[1], b"hello"]));
    assert_eq!(&bytes[7..], b"hello");
    assert_eq!(read_log(&unhex(golden)), [b"hello".to_vec()]);
}

#[test]
fn wal_chunk_empty_record() {
    // "zero-length payloads are valid for every type"
    let golden = "052b2843 0000 01";
    let bytes = write_log(&[b""]);
    assert_golden(&bytes, golden);
    assert_eq!(chunk_header(&bytes, 0), (spec_masked_crc(&[&[1]]), 0, 1));
    assert_eq!(read_log(&unhex(golden)), [Vec::<u8>::new()]);
}

#[test]
fn wal_chunk_types_are_persisted_values() {
    // "`1` FULL, `2` FIRST, `3` MIDDLE, `4` LAST. `0` is reserved (zero fill) and never written"
    let types =
        [(1, RecordType::Full), (2, RecordType::First), (3, RecordType::Middle), (4, RecordType::Last)];
    for (byte, kind) in types {
        assert_eq!(RecordType::from_u8(byte), Some(kind));
        assert_eq!(kind as u8, byte);
    }
    assert_eq!(RecordType::from_u8(0), None);
    assert_eq!(RecordType::from_u8(5), None);
}

// ---- Log format: blocks and fragmentation -----------------------------------------------

#[test]
fn log_record_spanning_two_blocks_is_first_then_last() {
    assert_eq!(BLOCK_SIZE, 32768, "A log file is a sequence of 32768-byte blocks");
    let payload = pattern(BLOCK_SIZE + 100);
    let bytes = write_log(&[&payload]);
    // "Fragments are as large as the space left in the block allows": 32761 bytes in block 0,
    // the remaining 107 after a header at the start of block 1.
    let first_len = BLOCK_SIZE - HEADER_SIZE;
    let last_len = payload.len() - first_len;
    assert_eq!((first_len, last_len), (32761, 107));
    assert_eq!(bytes.len(), BLOCK_SIZE + HEADER_SIZE + last_len);
    let golden_first = "3cb1a7ce f97f 02";
    let golden_last = "f2d084b9 6b00 04";
    assert_golden(&bytes[..HEADER_SIZE], golden_first);
    assert_golden(&bytes[BLOCK_SIZE..BLOCK_SIZE + HEADER_SIZE], golden_last);
    let (crc, len, kind) = chunk_header(&bytes, 0);
    assert_eq!((len as usize, kind), (first_len, 2), "FIRST");
    assert_eq!(crc, spec_masked_crc(&[&[2], &payload[..first_len]]));
    let (crc, len, kind) = chunk_header(&bytes, BLOCK_SIZE);
    assert_eq!((len as usize, kind), (last_len, 4), "LAST");
    assert_eq!(crc, spec_masked_crc(&[&[4], &payload[first_len..]]));
    assert_eq!(&bytes[HEADER_SIZE..BLOCK_SIZE], &payload[..first_len]);
    assert_eq!(&bytes[BLOCK_SIZE + HEADER_SIZE..], &payload[first_len..]);
    assert_eq!(read_log(&bytes), [payload]);
}

#[test]
fn log_record_over_two_blocks_has_a_middle_fragment() {
    let payload = pattern(2 * BLOCK_SIZE + 10);
    let bytes = write_log(&[&payload]);
    let frag = BLOCK_SIZE - HEADER_SIZE;
    let headers: Vec<(u16, u8)> = [0, BLOCK_SIZE, 2 * BLOCK_SIZE]
        .iter()
        .map(|&at| (chunk_header(&bytes, at).1, chunk_header(&bytes, at).2))
        .collect();
    let rest = (payload.len() - 2 * frag) as u16;
    assert_eq!(headers, [(frag as u16, 2), (frag as u16, 3), (rest, 4)], "FIRST, MIDDLE, LAST");
    assert_eq!(bytes.len(), 2 * BLOCK_SIZE + HEADER_SIZE + usize::from(rest));
    assert_eq!(read_log(&bytes), [payload]);
}

#[test]
fn log_block_trailer_under_7_bytes_is_zero_filled() {
    // A first record leaving 5 bytes in block 0: "fewer than 7 bytes left: zero-filled".
    let first = pattern(BLOCK_SIZE - HEADER_SIZE - 5);
    let bytes = write_log(&[&first, b"abc"]);
    let trailer_at = HEADER_SIZE + first.len();
    assert_eq!(trailer_at, BLOCK_SIZE - 5);
    assert_golden(&bytes[trailer_at..], "0000000000 f270e89d 0300 01 616263");
    assert_eq!(chunk_header(&bytes, BLOCK_SIZE), (spec_masked_crc(&[&[1], b"abc"]), 3, 1));
    assert_eq!(read_log(&bytes), [first, b"abc".to_vec()]);
}

#[test]
fn log_exactly_7_bytes_left_hold_an_empty_first_fragment() {
    // "When exactly 7 bytes remain, the writer emits a record with an empty payload there (a
    // FIRST fragment ...)".
    let first = pattern(BLOCK_SIZE - 2 * HEADER_SIZE);
    let bytes = write_log(&[&first, b"xyz"]);
    let at = HEADER_SIZE + first.len();
    assert_eq!(at, BLOCK_SIZE - HEADER_SIZE);
    assert_golden(&bytes[at..], "6451d0e9 0000 02 ddd61906 0300 04 78797a");
    assert_eq!(chunk_header(&bytes, at), (spec_masked_crc(&[&[2]]), 0, 2));
    assert_eq!(chunk_header(&bytes, BLOCK_SIZE), (spec_masked_crc(&[&[4], b"xyz"]), 3, 4));
    assert_eq!(read_log(&bytes), [first, b"xyz".to_vec()]);
}

// ---- WAL header record ------------------------------------------------------------------

#[test]
fn wal_header_v2_is_48_bytes() {
    let header = WalHeader {
        version: 2,
        prev_wal: 5,
        prev_last_seq: 0x0102_0304_0506,
        unsynced_wal: 4,
        unsynced_last_seq: 300,
    };
    let golden = "ffffffffffffffff 00000000 02000000
                  0500000000000000 0605040302010000
                  0400000000000000 2c01000000000000";
    let mut bytes = Vec::new();
    header.encode_to(&mut bytes);
    assert_golden(&bytes, golden);
    // "header v2 := marker: u64 = 0xFFFF_FFFF_FFFF_FFFF | zero: u32 = 0 | version: u32 = 2
    //  | prev_wal: u64 | prev_last_sequence: u64 | unsynced_wal: u64 | unsynced_last_sequence: u64"
    assert_eq!((bytes.len(), HEADER_BYTES), (48, 48));
    assert_eq!(le64(&bytes, 0), 0xFFFF_FFFF_FFFF_FFFF);
    assert_eq!(le32(&bytes, 8), 0);
    assert_eq!(le32(&bytes, 12), 2);
    assert_eq!([le64(&bytes, 16), le64(&bytes, 24)], [5, 0x0102_0304_0506]);
    assert_eq!([le64(&bytes, 32), le64(&bytes, 40)], [4, 300]);
    let decoded = WalHeader::decode(&unhex(golden)).expect("a header").expect("valid");
    assert_eq!(decoded, header);
}

#[test]
fn wal_header_v1_is_32_bytes_and_still_read() {
    // "header v1 := marker | zero | version: u32 = 1 | unsynced_wal: u64 | unsynced_last_sequence: u64"
    let golden = "ffffffffffffffff 00000000 01000000 0700000000000000 6400000000000000";
    let decoded = WalHeader::decode(&unhex(golden)).expect("a header").expect("valid");
    assert_eq!(
        decoded,
        WalHeader { version: 1, prev_wal: 0, prev_last_seq: 0, unsynced_wal: 7, unsynced_last_seq: 100 }
    );
}

#[test]
fn wal_header_reading_rules() {
    let mut good = unhex("ffffffffffffffff 00000000 02000000");
    good.extend_from_slice(&[0; 32]);
    // "a header with version 0, a length other than 48 (version 2) or 32 (version 1) bytes, or
    // a missing field is Error::Corruption; a version above 2 is Error::UnsupportedVersion"
    let mut v0 = good.clone();
    v0[12] = 0;
    assert!(matches!(WalHeader::decode(&v0), Some(Err(Error::Corruption(_)))));
    assert!(matches!(WalHeader::decode(&good[..40]), Some(Err(Error::Corruption(_)))));
    assert!(matches!(WalHeader::decode(&good[..32]), Some(Err(Error::Corruption(_)))), "v2 in 32 bytes");
    let mut v3 = good.clone();
    v3[12] = 3;
    assert!(matches!(WalHeader::decode(&v3), Some(Err(Error::UnsupportedVersion { what: "WAL", .. }))));
    // "A write batch starts with its 56-bit first sequence number, so no batch starts with the
    // marker."
    assert!(WalHeader::decode(&unhex("0100000000000000 00000000")).is_none());
}

// ---- A real WAL: header record, then write batches --------------------------------------

/// Opens a fresh database on an in-memory filesystem, writes `batches` and returns the logical
/// records of its WAL.
fn wal_records_after(batches: Vec<(WriteOptions, WriteBatch)>) -> Vec<Vec<u8>> {
    let dir = MemDir::new();
    let opts = Options {
        fs: Arc::new(dir.fs.clone()),
        merge_operator: merge::builtin("uint64add"),
        info_log: false,
        ..Options::default()
    };
    let db_path = dir.path("db");
    let db = Db::open(&db_path, opts).expect("open");
    for (wo, batch) in batches {
        db.write_opt(&wo, batch).expect("write");
    }
    let logs: Vec<String> = dir.names(&db_path).into_iter().filter(|n| n.ends_with(".log")).collect();
    assert_eq!(logs.len(), 1, "one WAL in {:?}", dir.names(&db_path));
    let bytes = dir.fs.contents(&db_path.join(&logs[0])).expect("the WAL");
    drop(db);
    read_log(&bytes)
}

fn sample_batch() -> WriteBatch {
    let mut b = WriteBatch::new();
    b.put(b"key", b"value").delete(b"gone").merge(b"count", 7u64.to_le_bytes()).put(b"long", [b'v'; 200]);
    b
}

#[test]
fn wal_starts_with_a_v2_header_record() {
    let records = wal_records_after(vec![]);
    // "The WAL created at open has prev_wal = 0"
    let golden = "ffffffffffffffff 00000000 02000000
                  0000000000000000 0000000000000000 0000000000000000 0000000000000000";
    assert_eq!(records.len(), 1);
    assert_golden(&records[0], golden);
    assert_eq!(WalHeader::decode(&records[0]).expect("a header").expect("valid"), WalHeader::first());
}

#[test]
fn write_batch_payload_records() {
    let batch = sample_batch();
    let size = batch.size_in_bytes();
    let records = wal_records_after(vec![(WriteOptions::default(), batch)]);
    assert_eq!(records.len(), 2, "header, then one record per write group");
    let golden = "0100000000000001 04000000
                  01 03 6b6579 05 76616c7565
                  00 04 676f6e65
                  02 05 636f756e74 08 0700000000000000
                  01 04 6c6f6e67 c801"
        .to_string()
        + &"76".repeat(200);
    let mut payload = records[1].clone();
    assert_golden(&payload, &golden);
    assert_eq!(payload.len(), size, "size_in_bytes is what the write adds to the WAL");
    // "batch := first_sequence: u64 | count: u32 | record{count}"; the top byte of the sequence
    // holds the record flags in a version-2 WAL.
    assert_eq!(le64(&payload, 0) & ((1 << 56) - 1), 1, "the first write of a new database");
    assert_eq!(le32(&payload, 8), 4);
    // "record := kind: u8 | key_len: varint | key | (value_len: varint | value) -- no value for
    // Delete"; kinds "0 Delete, 1 Put, 2 Merge".
    assert_eq!((ValueKind::Delete as u8, ValueKind::Put as u8, ValueKind::Merge as u8), (0, 1, 2));
    let flags = RecordFlags::take(2, &mut payload);
    assert!(flags.earlier_wals_durable(), "bit 0: no earlier WAL exists");
    assert!(!flags.prefix_durable(), "bit 1: nothing of this WAL was synced yet");
    assert_eq!(payload[7], 0, "readers clear the flag byte before decoding");
    let (first_seq, recs) = decode_payload(&payload).expect("a valid batch");
    assert_eq!(first_seq, 1);
    let expected = vec![
        (0, ValueKind::Put, b"key".to_vec(), b"value".to_vec()),
        (0, ValueKind::Delete, b"gone".to_vec(), Vec::new()),
        (0, ValueKind::Merge, b"count".to_vec(), 7u64.to_le_bytes().to_vec()),
        (0, ValueKind::Put, b"long".to_vec(), vec![b'v'; 200]),
    ];
    assert_eq!(recs, expected);
}

#[test]
fn write_batch_sequences_are_consecutive_and_flags_follow_syncs() {
    let mut one = WriteBatch::new();
    one.put(b"a", b"1");
    let mut two = WriteBatch::new();
    two.delete(b"a");
    let synced = WriteOptions { sync: true, disable_wal: false };
    let records = wal_records_after(vec![
        (WriteOptions::default(), sample_batch()),
        (synced, one),
        (WriteOptions::default(), two),
    ]);
    assert_eq!(records.len(), 4);
    // Records get consecutive sequence numbers: the sample batch took 1..=4.
    assert_golden(&records[2], "0500000000000001 01000000 01 01 61 01 31");
    // The synced write made every earlier record of this WAL durable: bit 1 is set on the next.
    assert_golden(&records[3], "0600000000000003 01000000 00 01 61");
    let mut last = records[3].clone();
    let flags = RecordFlags::take(2, &mut last);
    assert!(flags.earlier_wals_durable() && flags.prefix_durable());
    assert_eq!(decode_payload(&last).expect("valid").0, 6);
}

#[test]
fn write_batch_kind_3_never_appears_in_a_batch() {
    // "Kind 3 (Blob) never appears in a batch": a reader treats it as corruption, like any
    // unknown kind.
    for kind in ["03", "05", "ff"] {
        let payload = unhex(&format!("0100000000000000 01000000 {kind} 01 6b 01 76"));
        assert!(matches!(decode_payload(&payload), Err(Error::Corruption(_))), "kind {kind}");
    }
    let ok = unhex("0100000000000000 01000000 01 01 6b 01 76");
    assert_eq!(decode_payload(&ok).expect("valid").1, [(0, ValueKind::Put, b"k".to_vec(), b"v".to_vec())]);
}

#[test]
fn write_batch_range_deletion_records() {
    // "A range deletion (kind 4, 0x14 with a family) has begin as its key and end as its value";
    // "a reader treats [begin >= end] as a malformed record".
    let range = unhex("0100000000000000 02000000 04 01 6b 01 76 14 02 00 01 61");
    let want = [
        (0, ValueKind::RangeDelete, b"k".to_vec(), b"v".to_vec()),
        (2, ValueKind::RangeDelete, Vec::new(), b"a".to_vec()),
    ];
    assert_eq!(decode_payload(&range).expect("valid").1, want);
    let mut batch = strata::WriteBatch::new();
    batch.delete_range(b"k", b"v").delete_range(b"z", b"a"); // an empty range adds nothing
    let records = wal_records_after(vec![(WriteOptions::default(), batch)]);
    let mut payload = records[1].clone();
    RecordFlags::take(2, &mut payload);
    assert_golden(&payload, "0100000000000000 01000000 04 01 6b 01 76");
    for empty in ["04 01 76 01 6b", "04 01 6b 01 6b"] {
        let payload = unhex(&format!("0100000000000000 01000000 {empty}"));
        assert!(matches!(decode_payload(&payload), Err(Error::Corruption(_))), "{empty}");
    }
}

// ---- MANIFEST record format: one test per tag --------------------------------------------

/// Encodes `edit`, compares with `golden`, and decodes `golden` back to `edit`.
#[track_caller]
fn check_edit(edit: VersionEdit, golden: &str) {
    assert_golden(&edit.encode(), golden);
    assert_eq!(VersionEdit::decode(&unhex(golden)).expect("decodes"), edit);
}

#[test]
fn manifest_empty_edit_is_zero_bytes() {
    check_edit(VersionEdit::default(), "");
}

#[test]
fn manifest_tag_1_comparator() {
    // The name every strata database records (version::set::COMPARATOR_NAME).
    let edit = VersionEdit { comparator: Some("strata.BytewiseComparator".into()), ..VersionEdit::default() };
    check_edit(edit, "01 19 7374726174612e4279746577697365436f6d70617261746f72");
}

#[test]
fn manifest_tag_2_log_number() {
    check_edit(VersionEdit { log_number: Some(300), ..VersionEdit::default() }, "02 ac02");
}

#[test]
fn manifest_tag_3_next_file_number() {
    check_edit(VersionEdit { next_file_number: Some(17), ..VersionEdit::default() }, "03 11");
}

#[test]
fn manifest_tag_4_last_sequence() {
    // A 56-bit sequence number takes 8 varint bytes.
    let edit = VersionEdit { last_sequence: Some((1 << 56) - 1), ..VersionEdit::default() };
    check_edit(edit, "04 ffffffffffffff7f");
}

#[test]
fn manifest_tag_5_compact_cursor() {
    let key = make_internal_key(b"m", 9, ValueKind::Put);
    let edit = VersionEdit { compact_cursors: vec![(2, key)], ..VersionEdit::default() };
    check_edit(edit, "05 02 09 6d 0109000000000000");
}

#[test]
fn manifest_tag_6_deleted_file() {
    let edit = VersionEdit { deleted_files: vec![(1, 12), (6, 200)], ..VersionEdit::default() };
    check_edit(edit, "06 01 0c 06 06 c801");
}

#[test]
fn manifest_tag_7_new_file() {
    let file = FileMeta {
        number: 12,
        file_size: 4096,
        smallest: make_internal_key(b"a", 5, ValueKind::Put),
        largest: make_internal_key(b"z", 9, ValueKind::Delete),
        smallest_seq: 5,
        largest_seq: 9,
        num_entries: 3,
        num_deletions: 1,
        num_range_deletions: 0,
    };
    let edit = VersionEdit { new_files: vec![(1, file)], ..VersionEdit::default() };
    // level, number, file_size, smallest, largest, smallest_seq, largest_seq, num_entries,
    // num_deletions
    check_edit(edit, "07 01 0c 8020 09 61 0105000000000000 09 7a 0009000000000000 05 09 03 01");
}

#[test]
fn manifest_tag_8_new_blob_file() {
    let blob = BlobFileMeta { number: 13, file_size: 1000, total_count: 2, total_bytes: 932 };
    let edit = VersionEdit { new_blob_files: vec![blob], ..VersionEdit::default() };
    check_edit(edit, "08 0d e807 02 a407");
}

#[test]
fn manifest_tag_9_blob_garbage() {
    let edit = VersionEdit { blob_garbage: vec![(13, 1, 466)], ..VersionEdit::default() };
    check_edit(edit, "09 0d 01 d203");
}

#[test]
fn manifest_tag_10_deleted_blob_file() {
    let edit = VersionEdit { deleted_blob_files: vec![13], ..VersionEdit::default() };
    check_edit(edit, "0a 0d");
}

#[test]
fn manifest_fields_are_written_in_table_order() {
    // "The writer emits fields in the order of the table"
    let edit = VersionEdit {
        comparator: Some("c".into()),
        log_number: Some(2),
        next_file_number: Some(3),
        last_sequence: Some(4),
        compact_cursors: vec![(1, make_internal_key(b"k", 1, ValueKind::Put))],
        deleted_files: vec![(0, 6)],
        new_files: vec![(
            0,
            FileMeta {
                number: 7,
                file_size: 8,
                smallest: make_internal_key(b"k", 1, ValueKind::Put),
                largest: make_internal_key(b"k", 1, ValueKind::Put),
                smallest_seq: 1,
                largest_seq: 1,
                num_entries: 1,
                num_deletions: 0,
                num_range_deletions: 0,
            },
        )],
        new_blob_files: vec![BlobFileMeta { number: 9, file_size: 10, total_count: 1, total_bytes: 2 }],
        blob_garbage: vec![(9, 1, 2)],
        deleted_blob_files: vec![9],
        ..VersionEdit::default()
    };
    check_edit(
        edit,
        "01 01 63  02 02  03 03  04 04  05 01 09 6b 0101000000000000  06 00 06
         07 00 07 08 09 6b 0101000000000000 09 6b 0101000000000000 01 01 01 00
         08 09 0a 01 02  09 09 01 02  0a 09",
    );
}

#[test]
fn manifest_reader_accepts_any_order_and_keeps_the_last_single_value() {
    // "A reader accepts the fields in any order; a repeated single-valued field keeps the last
    // value."
    let edit = VersionEdit::decode(&unhex("0a 09  02 05  03 11  02 07")).expect("decodes");
    assert_eq!(edit.log_number, Some(7));
    assert_eq!(edit.next_file_number, Some(17));
    assert_eq!(edit.deleted_blob_files, [9]);
}

#[test]
fn manifest_decoding_rules() {
    let corrupt = |hex: &str| matches!(VersionEdit::decode(&unhex(hex)), Err(Error::Corruption(_)));
    assert!(corrupt("0f 01"), "an unknown tag (15; 11 to 14 are the column-family tags)");
    assert!(corrupt("00"), "tag 0 is not a field");
    assert!(corrupt("06 07 01"), "level 7 is not below NUM_LEVELS");
    assert!(corrupt("07 00 01 01 07 61626364656667 01 61 01 01 01 00"), "a 7-byte smallest key");
    assert!(corrupt("01 02 ff fe"), "a comparator name that is not UTF-8");
    assert!(corrupt("02 80"), "a truncated varint");
    assert!(corrupt("02 8080808080808080 8080 01"), "a varint longer than 10 bytes");
    assert!(corrupt("01 05 6162"), "bytes running past the end");
}

// "Column families" (docs/format.md, write batch and MANIFEST sections).

#[test]
fn batch_record_of_another_family_sets_bit_0x10_and_carries_the_id() {
    // first_sequence 1, count 2: a default-family put, then a put of family 2.
    let payload = unhex("01 00 00 00 00 00 00 00  02 00 00 00  01 01 61 01 31  11 02 01 6b 01 76");
    let (seq, recs) = decode_payload(&payload).expect("decodes");
    assert_eq!(seq, 1);
    assert_eq!(
        recs,
        [
            (0, ValueKind::Put, b"a".to_vec(), b"1".to_vec()),
            (2, ValueKind::Put, b"k".to_vec(), b"v".to_vec())
        ]
    );
    let delete = unhex("05 00 00 00 00 00 00 00  01 00 00 00  10 81 01 01 6b");
    assert_eq!(
        decode_payload(&delete).expect("decodes").1,
        [(129, ValueKind::Delete, b"k".to_vec(), Vec::new())]
    );
}

#[test]
fn manifest_column_family_tags() {
    let create = VersionEdit {
        column_family: 3,
        add_column_family: Some("ab".into()),
        max_column_family: Some(3),
        log_number: Some(9),
        ..VersionEdit::default()
    };
    check_edit(create, "0b 03  0c 02 61 62  0e 03  02 09");
    let drop = VersionEdit { column_family: 3, drop_column_family: true, ..VersionEdit::default() };
    check_edit(drop, "0b 03  0d");
}

#[test]
fn manifest_record_with_edits_of_several_families() {
    // A default-family edit first (no family tag), then each later edit starts with tag 11.
    let group = vec![
        VersionEdit { log_number: Some(5), ..VersionEdit::default() },
        VersionEdit { column_family: 2, log_number: Some(5), ..VersionEdit::default() },
        VersionEdit { column_family: 0, last_sequence: Some(7), ..VersionEdit::default() },
    ];
    let golden = "02 05  0b 02 02 05  0b 00 04 07";
    assert_golden(&VersionEdit::encode_group(&group), golden);
    assert_eq!(VersionEdit::decode_group(&unhex(golden)).expect("decodes"), group);
    assert!(VersionEdit::decode(&unhex(golden)).is_err(), "a record of three edits is not one edit");
}
