//! `VersionSet`: the current `Version`, the MANIFEST that records how it came to be, and the
//! counters persisted with it (next file number, WAL log number, last sequence). Every change goes
//! through [`VersionSet::log_and_apply`]: the edit is appended and fdatasynced to the MANIFEST
//! before the new version is installed. A new MANIFEST is written whole and then made current by
//! atomically replacing CURRENT (temp file, fsync, rename, directory fsync).
//!
//! Not thread-safe by itself: the database keeps it behind a mutex.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use crate::error::{Error, Result};
use crate::filenames;
use crate::fs::FileSystem;
use crate::key::SeqNo;
use crate::version::edit::VersionEdit;
use crate::version::version::Version;
use crate::wal::{LogReader, LogWriter};

/// The comparator name persisted in the MANIFEST.
pub const COMPARATOR_NAME: &str = "strata.BytewiseComparator";

/// A MANIFEST larger than this is rewritten as a snapshot at the next change, until
/// [`VersionSet::set_max_manifest_file_size`] says otherwise (`Options::max_manifest_file_size`).
const MANIFEST_ROLL_BYTES: u64 = 64 << 20;

/// The current version plus the MANIFEST writer.
pub struct VersionSet {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    current: Arc<Version>,
    live: Vec<Weak<Version>>,
    next_file_number: u64,
    log_number: u64,
    last_sequence: SeqNo,
    manifest: Option<LogWriter>,
    manifest_number: u64,
    max_manifest_file_size: u64,
}

/// What recovery found in the MANIFEST.
pub struct Recovered {
    /// The rebuilt version set (its MANIFEST is not yet open for writing).
    pub set: VersionSet,
    /// The MANIFEST file that was read.
    pub manifest_number: u64,
    /// A torn last record that was dropped: (its offset, its bytes). Its edit was never
    /// acknowledged: the record is synced before the edit is installed.
    pub torn_tail: Option<(u64, u64)>,
    /// Table and blob file numbers that an edit in this MANIFEST deleted: provably obsolete.
    pub deleted_files: HashSet<u64>,
}

impl VersionSet {
    /// Starts an empty database: writes MANIFEST-000001 and CURRENT.
    pub fn create(dir: &Path, fs: Arc<dyn FileSystem>) -> Result<VersionSet> {
        let mut set = VersionSet {
            dir: dir.to_path_buf(),
            fs,
            current: Arc::new(Version::default()),
            live: Vec::new(),
            next_file_number: 1,
            log_number: 0,
            last_sequence: 0,
            manifest: None,
            manifest_number: 0,
            max_manifest_file_size: MANIFEST_ROLL_BYTES,
        };
        set.roll_manifest()?;
        Ok(set)
    }

    /// Rebuilds the version set from CURRENT and the MANIFEST it names.
    pub fn recover(dir: &Path, fs: Arc<dyn FileSystem>) -> Result<Recovered> {
        let current = fs.read_all(&dir.join(filenames::CURRENT))?;
        let name = std::str::from_utf8(&current)
            .ok()
            .and_then(|s| s.strip_suffix('\n'))
            .filter(|s| !s.contains('/'))
            .ok_or_else(|| Error::corruption("CURRENT is not a MANIFEST name ending in a newline"))?;
        let manifest_number = match filenames::parse(name) {
            Some((filenames::FileKind::Manifest, n)) => n,
            _ => return Err(Error::corruption(format!("CURRENT names {name:?}, not a MANIFEST"))),
        };
        let file = fs.open_sequential(&dir.join(name))?;
        let mut reader = LogReader::new(file, false);
        let mut version = Version::default();
        let (mut next_file, mut log_number, mut last_seq, mut saw_comparator) = (None, 0, 0, false);
        let mut deleted_files = HashSet::new();
        let mut end_of_records = 0;
        let in_manifest = |e: Error| match e {
            Error::Corruption(m) => Error::Corruption(format!("{name}: {m}")),
            other => other,
        };
        while let Some(record) = reader.read_record().map_err(in_manifest)? {
            end_of_records = reader.last_record_end();
            let edit = VersionEdit::decode(&record).map_err(in_manifest)?;
            deleted_files.extend(edit.deleted_files.iter().map(|&(_, n)| n));
            deleted_files.extend(edit.deleted_blob_files.iter().copied());
            if let Some(c) = &edit.comparator {
                if c != COMPARATOR_NAME {
                    return Err(Error::InvalidArgument(format!(
                        "database uses comparator {c:?}, this build provides {COMPARATOR_NAME:?}"
                    )));
                }
                saw_comparator = true;
            }
            version = version.apply(&edit)?;
            next_file = edit.next_file_number.or(next_file);
            log_number = edit.log_number.unwrap_or(log_number);
            last_seq = edit.last_sequence.unwrap_or(last_seq);
        }
        let next_file_number =
            next_file.ok_or_else(|| Error::corruption(format!("{name} has no next file number")))?;
        if !saw_comparator {
            return Err(Error::corruption(format!("{name} does not name its comparator")));
        }
        let set = VersionSet {
            dir: dir.to_path_buf(),
            fs,
            current: Arc::new(version),
            live: Vec::new(),
            next_file_number: next_file_number.max(manifest_number + 1),
            log_number,
            last_sequence: last_seq,
            manifest: None,
            manifest_number,
            max_manifest_file_size: MANIFEST_ROLL_BYTES,
        };
        let torn_tail =
            (reader.tail_dropped_bytes() > 0).then(|| (end_of_records, reader.tail_dropped_bytes()));
        Ok(Recovered { set, manifest_number, torn_tail, deleted_files })
    }

    /// The current version.
    pub fn current(&self) -> Arc<Version> {
        Arc::clone(&self.current)
    }

    /// Reserves a new file number.
    pub fn new_file_number(&mut self) -> u64 {
        let n = self.next_file_number;
        self.next_file_number += 1;
        n
    }

    /// Makes sure file numbers already on disk are never handed out again.
    pub fn mark_file_number_used(&mut self, n: u64) {
        if self.next_file_number <= n {
            self.next_file_number = n + 1;
        }
    }

    /// WAL files numbered below this are fully flushed.
    pub fn log_number(&self) -> u64 {
        self.log_number
    }

    /// The last sequence number recorded in the MANIFEST.
    pub fn last_sequence(&self) -> SeqNo {
        self.last_sequence
    }

    /// The MANIFEST being written.
    pub fn manifest_number(&self) -> u64 {
        self.manifest_number
    }

    /// Rolls the MANIFEST once it is larger than `bytes` (see `Options::max_manifest_file_size`).
    pub fn set_max_manifest_file_size(&mut self, bytes: u64) {
        self.max_manifest_file_size = bytes;
    }

    /// Appends `edit` durably to the MANIFEST, then installs the version it produces.
    ///
    /// # Errors
    /// Any IO error; the current version and the counters are then unchanged, and the caller
    /// must treat the database as failed. The MANIFEST's tail is unknown (a torn record, or
    /// pages a failed fsync dropped), so it is never appended to again: the next edit, after
    /// `Db::resume`, writes a new MANIFEST.
    pub fn log_and_apply(&mut self, edit: VersionEdit) -> Result<Arc<Version>> {
        let counters = (self.log_number, self.last_sequence);
        let applied = self.try_log_and_apply(edit);
        if applied.is_err() {
            (self.log_number, self.last_sequence) = counters;
            self.manifest = None;
        }
        applied
    }

    fn try_log_and_apply(&mut self, mut edit: VersionEdit) -> Result<Arc<Version>> {
        let next = self.current.apply(&edit)?;
        let rolled_over = self.manifest.as_ref().is_none_or(|m| m.file_size() > self.max_manifest_file_size);
        if let Some(n) = edit.log_number {
            self.log_number = self.log_number.max(n);
        }
        if let Some(s) = edit.last_sequence {
            self.last_sequence = self.last_sequence.max(s);
        }
        if !edit.new_files.is_empty() || !edit.new_blob_files.is_empty() {
            // New tables and blob files were fsynced by their writers; their directory entries
            // must be durable before the MANIFEST refers to them.
            crate::util::kill_point::kill_point("dir.sync.before");
            self.fs.sync_dir(&self.dir)?;
            crate::util::kill_point::kill_point("dir.sync.after");
        }
        let installed = Arc::new(next);
        if rolled_over {
            self.write_new_manifest(&installed)?;
            self.install(Arc::clone(&installed));
        } else {
            edit.next_file_number = Some(self.next_file_number);
            let manifest = self.manifest.as_mut().ok_or(Error::Closed)?;
            crate::util::kill_point::kill_point("manifest.append.before");
            manifest.add_record(&edit.encode())?;
            crate::util::kill_point::kill_point("manifest.append.after");
            manifest.sync()?;
            crate::util::kill_point::kill_point("manifest.sync.after");
            self.install(Arc::clone(&installed));
        }
        Ok(installed)
    }

    fn install(&mut self, v: Arc<Version>) {
        self.live.retain(|w| w.strong_count() > 0);
        self.live.push(Arc::downgrade(&self.current));
        self.current = v;
    }

    /// Writes a new MANIFEST holding a snapshot of the current state and points CURRENT at it.
    pub fn roll_manifest(&mut self) -> Result<()> {
        let current = Arc::clone(&self.current);
        self.write_new_manifest(&current)
    }

    /// Writes a new MANIFEST holding `version` and the counters, then points CURRENT at it.
    fn write_new_manifest(&mut self, version: &Version) -> Result<()> {
        let number = self.new_file_number();
        let writer = self.write_snapshot(&self.dir, number, version)?;
        let current = format!("{}\n", filenames::manifest_name(number));
        crate::util::kill_point::kill_point("current.rename.before");
        self.fs.write_atomic(&self.dir, filenames::CURRENT, current.as_bytes())?;
        crate::util::kill_point::kill_point("current.rename.after");
        self.manifest = Some(writer);
        self.manifest_number = number;
        Ok(())
    }

    /// Writes a MANIFEST holding the current version and the counters into `dir`, another
    /// database's directory (a checkpoint's), and returns the current version and the MANIFEST's
    /// file number. CURRENT there is the caller's to write, once the files it lists are in place.
    pub fn write_manifest_into(&mut self, dir: &Path) -> Result<(Arc<Version>, u64)> {
        let number = self.new_file_number();
        let version = Arc::clone(&self.current);
        self.write_snapshot(dir, number, &version)?;
        Ok((version, number))
    }

    /// Writes and syncs `dir/MANIFEST-number` holding `version` and the counters.
    fn write_snapshot(&self, dir: &Path, number: u64, version: &Version) -> Result<LogWriter> {
        let path = dir.join(filenames::manifest_name(number));
        let mut writer = LogWriter::new(self.fs.create(&path)?);
        let mut edit = version.snapshot_edit();
        edit.comparator = Some(COMPARATOR_NAME.to_string());
        edit.next_file_number = Some(self.next_file_number);
        edit.log_number = Some(self.log_number);
        edit.last_sequence = Some(self.last_sequence);
        writer.add_record(&edit.encode())?;
        writer.sync()?;
        Ok(writer)
    }

    /// An empty version set that hands out file numbers from `next_file_number` and has no
    /// MANIFEST: for repair, whose flushes and rewrites need file numbers before it writes a
    /// MANIFEST of its own. Does no IO. Not for `log_and_apply`, which would start a MANIFEST
    /// and point CURRENT at it: repair writes its MANIFEST itself.
    pub(crate) fn detached(dir: &Path, fs: Arc<dyn FileSystem>, next_file_number: u64) -> VersionSet {
        VersionSet {
            dir: dir.to_path_buf(),
            fs,
            current: Arc::new(Version::default()),
            live: Vec::new(),
            next_file_number,
            log_number: 0,
            last_sequence: 0,
            manifest: None,
            manifest_number: 0,
            max_manifest_file_size: MANIFEST_ROLL_BYTES,
        }
    }

    /// SST and blob file numbers referenced by the current version or any version still held by
    /// a reader.
    pub fn live_files(&self) -> (HashSet<u64>, HashSet<u64>) {
        let mut tables = HashSet::new();
        let mut blobs = HashSet::new();
        let held = self.live.iter().filter_map(Weak::upgrade);
        for v in held.chain(std::iter::once(Arc::clone(&self.current))) {
            tables.extend(v.table_numbers());
            blobs.extend(v.blob_files.keys().copied());
        }
        (tables, blobs)
    }
}
