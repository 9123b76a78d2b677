//! [`Tables`] on strata: one column family per family, every batch one `WriteBatch` written
//! with the run's `WriteOptions` (no transaction: the insert benchmark writes without reads).
//!
//! Owns: mapping the table operations onto strata calls. Must not: know the row layout.

use std::path::Path;

use anyhow::{Context, Result};
use strata::{ColumnFamily, Db, Options, ReadOptions, WriteBatch, WriteOptions};

use super::store::{Batch, Family, ScanFn, Tables};

/// The insert benchmark's families on strata.
pub struct StrataTables {
    db: Db,
    families: [ColumnFamily; 4],
    write_opts: WriteOptions,
}

impl StrataTables {
    /// Opens (creating as needed) one column family per family in the database at `path`.
    pub fn open(path: &Path, opts: Options, write_opts: WriteOptions) -> Result<Self> {
        let families = Family::ALL.map(|f| (f.name(), opts.clone()));
        let db = Db::open_cf(path, opts, families)
            .with_context(|| format!("opening strata at {} for insertbench", path.display()))?;
        let mut handles = Vec::with_capacity(4);
        for f in Family::ALL {
            handles
                .push(db.cf(f.name()).with_context(|| format!("column family {} did not open", f.name()))?);
        }
        let families: [ColumnFamily; 4] = handles.try_into().map_err(|_| anyhow::anyhow!("four families"))?;
        Ok(Self { db, families, write_opts })
    }

    fn cf(&self, f: Family) -> &ColumnFamily {
        &self.families[f.index()]
    }

    fn bounded(lower: &[u8], upper: Option<&[u8]>) -> ReadOptions {
        ReadOptions {
            lower_bound: Some(lower.to_vec()),
            upper_bound: upper.map(<[u8]>::to_vec),
            ..ReadOptions::new()
        }
    }
}

impl Tables for StrataTables {
    fn write(&self, batch: &Batch) -> Result<()> {
        let mut b = WriteBatch::new();
        for (f, key, value) in batch.iter() {
            match value {
                Some(v) => b.put_cf(self.cf(f), key, v),
                None => b.delete_cf(self.cf(f), key),
            };
        }
        Ok(self.db.write_opt(&self.write_opts, b)?)
    }

    fn get(&self, f: Family, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.db.get_cf_opt(self.cf(f), &ReadOptions::new(), key)?)
    }

    fn scan(&self, f: Family, lower: &[u8], upper: Option<&[u8]>, each: &mut ScanFn<'_>) -> Result<()> {
        let mut it = self.db.cursor_cf(self.cf(f), &Self::bounded(lower, upper))?;
        it.seek(lower);
        while it.valid() {
            if !each(it.key(), it.value())? {
                break;
            }
            it.next();
        }
        Ok(it.status()?)
    }

    fn last_key(&self, f: Family, lower: &[u8], upper: Option<&[u8]>) -> Result<Option<Vec<u8>>> {
        let mut it = self.db.cursor_cf(self.cf(f), &Self::bounded(lower, upper))?;
        it.seek_to_last();
        let key = it.valid().then(|| it.key().to_vec());
        it.status()?;
        Ok(key)
    }

    fn settle(&self) -> Result<()> {
        super::super::engine_strata::settle(&self.db, &self.families)
    }

    fn describe(&self) -> String {
        "strata, a column family per table and index, one WriteBatch per insert".to_string()
    }
}
