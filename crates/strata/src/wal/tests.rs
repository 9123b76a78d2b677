//! Round trips, torn tails and mid-log corruption of the log format, over in-memory files.

use std::sync::{Arc, Mutex};

use proptest::prelude::*;

use super::format::{BLOCK_SIZE, HEADER_SIZE};
use super::{LogReader, LogWriter};
use crate::error::Result;
use crate::fs::{SequentialFile, WritableFile};

#[derive(Clone, Default)]
struct MemFile {
    data: Arc<Mutex<Vec<u8>>>,
    appends: Arc<Mutex<usize>>,
}

impl WritableFile for MemFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.data.lock().unwrap().extend_from_slice(data);
        *self.appends.lock().unwrap() += 1;
        Ok(())
    }
    fn sync_data(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.data.lock().unwrap().len() as u64
    }
}

/// Returns reads in odd-sized pieces to exercise the reader's block refill loop.
struct MemSeq {
    data: Vec<u8>,
    pos: usize,
}

impl SequentialFile for MemSeq {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let n = buf.len().min(self.data.len() - self.pos).min(10_007);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn write_log(records: &[Vec<u8>]) -> (Vec<u8>, Vec<u64>) {
    let file = MemFile::default();
    let mut w = LogWriter::new(Box::new(file.clone()));
    let mut ends = Vec::new();
    for r in records {
        w.add_record(r).unwrap();
        ends.push(w.file_size());
    }
    w.sync().unwrap();
    assert_eq!(*file.appends.lock().unwrap(), records.len(), "one append per record");
    let data = file.data.lock().unwrap().clone();
    (data, ends)
}

fn reader(data: &[u8], skip: bool) -> LogReader {
    LogReader::new(Box::new(MemSeq { data: data.to_vec(), pos: 0 }), skip)
}

fn read_all(r: &mut LogReader) -> Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    while let Some(rec) = r.read_record()? {
        out.push(rec);
    }
    Ok(out)
}

fn payload(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

#[test]
fn round_trip_of_edge_sizes() {
    let fill_one_block = BLOCK_SIZE - HEADER_SIZE;
    let records = vec![
        payload(0, 1),
        payload(1, 2),
        payload(fill_one_block - 8, 3), // leaves exactly 1 + header bytes in block 0
        payload(0, 4),
        payload(fill_one_block, 5),
        payload(BLOCK_SIZE - HEADER_SIZE - 3, 6), // leaves a 3-byte padded trailer
        payload(100 << 10, 7),
        payload(2 * fill_one_block, 8),
        payload(17, 9),
    ];
    let (data, _) = write_log(&records);
    let mut r = reader(&data, false);
    assert_eq!(read_all(&mut r).unwrap(), records);
    assert_eq!(r.read_record().unwrap(), None, "end is sticky");
    assert_eq!(r.tail_dropped_bytes(), 0);
    assert_eq!(r.skipped_bytes(), 0);
}

#[test]
fn exactly_full_block_ends_on_boundary() {
    let records = vec![payload(BLOCK_SIZE - HEADER_SIZE, 1), payload(BLOCK_SIZE - HEADER_SIZE, 2)];
    let (data, _) = write_log(&records);
    assert_eq!(data.len(), 2 * BLOCK_SIZE);
    assert_eq!(read_all(&mut reader(&data, false)).unwrap(), records);
}

#[test]
fn empty_file_is_clean_end() {
    let mut r = reader(&[], false);
    assert_eq!(r.read_record().unwrap(), None);
    assert_eq!(r.tail_dropped_bytes(), 0);
}

#[test]
fn truncation_anywhere_in_last_record_is_a_torn_tail() {
    for last_len in [0usize, 10, BLOCK_SIZE - 2 * HEADER_SIZE, 70_000] {
        let records = vec![payload(5_000, 1), payload(30_000, 2), payload(last_len, 3)];
        let (data, ends) = write_log(&records);
        let last_start = ends[1] as usize;
        let step = if data.len() - last_start > 2_000 { 97 } else { 1 };
        let mut cuts: Vec<usize> = (last_start..data.len()).step_by(step).collect();
        cuts.extend((data.len() - 40).max(last_start)..data.len());
        for cut in cuts {
            let mut r = reader(&data[..cut], false);
            let got = read_all(&mut r).unwrap_or_else(|e| panic!("cut {cut}: {e}"));
            assert!(got == records[..2], "cut at {cut} (last_len {last_len}): {} records", got.len());
            assert_eq!(r.tail_dropped_bytes(), (cut - last_start) as u64, "cut at {cut}");
        }
    }
}

#[test]
fn zero_filled_tail_is_a_torn_tail() {
    let records = vec![payload(100, 1), payload(40_000, 2)];
    let (mut data, ends) = write_log(&records);
    // Power loss after the size grew but before the data pages of the last record were written.
    let start = ends[0] as usize;
    data[start + 50..].iter_mut().for_each(|b| *b = 0);
    data.extend_from_slice(&[0u8; 50_000]);
    let mut r = reader(&data, false);
    assert_eq!(read_all(&mut r).unwrap(), records[..1]);
    // The record's surviving bytes are a torn tail; the zeros after them are zero fill.
    assert!(r.tail_dropped_bytes() >= 50, "{}", r.tail_dropped_bytes());
    assert!(r.zero_tail_bytes() >= 50_000, "{}", r.zero_tail_bytes());
    assert_eq!(r.tail_dropped_bytes() + r.zero_tail_bytes(), (data.len() - start) as u64);
}

#[test]
fn a_complete_last_record_with_a_flipped_byte_is_corruption_not_a_torn_tail() {
    let records = vec![payload(100, 1), payload(200, 2)];
    let (data, ends) = write_log(&records);
    let start = ends[0] as usize;
    for at in start..data.len() {
        let mut damaged = data.clone();
        damaged[at] ^= 0x40;
        let err = read_all(&mut reader(&damaged, false)).unwrap_err();
        assert!(
            err.is_corruption() && err.to_string().contains(&format!("offset {start}")),
            "byte {at}: {err}"
        );
    }
}

#[test]
fn a_last_record_with_a_zeroed_page_is_a_torn_tail() {
    // A power cut kept the page holding the record's header but not the next one.
    let records = vec![payload(4000, 1), payload(6000, 2)];
    let (mut data, ends) = write_log(&records);
    data[4096..8192].iter_mut().for_each(|b| *b = 0);
    let mut r = reader(&data, false);
    assert_eq!(read_all(&mut r).unwrap(), records[..1]);
    assert_eq!(r.tail_dropped_bytes(), data.len() as u64 - ends[0]);
    let mut events = reader(&data, false);
    let mut out = Vec::new();
    assert_eq!(events.next_event(&mut out).unwrap(), super::reader::LogEvent::Record);
    match events.next_event(&mut out).unwrap() {
        super::reader::LogEvent::Damage(d) => {
            assert_eq!((d.offset, d.shape), (ends[0], super::reader::DamageShape::ZeroedPages))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(events.next_event(&mut out).unwrap(), super::reader::LogEvent::End);
}

#[test]
fn records_after_a_lost_page_are_reported_after_the_damage() {
    // Pages persisted out of order: page 1 lost, later pages (and the next block) kept.
    let records: Vec<Vec<u8>> = (0..30).map(|i| payload(1500, i)).collect();
    let (mut data, _) = write_log(&records);
    data[4096..8192].iter_mut().for_each(|b| *b = 0);
    let mut r = reader(&data, false);
    let mut out = Vec::new();
    let mut kinds = Vec::new();
    loop {
        match r.next_event(&mut out).unwrap() {
            super::reader::LogEvent::Record => kinds.push("record"),
            super::reader::LogEvent::Damage(d) => {
                assert!(d.looks_torn(), "{d:?}");
                kinds.push("damage")
            }
            super::reader::LogEvent::End => break,
        }
    }
    assert_eq!(kinds.first(), Some(&"record"));
    assert!(kinds.contains(&"damage") && kinds.last() == Some(&"record"), "{kinds:?}");
    // The strict view calls it corruption: a valid record follows the damage.
    assert!(read_all(&mut reader(&data, false)).unwrap_err().is_corruption());
}

#[test]
fn out_of_order_persisted_fragments_of_the_last_record_are_a_torn_tail() {
    let records = vec![payload(100, 1), payload(3 * BLOCK_SIZE, 2)];
    let (mut data, ends) = write_log(&records);
    // The second block (a MIDDLE fragment) never reached the disk; later ones did.
    data[BLOCK_SIZE..2 * BLOCK_SIZE].iter_mut().for_each(|b| *b = 0);
    let mut r = reader(&data, false);
    assert_eq!(read_all(&mut r).unwrap(), records[..1]);
    assert_eq!(r.zero_tail_bytes(), BLOCK_SIZE as u64);
    assert_eq!(r.tail_dropped_bytes() + r.zero_tail_bytes(), data.len() as u64 - ends[0]);
}

#[test]
fn zero_filled_block_before_a_valid_record_is_corruption() {
    let records: Vec<Vec<u8>> = (0..4).map(|i| payload(BLOCK_SIZE / 2, i)).collect();
    let (mut data, _) = write_log(&records);
    data[..BLOCK_SIZE].iter_mut().for_each(|b| *b = 0);
    let err = read_all(&mut reader(&data, false)).unwrap_err();
    assert!(err.is_corruption() && err.to_string().contains("zero fill"), "{err}");
    let mut r = reader(&data, true);
    assert!(!read_all(&mut r).unwrap().is_empty());
    assert!(r.skipped_bytes() >= BLOCK_SIZE as u64);
}

/// A file that, like the POSIX one, keeps appending at `len` over zeros it was preallocated with.
#[derive(Clone, Default)]
struct PreallocFile {
    data: Arc<Mutex<Vec<u8>>>,
    len: Arc<Mutex<u64>>,
}

impl WritableFile for PreallocFile {
    fn append(&mut self, bytes: &[u8]) -> Result<()> {
        let mut data = self.data.lock().unwrap();
        let mut len = self.len.lock().unwrap();
        let start = *len as usize;
        let end = start + bytes.len();
        if data.len() < end {
            data.resize(end, 0);
        }
        data[start..end].copy_from_slice(bytes);
        *len = end as u64;
        Ok(())
    }
    fn sync_data(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        *self.len.lock().unwrap()
    }
    fn preallocate(&mut self, upto: u64) -> Result<()> {
        let mut data = self.data.lock().unwrap();
        assert!(data[*self.len.lock().unwrap() as usize..].iter().all(|&b| b == 0));
        if (data.len() as u64) < upto {
            data.resize(upto as usize, 0);
        }
        Ok(())
    }
}

#[test]
fn preallocated_zeros_after_the_records_are_not_a_torn_tail() {
    let file = PreallocFile::default();
    let mut w = LogWriter::new(Box::new(file.clone())).preallocating(10_000);
    let records: Vec<Vec<u8>> = (0..40u8).map(|i| payload(usize::from(i) * 97 % 5000, i)).collect();
    w.add_record(&records[0]).unwrap();
    assert_eq!(file.data.lock().unwrap().len() as u64, w.file_size(), "no preallocation before a sync");
    w.sync().unwrap();
    let mut before_last = 0;
    for r in &records[1..] {
        before_last = w.file_size() as usize;
        w.add_record(r).unwrap();
        let allocated = file.data.lock().unwrap().len() as u64;
        assert!(allocated > w.file_size() && allocated <= w.file_size() + 10_000 + 5_000);
    }
    let data = file.data.lock().unwrap().clone();
    let mut r = reader(&data, false);
    assert_eq!(read_all(&mut r).unwrap(), records);
    assert_eq!(r.tail_dropped_bytes(), 0);
    assert_eq!(r.zero_tail_bytes(), data.len() as u64 - w.file_size());

    // A crash that tore the last append inside the preallocated space: a torn tail, then zeros.
    let mut torn = data.clone();
    torn[before_last + HEADER_SIZE + 1..w.file_size() as usize].iter_mut().for_each(|b| *b = 0);
    let mut r = reader(&torn, false);
    assert_eq!(read_all(&mut r).unwrap(), records[..39]);
    assert!(r.tail_dropped_bytes() > 0);
}

fn three_record_log() -> (Vec<Vec<u8>>, Vec<u8>) {
    let records = vec![payload(50_000, 1), payload(40_000, 2), payload(300, 3)];
    let (data, _) = write_log(&records);
    (records, data)
}

#[test]
fn mid_log_corruption_is_reported_at_every_flipped_byte_of_the_first_record() {
    let (records, data) = three_record_log();
    let first_record_bytes = 50_000 + 2 * HEADER_SIZE;
    for i in (0..first_record_bytes).step_by(101).chain(0..HEADER_SIZE) {
        let mut bad = data.clone();
        bad[i] ^= 0x01;
        let err = read_all(&mut reader(&bad, false)).expect_err(&format!("flip at {i}"));
        assert!(err.is_corruption(), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("offset 0") || msg.contains(&format!("offset {BLOCK_SIZE}")), "{msg}");

        let mut r = reader(&bad, true);
        let got = read_all(&mut r).unwrap();
        assert_eq!(got, records[1..], "flip at {i}");
        assert!(r.skipped_bytes() > 0);
        assert_eq!(r.tail_dropped_bytes(), 0);
    }
}

#[test]
fn corruption_error_is_sticky() {
    let (_, mut data) = three_record_log();
    data[100] ^= 0xff;
    let mut r = reader(&data, false);
    assert!(r.read_record().unwrap_err().is_corruption());
    assert!(r.read_record().unwrap_err().is_corruption());
}

#[test]
fn corruption_within_one_block_is_detected_through_the_next_header() {
    let records = vec![payload(10, 1), payload(20, 2), payload(30, 3)];
    let (mut data, _) = write_log(&records);
    data[HEADER_SIZE + 3] ^= 0x10;
    assert!(read_all(&mut reader(&data, false)).unwrap_err().is_corruption());
    let mut r = reader(&data, true);
    assert_eq!(read_all(&mut r).unwrap(), records[1..]);
    assert_eq!(r.skipped_bytes(), (HEADER_SIZE + 10) as u64);
}

#[test]
fn missing_last_fragment_before_a_valid_record_is_corruption() {
    let records = vec![payload(BLOCK_SIZE, 1), payload(10, 2)];
    let (data, ends) = write_log(&records);
    // Drop the LAST fragment of the first record (it begins block 1) and splice in record 2.
    let mut spliced = data[..BLOCK_SIZE].to_vec();
    spliced.extend_from_slice(&data[ends[0] as usize..]);
    assert!(read_all(&mut reader(&spliced, false)).unwrap_err().is_corruption());
    assert_eq!(read_all(&mut reader(&spliced, true)).unwrap(), records[1..]);
}

#[test]
fn read_record_into_reuses_the_buffer() {
    let records = vec![payload(3, 1), payload(70_000, 2)];
    let (data, _) = write_log(&records);
    let mut r = reader(&data, false);
    let mut buf = Vec::new();
    assert!(r.read_record_into(&mut buf).unwrap());
    assert_eq!(buf, records[0]);
    assert!(r.read_record_into(&mut buf).unwrap());
    assert_eq!(buf, records[1]);
    assert!(!r.read_record_into(&mut buf).unwrap());
}

proptest! {
    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..3 * BLOCK_SIZE), skip: bool) {
        let mut r = reader(&data, skip);
        for _ in 0..10_000 {
            match r.read_record() {
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
    }

    #[test]
    fn random_mutations_of_a_valid_log_never_panic(
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        cut in any::<usize>(),
        skip: bool,
    ) {
        let (_, mut data) = three_record_log();
        for (at, x) in flips {
            let i = at % data.len();
            data[i] ^= x;
        }
        data.truncate(cut % (data.len() + 1));
        let mut r = reader(&data, skip);
        while let Ok(Some(_)) = r.read_record() {}
    }

    #[test]
    fn random_records_round_trip(sizes in proptest::collection::vec(0usize..80_000, 0..12)) {
        let records: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(i, &n)| payload(n, i as u8)).collect();
        let (data, _) = write_log(&records);
        prop_assert_eq!(read_all(&mut reader(&data, false)).unwrap(), records);
    }
}

struct FailingFile;

impl WritableFile for FailingFile {
    fn append(&mut self, _: &[u8]) -> Result<()> {
        Err(std::io::Error::other("disk full").into())
    }
    fn sync_data(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        0
    }
}

#[test]
fn writer_refuses_to_append_after_a_failed_append() {
    let mut w = LogWriter::new(Box::new(FailingFile));
    assert!(w.add_record(b"a").is_err());
    let err = w.add_record(b"b").unwrap_err();
    assert!(err.to_string().contains("earlier failed append"), "{err}");
}
