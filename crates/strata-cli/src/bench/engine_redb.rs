//! [`BenchDb`] for redb, a pure-Rust copy-on-write B-tree (cargo feature `redb`).
//!
//! Owns: one redb file in the database directory with one table of raw byte keys and values,
//! and each benchmark call as one redb transaction: a write is one write transaction, a read or
//! a scan one read transaction. Several db_bench flags have nothing to act on in a B-tree
//! without compression or a WAL; each is named below.
//! Must not: tune redb beyond what a flag asks for, or emulate what it lacks (a merge operator,
//! compression) by extra work in the measured calls.

use std::path::PathBuf;
use std::sync::{PoisonError, RwLock, RwLockReadGuard};

use anyhow::{bail, Context, Result};
use redb::{Builder, Database, Durability, ReadableDatabase, TableDefinition, WriteTransaction};

use super::engine::{BenchDb, EngineOptions, StatsKind};

/// The database file inside `--db`, which also holds the harness's marker file.
const FILE: &str = "bench.redb";
/// The one table the benchmark uses.
const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("bench");

/// One item of a range over [`TABLE`].
type Entry<'a> = redb::Result<(redb::AccessGuard<'a, &'static [u8]>, redb::AccessGuard<'a, &'static [u8]>)>;

/// A redb database opened for benchmarking.
pub struct RedbDb {
    /// Every call holds the read side for as long as its transaction lives; only `compact`
    /// takes the write side, because redb's `Database::compact` needs `&mut` and no live
    /// transaction (redb's transactions do not borrow the `Database`, the lock stands in).
    db: RwLock<Database>,
    file: PathBuf,
}

impl RedbDb {
    /// Opens (or creates, unless `--use_existing_db`) the database file in `o.path`.
    pub fn open(o: &EngineOptions) -> Result<Self> {
        if let Some(name) = &o.merge_operator {
            bail!("engine redb has no merge operator (--merge_operator={name})");
        }
        // redb stores values as given: every --compression_type is accepted and means "none".
        // It has no WAL (a commit writes the tree pages and then the header), so `disable_wal`
        // is ignored by the writes below.
        let file = o.path.join(FILE);
        let mut builder = Builder::new();
        builder.set_cache_size(o.cache_size);
        let db = if o.use_existing {
            if !file.is_file() {
                bail!("--use_existing_db: no redb database at {}", file.display());
            }
            builder.open(&file)
        } else {
            std::fs::create_dir_all(&o.path)?;
            builder.create(&file)
        }
        .with_context(|| format!("opening redb at {}", file.display()))?;
        // Create the table now, so a read before the first write finds it.
        let txn = db.begin_write()?;
        txn.open_table(TABLE)?;
        txn.commit()?;
        Ok(Self { db: RwLock::new(db), file })
    }

    fn db(&self) -> RwLockReadGuard<'_, Database> {
        self.db.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the table in one write transaction and commits it.
    ///
    /// A write that may be lost on a crash after the last flush (`--disable_wal=1 --sync=0`,
    /// what RocksDB and strata promise for writes without a WAL) commits with
    /// `Durability::None`; `flush` makes those durable. Every other write commits with
    /// `Durability::Immediate` (fsync before `commit` returns): redb 4 has no mode between the
    /// two, and a `None` commit stays in this process's memory until a later durable commit, so
    /// a killed process would lose it, weaker than `--sync=0` with a WAL means elsewhere.
    fn write(
        &self,
        sync: bool,
        disable_wal: bool,
        f: impl FnOnce(&mut redb::Table<&[u8], &[u8]>) -> Result<()>,
    ) -> Result<()> {
        let db = self.db();
        let mut txn: WriteTransaction = db.begin_write()?;
        let durability = if disable_wal && !sync { Durability::None } else { Durability::Immediate };
        txn.set_durability(durability)?;
        {
            let mut table = txn.open_table(TABLE)?;
            f(&mut table)?;
        }
        Ok(txn.commit()?)
    }
}

impl BenchDb for RedbDb {
    fn put(&self, key: &[u8], value: &[u8], sync: bool, disable_wal: bool) -> Result<()> {
        self.write(sync, disable_wal, |t| Ok(t.insert(key, value).map(drop)?))
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let db = self.db();
        let txn = db.begin_read()?;
        let table = txn.open_table(TABLE)?;
        Ok(table.get(key)?.map(|v| v.value().to_vec()))
    }

    fn delete(&self, key: &[u8], sync: bool, disable_wal: bool) -> Result<()> {
        self.write(sync, disable_wal, |t| Ok(t.remove(key).map(drop)?))
    }

    fn merge(&self, _key: &[u8], _value: &[u8], _sync: bool, _disable_wal: bool) -> Result<()> {
        bail!("engine redb has no merge operator")
    }

    fn write_batch(&self, ops: &[(&[u8], &[u8])], sync: bool, disable_wal: bool) -> Result<()> {
        self.write(sync, disable_wal, |t| {
            for &(k, v) in ops {
                t.insert(k, v)?;
            }
            Ok(())
        })
    }

    fn scan(&self, start: &[u8], n: usize, reverse: bool, f: &mut dyn FnMut(&[u8], &[u8])) -> Result<usize> {
        let db = self.db();
        let txn = db.begin_read()?;
        let table = txn.open_table(TABLE)?;
        let range = match (reverse, start.is_empty()) {
            (_, true) => table.range::<&[u8]>(..)?,
            (false, false) => table.range(start..)?,
            (true, false) => table.range(..=start)?,
        };
        let mut count = 0;
        let mut visit = |entry: Entry<'_>| {
            let (k, v) = entry?;
            f(k.value(), v.value());
            count += 1;
            Ok::<_, redb::StorageError>(())
        };
        if reverse {
            range.rev().take(n).try_for_each(&mut visit)?;
        } else {
            range.take(n).try_for_each(&mut visit)?;
        }
        Ok(count)
    }

    /// An empty `Durability::Immediate` commit, which makes every earlier `Durability::None`
    /// commit durable too (redb has no memtable to write out).
    fn flush(&self) -> Result<()> {
        self.write(true, false, |_| Ok(()))
    }

    /// redb's `Database::compact`: moves pages to the front of the file and truncates it. Taking
    /// the write side of the lock waits for the calls in flight, so no transaction is live.
    fn compact(&self) -> Result<()> {
        let mut db = self.db.write().unwrap_or_else(PoisonError::into_inner);
        db.compact().context("redb compact")?;
        Ok(())
    }

    fn stats(&self, _kind: StatsKind) -> String {
        let size = std::fs::metadata(&self.file).map_or_else(|e| format!("? ({e})"), |m| m.len().to_string());
        let db = self.db();
        let stats = db.begin_write().map_err(redb::Error::from).and_then(|t| {
            let s = t.stats().map_err(redb::Error::from);
            t.abort()?;
            s
        });
        match stats {
            Ok(s) => format!(
                "redb: B-tree height {}, {} pages allocated ({} leaf, {} branch) of {} bytes; \
                 {} bytes stored, {} metadata, {} fragmented; file {size} bytes; values \
                 uncompressed\n",
                s.tree_height(),
                s.allocated_pages(),
                s.leaf_pages(),
                s.branch_pages(),
                s.page_size(),
                s.stored_bytes(),
                s.metadata_bytes(),
                s.fragmented_bytes(),
            ),
            Err(e) => format!("redb: file {size} bytes ({e})\n"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(db: &RedbDb, start: &[u8], n: usize, reverse: bool) -> Vec<Vec<u8>> {
        let mut seen = Vec::new();
        let count = db.scan(start, n, reverse, &mut |k, _| seen.push(k.to_vec())).unwrap();
        assert_eq!(count, seen.len());
        seen
    }

    #[test]
    fn round_trip_scan_reopen_and_no_merge() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = EngineOptions::for_test(dir.path());
        let db = RedbDb::open(&o).unwrap();
        assert_eq!(db.get(b"a").unwrap(), None);
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
        assert_eq!(keys(&db, b"c", 9, true), [b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]);
        assert!(db.stats(StatsKind::Stats).contains("B-tree height"));
        assert!(db.merge(b"m", &1u64.to_le_bytes(), false, false).is_err());
        drop(db);

        o.use_existing = true;
        let db = RedbDb::open(&o).unwrap();
        assert_eq!(db.get(b"e").unwrap(), Some(b"5".to_vec()));
        assert_eq!(keys(&db, b"", 9, false).len(), 4);
        drop(db);

        let missing = tempfile::tempdir().unwrap();
        let err =
            RedbDb::open(&EngineOptions { use_existing: true, ..EngineOptions::for_test(missing.path()) });
        assert!(err.err().unwrap().to_string().contains("no redb database"));
        o.merge_operator = Some("uint64add".into());
        let err = RedbDb::open(&o).err().unwrap().to_string();
        assert!(err.contains("has no merge operator"), "{err}");
    }
}
