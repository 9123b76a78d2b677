//! One client's table on an engine's [`Tables`]: the insert benchmark's operations, written
//! once for every engine. An insert is one atomic batch of rows (with their three index
//! entries, or without them before the indexes exist) written without reads; the index build
//! (l.x) reads the rows in primary-key order a chunk at a time and writes their entries; a
//! query reads a few entries of one index from a random start, index-only, as iibench's
//! covering `SELECT ... ORDER BY <index columns> LIMIT n` does.
//!
//! Owns: how the operations map onto families and keys. Must not: time, pace or print
//! (phases.rs and mod.rs do) or name an engine.

use anyhow::Result;

use super::schema::{self, Index, Rng, Row, TableId};
use super::store::{Batch, Family, Tables};

/// Rows the index build reads and indexes per write batch.
pub const INDEX_CHUNK: usize = 1000;

/// A client's table.
#[derive(Clone, Copy)]
pub struct Table<'a> {
    tables: &'a dyn Tables,
    pub id: TableId,
}

impl<'a> Table<'a> {
    pub fn new(tables: &'a dyn Tables, id: TableId) -> Self {
        Self { tables, id }
    }

    /// One past the largest primary key of the table (1 when it is empty), as auto-increment.
    pub fn next_pk(&self) -> Result<u64> {
        let end = schema::table_end(self.id);
        match self.tables.last_key(Family::Rows, &schema::table_start(self.id), end.as_deref())? {
            Some(k) => Ok(schema::decode_row_key(&k)?.1 + 1),
            None => Ok(1),
        }
    }

    /// Writes `rows` (with their index entries when `with_indexes`) as one atomic batch.
    pub fn insert(&self, batch: &mut Batch, rows: &[Row], with_indexes: bool) -> Result<()> {
        batch.clear();
        for r in rows {
            batch.put(Family::Rows, &schema::row_key(self.id, r.pk), &schema::row_value(r));
            if with_indexes {
                for ix in Index::ALL {
                    batch.put(Family::of(ix), &ix.key(self.id, r), &[]);
                }
            }
        }
        self.tables.write(batch)
    }

    /// The index build's step: the entries of up to [`INDEX_CHUNK`] rows from primary key
    /// `from` on, written as one batch. Returns the rows indexed and the primary key to go on
    /// from (`None` at the end of the table).
    pub fn index_chunk(&self, from: u64, batch: &mut Batch) -> Result<(usize, Option<u64>)> {
        let mut rows = Vec::with_capacity(INDEX_CHUNK);
        let end = schema::table_end(self.id);
        // Read first, write after: an LMDB thread cannot write inside its read transaction.
        self.tables.scan(Family::Rows, &schema::row_key(self.id, from), end.as_deref(), &mut |k, v| {
            let (_, pk) = schema::decode_row_key(k)?;
            rows.push(schema::decode_row(pk, v)?);
            Ok(rows.len() < INDEX_CHUNK)
        })?;
        batch.clear();
        for r in &rows {
            for ix in Index::ALL {
                batch.put(Family::of(ix), &ix.key(self.id, r), &[]);
            }
        }
        if !batch.is_empty() {
            self.tables.write(batch)?;
        }
        let next = (rows.len() == INDEX_CHUNK).then(|| rows.last().map_or(from, |r| r.pk + 1));
        Ok((rows.len(), next))
    }

    /// iibench's query on `ix`: up to `limit` entries from a random start, decoded (the query
    /// reads only index columns). Returns how many it fetched.
    pub fn query(&self, ix: Index, rng: &mut Rng, limit: usize) -> Result<usize> {
        let start = ix.query_start(self.id, rng);
        let end = schema::table_end(self.id);
        let mut fetched = 0;
        if limit == 0 {
            return Ok(0);
        }
        self.tables.scan(Family::of(ix), &start, end.as_deref(), &mut |k, _| {
            ix.decode(k)?;
            fetched += 1;
            Ok(fetched < limit)
        })?;
        Ok(fetched)
    }
}

/// A chunk of (key, value) entries.
pub type Chunk = [(Vec<u8>, Vec<u8>)];

/// Every entry of `f` in key order, handed to `each` a chunk at a time with no read open, so
/// `each` may read the engine (the checker's scans).
pub fn scan_chunks(
    tables: &dyn Tables,
    f: Family,
    chunk: usize,
    each: &mut dyn FnMut(&Chunk) -> Result<()>,
) -> Result<()> {
    let mut from: Vec<u8> = Vec::new();
    let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(chunk);
    loop {
        entries.clear();
        tables.scan(f, &from, None, &mut |k, v| {
            entries.push((k.to_vec(), v.to_vec()));
            Ok(entries.len() < chunk)
        })?;
        each(&entries)?;
        match entries.last() {
            Some((k, _)) if entries.len() == chunk => {
                // The smallest key past k.
                from = k.clone();
                from.push(0);
            }
            _ => return Ok(()),
        }
    }
}
