//! Approximate sizes of key ranges (RocksDB's `GetApproximateSizes`): how many bytes of files a
//! range of keys occupies, from the file ranges in the current version and the table indexes
//! (one index seek per range end in the files a range cuts), never by reading data blocks.
//! Memtables are not counted, as in RocksDB's default.

use std::ops::Range;

use super::family::{ColumnFamily, Family};
use super::Db;
use crate::error::Result;
use crate::key;
use crate::version::version::Version;

impl Db {
    /// For each `start..end` key range (end exclusive), the approximate bytes its keys take on
    /// disk: table bytes, plus the range's share of the live bytes in blob files (values stored
    /// apart), in proportion to its share of the table bytes. Unflushed writes are not counted.
    ///
    /// # Errors
    /// `Io` or `Corruption` when a table whose range a key range cuts cannot be opened.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use strata::{Db, Options};
    /// let db = Db::open(dir.path(), Options::default())?;
    /// for i in 0..2000u32 {
    ///     db.put(format!("k{i:05}"), [7u8; 200])?;
    /// }
    /// db.flush()?;
    /// let sizes = db.approximate_sizes(&[b"k00000".as_slice()..b"k01000", b"x"..b"z"])?;
    /// assert!(sizes[0] > 0 && sizes[1] == 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn approximate_sizes<K: AsRef<[u8]>>(&self, ranges: &[Range<K>]) -> Result<Vec<u64>> {
        self.approximate_sizes_in(&self.inner.default, ranges)
    }

    /// [`Db::approximate_sizes`] in column family `cf`.
    pub fn approximate_sizes_cf<K: AsRef<[u8]>>(
        &self,
        cf: &ColumnFamily,
        ranges: &[Range<K>],
    ) -> Result<Vec<u64>> {
        self.approximate_sizes_in(super::family_api::live(cf)?, ranges)
    }

    fn approximate_sizes_in<K: AsRef<[u8]>>(&self, family: &Family, ranges: &[Range<K>]) -> Result<Vec<u64>> {
        let version = family.super_version.load().version.clone();
        let table_total: u64 = (0..version.files.len()).map(|l| version.level_bytes(l)).sum();
        let blob_live: u64 =
            version.blob_files.values().map(|b| b.meta.file_size.saturating_sub(b.garbage_bytes)).sum();
        ranges
            .iter()
            .map(|r| {
                let tables = self.table_bytes_between(&version, r.start.as_ref(), r.end.as_ref())?;
                let blob_share = if table_total == 0 {
                    0
                } else {
                    (u128::from(blob_live) * u128::from(tables) / u128::from(table_total)) as u64
                };
                Ok(tables + blob_share)
            })
            .collect()
    }

    /// Table bytes holding keys in `start..end`: whole files inside the range, and for files
    /// the range cuts, the distance between the data blocks where its ends would be.
    fn table_bytes_between(&self, version: &Version, start: &[u8], end: &[u8]) -> Result<u64> {
        if start >= end {
            return Ok(0);
        }
        let (start_ikey, end_ikey) = (key::seek_key(start, key::MAX_SEQ), key::seek_key(end, key::MAX_SEQ));
        let mut total = 0;
        for level in 0..version.files.len() {
            for file in version.overlapping(level, Some(start), Some(end)) {
                let (lo, hi) = (key::user_key(&file.smallest), key::user_key(&file.largest));
                if hi < end && lo >= start {
                    total += file.file_size;
                    continue;
                }
                let (from, to) = self.inner.table_cache.with_table(file.number, |t| {
                    let from = if lo >= start { 0 } else { t.approximate_offset_of(&start_ikey) };
                    let to = if hi < end { file.file_size } else { t.approximate_offset_of(&end_ikey) };
                    (from, to)
                })?;
                total += to.saturating_sub(from);
            }
        }
        Ok(total)
    }
}
