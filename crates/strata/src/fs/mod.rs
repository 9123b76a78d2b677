//! The filesystem seam: every byte strata reads or writes goes through [`FileSystem`], so tests can
//! inject faults (failed fsync, ENOSPC, torn writes, dropped unsynced data) into the real engine.
//! This module owns the traits and a small buffered writer; it must not know about file formats.

mod posix;

use std::path::Path;
use std::sync::Arc;

use crate::error::Result;

pub use posix::PosixFs;

/// A file opened for appending. `append` hands bytes to the kernel (write(2)) before returning;
/// nothing is buffered in user space, so a process kill loses nothing already appended.
pub trait WritableFile: Send {
    /// Writes all of `data` at the end of the file.
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Makes everything appended so far durable (fdatasync).
    fn sync_data(&mut self) -> Result<()>;
    /// Bytes appended so far.
    fn len(&self) -> u64;
    /// True when nothing was appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A file read at arbitrary offsets by many threads at once.
pub trait RandomAccessFile: Send + Sync {
    /// Fills `buf` from `offset`; reading past the end is an error.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// The file's size when it was opened.
    fn size(&self) -> u64;
    /// The whole file as memory, when the filesystem maps files; readers then borrow from it
    /// instead of copying. `None` means every read goes through `read_exact_at`.
    fn mapped(&self) -> Option<&[u8]> {
        None
    }
}

/// A file read front to back once (WAL and MANIFEST replay).
pub trait SequentialFile: Send {
    /// Reads up to `buf.len()` bytes; returns 0 at the end of the file.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize>;
}

/// Held while the database is open; dropping it releases the lock.
pub trait FileLock: Send + Sync {}

/// The only door to the disk.
pub trait FileSystem: Send + Sync + 'static {
    /// Creates a directory and its parents.
    fn create_dir_all(&self, path: &Path) -> Result<()>;
    /// Creates (or truncates) a file for appending.
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Opens a file for positional reads.
    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>>;
    /// Opens a file for one sequential pass.
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>>;
    /// Atomically renames `from` to `to`, replacing `to`.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Removes a file.
    fn remove_file(&self, path: &Path) -> Result<()>;
    /// Names (not paths) of the entries in a directory.
    fn list_dir(&self, path: &Path) -> Result<Vec<String>>;
    /// `Some(true)` for a directory, `Some(false)` for another kind of entry, `None` if absent.
    fn is_dir(&self, path: &Path) -> Result<Option<bool>>;
    /// Size of a file in bytes.
    fn file_size(&self, path: &Path) -> Result<u64>;
    /// Makes the directory's entries (creates, renames, removals) durable.
    fn sync_dir(&self, path: &Path) -> Result<()>;
    /// Takes an exclusive lock on `path` (created if missing); fails with `Error::Locked` if held.
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>>;

    /// Reads a whole (small) file.
    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        let mut f = self.open_sequential(path)?;
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    /// Writes `data` to `path` durably: temp file, fdatasync, rename, directory fsync.
    fn write_atomic(&self, dir: &Path, name: &str, data: &[u8]) -> Result<()> {
        let tmp = dir.join(format!("{name}.dbtmp"));
        let mut f = self.create(&tmp)?;
        f.append(data)?;
        f.sync_data()?;
        drop(f);
        self.rename(&tmp, &dir.join(name))?;
        self.sync_dir(dir)
    }
}

/// The default filesystem.
pub fn default_fs() -> Arc<dyn FileSystem> {
    Arc::new(PosixFs)
}

/// Buffers small appends into large writes for files that are synced before anyone relies on them
/// (SST and blob files). Not for the WAL, whose appends must reach the kernel at once.
pub struct BufferedWriter {
    file: Box<dyn WritableFile>,
    buf: Vec<u8>,
    written: u64,
}

const BUFFERED_WRITER_CAPACITY: usize = 1 << 20;

impl BufferedWriter {
    /// Wraps a freshly created file.
    pub fn new(file: Box<dyn WritableFile>) -> Self {
        Self { file, buf: Vec::with_capacity(BUFFERED_WRITER_CAPACITY), written: 0 }
    }

    /// Appends bytes, writing through when the buffer fills.
    pub fn write(&mut self, data: &[u8]) -> Result<()> {
        self.written += data.len() as u64;
        if self.buf.len() + data.len() > BUFFERED_WRITER_CAPACITY {
            self.flush_buffer()?;
            if data.len() >= BUFFERED_WRITER_CAPACITY {
                return self.file.append(data);
            }
        }
        self.buf.extend_from_slice(data);
        Ok(())
    }

    /// Logical bytes written so far, buffered or not.
    pub fn offset(&self) -> u64 {
        self.written
    }

    fn flush_buffer(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            self.file.append(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Writes out the buffer and fdatasyncs the file.
    pub fn finish(mut self) -> Result<u64> {
        self.flush_buffer()?;
        self.file.sync_data()?;
        Ok(self.written)
    }
}
