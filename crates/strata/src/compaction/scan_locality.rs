//! Which separated values a compaction writing the last level moves into its own blob file so
//! that a range scan finds neighbouring keys' values in few places.
//!
//! A scan over values in blob files costs a read for every place its values lie in: a run of
//! records next to each other in one file is one read, however many values it holds. Flush
//! writes each memtable's values in key order, so a database loaded in key order scans well;
//! random overwrites leave a key range's values spread over every flush that touched it, one
//! read per value once the files are out of memory. Here the compaction's output stream is
//! watched through a window of the last [`WINDOW`] separated values: a value that continues a
//! run of its file still open in the window stays where it is, and so does one that starts a
//! new run while the window holds fewer than `max_runs` runs; any other value is moved
//! (appended to the compaction's blob file, which the output writes in key order, so the moved
//! values form one more run of their own). A scan of up to `WINDOW` keys then reads from at most
//! `max_runs` places in older files and one in the newest.
//!
//! Owns the decision only: reading and rewriting the value is the job's. Must not look at
//! anything but the pointers it is shown, in output order.

use crate::blob::BlobPointer;

/// How many separated values in a row (in key order) the run limit holds for: a scan that
/// returns this many values reads at most `max_runs + 1` places in blob files.
pub(crate) const WINDOW: u64 = crate::options::BLOB_SCAN_WINDOW as u64;

/// A record that starts at most this far past the end of the run's last one still continues it:
/// the bytes between (records of values moved or deleted since) cost a scan little when it
/// reads the run in one request.
const MAX_GAP: u64 = 8 << 10;

/// One stretch of records next to each other in one blob file.
#[derive(Debug, Clone, Copy)]
struct Run {
    file_number: u64,
    /// End of the run's last record.
    end: u64,
    /// Position (count of values seen) of the run's last value.
    last_seen: u64,
}

/// The decision for one compaction's output, value by value in key order.
#[derive(Debug)]
pub(crate) struct ScanLocality {
    max_runs: usize,
    runs: Vec<Run>,
    seen: u64,
}

impl ScanLocality {
    /// Keeps at most `max_runs` runs of existing blob files open in any window (at least 1).
    pub(crate) fn new(max_runs: usize) -> Self {
        let max_runs = max_runs.max(1);
        Self { max_runs, runs: Vec::new(), seen: 0 }
    }

    /// Whether the value `ptr` points at can stay where it is; `false` means move it. Each
    /// separated value of the output goes through here once, in output order, moved or not.
    pub(crate) fn keeps(&mut self, ptr: &BlobPointer) -> bool {
        self.seen += 1;
        let seen = self.seen;
        self.runs.retain(|r| seen - r.last_seen <= WINDOW);
        let record_end = ptr.offset.saturating_add(ptr.size);
        let continued = self.runs.iter_mut().find(|r| {
            r.file_number == ptr.file_number && ptr.offset >= r.end && ptr.offset - r.end <= MAX_GAP
        });
        if let Some(run) = continued {
            run.end = record_end;
            run.last_seen = seen;
            return true;
        }
        if self.runs.len() < self.max_runs {
            self.runs.push(Run { file_number: ptr.file_number, end: record_end, last_seen: seen });
            return true;
        }
        false
    }

    /// A value that was moved (for locality or garbage collection) or newly separated: it lies
    /// in the output's own run, and takes no place among the old ones.
    pub(crate) fn note_moved(&mut self) {
        self.seen += 1;
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn ptr(file_number: u64, offset: u64) -> BlobPointer {
        BlobPointer { file_number, offset, size: 500 }
    }

    #[test]
    fn values_in_file_order_all_stay() {
        let mut l = ScanLocality::new(1);
        assert!((0..10_000).all(|i| l.keeps(&ptr(7, 32 + i * 500))));
    }

    #[test]
    fn interleaved_runs_stay_up_to_the_limit() {
        // Three files, each read in its own order, values interleaved: with room for two runs
        // the third file's values move, the first two stay.
        let mut l = ScanLocality::new(2);
        for i in 0..1000 {
            assert!(l.keeps(&ptr(1, i * 500)));
            assert!(l.keeps(&ptr(2, i * 500)));
            assert!(!l.keeps(&ptr(3, i * 500)));
        }
    }

    #[test]
    fn a_run_not_seen_for_a_window_makes_room() {
        let mut l = ScanLocality::new(1);
        assert!(l.keeps(&ptr(1, 0)));
        assert!(!l.keeps(&ptr(2, 0)));
        for _ in 0..WINDOW {
            l.note_moved();
        }
        assert!(l.keeps(&ptr(2, 500)), "file 1's run has left the window");
        assert!(!l.keeps(&ptr(1, 500)));
    }

    #[test]
    fn a_jump_within_a_file_starts_another_run() {
        let mut l = ScanLocality::new(2);
        assert!(l.keeps(&ptr(1, 0)));
        assert!(l.keeps(&ptr(1, 500 + MAX_GAP)), "a gap up to MAX_GAP continues the run");
        assert!(l.keeps(&ptr(1, 1 << 30)), "far ahead: a second run of the same file");
        assert!(!l.keeps(&ptr(1, 0)), "backwards: a third run, over the limit");
    }

    /// The places a scan over these records reads: per file, the records sorted by offset and
    /// grouped wherever one starts more than `MAX_GAP` past the end of those before it.
    fn places(records: &[BlobPointer]) -> usize {
        let mut sorted: Vec<(u64, u64, u64)> =
            records.iter().map(|p| (p.file_number, p.offset, p.offset + p.size)).collect();
        sorted.sort_unstable();
        let mut places = 0;
        let mut current: Option<(u64, u64)> = None; // file, end of the place so far
        for (file, offset, end) in sorted {
            match current {
                Some((f, e)) if f == file && offset <= e + MAX_GAP => current = Some((f, e.max(end))),
                _ => {
                    places += 1;
                    current = Some((file, end));
                }
            }
        }
        places
    }

    proptest! {
        /// Whatever the pointers, the values kept among any `WINDOW` in a row lie in at most
        /// `max_runs` places. (A run's values follow each other within `MAX_GAP`, so each run
        /// lies within one place; and the runs with a value in one window are all still open at
        /// its end, so there are at most `max_runs` of them.)
        #[test]
        fn kept_values_of_any_window_lie_in_few_places(
            max_runs in 1usize..5,
            ptrs in proptest::collection::vec((0u64..6, 0u64..200), 1..600),
        ) {
            let mut l = ScanLocality::new(max_runs);
            let decided: Vec<Option<BlobPointer>> = ptrs
                .iter()
                .map(|&(f, slot)| ptr(f, slot * 500))
                .map(|p| l.keeps(&p).then_some(p))
                .collect();
            for window in decided.windows(WINDOW as usize) {
                let kept: Vec<BlobPointer> = window.iter().flatten().copied().collect();
                let places = places(&kept);
                prop_assert!(places <= max_runs, "{} places in a window", places);
            }
        }
    }
}
