//! The seam between the insert benchmark and a database: four ordered families (the rows and
//! the three indexes), atomic write batches, point reads and bounded scans. Each engine
//! implements [`Tables`] once (`store_strata.rs`, `store_rocksdb.rs`, `store_lmdb.rs`); the
//! benchmark's operations are written over it once, in table.rs.
//!
//! Owns: the family names, the [`Batch`] buffer and the trait. Must not: know the row layout,
//! time anything or name an engine.

use anyhow::Result;

use super::schema::Index;

/// The four families: a column family each on an LSM, a named database on LMDB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Rows,
    Market,
    Register,
    Pdc,
}

impl Family {
    pub const ALL: [Self; 4] = [Self::Rows, Self::Market, Self::Register, Self::Pdc];

    pub fn name(self) -> &'static str {
        match self {
            Self::Rows => "ib_rows",
            Self::Market => "ib_marketsegment",
            Self::Register => "ib_registersegment",
            Self::Pdc => "ib_pdc",
        }
    }

    /// The position of this family in [`Family::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The family holding `ix`.
    pub fn of(ix: Index) -> Self {
        match ix {
            Index::Market => Self::Market,
            Index::Register => Self::Register,
            Index::Pdc => Self::Pdc,
        }
    }
}

/// One write in a [`Batch`].
#[derive(Debug, Clone, Copy)]
struct Op {
    family: Family,
    /// Where the key ends in the buffer; the value (if any) follows it.
    key_end: usize,
    /// `None` for a delete.
    value_end: Option<usize>,
}

/// Puts and deletes applied atomically by [`Tables::write`], in one reusable buffer.
#[derive(Default)]
pub struct Batch {
    buf: Vec<u8>,
    ops: Vec<Op>,
}

/// One write of a batch: (family, key, value or `None` for a delete).
pub type Write<'a> = (Family, &'a [u8], Option<&'a [u8]>);

impl Batch {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn clear(&mut self) {
        self.buf.clear();
        self.ops.clear();
    }

    pub fn put(&mut self, family: Family, key: &[u8], value: &[u8]) {
        self.buf.extend_from_slice(key);
        let key_end = self.buf.len();
        self.buf.extend_from_slice(value);
        self.ops.push(Op { family, key_end, value_end: Some(self.buf.len()) });
    }

    /// A delete (the benchmark only adds; tests plant mismatches with this).
    #[cfg(test)]
    pub fn delete(&mut self, family: Family, key: &[u8]) {
        self.buf.extend_from_slice(key);
        self.ops.push(Op { family, key_end: self.buf.len(), value_end: None });
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// The writes in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = Write<'_>> {
        let mut start = 0;
        self.ops.iter().map(move |op| {
            let key = &self.buf[start..op.key_end];
            let value = op.value_end.map(|end| &self.buf[op.key_end..end]);
            start = op.value_end.unwrap_or(op.key_end);
            (op.family, key, value)
        })
    }
}

/// What a scan hands each (key, value) to; false stops the scan.
pub type ScanFn<'a> = dyn FnMut(&[u8], &[u8]) -> Result<bool> + 'a;

/// An engine's four families, shared by every client thread.
pub trait Tables: Send + Sync {
    /// Applies every write of `batch` atomically (one write batch or one write transaction).
    fn write(&self, batch: &Batch) -> Result<()>;
    /// The latest committed value.
    fn get(&self, f: Family, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Entries with `lower <= key < upper` (no upper bound when `None`) in key order, from one
    /// consistent view, until `f` returns false. `f` must not call back into the engine (an
    /// LMDB thread holds one read transaction at a time).
    fn scan(&self, f: Family, lower: &[u8], upper: Option<&[u8]>, each: &mut ScanFn<'_>) -> Result<()>;
    /// The largest key with `lower <= key < upper`.
    fn last_key(&self, f: Family, lower: &[u8], upper: Option<&[u8]>) -> Result<Option<Vec<u8>>>;
    /// The engine and how a batch is written, for the report's header.
    fn describe(&self) -> String;
    /// Writes everything still in memory to its files and waits until no compaction is left,
    /// so that the database's size is the size of its data, not of a backlog that depends on
    /// when the last phase stopped.
    fn settle(&self) -> Result<()>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_keeps_its_writes_in_order_and_clears() {
        let mut b = Batch::new();
        b.put(Family::Rows, b"k1", b"value");
        b.delete(Family::Pdc, b"gone");
        b.put(Family::Market, b"k2", b"");
        let got: Vec<Write<'_>> = b.iter().collect();
        assert_eq!(
            got,
            [
                (Family::Rows, &b"k1"[..], Some(&b"value"[..])),
                (Family::Pdc, &b"gone"[..], None),
                (Family::Market, &b"k2"[..], Some(&b""[..])),
            ]
        );
        assert_eq!(b.iter().count(), 3);
        b.clear();
        assert!(b.is_empty() && b.iter().next().is_none());
        assert_eq!(Family::of(Index::Register), Family::Register);
        assert!(Family::ALL.iter().enumerate().all(|(i, f)| f.index() == i));
    }
}
