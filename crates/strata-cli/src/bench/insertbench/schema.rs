//! The insert benchmark's table as bytes: iibench's `purchases_index` row (transactionid,
//! dateandtime, cashregisterid, customerid, productid, price, data) and its three secondary
//! indexes, marketsegment (price, customerid), registersegment (cashregisterid, price,
//! customerid) and pdc (price, dateandtime, customerid), each key ending with the primary key
//! and each index value empty. This is iibench.py's schema up to its December 2023 "fix
//! indexes" change (which re-led marketsegment with productid and made price an int).
//!
//! Every key starts with the client's table id (u16, big-endian), so each client has its own
//! table inside the shared families, as MyRocks prefixes every key with its index id. Numbers
//! are big-endian so byte order is numeric order; the primary key rises with each insert.
//!
//! Owns: the key and value layout, decoding, and how a row's columns are drawn (iibench's
//! `generate_cols`). Must not: touch a database, time anything or choose a phase.

use anyhow::{bail, Result};

use super::super::keygen::mix;
use super::super::valuegen::ValueGen;

/// iibench's `--cashregisters`: cashregisterid is drawn from 0..this.
pub const CASHREGISTERS: u32 = 1000;
/// iibench's `--products`.
pub const PRODUCTS: u32 = 10_000;
/// iibench's `--customers`.
pub const CUSTOMERS: u32 = 100_000;
/// iibench's `--max_price`.
pub const MAX_PRICE: u32 = 500;
/// Price is fixed-point: the stored u32 is price x this (four decimals). iibench's
/// `((random() * max_price) + customerid) / 100.0` becomes
/// `below(max_price * 100) + customerid * 100` in these units.
pub const PRICE_SCALE: u32 = 10_000;

/// A client's table: the prefix of all its keys.
pub type TableId = u16;

/// One row of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// transactionid, iibench's auto-increment primary key.
    pub pk: u64,
    /// Seconds since the epoch (iibench's `datetime`, one value per insert statement).
    pub dateandtime: u64,
    pub cashregisterid: u32,
    pub customerid: u32,
    pub productid: u32,
    /// Price x [`PRICE_SCALE`].
    pub price: u32,
    pub data: Vec<u8>,
}

/// Bytes of a row value before its data.
const ROW_FIXED: usize = 8 + 4 * 4;

/// The row table's key: table id, primary key.
pub fn row_key(table: TableId, pk: u64) -> [u8; 10] {
    let mut k = [0u8; 10];
    k[..2].copy_from_slice(&table.to_be_bytes());
    k[2..].copy_from_slice(&pk.to_be_bytes());
    k
}

/// The table id and primary key of a row key.
pub fn decode_row_key(k: &[u8]) -> Result<(TableId, u64)> {
    let Ok(k) = <[u8; 10]>::try_from(k) else { bail!("row key of {} bytes, not 10", k.len()) };
    Ok((u16::from_be_bytes([k[0], k[1]]), u64::from_be_bytes(k[2..].try_into().unwrap_or_default())))
}

/// The first key of `table` in any family.
pub fn table_start(table: TableId) -> Vec<u8> {
    table.to_be_bytes().to_vec()
}

/// The first key past `table` in any family (`None` past the last table id).
pub fn table_end(table: TableId) -> Option<Vec<u8>> {
    table.checked_add(1).map(|t| t.to_be_bytes().to_vec())
}

/// A row's value: dateandtime, cashregisterid, customerid, productid, price, then data.
pub fn row_value(r: &Row) -> Vec<u8> {
    let mut v = Vec::with_capacity(ROW_FIXED + r.data.len());
    v.extend_from_slice(&r.dateandtime.to_be_bytes());
    for n in [r.cashregisterid, r.customerid, r.productid, r.price] {
        v.extend_from_slice(&n.to_be_bytes());
    }
    v.extend_from_slice(&r.data);
    v
}

/// The row stored under primary key `pk` with value `v`.
pub fn decode_row(pk: u64, v: &[u8]) -> Result<Row> {
    if v.len() < ROW_FIXED {
        bail!("row {pk}: value of {} bytes, shorter than its {ROW_FIXED} fixed bytes", v.len());
    }
    let u32_at = |i: usize| u32::from_be_bytes(v[i..i + 4].try_into().unwrap_or_default());
    Ok(Row {
        pk,
        dateandtime: u64::from_be_bytes(v[..8].try_into().unwrap_or_default()),
        cashregisterid: u32_at(8),
        customerid: u32_at(12),
        productid: u32_at(16),
        price: u32_at(20),
        data: v[ROW_FIXED..].to_vec(),
    })
}

/// The three secondary indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Index {
    /// (price, customerid, pk)
    Market,
    /// (cashregisterid, price, customerid, pk)
    Register,
    /// (price, dateandtime, customerid, pk)
    Pdc,
}

impl Index {
    pub const ALL: [Self; 3] = [Self::Market, Self::Register, Self::Pdc];

    /// iibench's index name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Market => "marketsegment",
            Self::Register => "registersegment",
            Self::Pdc => "pdc",
        }
    }

    /// The index key of `r` in `table`.
    pub fn key(self, table: TableId, r: &Row) -> Vec<u8> {
        let mut k = Vec::with_capacity(30);
        k.extend_from_slice(&table.to_be_bytes());
        match self {
            Self::Market => {
                k.extend_from_slice(&r.price.to_be_bytes());
                k.extend_from_slice(&r.customerid.to_be_bytes());
            }
            Self::Register => {
                k.extend_from_slice(&r.cashregisterid.to_be_bytes());
                k.extend_from_slice(&r.price.to_be_bytes());
                k.extend_from_slice(&r.customerid.to_be_bytes());
            }
            Self::Pdc => {
                k.extend_from_slice(&r.price.to_be_bytes());
                k.extend_from_slice(&r.dateandtime.to_be_bytes());
                k.extend_from_slice(&r.customerid.to_be_bytes());
            }
        }
        k.extend_from_slice(&r.pk.to_be_bytes());
        k
    }

    /// The length of this index's keys.
    pub fn key_len(self) -> usize {
        match self {
            Self::Market => 2 + 4 + 4 + 8,
            Self::Register => 2 + 4 + 4 + 4 + 8,
            Self::Pdc => 2 + 4 + 8 + 4 + 8,
        }
    }

    /// The table id and primary key an index key points to.
    pub fn decode(self, k: &[u8]) -> Result<(TableId, u64)> {
        if k.len() != self.key_len() {
            bail!("{} key of {} bytes, not {}", self.name(), k.len(), self.key_len());
        }
        let pk = u64::from_be_bytes(k[k.len() - 8..].try_into().unwrap_or_default());
        Ok((u16::from_be_bytes([k[0], k[1]]), pk))
    }

    /// Where a query on this index starts in `table`: iibench's `WHERE price >= P` (marketsegment,
    /// pdc, P drawn as a row's price is) or `WHERE cashregisterid > C` (registersegment).
    pub fn query_start(self, table: TableId, rng: &mut Rng) -> Vec<u8> {
        let mut k = table.to_be_bytes().to_vec();
        let first = match self {
            Self::Market | Self::Pdc => {
                let customerid = rng.below(u64::from(CUSTOMERS)) as u32;
                price(rng, customerid)
            }
            Self::Register => rng.below(u64::from(CASHREGISTERS)) as u32 + 1,
        };
        k.extend_from_slice(&first.to_be_bytes());
        k
    }
}

/// iibench's price for a row of `customerid`, in [`PRICE_SCALE`] units.
fn price(rng: &mut Rng, customerid: u32) -> u32 {
    let per_hundredth = PRICE_SCALE / 100;
    rng.below(u64::from(MAX_PRICE * per_hundredth)) as u32 + customerid * per_hundredth
}

/// A small, fast generator (SplitMix64): each thread has its own, seeded from the run's seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// Draws rows as iibench's `generate_cols` does; data is `data_min..=data_max` bytes of the
/// run's compressible value pool (`--compression_ratio` of it random, iibench's data_random_pct).
pub struct RowGen {
    pub rng: Rng,
    values: ValueGen,
    data_min: usize,
    data_max: usize,
}

impl RowGen {
    pub fn new(seed: u64, values: ValueGen, data_min: usize, data_max: usize) -> Self {
        Self { rng: Rng::new(seed), values, data_min, data_max: data_max.max(data_min) }
    }

    /// A new row with primary key `pk`, inserted at `dateandtime`.
    pub fn row(&mut self, pk: u64, dateandtime: u64) -> Row {
        let rng = &mut self.rng;
        let cashregisterid = rng.below(u64::from(CASHREGISTERS)) as u32;
        let productid = rng.below(u64::from(PRODUCTS)) as u32;
        let customerid = rng.below(u64::from(CUSTOMERS)) as u32;
        let price = price(rng, customerid);
        let len = self.data_min + rng.below((self.data_max - self.data_min + 1) as u64) as usize;
        let data = self.values.generate(len).to_vec();
        Row { pk, dateandtime, cashregisterid, customerid, productid, price, data }
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::valuegen::ValuePool;
    use super::*;

    fn rows(n: u64) -> Vec<Row> {
        let pool = ValuePool::new(20, 0.5);
        let mut g = RowGen::new(7, pool.generator(), 10, 20);
        (1..=n).map(|pk| g.row(pk, 1_700_000_000 + pk / 3)).collect()
    }

    #[test]
    fn rows_and_keys_round_trip_and_sort_by_primary_key() {
        let table: TableId = 258;
        let mut last = Vec::new();
        for r in rows(500) {
            let k = row_key(table, r.pk);
            assert_eq!(decode_row_key(&k).unwrap(), (table, r.pk));
            assert!(k.as_slice() > last.as_slice(), "row keys rise with the primary key");
            last = k.to_vec();
            assert_eq!(decode_row(r.pk, &row_value(&r)).unwrap(), r);
            for ix in Index::ALL {
                let key = ix.key(table, &r);
                assert_eq!(key.len(), ix.key_len());
                assert_eq!(ix.decode(&key).unwrap(), (table, r.pk));
                assert!(key.as_slice() >= table_start(table).as_slice());
                assert!(key.as_slice() < table_end(table).unwrap().as_slice());
            }
        }
        assert!(decode_row(1, &[0; 5]).is_err() && decode_row_key(&[0; 9]).is_err());
        assert!(Index::Pdc.decode(&[0; 10]).is_err());
        assert_eq!(table_end(TableId::MAX), None);
    }

    #[test]
    fn columns_are_drawn_in_iibench_ranges_and_index_keys_sort_by_their_columns() {
        let rs = rows(2000);
        for r in &rs {
            assert!(r.cashregisterid < CASHREGISTERS && r.productid < PRODUCTS && r.customerid < CUSTOMERS);
            // price = (random * 500 + customerid) / 100, in 1/10000 units.
            let base = r.customerid * 100;
            assert!(r.price >= base && r.price < base + MAX_PRICE * 100, "{r:?}");
            assert!((10..=20).contains(&r.data.len()));
        }
        let by = |ix: Index| {
            let mut keys: Vec<(Vec<u8>, &Row)> = rs.iter().map(|r| (ix.key(1, r), r)).collect();
            keys.sort_by(|a, b| a.0.cmp(&b.0));
            keys.into_iter().map(|(_, r)| r).collect::<Vec<_>>()
        };
        let m = by(Index::Market);
        assert!(m.windows(2).all(|w| (w[0].price, w[0].customerid) <= (w[1].price, w[1].customerid)));
        let reg = by(Index::Register);
        assert!(reg
            .windows(2)
            .all(|w| (w[0].cashregisterid, w[0].price) <= (w[1].cashregisterid, w[1].price)));
        let p = by(Index::Pdc);
        assert!(p.windows(2).all(|w| (w[0].price, w[0].dateandtime) <= (w[1].price, w[1].dateandtime)));
        // The primary key order is not an index's order: index entries land at random places.
        assert_ne!(m.iter().map(|r| r.pk).collect::<Vec<_>>(), rs.iter().map(|r| r.pk).collect::<Vec<_>>());
    }

    #[test]
    fn query_starts_are_in_range() {
        let mut rng = Rng::new(3);
        for _ in 0..1000 {
            let k = Index::Register.query_start(4, &mut rng);
            let c = u32::from_be_bytes(k[2..6].try_into().unwrap());
            assert!((1..=CASHREGISTERS).contains(&c) && k[..2] == [0, 4]);
            let k = Index::Market.query_start(4, &mut rng);
            let p = u32::from_be_bytes(k[2..6].try_into().unwrap());
            assert!(p < CUSTOMERS * 100 + MAX_PRICE * 100);
        }
        let mut a = Rng::new(1);
        assert!((0..1000).all(|_| a.below(7) < 7));
    }
}
