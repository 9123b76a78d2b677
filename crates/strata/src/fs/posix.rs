//! [`FileSystem`] over the operating system with positional reads (pread) and fdatasync.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::{FileLock, FileSystem, RandomAccessFile, SequentialFile, WritableFile};
use crate::error::{Error, Result};

/// The real filesystem: positional reads (memory-mapped for SST and blob files), `fdatasync`,
/// and `flock(2)` locks that also exclude other handles in this process. [`default_fs`](super::default_fs) returns
/// it; wrappers delegate to it (see the example on [`FileSystem`]).
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use std::sync::Arc;
/// use strata::fs::PosixFs;
/// use strata::{Db, Options, ReadOptions, WriteOptions};
/// let db = Db::open(dir.path(), Options { fs: Arc::new(PosixFs), ..Options::default() })?;
/// db.put(b"k", b"v")?;
/// assert_eq!(db.get(b"k")?, Some(b"v".to_vec()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct PosixFs;

struct PosixWritable {
    file: File,
    path: PathBuf,
    len: u64,
    /// End of the zero-filled space written by `preallocate` (0 when never called).
    zeroed_to: u64,
}

/// The zeros `preallocate` writes, one chunk per `pwrite`.
static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];

impl WritableFile for PosixWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.file.write_all(data).map_err(|e| Error::io(&self.path, e))?;
        self.len += data.len() as u64;
        Ok(())
    }
    fn sync_data(&mut self) -> Result<()> {
        self.file.sync_data().map_err(|e| Error::io(&self.path, e))
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn preallocate(&mut self, upto: u64) -> Result<()> {
        // Real zeros, not fallocate(2): ext4 marks fallocated extents unwritten, and converting
        // them on the first write is a metadata change that fdatasync must journal.
        let mut offset = self.zeroed_to.max(self.len);
        while offset < upto {
            let n = (upto - offset).min(ZEROS.len() as u64) as usize;
            let chunk = ZEROS.get(..n).unwrap_or_default();
            self.file.write_all_at(chunk, offset).map_err(|e| Error::io(&self.path, e))?;
            offset += n as u64;
        }
        self.zeroed_to = offset;
        Ok(())
    }
}

/// Aligned so its fields sit on their own cache lines, away from the `Arc` reference counts
/// that readers on other threads keep changing (a block read calls `mapped` for every entry).
#[repr(align(128))]
struct PosixRandom {
    /// Advised for random access when the file is not mapped.
    file: File,
    path: PathBuf,
    size: u64,
    map: Option<memmap2::Mmap>,
    /// For forward readers of an unmapped file: the same file opened again, without the random
    /// advice (advice belongs to an open file description, not to the file). Opened on first
    /// use; `None` when that failed (the file was unlinked since), and `file` serves them.
    forward: OnceLock<Option<File>>,
}

impl PosixRandom {
    fn forward_file(&self) -> &File {
        let reopen = || {
            let again = File::open(&self.path).ok()?;
            same_file(&self.file, &again).then_some(again)
        };
        self.forward.get_or_init(reopen).as_ref().unwrap_or(&self.file)
    }
}

/// Whether two open files are the same file (device and inode): a path reopened is only used
/// if it still names the file opened first.
fn same_file(a: &File, b: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (a.metadata(), b.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

impl RandomAccessFile for PosixRandom {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        if let Some(map) = &self.map {
            let start = usize::try_from(offset).ok();
            let range = start.and_then(|s| Some(s..s.checked_add(buf.len())?));
            if let Some(src) = range.and_then(|r| map.get(r)) {
                buf.copy_from_slice(src);
                return Ok(());
            }
            let e = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "read past the end of the file");
            return Err(Error::io(&self.path, e));
        }
        self.file.read_exact_at(buf, offset).map_err(|e| Error::io(&self.path, e))
    }
    fn read_exact_at_forward(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        if self.map.is_some() {
            return self.read_exact_at(offset, buf);
        }
        self.forward_file().read_exact_at(buf, offset).map_err(|e| Error::io(&self.path, e))
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn mapped(&self) -> Option<&[u8]> {
        self.map.as_deref()
    }
    fn will_need(&self, offset: u64, len: u64) {
        let Some(map) = &self.map else {
            // Only a hint: a failure costs the read-ahead, never a read.
            #[cfg(target_os = "linux")]
            let _ = rustix::fs::fadvise(
                &self.file,
                offset,
                std::num::NonZeroU64::new(len),
                rustix::fs::Advice::WillNeed,
            );
            return;
        };
        let Ok(offset) = usize::try_from(offset) else { return };
        let len = usize::try_from(len).unwrap_or(usize::MAX).min(map.len().saturating_sub(offset));
        if len > 0 {
            // Only a hint: a failure costs the read-ahead, never a read.
            let _ = map.advise_range(memmap2::Advice::WillNeed, offset, len);
        }
    }
}

fn open_random(path: &Path, map: bool) -> Result<Arc<dyn RandomAccessFile>> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let map = if map { map_file(&file, size) } else { None };
    if map.is_none() {
        // Point reads want the pages of their block, not the kernel's read-ahead window around
        // them, which in a memory cgroup evicts pages that will be read again (LinkBench in
        // 512 MiB: 0.52 -> 0.40 disk reads and 4.6 -> 2.1 KB read per request, docs/performance.md).
        // Forward readers go through `forward`. Only a hint: a failure leaves the default.
        #[cfg(target_os = "linux")]
        let _ = rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::Random);
    }
    Ok(Arc::new(PosixRandom { file, path: path.to_path_buf(), size, map, forward: OnceLock::new() }))
}

/// Maps a file strata opened for reading. Only immutable files are opened this way (SST and blob
/// files are never written after they are finished and renamed into use), so the mapping cannot
/// change under a reader; an unlinked file stays mapped until the last reader drops it.
fn map_file(file: &File, size: u64) -> Option<memmap2::Mmap> {
    if size == 0 || usize::try_from(size).is_err() {
        return None;
    }
    // SAFETY: the mapped file is immutable for strata's purposes (see above). The remaining hazards
    // are another process truncating the file and a disk that fails to read a page, which turn
    // reads into SIGBUS; like LMDB and RocksDB's mmap_read, strata documents them
    // (docs/durability.md, "Memory-mapped reads") and offers `use_mmap_reads = false`. The
    // mapping is read-only and outlives every slice borrowed from it because slices borrow
    // `PosixRandom`.
    let map = unsafe { memmap2::Mmap::map(file) }.ok()?;
    // Point reads want the page they touch and nothing else. Left to its default, the kernel
    // reads `read_ahead_kb` (8 MiB on this machine's disk) around every page fault, so a
    // database larger than memory evicts its own pages faster than it reads them (218 reads/s
    // against 22k with `pread`, docs/performance.md "Databases larger than memory").
    // Sequential readers ask for read-ahead themselves (`SequentialHint`). Only a hint: a
    // failure leaves the default.
    let _ = map.advise(memmap2::Advice::Random);
    Some(map)
}

struct PosixSequential {
    file: File,
    path: PathBuf,
}

impl SequentialFile for PosixSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        self.file.read(buf).map_err(|e| Error::io(&self.path, e))
    }
}

/// Paths locked by this process: flock(2) already excludes other processes and other open file
/// descriptions, this set only makes the error immediate and independent of the platform.
fn locked_paths() -> &'static Mutex<HashSet<PathBuf>> {
    static SET: OnceLock<Mutex<HashSet<PathBuf>>> = OnceLock::new();
    SET.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Attempts of 5 ms each before a held lock is reported as `Error::Locked`.
const LOCK_RETRIES: u32 = 20;

struct PosixLock {
    _file: File,
    path: PathBuf,
}

impl FileLock for PosixLock {}

impl Drop for PosixLock {
    fn drop(&mut self) {
        if let Ok(mut set) = locked_paths().lock() {
            set.remove(&self.path);
        }
    }
}

impl FileSystem for PosixFs {
    fn create_dir_all(&self, path: &Path) -> Result<()> {
        fs::create_dir_all(path).map_err(|e| Error::io(path, e))
    }

    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        Ok(Box::new(PosixWritable { file, path: path.to_path_buf(), len: 0, zeroed_to: 0 }))
    }

    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        open_random(path, true)
    }

    fn open_random_unmapped(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        open_random(path, false)
    }

    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        Ok(Box::new(PosixSequential { file, path: path.to_path_buf() }))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        fs::rename(from, to).map_err(|e| Error::io(from, e))
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        fs::remove_file(path).map_err(|e| Error::io(path, e))
    }

    fn remove_dir(&self, path: &Path) -> Result<()> {
        fs::remove_dir(path).map_err(|e| Error::io(path, e))
    }

    fn list_dir(&self, path: &Path) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(path).map_err(|e| Error::io(path, e))? {
            let entry = entry.map_err(|e| Error::io(path, e))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        Ok(names)
    }

    fn is_dir(&self, path: &Path) -> Result<Option<bool>> {
        match fs::metadata(path) {
            Ok(m) => Ok(Some(m.is_dir())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(fs::metadata(path).map_err(|e| Error::io(path, e))?.len())
    }

    fn link_or_copy(&self, from: &Path, to: &Path) -> Result<()> {
        match std::fs::hard_link(from, to) {
            Ok(()) => Ok(()),
            // Another filesystem (EXDEV), or one without hard links (EPERM, ENOTSUP): copy.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::CrossesDevices
                        | std::io::ErrorKind::PermissionDenied
                        | std::io::ErrorKind::Unsupported
                ) =>
            {
                let mut src = File::open(from).map_err(|e| Error::io(from, e))?;
                let mut dst = File::create(to).map_err(|e| Error::io(to, e))?;
                std::io::copy(&mut src, &mut dst).map_err(|e| Error::io(to, e))?;
                dst.sync_data().map_err(|e| Error::io(to, e))
            }
            Err(e) => Err(Error::io(to, e)),
        }
    }

    fn sync_dir(&self, path: &Path) -> Result<()> {
        File::open(path).and_then(|d| d.sync_all()).map_err(|e| Error::io(path, e))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let key = path.to_path_buf();
        let mut set = locked_paths().lock().unwrap_or_else(|p| p.into_inner());
        if set.contains(&key) {
            return Err(Error::Locked(key));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        // flock(2) belongs to the open file description, which a child forked by this process
        // shares until it execs: right after another handle closed the file, a concurrent fork
        // can hold the lock for a moment. Retry briefly before reporting another holder.
        let mut attempts = 0;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if attempts < LOCK_RETRIES => {
                    attempts += 1;
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(std::fs::TryLockError::WouldBlock) => return Err(Error::Locked(key)),
                Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(path, e)),
            }
        }
        set.insert(key.clone());
        Ok(Box::new(PosixLock { _file: file, path: key }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags of the mapping that starts at `addr`, from /proc/self/smaps (Linux only).
    #[cfg(target_os = "linux")]
    fn mapping_flags(addr: usize) -> String {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut in_it = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ').filter(|(r, _)| r.contains('-')) {
                let start = range.split('-').next().and_then(|s| usize::from_str_radix(s, 16).ok());
                in_it = start == Some(addr);
            } else if let Some(flags) = line.strip_prefix("VmFlags:").filter(|_| in_it) {
                return flags.to_string();
            }
        }
        panic!("no mapping at {addr:#x}");
    }

    /// Mappings are advised random (`rr`): a point read must fault in one page, not the disk's
    /// read-ahead around it. Read-ahead hints over any range, in or out of the file, are safe.
    #[test]
    #[cfg(target_os = "linux")]
    fn mappings_are_advised_random_and_take_read_ahead_hints() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let fs = PosixFs;
        let mut w = fs.create(&path).unwrap();
        w.append(&vec![7u8; 3 << 20]).unwrap();
        w.sync_data().unwrap();
        drop(w);
        let r = fs.open_random(&path).unwrap();
        let map = r.mapped().unwrap();
        let flags = mapping_flags(map.as_ptr() as usize);
        assert!(flags.split_whitespace().any(|f| f == "rr"), "VmFlags:{flags}");
        for (offset, len) in
            [(0, 1 << 20), (4097, 100), (3 << 20, 4096), ((3 << 20) - 1, u64::MAX), (u64::MAX, 1)]
        {
            r.will_need(offset, len);
        }
        assert_eq!(map[(3 << 20) - 1], 7);
        let unmapped = fs.open_random_unmapped(&path).unwrap();
        unmapped.will_need(0, 1 << 20);
    }

    /// Pages of `path` in the page cache, from `mincore` over a mapping of it (Linux only).
    #[cfg(target_os = "linux")]
    fn resident_pages(path: &Path) -> usize {
        let file = File::open(path).unwrap();
        // SAFETY: the file is only read by this test while mapped; the mapping is read-only.
        let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
        let mut vec = vec![0u8; map.len().div_ceil(4096)];
        // SAFETY: `map` is a live mapping of `map.len()` bytes and `vec` has one byte per page
        // of it (4 KiB pages on the machines this runs on; more bytes than pages is harmless).
        let rc = unsafe { libc::mincore(map.as_ptr() as *mut libc::c_void, map.len(), vec.as_mut_ptr()) };
        assert_eq!(rc, 0, "mincore: {}", std::io::Error::last_os_error());
        vec.iter().filter(|b| **b & 1 == 1).count()
    }

    /// `will_need` on an unmapped file (a scan's blob lookahead) reads the range into the page
    /// cache in the background.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_hint_on_an_unmapped_file_reads_the_range() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 16 << 20]).unwrap();
        let f = File::open(&path).unwrap();
        f.sync_all().unwrap();
        rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed).unwrap();
        if resident_pages(&path) > 0 {
            return; // a filesystem whose clean pages cannot be evicted (tmpfs): nothing to see
        }
        let r = PosixFs.open_random_unmapped(&path).unwrap();
        r.will_need(4 << 20, 1 << 20);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while resident_pages(&path) < 256 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(resident_pages(&path) >= 256, "{} pages after a 1 MiB hint", resident_pages(&path));
    }

    /// An unmapped file is advised random, so a point read brings in its own pages and not a
    /// read-ahead window; forward reads go through a second open file description and read
    /// the same bytes, also once the file is unlinked (through the first one then).
    #[test]
    #[cfg(target_os = "linux")]
    fn point_reads_of_an_unmapped_file_read_their_pages_and_forward_reads_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..(16u32 << 20)).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let f = File::open(&path).unwrap();
        f.sync_all().unwrap();
        rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed).unwrap();
        let r = PosixFs.open_random_unmapped(&path).unwrap();
        let mut buf = vec![0u8; 4096];
        if resident_pages(&path) == 0 {
            // (A filesystem whose clean pages cannot be evicted, tmpfs, has nothing to show.)
            // Two reads one after the other: without the advice, the kernel takes the second
            // for the start of a sequential reader and reads a window ahead of it.
            r.read_exact_at(8 << 20, &mut buf).unwrap();
            r.read_exact_at((8 << 20) + 4096, &mut buf).unwrap();
            assert!(resident_pages(&path) <= 3, "{} pages after two 4 KiB reads", resident_pages(&path));
        }
        for offset in [0u64, 8 << 20, (16 << 20) - 4096] {
            let at = offset as usize;
            r.read_exact_at_forward(offset, &mut buf).unwrap();
            assert_eq!(buf, &data[at..at + 4096]);
            r.read_exact_at(offset, &mut buf).unwrap();
            assert_eq!(buf, &data[at..at + 4096]);
        }
        assert!(r.read_exact_at_forward(16 << 20, &mut buf).is_err(), "past the end");
        PosixFs.remove_file(&path).unwrap();
        let fresh = PosixRandom {
            file: File::open(dir.path()).unwrap(),
            path: path.clone(),
            size: 0,
            map: None,
            forward: OnceLock::new(),
        };
        assert!(std::ptr::eq(fresh.forward_file(), &fresh.file), "an unlinked path is not reopened");
        r.read_exact_at_forward(4096, &mut buf).unwrap();
        assert_eq!(buf, &data[4096..8192]);
    }

    #[test]
    fn mapped_reads_match_the_file_and_reject_reads_past_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let fs = PosixFs;
        let mut w = fs.create(&path).unwrap();
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 253) as u8).collect();
        w.append(&data).unwrap();
        w.sync_data().unwrap();
        drop(w);
        let r = fs.open_random(&path).unwrap();
        assert_eq!(r.mapped(), Some(&data[..]));
        let mut buf = vec![0u8; 100];
        r.read_exact_at(9_900, &mut buf).unwrap();
        assert_eq!(buf, &data[9_900..]);
        assert!(r.read_exact_at(9_901, &mut buf).is_err());
        assert!(r.read_exact_at(u64::MAX, &mut buf).is_err());
        // An unlinked file stays readable through its mapping.
        fs.remove_file(&path).unwrap();
        assert_eq!(r.mapped().map(<[u8]>::len), Some(10_000));
    }

    #[test]
    fn preallocation_zero_fills_ahead_without_moving_the_appends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wal");
        let mut w = PosixFs.create(&path).unwrap();
        w.append(b"first").unwrap();
        w.preallocate(200_000).unwrap();
        assert_eq!(w.len(), 5);
        w.append(b"second").unwrap();
        w.preallocate(100_000).unwrap(); // never shrinks
        w.sync_data().unwrap();
        drop(w);
        let data = std::fs::read(&path).unwrap();
        assert_eq!(data.len(), 200_000);
        assert_eq!(&data[..11], b"firstsecond");
        assert!(data[11..].iter().all(|&b| b == 0));
    }

    #[test]
    fn empty_files_are_not_mapped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty");
        drop(PosixFs.create(&path).unwrap());
        let r = PosixFs.open_random(&path).unwrap();
        assert!(r.mapped().is_none());
        assert!(r.read_exact_at(0, &mut [0u8; 1]).is_err());
    }
}
