//! `MemFs`: an in-memory [`FileSystem`] that knows what would survive a power loss.
//!
//! Per file it keeps the live bytes and the length made durable by the last `sync_data` (plus,
//! for a preallocated file whose appends overwrite durable zeros, the durable bytes they
//! replaced); per
//! directory it keeps the live entries and the durable entries (copied from the live ones by
//! `sync_dir`). This follows docs/durability.md: a file's fdatasync does NOT make its directory
//! entry durable, and a create, rename or removal is durable only after its directory is synced.
//! [`MemFs::crash`] / [`MemFs::crash_clone`] turn that bookkeeping into the image a machine would
//! see after rebooting.
//!
//! Simplifications (deliberate, to keep the model small): directories themselves are durable as
//! soon as they are created, and so is a directory's rename; `create` over an existing name
//! truncates that file in place (its synced length drops to 0); a crash never keeps a subset of
//! unsynced directory changes (they are all lost, so renames of files stay atomic). This module
//! must not inject errors: that is `FaultFs`.

use std::collections::{BTreeMap, HashSet};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use strata::fs::{FileLock, FileSystem, RandomAccessFile, SequentialFile, WritableFile};
use strata::{Error, Result};

use crate::rng::Rng;

/// One file's bytes; shared by every name and handle that refers to it (an inode).
#[derive(Default)]
struct FileData {
    data: Vec<u8>,
    /// Bytes made durable by the last `sync_data`.
    synced: usize,
    /// The lowest offset below `synced` written since the last sync (appends into preallocated
    /// space), and the durable bytes from there to `synced` as they were before.
    overwritten: Option<(usize, Vec<u8>)>,
}

type FileRef = Arc<Mutex<FileData>>;

#[derive(Default)]
struct Dir {
    live: BTreeMap<String, FileRef>,
    durable: BTreeMap<String, FileRef>,
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
    /// Power loss: every file is cut to its synced length and every directory reverts to its
    /// durable entries.
    DropUnsynced,
    /// Power loss where, chosen from the seed for each file, the unsynced tail vanishes, survives
    /// in part, or is replaced by zeros, or partly survives with zeros after it, for a random length. Directories revert to their
    /// durable entries.
    Seeded(u64),
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
            CrashMode::Seeded(seed) => Some(Rng::new(seed)),
            _ => None,
        };
        let mut dirs = BTreeMap::new();
        for (path, d) in &self.dirs {
            let entries = if mode == CrashMode::KeepUnsynced { &d.live } else { &d.durable };
            let mut survived = BTreeMap::new();
            for (name, file) in entries {
                let kept = keep.is_some_and(|k| k == path.join(name));
                let data = surviving_bytes(
                    &lock(file),
                    if kept { CrashMode::KeepUnsynced } else { mode },
                    rng.as_mut(),
                );
                let synced = data.len();
                let survivor = FileData { data, synced, overwritten: None };
                survived.insert(name.clone(), Arc::new(Mutex::new(survivor)));
            }
            let durable = survived.clone();
            dirs.insert(path.clone(), Dir { live: survived, durable });
        }
        Image { dirs, locks: HashSet::new(), epoch: self.epoch + 1 }
    }
}

/// The bytes of one file after a crash.
fn surviving_bytes(f: &FileData, mode: CrashMode, rng: Option<&mut Rng>) -> Vec<u8> {
    let synced = f.synced.min(f.data.len());
    if mode == CrashMode::KeepUnsynced {
        return f.data.clone();
    }
    let mut out = f.data[..synced].to_vec();
    // Unsynced writes start at `from`: below `synced` when they overwrote durable zeros, whose
    // old bytes are what the device still holds.
    let from = match &f.overwritten {
        Some((at, old)) => {
            out[*at..synced].copy_from_slice(old);
            *at
        }
        None => synced,
    };
    let unsynced = f.data.len() - from;
    let Some(rng) = rng else { return out };
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

/// Writes `bytes` at `at`, growing `out` as needed.
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
        if at < f.synced && f.overwritten.is_none() {
            let old = f.data[at..f.synced].to_vec();
            f.overwritten = Some((at, old));
        }
        if f.data.len() < end {
            f.data.resize(end, 0);
        }
        f.data[at..end].copy_from_slice(data);
        self.len = end;
        Ok(())
    }
    fn sync_data(&mut self) -> Result<()> {
        let mut f = lock(&self.file);
        f.synced = f.data.len();
        f.overwritten = None;
        Ok(())
    }
    fn len(&self) -> u64 {
        self.len as u64
    }
    fn preallocate(&mut self, upto: u64) -> Result<()> {
        let mut f = lock(&self.file);
        let upto = usize::try_from(upto).unwrap_or(usize::MAX);
        if f.data.len() < upto {
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
        let file = d.live.entry(name).or_default().clone();
        *lock(&file) = FileData::default();
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
        let file = img.dir_mut(&from_dir, from)?.live.remove(&from_name).ok_or_else(|| not_found(from))?;
        img.dir_mut(&to_dir, to)?.live.insert(to_name, file);
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
        d.live.insert(to_name, file);
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        let (dir, name) = split(path)?;
        let mut img = lock(&self.image);
        img.dir_mut(&dir, path)?.live.remove(&name).map(|_| ()).ok_or_else(|| not_found(path))
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
        Ok(())
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let (dir, name) = split(path)?;
        let mut img = lock(&self.image);
        // Like PosixFs, taking the lock creates the (empty) lock file if it is missing.
        img.dir_mut(&dir, path)?.live.entry(name).or_default();
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
}
