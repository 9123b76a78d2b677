//! Readahead for a scan over a blob file that is not memory-mapped (`use_mmap_reads = false`):
//! the bytes around the last record read, so that the next records of a scan, which flush and
//! compaction wrote next to each other, come from memory instead of a `pread` each. The window
//! starts small and doubles while the scan keeps running past its end (RocksDB's iterator
//! auto-readahead does the same), so a short scan after a seek reads little it does not use.
//! It holds bytes only; checking them is the reader's job.

use std::ops::Range;

use crate::error::Result;
use crate::fs::RandomAccessFile;

/// The first window after a jump, and the largest a sequential scan grows it to.
const INITIAL: u64 = 16 << 10;
const MAX: u64 = 256 << 10;

/// Bytes `start..start + buf.len()` of blob file `file`, read for one iterator.
#[derive(Default)]
pub struct Readahead {
    file: u64,
    start: u64,
    buf: Vec<u8>,
    window: u64,
}

impl Readahead {
    /// The bytes `offset..offset + len` of file `file_number`, reading a new window around them
    /// unless the current one holds them. `limit` is the end of the file's record area.
    pub fn read(
        &mut self,
        file: &dyn RandomAccessFile,
        file_number: u64,
        range: Range<u64>,
        limit: u64,
    ) -> Result<&[u8]> {
        if !self.holds(file_number, &range) {
            self.refill(file, file_number, &range, limit)?;
        }
        let from = (range.start - self.start) as usize;
        Ok(&self.buf[from..from + (range.end - range.start) as usize])
    }

    fn holds(&self, file_number: u64, range: &Range<u64>) -> bool {
        self.file == file_number
            && range.start >= self.start
            && range.end <= self.start + self.buf.len() as u64
    }

    /// A window that holds `range`: after it when the scan runs forward (the usual case), before
    /// it when it runs backward. It grows while the scan stays next to the last window.
    fn refill(
        &mut self,
        file: &dyn RandomAccessFile,
        file_number: u64,
        range: &Range<u64>,
        limit: u64,
    ) -> Result<()> {
        let (same, end) = (self.file == file_number, self.start + self.buf.len() as u64);
        let backward = same && range.start < self.start;
        // Next to the last window: running off its end, or (backward) off its start.
        let adjacent = same && if backward { range.end >= self.start } else { range.start <= end };
        self.window = if adjacent { (self.window * 2).clamp(INITIAL, MAX) } else { INITIAL };
        let len = self.window.max(range.end - range.start);
        let (start, stop) = if backward {
            (range.end.saturating_sub(len), range.end)
        } else {
            (range.start, range.start.saturating_add(len).min(limit).max(range.end))
        };
        self.file = file_number;
        if self.fill(file, start..stop).is_err() {
            // Damage elsewhere in the window must not fail a read of an intact record.
            self.window = INITIAL;
            return self.fill(file, range.clone());
        }
        Ok(())
    }

    fn fill(&mut self, file: &dyn RandomAccessFile, range: Range<u64>) -> Result<()> {
        self.start = range.start;
        self.buf.resize((range.end - range.start) as usize, 0);
        // A window is a forward reader's by construction: it reads past the record asked for.
        let read = file.read_exact_at_forward(range.start, &mut self.buf);
        if read.is_err() {
            // A failed read leaves no window that claims bytes it does not hold.
            self.buf.clear();
        }
        read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Bytes(Vec<u8>);

    impl RandomAccessFile for Bytes {
        fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
            let from = offset as usize;
            let src = self
                .0
                .get(from..from + buf.len())
                .ok_or_else(|| crate::error::Error::corruption("past the end"))?;
            buf.copy_from_slice(src);
            Ok(())
        }
        fn size(&self) -> u64 {
            self.0.len() as u64
        }
    }

    fn file() -> Bytes {
        Bytes((0..1_000_000u32).map(|i| (i % 251) as u8).collect())
    }

    fn expect(range: Range<u64>) -> Vec<u8> {
        range.map(|i| (i % 251) as u8).collect()
    }

    /// A read: a jump to anywhere, a step back, or the next record; and its length.
    fn step() -> impl proptest::strategy::Strategy<Value = (u8, u64, u64)> {
        (0u8..4, 0u64..900_000, 1u64..5_000)
    }

    proptest::proptest! {
        #[test]
        fn any_order_of_reads_returns_the_right_bytes(steps in proptest::collection::vec(step(), 1..200)) {
            let f = file();
            let mut ahead = Readahead::default();
            let mut offset: u64 = 100;
            for (kind, jump, len) in steps {
                offset = match kind {
                    0 => jump,
                    1 => offset.saturating_sub(900),
                    _ => offset + 850,
                }
                .min(990_000);
                let got = ahead.read(&f, 3, offset..offset + len, 1_000_000).unwrap();
                proptest::prop_assert_eq!(got, &expect(offset..offset + len)[..]);
            }
        }
    }

    #[test]
    fn a_forward_scan_grows_its_window_and_stops_at_the_limit() {
        let f = file();
        let mut ahead = Readahead::default();
        ahead.read(&f, 1, 1000..1850, 600_000).unwrap();
        assert_eq!(ahead.buf.len() as u64, INITIAL);
        let mut offset = 1000;
        while offset + 850 <= 600_000 {
            assert_eq!(
                ahead.read(&f, 1, offset..offset + 850, 600_000).unwrap(),
                &expect(offset..offset + 850)[..]
            );
            offset += 850;
        }
        assert_eq!(ahead.window, MAX);
        assert_eq!(ahead.start + ahead.buf.len() as u64, 600_000, "never past the record area");
        // Another file, or a jump, starts small again.
        ahead.read(&f, 2, 5000..5850, 600_000).unwrap();
        assert_eq!(ahead.buf.len() as u64, INITIAL);
    }

    #[test]
    fn damage_past_a_record_fails_only_the_reads_that_touch_it() {
        // The file claims 2,000 bytes of records but holds 1,000 (a truncated file).
        let f = Bytes(vec![7; 1000]);
        let mut ahead = Readahead::default();
        assert_eq!(ahead.read(&f, 1, 500..600, 2_000).unwrap(), &[7; 100][..]);
        assert!(ahead.read(&f, 1, 950..1050, 2_000).is_err());
        assert!(ahead.buf.is_empty(), "a failed read leaves nothing claimed");
        assert_eq!(ahead.read(&f, 1, 100..200, 2_000).unwrap(), &[7; 100][..]);
    }
}
