//! What a crash leaves of a `MemFs` image, by [`CrashMode`]: which directory changes and
//! which unsynced bytes or pages survive (the model is described in the `memfs` module doc).
//! It reads the live image and builds a new one; it must not change the image it reads.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::rng::Rng;

use super::file::{FileData, FileRef};
use super::tree::{Dir, DirChange, Image};
use super::{lock, CrashMode, PAGE_SIZE};

impl Image {
    /// The image a reboot would find; everything in it is durable.
    pub(super) fn crashed(&self, mode: CrashMode) -> Image {
        self.crashed_keeping(mode, None)
    }

    /// As [`Image::crashed`], except that the file at `keep` (if any) keeps every byte written
    /// to it, synced or not.
    pub(super) fn crashed_keeping(&self, mode: CrashMode, keep: Option<&Path>) -> Image {
        let mut rng = match mode {
            CrashMode::Seeded(seed) | CrashMode::Pages(seed) => Some(Rng::new(seed)),
            _ => None,
        };
        // Every file is locked at once (the image lock held by the caller keeps anyone else
        // from waiting for two), so the crash is one instant even while writers keep appending.
        let files = self.all_files();
        let guards: HashMap<*const Mutex<FileData>, MutexGuard<'_, FileData>> =
            files.iter().map(|f| (Arc::as_ptr(f), lock(f))).collect();
        // One survivor per file, so names sharing a file before the crash share it after.
        let mut survivors: HashMap<*const Mutex<FileData>, FileRef> = HashMap::new();
        let mut dirs = BTreeMap::new();
        for (path, d) in &self.dirs {
            let entries = surviving_entries(d, mode, rng.as_mut());
            let mut survived = BTreeMap::new();
            for (name, file) in entries {
                let kept = keep.is_some_and(|k| k == path.join(&name));
                let survivor = survivors.entry(Arc::as_ptr(&file)).or_insert_with(|| {
                    let file_mode = if kept { CrashMode::KeepUnsynced } else { mode };
                    let data = surviving_bytes(&guards[&Arc::as_ptr(&file)], file_mode, rng.as_mut());
                    Arc::new(Mutex::new(FileData::durable(data)))
                });
                survived.insert(name, Arc::clone(survivor));
            }
            let durable = survived.clone();
            dirs.insert(path.clone(), Dir { live: survived, durable, pending: Vec::new() });
        }
        Image { dirs, locks: HashSet::new(), epoch: self.epoch + 1 }
    }

    /// Every file any name refers to, now, durably or through an unsynced change; each once.
    fn all_files(&self) -> Vec<FileRef> {
        let mut seen = HashSet::new();
        let mut files = Vec::new();
        for d in self.dirs.values() {
            let changed = d.pending.iter().map(|c| match c {
                DirChange::Insert(_, f) | DirChange::Remove(_, f) | DirChange::Rename { file: f, .. } => f,
            });
            for f in d.live.values().chain(d.durable.values()).chain(changed) {
                if seen.insert(Arc::as_ptr(f)) {
                    files.push(Arc::clone(f));
                }
            }
        }
        files
    }
}

/// A keep rate for one file's pages or one directory's changes: all-or-nothing comes up often.
fn keep_percent(rng: &mut Rng) -> u64 {
    [0, 25, 50, 75, 100][rng.below(5) as usize]
}

/// The entries of one directory after a crash.
fn surviving_entries(d: &Dir, mode: CrashMode, rng: Option<&mut Rng>) -> BTreeMap<String, FileRef> {
    match (mode, rng) {
        (CrashMode::KeepUnsynced, _) => d.live.clone(),
        (CrashMode::Pages(_), Some(rng)) => {
            let mut entries = d.durable.clone();
            let percent = keep_percent(rng);
            for change in &d.pending {
                if rng.percent(percent) {
                    change.apply(&mut entries);
                }
            }
            entries
        }
        _ => d.durable.clone(),
    }
}

/// The bytes of one file after a crash.
fn surviving_bytes(f: &FileData, mode: CrashMode, rng: Option<&mut Rng>) -> Vec<u8> {
    let out = f.durable_image();
    match (mode, rng) {
        (CrashMode::KeepUnsynced, _) => f.data.clone(),
        (CrashMode::Seeded(_), Some(rng)) => seeded_tail(f, out, rng),
        (CrashMode::Pages(_), Some(rng)) => kept_pages(f, out, rng),
        _ => out,
    }
}

/// [`CrashMode::Seeded`]: one contiguous run from the lowest unsynced offset survives, or is
/// replaced by zeros, or survives in part with zeros after it.
fn seeded_tail(f: &FileData, mut out: Vec<u8>, rng: &mut Rng) -> Vec<u8> {
    let from = f.lowest_write.min(f.synced);
    let unsynced = f.data.len().saturating_sub(from);
    if unsynced == 0 {
        return out;
    }
    let n = rng.up_to(unsynced);
    match rng.below(4) {
        0 => {}
        1 => overlay(&mut out, from, &f.data[from..from + n]),
        2 => overlay(&mut out, from, &vec![0u8; n]),
        _ => {
            // The first part reached the disk, the rest reads back as zeros (the device never
            // returns bytes nobody wrote: docs/durability.md, "Assumptions").
            let kept = rng.up_to(n);
            overlay(&mut out, from, &f.data[from..from + kept]);
            overlay(&mut out, from + kept, &vec![0u8; n - kept]);
        }
    }
    out
}

/// [`CrashMode::Pages`]: each dirty page is kept whole (its live bytes) or dropped (the durable
/// image's bytes, or a zero hole if a later page beyond the durable length was kept).
fn kept_pages(f: &FileData, mut out: Vec<u8>, rng: &mut Rng) -> Vec<u8> {
    let percent = keep_percent(rng);
    for &page in &f.dirty {
        let start = page * PAGE_SIZE;
        let end = f.data.len().min(start + PAGE_SIZE);
        if rng.percent(percent) && start < end {
            overlay(&mut out, start, &f.data[start..end]);
        }
    }
    out
}

/// Writes `bytes` at `at`, growing `out` (with zeros) as needed.
fn overlay(out: &mut Vec<u8>, at: usize, bytes: &[u8]) {
    if out.len() < at + bytes.len() {
        out.resize(at + bytes.len(), 0);
    }
    out[at..at + bytes.len()].copy_from_slice(bytes);
}
