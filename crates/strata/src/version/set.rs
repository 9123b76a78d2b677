//! `VersionSet`: the current `Version`, the MANIFEST that records how it came to be, and the
//! counters persisted with it (next file number, WAL log number, last sequence). Every change goes
//! through [`VersionSet::log_and_apply`]: the edit is appended and fdatasynced to the MANIFEST
//! before the new version is installed. A new MANIFEST is written whole and then made current by
//! atomically replacing CURRENT (temp file, fsync, rename, directory fsync).
//!
//! Each column family has its own current version and log number; file numbers, the last
//! sequence number and the MANIFEST are shared. A MANIFEST record may hold edits of several
//! families, applied together.
//!
//! Not thread-safe by itself: the database keeps it behind a mutex.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use crate::error::{Error, Result};
use crate::filenames;
use crate::fs::FileSystem;
use crate::key::SeqNo;
use crate::version::edit::{VersionEdit, DEFAULT_FAMILY};
use crate::version::version::Version;
use crate::wal::{LogReader, LogWriter};

/// The comparator name persisted in the MANIFEST.
pub const COMPARATOR_NAME: &str = "strata.BytewiseComparator";

/// A MANIFEST larger than this is rewritten as a snapshot at the next change, until
/// [`VersionSet::set_max_manifest_file_size`] says otherwise (`Options::max_manifest_file_size`).
const MANIFEST_ROLL_BYTES: u64 = 64 << 20;

/// One column family's part of the version set.
#[derive(Clone, Debug)]
pub struct FamilyVersions {
    /// The family's name.
    pub name: String,
    /// Its current version.
    pub current: Arc<Version>,
    /// WALs numbered below this hold nothing of this family that is not in a table.
    pub log_number: u64,
}

/// The current version of each column family plus the MANIFEST writer.
pub struct VersionSet {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    families: BTreeMap<u32, FamilyVersions>,
    /// The largest family id handed out; ids are never reused.
    max_family: u32,
    live: Vec<Weak<Version>>,
    next_file_number: u64,
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
    /// Table and blob file numbers that an edit in this MANIFEST deleted, or that belonged to
    /// a family it dropped: provably obsolete.
    pub deleted_files: HashSet<u64>,
}

/// The name of the column family every database has, which cannot be dropped.
pub const DEFAULT_FAMILY_NAME: &str = "default";

fn default_families() -> BTreeMap<u32, FamilyVersions> {
    let default = FamilyVersions {
        name: DEFAULT_FAMILY_NAME.to_string(),
        current: Arc::new(Version::default()),
        log_number: 0,
    };
    BTreeMap::from([(DEFAULT_FAMILY, default)])
}

/// Applies `edit` to `families`: creates, drops, or moves one family to its next version,
/// which it returns (for a drop, the family's last version). An edit that names a family that
/// does not exist, or creates one that does, is corruption.
fn apply_to(
    families: &mut BTreeMap<u32, FamilyVersions>,
    max_family: &mut u32,
    edit: &VersionEdit,
) -> Result<Arc<Version>> {
    let id = edit.column_family;
    if let Some(max) = edit.max_column_family {
        *max_family = (*max_family).max(max);
    }
    if let Some(name) = &edit.add_column_family {
        if families.contains_key(&id) || families.values().any(|f| &f.name == name) {
            return Err(Error::corruption(format!("column family {id} ({name:?}) is created twice")));
        }
        *max_family = (*max_family).max(id);
        let empty =
            FamilyVersions { name: name.clone(), current: Arc::new(Version::default()), log_number: 0 };
        families.insert(id, empty);
    }
    let family = families.get_mut(&id).ok_or_else(|| {
        Error::corruption(format!("an edit names column family {id}, which does not exist"))
    })?;
    let next = Arc::new(family.current.apply(edit)?);
    family.current = Arc::clone(&next);
    if let Some(n) = edit.log_number {
        family.log_number = family.log_number.max(n);
    }
    if edit.drop_column_family {
        if id == DEFAULT_FAMILY {
            return Err(Error::corruption("an edit drops the default column family"));
        }
        families.remove(&id);
    }
    Ok(next)
}

impl VersionSet {
    /// Starts an empty database: writes MANIFEST-000001 and CURRENT.
    pub fn create(dir: &Path, fs: Arc<dyn FileSystem>) -> Result<VersionSet> {
        let mut set = VersionSet {
            dir: dir.to_path_buf(),
            fs,
            families: default_families(),
            max_family: DEFAULT_FAMILY,
            live: Vec::new(),
            next_file_number: 1,
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
        let mut families = default_families();
        let mut max_family = DEFAULT_FAMILY;
        let (mut next_file, mut last_seq, mut saw_comparator) = (None, 0, false);
        let mut deleted_files = HashSet::new();
        let mut end_of_records = 0;
        let in_manifest = |e: Error| match e {
            Error::Corruption(m) => Error::Corruption(format!("{name}: {m}")),
            other => other,
        };
        while let Some(record) = reader.read_record().map_err(in_manifest)? {
            end_of_records = reader.last_record_end();
            for edit in VersionEdit::decode_group(&record).map_err(in_manifest)? {
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
                let version = apply_to(&mut families, &mut max_family, &edit).map_err(in_manifest)?;
                if edit.drop_column_family {
                    deleted_files.extend(version.table_numbers());
                    deleted_files.extend(version.blob_files.keys().copied());
                }
                next_file = edit.next_file_number.or(next_file);
                last_seq = edit.last_sequence.unwrap_or(last_seq);
            }
        }
        let next_file_number =
            next_file.ok_or_else(|| Error::corruption(format!("{name} has no next file number")))?;
        if !saw_comparator {
            return Err(Error::corruption(format!("{name} does not name its comparator")));
        }
        let set = VersionSet {
            dir: dir.to_path_buf(),
            fs,
            families,
            max_family,
            live: Vec::new(),
            next_file_number: next_file_number.max(manifest_number + 1),
            last_sequence: last_seq,
            manifest: None,
            manifest_number,
            max_manifest_file_size: MANIFEST_ROLL_BYTES,
        };
        let torn_tail =
            (reader.tail_dropped_bytes() > 0).then(|| (end_of_records, reader.tail_dropped_bytes()));
        Ok(Recovered { set, manifest_number, torn_tail, deleted_files })
    }

    /// The default column family's current version.
    pub fn current(&self) -> Arc<Version> {
        Arc::clone(&self.families[&DEFAULT_FAMILY].current)
    }

    /// The live column families by id.
    pub fn families(&self) -> &BTreeMap<u32, FamilyVersions> {
        &self.families
    }

    /// Bytes of the SST and blob files of every family's current version.
    pub fn live_bytes(&self) -> u64 {
        self.families.values().map(|f| f.current.live_bytes()).sum()
    }

    /// The id the next created column family gets.
    pub fn next_family_id(&self) -> u32 {
        self.max_family + 1
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

    /// WAL files numbered below this are fully flushed: the smallest log number of any family.
    pub fn log_number(&self) -> u64 {
        self.families.values().map(|f| f.log_number).min().unwrap_or(0)
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
        let mut installed = self.log_and_apply_group(vec![edit])?;
        installed.pop().ok_or(Error::Closed)
    }

    /// As [`VersionSet::log_and_apply`] for edits of several families, appended as one record
    /// and so applied all or none; returns each edit's family version (for a drop, the last).
    pub fn log_and_apply_group(&mut self, edits: Vec<VersionEdit>) -> Result<Vec<Arc<Version>>> {
        let last_sequence = self.last_sequence;
        let applied = self.try_log_and_apply(edits);
        if applied.is_err() {
            self.last_sequence = last_sequence;
            self.manifest = None;
        }
        applied
    }

    fn try_log_and_apply(&mut self, mut edits: Vec<VersionEdit>) -> Result<Vec<Arc<Version>>> {
        let (mut families, mut max_family) = (self.families.clone(), self.max_family);
        let mut versions = Vec::with_capacity(edits.len());
        for edit in &edits {
            versions.push(apply_to(&mut families, &mut max_family, edit)?);
        }
        let rolled_over = self.manifest.as_ref().is_none_or(|m| m.file_size() > self.max_manifest_file_size);
        if let Some(s) = edits.iter().filter_map(|e| e.last_sequence).max() {
            self.last_sequence = self.last_sequence.max(s);
        }
        if edits.iter().any(|e| !e.new_files.is_empty() || !e.new_blob_files.is_empty()) {
            // New tables and blob files were fsynced by their writers; their directory entries
            // must be durable before the MANIFEST refers to them.
            crate::util::kill_point::kill_point("dir.sync.before");
            self.fs.sync_dir(&self.dir)?;
            crate::util::kill_point::kill_point("dir.sync.after");
        }
        if rolled_over {
            self.write_new_manifest(&families, max_family)?;
        } else {
            if let Some(first) = edits.first_mut() {
                first.next_file_number = Some(self.next_file_number);
            }
            let manifest = self.manifest.as_mut().ok_or(Error::Closed)?;
            crate::util::kill_point::kill_point("manifest.append.before");
            manifest.add_record(&VersionEdit::encode_group(&edits))?;
            crate::util::kill_point::kill_point("manifest.append.after");
            manifest.sync()?;
            crate::util::kill_point::kill_point("manifest.sync.after");
        }
        self.install(families, max_family);
        Ok(versions)
    }

    /// Makes `families` current; the versions they replace stay counted in `live_files` while
    /// a reader holds them.
    fn install(&mut self, families: BTreeMap<u32, FamilyVersions>, max_family: u32) {
        self.live.retain(|w| w.strong_count() > 0);
        for (id, old) in &self.families {
            let unchanged = families.get(id).is_some_and(|f| Arc::ptr_eq(&f.current, &old.current));
            if !unchanged {
                self.live.push(Arc::downgrade(&old.current));
            }
        }
        self.families = families;
        self.max_family = max_family;
    }

    /// Writes a new MANIFEST holding a snapshot of the current state and points CURRENT at it.
    pub fn roll_manifest(&mut self) -> Result<()> {
        let families = self.families.clone();
        self.write_new_manifest(&families, self.max_family)
    }

    /// Writes a new MANIFEST holding `families` and the counters, then points CURRENT at it.
    fn write_new_manifest(
        &mut self,
        families: &BTreeMap<u32, FamilyVersions>,
        max_family: u32,
    ) -> Result<()> {
        let number = self.new_file_number();
        let writer = self.write_snapshot(&self.dir, number, families, max_family)?;
        let current = format!("{}\n", filenames::manifest_name(number));
        crate::util::kill_point::kill_point("current.rename.before");
        self.fs.write_atomic(&self.dir, filenames::CURRENT, current.as_bytes())?;
        crate::util::kill_point::kill_point("current.rename.after");
        self.manifest = Some(writer);
        self.manifest_number = number;
        Ok(())
    }

    /// Writes a MANIFEST holding the current versions and the counters into `dir`, another
    /// database's directory (a checkpoint's), and returns the families it holds and the
    /// MANIFEST's file number. CURRENT there is the caller's to write, once the files it lists
    /// are in place.
    pub fn write_manifest_into(&mut self, dir: &Path) -> Result<(BTreeMap<u32, FamilyVersions>, u64)> {
        let number = self.new_file_number();
        let families = self.families.clone();
        self.write_snapshot(dir, number, &families, self.max_family)?;
        Ok((families, number))
    }

    /// Writes and syncs `dir/MANIFEST-number` holding `families` and the counters, as one
    /// record: the default family's edit first (it carries the counters), then one edit per
    /// other family that creates it with its files.
    fn write_snapshot(
        &self,
        dir: &Path,
        number: u64,
        families: &BTreeMap<u32, FamilyVersions>,
        max_family: u32,
    ) -> Result<LogWriter> {
        let path = dir.join(filenames::manifest_name(number));
        let mut writer = LogWriter::new(self.fs.create(&path)?);
        let mut edits = Vec::with_capacity(families.len());
        for (&id, family) in families {
            let mut edit = family.current.snapshot_edit();
            edit.column_family = id;
            edit.log_number = Some(family.log_number);
            if id == DEFAULT_FAMILY {
                edit.comparator = Some(COMPARATOR_NAME.to_string());
                edit.next_file_number = Some(self.next_file_number);
                edit.last_sequence = Some(self.last_sequence);
                edit.max_column_family = (max_family != DEFAULT_FAMILY).then_some(max_family);
            } else {
                edit.add_column_family = Some(family.name.clone());
            }
            edits.push(edit);
        }
        writer.add_record(&VersionEdit::encode_group(&edits))?;
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
            families: default_families(),
            max_family: DEFAULT_FAMILY,
            live: Vec::new(),
            next_file_number,
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
        let current = self.families.values().map(|f| Arc::clone(&f.current));
        for v in held.chain(current) {
            tables.extend(v.table_numbers());
            blobs.extend(v.blob_files.keys().copied());
        }
        (tables, blobs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::default_fs;

    fn create(id: u32, name: &str, log: u64) -> VersionEdit {
        VersionEdit {
            column_family: id,
            add_column_family: Some(name.into()),
            max_column_family: Some(id),
            log_number: Some(log),
            ..VersionEdit::default()
        }
    }

    fn names(set: &VersionSet) -> Vec<(u32, String, u64)> {
        set.families().iter().map(|(&id, f)| (id, f.name.clone(), f.log_number)).collect()
    }

    #[test]
    fn families_survive_recovery_and_a_new_manifest_with_their_log_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let mut set = VersionSet::create(dir.path(), default_fs()).unwrap();
        set.log_and_apply(create(1, "a", 5)).unwrap();
        set.log_and_apply(create(2, "b", 6)).unwrap();
        let drop_a = VersionEdit { column_family: 1, drop_column_family: true, ..VersionEdit::default() };
        let bump = VersionEdit { column_family: 2, log_number: Some(9), ..VersionEdit::default() };
        set.log_and_apply_group(vec![drop_a, bump]).unwrap();
        assert_eq!(set.next_family_id(), 3, "ids are never reused");
        let want = vec![(0, "default".to_string(), 0), (2, "b".to_string(), 9)];
        assert_eq!(names(&set), want);
        assert_eq!(set.log_number(), 0, "the least log number of the live families");
        let recovered = VersionSet::recover(dir.path(), default_fs()).unwrap();
        assert_eq!(names(&recovered.set), want);
        assert_eq!(recovered.set.next_family_id(), 3);
        let mut set = recovered.set;
        set.roll_manifest().unwrap();
        let rolled = VersionSet::recover(dir.path(), default_fs()).unwrap().set;
        assert_eq!(names(&rolled), want);
        assert_eq!(rolled.next_family_id(), 3, "the snapshot keeps the largest id");
    }

    #[test]
    fn contradictory_family_edits_are_refused_and_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut set = VersionSet::create(dir.path(), default_fs()).unwrap();
        set.log_and_apply(create(1, "a", 1)).unwrap();
        let bad = [
            create(1, "again", 1),
            create(2, "a", 1),
            VersionEdit { column_family: 7, log_number: Some(1), ..VersionEdit::default() },
            VersionEdit { column_family: 0, drop_column_family: true, ..VersionEdit::default() },
        ];
        for edit in bad {
            let err = set.log_and_apply(edit.clone()).unwrap_err();
            assert!(err.is_corruption(), "{edit:?}: {err}");
        }
        assert_eq!(names(&set), vec![(0, "default".to_string(), 0), (1, "a".to_string(), 1)]);
    }

    #[test]
    fn a_group_applies_all_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut set = VersionSet::create(dir.path(), default_fs()).unwrap();
        let good = create(1, "a", 1);
        let bad = VersionEdit { column_family: 9, log_number: Some(1), ..VersionEdit::default() };
        assert!(set.log_and_apply_group(vec![good, bad]).is_err());
        assert_eq!(set.families().len(), 1, "the good edit of a refused group is not applied");
    }
}
