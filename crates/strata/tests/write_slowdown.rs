//! Writes slow down, rather than stop, while every spare memtable waits for a flush, and extra
//! memtables borrow the block cache's free capacity first: a filesystem that holds flush output
//! back until the test lets it go makes the flush arbitrarily slow.

use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use strata::fs::{FileLock, FileSystem, PosixFs, RandomAccessFile, SequentialFile, WritableFile};
use strata::{Db, Options, Result, WriteOptions};

/// Creating an SST or blob file (what a flush writes) waits until `open` is set.
#[derive(Default)]
struct GatedFs {
    open: Mutex<bool>,
    opened: Condvar,
}

impl GatedFs {
    fn release(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

impl FileSystem for GatedFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        if path.extension().is_some_and(|e| e == "sst" || e == "blob") {
            let mut open = self.open.lock().unwrap();
            while !*open {
                open = self.opened.wait(open).unwrap();
            }
        }
        PosixFs.create(path)
    }
    fn create_dir_all(&self, path: &Path) -> Result<()> {
        PosixFs.create_dir_all(path)
    }
    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        PosixFs.open_random(path)
    }
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        PosixFs.open_sequential(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        PosixFs.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> Result<()> {
        PosixFs.remove_file(path)
    }
    fn list_dir(&self, path: &Path) -> Result<Vec<String>> {
        PosixFs.list_dir(path)
    }
    fn is_dir(&self, path: &Path) -> Result<Option<bool>> {
        PosixFs.is_dir(path)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        PosixFs.file_size(path)
    }
    fn sync_dir(&self, path: &Path) -> Result<()> {
        PosixFs.sync_dir(path)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        PosixFs.lock(path)
    }
}

/// A thread putting `key000000` .. `keys` with `value`, unlogged.
fn spawn_writer(db: &Arc<Db>, value: &[u8], keys: u32) -> std::thread::JoinHandle<()> {
    let (db, value) = (Arc::clone(db), value.to_vec());
    std::thread::spawn(move || {
        let wo = WriteOptions { sync: false, disable_wal: true };
        for i in 0..keys {
            db.put_opt(&wo, format!("key{i:06}").as_bytes(), &value).unwrap();
        }
    })
}

/// Polls `stopped` until it holds; fails the test after 30 s.
fn wait_for_memtable_stop(stopped: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !stopped() {
        assert!(Instant::now() < deadline, "no memtable stop within 30 s");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Every `step`-th of the writer's keys reads back as `value`.
fn assert_keys_read_back(db: &Db, keys: u32, step: usize, value: &[u8]) {
    for i in (0..keys).step_by(step) {
        let got = db.get(format!("key{i:06}").as_bytes()).unwrap();
        assert_eq!(got.as_deref(), Some(value), "key {i}");
    }
}

#[test]
fn writes_slow_down_while_the_last_spare_memtable_fills_and_stop_only_when_it_is_full() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Arc::new(GatedFs::default());
    let opts = Options {
        fs: fs.clone(),
        write_buffer_size: 256 << 10,
        max_write_buffer_number: 2,
        write_buffer_borrow_percent: 0,
        ..Options::default()
    };
    let db = Arc::new(Db::open(dir.path(), opts).unwrap());
    let value = vec![7u8; 1000];
    let keys = 1500u32; // ~1.5 MB: fills the first memtable, then the last spare one, then more
    let writer = spawn_writer(&db, &value, keys);
    // The first flush cannot finish, so the second memtable is the last spare one: writes into
    // it are slowed down (not stopped) until it is full, and only then stopped.
    let stats = db.stats();
    wait_for_memtable_stop(|| {
        stats.stall_memtables_micros.load(Relaxed) > 0 && stats.stop_micros.load(Relaxed) > 0
    });
    let slowed = stats.slowdown_micros.load(Relaxed);
    assert!(slowed > 0, "writes ran into the memtable stop without slowing down first");
    fs.release();
    writer.join().unwrap();
    assert_keys_read_back(&db, keys, 97, &value);
}

fn property(db: &Db, name: &str) -> u64 {
    db.property(name).unwrap().parse().unwrap()
}

#[test]
fn extra_memtables_borrow_free_cache_capacity_until_it_runs_out_and_give_it_back_when_flushed() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Arc::new(GatedFs::default());
    let opts = Options {
        fs: fs.clone(),
        write_buffer_size: 256 << 10,
        max_write_buffer_number: 2,
        cache_size: 2 << 20,
        write_buffer_borrow_percent: 50, // 1 MiB: four more memtables of 256 KiB
        ..Options::default()
    };
    let db = Arc::new(Db::open(dir.path(), opts).unwrap());
    let value = vec![9u8; 1000];
    let keys = 3000u32; // ~3 MB: more than the 6 memtables hold
    let writer = spawn_writer(&db, &value, keys);
    let stats = db.stats();
    wait_for_memtable_stop(|| stats.stop_micros.load(Relaxed) > 0);
    // The stop came only once the own slots and every borrowable one were taken, after a
    // slowdown through the last of them.
    assert_eq!(property(&db, "strata.num-immutable-mem-table"), 5);
    assert_eq!(property(&db, "strata.memtable-borrowed-bytes"), 1 << 20);
    assert!(stats.slowdown_micros.load(Relaxed) > 0, "no slowdown before the stop");
    fs.release();
    writer.join().unwrap();
    db.flush().unwrap();
    assert_eq!(property(&db, "strata.num-immutable-mem-table"), 0);
    assert_eq!(property(&db, "strata.memtable-borrowed-bytes"), 0, "flushes return what was borrowed");
    assert_keys_read_back(&db, keys, 61, &value);
}
