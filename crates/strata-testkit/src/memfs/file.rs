//! One file of `MemFs` (an inode: shared by every name and handle that refers to it) and the
//! handles that read and write it. [`FileData`] keeps the live bytes and the page bookkeeping
//! that a crash turns into the durable image (see the `memfs` module doc); the handles only move
//! bytes and call that bookkeeping. Nothing here knows about directories or crashes.

use std::collections::{BTreeMap, BTreeSet};
use std::io::ErrorKind;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use strata::fs::{RandomAccessFile, SequentialFile, WritableFile};
use strata::{Error, Result};

use super::{lock, PAGE_SIZE};

/// One file's bytes; shared by every name and handle that refers to it (an inode).
#[derive(Default)]
pub(super) struct FileData {
    pub(super) data: Vec<u8>,
    /// Length of the durable image: the file's length at the last `sync_data`.
    pub(super) synced: usize,
    /// The durable bytes (up to `synced`) of each page overwritten since the last sync, saved
    /// at its first overwrite, by page index.
    pub(super) saved: BTreeMap<usize, Vec<u8>>,
    /// Pages written or grown into since the last sync.
    pub(super) dirty: BTreeSet<usize>,
    /// The lowest offset written since the last sync (`usize::MAX` if none): where
    /// [`CrashMode::Seeded`]'s unsynced tail starts when it is below `synced`.
    pub(super) lowest_write: usize,
}

impl FileData {
    pub(super) fn new() -> Self {
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
    pub(super) fn durable_image(&self) -> Vec<u8> {
        let mut out = self.data[..self.synced.min(self.data.len())].to_vec();
        for (&page, old) in &self.saved {
            let start = page * PAGE_SIZE;
            out[start..start + old.len()].copy_from_slice(old);
        }
        out
    }

    /// A file holding exactly `data`, all of it durable.
    pub(super) fn durable(data: Vec<u8>) -> Self {
        let synced = data.len();
        Self { data, synced, ..Self::new() }
    }
}

pub(super) type FileRef = Arc<Mutex<FileData>>;

pub(super) struct MemWritable {
    pub(super) file: FileRef,
    /// Where the next append goes: the file's length unless it was preallocated past it.
    pub(super) len: usize,
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

pub(super) struct MemRandom {
    pub(super) file: FileRef,
    pub(super) path: PathBuf,
    pub(super) size: u64,
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

pub(super) struct MemSequential {
    pub(super) file: FileRef,
    pub(super) pos: usize,
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
