//! Running compactions: one the picker chose, or a manual `compact_range` level by level down
//! to the last. It must not choose what to compact (`compaction::picker` does) or flush.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::{edit_for, run_job, SuperVersion};
use crate::compaction::job::{self, JobEnv, OutputSpec};
use crate::compaction::picker::{self, Compaction};
use crate::db::family::Family;
use crate::db::info_log::{Event, Level};
use crate::db::DbInner;
use crate::error::{Error, Result};
use crate::iter::merging::MergingIterator;
use crate::iter::InternalIterator;
use crate::options::NUM_LEVELS;
use crate::range_del::RangeTombstone;
use crate::version::edit::VersionEdit;
use crate::version::version::Version;

impl DbInner {
    /// Runs one compaction; `manual` relocates every blob file that holds any garbage.
    /// `input_version` is the version `c` was picked from: held until the result is installed,
    /// it keeps the input files counted as live (a family dropped meanwhile, or any other
    /// change, cannot get them deleted under the job), and released before the obsolete files
    /// are deleted, so the inputs go at once.
    pub(crate) fn run_compaction(
        &self,
        family: &Family,
        c: &Compaction,
        manual: bool,
        input_version: Arc<Version>,
    ) -> Result<()> {
        let start = Instant::now();
        let job_id = self.next_job_id();
        let input_bytes = c.input_bytes();
        tracing::info!(
            target: "strata",
            job = job_id,
            level = c.level,
            output_level = c.output_level,
            inputs = c.inputs.len() + c.output_inputs.len(),
            bytes_in = input_bytes,
            trivial_move = c.trivial_move,
            manual,
            "compaction started"
        );
        self.log(
            Level::Info,
            format_args!(
                "[JOB {job_id}] Compacting {}@{} + {}@{} files to L{}, {input_bytes} bytes{}",
                c.inputs.len(),
                c.level,
                c.output_inputs.len(),
                c.output_level,
                c.output_level,
                if c.trivial_move { " (trivial move)" } else { "" }
            ),
        );
        self.log_event(
            Event::new(job_id, "compaction_started")
                .string("cf_name", &family.name)
                .num("level", c.level as u64)
                .num("output_level", c.output_level as u64)
                .nums("files_L", c.inputs.iter().map(|f| f.number))
                .nums("files_output_level", c.output_inputs.iter().map(|f| f.number))
                .num("input_data_size", input_bytes)
                .boolean("trivial_move", c.trivial_move)
                .boolean("manual", manual),
        );
        let mut bytes_out = 0;
        let mut moved_for_scans = (0, 0);
        let mut output_files: Vec<u64> = Vec::new();
        let mut edit = VersionEdit { column_family: family.id, ..VersionEdit::default() };
        for (level, f) in c.all_inputs() {
            edit.deleted_files.push((level as u32, f.number));
        }
        if c.trivial_move {
            for f in &c.inputs {
                edit.new_files.push((c.output_level as u32, (**f).clone()));
            }
            self.stats.trivial_moves.fetch_add(1, Ordering::Relaxed);
        } else {
            let version = family.super_version.load().version.clone();
            let spec = OutputSpec {
                level: c.output_level,
                max_file_size: family.opts.target_file_size,
                bottommost: c.bottommost,
                snapshots: self.snapshots.sequences(),
                relocate_blob_files: blob_files_to_relocate(
                    &version,
                    family.opts.blob_gc_age_cutoff,
                    family.opts.blob_gc_min_garbage_ratio,
                    manual,
                ),
                // Only the last level: values moved higher up would move again on the way down.
                scan_runs: if c.bottommost && c.output_level > 0 { family.opts.blob_scan_runs } else { 0 },
                range_dels: self.compaction_range_dels(c)?,
            };
            let mut input = self.compaction_input(c)?;
            let new_file_number = || self.versions.lock().new_file_number();
            let filter = family.opts.compaction_filter.as_deref();
            let env = JobEnv { compaction_filter: filter, ..self.job_env(family, &new_file_number) };
            let out = job::run(&env, &mut input, &spec)?;
            bytes_out = out.bytes_written;
            moved_for_scans = out.moved_for_scans;
            output_files.extend(out.tables.iter().map(|t| t.number));
            let out_edit = edit_for(&out, c.output_level);
            edit.new_files.extend(out_edit.new_files);
            edit.new_blob_files.extend(out_edit.new_blob_files);
            edit.blob_garbage.extend(out_edit.blob_garbage);
            // Pointers into a blob file no version lists (repair moved a damaged one to lost/)
            // have no file to count garbage against: the MANIFEST would reject the edit.
            edit.blob_garbage.retain(|(n, ..)| version.blob_files.contains_key(n));
            edit.deleted_blob_files = fully_garbage_blob_files(&version, &edit.blob_garbage);
            self.stats.compaction_bytes_read.fetch_add(c.input_bytes(), Ordering::Relaxed);
            self.stats.compaction_bytes_written.fetch_add(out.bytes_written, Ordering::Relaxed);
        }
        self.stats.compactions.fetch_add(1, Ordering::Relaxed);
        self.install(family, edit, Vec::new(), |_, sv, version| SuperVersion {
            mem: Arc::clone(&sv.mem),
            imm: sv.imm.clone(),
            version,
        })?;
        let micros = start.elapsed().as_micros() as u64;
        if c.trivial_move {
            output_files.extend(c.inputs.iter().map(|f| f.number));
        }
        tracing::info!(
            target: "strata",
            job = job_id,
            level = c.level,
            output_level = c.output_level,
            bytes_in = if c.trivial_move { 0 } else { input_bytes },
            bytes_out,
            output_files = output_files.len(),
            trivial_move = c.trivial_move,
            duration_micros = micros,
            "compaction finished"
        );
        self.log(
            Level::Info,
            format_args!(
                "[JOB {job_id}] Compaction finished to L{}: {} files, {} bytes read, {bytes_out} bytes written in {micros} us{}",
                c.output_level,
                output_files.len(),
                if c.trivial_move { 0 } else { input_bytes },
                if c.trivial_move { " (trivial move)" } else { "" }
            ),
        );
        self.log_event(
            Event::new(job_id, "compaction_finished")
                .string("cf_name", &family.name)
                .num("output_level", c.output_level as u64)
                .nums("output_files", output_files.iter().copied())
                .num("bytes_read", if c.trivial_move { 0 } else { input_bytes })
                .num("bytes_written", bytes_out)
                .num("blob_values_moved_for_scans", moved_for_scans.0)
                .num("blob_bytes_moved_for_scans", moved_for_scans.1)
                .boolean("trivial_move", c.trivial_move)
                .num("duration_micros", micros)
                .nums("lsm_state", self.lsm_state(family)),
        );
        drop(input_version);
        self.delete_obsolete_files();
        Ok(())
    }

    fn compaction_input(&self, c: &Compaction) -> Result<MergingIterator> {
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        for (_, f) in c.all_inputs() {
            children.push(Box::new(self.table_cache.table(f.number)?.iter_whole_file()));
        }
        Ok(MergingIterator::new(children))
    }

    /// The range tombstones of the compaction's input tables.
    fn compaction_range_dels(&self, c: &Compaction) -> Result<Vec<RangeTombstone>> {
        let mut out = Vec::new();
        for (_, f) in c.all_inputs().filter(|(_, f)| f.num_range_deletions > 0) {
            if let Some(frags) = self.table_cache.table(f.number)?.range_dels() {
                out.extend(frags.tombstones());
            }
        }
        Ok(out)
    }

    /// Compacts every level's files overlapping `[start, end]` into the level below, top-down,
    /// until the data sits in the last level.
    pub(crate) fn compact_range(
        &self,
        family: &Family,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<()> {
        {
            let mut bg = self.bg.lock();
            bg.manual_waiting += 1;
            while bg.compacting && bg.error.is_none() {
                self.bg_cv.wait(&mut bg);
            }
            bg.manual_waiting -= 1;
            if let Some(e) = &bg.error {
                return Err(e.duplicate());
            }
            bg.compacting = true;
        }
        let result = run_job("manual compaction", || self.compact_levels(family, start, end));
        self.delete_obsolete_files();
        let mut bg = self.bg.lock();
        bg.compacting = false;
        self.bg_cv.notify_all();
        if let Err(e) = &result {
            // A family dropped while it was compacted only ends this call: nothing is wrong
            // with the database, which must stay writable.
            let dropped = family.is_dropped() && matches!(e, Error::InvalidArgument(_));
            if !matches!(e, Error::Closed) && !dropped {
                self.log_background_error("manual compaction", e);
                self.record_background_error(&mut bg, Error::background("manual compaction", e.duplicate()));
            }
        }
        result
    }

    fn compact_levels(&self, family: &Family, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        let last = NUM_LEVELS - 1;
        for level in 0..last {
            if family.is_dropped() {
                return Err(crate::db::families::dropped(family));
            }
            let version = family.super_version.load().version.clone();
            let inputs =
                if level == 0 { version.files[0].clone() } else { version.overlapping(level, start, end) };
            if inputs.is_empty() {
                continue;
            }
            if let Some(c) = picker::compaction_for(&version, level, level + 1, inputs) {
                self.run_compaction(family, &c, false, version)?;
            }
        }
        // Rewrite the last level in place so tombstones and blob garbage are dropped.
        let version = family.super_version.load_full().version.clone();
        let inputs = version.overlapping(last, start, end);
        let chosen =
            if inputs.is_empty() { None } else { picker::compaction_for(&version, last, last, inputs) };
        if let Some(mut c) = chosen {
            c.trivial_move = false;
            self.run_compaction(family, &c, true, version)?;
        }
        Ok(())
    }
}

/// Blob files whose live values a compaction should rewrite: for a manual compaction every file
/// holding garbage, otherwise any file that is mostly garbage and, while garbage is at least
/// `min_garbage_ratio` of all blob bytes, files in the oldest `age_cutoff` fraction that are at
/// least a quarter garbage. (Moving a file's live three quarters to free its dead quarter is
/// the costly part of a random load's compactions: the gate spends it only once the space is
/// worth it.)
fn blob_files_to_relocate(
    v: &Version,
    age_cutoff: f64,
    min_garbage_ratio: f64,
    manual: bool,
) -> HashSet<u64> {
    let n = v.blob_files.len();
    let (garbage, total) =
        v.blob_files.values().fold((0u64, 0u64), |(g, t), s| (g + s.garbage_bytes, t + s.meta.total_bytes));
    let age_cutoff = if (garbage as f64) < min_garbage_ratio * total as f64 { 0.0 } else { age_cutoff };
    let old = (n as f64 * age_cutoff).ceil() as usize;
    v.blob_files
        .values()
        .enumerate()
        .filter(|(i, s)| {
            let ratio = s.garbage_bytes as f64 / s.meta.total_bytes.max(1) as f64;
            (manual && s.garbage_count > 0) || ratio >= 0.75 || (*i < old && ratio >= 0.25)
        })
        .map(|(_, s)| s.meta.number)
        .collect()
}

/// Blob files that become entirely garbage once `garbage` is added.
fn fully_garbage_blob_files(v: &Version, garbage: &[(u64, u64, u64)]) -> Vec<u64> {
    garbage
        .iter()
        .filter(|&&(n, count, _)| {
            v.blob_files.get(&n).is_some_and(|s| s.garbage_count + count >= s.meta.total_count)
        })
        .map(|&(n, _, _)| n)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::*;
    use crate::version::edit::BlobFileMeta;
    use crate::version::version::BlobFileState;

    /// A version whose blob files (numbered from 1, oldest first) hold 100 bytes each, with
    /// these percentages of garbage.
    fn version(garbage_percent: &[u64]) -> Version {
        let mut v = Version::default();
        v.blob_files = garbage_percent
            .iter()
            .enumerate()
            .map(|(i, &g)| {
                let meta =
                    BlobFileMeta { number: i as u64 + 1, file_size: 132, total_count: 10, total_bytes: 100 };
                (meta.number, Arc::new(BlobFileState { meta, garbage_count: g / 10, garbage_bytes: g }))
            })
            .collect::<BTreeMap<_, _>>();
        v
    }

    fn chosen(v: &Version, min_garbage_ratio: f64, manual: bool) -> Vec<u64> {
        let mut out: Vec<u64> =
            blob_files_to_relocate(v, 0.5, min_garbage_ratio, manual).into_iter().collect();
        out.sort_unstable();
        out
    }

    #[test]
    fn old_files_are_collected_only_once_the_garbage_is_worth_it() {
        // 30% and 40% garbage in the old half, 80% in a young file: 30% of all bytes.
        let v = version(&[30, 40, 0, 0, 80, 30]);
        assert_eq!(chosen(&v, 0.0, false), [1, 2, 5], "no gate: the old files and the dead one");
        assert_eq!(chosen(&v, 0.25, false), [1, 2, 5], "30% garbage passes a 25% gate");
        assert_eq!(chosen(&v, 0.4, false), [5], "below the gate only mostly dead files move");
        assert_eq!(chosen(&v, 0.4, true), [1, 2, 5, 6], "a manual compaction collects everything");
    }
}
