//! `MemFs`: an in-memory [`FileSystem`] that knows what would survive a power loss.
//!
//! Per file (an inode, shared by every name and handle) it keeps the live bytes and enough to
//! rebuild the durable image left by the last `sync_data`: its length, the durable bytes of
//! every 4 KiB page overwritten since (appends into preallocated space), and the set of pages
//! written or grown into since (the dirty pages). Per directory it keeps the live entries, the
//! durable entries (copied from the live ones by `sync_dir`) and the creates, renames and
//! removals made since that sync. This follows docs/durability.md: a file's fdatasync does NOT
//! make its directory entry durable, and a create, rename or removal is durable only after its
//! directory is synced. [`MemFs::crash`] / [`MemFs::crash_clone`] turn that bookkeeping into the
//! image a machine would see after rebooting, as chosen by [`CrashMode`].
//!
//! The page model ([`CrashMode::Pages`]) is the device writing dirty pages back in any order
//! and losing power part way: for each file, ANY subset of its dirty pages (aligned to 4096
//! bytes in the file) reaches the disk, each page whole or not at all, and a page that does not
//! reads as what the durable image held there (the old bytes below the durable length, so
//! zeros where a synced preallocation was overwritten). The file's length is the durable length
//! or, if a dirty page beyond it was kept, the live end of the last kept page; a dropped page
//! below a kept one and beyond the durable length reads as zeros (a hole). Independently, ANY
//! subset of each directory's changes since its last sync survives, each applied on its own in
//! the order made; a rename within one directory is one change (the new name appears and the
//! old one goes together, as rename(2) promises). The seed picks, per file and per directory,
//! a keep rate (none, a quarter, a half, three quarters, all) and then each page or change, so
//! the all-or-nothing cases come up often and every mix is possible.
//!
//! Simplifications (deliberate, to keep the model small): directories themselves are durable as
//! soon as they are created, and so is a directory's rename; a file rename between two
//! directories is two independent changes (a removal and a create); `create` over an existing
//! name truncates that file in place (its durable length drops to 0); the older modes
//! ([`CrashMode::DropUnsynced`], [`CrashMode::Seeded`]) never keep an unsynced directory change.
//! A crashed image keeps hard links shared: one file's bytes are decided once whatever names
//! reach it. This module must not inject errors: that is `FaultFs`.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use strata::fs::{FileLock, FileSystem, RandomAccessFile, SequentialFile, WritableFile};
use strata::{Error, Result};

use crate::rng::Rng;

/// The unit in which [`CrashMode::Pages`] keeps or drops unsynced data.
pub const PAGE_SIZE: usize = 4096;

/// One file's bytes; shared by every name and handle that refers to it (an inode).
#[derive(Default)]
struct FileData {
    data: Vec<u8>,
    /// Length of the durable image: the file's length at the last `sync_data`.
    synced: usize,
    /// The durable bytes (up to `synced`) of each page overwritten since the last sync, saved
    /// at its first overwrite, by page index.
    saved: BTreeMap<usize, Vec<u8>>,
    /// Pages written or grown into since the last sync.
    dirty: BTreeSet<usize>,
    /// The lowest offset written since the last sync (`usize::MAX` if none): where
    /// [`CrashMode::Seeded`]'s unsynced tail starts when it is below `synced`.
    lowest_write: usize,
}

impl FileData {
    fn new() -> Self {
        Self { lowest_write: usize::MAX, ..Self::default() }
    }

    /// Records that `at..end` is about to be written: saves the durable bytes of pages first
    /// overwritten and marks every touched page dirty.
    fn will_write(&mut self, at: usize, end: usize) {
        if at >= end {
            return;
        }
        self.lowest_write = self.lowest_write.min(at);
        self.will_grow(at, end);
    }

    /// Marks the pages of `at..end` dirty, saving the durable bytes of any below `synced`.
    fn will_grow(&mut self, at: usize, end: usize) {
        if at >= end {
            return;
        }
        for page in at / PAGE_SIZE..=(end - 1) / PAGE_SIZE {
            let start = page * PAGE_SIZE;
            if start < self.synced && !self.saved.contains_key(&page) {
                let old = self.data[start..self.synced.min(start + PAGE_SIZE)].to_vec();
                self.saved.insert(page, old);
            }
            self.dirty.insert(page);
        }
    }

    fn mark_synced(&mut self) {
        self.synced = self.data.len();
        self.saved.clear();
        self.dirty.clear();
        self.lowest_write = usize::MAX;
    }

    /// The bytes the last sync made durable.
    fn durable_image(&self) -> Vec<u8> {
        let mut out = self.data[..self.synced.min(self.data.len())].to_vec();
        for (&page, old) in &self.saved {
            let start = page * PAGE_SIZE;
            out[start..start + old.len()].copy_from_slice(old);
        }
        out
    }

    /// A file holding exactly `data`, all of it durable.
    fn durable(data: Vec<u8>) -> Self {
        let synced = data.len();
        Self { data, synced, ..Self::new() }
    }
}

type FileRef = Arc<Mutex<FileData>>;

/// A directory change not yet made durable by `sync_dir`, with the file it concerns.
#[derive(Clone)]
enum DirChange {
    /// A name was created (or linked) for the file.
    Insert(String, FileRef),
    /// The name that referred to the file was removed.
    Remove(String, FileRef),
    /// The file moved from one name to another within this directory (atomically).
    Rename { from: String, to: String, file: FileRef },
}

impl DirChange {
    /// Applies this change on its own to `entries`. A removal (or the old half of a rename)
    /// only removes the name if it still refers to the same file, since the change that put
    /// another file there may have survived when this one's cause did not.
    fn apply(&self, entries: &mut BTreeMap<String, FileRef>) {
        let remove_if_same = |entries: &mut BTreeMap<String, FileRef>, name: &str, file: &FileRef| {
            if entries.get(name).is_some_and(|f| Arc::ptr_eq(f, file)) {
                entries.remove(name);
            }
        };
        match self {
            DirChange::Insert(name, file) => {
                entries.insert(name.clone(), Arc::clone(file));
            }
            DirChange::Remove(name, file) => remove_if_same(entries, name, file),
            DirChange::Rename { from, to, file } => {
                remove_if_same(entries, from, file);
                entries.insert(to.clone(), Arc::clone(file));
            }
        }
    }
}

#[derive(Default)]
struct Dir {
    live: BTreeMap<String, FileRef>,
    durable: BTreeMap<String, FileRef>,
    /// Changes since the last `sync_dir`, oldest first.
    pending: Vec<DirChange>,
}

impl Dir {
    fn insert(&mut self, name: String, file: FileRef) {
        self.pending.push(DirChange::Insert(name.clone(), Arc::clone(&file)));
        self.live.insert(name, file);
    }

    fn remove(&mut self, name: &str) -> Option<FileRef> {
        let file = self.live.remove(name)?;
        self.pending.push(DirChange::Remove(name.to_string(), Arc::clone(&file)));
        Some(file)
    }
}

/// The whole filesystem. `epoch` changes at every in-place crash so lock guards from before the
/// crash cannot release locks taken after it.
#[derive(Default)]
struct Image {
    dirs: BTreeMap<PathBuf, Dir>,
    locks: HashSet<PathBuf>,
    epoch: u64,
}

/// What a crash does to data and directory entries that were not made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// Power loss: every file reverts to its durable image and every directory to its durable
    /// entries.
    DropUnsynced,
    /// Power loss where, chosen from the seed for each file, the unsynced tail (one contiguous
    /// run from the lowest unsynced offset) vanishes, survives in part, is replaced by zeros, or
    /// survives in part with zeros after it, for a random length. Directories revert to their
    /// durable entries.
    Seeded(u64),
    /// Power loss at page granularity (see the module doc): any subset of each file's unsynced
    /// 4 KiB pages and of each directory's unsynced changes survives, chosen from the seed.
    Pages(u64),
    /// Process crash (kill -9): everything handed to the filesystem survives; only locks go.
    KeepUnsynced,
}

/// An in-memory filesystem with power-loss simulation. Clones share the same files.
#[derive(Clone, Default)]
pub struct MemFs {
    image: Arc<Mutex<Image>>,
}

impl std::fmt::Debug for MemFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let img = lock(&self.image);
        f.debug_struct("MemFs").field("dirs", &img.dirs.keys().collect::<Vec<_>>()).finish()
    }
}

/// Locks a mutex, ignoring poisoning: a panicking test thread must not hide the filesystem from
/// the assertions that follow.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn not_found(path: &Path) -> Error {
    Error::io(path, std::io::Error::new(ErrorKind::NotFound, "no such file or directory (MemFs)"))
}

/// Splits `path` into its directory and entry name.
fn split(path: &Path) -> Result<(PathBuf, String)> {
    let name = path.file_name().ok_or_else(|| not_found(path))?;
    let parent = path.parent().unwrap_or(Path::new(""));
    Ok((parent.to_path_buf(), name.to_string_lossy().into_owned()))
}

/// A keep rate for one file's pages or one directory's changes: all-or-nothing comes up often.
fn keep_percent(rng: &mut Rng) -> u64 {
    [0, 25, 50, 75, 100][rng.below(5) as usize]
}

impl Image {
    /// Moves directory `from` (with no subdirectories) to the absent name `to`.
    fn rename_dir(&mut self, from: &Path, to: &Path) -> Result<()> {
        if self.dirs.contains_key(to) {
            return Err(Error::io(to, std::io::Error::from(ErrorKind::AlreadyExists)));
        }
        if self.dirs.keys().any(|p| p.parent() == Some(from)) {
            return Err(Error::io(from, std::io::Error::other("MemFs renames only leaf directories")));
        }
        let parent = to.parent().ok_or_else(|| not_found(to))?;
        if !self.dirs.contains_key(parent) {
            return Err(not_found(to));
        }
        let moved = self.dirs.remove(from).ok_or_else(|| not_found(from))?;
        self.dirs.insert(to.to_path_buf(), moved);
        Ok(())
    }

    fn dir_mut(&mut self, dir: &Path, path: &Path) -> Result<&mut Dir> {
        self.dirs.get_mut(dir).ok_or_else(|| not_found(path))
    }

    fn file(&self, path: &Path) -> Result<FileRef> {
        let (dir, name) = split(path)?;
        let d = self.dirs.get(&dir).ok_or_else(|| not_found(path))?;
        d.live.get(&name).cloned().ok_or_else(|| not_found(path))
    }

    /// The image a reboot would find; everything in it is durable.
    fn crashed(&self, mode: CrashMode) -> Image {
        self.crashed_keeping(mode, None)
    }

    /// As [`Image::crashed`], except that the file at `keep` (if any) keeps every byte written
    /// to it, synced or not.
    fn crashed_keeping(&self, mode: CrashMode, keep: Option<&Path>) -> Image {
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

impl MemFs {
    /// An empty filesystem.
    pub fn new() -> Self {
        Self::default()
    }

    /// Simulates a power loss in place (unsynced data and directory changes vanish). Handles
    /// opened before the crash keep working on the old, now unreachable, files.
    pub fn crash(&self) {
        self.crash_with(CrashMode::DropUnsynced);
    }

    /// Simulates a crash in place with the given treatment of unsynced state.
    pub fn crash_with(&self, mode: CrashMode) {
        let mut img = lock(&self.image);
        *img = img.crashed(mode);
    }

    /// Like [`MemFs::crash_clone`] with [`CrashMode::DropUnsynced`], except that the file at
    /// `keep` keeps its unsynced bytes: the device happened to write that file's pages back and
    /// no other's. Directories still revert to their durable entries.
    pub fn crash_clone_keeping_unsynced(&self, keep: &Path) -> MemFs {
        let img = lock(&self.image);
        MemFs { image: Arc::new(Mutex::new(img.crashed_keeping(CrashMode::DropUnsynced, Some(keep)))) }
    }

    /// An independent filesystem holding what a reboot after a crash *now* would find; this one
    /// is left untouched (and may keep running a database).
    pub fn crash_clone(&self, mode: CrashMode) -> MemFs {
        let img = lock(&self.image);
        MemFs { image: Arc::new(Mutex::new(img.crashed(mode))) }
    }

    /// The live bytes of a file, if it exists.
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        let file = lock(&self.image).file(path).ok()?;
        let data = lock(&file).data.clone();
        Some(data)
    }

    /// How many bytes of a file are durable, if it exists.
    pub fn synced_len(&self, path: &Path) -> Option<usize> {
        let file = lock(&self.image).file(path).ok()?;
        let synced = lock(&file).synced;
        Some(synced)
    }

    /// Names in `dir` that would survive a power loss now.
    pub fn durable_names(&self, dir: &Path) -> Vec<String> {
        lock(&self.image).dirs.get(dir).map(|d| d.durable.keys().cloned().collect()).unwrap_or_default()
    }
}

struct MemWritable {
    file: FileRef,
    /// Where the next append goes: the file's length unless it was preallocated past it.
    len: usize,
}

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let mut f = lock(&self.file);
        let (at, end) = (self.len, self.len + data.len());
        // A handle left past the end (the file was recreated under it) grows a gap of zeros.
        let old_len = f.data.len();
        f.will_grow(old_len, at);
        f.will_write(at, end);
        if f.data.len() < end {
            f.data.resize(end, 0);
        }
        f.data[at..end].copy_from_slice(data);
        self.len = end;
        Ok(())
    }
    fn sync_data(&mut self) -> Result<()> {
        lock(&self.file).mark_synced();
        Ok(())
    }
    fn len(&self) -> u64 {
        self.len as u64
    }
    fn preallocate(&mut self, upto: u64) -> Result<()> {
        let mut f = lock(&self.file);
        let upto = usize::try_from(upto).unwrap_or(usize::MAX);
        if f.data.len() < upto {
            let old_len = f.data.len();
            f.will_grow(old_len, upto);
            f.data.resize(upto, 0);
        }
        Ok(())
    }
}

struct MemRandom {
    file: FileRef,
    path: PathBuf,
    size: u64,
}

impl RandomAccessFile for MemRandom {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let f = lock(&self.file);
        let end = offset.checked_add(buf.len() as u64).filter(|&e| e <= self.size);
        let src = end.and_then(|e| f.data.get(offset as usize..e as usize));
        let Some(src) = src else {
            let e = std::io::Error::new(ErrorKind::UnexpectedEof, "read past the end of the file (MemFs)");
            return Err(Error::io(&self.path, e));
        };
        buf.copy_from_slice(src);
        Ok(())
    }
    fn size(&self) -> u64 {
        self.size
    }
}

struct MemSequential {
    file: FileRef,
    pos: usize,
}

impl SequentialFile for MemSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let f = lock(&self.file);
        let rest = f.data.get(self.pos..).unwrap_or(&[]);
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        self.pos += n;
        Ok(n)
    }
}

struct MemLock {
    image: Arc<Mutex<Image>>,
    path: PathBuf,
    epoch: u64,
}

impl FileLock for MemLock {}

impl Drop for MemLock {
    fn drop(&mut self) {
        let mut img = lock(&self.image);
        // A crash already released every lock; a newer holder of this path must keep its lock.
        if img.epoch == self.epoch {
            img.locks.remove(&self.path);
        }
    }
}

impl FileSystem for MemFs {
    fn create_dir_all(&self, path: &Path) -> Result<()> {
        let mut img = lock(&self.image);
        for dir in path.ancestors() {
            img.dirs.entry(dir.to_path_buf()).or_default();
        }
        Ok(())
    }

    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let (dir, name) = split(path)?;
        let mut img = lock(&self.image);
        let d = img.dir_mut(&dir, path)?;
        let file = match d.live.get(&name) {
            Some(file) => Arc::clone(file),
            None => {
                let file = Arc::new(Mutex::new(FileData::new()));
                d.insert(name, Arc::clone(&file));
                file
            }
        };
        *lock(&file) = FileData::new();
        Ok(Box::new(MemWritable { file, len: 0 }))
    }

    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = lock(&self.image).file(path)?;
        let size = lock(&file).data.len() as u64;
        Ok(Arc::new(MemRandom { file, path: path.to_path_buf(), size }))
    }

    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        let file = lock(&self.image).file(path)?;
        Ok(Box::new(MemSequential { file, pos: 0 }))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let ((from_dir, from_name), (to_dir, to_name)) = (split(from)?, split(to)?);
        let mut img = lock(&self.image);
        if img.dirs.contains_key(from) {
            return img.rename_dir(from, to);
        }
        img.dir_mut(&to_dir, to)?;
        if from_dir == to_dir {
            let d = img.dir_mut(&from_dir, from)?;
            let file = d.live.remove(&from_name).ok_or_else(|| not_found(from))?;
            d.pending.push(DirChange::Rename {
                from: from_name,
                to: to_name.clone(),
                file: Arc::clone(&file),
            });
            d.live.insert(to_name, file);
            return Ok(());
        }
        let file = img.dir_mut(&from_dir, from)?.remove(&from_name).ok_or_else(|| not_found(from))?;
        img.dir_mut(&to_dir, to)?.insert(to_name, file);
        Ok(())
    }

    /// A hard link: the new name shares the file (an inode) with the old one.
    fn link_or_copy(&self, from: &Path, to: &Path) -> Result<()> {
        let (to_dir, to_name) = split(to)?;
        let mut img = lock(&self.image);
        let file = img.file(from)?;
        let d = img.dir_mut(&to_dir, to)?;
        if d.live.contains_key(&to_name) {
            return Err(Error::io(to, std::io::Error::from(ErrorKind::AlreadyExists)));
        }
        d.insert(to_name, file);
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        let (dir, name) = split(path)?;
        let mut img = lock(&self.image);
        img.dir_mut(&dir, path)?.remove(&name).map(|_| ()).ok_or_else(|| not_found(path))
    }

    fn list_dir(&self, path: &Path) -> Result<Vec<String>> {
        let img = lock(&self.image);
        let d = img.dirs.get(path).ok_or_else(|| not_found(path))?;
        let mut names: Vec<String> = d.live.keys().cloned().collect();
        let subdirs = img.dirs.keys().filter(|p| p.parent() == Some(path) && p.as_path() != path);
        names.extend(subdirs.filter_map(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()));
        Ok(names)
    }

    fn is_dir(&self, path: &Path) -> Result<Option<bool>> {
        let img = lock(&self.image);
        if img.dirs.contains_key(path) {
            return Ok(Some(true));
        }
        Ok(img.file(path).ok().map(|_| false))
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        let file = lock(&self.image).file(path)?;
        let len = lock(&file).data.len() as u64;
        Ok(len)
    }

    fn sync_dir(&self, path: &Path) -> Result<()> {
        let mut img = lock(&self.image);
        let d = img.dir_mut(path, path)?;
        d.durable = d.live.clone();
        d.pending.clear();
        Ok(())
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let (dir, name) = split(path)?;
        let mut img = lock(&self.image);
        // Like PosixFs, taking the lock creates the (empty) lock file if it is missing.
        let d = img.dir_mut(&dir, path)?;
        if !d.live.contains_key(&name) {
            d.insert(name, Arc::new(Mutex::new(FileData::new())));
        }
        if !img.locks.insert(path.to_path_buf()) {
            return Err(Error::Locked(path.to_path_buf()));
        }
        Ok(Box::new(MemLock { image: Arc::clone(&self.image), path: path.to_path_buf(), epoch: img.epoch }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(fs: &MemFs, path: &Path, data: &[u8], sync: bool) {
        let mut f = fs.create(path).unwrap();
        f.append(data).unwrap();
        if sync {
            f.sync_data().unwrap();
        }
    }

    fn setup() -> (MemFs, PathBuf) {
        let fs = MemFs::new();
        let dir = PathBuf::from("/db");
        fs.create_dir_all(&dir).unwrap();
        (fs, dir)
    }

    #[test]
    fn appends_into_preallocated_space_are_durable_only_after_a_sync() {
        let (fs, dir) = setup();
        let path = dir.join("wal");
        let mut f = fs.create(&path).unwrap();
        f.append(b"head").unwrap();
        f.preallocate(16).unwrap();
        assert_eq!(f.len(), 4);
        f.sync_data().unwrap();
        fs.sync_dir(&dir).unwrap();
        f.append(b"-synced").unwrap();
        f.sync_data().unwrap();
        f.append(b"-lost").unwrap();
        assert_eq!(f.len(), 16);
        assert_eq!(fs.contents(&path).unwrap(), b"head-synced-lost");
        let zeros_then = |n: usize| [b"head-synced".as_slice(), &vec![0u8; n]].concat();
        let after = fs.crash_clone(CrashMode::DropUnsynced);
        assert_eq!(after.contents(&path).unwrap(), zeros_then(5));
        assert_eq!(fs.crash_clone(CrashMode::KeepUnsynced).contents(&path).unwrap(), b"head-synced-lost");
        for seed in 0..64 {
            let got = fs.crash_clone(CrashMode::Seeded(seed)).contents(&path).unwrap();
            assert!(got.len() >= 16 && got.starts_with(b"head-synced"), "seed {seed}: {got:?}");
        }
        // A second handle sees appends at the logical end, not after the zeros.
        let mut g = after.create(&dir.join("other")).unwrap();
        g.preallocate(8).unwrap();
        g.append(b"ab").unwrap();
        assert_eq!(after.contents(&dir.join("other")).unwrap(), b"ab\0\0\0\0\0\0");
    }

    #[test]
    fn unsynced_data_is_dropped_and_synced_data_kept() {
        let (fs, dir) = setup();
        let path = dir.join("a");
        let mut f = fs.create(&path).unwrap();
        f.append(b"durable").unwrap();
        f.sync_data().unwrap();
        f.append(b"-volatile").unwrap();
        fs.sync_dir(&dir).unwrap();
        assert_eq!(fs.contents(&path).unwrap(), b"durable-volatile");
        let after = fs.crash_clone(CrashMode::DropUnsynced);
        assert_eq!(after.contents(&path).unwrap(), b"durable");
        assert_eq!(after.read_all(&path).unwrap(), b"durable");
        // A process crash keeps everything that reached the filesystem.
        let killed = fs.crash_clone(CrashMode::KeepUnsynced);
        assert_eq!(killed.contents(&path).unwrap(), b"durable-volatile");
    }

    #[test]
    fn unsynced_directory_entries_are_dropped_even_if_the_file_was_synced() {
        let (fs, dir) = setup();
        write(&fs, &dir.join("old"), b"x", true);
        fs.sync_dir(&dir).unwrap();
        write(&fs, &dir.join("new"), b"synced data, unsynced entry", true);
        fs.remove_file(&dir.join("old")).unwrap();
        assert_eq!(fs.list_dir(&dir).unwrap(), vec!["new".to_string()]);
        fs.crash();
        assert_eq!(fs.list_dir(&dir).unwrap(), vec!["old".to_string()]);
        assert_eq!(fs.contents(&dir.join("old")).unwrap(), b"x");
        assert!(fs.open_sequential(&dir.join("new")).is_err());
    }

    #[test]
    fn rename_is_durable_only_after_sync_dir() {
        let (fs, dir) = setup();
        write(&fs, &dir.join("CURRENT"), b"one", true);
        fs.sync_dir(&dir).unwrap();
        write(&fs, &dir.join("CURRENT.tmp"), b"two", true);
        fs.rename(&dir.join("CURRENT.tmp"), &dir.join("CURRENT")).unwrap();
        assert_eq!(fs.read_all(&dir.join("CURRENT")).unwrap(), b"two");
        let before_sync = fs.crash_clone(CrashMode::DropUnsynced);
        assert_eq!(before_sync.read_all(&dir.join("CURRENT")).unwrap(), b"one");
        assert_eq!(before_sync.durable_names(&dir), vec!["CURRENT".to_string()]);
        fs.sync_dir(&dir).unwrap();
        let after_sync = fs.crash_clone(CrashMode::DropUnsynced);
        assert_eq!(after_sync.read_all(&dir.join("CURRENT")).unwrap(), b"two");
        assert_eq!(after_sync.list_dir(&dir).unwrap(), vec!["CURRENT".to_string()]);
    }

    #[test]
    fn seeded_crashes_keep_synced_bytes_and_vary_the_tail() {
        let (fs, dir) = setup();
        let path = dir.join("wal");
        let mut f = fs.create(&path).unwrap();
        f.append(&[7u8; 100]).unwrap();
        f.sync_data().unwrap();
        f.append(&[9u8; 1000]).unwrap();
        fs.sync_dir(&dir).unwrap();
        let mut lengths = HashSet::new();
        for seed in 0..64 {
            let data = fs.crash_clone(CrashMode::Seeded(seed)).contents(&path).unwrap();
            assert!(data.len() <= 1100);
            assert_eq!(&data[..100], &[7u8; 100][..], "seed {seed} damaged synced bytes");
            lengths.insert(data.len());
        }
        assert!(lengths.len() > 10, "seeded crashes should produce varied tails: {lengths:?}");
    }

    #[test]
    fn a_crash_releases_locks_and_old_guards_do_not_release_new_ones() {
        let (fs, dir) = setup();
        let path = dir.join("LOCK");
        let guard = fs.lock(&path).unwrap();
        assert!(matches!(fs.lock(&path), Err(Error::Locked(_))));
        fs.crash();
        let new_guard = fs.lock(&path).unwrap();
        drop(guard);
        assert!(matches!(fs.lock(&path), Err(Error::Locked(_))));
        drop(new_guard);
        fs.lock(&path).unwrap();
    }

    #[test]
    fn handles_from_before_a_crash_do_not_change_the_crashed_image() {
        let (fs, dir) = setup();
        let path = dir.join("f");
        let mut f = fs.create(&path).unwrap();
        f.append(b"abc").unwrap();
        f.sync_data().unwrap();
        fs.sync_dir(&dir).unwrap();
        fs.crash();
        f.append(b"late").unwrap();
        f.sync_data().unwrap();
        assert_eq!(fs.contents(&path).unwrap(), b"abc");
    }

    #[test]
    fn reads_past_the_end_fail_and_missing_files_are_not_found() {
        let (fs, dir) = setup();
        write(&fs, &dir.join("f"), b"0123456789", true);
        let r = fs.open_random(&dir.join("f")).unwrap();
        let mut buf = [0u8; 4];
        r.read_exact_at(6, &mut buf).unwrap();
        assert_eq!(&buf, b"6789");
        assert!(r.read_exact_at(7, &mut buf).is_err());
        assert!(r.read_exact_at(u64::MAX, &mut buf).is_err());
        assert!(fs.open_random(&dir.join("nope")).is_err());
        assert_eq!(fs.is_dir(&dir).unwrap(), Some(true));
        assert_eq!(fs.is_dir(&dir.join("f")).unwrap(), Some(false));
        assert_eq!(fs.is_dir(&dir.join("nope")).unwrap(), None);
        assert!(fs.create(Path::new("/missing/dir/f")).is_err());
    }

    // -----------------------------------------------------------------------------------------
    // The page model (`CrashMode::Pages`)

    const P: usize = PAGE_SIZE;

    /// `n` bytes that say which page they are in, so a test can tell pages apart.
    fn paged(n: usize, tag: u8) -> Vec<u8> {
        (0..n).map(|i| tag.wrapping_add((i / P) as u8 + 1)).collect()
    }

    /// Which of the three live pages of `got` survived; panics on anything the model forbids:
    /// a page that is neither its live bytes nor zeros, or a file that does not end at a page
    /// it kept.
    fn kept_of_three(got: &[u8], live: &[u8], seed: u64) -> [bool; 3] {
        let mut kept = [false; 3];
        for (page, k) in kept.iter_mut().enumerate() {
            let range = page * P..live.len().min((page + 1) * P);
            let Some(bytes) = got.get(range.clone()) else { continue };
            *k = bytes == &live[range];
            assert!(*k || bytes.iter().all(|&b| b == 0), "seed {seed}: page {page} is torn");
        }
        let last_kept = kept.iter().rposition(|&k| k);
        let expected_len = last_kept.map_or(0, |p| live.len().min((p + 1) * P));
        assert_eq!(got.len(), expected_len, "seed {seed}: the file must end at its last kept page");
        kept
    }

    #[test]
    fn any_subset_of_unsynced_pages_survives_with_holes_for_dropped_ones() {
        let (fs, dir) = setup();
        let path = dir.join("f");
        let mut f = fs.create(&path).unwrap();
        fs.sync_dir(&dir).unwrap();
        // Three pages, the last one partial, none synced.
        let live = paged(2 * P + 100, 10);
        f.append(&live[..1000]).unwrap();
        f.append(&live[1000..]).unwrap();
        let mut subsets = HashSet::new();
        for seed in 0..400 {
            let got = fs.crash_clone(CrashMode::Pages(seed)).contents(&path).unwrap();
            subsets.insert(kept_of_three(&got, &live, seed));
        }
        assert_eq!(subsets.len(), 8, "every subset of the three pages should come up: {subsets:?}");
        // Pages 1 and 3 without page 2: a zero hole in the middle.
        let seed = (0..400)
            .find(|&s| {
                let got = fs.crash_clone(CrashMode::Pages(s)).contents(&path).unwrap();
                kept_of_three(&got, &live, s) == [true, false, true]
            })
            .unwrap();
        let got = fs.crash_clone(CrashMode::Pages(seed)).contents(&path).unwrap();
        assert_eq!(got.len(), 2 * P + 100);
        assert_eq!(&got[..P], &live[..P]);
        assert!(got[P..2 * P].iter().all(|&b| b == 0));
        assert_eq!(&got[2 * P..], &live[2 * P..]);
        // The same seed gives the same image.
        assert_eq!(fs.crash_clone(CrashMode::Pages(seed)).contents(&path).unwrap(), got);
    }

    #[test]
    fn dropped_pages_revert_to_the_durable_image() {
        let (fs, dir) = setup();
        let path = dir.join("wal");
        let mut f = fs.create(&path).unwrap();
        // Durable: 5000 bytes of data, then zeros preallocated up to 4 pages, all synced.
        let head = paged(5000, 50);
        f.append(&head).unwrap();
        f.preallocate(4 * P as u64).unwrap();
        f.sync_data().unwrap();
        fs.sync_dir(&dir).unwrap();
        // Unsynced: appends into the durable zeros (pages 1..3) and growth to a fifth page.
        let tail = paged(4 * P + 200 - 5000, 90);
        f.append(&tail).unwrap();
        let live = fs.contents(&path).unwrap();
        let durable = [head.clone(), vec![0u8; 4 * P - 5000]].concat();
        let mut lengths = HashSet::new();
        for seed in 0..300 {
            let got = fs.crash_clone(CrashMode::Pages(seed)).contents(&path).unwrap();
            assert_eq!(&got[..5000], &head[..], "seed {seed}: synced bytes changed");
            assert!(got.len() == 4 * P || got.len() == live.len(), "seed {seed}: length {}", got.len());
            for page in 1..5 {
                let range = page * P..got.len().min((page + 1) * P);
                let was = if page * P < 4 * P { &durable[range.clone()] } else { &[][..] };
                let ok = got[range.clone()] == live[range.clone()] || got[range.clone()] == *was;
                assert!(ok, "seed {seed}: page {page} is neither live nor durable");
            }
            // Page 1 straddles the durable length: dropped, it keeps the durable head bytes.
            let page1 = &got[P..2 * P];
            assert!(page1 == &live[P..2 * P] || page1 == &durable[P..2 * P], "seed {seed}");
            lengths.insert(got.len());
        }
        assert_eq!(lengths.len(), 2, "the fifth page should be kept by some seeds and not others");
    }

    #[test]
    fn a_kept_page_beyond_the_durable_length_leaves_zero_holes_below_it() {
        let (fs, dir) = setup();
        let path = dir.join("f");
        let mut f = fs.create(&path).unwrap();
        f.append(&paged(100, 1)).unwrap();
        f.sync_data().unwrap();
        fs.sync_dir(&dir).unwrap();
        let live = paged(3 * P, 1);
        f.append(&live[100..]).unwrap();
        let hole = (0..400).find_map(|seed| {
            let got = fs.crash_clone(CrashMode::Pages(seed)).contents(&path).unwrap();
            let kept = [got.get(..P) == Some(&live[..P]), got.get(P..2 * P) == Some(&live[P..2 * P])];
            (got.len() == 3 * P && kept == [false, false]).then_some(got)
        });
        let got = hole.expect("some seed keeps only the last page");
        assert_eq!(&got[..100], &live[..100], "durable bytes of a dropped page stay");
        assert!(got[100..2 * P].iter().all(|&b| b == 0));
        assert_eq!(&got[2 * P..], &live[2 * P..]);
    }

    #[test]
    fn any_subset_of_unsynced_directory_changes_survives_and_renames_stay_atomic() {
        let (fs, dir) = setup();
        write(&fs, &dir.join("CURRENT"), b"one", true);
        write(&fs, &dir.join("gone"), b"x", true);
        fs.sync_dir(&dir).unwrap();
        write(&fs, &dir.join("new"), b"n", true);
        fs.remove_file(&dir.join("gone")).unwrap();
        write(&fs, &dir.join("CURRENT.tmp"), b"two", true);
        fs.rename(&dir.join("CURRENT.tmp"), &dir.join("CURRENT")).unwrap();
        let mut outcomes = HashSet::new();
        for seed in 0..400 {
            let after = fs.crash_clone(CrashMode::Pages(seed));
            let current = after.read_all(&dir.join("CURRENT")).unwrap();
            let tmp = after.contents(&dir.join("CURRENT.tmp"));
            assert!(current == b"one" || current == b"two", "seed {seed}: CURRENT is {current:?}");
            // The temporary name can only be left if the rename did not survive.
            assert!(tmp.is_none() || current == b"one", "seed {seed}: rename not atomic");
            let new = after.contents(&dir.join("new")).is_some();
            let gone = after.contents(&dir.join("gone")).is_some();
            outcomes.insert((new, gone, current, tmp.is_some()));
        }
        // 2 (new) x 2 (gone) x 3 (no rename nor create / create only / rename).
        assert_eq!(outcomes.len(), 12, "{outcomes:?}");
    }

    #[test]
    fn page_crashes_keep_synced_state_and_hard_links_shared() {
        let (fs, dir) = setup();
        let mut f = fs.create(&dir.join("a")).unwrap();
        f.append(&paged(3 * P, 7)).unwrap();
        f.sync_data().unwrap();
        fs.link_or_copy(&dir.join("a"), &dir.join("b")).unwrap();
        fs.sync_dir(&dir).unwrap();
        f.append(&paged(2 * P, 9)).unwrap();
        for seed in 0..64 {
            let after = fs.crash_clone(CrashMode::Pages(seed));
            let (a, b) = (after.contents(&dir.join("a")).unwrap(), after.contents(&dir.join("b")).unwrap());
            assert_eq!(a, b, "seed {seed}: two names of one file differ");
            assert_eq!(&a[..3 * P], &paged(3 * P, 7)[..]);
            let mut w = after.create(&dir.join("c")).unwrap();
            w.append(b"later").unwrap();
            assert_eq!(after.contents(&dir.join("a")).unwrap(), a, "a crashed image is durable");
        }
        // Fully synced state is all a crash can find.
        let mut g = fs.create(&dir.join("d")).unwrap();
        g.append(b"d").unwrap();
        g.sync_data().unwrap();
        f.sync_data().unwrap();
        fs.sync_dir(&dir).unwrap();
        for seed in 0..16 {
            let after = fs.crash_clone(CrashMode::Pages(seed));
            assert_eq!(after.contents(&dir.join("a")), fs.contents(&dir.join("a")));
            assert_eq!(after.contents(&dir.join("d")).unwrap(), b"d");
        }
    }
}
