//! The filesystem seam: every byte strata reads or writes goes through [`FileSystem`], so tests can
//! inject faults (failed fsync, ENOSPC, torn writes, dropped unsynced data) into the real engine.
//! This module owns the traits and a small buffered writer; it must not know about file formats.
//!
//! This is strata's equivalent of RocksDB's `Env`/`FileSystem`: set
//! [`Options::fs`](crate::Options::fs) to your own [`FileSystem`] to count or throttle IO, keep a
//! database in memory, or inject faults in tests (see the fault-injection example on
//! [`FileSystem`]). The default, [`PosixFs`], is the operating system's filesystem.
//!
//! Errors from every method are [`Error`](crate::error::Error)s: [`Error::Io`](crate::error::Error::Io) with
//! the path for failures of the operating system (build them with
//! [`Error::io`](crate::error::Error::io)), and [`Error::Locked`](crate::error::Error::Locked) from
//! [`FileSystem::lock`]. An error the engine gets while writing makes the database read-only
//! ([`Error::Background`](crate::error::Error::Background)) rather than risk losing data, until
//! [`Db::resume`](crate::Db::resume) clears a retryable one (such as `StorageFull`).

mod mapped_range;
mod posix;
mod sequential_hint;
#[cfg(test)]
pub(crate) mod testfs;

use std::path::Path;
use std::sync::Arc;

use crate::error::Result;

pub use mapped_range::MappedRange;
pub use posix::PosixFs;
#[cfg(test)]
pub(crate) use sequential_hint::RecordsHints;
pub use sequential_hint::SequentialHint;

/// A file opened for appending, returned by [`FileSystem::create`]. `append` hands bytes to the
/// kernel (write(2)) before returning; nothing is buffered in user space, so a process kill loses
/// nothing already appended. Implementations must keep that promise: the WAL relies on it.
///
/// An in-memory implementation:
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use strata::fs::WritableFile;
///
/// struct MemFile(Arc<Mutex<Vec<u8>>>);
///
/// impl WritableFile for MemFile {
///     fn append(&mut self, data: &[u8]) -> strata::Result<()> {
///         self.0.lock().unwrap().extend_from_slice(data);
///         Ok(())
///     }
///     fn sync_data(&mut self) -> strata::Result<()> {
///         Ok(()) // nothing to make durable
///     }
///     fn len(&self) -> u64 {
///         self.0.lock().unwrap().len() as u64
///     }
/// }
///
/// let contents = Arc::new(Mutex::new(Vec::new()));
/// let mut f = MemFile(Arc::clone(&contents));
/// assert!(f.is_empty());
/// f.append(b"hello ")?;
/// f.append(b"world")?;
/// f.sync_data()?;
/// assert_eq!(f.len(), 11);
/// assert_eq!(contents.lock().unwrap().as_slice(), b"hello world");
/// # Ok::<(), strata::Error>(())
/// ```
pub trait WritableFile: Send {
    /// Writes all of `data` at the end of the file. Fails with `Io` (for example when the disk
    /// is full); after a failure the file's contents past the last `sync_data` are unspecified.
    /// See the example on [`WritableFile`].
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Makes everything appended so far durable (fdatasync): it survives power loss once this
    /// returns `Ok`. Fails with `Io`. See the example on [`WritableFile`].
    fn sync_data(&mut self) -> Result<()>;
    /// Bytes appended so far. See the example on [`WritableFile`].
    fn len(&self) -> u64;
    /// True when nothing was appended. See the example on [`WritableFile`].
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Zero-fills the file up to byte offset `upto` ahead of the appends, so that later appends
    /// overwrite blocks the filesystem already allocated and `sync_data` has no size or extent
    /// change to commit (on ext4 an fdatasync of an append costs about twice one of an
    /// overwrite). [`len`](WritableFile::len) does not change: it stays the number of bytes
    /// appended. Readers of such a file see zeros after the appended bytes, so only formats that
    /// end at the first zero-filled header (the WAL) ask for it. The default does nothing.
    fn preallocate(&mut self, upto: u64) -> Result<()> {
        let _ = upto;
        Ok(())
    }
}

/// A file read at arbitrary offsets by many threads at once, returned by
/// [`FileSystem::open_random`]. strata opens SST and blob files this way, only after they are
/// complete, so their contents never change while open.
///
/// An implementation over bytes in memory:
///
/// ```
/// use strata::fs::RandomAccessFile;
/// use strata::{Error, Result};
///
/// struct InMemory(Vec<u8>);
///
/// impl RandomAccessFile for InMemory {
///     fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
///         let src = usize::try_from(offset)
///             .ok()
///             .and_then(|start| self.0.get(start..start.checked_add(buf.len())?))
///             .ok_or_else(|| Error::from(std::io::Error::from(std::io::ErrorKind::UnexpectedEof)))?;
///         buf.copy_from_slice(src);
///         Ok(())
///     }
///     fn size(&self) -> u64 {
///         self.0.len() as u64
///     }
///     fn mapped(&self) -> Option<&[u8]> {
///         Some(&self.0) // already in memory: let readers borrow instead of copying
///     }
/// }
///
/// let f = InMemory(b"hello world".to_vec());
/// let mut buf = [0u8; 5];
/// f.read_exact_at(6, &mut buf)?;
/// assert_eq!(&buf, b"world");
/// assert!(f.read_exact_at(8, &mut buf).is_err()); // would read past the end
/// assert_eq!((f.size(), f.mapped().map(<[u8]>::len)), (11, Some(11)));
/// # Ok::<(), strata::Error>(())
/// ```
pub trait RandomAccessFile: Send + Sync {
    /// Fills all of `buf` from `offset`. Fails with `Io` on a read error, and when the range
    /// reaches past the end of the file (kind `UnexpectedEof` by convention); never returns
    /// fewer bytes. See the example on [`RandomAccessFile`].
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// [`RandomAccessFile::read_exact_at`] for a reader walking the file forward (a compaction's
    /// input, a long scan, blob records in file order), which the filesystem may serve with
    /// read-ahead. The POSIX filesystem advises a file it does not map for random access, as
    /// RocksDB's `advise_random_on_open` does, so that a point read brings in the pages of its
    /// block and not a read-ahead window around them, and serves these reads through a second
    /// open file description that keeps the kernel's read-ahead. The default is `read_exact_at`.
    fn read_exact_at_forward(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.read_exact_at(offset, buf)
    }
    /// The file's size when it was opened. See the example on [`RandomAccessFile`].
    fn size(&self) -> u64;
    /// The whole file as memory, when the filesystem maps files; readers then borrow from it
    /// instead of copying. `None` (the default) means every read goes through `read_exact_at`.
    /// See the example on [`RandomAccessFile`].
    fn mapped(&self) -> Option<&[u8]> {
        None
    }
    /// A hint that `len` bytes from `offset` will be read soon, so the filesystem may start
    /// reading them in the background; it may ignore it (the default does). Scans and
    /// compactions give it ahead of where they walk a mapped file (see [`SequentialHint`]),
    /// because mappings are advised for random access and the kernel does not read ahead of
    /// them on its own; a scan over values in unmapped blob files gives it for the records of
    /// the keys ahead of it, so that they are read in parallel. The POSIX filesystem maps it to
    /// `madvise(WILLNEED)` on a mapped file and `posix_fadvise(WILLNEED)` on any other.
    fn will_need(&self, offset: u64, len: u64) {
        let _ = (offset, len);
    }
}

/// A file read front to back once (WAL and MANIFEST replay), returned by
/// [`FileSystem::open_sequential`].
///
/// An implementation over any `std::io::Read`:
///
/// ```
/// use std::io::Read;
/// use strata::fs::SequentialFile;
///
/// struct FromRead<R>(R);
///
/// impl<R: Read + Send> SequentialFile for FromRead<R> {
///     fn read(&mut self, buf: &mut [u8]) -> strata::Result<usize> {
///         Ok(self.0.read(buf)?) // std::io::Error converts to Error::Io
///     }
/// }
///
/// let mut f = FromRead(&b"abcdefg"[..]);
/// let mut buf = [0u8; 4];
/// let mut out = Vec::new();
/// loop {
///     let n = f.read(&mut buf)?;
///     if n == 0 {
///         break;
///     }
///     out.extend_from_slice(&buf[..n]);
/// }
/// assert_eq!(out, b"abcdefg");
/// # Ok::<(), strata::Error>(())
/// ```
pub trait SequentialFile: Send {
    /// Reads up to `buf.len()` bytes into `buf` and returns how many; 0 only at the end of the
    /// file. Fails with `Io`. See the example on [`SequentialFile`].
    fn read(&mut self, buf: &mut [u8]) -> Result<usize>;
}

/// A lock returned by [`FileSystem::lock`], held while the database is open; dropping it
/// releases the lock. The trait has no methods: implement `Drop` to release.
///
/// A lock that only excludes other holders in this process:
///
/// ```
/// use std::collections::HashSet;
/// use std::path::{Path, PathBuf};
/// use std::sync::{Arc, Mutex};
/// use strata::fs::FileLock;
/// use strata::{Error, Result};
///
/// struct InProcessLock {
///     path: PathBuf,
///     held: Arc<Mutex<HashSet<PathBuf>>>,
/// }
///
/// impl FileLock for InProcessLock {}
///
/// impl Drop for InProcessLock {
///     fn drop(&mut self) {
///         self.held.lock().unwrap().remove(&self.path);
///     }
/// }
///
/// fn lock(held: &Arc<Mutex<HashSet<PathBuf>>>, path: &Path) -> Result<Box<dyn FileLock>> {
///     if !held.lock().unwrap().insert(path.to_path_buf()) {
///         return Err(Error::Locked(path.to_path_buf()));
///     }
///     Ok(Box::new(InProcessLock { path: path.to_path_buf(), held: Arc::clone(held) }))
/// }
///
/// let held = Arc::default();
/// let first = lock(&held, Path::new("/db/LOCK"))?;
/// assert!(matches!(lock(&held, Path::new("/db/LOCK")), Err(Error::Locked(_))));
/// drop(first);
/// assert!(lock(&held, Path::new("/db/LOCK")).is_ok());
/// # Ok::<(), strata::Error>(())
/// ```
pub trait FileLock: Send + Sync {}

/// The only door to the disk: every file strata creates, reads, renames or removes goes through
/// the `FileSystem` in [`Options::fs`](crate::Options::fs). Implementations must be safe to call
/// from many threads at once. Every method fails with [`Error::Io`](crate::error::Error::Io) (naming the
/// path) when the operation fails, unless its own documentation says otherwise.
///
/// # Using one
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::fs::{default_fs, FileSystem};
/// let fs = default_fs();
/// let sub = dir.path().join("a/b");
/// fs.create_dir_all(&sub)?;
/// assert_eq!(fs.is_dir(&sub)?, Some(true));
///
/// let path = sub.join("data");
/// let mut f = fs.create(&path)?;
/// f.append(b"hello world")?;
/// f.sync_data()?;
/// drop(f);
/// assert_eq!(fs.file_size(&path)?, 11);
/// assert_eq!(fs.is_dir(&path)?, Some(false));
///
/// let r = fs.open_random(&path)?;
/// let mut buf = [0u8; 5];
/// r.read_exact_at(6, &mut buf)?;
/// assert_eq!(&buf, b"world");
/// assert_eq!(fs.read_all(&path)?, b"hello world"); // through open_sequential
///
/// fs.write_atomic(&sub, "config", b"v=1")?;
/// fs.rename(&path, &sub.join("renamed"))?;
/// fs.sync_dir(&sub)?;
/// let mut names = fs.list_dir(&sub)?;
/// names.sort();
/// assert_eq!(names, ["config", "renamed"]);
/// fs.remove_file(&sub.join("renamed"))?;
/// assert_eq!(fs.is_dir(&sub.join("renamed"))?, None);
/// assert!(fs.file_size(&sub.join("renamed")).is_err());
///
/// let lock = fs.lock(&sub.join("LOCK"))?;
/// assert!(matches!(fs.lock(&sub.join("LOCK")), Err(strata::Error::Locked(_))));
/// drop(lock);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Implementing one
///
/// A wrapper around the real filesystem that fails to create SST files on demand, to see what
/// the engine does when the disk fills up during a flush (the `strata-testkit` crate in the
/// strata repository has complete in-memory and fault-injecting filesystems):
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use std::path::Path;
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// use strata::fs::{FileLock, FileSystem, PosixFs, RandomAccessFile, SequentialFile, WritableFile};
/// use strata::{Db, Error, Options, ReadOptions, Result, WriteOptions};
///
/// #[derive(Default)]
/// struct DiskFullFs {
///     fail_tables: AtomicBool,
/// }
///
/// impl FileSystem for DiskFullFs {
///     fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
///         if self.fail_tables.load(Ordering::SeqCst) && path.extension().is_some_and(|e| e == "sst") {
///             let e = std::io::Error::new(std::io::ErrorKind::StorageFull, "injected: disk full");
///             return Err(Error::io(path, e));
///         }
///         PosixFs.create(path)
///     }
///     // Everything else goes to the real filesystem.
///     fn create_dir_all(&self, path: &Path) -> Result<()> {
///         PosixFs.create_dir_all(path)
///     }
///     fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
///         PosixFs.open_random(path)
///     }
///     fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
///         PosixFs.open_sequential(path)
///     }
///     fn rename(&self, from: &Path, to: &Path) -> Result<()> {
///         PosixFs.rename(from, to)
///     }
///     fn remove_file(&self, path: &Path) -> Result<()> {
///         PosixFs.remove_file(path)
///     }
///     fn list_dir(&self, path: &Path) -> Result<Vec<String>> {
///         PosixFs.list_dir(path)
///     }
///     fn is_dir(&self, path: &Path) -> Result<Option<bool>> {
///         PosixFs.is_dir(path)
///     }
///     fn file_size(&self, path: &Path) -> Result<u64> {
///         PosixFs.file_size(path)
///     }
///     fn sync_dir(&self, path: &Path) -> Result<()> {
///         PosixFs.sync_dir(path)
///     }
///     fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
///         PosixFs.lock(path)
///     }
/// }
///
/// let fs = Arc::new(DiskFullFs::default());
/// let db = Db::open(dir.path(), Options { fs: fs.clone(), ..Options::default() })?;
/// db.put(b"a", b"1")?;
/// db.flush()?;
///
/// fs.fail_tables.store(true, Ordering::SeqCst);
/// db.put(b"b", b"2")?; // in the WAL and the memtable
/// let err = db.flush().unwrap_err();
/// assert!(matches!(err, Error::Background { .. }) && err.to_string().contains("disk full"), "{err}");
/// let cause = err.background_cause();
/// assert!(matches!(cause, Some(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::StorageFull));
/// // The database is now read-only until resumed or reopened.
/// assert!(matches!(db.put(b"c", b"3"), Err(Error::Background { .. })));
///
/// // A full disk is retryable: once there is space again, `resume` retries the flush.
/// fs.fail_tables.store(false, Ordering::SeqCst);
/// db.resume()?;
/// db.put(b"c", b"3")?;
/// drop(db);
/// let db = Db::open(dir.path(), Options { fs, ..Options::default() })?;
/// assert_eq!(db.get(b"b")?, Some(b"2".to_vec()));
/// assert_eq!(db.get(b"c")?, Some(b"3".to_vec()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait FileSystem: Send + Sync + 'static {
    /// Creates a directory and its parents; succeeds if it exists. See the examples on
    /// [`FileSystem`].
    fn create_dir_all(&self, path: &Path) -> Result<()>;
    /// Creates (or truncates) a file for appending. See the examples on [`FileSystem`].
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Opens an existing file for positional reads. See the examples on [`FileSystem`].
    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>>;
    /// Opens an existing file for positional reads that never go through a memory mapping
    /// (`Options::use_mmap_reads = false`, and `verify`): each read is a `pread`, so a failing
    /// disk or a file truncated behind the database's back is an `Err`, where a mapped read
    /// would kill the process with SIGBUS. The default calls [`FileSystem::open_random`], which
    /// is right for a filesystem that does not map files; one that maps, or wraps one that
    /// does, overrides this.
    fn open_random_unmapped(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.open_random(path)
    }
    /// Opens an existing file for one sequential pass. See the examples on [`FileSystem`].
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>>;
    /// Atomically renames `from` to `to`, replacing `to`; durable once the directory is synced
    /// with [`FileSystem::sync_dir`]. See the examples on [`FileSystem`].
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Removes a file. See the examples on [`FileSystem`].
    fn remove_file(&self, path: &Path) -> Result<()>;
    /// Removes an empty directory (used by [`Db::destroy`](crate::Db::destroy) once it has
    /// removed a database's files). The default leaves the directory in place, for filesystems
    /// that keep none (an in-memory one).
    fn remove_dir(&self, _path: &Path) -> Result<()> {
        Ok(())
    }
    /// Names (not paths) of the entries in a directory, in no particular order. See the examples
    /// on [`FileSystem`].
    fn list_dir(&self, path: &Path) -> Result<Vec<String>>;
    /// `Some(true)` for a directory, `Some(false)` for another kind of entry, `None` if absent
    /// (absence is not an error). See the examples on [`FileSystem`].
    fn is_dir(&self, path: &Path) -> Result<Option<bool>>;
    /// Size of a file in bytes. See the examples on [`FileSystem`].
    fn file_size(&self, path: &Path) -> Result<u64>;
    /// Makes the directory's entries (creates, renames, removals) durable. See the examples on
    /// [`FileSystem`].
    fn sync_dir(&self, path: &Path) -> Result<()>;
    /// Takes an exclusive lock on `path` (created if missing), held until the returned
    /// [`FileLock`] is dropped. Fails with [`Error::Locked`](crate::error::Error::Locked) if another
    /// holder (in this process or another) has it. See the examples on [`FileSystem`].
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>>;

    /// Makes `to` a file with the contents of the immutable file `from`, durable once `to`'s
    /// directory is synced: a hard link where the filesystem has them (no bytes copied), else a
    /// synced copy, which is this default. Used by checkpoints.
    fn link_or_copy(&self, from: &Path, to: &Path) -> Result<()> {
        let mut src = self.open_sequential(from)?;
        let mut dst = self.create(to)?;
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = src.read(&mut buf)?;
            if n == 0 {
                break;
            }
            dst.append(&buf[..n])?;
        }
        dst.sync_data()
    }

    /// Reads a whole (small) file through [`FileSystem::open_sequential`]. See the examples on
    /// [`FileSystem`].
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

    /// Writes `data` to `dir/name` durably and atomically: a temporary `name.dbtmp`, fdatasync,
    /// rename over `name`, directory fsync. After a crash the file holds either the old or the
    /// new contents. See the examples on [`FileSystem`].
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

/// `file.read_exact_at_forward` for a `forward` reader (see
/// [`RandomAccessFile::read_exact_at_forward`]), else `file.read_exact_at`.
#[inline]
pub(crate) fn read_exact_at_as(
    file: &dyn RandomAccessFile,
    offset: u64,
    buf: &mut [u8],
    forward: bool,
) -> Result<()> {
    if forward {
        file.read_exact_at_forward(offset, buf)
    } else {
        file.read_exact_at(offset, buf)
    }
}

/// The default filesystem, [`PosixFs`], the value of `Options::default().fs`.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::fs::default_fs;
/// assert_eq!(default_fs().is_dir(dir.path())?, Some(true));
/// assert_eq!(default_fs().is_dir(&dir.path().join("missing"))?, None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn default_fs() -> Arc<dyn FileSystem> {
    Arc::new(PosixFs)
}

/// Buffers small appends into large (1 MiB) writes for files that are synced before anyone
/// relies on them (SST and blob files). Not for the WAL, whose appends must reach the kernel at
/// once. Dropping it without [`BufferedWriter::finish`] loses what is still buffered.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use strata::fs::{default_fs, BufferedWriter};
/// let fs = default_fs();
/// let path = dir.path().join("out");
/// let mut w = BufferedWriter::new(fs.create(&path)?);
/// for i in 0..1000u32 {
///     w.write(&i.to_le_bytes())?;
/// }
/// assert_eq!(w.offset(), 4000); // counted, though not yet written
/// assert_eq!(w.finish()?, 4000); // written and synced
/// assert_eq!(fs.file_size(&path)?, 4000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct BufferedWriter {
    file: Box<dyn WritableFile>,
    buf: Vec<u8>,
    written: u64,
}

const BUFFERED_WRITER_CAPACITY: usize = 1 << 20;

impl BufferedWriter {
    /// Wraps a freshly created file (from [`FileSystem::create`]). See the example on
    /// [`BufferedWriter`].
    pub fn new(file: Box<dyn WritableFile>) -> Self {
        Self { file, buf: Vec::with_capacity(BUFFERED_WRITER_CAPACITY), written: 0 }
    }

    /// Appends bytes, writing the buffer out when it fills. Fails with the file's `append`
    /// error. See the example on [`BufferedWriter`].
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

    /// Logical bytes written so far, buffered or not: the offset the next write lands at. See
    /// the example on [`BufferedWriter`].
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

    /// Writes out the buffer and fdatasyncs the file; returns the file's length. Fails with the
    /// file's `append` or `sync_data` error. See the example on [`BufferedWriter`].
    pub fn finish(mut self) -> Result<u64> {
        self.flush_buffer()?;
        self.file.sync_data()?;
        Ok(self.written)
    }
}
