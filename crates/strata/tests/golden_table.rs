//! Golden bytes of the SST format (docs/format.md, "strata SST file format (version 1)"): data
//! blocks with restarts, block trailers, block handles, the index, filter and properties blocks,
//! the footer, and the empty-table rule, as written today.
//!
//! One small table is pinned whole ([`GOLDEN_TABLE`]); the other tests take it apart with
//! decoders written from docs/format.md and check each block against the spec, then encode the
//! same structure again with strata's own encoder. A failure here means the bytes on disk
//! changed: that needs a new `format_version` and a reader for version 1, not a new literal,
//! unless only a choice the format leaves to the writer moved (where restart points fall: the
//! literal changed on 2026-11-30 when data blocks began to stretch runs of short entries).

mod golden_support;

// Every strata item these tests use, in one place (internal modules are repointed here).
use std::sync::Arc;

use golden_support::{assert_golden, le32, le64, spec_masked_crc, spec_varint, unhex, MemDir};
use strata::internal::blob::BlobPointer;
use strata::internal::iter::InternalIterator;
use strata::internal::key::{make_internal_key, pack_trailer, ValueKind, KIND_FOR_SEEK, MAX_SEQ};
use strata::internal::sst::bloom::{hash64, BloomBuilder, BloomFilter};
use strata::internal::sst::format::{
    block_trailer, read_block, BlockHandle, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN, MAGIC,
};
use strata::internal::sst::{
    Block, BlockBuilder, Table, TableBuilder, TableBuilderOptions, TableProperties, FORMAT_VERSION,
};
use strata::{Compression, Error};

fn ik(user_key: &[u8], seq: u64, kind: ValueKind) -> Vec<u8> {
    make_internal_key(user_key, seq, kind)
}

/// Six entries of every kind, two versions of one key among them.
fn sample_entries() -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut pointer = Vec::new();
    BlobPointer { file_number: 9, offset: 32, size: 20 }.encode(&mut pointer);
    vec![
        (ik(b"apple", 3, ValueKind::Put), b"red".to_vec()),
        (ik(b"apricot", 4, ValueKind::Put), b"orange".to_vec()),
        (ik(b"cherry", 6, ValueKind::Delete), Vec::new()),
        (ik(b"cherry", 2, ValueKind::Put), b"dark".to_vec()),
        (ik(b"date", 7, ValueKind::Merge), 5u64.to_le_bytes().to_vec()),
        (ik(b"fig", 1, ValueKind::Blob), pointer),
    ]
}

/// Small blocks, so the sample table has three data blocks, one of them of three entries.
const SAMPLE_OPTIONS: TableBuilderOptions = TableBuilderOptions {
    block_size: 48,
    restart_interval: 2,
    bloom_bits_per_key: 10,
    compression: Compression::None,
    prefix_extractor: None,
};

/// The sample table written with [`SAMPLE_OPTIONS`], block by block.
const GOLDEN_TABLE: &str = concat!(
    // data block 0: offset 0, 49 bytes: apple@3 Put, apricot@4 Put (shares "ap")
    "00 0d 03 6170706c65 0103000000000000 726564 ",
    "02 0d 06 7269636f74 0104000000000000 6f72616e6765 ",
    "00000000 01000000 ",
    "00 1e71e9f2 ", // trailer: type, masked crc
    // data block 1: offset 54, 63 bytes: cherry@6 Delete, cherry@2 Put, date@7 Merge (one
    // restart: the run of three short entries goes past the interval of 2, docs/format.md)
    "00 0e 00 636865727279 0006000000000000 ",
    "06 08 04 0102000000000000 6461726b ",
    "00 0c 08 64617465 0207000000000000 0500000000000000 ",
    "00000000 01000000 ",
    "00 249fe291 ", // trailer: type, masked crc
    // data block 2: offset 122, 25 bytes: fig@1 Blob (the BlobPointer 9/32/20)
    "00 0b 03 666967 0301000000000000 092014 ",
    "00000000 01000000 ",
    "00 5d958fa2 ", // trailer: type, masked crc
    // filter block: offset 152, 70 bytes: one 64-byte line, 6 probes, kind 1, 1 line
    "0000010000000010000000004100000000000002000008011400002408800004 ",
    "0000001000000040000202000000800000180100004002004000200000010024 ",
    "060101000000 ",
    "00 50da7a86 ", // trailer: type, masked crc
    // properties block: offset 227, 334 bytes: 12 names, one restart each
    "00 19 01 7374726174612e626c6f6f6d5f626974735f7065725f6b6579 0a ",
    "00 12 01 7374726174612e636f6d7072657373696f6e 00 ",
    "00 10 02 7374726174612e646174615f73697a65 9801 ",
    "00 12 01 7374726174612e66696c7465725f73697a65 4b ",
    "00 11 01 7374726174612e696e6465785f73697a65 3f ",
    "00 12 01 7374726174612e6c6172676573745f736571 07 ",
    "00 16 01 7374726174612e6e756d5f646174615f626c6f636b73 03 ",
    "00 14 01 7374726174612e6e756d5f64656c6574696f6e73 01 ",
    "00 12 01 7374726174612e6e756d5f656e7472696573 06 ",
    "00 14 01 7374726174612e7261775f6b65795f6279746573 4f ",
    "00 16 01 7374726174612e7261775f76616c75655f6279746573 18 ",
    "00 13 01 7374726174612e736d616c6c6573745f736571 01 ",
    "00000000 1d000000 33000000 48000000 5e000000 73000000 89000000 a3000000 ",
    "bb000000 d1000000 e9000000 03010000 0c000000 ",
    "00 68359343 ", // trailer: type, masked crc
    // index block: offset 566, 58 bytes: separators "b", "e", "g" and data block handles
    "00 09 02 62 ffffffffffffffff 0031 ",
    "00 09 02 65 ffffffffffffffff 363f ",
    "00 09 02 67 ffffffffffffffff 7a19 ",
    "00000000 0e000000 1c000000 03000000 ",
    "00 f5613df2 ", // trailer: type, masked crc
    // footer: handles (filter, index, properties), zero padding, version, crc, magic
    "980146b6043ae301ce02 ",
    "00000000000000000000000000000000000000000000000000 ",
    "00000000000000000000000000000000000000000000000000 ",
    "01000000 02f64ca3 5354524154415353",
);

fn build_table(entries: &[(Vec<u8>, Vec<u8>)], opts: TableBuilderOptions) -> Vec<u8> {
    let dir = MemDir::new();
    let mut b = TableBuilder::new(dir.create("t.sst"), opts);
    for (k, v) in entries {
        b.add(k, v).expect("add");
    }
    b.finish().expect("finish");
    dir.contents("t.sst")
}

fn open_table(bytes: &[u8]) -> Arc<Table> {
    let dir = MemDir::new();
    dir.store("t.sst", bytes);
    Arc::new(Table::open(dir.open_random("t.sst"), 1, None).expect("open the table"))
}

fn all_entries(table: &Arc<Table>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = table.iter(false);
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().expect("no error");
    out
}

/// The three handles of a footer, read as docs/format.md lays them out.
fn spec_footer_handles(file: &[u8]) -> [BlockHandle; 3] {
    let footer = &file[file.len() - FOOTER_LEN..];
    let mut pos = 0;
    let mut handle =
        || BlockHandle { offset: spec_varint(footer, &mut pos), size: spec_varint(footer, &mut pos) };
    let (filter, index, properties) = (handle(), handle(), handle());
    [filter, index, properties]
}

/// The stored contents of the block at `h` (no trailer).
fn contents<'a>(file: &'a [u8], h: &BlockHandle) -> &'a [u8] {
    &file[h.offset as usize..(h.offset + h.size) as usize]
}

/// One block entry as docs/format.md describes it, with its key rebuilt from the shared prefix.
struct SpecEntry {
    shared: u64,
    key: Vec<u8>,
    value: Vec<u8>,
}

/// A block's entries and restart offsets, decoded as docs/format.md describes them.
fn spec_block(block: &[u8]) -> (Vec<SpecEntry>, Vec<u32>) {
    let n = le32(block, block.len() - 4) as usize;
    let restarts_at = block.len() - 4 - 4 * n;
    let restarts = (0..n).map(|i| le32(block, restarts_at + 4 * i)).collect();
    let (mut entries, mut pos, mut key) = (Vec::new(), 0, Vec::<u8>::new());
    while pos < restarts_at {
        let shared = spec_varint(block, &mut pos);
        let unshared = spec_varint(block, &mut pos) as usize;
        let value_len = spec_varint(block, &mut pos) as usize;
        key.truncate(shared as usize);
        key.extend_from_slice(&block[pos..pos + unshared]);
        pos += unshared;
        entries.push(SpecEntry { shared, key: key.clone(), value: block[pos..pos + value_len].to_vec() });
        pos += value_len;
    }
    assert_eq!(pos, restarts_at, "entries end where the restart array starts");
    (entries, restarts)
}

/// The data block handles, in file order, from the index block.
fn data_handles(file: &[u8]) -> Vec<BlockHandle> {
    let [_, index, _] = spec_footer_handles(file);
    let (entries, _) = spec_block(contents(file, &index));
    entries.iter().map(|e| BlockHandle::decode_exact(&e.value).expect("a handle")).collect()
}

// ---- The whole table --------------------------------------------------------------------

#[test]
fn table_file_bytes() {
    let bytes = build_table(&sample_entries(), SAMPLE_OPTIONS);
    assert_golden(&bytes, GOLDEN_TABLE);
    let table = open_table(&unhex(GOLDEN_TABLE));
    assert_eq!(all_entries(&table), sample_entries());
    let p = table.properties();
    assert_eq!((p.num_entries, p.num_deletions, p.num_data_blocks), (6, 1, 3));
}

#[test]
fn table_file_layout() {
    // "data blocks, filter block, properties block, index block, footer (76 bytes)", each block
    // followed by its 5-byte trailer, back to back.
    let file = unhex(GOLDEN_TABLE);
    let [filter, index, properties] = spec_footer_handles(&file);
    let data = data_handles(&file);
    let mut expected_offset = 0;
    for h in data.iter().chain([&filter, &properties, &index]) {
        assert_eq!(h.offset, expected_offset, "blocks are contiguous in the documented order");
        expected_offset = h.offset + h.size + BLOCK_TRAILER_LEN as u64;
    }
    assert_eq!(expected_offset as usize + FOOTER_LEN, file.len());
    assert_eq!(data.len(), 3);
}

// ---- Block trailer ----------------------------------------------------------------------

#[test]
fn block_trailer_is_type_then_masked_crc() {
    assert_eq!(BLOCK_TRAILER_LEN, 5);
    let trailer = block_trailer(Compression::None, b"contents");
    assert_golden(&trailer, "00 177f53c3");
    // "fixed32 masked_crc // mask(crc32c(contents ++ type_byte))"
    assert_eq!(le32(&trailer, 1), spec_masked_crc(&[b"contents", &[0]]));
    let snappy = block_trailer(Compression::Snappy, b"contents");
    assert_eq!(snappy[0], 1, "1 snappy");
    assert_eq!(le32(&snappy, 1), spec_masked_crc(&[b"contents", &[1]]), "the type byte is covered");
    let codes =
        [Compression::None, Compression::Snappy, Compression::Lz4, Compression::Zstd].map(|c| c as u8);
    assert_eq!(codes, [0, 1, 2, 3]);
}

#[test]
fn block_reader_verifies_the_checksum_and_rejects_unknown_types() {
    // "A reader must verify the checksum before decompressing ... An unknown compression type
    // is corruption."
    let read = |kind: u8, crc: u32| {
        let dir = MemDir::new();
        dir.store("t.sst", &[&b"abc"[..], &[kind], &crc.to_le_bytes()].concat());
        read_block(&*dir.open_random("t.sst"), 1, &BlockHandle { offset: 0, size: 3 })
    };
    assert_eq!(read(0, spec_masked_crc(&[b"abc", &[0]])).expect("valid"), b"abc");
    assert!(matches!(read(0, spec_masked_crc(&[b"abd", &[0]])), Err(Error::Corruption(_))));
    assert!(matches!(read(4, spec_masked_crc(&[b"abc", &[4]])), Err(Error::Corruption(_))));
}

#[test]
fn every_block_of_the_sample_has_a_valid_uncompressed_trailer() {
    // "Filter, properties and index blocks are always stored with type 0."
    let file = unhex(GOLDEN_TABLE);
    let [filter, index, properties] = spec_footer_handles(&file);
    for h in data_handles(&file).iter().chain([&filter, &properties, &index]) {
        let end = (h.offset + h.size) as usize;
        let trailer = &file[end..end + BLOCK_TRAILER_LEN];
        assert_eq!(trailer[0], 0);
        assert_eq!(le32(trailer, 1), spec_masked_crc(&[contents(&file, h), &[0]]));
    }
}

// ---- Block handle -----------------------------------------------------------------------

#[test]
fn block_handle_is_two_varints() {
    let h = BlockHandle { offset: 300, size: 4096 };
    let mut bytes = Vec::new();
    h.encode_to(&mut bytes);
    assert_golden(&bytes, "ac02 8020");
    assert_eq!(BlockHandle::decode_exact(&unhex("ac02 8020")).expect("decodes"), h);
    assert!(BlockHandle::decode_exact(&unhex("ac02 8020 00")).is_err(), "no trailing bytes");
    // "At most 20 bytes."
    let mut max = Vec::new();
    BlockHandle { offset: u64::MAX, size: u64::MAX }.encode_to(&mut max);
    assert_golden(&max, "ffffffffffffffffff01 ffffffffffffffffff01");
    assert_eq!(BlockHandle::MAX_ENCODED_LEN, 20);
}

// ---- Block contents ---------------------------------------------------------------------

#[test]
fn data_block_with_restarts() {
    let mut b = BlockBuilder::new(2);
    let keys = [
        ik(b"apple", 3, ValueKind::Put),
        ik(b"apricot", 4, ValueKind::Put),
        ik(b"banana", 1, ValueKind::Put),
    ];
    for (k, v) in keys.iter().zip([&b"1"[..], b"22", b"333"]) {
        b.add(k, v);
    }
    let golden = "00 0d 01 6170706c65 0103000000000000 31
                  02 0d 02 7269636f74 0104000000000000 3232
                  00 0e 03 62616e616e61 0101000000000000 333333
                  00000000 23000000 02000000";
    assert_golden(b.finish(), golden);
    let bytes = unhex(golden);
    let (entries, restarts) = spec_block(&bytes);
    // "restart[0] = 0"; a new restart point every restart_interval (2) entries, with shared = 0.
    assert_eq!(restarts, [0, 0x23]);
    let shared: Vec<u64> = entries.iter().map(|e| e.shared).collect();
    assert_eq!(shared, [0, 2, 0]);
    let decoded: Vec<Vec<u8>> = entries.into_iter().map(|e| e.key).collect();
    assert_eq!(decoded, keys);
    let block = Arc::new(Block::new(bytes).expect("a valid block"));
    let mut it = block.iter();
    it.seek(&keys[2]);
    assert!(it.valid() && it.key() == keys[2].as_slice() && it.value() == b"333");
}

#[test]
fn empty_block_is_one_restart_at_zero() {
    // "A block with no entries is fixed32(0) fixed32(1) (one restart at offset 0)."
    assert_golden(BlockBuilder::new(16).finish(), "00000000 01000000");
    let block = Arc::new(Block::new(unhex("00000000 01000000")).expect("valid"));
    let mut it = block.iter();
    it.seek_to_first();
    assert!(!it.valid());
    // "Readers must treat as corruption: num_restarts = 0 or a restart array that does not fit"
    assert!(matches!(Block::new(unhex("00000000")), Err(Error::Corruption(_))));
    assert!(matches!(Block::new(unhex("00000000 02000000")), Err(Error::Corruption(_))));
}

#[test]
fn sample_data_blocks() {
    let file = unhex(GOLDEN_TABLE);
    let blocks: Vec<_> = data_handles(&file).iter().map(|h| spec_block(contents(&file, h))).collect();
    // The second block's three short entries are one run: data blocks stretch a run of entries
    // under 512 bytes past the interval (2), up to twice it.
    let restarts: Vec<usize> = blocks.iter().map(|(_, r)| r.len()).collect();
    assert_eq!(restarts, [1, 1, 1]);
    let entries: Vec<(Vec<u8>, Vec<u8>)> =
        blocks.into_iter().flat_map(|(e, _)| e).map(|e| (e.key, e.value)).collect();
    assert_eq!(entries, sample_entries());
    // Internal keys: "user_key ++ fixed64(seq << 8 | kind)", kinds 0 Delete .. 3 Blob.
    let trailers: Vec<u64> = entries.iter().map(|(k, _)| le64(k, k.len() - 8)).collect();
    assert_eq!(trailers, [3 << 8 | 1, 4 << 8 | 1, 6 << 8, 2 << 8 | 1, 7 << 8 | 2, 1 << 8 | 3]);
}

// ---- Index block ------------------------------------------------------------------------

#[test]
fn index_block() {
    let file = unhex(GOLDEN_TABLE);
    let [_, index, _] = spec_footer_handles(&file);
    let (entries, restarts) = spec_block(contents(&file, &index));
    // "always 1 for the index block": every entry is a restart point.
    assert_eq!(restarts.len(), entries.len());
    assert!(entries.iter().all(|e| e.shared == 0));
    // Shortened separators "a[0..=p] with its last byte incremented, followed by the trailer
    // fixed64((2^56 - 1) << 8 | 0xff)": apricot|cherry -> "b", date|fig -> "e", and the last
    // block's "fig" -> "g".
    let seek = pack_trailer(MAX_SEQ, KIND_FOR_SEEK).to_le_bytes();
    assert_eq!(seek, [0xff; 8]);
    let keys: Vec<Vec<u8>> = entries.iter().map(|e| e.key.clone()).collect();
    assert_eq!(keys, [[&b"b"[..], &seek].concat(), [&b"e"[..], &seek].concat(), [&b"g"[..], &seek].concat()]);
    // "value: the block handle of the data block (exactly the handle, no trailing bytes)"
    let mut offset = 0;
    for SpecEntry { value, .. } in &entries {
        let h = BlockHandle::decode_exact(value).expect("exactly one handle");
        assert_eq!(h.offset, offset);
        offset = h.end();
    }
}

// ---- Filter block -----------------------------------------------------------------------

#[test]
fn filter_hash_test_vectors() {
    assert_eq!(hash64(b""), 0xf76d71c069c1cfd4);
    assert_eq!(hash64(b"a"), 0xf7ccef793d63ba76);
    assert_eq!(hash64(b"strata"), 0x9b8350b4dba1dccd);
    assert_eq!(hash64(b"0123456789abcdef!"), 0xe212d068e4fd69b2);
}

/// The spec's probe sequence for hash `h` in a filter of `num_lines` lines: (line, bits).
fn spec_probes(h: u64, num_lines: u32, num_probes: u8) -> (usize, Vec<usize>) {
    let line = ((h & 0xffff_ffff) * u64::from(num_lines)) >> 32;
    let mut p = (h >> 32) as u32;
    let bits = (0..num_probes)
        .map(|_| {
            let bit = (p >> 23) as usize;
            p = p.wrapping_mul(0x9e37_79b9);
            bit
        })
        .collect();
    (line as usize, bits)
}

/// "1-2 → 1, 3 → 2, 4-5 → 3, 6 → 4, 7-8 → 5, 9-10 → 6, 11 → 7, 12-14 → 8, 15-16 → 9, 17-18 → 10,
/// 19-22 → 11, 23-25 → 12, above: clamp(bits/2 - 1, 12, 24)"
fn spec_num_probes(bits: u32) -> u8 {
    let table = [
        (2, 1),
        (3, 2),
        (5, 3),
        (6, 4),
        (8, 5),
        (10, 6),
        (11, 7),
        (14, 8),
        (16, 9),
        (18, 10),
        (22, 11),
        (25, 12),
    ];
    match table.iter().find(|&&(upto, _)| bits <= upto) {
        Some(&(_, probes)) => probes,
        None => (bits / 2 - 1).clamp(12, 24) as u8,
    }
}

#[test]
fn filter_block() {
    let file = unhex(GOLDEN_TABLE);
    let [filter, ..] = spec_footer_handles(&file);
    let bytes = contents(&file, &filter);
    // "u8[num_lines * 64] lines | u8 num_probes | u8 kind | fixed32 num_lines"; 5 distinct user
    // keys at 10 bits per key: ceil(50 / 512) = 1 line, 6 probes, kind 1.
    assert_eq!(bytes.len(), 64 + 6);
    assert_eq!((bytes[64], bytes[65], le32(bytes, 66)), (6, 1, 1));
    let user_keys: [&[u8]; 5] = [b"apple", b"apricot", b"cherry", b"date", b"fig"];
    let mut expected = vec![0u8; 64];
    for key in user_keys {
        let (line, bits) = spec_probes(hash64(key), 1, 6);
        assert_eq!(line, 0);
        for bit in bits {
            // "Bit j of a line is bit j % 8 of byte j / 8 of that line."
            expected[bit / 8] |= 1 << (bit % 8);
        }
    }
    assert_eq!(&bytes[..64], expected.as_slice(), "exactly the probed bits are set");
    let mut builder = BloomBuilder::new(10);
    for key in user_keys {
        builder.add_key(key);
        builder.add_key(key); // "each distinct user key is added once"
    }
    assert_eq!(builder.finish(), bytes);
    let decoded = BloomFilter::decode(bytes.to_vec()).expect("valid");
    assert!(user_keys.iter().all(|k| decoded.may_contain(k)));
}

#[test]
fn filter_num_probes_by_bits_per_key() {
    for bits in 1..=64 {
        let mut b = BloomBuilder::new(bits);
        b.add_key(b"k");
        let bytes = b.finish();
        assert_eq!(bytes[bytes.len() - 6], spec_num_probes(bits), "{bits} bits per key");
        let lines = le32(&bytes, bytes.len() - 4);
        assert_eq!(lines, bits.div_ceil(512), "num_lines = ceil(num_keys * bits_per_key / 512)");
    }
    // "0 means the filter contains nothing"
    assert_golden(&BloomBuilder::new(10).finish(), "06 01 00000000");
    assert!(matches!(BloomFilter::decode(unhex("06 02 00000000")), Err(Error::Corruption(_))), "kind 2");
    // "u8 num_probes // 1..=30"
    assert!(BloomFilter::decode(unhex("1e 01 00000000")).is_ok());
    for probes in ["00", "1f"] {
        let bytes = unhex(&format!("{probes} 01 00000000"));
        assert!(matches!(BloomFilter::decode(bytes), Err(Error::Corruption(_))), "{probes} probes");
    }
}

// ---- Properties block -------------------------------------------------------------------

#[test]
fn properties_block() {
    let file = unhex(GOLDEN_TABLE);
    let [filter, index, properties] = spec_footer_handles(&file);
    let bytes = contents(&file, &properties);
    let (entries, restarts) = spec_block(bytes);
    assert_eq!(restarts.len(), entries.len(), "restart interval 1");
    let data = data_handles(&file);
    let sample = sample_entries();
    let data_size: u64 = data.iter().map(|h| h.size + BLOCK_TRAILER_LEN as u64).sum();
    let key_bytes: usize = sample.iter().map(|(k, _)| k.len()).sum();
    let value_bytes: usize = sample.iter().map(|(_, v)| v.len()).sum();
    let expected: Vec<(&str, u64)> = vec![
        ("strata.bloom_bits_per_key", 10),
        ("strata.compression", 0),
        ("strata.data_size", data_size),
        ("strata.filter_size", filter.size + 5),
        ("strata.index_size", index.size + 5),
        ("strata.largest_seq", 7),
        ("strata.num_data_blocks", 3),
        ("strata.num_deletions", 1),
        ("strata.num_entries", 6),
        ("strata.raw_key_bytes", key_bytes as u64),
        ("strata.raw_value_bytes", value_bytes as u64),
        ("strata.smallest_seq", 1),
    ];
    let found: Vec<(String, u64)> = entries
        .iter()
        .map(|SpecEntry { key: name, value, .. }| {
            let mut pos = 0;
            let v = spec_varint(value, &mut pos);
            assert_eq!(pos, value.len(), "one varint64 each");
            (String::from_utf8(name.clone()).expect("ASCII"), v)
        })
        .collect();
    let expected: Vec<(String, u64)> = expected.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
    assert_eq!(found, expected, "names in bytewise order");
    let decoded = TableProperties::decode(bytes.to_vec()).expect("valid");
    assert_eq!(decoded.encode(), bytes, "re-encodes to the same block");
}

// ---- Footer -----------------------------------------------------------------------------

#[test]
fn footer_is_76_bytes() {
    let footer = Footer {
        filter: BlockHandle { offset: 100, size: 70 },
        index: BlockHandle { offset: 300, size: 40 },
        properties: BlockHandle { offset: 175, size: 120 },
    };
    let golden =
        "64 46 ac02 28 af01 78".to_string() + &"00".repeat(52) + "01000000 ade6a78c 5354524154415353";
    let bytes = footer.encode();
    assert_golden(&bytes, &golden);
    assert_eq!((bytes.len(), FOOTER_LEN), (76, 76));
    // "0 60 handles ... zero-padded to 60 bytes | 60 4 format_version (= 1) | 64 4 masked
    // crc32c of bytes [0, 64) | 68 8 magic = 0x5353415441525453 ("STRATASS" on disk)"
    assert!(bytes[8..60].iter().all(|&b| b == 0));
    // A table without range tombstones is still version 1; the newest readable is 2.
    assert_eq!((le32(&bytes, 60), FORMAT_VERSION), (1, 2));
    assert_eq!(le32(&bytes, 64), spec_masked_crc(&[&bytes[..64]]));
    assert_eq!(&bytes[68..76], b"STRATASS");
    assert_eq!((le64(&bytes, 68), MAGIC), (0x5353415441525453, 0x5353415441525453));
    assert_eq!(Footer::decode(&unhex(&golden), 1).expect("valid"), footer);
}

#[test]
fn sample_footer() {
    let file = unhex(GOLDEN_TABLE);
    let footer = &file[file.len() - FOOTER_LEN..];
    let [filter, index, properties] = spec_footer_handles(&file);
    assert_eq!(Footer::decode(footer, 1).expect("valid"), Footer { filter, index, properties });
    assert_eq!(Footer { filter, index, properties }.encode(), footer);
    // "Future versions keep format_version at file offset size - 16 and the magic in the last 8"
    assert_eq!(le32(&file, file.len() - 16), 1);
    assert_eq!(&file[file.len() - 8..], b"STRATASS");
}

#[test]
fn footer_checks_magic_then_version_then_checksum() {
    let good = Footer {
        filter: BlockHandle::default(),
        index: BlockHandle { offset: 5, size: 6 },
        properties: BlockHandle::default(),
    }
    .encode();
    // Each case sets bytes of a good footer: (offset, new value).
    let decode_with = |changes: &[(usize, u8)]| {
        let mut b = good.clone();
        for &(at, v) in changes {
            b[at] = v;
        }
        Footer::decode(&b, 1)
    };
    let (newer, bad_magic, bad_crc) = ((60, 3), (75, b'X'), (64, good[64] ^ 1));
    assert!(decode_with(&[]).is_ok());
    assert!(matches!(decode_with(&[newer, bad_magic]), Err(Error::Corruption(_))), "magic first");
    let unsupported = decode_with(&[newer, bad_crc]);
    assert!(
        matches!(unsupported, Err(Error::UnsupportedVersion { what: "sst", found: 3, .. })),
        "version before checksum: {unsupported:?}"
    );
    assert!(matches!(decode_with(&[(60, 0)]), Err(Error::Corruption(_))), "version 0");
    assert!(matches!(decode_with(&[bad_crc]), Err(Error::Corruption(_))), "checksum");
}

#[test]
fn table_without_filter_has_an_empty_filter_handle() {
    let opts = TableBuilderOptions { bloom_bits_per_key: 0, ..SAMPLE_OPTIONS };
    let file = build_table(&sample_entries(), opts);
    // "a filter handle with size 0 means no filter"; the writer writes offset 0 too.
    let [filter, index, properties] = spec_footer_handles(&file);
    assert_eq!(filter, BlockHandle { offset: 0, size: 0 });
    assert_golden(&file[file.len() - FOOTER_LEN..][..2], "00 00");
    assert_eq!(properties.offset + properties.size + 5, index.offset, "properties follow the data");
    let table = open_table(&file);
    assert_eq!((table.properties().filter_size, table.properties().bloom_bits_per_key), (0, 0));
    assert_eq!(all_entries(&table), sample_entries());
}

// ---- Compression ------------------------------------------------------------------------

fn compressible_entries() -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..40u64)
        .map(|i| (ik(format!("key{i:03}").as_bytes(), i + 1, ValueKind::Put), b"abcd".repeat(8)))
        .collect()
}

/// Builds a one-data-block table with `compression`; returns (stored block, trailer type, raw
/// block contents as the reader decodes them).
fn first_data_block(compression: Compression, entries: &[(Vec<u8>, Vec<u8>)]) -> (Vec<u8>, u8, Vec<u8>) {
    let opts = TableBuilderOptions {
        block_size: 4096,
        restart_interval: 8,
        bloom_bits_per_key: 10,
        compression,
        prefix_extractor: None,
    };
    let file = build_table(entries, opts);
    assert_eq!(all_entries(&open_table(&file)), entries);
    let h = data_handles(&file)[0];
    let stored = contents(&file, &h).to_vec();
    let kind = file[(h.offset + h.size) as usize];
    assert_eq!(le32(&file, (h.offset + h.size) as usize + 1), spec_masked_crc(&[&stored, &[kind]]));
    let dir = MemDir::new();
    dir.store("t.sst", &file);
    let raw = read_block(&*dir.open_random("t.sst"), 1, &h).expect("reads");
    (stored, kind, raw)
}

#[test]
fn snappy_data_block_is_raw_snappy() {
    let (stored, kind, raw) = first_data_block(Compression::Snappy, &compressible_entries());
    assert_eq!(kind, 1);
    // The raw snappy format starts with the uncompressed length as a varint.
    let mut pos = 0;
    assert_eq!(spec_varint(&stored, &mut pos), raw.len() as u64);
    assert!(stored.len() <= raw.len() - raw.len() / 8);
}

#[test]
fn lz4_data_block_has_its_length_prepended() {
    let (stored, kind, raw) = first_data_block(Compression::Lz4, &compressible_entries());
    assert_eq!(kind, 2);
    // "2 lz4 (block format, u32 LE uncompressed length prepended)"
    assert_eq!(le32(&stored, 0) as usize, raw.len());
}

#[cfg(feature = "zstd")]
#[test]
fn zstd_data_block_is_one_frame() {
    let (stored, kind, _) = first_data_block(Compression::Zstd, &compressible_entries());
    assert_eq!(kind, 3);
    assert_eq!(le32(&stored, 0), 0xfd2f_b528, "the zstd frame magic number");
}

#[test]
fn a_block_that_does_not_shrink_by_an_eighth_is_stored_raw() {
    // Pseudo-random values do not compress: "stored with type 0".
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let entries: Vec<_> = (0..20u64)
        .map(|i| {
            let value: Vec<u8> = (0..40)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            (ik(format!("key{i:03}").as_bytes(), i + 1, ValueKind::Put), value)
        })
        .collect();
    let (stored, kind, raw) = first_data_block(Compression::Snappy, &entries);
    assert_eq!(kind, 0);
    assert_eq!(stored, raw);
}

// ---- Empty tables -----------------------------------------------------------------------

#[test]
fn empty_table_is_refused() {
    // "A table always holds at least one entry; the writer refuses to finish an empty table."
    let dir = MemDir::new();
    let builder = TableBuilder::new(dir.create("t.sst"), SAMPLE_OPTIONS);
    assert!(matches!(builder.finish(), Err(Error::InvalidArgument(_))));
    assert!(dir.contents("t.sst").is_empty(), "nothing was written");
}
