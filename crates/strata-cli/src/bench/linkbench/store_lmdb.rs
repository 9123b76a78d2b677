//! [`Tables`] on LMDB through heed (cargo feature `heed`): one named database per table in one
//! environment. LMDB has one writer at a time, so a write transaction is serializable by
//! construction (every read in it is claimed) and never conflicts; readers run beside it on
//! their own read transactions.
//!
//! Owns: mapping the table operations onto heed calls. Must not: know LinkBench's records.

use std::ops::Bound;

use anyhow::Result;
use heed::{Env, RoTxn, RwTxn, WithTls};

use super::super::engine::EngineOptions;
use super::super::engine_heed::{open_env_with_dbs, BytesDb};
use super::store::{ScanFn, Table, Tables, TxnBody, TxnOps, View};

type Db = BytesDb;

/// LinkBench's tables on LMDB.
pub struct LmdbTables {
    env: Env,
    dbs: [Db; 4],
    /// The environment is `MDB_NOSYNC` (`--sync=0`).
    no_sync: bool,
    sync: bool,
}

impl LmdbTables {
    /// Opens (creating as needed) the environment at `o.path` with a named database per table.
    pub fn open(o: &EngineOptions) -> Result<Self> {
        let (env, dbs, no_sync) = open_env_with_dbs(o, Table::ALL.map(|t| t.name()))?;
        Ok(Self { env, dbs, no_sync, sync: o.sync })
    }

    fn db(&self, t: Table) -> &Db {
        &self.dbs[t.index()]
    }

    /// Commits `wtxn`, durably if the run asked for synced writes.
    fn commit(&self, wtxn: RwTxn<'_>) -> Result<()> {
        wtxn.commit()?;
        if self.sync && self.no_sync {
            self.env.force_sync()?;
        }
        Ok(())
    }
}

struct Writer<'a, 'e> {
    tables: &'a LmdbTables,
    wtxn: &'a mut RwTxn<'e>,
}

impl TxnOps for Writer<'_, '_> {
    fn read(&mut self, t: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.tables.db(t).get(self.wtxn, key)?.map(<[u8]>::to_vec))
    }

    fn put(&mut self, t: Table, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.tables.db(t).put(self.wtxn, key, value)?)
    }

    fn delete(&mut self, t: Table, key: &[u8]) -> Result<()> {
        self.tables.db(t).delete(self.wtxn, key)?;
        Ok(())
    }
}

struct Reader<'a, 'e> {
    tables: &'a LmdbTables,
    rtxn: RoTxn<'e, WithTls>,
}

impl View for Reader<'_, '_> {
    fn get(&self, t: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.tables.db(t).get(&self.rtxn, key)?.map(<[u8]>::to_vec))
    }
}

impl Tables for LmdbTables {
    fn transaction(&self, body: &mut TxnBody<'_>) -> Result<bool> {
        let mut wtxn = self.env.write_txn()?;
        // An error leaves `wtxn` to be dropped, which aborts it.
        let result = body(&mut Writer { tables: self, wtxn: &mut wtxn })?;
        self.commit(wtxn)?;
        Ok(result)
    }

    fn is_conflict(&self, _e: &anyhow::Error) -> bool {
        false
    }

    fn put(&self, t: Table, key: &[u8], value: &[u8]) -> Result<()> {
        let mut wtxn = self.env.write_txn()?;
        self.db(t).put(&mut wtxn, key, value)?;
        self.commit(wtxn)
    }

    fn get(&self, t: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let rtxn = self.env.read_txn()?;
        Ok(self.db(t).get(&rtxn, key)?.map(<[u8]>::to_vec))
    }

    fn with_view(&self, body: &mut dyn FnMut(&dyn View) -> Result<()>) -> Result<()> {
        body(&Reader { tables: self, rtxn: self.env.read_txn()? })
    }

    fn scan(&self, t: Table, lower: &[u8], upper: Option<&[u8]>, f: &mut ScanFn<'_>) -> Result<()> {
        let rtxn = self.env.read_txn()?;
        // LMDB refuses an empty key (MDB_BAD_VALSIZE), even as a seek target.
        let start = if lower.is_empty() { Bound::Unbounded } else { Bound::Included(lower) };
        let end = upper.map_or(Bound::Unbounded, Bound::Excluded);
        for entry in self.db(t).range(&rtxn, &(start, end))? {
            let (k, v) = entry?;
            if !f(k, v)? {
                break;
            }
        }
        Ok(())
    }

    fn describe(&self) -> String {
        let sync = if self.no_sync { "MDB_NOSYNC" } else { "synchronous commits" };
        format!("LMDB (heed), one write transaction per write (one writer at a time), {sync}")
    }
}
