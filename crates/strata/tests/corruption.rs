//! Damaged files on disk: single flipped bytes in SST data blocks, blob records, the WAL and the
//! MANIFEST, plus missing, truncated or misnamed files. Every read must return either the right
//! data or `Error::Corruption` (never wrong data, never a panic), the read that touches the damage
//! must report it, and opening must fail cleanly where recovery cannot be trusted.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::internal::blob::BlobReader;
use strata::internal::iter::InternalIterator;
use strata::internal::sst::format::{read_block, BlockHandle, Footer, FOOTER_LEN};
use strata::internal::sst::Block;
use strata::{Compression, Db, Error, Options, ReadOptions, WriteOptions};

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn copy_dir(src: &Path, dst: &Path) {
    fs::create_dir_all(dst).unwrap();
    for entry in fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            fs::copy(entry.path(), dst.join(entry.file_name())).unwrap();
        }
    }
}

/// Files in `dir` whose name ends with `suffix`, sorted.
fn files_with(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().ends_with(suffix))
        .collect();
    out.sort();
    out
}

fn only_file(dir: &Path, suffix: &str) -> PathBuf {
    let files = files_with(dir, suffix);
    assert_eq!(files.len(), 1, "expected exactly one {suffix} file in {}: {files:?}", dir.display());
    files.into_iter().next().unwrap()
}

fn file_number(path: &Path) -> u64 {
    let name = path.file_name().unwrap().to_str().unwrap();
    name.split('.').next().unwrap().parse().unwrap()
}

fn flip_byte(path: &Path, pos: u64, mask: u8) {
    let mut bytes = fs::read(path).unwrap();
    bytes[pos as usize] ^= mask;
    fs::write(path, bytes).unwrap();
}

fn expect_corruption<T: std::fmt::Debug>(r: strata::Result<T>, what: &str) {
    match r {
        Err(Error::Corruption(_)) => {}
        other => panic!("{what}: expected Err(Corruption), got {other:?}"),
    }
}

/// Every key's `get`: the expected value, or Corruption exactly for the keys `is_damaged` names.
fn check_gets(db: &Db, expected: &Entries, is_damaged: &dyn Fn(&[u8]) -> bool, case: &str) -> usize {
    let r = ReadOptions::new();
    let mut failed = 0;
    for (k, v) in expected {
        let got = db.get_opt(&r, k);
        if is_damaged(k) {
            expect_corruption(got, &format!("{case}: get {:?}", String::from_utf8_lossy(k)));
            failed += 1;
        } else {
            match got {
                Ok(Some(got)) => {
                    assert!(&got == v, "{case}: wrong value for {:?}", String::from_utf8_lossy(k))
                }
                other => {
                    panic!("{case}: get {:?} of an undamaged key: {other:?}", String::from_utf8_lossy(k))
                }
            }
        }
    }
    failed
}

/// A full scan in one direction; returns what it yielded and the final status.
fn scan(db: &Db, reverse: bool) -> (Entries, strata::Result<()>) {
    let mut it = db.cursor(&ReadOptions::new()).unwrap();
    if reverse {
        it.seek_to_last();
    } else {
        it.seek_to_first();
    }
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        if reverse {
            it.prev();
        } else {
            it.next();
        }
    }
    let status = it.status();
    (out, status)
}

/// Forward and reverse scans yield only correct entries, in order, stop no later than the first
/// damaged entry in their direction, and end with Corruption (or Ok if nothing is damaged).
fn check_scans(db: &Db, expected: &Entries, first_bad: Option<usize>, last_bad: Option<usize>, case: &str) {
    let (fwd, status) = scan(db, false);
    assert!(
        fwd.len() <= expected.len() && fwd[..] == expected[..fwd.len()],
        "{case}: forward scan yielded wrong data"
    );
    match first_bad {
        Some(i) => {
            assert!(fwd.len() <= i, "{case}: forward scan went past the damaged entry {i}");
            expect_corruption(status, &format!("{case}: forward scan status"));
        }
        None => {
            status.unwrap();
            assert_eq!(fwd.len(), expected.len(), "{case}: forward scan incomplete");
        }
    }
    let (rev, status) = scan(db, true);
    let tail: Entries = expected.iter().rev().take(rev.len()).cloned().collect();
    assert!(rev == tail, "{case}: reverse scan yielded wrong data");
    match last_bad {
        Some(i) => {
            assert!(rev.len() < expected.len() - i, "{case}: reverse scan went past the damaged entry {i}");
            expect_corruption(status, &format!("{case}: reverse scan status"));
        }
        None => {
            status.unwrap();
            assert_eq!(rev.len(), expected.len(), "{case}: reverse scan incomplete");
        }
    }
}

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

// ---------------------------------------------------------------------------------------------
// (a) SST data blocks
// ---------------------------------------------------------------------------------------------

/// One data block: its handle, its trailer's compression byte and the user keys in it.
struct DataBlock {
    handle: BlockHandle,
    compression: u8,
    keys: Vec<Vec<u8>>,
}

/// Finds the data blocks of an SST through its footer and index block.
fn data_blocks(path: &Path) -> Vec<DataBlock> {
    let file = strata::fs::default_fs().open_random(path).unwrap();
    let size = file.size();
    let mut buf = vec![0u8; FOOTER_LEN];
    file.read_exact_at(size - FOOTER_LEN as u64, &mut buf).unwrap();
    let footer = Footer::decode(&buf, 0).unwrap();
    let index = Arc::new(Block::new(read_block(&*file, 0, &footer.index).unwrap()).unwrap());
    let mut it = index.iter();
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        let handle = BlockHandle::decode_exact(it.value()).unwrap();
        let mut trailer = [0u8; 1];
        file.read_exact_at(handle.offset + handle.size, &mut trailer).unwrap();
        let block = Arc::new(Block::new(read_block(&*file, 0, &handle).unwrap()).unwrap());
        let mut b = block.iter();
        b.seek_to_first();
        let mut keys = Vec::new();
        while b.valid() {
            keys.push(strata::internal::key::user_key(b.key()).to_vec());
            b.next();
        }
        b.status().unwrap();
        out.push(DataBlock { handle, compression: trailer[0], keys });
        it.next();
    }
    it.status().unwrap();
    out
}

fn sst_value(i: usize) -> Vec<u8> {
    let seed = format!("value-{i:06}-");
    seed.as_bytes().iter().copied().cycle().take(20 + (i * 7) % 80).collect()
}

fn sst_corruption(compression: Compression) {
    let opts = || Options {
        min_blob_size: 0,
        write_buffer_size: 256 << 10,
        compression_per_level: vec![compression],
        ..Options::default()
    };
    let root = tempfile::tempdir().unwrap();
    let pristine = root.path().join("pristine");
    let expected: Entries = (0..3000).map(|i| (format!("key{i:06}").into_bytes(), sst_value(i))).collect();
    {
        let db = Db::open(&pristine, opts()).unwrap();
        let w = WriteOptions::default();
        for (k, v) in &expected {
            db.put_opt(&w, k, v).unwrap();
        }
        db.compact_range(None, None).unwrap();
        db.close().unwrap();
    }
    let sst = only_file(&pristine, ".sst");
    let sst_name = sst.file_name().unwrap().to_owned();
    let blocks = data_blocks(&sst);
    assert!(blocks.len() >= 20, "expected many data blocks, got {}", blocks.len());
    assert_eq!(blocks.iter().map(|b| b.keys.len()).sum::<usize>(), expected.len());
    if compression != Compression::None {
        assert!(
            blocks.iter().any(|b| b.compression == compression as u8),
            "no data block is stored with {compression:?}"
        );
    }
    let data_end = blocks.last().unwrap().handle.end();
    let index_of: BTreeMap<Vec<u8>, usize> =
        expected.iter().enumerate().map(|(i, (k, _))| (k.clone(), i)).collect();

    // Every 80th of the data region, plus every byte of the first block's trailer and the first
    // and last bytes of the data region.
    let mut positions: Vec<u64> = (0..80).map(|n| n * data_end / 80 + 13).collect();
    let first = blocks[0].handle;
    positions.extend(first.offset + first.size..first.end());
    positions.extend([0, data_end - 1]);
    positions.sort_unstable();
    positions.dedup();

    for (n, &pos) in positions.iter().enumerate() {
        let mask = [0x01u8, 0x80, 0xff, 0x5a][n % 4];
        let case = format!("{compression:?} sst byte {pos} ^ {mask:#04x}");
        let block = blocks
            .iter()
            .find(|b| b.handle.offset <= pos && pos < b.handle.end())
            .unwrap_or_else(|| panic!("{case}: position outside every data block"));
        let first_bad = index_of[&block.keys[0]];
        let last_bad = index_of[block.keys.last().unwrap()];

        let dir = root.path().join(format!("case{n}"));
        copy_dir(&pristine, &dir);
        flip_byte(&dir.join(&sst_name), pos, mask);
        let db = Db::open(&dir, opts()).unwrap_or_else(|e| panic!("{case}: open failed: {e}"));
        let failed = check_gets(&db, &expected, &|k| block.keys.iter().any(|b| b == k), &case);
        assert!(failed > 0, "{case}: no read reported the damage");
        check_scans(&db, &expected, Some(first_bad), Some(last_bad), &case);
        drop(db);
        fs::remove_dir_all(&dir).unwrap();
    }

    // Damage after the data blocks (filter, properties and index blocks, footer): the table can
    // no longer be opened, so every read of it fails; a flipped footer version byte may also be
    // reported as a newer format version.
    let file_size = fs::metadata(&sst).unwrap().len();
    let mut meta_positions: Vec<u64> = (0..24).map(|n| data_end + n * (file_size - data_end) / 24).collect();
    meta_positions.extend([file_size - 76, file_size - 20, file_size - 16, file_size - 12, file_size - 1]);
    for (n, &pos) in meta_positions.iter().enumerate() {
        let mask = [0x01u8, 0x80, 0xff][n % 3];
        let case = format!("{compression:?} sst meta byte {pos} ^ {mask:#04x}");
        let dir = root.path().join(format!("meta{n}"));
        copy_dir(&pristine, &dir);
        flip_byte(&dir.join(&sst_name), pos, mask);
        let db = Db::open(&dir, opts()).unwrap_or_else(|e| panic!("{case}: open failed: {e}"));
        let bad = |r: &strata::Result<()>| {
            matches!(r, Err(Error::Corruption(_) | Error::UnsupportedVersion { .. }))
        };
        for (k, _) in expected.iter().step_by(97) {
            let r = db.get(k);
            assert!(bad(&r.as_ref().map(|_| ()).map_err(Error::duplicate)), "{case}: get returned {r:?}");
        }
        for reverse in [false, true] {
            let (got, status) = scan(&db, reverse);
            assert!(got.is_empty() && bad(&status), "{case}: scan yielded {} entries, {status:?}", got.len());
        }
        drop(db);
        fs::remove_dir_all(&dir).unwrap();
    }

    // The pristine copy still reads back completely.
    let db = Db::open(&pristine, opts()).unwrap();
    assert_eq!(check_gets(&db, &expected, &|_| false, "pristine"), 0);
    check_scans(&db, &expected, None, None, "pristine");
}

#[test]
fn sst_data_block_damage_is_reported_uncompressed() {
    sst_corruption(Compression::None);
}

#[test]
fn sst_data_block_damage_is_reported_snappy() {
    sst_corruption(Compression::Snappy);
}

// ---------------------------------------------------------------------------------------------
// (b) blob files
// ---------------------------------------------------------------------------------------------

fn blob_value(i: usize, compressible: bool, rng: &mut Lcg) -> Vec<u8> {
    if compressible {
        let seed = format!("blob-{i:05}:");
        seed.as_bytes().iter().copied().cycle().take(200).collect()
    } else {
        (0..200).map(|_| rng.next() as u8).collect()
    }
}

fn blob_corruption(compression: Compression, compressible: bool) {
    let opts = || Options {
        min_blob_size: 64,
        blob_compression: compression,
        write_buffer_size: 1 << 20,
        ..Options::default()
    };
    let root = tempfile::tempdir().unwrap();
    let pristine = root.path().join("pristine");
    let mut rng = Lcg(7);
    let expected: Entries = (0..400)
        .map(|i| (format!("bkey{i:05}").into_bytes(), blob_value(i, compressible, &mut rng)))
        .collect();
    {
        let db = Db::open(&pristine, opts()).unwrap();
        let w = WriteOptions::default();
        for (k, v) in &expected {
            db.put_opt(&w, k, v).unwrap();
        }
        db.flush().unwrap();
        db.close().unwrap();
    }
    let blob = only_file(&pristine, ".blob");
    let blob_name = blob.file_name().unwrap().to_owned();
    let reader =
        BlobReader::open(strata::fs::default_fs().open_random(&blob).unwrap(), file_number(&blob)).unwrap();
    let records = reader.records().unwrap();
    assert_eq!(records.len(), expected.len(), "every value should be in the blob file");
    let index_of: BTreeMap<Vec<u8>, usize> =
        expected.iter().enumerate().map(|(i, (k, _))| (k.clone(), i)).collect();

    let mut n = 0;
    for (key, ptr) in records.iter().step_by(37) {
        // The checksum, the flags byte, the key, the middle and the last byte of the record.
        for delta in [1, 4, 6 + key.len() as u64 / 2, ptr.size / 2, ptr.size - 1] {
            let pos = ptr.offset + delta;
            let mask = [0x01u8, 0x80, 0xff][n % 3];
            let case = format!(
                "{compression:?} blob record of {:?} byte {delta} ^ {mask:#04x}",
                String::from_utf8_lossy(key)
            );
            let dir = root.path().join(format!("case{n}"));
            n += 1;
            copy_dir(&pristine, &dir);
            flip_byte(&dir.join(&blob_name), pos, mask);
            let db = Db::open(&dir, opts()).unwrap_or_else(|e| panic!("{case}: open failed: {e}"));
            let failed = check_gets(&db, &expected, &|k| k == key.as_slice(), &case);
            assert_eq!(failed, 1, "{case}");
            let i = index_of[key];
            check_scans(&db, &expected, Some(i), Some(i), &case);
            drop(db);
            fs::remove_dir_all(&dir).unwrap();
        }
    }

    // A damaged header makes every blob read fail, and nothing else.
    for pos in [0u64, 9, 12, 17, 29] {
        let case = format!("{compression:?} blob header byte {pos}");
        let dir = root.path().join(format!("header{pos}"));
        copy_dir(&pristine, &dir);
        flip_byte(&dir.join(&blob_name), pos, 0x40);
        let db = Db::open(&dir, opts()).unwrap_or_else(|e| panic!("{case}: open failed: {e}"));
        for (k, _) in expected.iter().step_by(50) {
            match db.get(k) {
                Err(Error::Corruption(_) | Error::UnsupportedVersion { .. }) => {}
                other => panic!("{case}: expected Corruption, got {other:?}"),
            }
        }
        let (fwd, status) = scan(&db, false);
        assert!(fwd.is_empty(), "{case}");
        assert!(
            matches!(status, Err(Error::Corruption(_) | Error::UnsupportedVersion { .. })),
            "{case}: {status:?}"
        );
        drop(db);
        fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn blob_record_damage_is_reported_uncompressed() {
    blob_corruption(Compression::None, false);
}

#[test]
fn blob_record_damage_is_reported_snappy() {
    blob_corruption(Compression::Snappy, true);
}

// ---------------------------------------------------------------------------------------------
// (c) WAL
// ---------------------------------------------------------------------------------------------

/// A physical log record: its file offset, payload length and type.
#[derive(Debug, Clone, Copy)]
struct LogRecord {
    offset: u64,
    len: u64,
    kind: u8,
}

/// Walks the physical records of a log file (docs/format-wal.md); stops at the first zero type.
fn log_records(bytes: &[u8]) -> Vec<LogRecord> {
    const BLOCK: usize = 32768;
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let left_in_block = BLOCK - pos % BLOCK;
        if left_in_block < 7 {
            pos += left_in_block;
            continue;
        }
        if pos + 7 > bytes.len() {
            break;
        }
        let len = u16::from_le_bytes([bytes[pos + 4], bytes[pos + 5]]) as usize;
        let kind = bytes[pos + 6];
        if kind == 0 {
            break;
        }
        out.push(LogRecord { offset: pos as u64, len: len as u64, kind });
        pos += 7 + len;
    }
    out
}

fn wal_opts() -> Options {
    // Values stay inline and nothing is flushed while writing.
    Options { write_buffer_size: 64 << 20, min_blob_size: 0, ..Options::default() }
}

fn wal_entries(n: usize) -> Entries {
    (0..n)
        .map(|i| {
            (format!("wal{i:05}").into_bytes(), format!("payload of record {i} ").repeat(4).into_bytes())
        })
        .collect()
}

/// Writes `expected` one synced put per record and drops the handle; returns the WAL and the
/// records after its header.
fn write_wal(dir: &Path, expected: &Entries) -> (PathBuf, Vec<LogRecord>) {
    {
        let db = Db::open(dir, wal_opts()).unwrap();
        let sync = WriteOptions { sync: true, disable_wal: false };
        for (k, v) in expected {
            db.put_opt(&sync, k, v).unwrap();
        }
        drop(db);
    }
    assert!(files_with(dir, ".sst").is_empty(), "nothing should have been flushed");
    let wal = only_file(dir, ".log");
    let bytes = fs::read(&wal).unwrap();
    let mut records = log_records(&bytes);
    let header = records.remove(0);
    assert_eq!((header.kind, header.len), (1, 48), "the WAL opens with its header record");
    assert_eq!(records.len(), expected.len(), "one FULL record per synced put");
    for (r, (k, _)) in records.iter().zip(expected) {
        assert_eq!(r.kind, 1, "FULL record expected");
        let payload = &bytes[(r.offset + 7) as usize..(r.offset + 7 + r.len) as usize];
        assert!(payload.windows(k.len()).any(|w| w == k.as_slice()), "record does not hold its key");
    }
    (wal, records)
}

#[test]
fn wal_mid_log_damage_fails_open_unless_skipping() {
    let dir = tempfile::tempdir().unwrap();
    let expected = wal_entries(200);
    let (wal, records) = write_wal(dir.path(), &expected);
    let damaged = 100;
    let r = records[damaged];
    flip_byte(&wal, r.offset + 7 + r.len / 2, 0x20);

    for attempt in 0..2 {
        match Db::open(dir.path(), wal_opts()) {
            Err(Error::Corruption(m)) => assert!(m.contains("WAL"), "message should name the WAL: {m}"),
            other => panic!("open #{attempt} of a damaged WAL: expected Corruption, got {other:?}"),
        }
    }

    let skipping = Options { skip_corrupted_wal_records: true, ..wal_opts() };
    let db = Db::open(dir.path(), skipping).unwrap();
    let ro = ReadOptions::new();
    for (i, (k, v)) in expected.iter().enumerate() {
        let got = db.get_opt(&ro, k).unwrap();
        if i == damaged {
            assert_eq!(got, None, "the damaged record must be dropped, not misread");
        } else {
            assert_eq!(got.as_ref(), Some(v), "record {i} lost");
        }
    }
    let survivors: Entries =
        expected.iter().enumerate().filter(|&(i, _)| i != damaged).map(|(_, e)| e.clone()).collect();
    check_scans(&db, &survivors, None, None, "after skipping");
    db.close().unwrap();

    // The recovered data was made durable; a normal open no longer trips over the old WAL.
    let db = Db::open(dir.path(), wal_opts()).unwrap();
    check_scans(&db, &survivors, None, None, "reopen after skipping");
}

#[test]
fn wal_torn_tail_keeps_every_earlier_record() {
    let dir = tempfile::tempdir().unwrap();
    let expected = wal_entries(50);
    let (wal, records) = write_wal(dir.path(), &expected);
    let last = *records.last().unwrap();
    for cut in [last.offset + 3, last.offset + 7 + last.len / 2, last.offset + 7 + last.len - 1] {
        let case = format!("WAL cut at {cut}");
        let copy = dir.path().join(format!("cut{cut}"));
        copy_dir(dir.path(), &copy);
        let f = fs::OpenOptions::new().write(true).open(copy.join(wal.file_name().unwrap())).unwrap();
        f.set_len(cut).unwrap();
        drop(f);
        let db = Db::open(&copy, wal_opts()).unwrap_or_else(|e| panic!("{case}: {e}"));
        let ro = ReadOptions::new();
        for (k, v) in &expected[..expected.len() - 1] {
            assert_eq!(db.get_opt(&ro, k).unwrap().as_ref(), Some(v), "{case}");
        }
        assert_eq!(db.get_opt(&ro, &expected.last().unwrap().0).unwrap(), None, "{case}");
        check_scans(&db, &expected[..expected.len() - 1].to_vec(), None, None, &case);
    }
}

// ---------------------------------------------------------------------------------------------
// (d) MANIFEST and CURRENT, (e) listed files
// ---------------------------------------------------------------------------------------------

/// A closed database with three flushed SSTs and a blob file.
fn flushed_db(dir: &Path) -> Entries {
    let opts = Options { min_blob_size: 64, ..Options::default() };
    let db = Db::open(dir, opts).unwrap();
    let w = WriteOptions::default();
    let mut expected = Entries::new();
    for round in 0..3 {
        for i in 0..50 {
            let k = format!("m{round}-{i:03}").into_bytes();
            let v = vec![b'a' + (i % 26) as u8; if i % 2 == 0 { 10 } else { 100 }];
            db.put_opt(&w, &k, &v).unwrap();
            expected.push((k, v));
        }
        db.flush().unwrap();
    }
    db.close().unwrap();
    expected
}

fn current_manifest(dir: &Path) -> PathBuf {
    let name = fs::read_to_string(dir.join("CURRENT")).unwrap();
    dir.join(name.trim_end())
}

#[test]
fn manifest_checksum_failure_fails_open() {
    let dir = tempfile::tempdir().unwrap();
    let expected = flushed_db(dir.path());
    let manifest = current_manifest(dir.path());
    let records = log_records(&fs::read(&manifest).unwrap());
    assert!(records.len() >= 3, "expected several MANIFEST records, got {records:?}");
    // A record in the middle, with intact records after it.
    let r = records[records.len() / 2];
    assert!(r.len > 0);
    let pristine = dir.path().join("pristine");
    copy_dir(dir.path(), &pristine);
    for (n, pos) in [r.offset + 7 + r.len / 2, r.offset, r.offset + 7].into_iter().enumerate() {
        copy_dir(&pristine, dir.path());
        flip_byte(&manifest, pos, 0x10);
        let res = Db::open(dir.path(), Options::default());
        expect_corruption(res, &format!("MANIFEST damage #{n} at byte {pos}"));
    }
    // With the MANIFEST restored the database is intact.
    copy_dir(&pristine, dir.path());
    let db = Db::open(dir.path(), Options::default()).unwrap();
    check_scans(&db, &expected, None, None, "restored MANIFEST");
}

#[test]
fn missing_current_with_manifests_present_fails_open() {
    let dir = tempfile::tempdir().unwrap();
    flushed_db(dir.path());
    fs::remove_file(dir.path().join("CURRENT")).unwrap();
    expect_corruption(Db::open(dir.path(), Options::default()), "open without CURRENT");
    // Not even create_if_missing may start an empty database over the old files.
    expect_corruption(
        Db::open(dir.path(), Options { create_if_missing: true, ..Options::default() }),
        "open without CURRENT, create_if_missing",
    );
    assert!(!dir.path().join("CURRENT").exists(), "a failed open must not write CURRENT");
}

#[test]
fn current_naming_a_missing_or_bogus_manifest_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    flushed_db(dir.path());
    fs::write(dir.path().join("CURRENT"), "MANIFEST-999999\n").unwrap();
    match Db::open(dir.path(), Options::default()) {
        Err(Error::Io { .. } | Error::Corruption(_)) => {}
        other => panic!("CURRENT naming a missing MANIFEST: {other:?}"),
    }
    for bogus in ["", "MANIFEST-000001", "garbage\n", "../MANIFEST-000001\n", "000001.sst\n", "\u{0}\u{ff}"] {
        fs::write(dir.path().join("CURRENT"), bogus).unwrap();
        match Db::open(dir.path(), Options::default()) {
            Err(Error::Io { .. } | Error::Corruption(_)) => {}
            other => panic!("CURRENT = {bogus:?}: {other:?}"),
        }
    }
}

#[test]
fn missing_or_truncated_listed_files_fail_open() {
    let dir = tempfile::tempdir().unwrap();
    let expected = flushed_db(dir.path());
    let pristine = dir.path().join("pristine");
    copy_dir(dir.path(), &pristine);
    let ssts = files_with(dir.path(), ".sst");
    assert_eq!(ssts.len(), 3);
    let blobs = files_with(dir.path(), ".blob");
    assert!(!blobs.is_empty());

    for victim in ssts.iter().chain(&blobs) {
        let name = victim.file_name().unwrap().to_str().unwrap();
        let len = fs::metadata(victim).unwrap().len();

        let case_dir = dir.path().join(format!("missing-{name}"));
        copy_dir(&pristine, &case_dir);
        fs::remove_file(case_dir.join(name)).unwrap();
        expect_corruption(Db::open(&case_dir, Options::default()), &format!("{name} missing"));

        for cut in [0, len / 2, len - 1] {
            let case_dir = dir.path().join(format!("cut{cut}-{name}"));
            copy_dir(&pristine, &case_dir);
            let f = fs::OpenOptions::new().write(true).open(case_dir.join(name)).unwrap();
            f.set_len(cut).unwrap();
            drop(f);
            expect_corruption(Db::open(&case_dir, Options::default()), &format!("{name} cut to {cut} bytes"));
        }
    }
    let db = Db::open(&pristine, Options::default()).unwrap();
    check_scans(&db, &expected, None, None, "pristine");
}

// ---------------------------------------------------------------------------------------------
// A database with column families, opened by a build without them
// ---------------------------------------------------------------------------------------------

/// Every record of the current MANIFEST of `dir`.
fn manifest_records(dir: &Path) -> Vec<Vec<u8>> {
    let fs = Options::default().fs;
    let mut reader =
        strata::internal::wal::LogReader::new(fs.open_sequential(&current_manifest(dir)).unwrap(), false);
    let mut out = Vec::new();
    while let Some(rec) = reader.read_record().unwrap() {
        out.push(rec.to_vec());
    }
    out
}

/// A build without column families knew MANIFEST tags 1 to 10 and refused any other tag as
/// corruption. Without that build at hand, this checks the two halves of "it refuses a database
/// with families": every MANIFEST record that says anything about a family (creation, drop, a
/// non-default family's files or log number, a group of edits) meets the old decoder with a
/// family tag (11 to 14) where it expects a tag, and this decoder refuses an unknown tag at that
/// very byte as `Corruption` (15 stands in for 11 to 14, unknown to the old build as 15 is to
/// this one; golden_log's `manifest_decoding_rules` pins the rule).
#[test]
fn a_manifest_with_families_is_refused_by_a_decoder_without_them() {
    use strata::internal::version::edit::VersionEdit;
    let dir = tempfile::tempdir().unwrap();
    let db =
        Db::open_cf(dir.path(), Options::default(), [("a", Options::default()), ("b", Options::default())])
            .unwrap();
    for name in ["default", "a", "b"] {
        let cf = db.cf(name).unwrap();
        db.put_cf(&cf, b"k", name.as_bytes()).unwrap();
    }
    db.flush_cf(&db.cf("a").unwrap()).unwrap();
    // With `a` empty now, the default family's flush carries `a`'s log number in a group.
    db.flush().unwrap();
    db.create_cf("c", Options::default()).unwrap();
    db.drop_cf(&db.cf("b").unwrap()).unwrap();
    db.close().unwrap();

    let (mut family_records, mut groups) = (0, 0);
    for rec in manifest_records(dir.path()) {
        let edits = VersionEdit::decode_group(&rec).unwrap();
        assert_eq!(VersionEdit::encode_group(&edits), rec, "records are exactly their encoding");
        let e = &edits[0];
        let about_families = edits.len() > 1
            || e.column_family != 0
            || e.add_column_family.is_some()
            || e.drop_column_family
            || e.max_column_family.is_some();
        if !about_families {
            continue;
        }
        family_records += 1;
        // Where the old decoder meets its first family tag: the record's first tag, or the
        // COLUMN_FAMILY tag that starts the second edit of a group.
        let at = if (11..=14).contains(&rec[0]) { 0 } else { e.encode().len() };
        groups += usize::from(at > 0);
        assert!(edits.len() > 1 || at == 0, "a family record whose first tag ({}) is not 11 to 14", rec[0]);
        assert_eq!(rec[at], 11, "a group's second edit starts with COLUMN_FAMILY");
        let mut unknown = rec.clone();
        unknown[at] = 15;
        assert!(
            matches!(VersionEdit::decode_group(&unknown), Err(Error::Corruption(_))),
            "an unknown tag at byte {at} must be corruption"
        );
    }
    assert!(family_records >= 3, "creation, flush and drop records: found {family_records}");
    assert!(groups >= 1, "the default family's flush logs idle families' log numbers in a group");
}
