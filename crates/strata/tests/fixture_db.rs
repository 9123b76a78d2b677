//! A database written by today's format (`tests/fixtures/v1-db`, see `tests/fixtures/README.md`)
//! must keep opening and reading back exactly what was written, whatever later versions change:
//! tables at L0 and the last level (one LZ4, one Snappy), a blob file with raw and compressed
//! records, tombstones over older values in a lower level, merge operands, a MANIFEST of several
//! edits, and write batches only in the WAL (one of them longer than a 32 KiB log block).
//!
//! The expected contents are rebuilt from [`phases`], the same function `regenerate_fixture`
//! wrote the fixture with. The fixture is never rewritten by the normal tests; a later format
//! gets a new fixture directory next to this one, and this test keeps reading the old one.

// Every strata item these tests use, in one place (internal modules are repointed here).
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use strata::batch::decode_payload;
use strata::fs::default_fs;
use strata::internal::blob::BlobReader;
use strata::internal::iter::InternalIterator;
use strata::internal::sst::format::{read_block, BlockHandle, Footer, FOOTER_LEN};
use strata::internal::sst::Block;
use strata::internal::version::edit::{FileMeta, VersionEdit};
use strata::internal::wal::format::BLOCK_SIZE;
use strata::internal::wal::LogReader;
use strata::internal::wal_header::{RecordFlags, WalHeader};
use strata::{merge, Compression, Db, Options, ReadOptions, WriteBatch, WriteOptions};

/// The fixture directory, in the source tree.
fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1-db")
}

/// The options the fixture must be opened with: the defaults plus the `uint64add` merge
/// operator, which its merge operands were written for (without it, reading a `count/*` key is
/// `Error::Merge`).
fn reader_options() -> Options {
    Options { merge_operator: merge::builtin("uint64add"), ..Options::default() }
}

/// The options the fixture was written with: L0 and L1 tables LZ4, deeper ones Snappy, blob
/// records Snappy (when that saves 12.5%), values of 256 bytes and more in blob files.
fn writer_options() -> Options {
    Options {
        compression_per_level: vec![Compression::Lz4, Compression::Lz4, Compression::Snappy],
        blob_compression: Compression::Snappy,
        min_blob_size: 256,
        info_log: false,
        ..reader_options()
    }
}

// ---- What the fixture holds ---------------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    /// A `uint64add` operand.
    Merge(Vec<u8>, u64),
}

/// What the generator does after writing a phase's batches.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Then {
    /// Flush and compact everything into the last level.
    CompactAll,
    /// Flush the memtable to one L0 table.
    Flush,
    /// Nothing: the batches stay in the WAL only.
    LeaveInWal,
}

struct Phase {
    batches: Vec<(WriteOptions, Vec<Op>)>,
    then: Then,
}

fn key(prefix: &str, i: u64) -> Vec<u8> {
    format!("{prefix}/{i:04}").into_bytes()
}

/// Text that compresses well.
fn text(label: &str, len: usize) -> Vec<u8> {
    label.bytes().cycle().take(len).collect()
}

/// Bytes that do not compress: SplitMix64 written out here, so the fixture depends on no other
/// crate's generator staying the same.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(len);
    out
}

fn in_batches_of(n: usize, ops: Vec<Op>) -> Vec<(WriteOptions, Vec<Op>)> {
    ops.chunks(n).map(|c| (WriteOptions::default(), c.to_vec())).collect()
}

/// The base data, compacted into the last level: small values, blob-sized values (half of them
/// compressible), counters with a base value, and merges collapsed by the compaction.
fn phase_a() -> Phase {
    use Op::*;
    let mut ops: Vec<Op> =
        (0..200).map(|i| Put(key("k", i), format!("value {i} of phase A").into_bytes())).collect();
    for i in 0..16 {
        let len = 300 + 20 * i as usize;
        let value = if i % 2 == 0 { text(&format!("blob {i} of phase A; "), len) } else { noise(i, len) };
        ops.push(Put(key("blob", i), value));
    }
    ops.extend((0..6).map(|i| Put(key("count", i), (100 * i).to_le_bytes().to_vec())));
    ops.extend((0..3).map(|i| Merge(key("count", i), 7)));
    ops.push(Put(vec![0xff, 0x00, 0x01], b"a key that is not text".to_vec()));
    ops.push(Put(b"empty".to_vec(), Vec::new()));
    ops.extend([Put(b"gone".to_vec(), b"deleted before the compaction".to_vec()), Delete(b"gone".to_vec())]);
    Phase { batches: in_batches_of(10, ops), then: Then::CompactAll }
}

/// Blob values that live in a blob file of their own, compacted into the last level.
fn phase_short_lived() -> Phase {
    let ops = (0..4).map(|i| Op::Put(key("temp", i), noise(100 + i, 300))).collect();
    Phase { batches: in_batches_of(8, ops), then: Then::CompactAll }
}

/// Drops blob values by compaction: every value of the short-lived blob file (the MANIFEST
/// deletes the file) and two of the base blob file (the MANIFEST records them as garbage).
fn phase_blob_garbage() -> Phase {
    use Op::*;
    let mut ops: Vec<Op> = (0..4).map(|i| Delete(key("temp", i))).collect();
    ops.extend([Delete(key("blob", 5)), Put(key("blob", 6), b"small now".to_vec())]);
    Phase { batches: in_batches_of(8, ops), then: Then::CompactAll }
}

/// One L0 table over the base: overwrites, tombstones over values in the last level and in the
/// blob file, new blob values (a second blob file), and merge operands over bases below.
fn phase_b() -> Phase {
    use Op::*;
    let mut ops: Vec<Op> = (0..200)
        .step_by(7)
        .map(|i| Put(key("k", i), text(&format!("phase B overwrote {i}; "), 60)))
        .collect();
    ops.extend((1..200).step_by(5).map(|i| Delete(key("k", i))));
    ops.extend([Delete(key("blob", 3)), Delete(key("blob", 4))]);
    ops.extend((16..20).map(|i| Put(key("blob", i), text(&format!("blob {i} of phase B; "), 400))));
    ops.extend((0..10).map(|i| Merge(key("count", i), i + 1)));
    ops.extend([Delete(key("count", 2)), Merge(key("count", 2), 5)]);
    Phase { batches: in_batches_of(8, ops), then: Then::Flush }
}

/// Batches left in the WAL: overwrites and deletes over both tables, merge operands over
/// operands in L0, a merge-only key, and one batch longer than a log block (a FIRST and a LAST
/// fragment), written with sync.
fn phase_c() -> Phase {
    use Op::*;
    let mut ops: Vec<Op> =
        (0..200).step_by(11).map(|i| Put(key("k", i), format!("phase C {i}").into_bytes())).collect();
    ops.extend((2..200).step_by(13).map(|i| Delete(key("k", i))));
    ops.extend([Delete(key("k", 7)), Put(key("blob", 3), text("blob 3 again; ", 500))]);
    ops.extend((0..10).step_by(2).map(|i| Merge(key("count", i), 1000)));
    ops.push(Merge(key("count", 20), 3));
    let mut batches = in_batches_of(8, ops);
    let big = (0..12).map(|i| Put(key("wal-big", i), text(&format!("big value {i}; "), 3000))).collect();
    batches.push((WriteOptions { sync: true, disable_wal: false }, big));
    Phase { batches, then: Then::LeaveInWal }
}

fn phases() -> [Phase; 5] {
    [phase_a(), phase_short_lived(), phase_blob_garbage(), phase_b(), phase_c()]
}

/// Keys to values, in the engine's (bytewise) order.
type Contents = BTreeMap<Vec<u8>, Vec<u8>>;

/// The contents after every phase, and every key ever written.
fn model() -> (Contents, Vec<Vec<u8>>) {
    let mut state = BTreeMap::new();
    let mut written = Vec::new();
    for (_, ops) in phases().into_iter().flat_map(|p| p.batches) {
        for op in ops {
            match op {
                Op::Put(k, v) => {
                    written.push(k.clone());
                    state.insert(k, v);
                }
                Op::Delete(k) => {
                    state.remove(&k);
                }
                Op::Merge(k, operand) => {
                    // uint64add: a missing base counts as zero.
                    let base = state.get(&k).map_or(0, |v: &Vec<u8>| {
                        u64::from_le_bytes(v[..].try_into().expect("merge keys hold 8-byte values"))
                    });
                    written.push(k.clone());
                    state.insert(k, base.wrapping_add(operand).to_le_bytes().to_vec());
                }
            }
        }
    }
    (state, written)
}

// ---- Reading the fixture ------------------------------------------------------------------

/// A copy of the fixture in a fresh temporary directory (opening it writes).
fn copy_of_fixture() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    for entry in std::fs::read_dir(fixture_dir()).expect("the fixture exists") {
        let entry = entry.expect("a directory entry");
        assert!(entry.file_type().expect("file type").is_file(), "only files in the fixture");
        std::fs::copy(entry.path(), tmp.path().join(entry.file_name())).expect("copy");
    }
    tmp
}

fn forward(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.cursor(&ReadOptions::new()).expect("an iterator");
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().expect("no error while iterating");
    out
}

fn backward(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.cursor(&ReadOptions::new()).expect("an iterator");
    let mut out = Vec::new();
    it.seek_to_last();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status().expect("no error while iterating");
    out
}

/// Reads everything and compares with the model: both iteration orders, a point get of every
/// live key, of every deleted key and of keys never written, and seeks between keys.
fn check_contents(db: &Db) {
    let (expected, written) = model();
    let entries: Vec<(Vec<u8>, Vec<u8>)> = expected.clone().into_iter().collect();
    assert_eq!(forward(db), entries, "forward iteration");
    let mut reversed = entries.clone();
    reversed.reverse();
    assert_eq!(backward(db), reversed, "backward iteration");
    let read = ReadOptions::new();
    for (k, v) in &expected {
        assert_eq!(
            db.get_opt(&read, k).expect("get").as_ref(),
            Some(v),
            "get {}",
            String::from_utf8_lossy(k)
        );
    }
    let deleted = written.iter().filter(|k| !expected.contains_key(*k));
    let never: [&[u8]; 6] = [b"a", b"k/", b"k/9999", b"count/0099", b"zzzz", &[0xff, 0x00]];
    let absent: Vec<&[u8]> = deleted.map(Vec::as_slice).chain(never).collect();
    assert!(absent.len() > 40, "the fixture deletes keys over older values");
    for k in absent {
        assert_eq!(db.get_opt(&read, k).expect("get"), None, "absent {}", String::from_utf8_lossy(k));
    }
    let mut it = db.cursor(&read).expect("an iterator");
    for target in [&b"k/0100x"[..], b"blob/", b"count/0020", b"wal", b"\xff"] {
        it.seek(target);
        let want = expected.range(target.to_vec()..).next();
        assert_eq!(
            it.valid().then(|| (it.key().to_vec(), it.value().to_vec())).as_ref(),
            want.map(|(k, v)| (k.clone(), v.clone())).as_ref()
        );
    }
}

#[test]
fn fixture_opens_and_reads_back() {
    let copy = copy_of_fixture();
    let db = Db::open(copy.path(), reader_options()).expect("the v1 fixture opens");
    assert!(db.recovery_report().is_clean(), "{:?}", db.recovery_report());
    check_contents(&db);
    db.close().expect("close");
    // The WAL was replayed into a new table at that open: read again from what it wrote.
    let db = Db::open(copy.path(), reader_options()).expect("reopens");
    check_contents(&db);
}

#[test]
fn fixture_opens_read_only_and_reads_back() {
    let copy = copy_of_fixture();
    let before = names(copy.path());
    let db = Db::open_read_only(copy.path(), reader_options()).expect("the v1 fixture opens read-only");
    check_contents(&db);
    drop(db);
    assert_eq!(names(copy.path()), before, "a read-only open changes nothing");
}

// ---- The fixture holds what it claims -----------------------------------------------------

fn names(dir: &Path) -> Vec<String> {
    let mut names = default_fs().list_dir(dir).expect("list");
    names.sort();
    names
}

/// The logical records of a log file (WAL or MANIFEST).
fn log_records(path: &Path) -> Vec<Vec<u8>> {
    let mut r = LogReader::new(default_fs().open_sequential(path).expect("open"), false);
    std::iter::from_fn(|| r.read_record().expect("an intact log")).collect()
}

/// What the MANIFEST says, replayed edit by edit.
struct ManifestState {
    /// Live tables by (level, number).
    tables: BTreeMap<(u32, u64), FileMeta>,
    /// Live blob file numbers.
    blobs: Vec<u64>,
    /// Records (edits) in the MANIFEST.
    edits: usize,
    /// Edits recording blob garbage (tag 9) and deleting blob files (tag 10).
    blob_garbage_edits: usize,
    deleted_blob_edits: usize,
    log_number: u64,
}

fn replay_manifest(dir: &Path) -> ManifestState {
    let current = std::fs::read_to_string(dir.join("CURRENT")).expect("CURRENT");
    let records = log_records(&dir.join(current.trim_end()));
    let (mut tables, mut blobs, mut log_number) = (BTreeMap::new(), Vec::new(), 0);
    let (mut blob_garbage_edits, mut deleted_blob_edits) = (0, 0);
    for record in &records {
        let edit = VersionEdit::decode(record).expect("a valid edit");
        for (level, number) in &edit.deleted_files {
            tables.remove(&(*level, *number));
        }
        tables.extend(edit.new_files.into_iter().map(|(level, f)| ((level, f.number), f)));
        blob_garbage_edits += usize::from(!edit.blob_garbage.is_empty());
        deleted_blob_edits += usize::from(!edit.deleted_blob_files.is_empty());
        blobs.retain(|n| !edit.deleted_blob_files.contains(n));
        blobs.extend(edit.new_blob_files.iter().map(|b| b.number));
        log_number = edit.log_number.unwrap_or(log_number);
    }
    ManifestState { tables, blobs, edits: records.len(), blob_garbage_edits, deleted_blob_edits, log_number }
}

/// The compression type byte of every data block of a table.
fn data_block_types(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).expect("read the table");
    let footer = Footer::decode(&bytes[bytes.len() - FOOTER_LEN..], 0).expect("a footer");
    let file = default_fs().open_random(path).expect("open");
    let index =
        std::sync::Arc::new(Block::new(read_block(&*file, 0, &footer.index).expect("index")).expect("block"));
    let mut it = index.iter();
    let mut types = Vec::new();
    it.seek_to_first();
    while it.valid() {
        let h = BlockHandle::decode_exact(it.value()).expect("a handle");
        types.push(bytes[(h.offset + h.size) as usize]);
        it.next();
    }
    types
}

#[test]
fn fixture_holds_what_it_claims() {
    let dir = fixture_dir();
    let ManifestState { tables, blobs, edits, blob_garbage_edits, deleted_blob_edits, log_number } =
        replay_manifest(&dir);
    assert!(edits >= 5, "a MANIFEST of several edits ({edits})");
    assert!(
        blob_garbage_edits > 0 && deleted_blob_edits > 0,
        "blob garbage (tag 9), deleted blob files (tag 10)"
    );
    let at = |level: u32| tables.iter().filter(move |((l, _), _)| *l == level).map(|(_, f)| f);
    let l0: Vec<&FileMeta> = at(0).collect();
    let last: Vec<&FileMeta> = at(6).collect();
    assert_eq!((l0.len(), last.len(), tables.len()), (1, 1, 2), "one L0 table over one last-level table");
    assert!(l0[0].num_deletions > 0, "tombstones over values in the lower level");
    let table = |f: &FileMeta| dir.join(format!("{:06}.sst", f.number));
    assert!(data_block_types(&table(l0[0])).contains(&(Compression::Lz4 as u8)), "an LZ4 block at L0");
    assert!(data_block_types(&table(last[0])).contains(&(Compression::Snappy as u8)), "a Snappy block at L6");
    // Blob files with raw and compressed records.
    let mut flags = Vec::new();
    for &n in &blobs {
        let path = dir.join(format!("{n:06}.blob"));
        let bytes = std::fs::read(&path).expect("a live blob file exists");
        let reader =
            BlobReader::open(default_fs().open_random(&path).expect("open"), n).expect("a blob file");
        flags.extend(reader.records().expect("records").iter().map(|(_, p)| bytes[p.offset as usize + 4]));
    }
    assert!(flags.contains(&0) && flags.contains(&1), "raw and compressed blob records: {flags:?}");
    // Batches only in the WAL: one WAL at or above the MANIFEST's log number, holding a header
    // then write batches, one longer than a block.
    let wals: Vec<String> = names(&dir).into_iter().filter(|n| n.ends_with(".log")).collect();
    assert_eq!(wals.len(), 1, "{wals:?}");
    let wal_number: u64 = wals[0].trim_end_matches(".log").parse().expect("a WAL number");
    assert!(wal_number >= log_number, "the WAL is replayed at open");
    let records = log_records(&dir.join(&wals[0]));
    assert!(matches!(WalHeader::decode(&records[0]), Some(Ok(h)) if h.version == 2));
    let batches = phase_c().batches;
    assert_eq!(records.len(), 1 + batches.len(), "the header, then phase C's batches");
    for (record, (_, ops)) in records[1..].iter().zip(&batches) {
        let mut payload = record.clone();
        RecordFlags::take(2, &mut payload);
        assert_eq!(decode_payload(&payload).expect("a batch").1.len(), ops.len());
    }
    assert!(records.iter().any(|r| r.len() > BLOCK_SIZE), "a batch spans two log blocks");
    let total: u64 = names(&dir).iter().map(|n| std::fs::metadata(dir.join(n)).expect("size").len()).sum();
    assert!(total < 200 << 10, "the fixture stays small: {total} bytes");
}

// ---- Writing the fixture ------------------------------------------------------------------

fn write_phase(db: &Db, phase: &Phase) {
    for (wo, ops) in &phase.batches {
        let mut batch = WriteBatch::new();
        for op in ops {
            match op {
                Op::Put(k, v) => batch.put(k, v),
                Op::Delete(k) => batch.delete(k),
                Op::Merge(k, operand) => batch.merge(k, operand.to_le_bytes()),
            };
        }
        db.write_opt(wo, batch).expect("write");
    }
    match phase.then {
        Then::CompactAll => db.compact_range(None, None).expect("compact"),
        Then::Flush => db.flush().expect("flush"),
        Then::LeaveInWal => {}
    }
    assert!(db.wait_for_compactions(None).expect("settles"), "no background work left");
}

/// Writes the fixture. Run it only to create a fixture for a NEW format, in a new directory:
/// `cargo test -p strata-kv --test fixture_db -- --ignored regenerate_fixture`. It refuses to
/// overwrite an existing fixture (delete it by hand first, and only if its format was never
/// released).
#[test]
#[ignore = "writes tests/fixtures/v1-db; see tests/fixtures/README.md"]
fn regenerate_fixture() {
    let dir = fixture_dir();
    assert!(!dir.exists(), "{} exists: a fixture is never rewritten in place", dir.display());
    std::fs::create_dir_all(&dir).expect("create the fixture directory");
    let db = Db::open(&dir, writer_options()).expect("create");
    for phase in phases() {
        write_phase(&db, &phase);
    }
    // A clean close flushes only writes made with disable_wal; phase C stays in the WAL.
    db.close().expect("close");
    println!("wrote {}: {:?}", dir.display(), names(&dir));
}
