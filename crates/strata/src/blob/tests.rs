//! Blob file round trips, corruption detection and misdirected pointers, over in-memory files.

use std::sync::{Arc, Mutex};

use proptest::prelude::*;

use super::format::{BlobPointer, FOOTER_LEN, HEADER_LEN};
use super::{BlobReader, BlobWriter};
use crate::error::{Error, Result};
use crate::fs::{RandomAccessFile, RecordsHints, WritableFile};
use crate::util::compress::Compression;

#[derive(Clone, Default)]
struct MemFile(Arc<Mutex<Vec<u8>>>);

impl WritableFile for MemFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.0.lock().unwrap().extend_from_slice(data);
        Ok(())
    }
    fn sync_data(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.lock().unwrap().len() as u64
    }
}

struct MemRandom(Vec<u8>);

impl RandomAccessFile for MemRandom {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let start = offset as usize;
        let src = self.0.get(start..start + buf.len()).ok_or_else(|| {
            Error::from(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "read past end"))
        })?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
}

const FILE_NO: u64 = 42;

fn kinds() -> Vec<Compression> {
    let mut k = vec![Compression::None, Compression::Snappy, Compression::Lz4];
    if cfg!(feature = "zstd") {
        k.push(Compression::Zstd);
    }
    k
}

fn entries() -> Vec<(Vec<u8>, Vec<u8>)> {
    let compressible = |n: usize| (0..n).map(|i| b"abcdefgh"[i % 8]).collect::<Vec<u8>>();
    let random = |n: usize, seed: u64| {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect::<Vec<u8>>()
    };
    vec![
        (b"empty-value".to_vec(), Vec::new()),
        (Vec::new(), b"empty key".to_vec()),
        (b"compressible".to_vec(), compressible(10_000)),
        (b"incompressible".to_vec(), random(5_000, 7)),
        (b"big".to_vec(), compressible(3 << 20)),
        (b"small".to_vec(), b"x".to_vec()),
    ]
}

fn write_file(kind: Compression, entries: &[(Vec<u8>, Vec<u8>)]) -> (Vec<u8>, Vec<BlobPointer>) {
    write_file_numbered(FILE_NO, kind, entries)
}

fn write_file_numbered(
    number: u64,
    kind: Compression,
    entries: &[(Vec<u8>, Vec<u8>)],
) -> (Vec<u8>, Vec<BlobPointer>) {
    let file = MemFile::default();
    let mut w = BlobWriter::new(Box::new(file.clone()), number, kind).unwrap();
    let ptrs: Vec<BlobPointer> = entries.iter().map(|(k, v)| w.add(k, v).unwrap()).collect();
    let written = w.file_size();
    let meta = w.finish().unwrap();
    let data = file.0.lock().unwrap().clone();
    assert_eq!(meta.file_size, data.len() as u64);
    assert_eq!(written + FOOTER_LEN as u64, meta.file_size);
    assert_eq!(meta.total_count, entries.len() as u64);
    assert_eq!(meta.total_bytes, ptrs.iter().map(|p| p.size).sum::<u64>());
    (data, ptrs)
}

fn open(data: Vec<u8>) -> Result<BlobReader> {
    BlobReader::open(Arc::new(MemRandom(data)), FILE_NO)
}

#[test]
fn round_trip_with_every_compression() {
    let entries = entries();
    for kind in kinds() {
        let (data, ptrs) = write_file(kind, &entries);
        let r = open(data.clone()).unwrap();
        for ((k, v), p) in entries.iter().zip(&ptrs) {
            assert!(r.get(p, k).unwrap() == *v, "{kind:?} {k:?}");
        }
        let walked = r.records().unwrap();
        assert_eq!(walked, entries.iter().map(|e| e.0.clone()).zip(ptrs.iter().copied()).collect::<Vec<_>>());
        let meta = r.verify().unwrap();
        assert_eq!(meta.file_size, data.len() as u64);
        assert_eq!(meta.total_count, entries.len() as u64);
        if kind != Compression::None {
            // The 3 MiB compressible value must have been stored compressed.
            assert!(ptrs[4].size < 1 << 20, "{kind:?}");
        }
        // The incompressible value is stored raw: record = value + small overhead.
        assert!(ptrs[3].size < 5_000 + 32, "{kind:?}: {}", ptrs[3].size);
    }
}

#[test]
fn empty_file_round_trips() {
    let (data, _) = write_file(Compression::Snappy, &[]);
    assert_eq!(data.len(), HEADER_LEN + FOOTER_LEN);
    let r = open(data).unwrap();
    assert!(r.records().unwrap().is_empty());
    assert_eq!(r.verify().unwrap().total_count, 0);
}

#[test]
fn flipped_byte_in_any_record_is_corruption() {
    let entries: Vec<(Vec<u8>, Vec<u8>)> =
        (0..4).map(|i| (format!("key{i}").into_bytes(), vec![b'a' + i as u8; 300 + i])).collect();
    for kind in [Compression::None, Compression::Snappy, Compression::Lz4] {
        let (data, ptrs) = write_file(kind, &entries);
        for (i, p) in ptrs.iter().enumerate() {
            for at in p.offset..p.offset + p.size {
                let mut bad = data.clone();
                bad[at as usize] ^= 0x20;
                let r = open(bad).unwrap();
                let err = r.get(p, &entries[i].0).unwrap_err();
                assert!(err.is_corruption(), "{kind:?} record {i} byte {at}: {err}");
                assert!(r.verify().unwrap_err().is_corruption());
                // Other records stay readable.
                let j = (i + 1) % ptrs.len();
                assert_eq!(r.get(&ptrs[j], &entries[j].0).unwrap(), entries[j].1);
            }
        }
    }
}

#[test]
fn pointer_to_another_record_is_corruption() {
    let entries = vec![(b"k1".to_vec(), vec![1u8; 500]), (b"k2".to_vec(), vec![2u8; 500])];
    let (data, ptrs) = write_file(Compression::None, &entries);
    let r = open(data).unwrap();
    let err = r.get(&ptrs[1], b"k1").unwrap_err();
    assert!(err.to_string().contains("different key"), "{err}");
    // Right offset, wrong size; wrong offset; wrong file; out of bounds.
    let bad_ptrs = [
        BlobPointer { size: ptrs[0].size - 1, ..ptrs[0] },
        BlobPointer { offset: ptrs[0].offset + 1, ..ptrs[0] },
        BlobPointer { file_number: FILE_NO + 1, ..ptrs[0] },
        BlobPointer { offset: 0, ..ptrs[0] },
        BlobPointer { offset: u64::MAX - 3, ..ptrs[0] },
        BlobPointer { size: u64::MAX, ..ptrs[0] },
    ];
    for p in bad_ptrs {
        assert!(r.get(&p, b"k1").unwrap_err().is_corruption(), "{p:?}");
    }
}

#[test]
fn header_checks() {
    let (data, _) = write_file(Compression::Lz4, &[(b"k".to_vec(), b"v".to_vec())]);
    // Wrong file number.
    assert!(BlobReader::open(Arc::new(MemRandom(data.clone())), FILE_NO + 1).unwrap_err().is_corruption());
    // Newer version.
    let mut newer = data.clone();
    newer[8] = 2;
    assert!(matches!(open(newer).unwrap_err(), Error::UnsupportedVersion { found: 2, supported: 1, .. }));
    // Any flipped byte outside the version field (a flipped version reads as some version).
    for i in (0..HEADER_LEN).filter(|i| !(8..12).contains(i)) {
        let mut bad = data.clone();
        bad[i] ^= 0x01;
        assert!(open(bad).unwrap_err().is_corruption(), "header byte {i}");
    }
    // Too short.
    assert!(open(data[..HEADER_LEN + FOOTER_LEN - 1].to_vec()).unwrap_err().is_corruption());
}

#[test]
fn truncated_or_damaged_footer_fails_verify_but_not_get() {
    let entries = vec![(b"k".to_vec(), vec![9u8; 1000])];
    let (data, ptrs) = write_file(Compression::Snappy, &entries);
    for i in data.len() - FOOTER_LEN..data.len() {
        let mut bad = data.clone();
        bad[i] ^= 0x04;
        let r = open(bad).unwrap();
        assert!(r.verify().unwrap_err().is_corruption(), "footer byte {i}");
        assert_eq!(r.get(&ptrs[0], b"k").unwrap(), entries[0].1);
    }
    // A file cut short: the last record now overlaps the footer area.
    let r = open(data[..data.len() - 10].to_vec()).unwrap();
    assert!(r.verify().unwrap_err().is_corruption());
}

#[test]
fn pointer_codec() {
    let p = BlobPointer { file_number: 7, offset: 1 << 40, size: 300 };
    let mut buf = Vec::new();
    p.encode(&mut buf);
    assert_eq!(BlobPointer::decode(&buf).unwrap(), p);
    buf.push(0);
    assert!(BlobPointer::decode(&buf).unwrap_err().is_corruption());
    assert!(BlobPointer::decode(&[0x80]).unwrap_err().is_corruption());
    assert!(BlobPointer::decode(&[]).unwrap_err().is_corruption());
}

proptest! {
    /// Any pointer survives encode and decode, whatever the length of its varints.
    #[test]
    fn pointers_round_trip(file_number in any::<u64>(), offset in any::<u64>(), size in any::<u64>(), shift in 0u32..64) {
        let p = BlobPointer { file_number: file_number >> shift, offset: offset >> (63 - shift), size: size >> shift };
        let mut buf = Vec::new();
        p.encode(&mut buf);
        prop_assert_eq!(BlobPointer::decode(&buf).unwrap(), p);
    }

    #[test]
    fn random_files_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400), ptr in any::<(u64, u64)>()) {
        let mut data = super::format::encode_header(FILE_NO, Compression::Snappy);
        data.extend_from_slice(&bytes);
        if let Ok(r) = open(data) {
            let _ = r.records();
            let _ = r.verify();
            let p = BlobPointer { file_number: FILE_NO, offset: ptr.0 % 500, size: ptr.1 % 500 };
            let _ = r.get(&p, b"k");
        }
    }

    #[test]
    fn random_pointer_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
        let _ = BlobPointer::decode(&bytes);
    }
}

/// A file whose bytes are also handed out as a mapping, like the POSIX filesystem's files.
struct MappedRandom(Vec<u8>);

impl RandomAccessFile for MappedRandom {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        MemRandom(self.0.clone()).read_exact_at(offset, buf)
    }
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
    fn mapped(&self) -> Option<&[u8]> {
        Some(&self.0)
    }
}

fn open_mapped(data: Vec<u8>) -> Result<BlobReader> {
    BlobReader::open(Arc::new(MappedRandom(data)), FILE_NO)
}

#[test]
fn mapped_values_are_borrowed_and_rereads_stay_correct() {
    let entries = entries();
    for kind in kinds() {
        let (data, ptrs) = write_file(kind, &entries);
        let r = open_mapped(data).unwrap();
        for _pass in 0..2 {
            for ((k, v), p) in entries.iter().zip(&ptrs) {
                assert!(r.get(p, k).unwrap() == *v, "{kind:?} {k:?}");
                match r.mapped_value(p, k).unwrap() {
                    Some(range) => assert!(r.mapped_bytes(range) == v.as_slice(), "{kind:?} {k:?}"),
                    // Only compressed records are not borrowed.
                    None => assert!(kind != Compression::None, "{k:?}"),
                }
                assert!(r.mapped_value(p, b"another key").unwrap_err().is_corruption());
            }
        }
        assert!(r.mapped_bytes(usize::MAX - 1..usize::MAX).is_empty());
    }
}

#[test]
fn a_verified_neighbour_does_not_vouch_for_a_corrupt_record() {
    // Small records share a verification granule: checking one must not mark the others good.
    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..8).map(|i| (vec![b'k', i], vec![i; 40])).collect();
    let (data, ptrs) = write_file(Compression::None, &entries);
    for victim in 1..ptrs.len() {
        let mut bad = data.clone();
        bad[(ptrs[victim].offset + ptrs[victim].size - 1) as usize] ^= 1;
        let r = open_mapped(bad).unwrap();
        for _pass in 0..2 {
            for (i, p) in ptrs.iter().enumerate() {
                let got = r.mapped_value(p, &entries[i].0);
                if i == victim {
                    assert!(got.unwrap_err().is_corruption(), "record {i}");
                } else {
                    assert!(r.mapped_bytes(got.unwrap().unwrap()) == entries[i].1.as_slice());
                }
            }
        }
        // A verified record read through a pointer of the wrong size is still corruption.
        let good = ptrs[0];
        r.get(&good, &entries[0].0).unwrap();
        let wrong = BlobPointer { size: good.size - 1, ..good };
        assert!(r.get(&wrong, &entries[0].0).unwrap_err().is_corruption());
    }
}

#[test]
fn a_checked_raw_record_is_read_again_without_touching_it() {
    let entries = entries();
    for kind in kinds() {
        let (data, ptrs) = write_file(kind, &entries);
        let r = open_mapped(data).unwrap();
        for ((k, v), p) in entries.iter().zip(&ptrs) {
            assert!(!r.knows(p, k), "{kind:?} {k:?}: nothing checked yet");
            let first = r.mapped_value(p, k).unwrap();
            let raw = first.is_some();
            assert_eq!(r.knows(p, k), raw, "{kind:?} {k:?}: only raw values are borrowed");
            assert!(!r.knows(p, b"another key"), "a note vouches for one key only");
            let wrong_size = BlobPointer { size: p.size + 1, ..*p };
            assert!(!r.knows(&wrong_size, k), "nor for another pointer size");
            assert_eq!(r.mapped_value(p, k).unwrap(), first);
            assert!(r.get(p, k).unwrap() == *v, "{kind:?} {k:?}");
        }
    }
}

#[test]
fn read_files_are_never_known() {
    let entries = entries();
    let (data, ptrs) = write_file(Compression::None, &entries);
    let r = open(data).unwrap();
    for ((k, v), p) in entries.iter().zip(&ptrs) {
        assert!(r.get(p, k).unwrap() == *v);
        assert!(!r.knows(p, k), "{k:?}");
    }
}

#[test]
fn a_walk_in_file_order_asks_for_read_ahead_within_the_records() {
    let entries: Vec<(Vec<u8>, Vec<u8>)> =
        (0..3_000u32).map(|i| (i.to_be_bytes().to_vec(), vec![i as u8; 800])).collect();
    let (data, ptrs) = write_file(Compression::None, &entries);
    let records_end = data.len() as u64 - FOOTER_LEN as u64;
    let file = Arc::new(RecordsHints::new(MappedRandom(data)));
    let r = BlobReader::open(Arc::clone(&file) as Arc<dyn RandomAccessFile>, FILE_NO).unwrap();
    let mut walk = super::BlobWalk::default();
    for ((k, v), p) in entries.iter().zip(&ptrs) {
        r.note_walk(&mut walk, p);
        assert!(r.get(p, k).unwrap() == *v);
    }
    let hints = file.hints();
    assert!(!hints.is_empty(), "2.4 MB walked in order, no hint");
    assert!(hints.iter().all(|&(o, l)| o + l <= records_end), "{hints:?} past {records_end}");
    // Point reads in no order give none.
    let mut points = super::BlobWalk::default();
    for i in (0..ptrs.len()).step_by(97).rev() {
        r.note_walk(&mut points, &ptrs[i]);
    }
    assert_eq!(file.hints().len(), hints.len());
}

/// A compaction relocating values meets the records of several files interleaved, each file's
/// in order: one walk per file asks for read-ahead in each, where one walk for all starts over
/// at every switch of file and never does.
#[test]
fn interleaved_walks_through_two_files_ask_for_read_ahead_in_each() {
    let entries: Vec<(Vec<u8>, Vec<u8>)> =
        (0..3_000u32).map(|i| (i.to_be_bytes().to_vec(), vec![i as u8; 800])).collect();
    let numbers = [FILE_NO, FILE_NO + 1];
    let written = numbers.map(|n| write_file_numbered(n, Compression::None, &entries));
    let files = [0, 1].map(|f| Arc::new(RecordsHints::new(MappedRandom(written[f].0.clone()))));
    let readers = [0, 1]
        .map(|f| BlobReader::open(Arc::clone(&files[f]) as Arc<dyn RandomAccessFile>, numbers[f]).unwrap());
    // Each key's record in file 0, then in file 1, key after key.
    let interleaved = || (0..entries.len()).flat_map(|i| [0usize, 1].map(move |f| (f, i)));

    let mut one = super::BlobWalk::default();
    for (f, i) in interleaved() {
        readers[f].note_walk(&mut one, &written[f].1[i]);
    }
    assert!(files.iter().all(|f| f.hints().is_empty()), "one walk for both gave hints");

    let mut walks = super::BlobWalks::default();
    for (f, i) in interleaved() {
        let p = &written[f].1[i];
        readers[f].note_walk(walks.of(numbers[f]), p);
        assert_eq!(readers[f].get(p, &entries[i].0).unwrap(), entries[i].1);
    }
    for f in &files {
        assert!(!f.hints().is_empty(), "2.4 MB of one file walked in order, no hint");
    }
}
