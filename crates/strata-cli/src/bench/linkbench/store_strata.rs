//! [`Tables`] on strata: one column family per table, and per operation an optimistic
//! transaction (`Db::begin_transaction`, conflicts found at commit), a pessimistic one
//! (`TransactionDb`, per-key locks taken by `get_for_update`) or, with `--transactions=0`, a
//! plain `WriteBatch`, which is atomic but not isolated, so two concurrent adds to one list
//! can lose a count.
//!
//! Owns: mapping the table operations onto strata calls. Must not: know LinkBench's records.

use anyhow::{Context, Result};
use strata::txn::{Transaction, TransactionDb, TransactionDbOptions, TransactionOptions};
use strata::{ColumnFamily, Db, Options, ReadOptions, WriteBatch, WriteOptions};

use super::store::{ScanFn, Table, Tables, TxnBody, TxnOps, View};

/// Flushes every table of the database at `path` and waits for its compactions (see
/// `linkbench::settle`).
pub fn settle(path: &std::path::Path, opts: Options) -> Result<()> {
    let families = Table::ALL.map(|t| (t.name(), opts.clone()));
    let db = Db::open_cf(path, opts, families)
        .with_context(|| format!("opening {} to settle it", path.display()))?;
    let mut families = Vec::with_capacity(Table::ALL.len());
    for t in Table::ALL {
        families.push(db.cf(t.name()).with_context(|| format!("column family {} did not open", t.name()))?);
    }
    super::super::engine_strata::settle(&db, &families)?;
    Ok(db.close()?)
}

/// How a write operation is made atomic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Atomicity {
    /// `Db::begin_transaction`: snapshot reads, conflicts found at commit (`Error::Busy`).
    Optimistic,
    /// `TransactionDb`: `get_for_update` locks, `Error::LockTimeout`/`Deadlock` on contention.
    Pessimistic,
    /// One `WriteBatch` per operation, reads not isolated.
    Batch,
}

enum Handle {
    Plain(Db),
    Locking(TransactionDb),
}

/// LinkBench's tables on strata.
pub struct StrataTables {
    handle: Handle,
    families: [ColumnFamily; 4],
    atomicity: Atomicity,
    write_opts: WriteOptions,
}

impl StrataTables {
    /// Opens (creating as needed) one family per table in the database at `path`.
    pub fn open(
        path: &std::path::Path,
        opts: Options,
        write_opts: WriteOptions,
        atomicity: Atomicity,
    ) -> Result<Self> {
        let families = Table::ALL.map(|t| (t.name(), opts.clone()));
        let db = Db::open_cf(path, opts, families)
            .with_context(|| format!("opening strata at {} for linkbench", path.display()))?;
        let mut handles = Vec::with_capacity(4);
        for t in Table::ALL {
            handles
                .push(db.cf(t.name()).with_context(|| format!("column family {} did not open", t.name()))?);
        }
        let families: [ColumnFamily; 4] = handles.try_into().map_err(|_| anyhow::anyhow!("four families"))?;
        let handle = match atomicity {
            Atomicity::Pessimistic => {
                Handle::Locking(TransactionDb::new(db, TransactionDbOptions::default()))
            }
            Atomicity::Optimistic | Atomicity::Batch => Handle::Plain(db),
        };
        Ok(Self { handle, families, atomicity, write_opts })
    }

    fn db(&self) -> &Db {
        match &self.handle {
            Handle::Plain(db) => db,
            Handle::Locking(tdb) => tdb.db(),
        }
    }

    fn cf(&self, t: Table) -> &ColumnFamily {
        &self.families[t.index()]
    }
}

/// One operation's writes: a transaction, or a batch plus the database it reads from.
enum Writer<'a> {
    Txn(&'a StrataTables, Transaction),
    Batch(&'a StrataTables, WriteBatch),
}

impl TxnOps for Writer<'_> {
    fn read(&mut self, t: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(match self {
            Self::Txn(s, txn) => txn.get_for_update_cf_opt(s.cf(t), &ReadOptions::new(), key)?,
            Self::Batch(s, _) => s.db().get_cf_opt(s.cf(t), &ReadOptions::new(), key)?,
        })
    }

    fn put(&mut self, t: Table, key: &[u8], value: &[u8]) -> Result<()> {
        match self {
            Self::Txn(s, txn) => txn.put_cf(s.cf(t), key, value)?,
            Self::Batch(s, b) => {
                b.put_cf(s.cf(t), key, value);
            }
        }
        Ok(())
    }

    fn delete(&mut self, t: Table, key: &[u8]) -> Result<()> {
        match self {
            Self::Txn(s, txn) => txn.delete_cf(s.cf(t), key)?,
            Self::Batch(s, b) => {
                b.delete_cf(s.cf(t), key);
            }
        }
        Ok(())
    }
}

impl Writer<'_> {
    fn commit(self) -> Result<()> {
        match self {
            Self::Txn(_, txn) => txn.commit()?,
            Self::Batch(s, b) => s.db().write_opt(&s.write_opts, b)?,
        }
        Ok(())
    }
}

struct Snapshot<'a> {
    tables: &'a StrataTables,
    ro: ReadOptions,
}

impl View for Snapshot<'_> {
    fn get(&self, t: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.tables.db().get_cf_opt(self.tables.cf(t), &self.ro, key)?)
    }
}

impl Tables for StrataTables {
    fn transaction(&self, body: &mut TxnBody<'_>) -> Result<bool> {
        let mut w = match &self.handle {
            _ if self.atomicity == Atomicity::Batch => Writer::Batch(self, WriteBatch::new()),
            Handle::Plain(db) => Writer::Txn(self, db.begin_transaction(&self.write_opts)),
            Handle::Locking(tdb) => {
                Writer::Txn(self, tdb.begin(&self.write_opts, &TransactionOptions::default()))
            }
        };
        let result = body(&mut w)?;
        w.commit()?;
        Ok(result)
    }

    fn is_conflict(&self, e: &anyhow::Error) -> bool {
        matches!(
            e.downcast_ref::<strata::Error>(),
            Some(strata::Error::Busy(_) | strata::Error::LockTimeout(_) | strata::Error::Deadlock(_))
        )
    }

    fn put(&self, t: Table, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.db().put_cf_opt(self.cf(t), &self.write_opts, key, value)?)
    }

    fn get(&self, t: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.db().get_cf_opt(self.cf(t), &ReadOptions::new(), key)?)
    }

    fn with_view(&self, body: &mut dyn FnMut(&dyn View) -> Result<()>) -> Result<()> {
        let ro = ReadOptions { snapshot: Some(self.db().snapshot()), ..ReadOptions::new() };
        body(&Snapshot { tables: self, ro })
    }

    fn scan(&self, t: Table, lower: &[u8], upper: Option<&[u8]>, f: &mut ScanFn<'_>) -> Result<()> {
        let ro = ReadOptions {
            lower_bound: Some(lower.to_vec()),
            upper_bound: upper.map(<[u8]>::to_vec),
            ..ReadOptions::new()
        };
        let mut it = self.db().cursor_cf(self.cf(t), &ro)?;
        it.seek(lower);
        while it.valid() {
            if !f(it.key(), it.value())? {
                break;
            }
            it.next();
        }
        Ok(it.status()?)
    }

    fn describe(&self) -> String {
        match self.atomicity {
            Atomicity::Optimistic => "strata, one optimistic transaction per write, begun again on Busy",
            Atomicity::Pessimistic => "strata TransactionDb, one locking transaction per write",
            Atomicity::Batch => "strata, plain write batches, NO transactions",
        }
        .to_string()
    }
}
