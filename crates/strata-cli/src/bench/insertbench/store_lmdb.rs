//! [`Tables`] on LMDB through heed (cargo feature `heed`): one named database per family in one
//! environment (opened by `engine_heed::open_env`, as every LMDB benchmark here), every batch
//! one write transaction. LMDB has one writer at a time, so the clients' inserts take turns.
//!
//! Owns: mapping the table operations onto heed calls. Must not: know the row layout.

use std::ops::Bound;

use anyhow::Result;
use heed::Env;

use super::super::engine::EngineOptions;
use super::super::engine_heed::{open_env_with_dbs, BytesDb};
use super::store::{Batch, Family, ScanFn, Tables};

type Db = BytesDb;

/// The insert benchmark's families on LMDB.
pub struct LmdbTables {
    env: Env,
    dbs: [Db; 4],
    /// The environment is `MDB_NOSYNC` (`--sync=0`).
    no_sync: bool,
    sync: bool,
}

impl LmdbTables {
    /// Opens (creating as needed) the environment at `o.path` with a named database per family.
    pub fn open(o: &EngineOptions) -> Result<Self> {
        let (env, dbs, no_sync) = open_env_with_dbs(o, Family::ALL.map(|f| f.name()))?;
        Ok(Self { env, dbs, no_sync, sync: o.sync })
    }

    fn db(&self, f: Family) -> &Db {
        &self.dbs[f.index()]
    }
}

/// LMDB refuses an empty key (MDB_BAD_VALSIZE), even as a bound.
fn bounds<'a>(lower: &'a [u8], upper: Option<&'a [u8]>) -> (Bound<&'a [u8]>, Bound<&'a [u8]>) {
    let start = if lower.is_empty() { Bound::Unbounded } else { Bound::Included(lower) };
    (start, upper.map_or(Bound::Unbounded, Bound::Excluded))
}

impl Tables for LmdbTables {
    fn write(&self, batch: &Batch) -> Result<()> {
        let mut wtxn = self.env.write_txn()?;
        // An error drops `wtxn`, which aborts it.
        for (f, key, value) in batch.iter() {
            match value {
                Some(v) => self.db(f).put(&mut wtxn, key, v)?,
                None => {
                    self.db(f).delete(&mut wtxn, key)?;
                }
            }
        }
        wtxn.commit()?;
        if self.sync && self.no_sync {
            self.env.force_sync()?;
        }
        Ok(())
    }

    fn get(&self, f: Family, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let rtxn = self.env.read_txn()?;
        Ok(self.db(f).get(&rtxn, key)?.map(<[u8]>::to_vec))
    }

    fn scan(&self, f: Family, lower: &[u8], upper: Option<&[u8]>, each: &mut ScanFn<'_>) -> Result<()> {
        let rtxn = self.env.read_txn()?;
        for entry in self.db(f).range(&rtxn, &bounds(lower, upper))? {
            let (k, v) = entry?;
            if !each(k, v)? {
                break;
            }
        }
        Ok(())
    }

    fn last_key(&self, f: Family, lower: &[u8], upper: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
        let rtxn = self.env.read_txn()?;
        let mut it = self.db(f).rev_range(&rtxn, &bounds(lower, upper))?;
        Ok(it.next().transpose()?.map(|(k, _)| k.to_vec()))
    }

    /// A B-tree has no backlog: every commit is already in its final place.
    fn settle(&self) -> Result<()> {
        Ok(())
    }

    fn describe(&self) -> String {
        let sync = if self.no_sync { "MDB_NOSYNC" } else { "synchronous commits" };
        format!("LMDB (heed), a named database per table and index, one write transaction per insert, {sync}")
    }
}
