//! Read-ahead hints for readers that walk a memory-mapped file forward (scans and compactions).
//! Mappings are advised for random access, so that a point read of a database larger than memory
//! faults in the page it needs and not megabytes around it; the kernel then no longer reads ahead
//! of a sequential reader on its own, and this asks it to, through
//! [`RandomAccessFile::will_need`]. It owns no IO of its own and must stay silent for point
//! reads and short scans: each hint is a system call, which a warm `seek + 20 next` cannot pay.

use super::RandomAccessFile;

/// Bytes a reader must have walked forward, in reads that follow each other, before the first
/// hint: a 20-entry scan stays well under it, a compaction or a long scan passes it at once.
const START_AFTER: u64 = 256 << 10;
/// The first hint's length; each later one doubles it up to `MAX_WINDOW`.
const FIRST_WINDOW: u64 = 256 << 10;
/// The largest hint. The next one is given half way through the last, so a cold scan has 4 MiB
/// in flight ahead of it: at this machine's ~1.3 GB/s of reads that arrives before the scan gets
/// there (with 2 MiB, RocksDB's `compaction_readahead_size`, a cold `readseq` waited on it).
const MAX_WINDOW: u64 = 8 << 20;
/// The largest hint of a whole-file reader: RocksDB's `compaction_readahead_size`. A compaction
/// reads a dozen inputs at once, and with 8 MiB windows a 1 GiB memory cgroup evicted hinted
/// pages before the compaction reached them (62k-78k major faults in a 5M-key fillrandom,
/// against 4k-8k with 2 MiB windows, which also ran 7-15% faster).
const WHOLE_FILE_MAX_WINDOW: u64 = 2 << 20;
/// A read that starts at most this far past the previous one's end still counts as following it
/// (blocks are separated by their trailers, blob records by the records a scan skips).
const MAX_GAP: u64 = 64 << 10;

/// One reader's position in one file. Start a new one when the reader moves to another file.
#[derive(Debug, Clone)]
pub struct SequentialHint {
    /// Bytes of a forward run before the first hint: `START_AFTER`, or 0 for a reader that
    /// will read the whole file.
    start_after: u64,
    /// `MAX_WINDOW`, or `WHOLE_FILE_MAX_WINDOW`.
    max_window: u64,
    /// End of the previous read; `u64::MAX` before the first.
    last_end: u64,
    /// Where the current forward run began.
    run_start: u64,
    /// End of the range already hinted.
    hinted_end: u64,
    window: u64,
}

impl Default for SequentialHint {
    fn default() -> Self {
        Self::new()
    }
}

impl SequentialHint {
    /// A reader that has read nothing yet.
    pub const fn new() -> Self {
        Self {
            start_after: START_AFTER,
            max_window: MAX_WINDOW,
            last_end: u64::MAX,
            run_start: 0,
            hinted_end: 0,
            window: FIRST_WINDOW,
        }
    }

    /// A reader that will walk the whole file forward (a compaction's input): hints from its
    /// first read. Waiting for 256 KiB first cost a compaction of a database larger than memory
    /// 64 single-page faults per input file.
    pub const fn whole_file() -> Self {
        Self { start_after: 0, max_window: WHOLE_FILE_MAX_WINDOW, ..Self::new() }
    }

    /// Whether the reads noted so far end in a forward run long enough to be a sequential
    /// reader's (always, for a whole-file reader): its reads should then go through
    /// [`RandomAccessFile::read_exact_at_forward`].
    pub fn is_forward_run(&self) -> bool {
        self.last_end != u64::MAX && self.last_end - self.run_start >= self.start_after
    }

    /// Notes a read of `len` bytes at `offset` of `file`, whose readable part ends at `limit`.
    /// Once the reader has walked `START_AFTER` bytes forward, hints the next window ahead of
    /// it, and the one after that when it is half way through. Does nothing for a file that
    /// is not mapped: `pread` readers get the kernel's own read-ahead.
    pub fn note(&mut self, file: &dyn RandomAccessFile, offset: u64, len: u64, limit: u64) {
        // The position is tracked for any file (cheap); only the hint asks whether it is mapped,
        // a virtual call that every entry of a scan would otherwise pay.
        let end = offset.saturating_add(len);
        let follows = offset >= self.last_end && offset - self.last_end <= MAX_GAP;
        self.last_end = end;
        if !follows {
            // The first hint covers this read too: it has not touched the pages yet.
            let run =
                Self { last_end: end, run_start: offset, hinted_end: offset, window: FIRST_WINDOW, ..*self };
            *self = run;
        }
        if end - self.run_start < self.start_after || end.saturating_add(self.window / 2) < self.hinted_end {
            return;
        }
        let start = self.hinted_end.max(offset);
        let stop = start.saturating_add(self.window).min(limit);
        if stop > start && file.mapped().is_some() {
            file.will_need(start, stop - start);
        }
        self.hinted_end = stop.max(start);
        self.window = (self.window * 2).min(self.max_window);
    }
}

/// Test support: a file that reads through `inner` and records every read-ahead hint it is
/// given, so tests can check who asks for read-ahead and where.
#[cfg(test)]
pub(crate) struct RecordsHints<F> {
    inner: F,
    hints: std::sync::Mutex<Vec<(u64, u64)>>,
    /// Reads through `read_exact_at` and through `read_exact_at_forward`.
    reads: [std::sync::atomic::AtomicU64; 2],
}

#[cfg(test)]
impl<F> RecordsHints<F> {
    pub(crate) fn new(inner: F) -> Self {
        Self { inner, hints: std::sync::Mutex::new(Vec::new()), reads: Default::default() }
    }

    /// The hints given so far, as (offset, length), oldest first.
    pub(crate) fn hints(&self) -> Vec<(u64, u64)> {
        self.hints.lock().unwrap().clone()
    }

    /// Forgets the hints given and reads made so far.
    pub(crate) fn clear(&self) {
        self.hints.lock().unwrap().clear();
        self.reads.iter().for_each(|r| r.store(0, std::sync::atomic::Ordering::Relaxed));
    }

    /// Reads made so far: (random, forward).
    pub(crate) fn reads(&self) -> (u64, u64) {
        let [random, forward] = &self.reads;
        let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        (load(random), load(forward))
    }
}

#[cfg(test)]
impl<F: RandomAccessFile> RandomAccessFile for RecordsHints<F> {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> crate::error::Result<()> {
        self.reads[0].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.read_exact_at(offset, buf)
    }
    fn read_exact_at_forward(&self, offset: u64, buf: &mut [u8]) -> crate::error::Result<()> {
        self.reads[1].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.read_exact_at(offset, buf)
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn mapped(&self) -> Option<&[u8]> {
        self.inner.mapped()
    }
    fn will_need(&self, offset: u64, len: u64) {
        self.hints.lock().unwrap().push((offset, len));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::testfs::{MappedMemRandom, MemRandom};

    type Hinted = RecordsHints<MappedMemRandom>;

    fn file(len: usize) -> Hinted {
        RecordsHints::new(MappedMemRandom(MemRandom(vec![0; len])))
    }

    /// Reads 4 KiB blocks with 5-byte trailers from `from`, `n` of them.
    fn walk(hint: &mut SequentialHint, f: &Hinted, from: u64, n: u64) {
        for i in 0..n {
            hint.note(f, from + i * 4101, 4096, f.size());
        }
    }

    #[test]
    fn a_forward_walk_is_hinted_ahead_with_growing_windows_up_to_the_limit() {
        let f = file(128 << 20);
        let mut hint = SequentialHint::new();
        walk(&mut hint, &f, 0, 16_000);
        let hints = f.hints();
        assert!(!hints.is_empty());
        assert!(hints[0].0 + 4101 >= START_AFTER, "the first hint waits for a run: {:?}", hints[0]);
        assert_eq!(hints[0].1, FIRST_WINDOW);
        assert!(hints.windows(2).all(|w| w[1].0 == w[0].0 + w[0].1), "contiguous: {hints:?}");
        assert!(hints.iter().all(|h| h.1 <= MAX_WINDOW));
        assert_eq!(hints.last().unwrap().1, MAX_WINDOW);
        let walked = 16_000 * 4101;
        let hinted_end = hints.last().map(|h| h.0 + h.1).unwrap();
        assert!(hinted_end > walked && hinted_end <= walked + MAX_WINDOW * 3 / 2 + 4101);
        // About one hint per window: a system call per 8 MiB, not per block.
        assert!(hints.len() < 40, "{} hints", hints.len());
    }

    #[test]
    fn a_whole_file_reader_is_hinted_from_its_first_read_in_smaller_windows() {
        let f = file(64 << 20);
        let mut hint = SequentialHint::whole_file();
        walk(&mut hint, &f, 0, 3);
        assert_eq!(f.hints().first(), Some(&(0, FIRST_WINDOW)));
        walk(&mut hint, &f, 3 * 4101, 10_000);
        let hints = f.hints();
        assert!(hints.windows(2).all(|w| w[1].0 == w[0].0 + w[0].1), "contiguous: {hints:?}");
        assert_eq!(hints.iter().map(|h| h.1).max(), Some(WHOLE_FILE_MAX_WINDOW));
    }

    #[test]
    fn short_scans_and_point_reads_give_no_hint() {
        let f = file(64 << 20);
        let mut hint = SequentialHint::new();
        for seek in 0..1_000u64 {
            // A seek somewhere, then a few blocks forward: a `seek + 20 next`.
            walk(&mut hint, &f, (seek * 7_919 * 4101) % (60 << 20), 8);
        }
        let mut point = SequentialHint::new();
        for i in 0..1_000u64 {
            point.note(&f, (i * 104_729 * 4096) % (60 << 20), 4096, f.size());
        }
        assert_eq!(f.hints().len(), 0);
    }

    #[test]
    fn hints_stop_at_the_limit_and_a_jump_back_starts_over() {
        let f = file(1 << 20);
        let mut hint = SequentialHint::new();
        walk(&mut hint, &f, 0, 250);
        let hints = f.hints();
        assert!(hints.iter().all(|h| h.0 + h.1 <= 1 << 20), "{hints:?}");
        let n = hints.len();
        walk(&mut hint, &f, 0, 10);
        assert_eq!(f.hints().len(), n, "a new run must walk START_AFTER first");
    }

    #[test]
    fn unmapped_files_get_no_hint() {
        let f = RecordsHints::new(MemRandom(vec![0; 8 << 20]));
        let mut hint = SequentialHint::new();
        for i in 0..1_000 {
            hint.note(&f, i * 4101, 4096, f.size());
        }
        assert_eq!(f.hints().len(), 0);
    }
}
