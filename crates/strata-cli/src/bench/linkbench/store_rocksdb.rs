//! [`Tables`] on RocksDB's `TransactionDB` through rust-rocksdb (cargo feature `rocksdb`): one
//! column family per table, opened with the options `--engine=rocksdb` gives every other
//! benchmark, and per operation one pessimistic transaction whose dependent reads are
//! `GetForUpdate` (an exclusive lock each), as MyRocks runs LinkBench.
//!
//! Owns: mapping the table operations onto rust-rocksdb calls. Must not: tune RocksDB beyond
//! what the flags ask (engine_rocksdb.rs owns that mapping) or know LinkBench's records.

use anyhow::{Context, Result};
use rocksdb::{
    ColumnFamily, ColumnFamilyDescriptor, ErrorKind, ReadOptions, SnapshotWithThreadMode, Transaction,
    TransactionDB, TransactionDBOptions, TransactionOptions, WriteOptions,
};

use super::super::engine::EngineOptions;
use super::super::engine_rocksdb::{options, write_options};
use super::store::{ScanFn, Table, Tables, TxnBody, TxnOps, View};

/// LinkBench's tables on RocksDB.
pub struct RocksTables {
    db: TransactionDB,
    write_opts: WriteOptions,
}

impl RocksTables {
    /// Opens (creating as needed) the database at `o.path` with a column family per table.
    pub fn open(o: &EngineOptions, disable_wal: bool) -> Result<Self> {
        let mut opts = options(o)?;
        opts.create_missing_column_families(true);
        let families = Table::ALL.map(|t| ColumnFamilyDescriptor::new(t.name(), opts.clone()));
        let db =
            TransactionDB::open_cf_descriptors(&opts, &TransactionDBOptions::default(), &o.path, families)
                .with_context(|| format!("opening RocksDB TransactionDB at {}", o.path.display()))?;
        Ok(Self { db, write_opts: write_options(o.sync, disable_wal) })
    }

    fn cf(&self, t: Table) -> Result<&ColumnFamily> {
        self.db.cf_handle(t.name()).with_context(|| format!("RocksDB column family {} is not open", t.name()))
    }
}

/// Flushes every table of the database at `o.path` and waits for its compactions (see
/// `linkbench::settle`), through a plain `DB` on the same files: rust-rocksdb's
/// `TransactionDB` offers neither.
pub fn settle(o: &EngineOptions) -> Result<()> {
    let opts = options(o)?;
    let families = Table::ALL.map(|t| ColumnFamilyDescriptor::new(t.name(), opts.clone()));
    let db = rocksdb::DB::open_cf_descriptors(&opts, &o.path, families)
        .with_context(|| format!("opening RocksDB at {} to settle it", o.path.display()))?;
    super::super::engine_rocksdb::settle(&db)
}

/// db_bench verifies checksums on every read; so do these.
fn read_options() -> ReadOptions {
    let mut ro = ReadOptions::default();
    ro.set_verify_checksums(true);
    ro
}

struct Writer<'a> {
    tables: &'a RocksTables,
    txn: Transaction<'a, TransactionDB>,
}

impl TxnOps for Writer<'_> {
    fn read(&mut self, t: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let cf = self.tables.cf(t)?;
        Ok(self.txn.get_for_update_cf_opt(cf, key, true, &read_options())?)
    }

    fn put(&mut self, t: Table, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.txn.put_cf(self.tables.cf(t)?, key, value)?)
    }

    fn delete(&mut self, t: Table, key: &[u8]) -> Result<()> {
        Ok(self.txn.delete_cf(self.tables.cf(t)?, key)?)
    }
}

struct Snapshot<'a> {
    tables: &'a RocksTables,
    snapshot: SnapshotWithThreadMode<'a, TransactionDB>,
}

impl View for Snapshot<'_> {
    fn get(&self, t: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let cf = self.tables.cf(t)?;
        Ok(self.snapshot.get_pinned_cf_opt(cf, key, read_options())?.map(|v| v.to_vec()))
    }
}

impl Tables for RocksTables {
    fn transaction(&self, body: &mut TxnBody<'_>) -> Result<bool> {
        let txn = self.db.transaction_opt(&self.write_opts, &TransactionOptions::default());
        let mut w = Writer { tables: self, txn };
        // An error drops the transaction unfinished, which rolls it back and frees its locks.
        let result = body(&mut w)?;
        w.txn.commit()?;
        Ok(result)
    }

    fn is_conflict(&self, e: &anyhow::Error) -> bool {
        e.downcast_ref::<rocksdb::Error>()
            .is_some_and(|e| matches!(e.kind(), ErrorKind::Busy | ErrorKind::TimedOut | ErrorKind::TryAgain))
    }

    fn put(&self, t: Table, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.db.put_cf_opt(self.cf(t)?, key, value, &self.write_opts)?)
    }

    fn get(&self, t: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let v = self.db.get_pinned_cf_opt(self.cf(t)?, key, &read_options())?;
        Ok(v.map(|v| v.to_vec()))
    }

    fn with_view(&self, body: &mut dyn FnMut(&dyn View) -> Result<()>) -> Result<()> {
        body(&Snapshot { tables: self, snapshot: self.db.snapshot() })
    }

    fn scan(&self, t: Table, lower: &[u8], upper: Option<&[u8]>, f: &mut ScanFn<'_>) -> Result<()> {
        let mut ro = read_options();
        ro.set_iterate_lower_bound(lower.to_vec());
        if let Some(u) = upper {
            ro.set_iterate_upper_bound(u.to_vec());
        }
        let mut it = self.db.raw_iterator_cf_opt(self.cf(t)?, ro);
        it.seek(lower);
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if !f(k, v)? {
                break;
            }
            it.next();
        }
        Ok(it.status()?)
    }

    fn describe(&self) -> String {
        "RocksDB TransactionDB, one pessimistic transaction per write (GetForUpdate locks)".to_string()
    }
}
