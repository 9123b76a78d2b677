//! Choosing the next compaction: a pure function of a `Version` and the options, so it can be
//! tested without a database.
//!
//! Level sizes are dynamic (RocksDB's `level_compaction_dynamic_level_bytes`): the last level
//! holds what it holds, each level above targets a tenth of the one below, and the first level
//! whose target falls to `max_bytes_for_level_base` or less is the base level that L0 compacts
//! into. A small tree therefore compacts L0 straight into the last level. As in RocksDB, no
//! level targets less than `max_bytes_for_level_base`: with a last level of 600 MiB the base
//! level may grow to 256 MiB, not 60, before it is merged down. A base level a tenth of a
//! small last level would be merged into all of it every few flushes (each byte rewritten
//! about ten times at once), and an hourglass-shaped tree favours those merges over L0's.
//! Scores are L0 file count over its trigger, and level bytes over target; the highest score
//! of at least 1 wins.
//! Within a level the file with the least overlap in the next level per byte goes first.
//! Inputs that overlap nothing below are moved, not rewritten (trivial move), and such a file
//! takes up to three of its right-hand neighbours along when they overlap nothing below either
//! (RocksDB's `TryExtendNonL0TrivialMove`).

use std::sync::Arc;

use crate::key;
use crate::options::{Options, NUM_LEVELS};
use crate::version::edit::FileMeta;
use crate::version::version::Version;

/// One chosen compaction.
#[derive(Debug, Clone)]
pub struct Compaction {
    /// The level inputs come from.
    pub level: usize,
    /// The level outputs go to.
    pub output_level: usize,
    /// Files from `level`.
    pub inputs: Vec<Arc<FileMeta>>,
    /// Overlapping files from `output_level`.
    pub output_inputs: Vec<Arc<FileMeta>>,
    /// True when nothing below `output_level` overlaps the key range of all the input files
    /// (those of `output_level` included).
    pub bottommost: bool,
    /// Move the inputs to `output_level` without rewriting them.
    pub trivial_move: bool,
}

impl Compaction {
    /// Every input file with its level.
    pub fn all_inputs(&self) -> impl Iterator<Item = (usize, &Arc<FileMeta>)> {
        let a = self.inputs.iter().map(move |f| (self.level, f));
        a.chain(self.output_inputs.iter().map(move |f| (self.output_level, f)))
    }

    /// Total bytes of input files.
    pub fn input_bytes(&self) -> u64 {
        self.all_inputs().map(|(_, f)| f.file_size).sum()
    }
}

/// Target bytes per level (0 for unused levels above the base level) and the base level.
pub fn level_targets(v: &Version, o: &Options) -> ([u64; NUM_LEVELS], usize) {
    let mut targets = [0u64; NUM_LEVELS];
    let last = NUM_LEVELS - 1;
    let largest = (1..NUM_LEVELS).map(|l| v.level_bytes(l)).max().unwrap_or(0);
    let mut size = largest.max(o.max_bytes_for_level_base);
    let mut base = last;
    for level in (1..=last).rev() {
        targets[level] = size;
        base = level;
        if size <= o.max_bytes_for_level_base {
            break;
        }
        size /= o.level_size_multiplier;
    }
    targets[base] = targets[base].max(o.max_bytes_for_level_base);
    (targets, base)
}

/// Bytes that compaction would have to rewrite to bring every level under its target.
pub fn pending_compaction_bytes(v: &Version, o: &Options) -> u64 {
    let (targets, base) = level_targets(v, o);
    let mut pending = 0;
    if v.level_files(0) >= o.level0_compaction_trigger {
        pending += v.level_bytes(0) + v.level_bytes(base);
    }
    for level in base..NUM_LEVELS - 1 {
        let bytes = v.level_bytes(level);
        if bytes > targets[level] {
            let excess = bytes - targets[level];
            pending += excess * (o.level_size_multiplier + 1);
        }
    }
    pending
}

fn user_range(files: &[Arc<FileMeta>]) -> Option<(Vec<u8>, Vec<u8>)> {
    let lo = files.iter().map(|f| key::user_key(&f.smallest)).min()?;
    let hi = files.iter().map(|f| key::user_key(&f.largest)).max()?;
    Some((lo.to_vec(), hi.to_vec()))
}

fn is_bottommost(v: &Version, output_level: usize, lo: &[u8], hi: &[u8]) -> bool {
    (output_level + 1..NUM_LEVELS).all(|l| v.overlapping(l, Some(lo), Some(hi)).is_empty())
}

fn files_overlap_each_other(files: &[Arc<FileMeta>]) -> bool {
    let mut sorted: Vec<&Arc<FileMeta>> = files.iter().collect();
    sorted.sort_by(|a, b| key::compare(&a.smallest, &b.smallest));
    sorted.windows(2).any(|w| key::user_key(&w[0].largest) >= key::user_key(&w[1].smallest))
}

/// Builds the compaction of `inputs` from `level` into `output_level`.
pub fn compaction_for(
    v: &Version,
    level: usize,
    output_level: usize,
    inputs: Vec<Arc<FileMeta>>,
) -> Option<Compaction> {
    let (lo, hi) = user_range(&inputs)?;
    let output_inputs =
        if output_level == level { Vec::new() } else { v.overlapping(output_level, Some(&lo), Some(&hi)) };
    let trivial_move = output_level != level
        && output_inputs.is_empty()
        && !(level == 0 && files_overlap_each_other(&inputs));
    // The job rewrites the output level's overlapping files whole, so their keys beyond the
    // inputs' range are written too: nothing below may hold any of them (RocksDB's
    // IsBottommostLevel takes the same union).
    let (lo, hi) = match user_range(&output_inputs) {
        Some((a, b)) => (lo.min(a), hi.max(b)),
        None => (lo, hi),
    };
    let bottommost = is_bottommost(v, output_level, &lo, &hi);
    Some(Compaction { level, output_level, inputs, output_inputs, bottommost, trivial_move })
}

/// The most urgent compaction, if any level is over its limit.
pub fn pick(v: &Version, o: &Options) -> Option<Compaction> {
    let (targets, base) = level_targets(v, o);
    let mut best: Option<(f64, usize)> = None;
    let l0_score = v.level_files(0) as f64 / o.level0_compaction_trigger as f64;
    if l0_score >= 1.0 {
        best = Some((l0_score, 0));
    }
    for level in 1..NUM_LEVELS - 1 {
        let bytes = v.level_bytes(level);
        if bytes == 0 {
            continue;
        }
        // Levels above the base level should be empty: drain them first.
        let score = if level < base { f64::MAX } else { bytes as f64 / targets[level].max(1) as f64 };
        if score >= 1.0 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, level));
        }
    }
    let (_, level) = best?;
    if level == 0 {
        return compaction_for(v, 0, base, v.files[0].clone());
    }
    let at = least_overlapping_file(v, level)?;
    let output_level = (level + 1).max(base);
    compaction_for(v, level, output_level, movable_run(v, level, output_level, at, o))
}

/// Most files of one level a single trivial move takes down (RocksDB's four).
const MAX_FILES_MOVED_TOGETHER: usize = 4;

/// File `at` of `level` (above L0), and, when it overlaps nothing in `output_level`, the files
/// right after it in `level` that can go down untouched with it: at most [`MAX_FILES_MOVED_TOGETHER`] files and 25 target
/// file sizes (RocksDB's default `max_compaction_bytes`), their whole key range clear of
/// `output_level`. Moving them costs one MANIFEST record, and a level emptied further than its
/// target asks makes the compactions into it cheaper until it fills again: a sequential load
/// ended with a base level of one file instead of four, each of which every L0 compaction of
/// the requests after it would have rewritten.
fn movable_run(v: &Version, level: usize, output_level: usize, at: usize, o: &Options) -> Vec<Arc<FileMeta>> {
    let files = &v.files[level];
    let file = &files[at];
    let lo = key::user_key(&file.smallest);
    let clear = |hi: &[u8]| v.overlapping(output_level, Some(lo), Some(hi)).is_empty();
    if !clear(key::user_key(&file.largest)) {
        return vec![Arc::clone(file)];
    }
    let limit = o.target_file_size.saturating_mul(25);
    let mut bytes = file.file_size;
    let mut run = vec![Arc::clone(file)];
    for next in &files[at + 1..] {
        if run.len() == MAX_FILES_MOVED_TOGETHER
            || bytes.saturating_add(next.file_size) > limit
            || !clear(key::user_key(&next.largest))
        {
            break;
        }
        bytes += next.file_size;
        run.push(Arc::clone(next));
    }
    run
}

/// The position in `level` of the file whose overlap with the next level, per byte of its own,
/// is smallest.
fn least_overlapping_file(v: &Version, level: usize) -> Option<usize> {
    let next = level + 1;
    (0..v.files[level].len()).min_by_key(|&i| {
        let f = &v.files[level][i];
        let overlap: u64 = v
            .overlapping(next, Some(key::user_key(&f.smallest)), Some(key::user_key(&f.largest)))
            .iter()
            .map(|g| g.file_size)
            .sum();
        overlap.saturating_mul(1024) / f.file_size.max(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{make_internal_key, ValueKind};
    use crate::version::edit::VersionEdit;

    fn meta(number: u64, lo: &str, hi: &str, size: u64) -> FileMeta {
        FileMeta {
            number,
            file_size: size,
            smallest: make_internal_key(lo.as_bytes(), number, ValueKind::Put),
            largest: make_internal_key(hi.as_bytes(), number, ValueKind::Put),
            smallest_seq: number,
            largest_seq: number,
            num_entries: 1,
            num_deletions: 0,
            num_range_deletions: 0,
        }
    }

    fn version(files: Vec<(u32, FileMeta)>) -> Version {
        let edit = VersionEdit { new_files: files, ..Default::default() };
        Version::default().apply(&edit).unwrap()
    }

    #[test]
    fn small_tree_compacts_l0_into_the_last_level() {
        let o = Options::default();
        let v = version((1..=4).map(|i| (0, meta(i, "a", "z", 1 << 20))).collect());
        let c = pick(&v, &o).unwrap();
        assert_eq!((c.level, c.output_level, c.inputs.len()), (0, NUM_LEVELS - 1, 4));
        assert!(!c.trivial_move);
        assert!(c.bottommost);
    }

    #[test]
    fn sequential_l0_files_are_moved_not_rewritten() {
        let o = Options::default();
        let keys = ["a", "b", "c", "d", "e", "f", "g", "h"];
        let v =
            version((0..4).map(|i| (0, meta(i as u64 + 1, keys[2 * i], keys[2 * i + 1], 1 << 20))).collect());
        let c = pick(&v, &o).unwrap();
        assert!(c.trivial_move);
    }

    #[test]
    fn nothing_to_do_below_triggers() {
        let o = Options::default();
        let v = version(vec![(0, meta(1, "a", "b", 10)), (6, meta(2, "a", "z", 1 << 30))]);
        assert!(pick(&v, &o).is_none());
    }

    #[test]
    fn bottommost_covers_the_output_levels_files_beyond_the_inputs() {
        // L4's [m, n] overlaps L5's [a, z]; L6 holds [b, c], which only L5's file overlaps. The
        // job rewrites all of [a, z], so dropping a tombstone at "b" would bring L6's value back.
        let v = version(vec![
            (4, meta(3, "m", "n", 1 << 20)),
            (5, meta(2, "a", "z", 1 << 20)),
            (6, meta(1, "b", "c", 1 << 20)),
        ]);
        let inputs = v.files[4].clone();
        let c = compaction_for(&v, 4, 5, inputs).unwrap();
        assert_eq!(c.output_inputs.len(), 1);
        assert!(!c.bottommost);
        // Without anything under the output level's file, the job is bottommost.
        let v = version(vec![(4, meta(3, "m", "n", 1 << 20)), (5, meta(2, "a", "z", 1 << 20))]);
        let inputs = v.files[4].clone();
        assert!(compaction_for(&v, 4, 5, inputs).unwrap().bottommost);
    }

    #[test]
    fn no_level_targets_less_than_the_base_bytes() {
        // A 600 MiB last level: its base level may hold 256 MiB, not a tenth of it.
        let o = Options::default();
        let v = version(vec![(5, meta(2, "a", "z", 100 << 20)), (6, meta(1, "a", "z", 600 << 20))]);
        let (targets, base) = level_targets(&v, &o);
        assert_eq!((base, targets[5], targets[6]), (5, o.max_bytes_for_level_base, 600 << 20));
        assert!(pick(&v, &o).is_none(), "100 MiB on L5 is under its target");
        let v = version(vec![(5, meta(2, "a", "z", 300 << 20)), (6, meta(1, "a", "z", 600 << 20))]);
        let c = pick(&v, &o).unwrap();
        assert_eq!((c.level, c.output_level), (5, 6));
    }

    #[test]
    fn a_trivial_move_takes_its_clear_neighbours_along() {
        // L5 over its 256 MiB target: five files of 70 MiB, none overlapping L6 but the last.
        let o = Options::default();
        let mut files: Vec<(u32, FileMeta)> = ["a", "c", "e", "g", "i"]
            .iter()
            .zip(["b", "d", "f", "h", "j"])
            .enumerate()
            .map(|(i, (lo, hi))| (5, meta(i as u64 + 10, lo, hi, 70 << 20)))
            .collect();
        files.push((6, meta(1, "iz", "z", 900 << 20)));
        files.push((6, meta(2, "0", "00", 900 << 20)));
        let v = version(files);
        let c = pick(&v, &o).unwrap();
        assert_eq!((c.level, c.output_level), (5, 6));
        assert!(c.trivial_move);
        let moved: Vec<u64> = c.inputs.iter().map(|f| f.number).collect();
        assert_eq!(moved, [10, 11, 12, 13], "four files at most, from the least overlapping on");
        // A neighbour whose range reaches into the next level stays.
        let v = version(vec![
            (5, meta(10, "a", "b", 300 << 20)),
            (5, meta(11, "c", "m", 10 << 20)),
            (6, meta(1, "k", "l", 900 << 20)),
        ]);
        let c = pick(&v, &o).unwrap();
        assert_eq!(c.inputs.iter().map(|f| f.number).collect::<Vec<_>>(), [10]);
        assert!(c.trivial_move);
    }

    #[test]
    fn base_level_rises_as_the_last_level_grows() {
        let o = Options::default();
        let v = version(vec![(6, meta(1, "a", "z", 100 << 30))]);
        let (targets, base) = level_targets(&v, &o);
        assert!(base < NUM_LEVELS - 1);
        assert!(targets[base] <= o.max_bytes_for_level_base);
        assert_eq!(targets[6], 100 << 30);
    }
}
