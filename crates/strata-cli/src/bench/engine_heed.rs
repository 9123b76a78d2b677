//! [`BenchDb`] for LMDB, through the heed crate (cargo feature `heed`).
//!
//! Owns: opening one LMDB environment in the database directory (its unnamed database, raw
//! byte keys and values) and each benchmark call as one LMDB transaction: a write is one write
//! transaction, a read or a scan one read transaction. LMDB is a copy-on-write B+tree in one
//! memory-mapped file, so several db_bench flags have nothing to act on; each is named below.
//! Must not: tune LMDB beyond what a flag asks for, or emulate what LMDB lacks (a merge operator,
//! compression, a compaction) by extra work in the measured calls.

use std::ops::Bound;

use anyhow::{bail, Context, Result};
use heed::types::Bytes;
use heed::{CommitOrAbort, Database, Env, EnvFlags, EnvOpenOptions};

use super::engine::{BenchDb, EngineOptions, StatsKind};

/// LMDB's memory map: the largest the database may grow. LMDB has no cache of its own (reads
/// are served from the kernel's page cache through the map, so `--cache_size` has nothing to
/// size); the map is address space only and the file stays sparse, so a large map costs nothing.
const MAP_SIZE: usize = 64 << 30;

/// The environment's data file; its presence is what `--use_existing_db` checks.
const DATA_FILE: &str = "data.mdb";

/// An LMDB environment opened for benchmarking.
pub struct HeedDb {
    env: Env,
    db: Database<'static, Bytes, Bytes>,
    /// The environment was opened with `MDB_NOSYNC`, so a durable write needs `mdb_env_sync`.
    no_sync: bool,
}

impl HeedDb {
    /// Opens (or creates, unless `--use_existing_db`) the environment in the directory `o.path`.
    pub fn open(o: &EngineOptions) -> Result<Self> {
        let (env, no_sync) = open_env(o, 0)?;
        let wtxn = env.write_txn()?;
        let db = env
            .create_databases_and_commit(wtxn, |opener, wtxn| -> heed::Result<_> {
                Ok(CommitOrAbort::<_, ()>::Commit(opener.create_database::<Bytes, Bytes>(wtxn, None)?))
            })?
            .unwrap_commit();
        Ok(Self { env, db, no_sync })
    }

    /// Runs `f` in one write transaction and commits it, durably on return if `sync`.
    fn write(&self, sync: bool, f: impl FnOnce(&mut heed::RwTxn) -> heed::Result<()>) -> Result<()> {
        let mut wtxn = self.env.write_txn()?;
        f(&mut wtxn)?;
        wtxn.commit()?;
        if sync && self.no_sync {
            // A NO_SYNC environment (a run without --sync) asked for one durable write:
            // mdb_env_sync(force) fdatasyncs everything committed so far, this commit included.
            self.env.force_sync()?;
        }
        Ok(())
    }
}

/// A byte-keyed LMDB database, as the multi-table benchmarks use them.
pub(super) type BytesDb = Database<'static, Bytes, Bytes>;

/// Opens the environment (as [`open_env`]) with one named database per entry of `names`,
/// created if missing, in one committed transaction; also returns whether it is `MDB_NOSYNC`.
pub(super) fn open_env_with_dbs<const N: usize>(
    o: &EngineOptions,
    names: [&str; N],
) -> Result<(Env, [BytesDb; N], bool)> {
    let (env, no_sync) = open_env(o, N as u32)?;
    let wtxn = env.write_txn()?;
    let dbs = env
        .create_databases_and_commit(wtxn, |opener, wtxn| -> heed::Result<_> {
            let mut dbs = Vec::with_capacity(N);
            for name in names {
                dbs.push(opener.create_database::<Bytes, Bytes>(wtxn, Some(name))?);
            }
            let dbs: [_; N] = dbs.try_into().unwrap_or_else(|_| unreachable!("one database per name"));
            Ok(CommitOrAbort::<_, ()>::Commit(dbs))
        })?
        .unwrap_commit();
    Ok((env, dbs, no_sync))
}

/// Opens (or creates, unless `--use_existing_db`) the environment in the directory `o.path`,
/// with room for `named_dbs` named databases; also returns whether it was opened `MDB_NOSYNC`.
pub(super) fn open_env(o: &EngineOptions, named_dbs: u32) -> Result<(Env, bool)> {
    if let Some(name) = &o.merge_operator {
        bail!("engine heed (LMDB) has no merge operator (--merge_operator={name})");
    }
    // LMDB stores values as given: every --compression_type is accepted and means "none".
    // It has no WAL either, so `disable_wal` is ignored by the writes below.
    if o.use_existing && !o.path.join(DATA_FILE).is_file() {
        bail!("--use_existing_db: no LMDB environment at {} (no {DATA_FILE})", o.path.display());
    }
    std::fs::create_dir_all(&o.path)?;
    // `--sync=0`: MDB_NOSYNC, a commit writes its pages to the file (the kernel has them, so a
    // killed process loses nothing) but does not fsync, so a power loss may lose the last
    // commits. `--sync=1`: LMDB's default commit, which fsyncs the data before the meta page.
    let no_sync = !o.sync;
    let mut options = EnvOpenOptions::new();
    options.map_size(MAP_SIZE);
    if named_dbs > 0 {
        options.max_dbs(named_dbs);
    }
    // MDB_NORDAHEAD, as peerbench's LMDB and LMDB's docs advise for a database larger than
    // memory: without it a page fault in the map reads megabytes around the page (a 6.5 GB
    // database in a 576 MiB cgroup read 7.9 MB per point read, at 53 reads/s).
    let mut flags = EnvFlags::NO_READ_AHEAD;
    if no_sync {
        flags |= EnvFlags::NO_SYNC;
    }
    // SAFETY: heed marks NO_SYNC unsafe because after an OS crash or power loss the last
    // commits may be lost and, on a filesystem that reorders writes, the file may be left
    // inconsistent (LMDB's docs), and a later open would map it. A killed process is safe: the
    // kernel has every committed page. That risk is what `--sync=0` accepts (RocksDB's unsynced
    // WAL takes the same one); a database that went through an OS crash is to be recreated,
    // not reused with --use_existing_db. NO_READ_AHEAD only changes an madvise hint.
    unsafe {
        options.flags(flags);
    }
    // SAFETY: the map is undefined behaviour only if the file changes under it other than
    // through LMDB. The directory is the benchmark's own (created empty by the harness or
    // named by --use_existing_db), this process opens one Env per path at a time (the runner
    // drops the engine before it empties the directory and reopens it, and heed refuses a
    // second open of an open path with EnvAlreadyOpened), and other processes that might
    // open it go through LMDB's lock file.
    let env =
        unsafe { options.open(&o.path) }.with_context(|| format!("opening LMDB at {}", o.path.display()))?;
    Ok((env, no_sync))
}

impl BenchDb for HeedDb {
    fn put(&self, key: &[u8], value: &[u8], sync: bool, _disable_wal: bool) -> Result<()> {
        self.write(sync, |t| self.db.put(t, key, value))
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let rtxn = self.env.read_txn()?;
        Ok(self.db.get(&rtxn, key)?.map(<[u8]>::to_vec))
    }

    fn delete(&self, key: &[u8], sync: bool, _disable_wal: bool) -> Result<()> {
        self.write(sync, |t| self.db.delete(t, key).map(drop))
    }

    fn merge(&self, _key: &[u8], _value: &[u8], _sync: bool, _disable_wal: bool) -> Result<()> {
        bail!("engine heed (LMDB) has no merge operator")
    }

    fn write_batch(&self, ops: &[(&[u8], &[u8])], sync: bool, _disable_wal: bool) -> Result<()> {
        self.write(sync, |t| ops.iter().try_for_each(|&(k, v)| self.db.put(t, k, v)))
    }

    fn scan(&self, start: &[u8], n: usize, reverse: bool, f: &mut dyn FnMut(&[u8], &[u8])) -> Result<usize> {
        let rtxn = self.env.read_txn()?;
        // Each arm is one cursor placed by one seek (MDB_FIRST, MDB_LAST or MDB_SET_RANGE, the
        // reverse range stepping back once when it lands past `start`).
        match (reverse, start.is_empty()) {
            (false, true) => feed(self.db.iter(&rtxn)?, n, f),
            (false, false) => feed(self.db.range(&rtxn, &(Bound::Included(start), Bound::Unbounded))?, n, f),
            (true, true) => feed(self.db.rev_iter(&rtxn)?, n, f),
            (true, false) => {
                feed(self.db.rev_range(&rtxn, &(Bound::Unbounded, Bound::Included(start)))?, n, f)
            }
        }
    }

    /// fdatasyncs the data file: a no-op after synced commits, everything since the last sync
    /// after NO_SYNC ones. There is no memtable to write out.
    fn flush(&self) -> Result<()> {
        Ok(self.env.force_sync()?)
    }

    /// Nothing to do, correctly: LMDB is a B+tree updated in place (copy-on-write pages, freed
    /// pages reused by later commits), so there are no files or levels to merge. Its only
    /// "compaction" is copying the whole environment to a new file (`mdb_env_copy2` with
    /// MDB_CP_COMPACT), which would not leave this open environment any different.
    fn compact(&self) -> Result<()> {
        Ok(())
    }

    fn stats(&self, _kind: StatsKind) -> String {
        let info = self.env.info();
        let stat = self.env.unnamed_database_stat();
        let size = self.env.real_disk_size().map_or_else(|e| format!("? ({e})"), |s| s.to_string());
        format!(
            "LMDB (heed): {} entries, B+tree depth {}, {} branch / {} leaf / {} overflow pages of \
             {} bytes; data file {size} bytes; last txn {}; map {} bytes; {}\n",
            stat.entries,
            stat.depth,
            stat.branch_pages,
            stat.leaf_pages,
            stat.overflow_pages,
            stat.page_size,
            info.last_txn_id,
            info.map_size,
            if self.no_sync { "MDB_NOSYNC" } else { "synchronous commits" },
        )
    }
}

/// Hands up to `n` entries of `it` to `f`; `take` stops without stepping past the last one.
fn feed<'t>(
    it: impl Iterator<Item = heed::Result<(&'t [u8], &'t [u8])>>,
    n: usize,
    f: &mut dyn FnMut(&[u8], &[u8]),
) -> Result<usize> {
    let mut count = 0;
    for entry in it.take(n) {
        let (k, v) = entry?;
        f(k, v);
        count += 1;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(db: &HeedDb, start: &[u8], n: usize, reverse: bool) -> Vec<Vec<u8>> {
        let mut seen = Vec::new();
        let count = db.scan(start, n, reverse, &mut |k, _| seen.push(k.to_vec())).unwrap();
        assert_eq!(count, seen.len());
        seen
    }

    #[test]
    fn round_trip_scan_reopen_and_no_merge() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = EngineOptions::for_test(dir.path());
        let db = HeedDb::open(&o).unwrap();
        db.put(b"a", b"1", false, false).unwrap();
        db.put(b"c", b"3", true, false).unwrap();
        db.write_batch(&[(b"b", b"2"), (b"d", b"4"), (b"e", b"5")], false, false).unwrap();
        db.delete(b"d", false, false).unwrap();
        assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
        assert_eq!(db.get(b"d").unwrap(), None);
        assert_eq!(keys(&db, b"bb", 2, false), [b"c".to_vec(), b"e".to_vec()]);
        assert_eq!(keys(&db, b"bb", 5, true), [b"b".to_vec(), b"a".to_vec()]);
        assert_eq!(keys(&db, b"", 2, true), [b"e".to_vec(), b"c".to_vec()]);
        assert_eq!(keys(&db, b"", 9, false).len(), 4);
        assert_eq!(keys(&db, b"z", 3, false), Vec::<Vec<u8>>::new());
        db.flush().unwrap();
        db.compact().unwrap();
        assert!(db.stats(StatsKind::Stats).contains("4 entries"));
        assert!(db.merge(b"m", &1u64.to_le_bytes(), false, false).is_err());
        drop(db);

        o.use_existing = true;
        o.sync = true;
        let db = HeedDb::open(&o).unwrap();
        assert_eq!(db.get(b"e").unwrap(), Some(b"5".to_vec()));
        assert_eq!(keys(&db, b"", 9, false).len(), 4);
        drop(db);

        let missing = tempfile::tempdir().unwrap();
        let err =
            HeedDb::open(&EngineOptions { use_existing: true, ..EngineOptions::for_test(missing.path()) });
        assert!(err.err().unwrap().to_string().contains("no LMDB environment"));
        o.merge_operator = Some("uint64add".into());
        let err = HeedDb::open(&o).err().unwrap().to_string();
        assert!(err.contains("has no merge operator"), "{err}");
    }
}
