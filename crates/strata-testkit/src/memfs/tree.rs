//! The directory tree of `MemFs`: each directory's live entries, durable entries and the
//! changes made since its last `sync_dir`, the whole [`Image`], and the lock guard that
//! releases a lock in it. It records changes; turning them into a crash image is `crash.rs`'s.

use std::collections::{BTreeMap, HashSet};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use strata::fs::FileLock;
use strata::{Error, Result};

use super::file::FileRef;
use super::{lock, not_found, split};

/// A directory change not yet made durable by `sync_dir`, with the file it concerns.
#[derive(Clone)]
pub(super) enum DirChange {
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
    pub(super) fn apply(&self, entries: &mut BTreeMap<String, FileRef>) {
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
pub(super) struct Dir {
    pub(super) live: BTreeMap<String, FileRef>,
    pub(super) durable: BTreeMap<String, FileRef>,
    /// Changes since the last `sync_dir`, oldest first.
    pub(super) pending: Vec<DirChange>,
}

impl Dir {
    pub(super) fn insert(&mut self, name: String, file: FileRef) {
        self.pending.push(DirChange::Insert(name.clone(), Arc::clone(&file)));
        self.live.insert(name, file);
    }

    pub(super) fn remove(&mut self, name: &str) -> Option<FileRef> {
        let file = self.live.remove(name)?;
        self.pending.push(DirChange::Remove(name.to_string(), Arc::clone(&file)));
        Some(file)
    }
}

/// The whole filesystem. `epoch` changes at every in-place crash so lock guards from before the
/// crash cannot release locks taken after it.
#[derive(Default)]
pub(super) struct Image {
    pub(super) dirs: BTreeMap<PathBuf, Dir>,
    pub(super) locks: HashSet<PathBuf>,
    pub(super) epoch: u64,
}

impl Image {
    /// Moves directory `from` (with no subdirectories) to the absent name `to`.
    pub(super) fn rename_dir(&mut self, from: &Path, to: &Path) -> Result<()> {
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

    pub(super) fn dir_mut(&mut self, dir: &Path, path: &Path) -> Result<&mut Dir> {
        self.dirs.get_mut(dir).ok_or_else(|| not_found(path))
    }

    pub(super) fn file(&self, path: &Path) -> Result<FileRef> {
        let (dir, name) = split(path)?;
        let d = self.dirs.get(&dir).ok_or_else(|| not_found(path))?;
        d.live.get(&name).cloned().ok_or_else(|| not_found(path))
    }
}

pub(super) struct MemLock {
    pub(super) image: Arc<Mutex<Image>>,
    pub(super) path: PathBuf,
    pub(super) epoch: u64,
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
