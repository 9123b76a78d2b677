//! [`BenchDb`] for sled, a pure-Rust log-structured B-tree (cargo feature `sled`).
//!
//! Owns: one sled database in a directory inside `--db`, its default tree holding raw byte keys
//! and values, sled's own merge operator for `--merge_operator=uint64add`, and each benchmark
//! call as one sled call plus, where the write must survive a killed process, a `flush`.
//! Must not: tune sled beyond what a flag asks for, or emulate what it lacks (compression in
//! this build, a compaction) by extra work in the measured calls.

use std::io::ErrorKind;
use std::sync::Once;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use sled::{Batch, Config, Db};

use super::engine::{BenchDb, EngineOptions, StatsKind};

/// The database directory inside `--db`, which also holds the harness's marker file.
const DIR: &str = "sled";

/// A sled database opened for benchmarking.
pub struct SledDb {
    db: Db,
}

impl SledDb {
    /// Opens (or creates, unless `--use_existing_db`) the database in `o.path`/sled.
    pub fn open(o: &EngineOptions) -> Result<Self> {
        let merge = match o.merge_operator.as_deref() {
            None => false,
            Some("uint64add" | "UInt64AddOperator") => true,
            Some(other) => bail!("unknown --merge_operator {other:?} for sled (this engine has uint64add)"),
        };
        let path = o.path.join(DIR);
        if o.use_existing && !path.join("conf").is_file() {
            bail!("--use_existing_db: no sled database at {}", path.display());
        }
        if !matches!(o.compression.as_str(), "none" | "no" | "nocompression") {
            // sled's `compression` feature pins zstd 0.9, whose native library cannot be linked
            // beside strata's zstd 0.13 (cargo allows one crate per `links`), so this build of
            // sled stores values uncompressed whatever the flag says.
            static NOTE: Once = Once::new();
            let name = o.compression.clone();
            NOTE.call_once(|| {
                eprintln!("sled: built without compression; --compression_type={name} ignored")
            });
        }
        let config = Config::new().path(&path).cache_capacity(o.cache_size as u64);
        let db = open_after_close(&config, LOCK_RELEASE_WAIT)
            .with_context(|| format!("opening sled at {}", path.display()))?;
        if merge {
            db.set_merge_operator(uint64add);
        }
        Ok(Self { db })
    }

    /// Makes the writes so far survive a killed process, whatever `sync` says, unless the write
    /// may be lost on a crash after the last flush anyway (`--disable_wal=1 --sync=0`, what
    /// RocksDB and strata promise for writes without a WAL): then `flush` does it.
    ///
    /// sled keeps writes in its own IO buffers and writes them out only in `flush`, which its
    /// background thread also runs every 500 ms; a flush writes the buffers and waits for the
    /// device (on Linux `sync_file_range` of the written range, sled's notion of durable, a bit
    /// weaker than fdatasync: no file metadata, no device cache flush). It has no step that only
    /// hands a write to the kernel, so its cheapest write that survives a killed process, what
    /// `--sync=0` means elsewhere, is the flushed one: both `sync` values flush. (Without it a
    /// killed process would lose the last half second of acknowledged writes.)
    fn durable(&self, sync: bool, disable_wal: bool) -> Result<()> {
        if disable_wal && !sync {
            return Ok(());
        }
        self.db.flush()?;
        Ok(())
    }
}

/// How long [`open_after_close`] waits for a lock a closed handle of this process still holds.
const LOCK_RELEASE_WAIT: Duration = Duration::from_secs(5);

/// Opens `config`'s database, waiting up to `wait` while its file lock is taken.
///
/// Dropping a `sled::Db` does not release its `flock` at once: sled's background flusher thread
/// shares the file and closes it when it next wakes, which on a loaded machine can be after the
/// harness (or a test) has reopened the directory (sled issues #1234 and #1289). Only that
/// error is retried, so a lock another process keeps still fails, after the wait.
fn open_after_close(config: &Config, wait: Duration) -> sled::Result<Db> {
    let deadline = Instant::now() + wait;
    loop {
        match config.open() {
            Err(sled::Error::Io(e)) if is_lock_taken(&e) && Instant::now() < deadline => {
                thread::sleep(Duration::from_millis(20));
            }
            result => return result,
        }
    }
}

/// Whether an open failed because another handle holds the database's lock. sled 0.34 reports
/// that as an `Other` error whose text carries the `flock` failure.
fn is_lock_taken(e: &std::io::Error) -> bool {
    e.kind() == ErrorKind::WouldBlock || e.to_string().starts_with("could not acquire lock")
}

/// RocksDB's `UInt64AddOperator`: 8-byte little-endian counters; a missing or malformed value
/// counts as 0.
fn uint64add(_key: &[u8], existing: Option<&[u8]>, operand: &[u8]) -> Option<Vec<u8>> {
    let decode = |b: &[u8]| <[u8; 8]>::try_from(b).map(u64::from_le_bytes).unwrap_or(0);
    let sum = existing.map_or(0, decode).wrapping_add(decode(operand));
    Some(sum.to_le_bytes().to_vec())
}

// sled's log is its storage: `disable_wal` (with `sync=0`) only skips the flush after a write.
impl BenchDb for SledDb {
    fn put(&self, key: &[u8], value: &[u8], sync: bool, disable_wal: bool) -> Result<()> {
        self.db.insert(key, value)?;
        self.durable(sync, disable_wal)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.db.get(key)?.map(|v| v.to_vec()))
    }

    fn delete(&self, key: &[u8], sync: bool, disable_wal: bool) -> Result<()> {
        self.db.remove(key)?;
        self.durable(sync, disable_wal)
    }

    /// sled's native merge: it reads the value, applies the operator and writes the result
    /// atomically (a compare-and-swap loop), rather than storing the operand for later.
    fn merge(&self, key: &[u8], value: &[u8], sync: bool, disable_wal: bool) -> Result<()> {
        self.db.merge(key, value)?;
        self.durable(sync, disable_wal)
    }

    fn write_batch(&self, ops: &[(&[u8], &[u8])], sync: bool, disable_wal: bool) -> Result<()> {
        let mut batch = Batch::default();
        for &(k, v) in ops {
            batch.insert(k, v);
        }
        self.db.apply_batch(batch)?;
        self.durable(sync, disable_wal)
    }

    fn scan(&self, start: &[u8], n: usize, reverse: bool, f: &mut dyn FnMut(&[u8], &[u8])) -> Result<usize> {
        // One fresh iterator per call, opened at `start` and read from the chosen end.
        let it = match (reverse, start.is_empty()) {
            (_, true) => self.db.iter(),
            (false, false) => self.db.range(start..),
            (true, false) => self.db.range(..=start),
        };
        let mut count = 0;
        let mut visit = |entry: sled::Result<(sled::IVec, sled::IVec)>| {
            let (k, v) = entry?;
            f(&k, &v);
            count += 1;
            Ok::<_, sled::Error>(())
        };
        if reverse {
            it.rev().take(n).try_for_each(&mut visit)?;
        } else {
            it.take(n).try_for_each(&mut visit)?;
        }
        Ok(count)
    }

    /// Writes sled's IO buffers out and waits for the device (see [`SledDb::durable`]).
    fn flush(&self) -> Result<()> {
        self.durable(true, false)
    }

    /// Nothing to do, correctly: sled has no compaction call. Its log segments are cleaned by
    /// sled itself as pages are rewritten; there is no API to force that.
    fn compact(&self) -> Result<()> {
        Ok(())
    }

    fn stats(&self, _kind: StatsKind) -> String {
        let size = self.db.size_on_disk().map_or_else(|e| format!("? ({e})"), |s| s.to_string());
        format!(
            "sled: {size} bytes on disk; values uncompressed; recovered from disk: {}\n",
            self.db.was_recovered(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(db: &SledDb, start: &[u8], n: usize, reverse: bool) -> Vec<Vec<u8>> {
        let mut seen = Vec::new();
        let count = db.scan(start, n, reverse, &mut |k, _| seen.push(k.to_vec())).unwrap();
        assert_eq!(count, seen.len());
        seen
    }

    #[test]
    fn round_trip_scan_merge_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = EngineOptions::for_test(dir.path());
        o.merge_operator = Some("uint64add".into());
        let db = SledDb::open(&o).unwrap();
        db.put(b"a", b"1", false, false).unwrap();
        db.put(b"c", b"3", true, false).unwrap();
        db.write_batch(&[(b"b", b"2"), (b"d", b"4"), (b"e", b"5")], false, false).unwrap();
        db.delete(b"d", false, false).unwrap();
        db.merge(b"m", &3u64.to_le_bytes(), false, false).unwrap();
        db.merge(b"m", &4u64.to_le_bytes(), false, false).unwrap();
        db.merge(b"m", b"bad", false, false).unwrap();
        db.merge(b"a", &5u64.to_le_bytes(), false, false).unwrap();
        assert_eq!(db.get(b"m").unwrap(), Some(7u64.to_le_bytes().to_vec()));
        assert_eq!(db.get(b"a").unwrap(), Some(5u64.to_le_bytes().to_vec()), "a malformed value is 0");
        assert_eq!(db.get(b"d").unwrap(), None);
        assert_eq!(keys(&db, b"bb", 2, false), [b"c".to_vec(), b"e".to_vec()]);
        assert_eq!(keys(&db, b"bb", 5, true), [b"b".to_vec(), b"a".to_vec()]);
        assert_eq!(keys(&db, b"", 2, true), [b"m".to_vec(), b"e".to_vec()]);
        assert_eq!(keys(&db, b"", 9, false).len(), 5);
        assert_eq!(keys(&db, b"z", 3, false), Vec::<Vec<u8>>::new());
        db.flush().unwrap();
        db.compact().unwrap();
        assert!(db.stats(StatsKind::Stats).contains("bytes on disk"));
        drop(db);

        o.use_existing = true;
        let db = SledDb::open(&o).unwrap();
        assert_eq!(db.get(b"e").unwrap(), Some(b"5".to_vec()));
        assert_eq!(db.get(b"m").unwrap(), Some(7u64.to_le_bytes().to_vec()));
        assert_eq!(keys(&db, b"", 9, false).len(), 5);
        drop(db);

        let missing = tempfile::tempdir().unwrap();
        let err =
            SledDb::open(&EngineOptions { use_existing: true, ..EngineOptions::for_test(missing.path()) });
        assert!(err.err().unwrap().to_string().contains("no sled database"));
        o.merge_operator = Some("stringappend".into());
        let err = SledDb::open(&o).err().unwrap().to_string();
        assert!(err.contains("unknown --merge_operator"), "{err}");
    }

    #[test]
    fn a_lock_held_by_an_open_handle_still_fails_after_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config::new().path(dir.path().join(DIR));
        let held = open_after_close(&config, Duration::ZERO).unwrap();
        let started = Instant::now();
        let err = open_after_close(&config, Duration::from_millis(200)).expect_err("the lock is held");
        assert!(started.elapsed() >= Duration::from_millis(200), "it waited: {err:?}");
        assert!(matches!(&err, sled::Error::Io(e) if is_lock_taken(e)), "{err:?}");
        drop(held);
        // The closed handle's lock is released once sled's flusher lets go of the file.
        drop(open_after_close(&config, LOCK_RELEASE_WAIT).unwrap());
    }
}
