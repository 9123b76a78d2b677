//! The end-of-run check: every row has its three index entries, built from its own columns,
//! and every index entry points to an existing row whose columns give that very key.
//!
//! How: first by sequential scans only. Per index, the rows are scanned and the 64-bit hash of
//! the entry each row should have is collected, then the index's entries are scanned and
//! hashed; the two sorted lists are equal when the index holds exactly the rows' entries (a
//! difference that hashes alike is a 2^-64 chance). That costs 16 bytes per row for one index
//! at a time, and minutes less than reading entries back by key on a database larger than the
//! cache. Only when it fails does the exact check run to name the mismatches: the rows are
//! scanned in key order a chunk at a time and each row's three entries are read back by key (a
//! missing one is a mismatch); then each index's entries are counted. Index keys end with the
//! table id and primary key, so a table's rows have distinct entries: when all are present and
//! an index holds exactly as many entries as there are rows, it holds nothing else. Only when
//! that fails are the index entries walked one by one, each row read back, to name the extra
//! ones.
//!
//! Owns: comparing what [`Tables`] holds once no one writes. Must not: write or print.

use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

use anyhow::Result;

use super::schema::{self, Index};
use super::store::{Family, Tables};
use super::table::scan_chunks;

/// Entries read per chunk.
const CHUNK: usize = 1000;
/// How many mismatches the report keeps to print.
const KEEP: usize = 10;

/// What the check found.
#[derive(Debug, Default)]
pub struct Report {
    pub rows: u64,
    /// Entries per index, in [`Index::ALL`] order.
    pub entries: [u64; 3],
    /// Index entries a row should have and that are not there.
    pub missing: u64,
    /// Index entries with no row, or whose row's columns give another key.
    pub extra: u64,
    /// Row or index keys or values that do not decode.
    pub undecodable: u64,
    /// The first few mismatches, described.
    pub first: Vec<String>,
}

impl Report {
    pub fn mismatches(&self) -> u64 {
        self.missing + self.extra + self.undecodable
    }

    pub fn ok(&self) -> bool {
        self.mismatches() == 0 && self.entries.iter().all(|&e| e == self.rows)
    }

    fn note(&mut self, what: String) {
        if self.first.len() < KEEP {
            self.first.push(what);
        }
    }

    /// The checker's lines: the verdict, then the first mismatches.
    pub fn text(&self) -> String {
        let mut s = format!(
            "checker: {} rows; index entries: marketsegment {}, registersegment {}, pdc {}; \
             {} missing, {} extra, {} undecodable: {} mismatches\n",
            self.rows,
            self.entries[0],
            self.entries[1],
            self.entries[2],
            self.missing,
            self.extra,
            self.undecodable,
            self.mismatches()
        );
        for m in &self.first {
            s.push_str(&format!("  mismatch: {m}\n"));
        }
        s
    }
}

/// Checks every table in `tables`; call it only when no thread writes.
pub fn check(tables: &dyn Tables) -> Result<Report> {
    if let Some(r) = check_by_hashes(tables)? {
        return Ok(r);
    }
    check_by_keys(tables)
}

/// The sequential check: `Some(report)` of a clean database, `None` when any index differs
/// from its rows or a row does not decode (the exact check then says how).
fn check_by_hashes(tables: &dyn Tables) -> Result<Option<Report>> {
    let hasher = BuildHasherDefault::<DefaultHasher>::default();
    let mut r = Report::default();
    for (i, ix) in Index::ALL.into_iter().enumerate() {
        let mut expected = Vec::new();
        let mut undecodable = false;
        scan_chunks(tables, Family::Rows, CHUNK, &mut |chunk| {
            for (k, v) in chunk {
                match schema::decode_row_key(k).and_then(|(t, pk)| Ok((t, schema::decode_row(pk, v)?))) {
                    Ok((table, row)) => expected.push(hasher.hash_one(ix.key(table, &row))),
                    Err(_) => undecodable = true,
                }
            }
            Ok(())
        })?;
        let mut found = Vec::with_capacity(expected.len());
        tables.scan(Family::of(ix), &[], None, &mut |k, _| {
            found.push(hasher.hash_one(k));
            Ok(true)
        })?;
        expected.sort_unstable();
        found.sort_unstable();
        if undecodable || expected != found {
            return Ok(None);
        }
        r.rows = expected.len() as u64;
        r.entries[i] = found.len() as u64;
    }
    Ok(Some(r))
}

/// The exact check, entry by entry, that names what differs.
fn check_by_keys(tables: &dyn Tables) -> Result<Report> {
    let mut r = Report::default();
    scan_chunks(tables, Family::Rows, CHUNK, &mut |chunk| {
        for (k, v) in chunk {
            r.rows += 1;
            let row = schema::decode_row_key(k).and_then(|(t, pk)| Ok((t, schema::decode_row(pk, v)?)));
            let (table, row) = match row {
                Ok(x) => x,
                Err(e) => {
                    r.undecodable += 1;
                    r.note(format!("row key {k:02x?}: {e}"));
                    continue;
                }
            };
            for ix in Index::ALL {
                if tables.get(Family::of(ix), &ix.key(table, &row))?.is_none() {
                    r.missing += 1;
                    r.note(format!("table {table} row {} has no {} entry", row.pk, ix.name()));
                }
            }
        }
        Ok(())
    })?;
    for (i, ix) in Index::ALL.into_iter().enumerate() {
        let mut n = 0;
        tables.scan(Family::of(ix), &[], None, &mut |_, _| {
            n += 1;
            Ok(true)
        })?;
        r.entries[i] = n;
    }
    if !r.ok() {
        for ix in Index::ALL {
            find_extra(tables, ix, &mut r)?;
        }
    }
    Ok(r)
}

/// Every entry of `ix` whose row is missing or gives another key.
fn find_extra(tables: &dyn Tables, ix: Index, r: &mut Report) -> Result<()> {
    scan_chunks(tables, Family::of(ix), CHUNK, &mut |chunk| {
        for (k, _) in chunk {
            let (table, pk) = match ix.decode(k) {
                Ok(x) => x,
                Err(e) => {
                    r.undecodable += 1;
                    r.note(format!("{} key {k:02x?}: {e}", ix.name()));
                    continue;
                }
            };
            let row = tables.get(Family::Rows, &schema::row_key(table, pk))?;
            let why = match row.map(|v| schema::decode_row(pk, &v)) {
                None => "points to no row",
                // An undecodable row was counted when the rows were scanned.
                Some(Err(_)) => continue,
                Some(Ok(row)) if ix.key(table, &row) != *k => "does not match its row's columns",
                Some(Ok(_)) => continue,
            };
            r.extra += 1;
            r.note(format!("{} entry of table {table} for row {pk} {why}", ix.name()));
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::super::super::valuegen::ValuePool;
    use super::super::schema::{Row, RowGen};
    use super::super::store::Batch;
    use super::super::store_strata::StrataTables;
    use super::super::table::Table;
    use super::*;

    fn rows(from: u64, n: u64) -> Vec<Row> {
        let mut g = RowGen::new(5, ValuePool::new(20, 0.5).generator(), 10, 20);
        (from..from + n).map(|pk| g.row(pk, 1_700_000_000)).collect()
    }

    #[test]
    fn the_checker_finds_planted_mismatches() {
        let dir = tempfile::tempdir().unwrap();
        let t = StrataTables::open(dir.path(), strata::Options::default(), strata::WriteOptions::default())
            .unwrap();
        let mut b = Batch::new();
        // Table 0 with indexes from the start, table 1 loaded bare and indexed after (l.x).
        Table::new(&t, 0).insert(&mut b, &rows(1, 2500), true).unwrap();
        Table::new(&t, 1).insert(&mut b, &rows(1, 1200), false).unwrap();
        let bare = check(&t).unwrap();
        assert_eq!((bare.rows, bare.entries, bare.missing), (3700, [2500; 3], 3600), "{}", bare.text());
        assert!(!bare.ok());
        let mut from = Some(0);
        while let Some(pk) = from {
            from = Table::new(&t, 1).index_chunk(pk, &mut b).unwrap().1;
        }
        let good = check(&t).unwrap();
        assert!(good.ok(), "{}", good.text());
        assert_eq!((good.rows, good.entries), (3700, [3700; 3]));
        assert!(good.text().contains(" 0 mismatches\n"));
        let exact = check_by_keys(&t).unwrap();
        assert!(exact.ok() && exact.rows == good.rows && exact.entries == good.entries, "{}", exact.text());

        // Plant: a pdc entry deleted, a marketsegment entry for a row that is not there, and a
        // row whose price changed under its entries (all three stale, its three missing).
        let r = &rows(1, 10)[4];
        let (mut changed, mut ghost) = (r.clone(), r.clone());
        changed.price += 1;
        ghost.pk = 999_999;
        b.clear();
        b.delete(Family::Pdc, &Index::Pdc.key(0, &rows(1, 10)[7]));
        b.put(Family::Market, &Index::Market.key(1, &ghost), &[]);
        b.put(Family::Rows, &schema::row_key(0, r.pk), &schema::row_value(&changed));
        t.write(&b).unwrap();
        assert!(check_by_hashes(&t).unwrap().is_none(), "the sequential check sees the damage");
        let bad = check(&t).unwrap();
        assert_eq!((bad.missing, bad.extra, bad.undecodable), (4, 4, 0), "{}", bad.text());
        assert_eq!(bad.entries, [3701, 3700, 3699]);
        assert!(!bad.ok() && bad.mismatches() == 8);
        let text = bad.text();
        assert!(text.contains("table 0 row 8 has no pdc entry"), "{text}");
        assert!(text.contains("marketsegment entry of table 1 for row 999999 points to no row"), "{text}");
        assert!(text.contains("pdc entry of table 0 for row 5 does not match its row's columns"), "{text}");
    }
}
