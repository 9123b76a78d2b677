//! Repair (RocksDB's `RepairDB`): rebuilds a database that will not open from the data files it
//! still has. Under the lock it reads every WAL in salvage mode and flushes what decodes to new
//! tables, reads every table and blob file whole (checksums verified), rewrites the tables whose
//! key and sequence ranges overlap in a way no level layout can read correctly, and writes a
//! fresh MANIFEST listing what survived, which CURRENT then names.
//!
//! Owns: deciding what goes into the new MANIFEST and moving everything else to `lost/`.
//! Must not: delete or change any data file (a file it takes out of the database is renamed into
//! `lost/`, never removed), change a file format, or run while another handle has the database
//! open (it takes the lock). It works from the files alone: old MANIFESTs only contribute the
//! file-number and sequence counters they still yield.
//!
//! The WAL salvage is `salvage.rs`; placing tables on levels, and rewriting the ones whose ranges
//! overlap, is `placement.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::DbInner;
use crate::blob::{BlobPointer, BlobReader};
use crate::error::{Error, Result};
use crate::filenames::{self, FileKind};
use crate::fs::{FileLock, FileSystem};
use crate::iter::InternalIterator;
use crate::key::{self, ValueKind};
use crate::options::Options;
use crate::sst::Table;
use crate::version::edit::DEFAULT_FAMILY;
use crate::version::edit::{BlobFileMeta, FileMeta, VersionEdit};
use crate::version::set::{VersionSet, COMPARATOR_NAME};
use crate::version::version::Version;
use crate::wal::{LogReader, LogWriter};

pub use crate::filenames::LOST_DIR;

mod placement;
mod salvage;

/// A file [`Db::repair`](crate::Db::repair) moved into `lost/`, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostFile {
    /// The file's name in the database directory.
    pub file: String,
    /// Its path relative to the database directory (`lost/NAME`, or `lost/NAME.N` when an
    /// earlier repair already left a file of that name there).
    pub moved_to: String,
    /// Why it was moved.
    pub reason: String,
}

/// Table entries that point into a blob file the repaired database does not have: reads of those
/// keys return `Error::Corruption`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DanglingBlobs {
    /// The table holding the pointers.
    pub table: u64,
    /// The blob file they point into (moved to `lost/`, or gone before the repair).
    pub blob_file: u64,
    /// How many entries of the table point there.
    pub entries: u64,
}

/// What [`Db::repair`](crate::Db::repair) found and did. See the example there.
#[derive(Debug, Clone, Default)]
pub struct RepairReport {
    /// The file number of the MANIFEST written (`MANIFEST-NNNNNN`), which CURRENT now names.
    pub manifest_number: u64,
    /// The last sequence number recorded in it: the highest one found anywhere.
    pub last_sequence: u64,
    /// Tables the new MANIFEST lists, ascending (including those written by the repair).
    pub tables_kept: Vec<u64>,
    /// Tables that could not be read whole, moved to `lost/`.
    pub tables_lost: Vec<LostFile>,
    /// Readable tables whose contents were rewritten into new ones (their key and sequence
    /// ranges overlapped others' so that no level order reads them correctly), moved to `lost/`.
    pub tables_replaced: Vec<LostFile>,
    /// Tables written by the repair from WAL records.
    pub tables_from_wals: Vec<u64>,
    /// Tables written by the repair from the contents of `tables_replaced`.
    pub tables_rewritten: Vec<u64>,
    /// Blob files the new MANIFEST lists, ascending.
    pub blob_files_kept: Vec<u64>,
    /// Blob files that could not be read whole, or that no kept table points into, moved to
    /// `lost/`.
    pub blob_files_lost: Vec<LostFile>,
    /// Kept tables' pointers into blob files that are not kept.
    pub dangling_blob_references: Vec<DanglingBlobs>,
    /// WAL files read (then moved to `lost/`: their records are in tables now; `other_moved`
    /// says which of them could only be read in part).
    pub wal_files: Vec<u64>,
    /// WAL files whose reading stopped at an error (opening failed, or an IO error): what came
    /// before it was kept.
    pub wal_files_cut_short: Vec<u64>,
    /// Write batches recovered from the WALs.
    pub wal_records_salvaged: u64,
    /// Write batches that passed their checksum but did not decode, dropped whole.
    pub wal_records_dropped: u64,
    /// WAL bytes skipped as corrupt or as a torn tail.
    pub wal_bytes_skipped: u64,
    /// Old MANIFESTs (and unreadable WALs) moved to `lost/`.
    pub other_moved: Vec<LostFile>,
}

impl RepairReport {
    /// True when nothing was lost: no table or blob file moved to `lost/` as unreadable, no WAL
    /// bytes or records dropped or WAL cut short, and no pointer into a missing blob file.
    pub fn is_clean(&self) -> bool {
        self.tables_lost.is_empty()
            && self.blob_files_lost.iter().all(|f| f.reason == UNREFERENCED)
            && self.dangling_blob_references.is_empty()
            && self.wal_records_dropped == 0
            && self.wal_files_cut_short.is_empty()
            && self.wal_bytes_skipped == 0
    }
}

/// The reason given for a readable blob file no kept table points into.
const UNREFERENCED: &str = "no kept table points into it";

/// A table as repair found or wrote it.
struct TableInfo {
    meta: FileMeta,
    /// Per blob file: entries pointing into it and the sum of their record sizes.
    blob_refs: BTreeMap<u64, (u64, u64)>,
    /// The level the new MANIFEST puts it on.
    level: u32,
}

/// Repair cannot tell which family a table belongs to, so it does not rebuild a database that
/// has column families rather than put every family's keys into the default one.
fn families_unsupported() -> Error {
    Error::InvalidArgument(
        "repair of a database with column families is not supported: its tables do not record \
         their family"
            .into(),
    )
}

pub(crate) fn repair(path: &Path, opts: Options) -> Result<RepairReport> {
    opts.validate()?;
    let fs = Arc::clone(&opts.fs);
    check_is_database(fs.as_ref(), path)?;
    let lock = fs.lock(&path.join(filenames::LOCK))?;
    let mut r = Repair::new(path, fs);
    let found = r.list()?;
    if r.read_old_manifests(&found.manifests) {
        return Err(families_unsupported());
    }
    for &n in &found.tables {
        r.add_table(n)?;
    }
    for &n in &found.blob_files {
        r.add_blob_file(n)?;
    }
    let db = r.internal_db(opts, lock)?;
    r.salvage_wals(&db, &found.wals)?;
    r.resolve_overlaps(&db)?;
    let garbage = r.settle_blob_files()?;
    r.write_manifest(&db, garbage)?;
    r.move_replaced_logs(&found.manifests)?;
    Ok(r.report)
}

/// A directory with neither CURRENT, a MANIFEST nor any data file is not a database.
fn check_is_database(fs: &dyn FileSystem, path: &Path) -> Result<()> {
    match fs.is_dir(path)? {
        Some(true) => {}
        Some(false) => {
            return Err(Error::InvalidArgument(format!("{} exists and is not a directory", path.display())))
        }
        None => return Err(Error::NotADatabase(path.to_path_buf())),
    }
    let names = fs.list_dir(path)?;
    let ours = names.iter().any(|n| {
        n == filenames::CURRENT
            || matches!(
                filenames::parse(n),
                Some((FileKind::Manifest | FileKind::Wal | FileKind::Table | FileKind::Blob, _))
            )
    });
    if ours {
        Ok(())
    } else {
        Err(Error::NotADatabase(path.to_path_buf()))
    }
}

/// The numbers of the files repair reads, ascending.
#[derive(Default)]
struct Found {
    wals: BTreeSet<u64>,
    tables: BTreeSet<u64>,
    blob_files: BTreeSet<u64>,
    manifests: BTreeSet<u64>,
}

struct Repair {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
    report: RepairReport,
    tables: Vec<TableInfo>,
    blob_files: BTreeMap<u64, BlobFileMeta>,
    /// The highest file number seen anywhere: names, old MANIFESTs' counters, blob pointers.
    max_file_number: u64,
    max_sequence: u64,
    /// The WALs read, with what to say when they are moved to `lost/`.
    wals_read: Vec<(u64, String)>,
    lost_dir_made: bool,
}

impl Repair {
    fn new(dir: &Path, fs: Arc<dyn FileSystem>) -> Repair {
        Repair {
            dir: dir.to_path_buf(),
            fs,
            report: RepairReport::default(),
            tables: Vec::new(),
            blob_files: BTreeMap::new(),
            max_file_number: 0,
            max_sequence: 0,
            wals_read: Vec::new(),
            lost_dir_made: false,
        }
    }

    /// The numbered files in the directory.
    fn list(&mut self) -> Result<Found> {
        let mut found = Found::default();
        for name in self.fs.list_dir(&self.dir)? {
            let Some((kind, n)) = filenames::parse(&name) else { continue };
            self.max_file_number = self.max_file_number.max(n);
            let set = match kind {
                FileKind::Wal => &mut found.wals,
                FileKind::Table => &mut found.tables,
                FileKind::Blob => &mut found.blob_files,
                FileKind::Manifest => &mut found.manifests,
                FileKind::Options | FileKind::Temp => continue,
            };
            set.insert(n);
        }
        Ok(found)
    }

    /// Takes the file-number and sequence counters from whatever records of the old MANIFESTs
    /// still read, so no number they handed out is handed out again. Returns whether any
    /// record names a column family other than the default one.
    fn read_old_manifests(&mut self, numbers: &BTreeSet<u64>) -> bool {
        let mut families = false;
        for &n in numbers {
            let path = self.dir.join(filenames::manifest_name(n));
            let Ok(file) = self.fs.open_sequential(&path) else { continue };
            let mut reader = LogReader::new(file, true);
            while let Ok(Some(record)) = reader.read_record() {
                let Ok(edits) = VersionEdit::decode_group(&record) else { continue };
                for edit in edits {
                    families |= edit.column_family != DEFAULT_FAMILY;
                    if let Some(next) = edit.next_file_number {
                        self.max_file_number = self.max_file_number.max(next.saturating_sub(1));
                    }
                    self.max_sequence = self.max_sequence.max(edit.last_sequence.unwrap_or(0));
                }
            }
        }
        families
    }

    /// Reads table `number` whole; keeps it, or moves it to `lost/` when any of it is unreadable.
    fn add_table(&mut self, number: u64) -> Result<()> {
        match scan_table(self.fs.as_ref(), &self.dir, number) {
            Ok(info) => {
                self.note_table(&info);
                self.tables.push(info);
            }
            Err(e) => {
                let lost = self.move_to_lost(&table_name(number), e.to_string())?;
                tracing::warn!(target: "strata", file = %lost.file, reason = %lost.reason, "repair: table moved to lost/");
                self.report.tables_lost.push(lost);
            }
        }
        Ok(())
    }

    fn note_table(&mut self, info: &TableInfo) {
        self.max_sequence = self.max_sequence.max(info.meta.largest_seq);
        if let Some((&highest, _)) = info.blob_refs.last_key_value() {
            self.max_file_number = self.max_file_number.max(highest);
        }
    }

    /// Reads blob file `number` whole; keeps it, or moves it to `lost/` when any of it is
    /// unreadable.
    fn add_blob_file(&mut self, number: u64) -> Result<()> {
        match scan_blob_file(self.fs.as_ref(), &self.dir, number) {
            Ok(meta) => {
                self.blob_files.insert(number, meta);
            }
            Err(e) => {
                let lost = self.move_to_lost(&blob_name(number), e.to_string())?;
                tracing::warn!(target: "strata", file = %lost.file, reason = %lost.reason, "repair: blob file moved to lost/");
                self.report.blob_files_lost.push(lost);
            }
        }
        Ok(())
    }

    /// The handle the flush and compaction machinery writes through: options as given but
    /// without a merge operator (operands are kept as they are, never folded, so no blob value
    /// is read) or a compaction filter (repair salvages data, it does not drop any), and file
    /// numbers above every number seen.
    fn internal_db(&self, opts: Options, lock: Box<dyn FileLock>) -> Result<DbInner> {
        let opts = Options { merge_operator: None, compaction_filter: None, ..opts };
        let versions = VersionSet::detached(&self.dir, Arc::clone(&self.fs), self.max_file_number + 1);
        let wal = LogWriter::new(Box::new(super::open::ReadOnlyFile));
        super::open::build_inner(&self.dir, opts, &Vec::new(), versions, wal, 0, lock, true)
    }

    /// Moves `name` into `lost/` under a name not yet taken there.
    fn move_to_lost(&mut self, name: &str, reason: String) -> Result<LostFile> {
        let lost = self.dir.join(LOST_DIR);
        if !self.lost_dir_made {
            self.fs.create_dir_all(&lost)?;
            self.fs.sync_dir(&self.dir)?;
            self.lost_dir_made = true;
        }
        let mut target = name.to_string();
        let mut n = 0;
        while self.fs.is_dir(&lost.join(&target))?.is_some() {
            n += 1;
            target = format!("{name}.{n}");
        }
        self.fs.rename(&self.dir.join(name), &lost.join(&target))?;
        self.fs.sync_dir(&lost)?;
        self.fs.sync_dir(&self.dir)?;
        Ok(LostFile { file: name.to_string(), moved_to: format!("{LOST_DIR}/{target}"), reason })
    }
}

// The new MANIFEST.
impl Repair {
    /// Counts each kept blob file's garbage from the pointers the kept tables hold, moves the
    /// blob files nothing points into to `lost/`, and lists pointers into missing blob files.
    /// Returns the garbage as the MANIFEST records it.
    fn settle_blob_files(&mut self) -> Result<Vec<(u64, u64, u64)>> {
        let mut referenced: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        for t in &self.tables {
            for (&blob, &(count, bytes)) in &t.blob_refs {
                let r = referenced.entry(blob).or_default();
                r.0 += count;
                r.1 += bytes;
                if !self.blob_files.contains_key(&blob) {
                    let d = DanglingBlobs { table: t.meta.number, blob_file: blob, entries: count };
                    self.report.dangling_blob_references.push(d);
                }
            }
        }
        let mut garbage = Vec::new();
        for (number, meta) in std::mem::take(&mut self.blob_files) {
            let Some(&(count, bytes)) = referenced.get(&number) else {
                let lost = self.move_to_lost(&blob_name(number), UNREFERENCED.to_string())?;
                self.report.blob_files_lost.push(lost);
                continue;
            };
            let (dead, dead_bytes) =
                (meta.total_count.saturating_sub(count), meta.total_bytes.saturating_sub(bytes));
            if dead > 0 {
                garbage.push((number, dead, dead_bytes));
            }
            self.blob_files.insert(number, meta);
        }
        for d in &self.report.dangling_blob_references {
            tracing::warn!(target: "strata", table = d.table, blob_file = d.blob_file, entries = d.entries, "repair: table points into a missing blob file; reads of those keys will fail");
        }
        Ok(garbage)
    }

    /// Writes and syncs the new MANIFEST, then points CURRENT at it.
    fn write_manifest(&mut self, db: &DbInner, garbage: Vec<(u64, u64, u64)>) -> Result<()> {
        let number = db.versions.lock().new_file_number();
        let next_file_number = number + 1;
        let edit = VersionEdit {
            comparator: Some(COMPARATOR_NAME.to_string()),
            // Past every WAL: they are all in tables (or in lost/) now.
            log_number: Some(next_file_number),
            next_file_number: Some(next_file_number),
            last_sequence: Some(self.max_sequence),
            new_files: self.tables.iter().map(|t| (t.level, t.meta.clone())).collect(),
            new_blob_files: self.blob_files.values().cloned().collect(),
            blob_garbage: garbage,
            ..VersionEdit::default()
        };
        // The engine's own consistency checks, before anything refers to the result.
        Version::default().apply(&edit)?;
        self.fs.sync_dir(&self.dir)?;
        let name = filenames::manifest_name(number);
        let mut writer = LogWriter::new(self.fs.create(&self.dir.join(&name))?);
        writer.add_record(&edit.encode())?;
        writer.sync()?;
        drop(writer);
        self.fs.write_atomic(&self.dir, filenames::CURRENT, format!("{name}\n").as_bytes())?;
        let r = &mut self.report;
        r.manifest_number = number;
        r.last_sequence = self.max_sequence;
        r.tables_kept = self.tables.iter().map(|t| t.meta.number).collect();
        r.tables_kept.sort_unstable();
        r.blob_files_kept = self.blob_files.keys().copied().collect();
        tracing::info!(target: "strata", manifest = number, tables = r.tables_kept.len(), blob_files = r.blob_files_kept.len(), "repair: wrote a new MANIFEST");
        Ok(())
    }

    /// Once the new MANIFEST is current: moves the salvaged WALs and the MANIFESTs found at the
    /// start to `lost/`.
    fn move_replaced_logs(&mut self, manifests: &BTreeSet<u64>) -> Result<()> {
        for (number, reason) in std::mem::take(&mut self.wals_read) {
            let moved = self.move_to_lost(&wal_name(number), reason)?;
            self.report.other_moved.push(moved);
        }
        for &n in manifests {
            let moved = self.move_to_lost(&filenames::manifest_name(n), "replaced by repair".into())?;
            self.report.other_moved.push(moved);
        }
        Ok(())
    }
}

/// Reads every entry of table `number` (checksums verified, no mapping) and describes it as the
/// MANIFEST needs. Any unreadable block, undecodable key, out-of-order key or entry count that
/// disagrees with the table's properties is `Corruption`.
fn scan_table(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<TableInfo> {
    let file = fs.open_random_unmapped(&filenames::table(dir, number))?;
    let file_size = file.size();
    let table = Arc::new(Table::open(file, number, None)?);
    let expected = table.properties().num_entries;
    let mut meta = FileMeta { number, file_size, smallest_seq: u64::MAX, ..FileMeta::default() };
    let mut blob_refs: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    let mut it = table.iter_whole_file();
    it.seek_to_first();
    while it.valid() {
        let ikey = it.key();
        let parsed = key::parse(ikey).ok_or_else(|| corrupt_table(number, "undecodable key"))?;
        if meta.num_entries > 0 && key::compare(&meta.largest, ikey) != std::cmp::Ordering::Less {
            return Err(corrupt_table(number, "keys out of order"));
        }
        if meta.num_entries == 0 {
            meta.smallest = ikey.to_vec();
        }
        meta.largest.clear();
        meta.largest.extend_from_slice(ikey);
        meta.smallest_seq = meta.smallest_seq.min(parsed.seq);
        meta.largest_seq = meta.largest_seq.max(parsed.seq);
        meta.num_entries += 1;
        match parsed.kind {
            ValueKind::Delete => meta.num_deletions += 1,
            ValueKind::Blob => {
                let ptr = BlobPointer::decode(it.value())?;
                let r = blob_refs.entry(ptr.file_number).or_default();
                r.0 += 1;
                r.1 += ptr.size;
            }
            ValueKind::Put | ValueKind::Merge => {}
            ValueKind::RangeDelete => {
                return Err(corrupt_table(number, "a range deletion among the entries"))
            }
        }
        it.next();
    }
    it.status()?;
    // The tombstones widen the bounds, so the new MANIFEST places the table where they apply.
    if let Some(frags) = table.range_dels() {
        let tombstones: Vec<_> = frags.tombstones().collect();
        let seqs = (&mut meta.smallest_seq, &mut meta.largest_seq);
        crate::range_del::widen_bounds(&mut meta.smallest, &mut meta.largest, seqs, &tombstones);
        meta.num_range_deletions = table.properties().num_range_deletions;
    }
    if meta.num_entries == 0 && meta.num_range_deletions == 0 {
        return Err(corrupt_table(number, "no entries"));
    }
    if meta.num_entries != expected {
        return Err(corrupt_table(
            number,
            &format!("{} entries read, its properties say {expected}", meta.num_entries),
        ));
    }
    Ok(TableInfo { meta, blob_refs, level: 0 })
}

fn corrupt_table(number: u64, why: &str) -> Error {
    Error::corruption(format!("sst {number}: {why}"))
}

/// Reads every record of blob file `number` (checksums verified, no mapping) and checks its
/// footer; the size recorded is the file's, which open checks against the disk.
fn scan_blob_file(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<BlobFileMeta> {
    let path = filenames::blob(dir, number);
    let file = fs.open_random_unmapped(&path)?;
    let size = file.size();
    let meta = BlobReader::open(file, number)?.verify()?;
    if meta.file_size != size {
        return Err(Error::corruption(format!(
            "blob file {number}: {size} bytes, its records and footer make {}",
            meta.file_size
        )));
    }
    Ok(meta)
}

fn table_name(n: u64) -> String {
    format!("{n:06}.sst")
}

fn blob_name(n: u64) -> String {
    format!("{n:06}.blob")
}

fn wal_name(n: u64) -> String {
    format!("{n:06}.log")
}
