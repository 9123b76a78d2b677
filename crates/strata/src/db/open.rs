//! Opening a database, in named phases: check the path and options, take the lock, create or
//! recover the version set from CURRENT and the MANIFEST, check the files it lists, replay the
//! WALs newer than the last flush into memtables and flush them to L0, then start a fresh WAL and
//! delete what no longer belongs. Nothing is written until recovery has read everything.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use parking_lot::{Condvar, Mutex};

use super::background::BgState;
use super::family::{family_options, Family, FamilyTable};
use super::properties::Stats;
use super::recovery_report::{DroppedTail, RecoveryReport};
use super::table_cache::TableCache;
use super::wal_replay::{self, Replayed};
use super::write::{LeaderState, WriteQueue};
use super::{DbInner, SuperVersion};
use crate::batch::DecodedBatch;
use crate::compaction::job::{self, OutputSpec};
use crate::error::{Error, Result};
use crate::filenames::{self, FileKind};
use crate::fs::FileSystem;
use crate::memtable::MemTable;
use crate::options::{Options, WalRecoveryMode};
use crate::snapshot::SnapshotList;
use crate::sst::BlockCache;
use crate::version::edit::{VersionEdit, DEFAULT_FAMILY};
use crate::version::set::{Recovered, VersionSet};
use crate::wal::LogWriter;
use crate::wal_header::WalHeader;

/// Options for the families named at open (`Db::open_cf`); the others get the database's.
pub(crate) type NamedFamilies = Vec<(String, Options)>;

pub(crate) fn open(path: &Path, opts: Options, named: &NamedFamilies) -> Result<Arc<DbInner>> {
    opts.validate()?;
    let fs = Arc::clone(&opts.fs);
    prepare_directory(fs.as_ref(), path, &opts)?;
    let lock = fs.lock(&path.join(filenames::LOCK))?;
    let manifest = load_or_create(fs.as_ref(), path, &opts)?;
    let mut versions = manifest.set;
    versions.set_max_manifest_file_size(opts.max_manifest_file_size);
    check_listed_files(fs.as_ref(), path, &versions)?;
    let wals = wals_to_replay(fs.as_ref(), path, &mut versions)?;
    check_torn_manifest(manifest.manifest_number, manifest.torn_tail, versions.log_number(), &wals)?;

    let wal_number = versions.new_file_number();
    let wal_file = fs.create(&filenames::wal(path, wal_number))?;
    fs.sync_dir(path)?;
    // Every WAL being replayed is flushed before the first write: nothing earlier to check.
    let wal = super::write::start_wal(wal_file, &WalHeader::first())?;
    let inner = Arc::new(build_inner(path, opts, named, versions, wal, wal_number, lock, false)?);
    let replayed = match replay_wals(&inner, &wals, wal_number) {
        Ok(replayed) => replayed,
        Err(e) => {
            // A refused open leaves the directory as it found it: the new WAL holds only its
            // header, and no MANIFEST names it yet. (Tables a partial replay flushed are not
            // referenced either; the next open sets them aside.)
            if let Err(remove) = inner.fs.remove_file(&filenames::wal(path, wal_number)) {
                tracing::warn!(target: "strata", error = %remove, "could not remove the new WAL of a failed open");
            }
            return Err(e);
        }
    };
    let mut report = replayed.report;
    report.manifest_tail = manifest_tail_report(manifest.manifest_number, manifest.torn_tail);
    write_options_file(&inner)?;
    // Evidence first: what recovery did not use is moved aside before anything is deleted.
    let mut evidence: Vec<String> = replayed.damaged_wals.iter().map(|&n| wal_name(n)).collect();
    if manifest.torn_tail.is_some() {
        evidence.push(filenames::manifest_name(manifest.manifest_number));
    }
    report.moved_to_lost = move_to_lost(&inner, &evidence)?;
    inner.delete_obsolete_files();
    let proven_obsolete = if manifest.torn_tail.is_none() { manifest.deleted_files } else { HashSet::new() };
    report.moved_to_lost.extend(remove_orphans(&inner, &proven_obsolete)?);
    *inner.recovery.lock() = report;
    open_live_files(&inner);
    Ok(inner)
}

/// Opens without changing anything in the directory: no lock, no new WAL, MANIFEST or OPTIONS
/// file, no flush, no background work. Unflushed WAL records are replayed into memory only.
/// Writes, `flush` and `compact_range` return `Error::ReadOnly`.
pub(crate) fn open_read_only(path: &Path, opts: Options, named: &NamedFamilies) -> Result<Arc<DbInner>> {
    opts.validate()?;
    let fs = Arc::clone(&opts.fs);
    match fs.is_dir(path)? {
        Some(true) => {}
        Some(false) => {
            return Err(Error::InvalidArgument(format!("{} exists and is not a directory", path.display())))
        }
        None => return Err(Error::NotADatabase(path.to_path_buf())),
    }
    if fs.is_dir(&path.join(filenames::CURRENT))?.is_none() {
        return Err(Error::NotADatabase(path.to_path_buf()));
    }
    let manifest = VersionSet::recover(path, Arc::clone(&fs))?;
    let mut versions = manifest.set;
    check_listed_files(fs.as_ref(), path, &versions)?;
    let wals = wals_to_replay(fs.as_ref(), path, &mut versions)?;
    check_torn_manifest(manifest.manifest_number, manifest.torn_tail, versions.log_number(), &wals)?;
    let wal = LogWriter::new(Box::new(ReadOnlyFile));
    let inner = Arc::new(build_inner(path, opts, named, versions, wal, 0, Box::new(NoLock), true)?);
    let mut report = replay_into_memory(&inner, &wals)?;
    report.manifest_tail = manifest_tail_report(manifest.manifest_number, manifest.torn_tail);
    *inner.recovery.lock() = report;
    open_live_files(&inner);
    Ok(inner)
}

fn wal_name(number: u64) -> String {
    format!("{number:06}.log")
}

/// A torn last MANIFEST record is dropped (its edit was never acknowledged), unless the state
/// shows the edit had been acknowledged: the WAL named by the MANIFEST's log number is deleted
/// only after a later edit is synced, so if it is gone the dropped record was such an edit.
fn check_torn_manifest(manifest: u64, torn: Option<(u64, u64)>, log_number: u64, wals: &[u64]) -> Result<()> {
    let Some((offset, bytes)) = torn else { return Ok(()) };
    let name = filenames::manifest_name(manifest);
    if log_number > 0 && !wals.contains(&log_number) {
        return Err(Error::corruption(format!(
            "{name}: the last record (offset {offset}, {bytes} bytes) is damaged, and WAL {} that the \
             records before it still need is gone, so the damaged record had been acknowledged",
            wal_name(log_number)
        )));
    }
    tracing::warn!(target: "strata", manifest = %name, offset, bytes, "dropped a torn last MANIFEST record (an edit that was never acknowledged)");
    Ok(())
}

fn manifest_tail_report(manifest: u64, torn: Option<(u64, u64)>) -> Option<DroppedTail> {
    torn.map(|(offset, bytes)| DroppedTail {
        file: filenames::manifest_name(manifest),
        offset,
        bytes,
        reason: "torn last record".to_string(),
    })
}

/// Moves `names` (files in the database directory) into its `lost/` folder, and makes the move
/// durable. Returns the names moved.
fn move_to_lost(db: &DbInner, names: &[String]) -> Result<Vec<String>> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let lost = db.dir.join(filenames::LOST_DIR);
    db.fs.create_dir_all(&lost)?;
    for name in names {
        tracing::warn!(target: "strata", file = %name, "moving a file recovery did not fully use to lost/");
        db.fs.rename(&db.dir.join(name), &lost.join(name))?;
    }
    db.fs.sync_dir(&lost)?;
    db.fs.sync_dir(&db.dir)?;
    Ok(names.to_vec())
}

/// Opens the live tables and blob files up front, as RocksDB does with its default
/// `max_open_files = -1`, up to what the table cache holds (upper levels first): reads then
/// never pay for opening a file, which takes reading its footer and pinning its index and
/// filter. The first reads after open each opened a file and took 0.3-1 ms, the slowest
/// operations of a whole updaterandom run. A file that fails to open is left for the read that
/// needs it to report, so a damaged file fails reads of it, not the open.
fn open_live_files(db: &DbInner) {
    let versions: Vec<_> =
        db.families.load().iter().map(|f| f.super_version.load().version.clone()).collect();
    let tables = versions.iter().flat_map(|v| v.files.iter().flatten()).take(db.table_cache.table_capacity());
    for file in tables {
        if let Err(e) = db.table_cache.table(file.number) {
            tracing::warn!(target: "strata", file = file.number, error = %e, "table not opened at open");
        }
    }
    let blobs = versions.iter().flat_map(|v| v.blob_files.keys()).take(db.table_cache.blob_capacity());
    for &number in blobs {
        if let Err(e) = db.table_cache.blob(number) {
            tracing::warn!(target: "strata", file = number, error = %e, "blob file not opened at open");
        }
    }
}

pub(crate) struct ReadOnlyFile;

impl crate::fs::WritableFile for ReadOnlyFile {
    fn append(&mut self, _: &[u8]) -> Result<()> {
        Err(Error::ReadOnly)
    }
    fn sync_data(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        0
    }
}

struct NoLock;

impl crate::fs::FileLock for NoLock {}

/// The database size up to which files are memory-mapped (`Options::use_mmap_reads` and
/// `mmap_reads_max_db_size`; 0 maps nothing).
fn mmap_max_db_bytes(opts: &Options) -> u64 {
    match (opts.use_mmap_reads, opts.mmap_reads_max_db_size) {
        (false, _) => 0,
        (true, 0) => crate::util::memory_limit::memory_limit().map_or(u64::MAX, |m| m / 2),
        (true, limit) => limit,
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn build_inner(
    path: &Path,
    opts: Options,
    named: &NamedFamilies,
    versions: VersionSet,
    wal: LogWriter,
    wal_number: u64,
    lock: Box<dyn crate::fs::FileLock>,
    read_only: bool,
) -> Result<DbInner> {
    let fs = Arc::clone(&opts.fs);
    let block_cache = (opts.cache_size > 0).then(|| Arc::new(BlockCache::new(opts.cache_size)));
    let last_seq = versions.last_sequence();
    let spin_waits = std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    let write_spin = if spin_waits { u64::from(opts.write_spin_micros) } else { 0 };
    let mut table = FamilyTable::default();
    for (&id, f) in versions.families() {
        let own = named.iter().find(|(name, _)| *name == f.name).map_or(&opts, |(_, o)| o);
        let family_opts = family_options(&opts, own);
        let family =
            Family::new(id, f.name.clone(), family_opts, Arc::clone(&f.current), block_cache.clone());
        table = table.with(Arc::new(family));
    }
    let default = Arc::clone(
        table
            .get(DEFAULT_FAMILY)
            .ok_or_else(|| Error::corruption("the MANIFEST has no default column family"))?,
    );
    let table_cache = TableCache::new(
        path.to_path_buf(),
        Arc::clone(&fs),
        opts.max_open_files,
        block_cache,
        mmap_max_db_bytes(&opts),
    );
    table_cache.note_db_bytes(versions.live_bytes());
    Ok(DbInner {
        dir: path.to_path_buf(),
        table_cache,
        default,
        families: ArcSwap::from_pointee(table),
        current_wal: AtomicU64::new(wal_number),
        versions: Mutex::new(versions),
        last_sequence: AtomicU64::new(last_seq),
        snapshots: Arc::new(SnapshotList::default()),
        write_queue: WriteQueue::new(Duration::from_micros(write_spin)),
        leader: Mutex::new(LeaderState::new(wal, wal_number)),
        closed_wals: Mutex::new(Vec::new()),
        bg: Mutex::new(BgState::default()),
        bg_cv: Condvar::new(),
        stats: Stats::default(),
        iter_pool: Default::default(),
        scan_lengths: Default::default(),
        closing: AtomicBool::new(false),
        has_background_error: AtomicBool::new(false),
        recovery: Mutex::new(RecoveryReport::default()),
        unpersisted_writes: AtomicBool::new(false),
        flush_rate: AtomicU64::new(0),
        spin_waits,
        read_only,
        fs,
        opts,
        _lock: lock,
    })
}

/// Read-only recovery: WAL records go into memtables that are never flushed.
fn replay_into_memory(db: &Arc<DbInner>, wals: &[u64]) -> Result<RecoveryReport> {
    let mut target = ReplayTarget::new(db);
    let replayed = replay_batches(db, wals, |number, batch| {
        target.add(number, batch)?;
        for (family, mems) in &mut target.mems {
            if mems.last().is_some_and(|m| m.approximate_memory_usage() >= family.opts.write_buffer_size) {
                mems.push(Arc::new(MemTable::new()));
            }
        }
        Ok(())
    })?;
    let max_seq = db.last_sequence.load(Ordering::Relaxed).max(replayed.max_seq);
    db.last_sequence.store(max_seq, Ordering::Release);
    for (family, mems) in target.mems {
        let mut newest_first: Vec<Arc<MemTable>> = mems.into_iter().rev().collect();
        let mem = newest_first.remove(0);
        let version = Arc::clone(&family.super_version.load().version);
        family.super_version.store(Arc::new(SuperVersion { mem, imm: newest_first, version }));
    }
    Ok(replayed.report)
}

/// Where replayed WAL records go: per family, the memtables they fill (the last one is being
/// filled), skipping what a family already has in tables.
struct ReplayTarget {
    /// Each live family with its memtables, oldest first (never empty).
    mems: Vec<(Arc<Family>, Vec<Arc<MemTable>>)>,
    /// Per family id, the first WAL whose records it still needs.
    log_numbers: BTreeMap<u32, u64>,
    /// Ids up to this were handed out; one not live was dropped, and its records are skipped.
    max_family: u32,
}

impl ReplayTarget {
    fn new(db: &DbInner) -> Self {
        let versions = db.versions.lock();
        let log_numbers = versions.families().iter().map(|(&id, f)| (id, f.log_number)).collect();
        let max_family = versions.next_family_id() - 1;
        drop(versions);
        let mems =
            db.families.load().iter().map(|f| (Arc::clone(f), vec![Arc::new(MemTable::new())])).collect();
        Self { mems, log_numbers, max_family }
    }

    /// Adds `batch`, read from WAL `wal`, to the memtables of the families that need it.
    fn add(&mut self, wal: u64, batch: &DecodedBatch<'_>) -> Result<()> {
        for (seq, rec) in (batch.first_seq..).zip(batch.records()) {
            let (id, kind, key, value) = rec.map_err(|e| wal_replay::wal_error(wal, e))?;
            let Some(at) = self.mems.iter().position(|(f, _)| f.id == id) else {
                if id > self.max_family {
                    return Err(wal_replay::wal_error(
                        wal,
                        Error::corruption(format!("a record names column family {id}, which never existed")),
                    ));
                }
                continue; // a dropped family
            };
            if wal < self.log_numbers.get(&id).copied().unwrap_or(0) {
                continue; // already in the family's tables
            }
            if let Some(mem) = self.mems[at].1.last() {
                mem.add(seq, kind, key, value);
            }
        }
        Ok(())
    }
}

fn replay_batches(
    db: &DbInner,
    wals: &[u64],
    apply: impl FnMut(u64, &DecodedBatch<'_>) -> Result<()>,
) -> Result<Replayed> {
    let log_number = db.versions.lock().log_number();
    let mode = if db.opts.skip_corrupted_wal_records {
        WalRecoveryMode::SkipAnyCorruptedRecords
    } else {
        db.opts.wal_recovery_mode
    };
    wal_replay::replay(db.fs.as_ref(), &db.dir, wals, log_number, mode, apply)
}

fn prepare_directory(fs: &dyn FileSystem, path: &Path, opts: &Options) -> Result<()> {
    match fs.is_dir(path)? {
        Some(true) => Ok(()),
        Some(false) => {
            Err(Error::InvalidArgument(format!("{} exists and is not a directory", path.display())))
        }
        None if opts.create_if_missing => fs.create_dir_all(path),
        None => Err(Error::NotADatabase(path.to_path_buf())),
    }
}

fn load_or_create(fs: &dyn FileSystem, path: &Path, opts: &Options) -> Result<Recovered> {
    let fs_arc = Arc::clone(&opts.fs);
    let exists = fs.is_dir(&path.join(filenames::CURRENT))?.is_some();
    if exists {
        if opts.error_if_exists {
            return Err(Error::AlreadyExists(path.to_path_buf()));
        }
        let recovered = VersionSet::recover(path, fs_arc)?;
        tracing::info!(manifest = recovered.manifest_number, "recovered version set");
        return Ok(recovered);
    }
    let names = fs.list_dir(path)?;
    let kinds: Vec<FileKind> = names.iter().filter_map(|n| filenames::parse(n)).map(|(k, _)| k).collect();
    // A MANIFEST without CURRENT and without any data file is what an interrupted creation
    // leaves (CURRENT is written before the first WAL): there is nothing to protect, so the
    // database is created afresh. With data files present, CURRENT was lost: refuse.
    let has_data = kinds.iter().any(|k| matches!(k, FileKind::Wal | FileKind::Table | FileKind::Blob));
    if has_data && kinds.contains(&FileKind::Manifest) {
        return Err(Error::corruption(format!(
            "{} has MANIFEST files but no CURRENT file; refusing to start an empty database over it",
            path.display()
        )));
    }
    if !opts.create_if_missing {
        return Err(Error::NotADatabase(path.to_path_buf()));
    }
    let set = VersionSet::create(path, fs_arc)?;
    Ok(Recovered {
        manifest_number: set.manifest_number(),
        set,
        torn_tail: None,
        deleted_files: HashSet::new(),
    })
}

/// Every table and blob file the MANIFEST lists must exist with the recorded size.
fn check_listed_files(fs: &dyn FileSystem, path: &Path, versions: &VersionSet) -> Result<()> {
    let mut listed = Vec::new();
    for v in versions.families().values().map(|f| &f.current) {
        listed.extend(v.files.iter().flatten().map(|f| (filenames::table(path, f.number), f.file_size)));
        listed
            .extend(v.blob_files.values().map(|b| (filenames::blob(path, b.meta.number), b.meta.file_size)));
    }
    for (file, size) in listed {
        match fs.file_size(&file) {
            Ok(actual) if actual == size => {}
            Ok(actual) => {
                return Err(Error::corruption(format!(
                    "{} is {actual} bytes, the MANIFEST says {size}",
                    file.display()
                )))
            }
            Err(e) => {
                return Err(Error::corruption(format!("{} is listed but unreadable: {e}", file.display())))
            }
        }
    }
    Ok(())
}

/// WAL numbers at or above the MANIFEST's log number, ascending; marks every file number seen.
fn wals_to_replay(fs: &dyn FileSystem, path: &Path, versions: &mut VersionSet) -> Result<Vec<u64>> {
    let mut wals = Vec::new();
    for name in fs.list_dir(path)? {
        if let Some((kind, n)) = filenames::parse(&name) {
            versions.mark_file_number_used(n);
            if kind == FileKind::Wal && n >= versions.log_number() {
                wals.push(n);
            }
        }
    }
    wals.sort_unstable();
    Ok(wals)
}

/// Replays `wals` into memtables, flushing each to L0, then records that they are obsolete.
fn replay_wals(db: &Arc<DbInner>, wals: &[u64], new_wal: u64) -> Result<Replayed> {
    let mut target = ReplayTarget::new(db);
    let mut edits: BTreeMap<u32, VersionEdit> = BTreeMap::new();
    let replayed = replay_batches(db, wals, |number, batch| {
        target.add(number, batch)?;
        for (family, mems) in &mut target.mems {
            if mems[0].approximate_memory_usage() >= family.opts.write_buffer_size {
                flush_recovered(db, family, &mems[0], edits.entry(family.id).or_default())?;
                mems[0] = Arc::new(MemTable::new());
            }
        }
        Ok(())
    })?;
    for (family, mems) in &target.mems {
        if !mems[0].is_empty() {
            flush_recovered(db, family, &mems[0], edits.entry(family.id).or_default())?;
        }
    }
    let max_seq = db.last_sequence.load(Ordering::Relaxed).max(replayed.max_seq);
    db.last_sequence.store(max_seq, Ordering::Release);
    // Everything replayed is in tables now: no family needs a WAL before the new one.
    let mut group = Vec::new();
    for (family, _) in &target.mems {
        let mut edit = edits.remove(&family.id).unwrap_or_default();
        edit.column_family = family.id;
        edit.log_number = Some(new_wal);
        edit.last_sequence = Some(max_seq);
        group.push(edit);
    }
    let versions = {
        let mut set = db.versions.lock();
        let installed = set.log_and_apply_group(group)?;
        db.table_cache.note_db_bytes(set.live_bytes());
        installed
    };
    for ((family, _), version) in target.mems.iter().zip(versions) {
        let sv = family.super_version.load();
        family.super_version.store(Arc::new(SuperVersion {
            mem: Arc::clone(&sv.mem),
            imm: Vec::new(),
            version,
        }));
    }
    db.iter_pool.clear();
    Ok(replayed)
}

fn flush_recovered(db: &DbInner, family: &Family, mem: &Arc<MemTable>, edit: &mut VersionEdit) -> Result<()> {
    let spec = OutputSpec {
        level: 0,
        max_file_size: u64::MAX,
        bottommost: false,
        snapshots: Vec::new(),
        relocate_blob_files: HashSet::new(),
        scan_runs: 0,
        range_dels: mem.range_tombstones(),
    };
    let new_file_number = || db.versions.lock().new_file_number();
    let out = job::run(&db.job_env(family, &new_file_number), &mut mem.iter(), &spec)?;
    edit.new_files.extend(out.tables.into_iter().map(|t| (0, t)));
    edit.new_blob_files.extend(out.blob_files);
    db.stats.flush_bytes.fetch_add(out.bytes_written, Ordering::Relaxed);
    Ok(())
}

pub(crate) fn write_options_file(db: &DbInner) -> Result<()> {
    let number = db.versions.lock().new_file_number();
    let text = db.render_options();
    db.fs.write_atomic(&db.dir, &filenames::options_name(number), text.as_bytes())?;
    for name in db.fs.list_dir(&db.dir)? {
        if matches!(filenames::parse(&name), Some((FileKind::Options, n)) if n < number) {
            db.fs.remove_file(&db.dir.join(&name))?;
        }
    }
    Ok(())
}

/// Deals with tables and blob files no version lists (left by a crash during a flush or
/// compaction, or by a crash between an edit and the deletion of the files it made obsolete):
/// those an edit of a MANIFEST that recovered whole deleted are removed, the others are moved to
/// `lost/` (open never deletes what it cannot prove obsolete). Temporary files of interrupted
/// atomic writes are removed. Returns the names moved.
fn remove_orphans(db: &DbInner, proven_obsolete: &HashSet<u64>) -> Result<Vec<String>> {
    let (tables, blobs) = db.versions.lock().live_files();
    let mut unaccounted = Vec::new();
    for name in db.fs.list_dir(&db.dir)? {
        let (orphan, number) = match filenames::parse(&name) {
            Some((FileKind::Table, n)) => (!tables.contains(&n), Some(n)),
            Some((FileKind::Blob, n)) => (!blobs.contains(&n), Some(n)),
            Some((FileKind::Temp, _)) => (true, None),
            _ => (false, None),
        };
        if !orphan {
            continue;
        }
        if number.is_some_and(|n| !proven_obsolete.contains(&n)) {
            unaccounted.push(name);
        } else {
            tracing::info!(target: "strata", file = %name, "removing an obsolete file");
            db.fs.remove_file(&db.dir.join(&name))?;
        }
    }
    move_to_lost(db, &unaccounted)
}
