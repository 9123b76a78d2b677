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

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use strata::fs::{FileLock, FileSystem, RandomAccessFile, SequentialFile, WritableFile};
use strata::{Error, Result};

mod crash;
mod file;
mod tree;

use file::{FileData, MemRandom, MemSequential, MemWritable};
use tree::{DirChange, Image, MemLock};

/// The unit in which [`CrashMode::Pages`] keeps or drops unsynced data.
pub const PAGE_SIZE: usize = 4096;

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
mod tests;
