//! [`Tables`] on RocksDB through rust-rocksdb (cargo feature `rocksdb`): a plain `DB` with one
//! column family per family, opened with the options `--engine=rocksdb` gives every other
//! benchmark, and every batch one `WriteBatch` (no transaction: the inserts read nothing).
//!
//! Owns: mapping the table operations onto rust-rocksdb calls. Must not: tune RocksDB beyond
//! what the flags ask (engine_rocksdb.rs owns that mapping) or know the row layout.

use anyhow::{Context, Result};
use rocksdb::{ColumnFamily, ColumnFamilyDescriptor, ReadOptions, WriteBatch, WriteOptions, DB};

use super::super::engine::EngineOptions;
use super::super::engine_rocksdb::{options, settle, write_options};
use super::store::{Batch, Family, ScanFn, Tables};

/// The insert benchmark's families on RocksDB.
pub struct RocksTables {
    db: DB,
    write_opts: WriteOptions,
}

impl RocksTables {
    /// Opens (creating as needed) the database at `o.path` with a column family per family.
    pub fn open(o: &EngineOptions, disable_wal: bool) -> Result<Self> {
        let mut opts = options(o)?;
        opts.create_missing_column_families(true);
        let families = Family::ALL.map(|f| ColumnFamilyDescriptor::new(f.name(), opts.clone()));
        let db = DB::open_cf_descriptors(&opts, &o.path, families)
            .with_context(|| format!("opening RocksDB at {}", o.path.display()))?;
        Ok(Self { db, write_opts: write_options(o.sync, disable_wal) })
    }

    fn cf(&self, f: Family) -> Result<&ColumnFamily> {
        self.db.cf_handle(f.name()).with_context(|| format!("RocksDB column family {} is not open", f.name()))
    }

    fn bounded(lower: &[u8], upper: Option<&[u8]>) -> ReadOptions {
        let mut ro = read_options();
        ro.set_iterate_lower_bound(lower.to_vec());
        if let Some(u) = upper {
            ro.set_iterate_upper_bound(u.to_vec());
        }
        ro
    }
}

/// db_bench verifies checksums on every read; so do these.
fn read_options() -> ReadOptions {
    let mut ro = ReadOptions::default();
    ro.set_verify_checksums(true);
    ro
}

impl Tables for RocksTables {
    fn write(&self, batch: &Batch) -> Result<()> {
        let mut b = WriteBatch::default();
        for (f, key, value) in batch.iter() {
            match value {
                Some(v) => b.put_cf(self.cf(f)?, key, v),
                None => b.delete_cf(self.cf(f)?, key),
            }
        }
        Ok(self.db.write_opt(b, &self.write_opts)?)
    }

    fn get(&self, f: Family, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let v = self.db.get_pinned_cf_opt(self.cf(f)?, key, &read_options())?;
        Ok(v.map(|v| v.to_vec()))
    }

    fn scan(&self, f: Family, lower: &[u8], upper: Option<&[u8]>, each: &mut ScanFn<'_>) -> Result<()> {
        let mut it = self.db.raw_iterator_cf_opt(self.cf(f)?, Self::bounded(lower, upper));
        it.seek(lower);
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if !each(k, v)? {
                break;
            }
            it.next();
        }
        Ok(it.status()?)
    }

    fn last_key(&self, f: Family, lower: &[u8], upper: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
        let mut it = self.db.raw_iterator_cf_opt(self.cf(f)?, Self::bounded(lower, upper));
        it.seek_to_last();
        let key = it.key().map(<[u8]>::to_vec);
        it.status()?;
        Ok(key)
    }

    fn settle(&self) -> Result<()> {
        settle(&self.db)
    }

    fn describe(&self) -> String {
        "RocksDB, a column family per table and index, one WriteBatch per insert".to_string()
    }
}
