//! [`BenchDb`] for RocksDB, through the rust-rocksdb crate (cargo feature `rocksdb`).
//!
//! Owns: translating [`EngineOptions`] into RocksDB options the way db_bench does (the same flag
//! means the same setting), and each benchmark call into one RocksDB call. The crate builds
//! RocksDB 10.4.2 from source in release mode, so this is the RocksDB a Rust user gets, measured
//! by the same harness, key generator and histogram as strata.
//! Must not: tune RocksDB beyond what a db_bench flag asks for; `bench compare` passes
//! bench/rocksdb-tuning.flags to this engine exactly as it does to db_bench.

use anyhow::{anyhow, Context, Result};
use rocksdb::{
    BlockBasedOptions, Cache, DBCompressionType, MergeOperands, Options, ReadOptions, WriteBatch,
    WriteOptions, DB,
};

use super::engine::{BenchDb, EngineOptions, StatsKind};

/// A RocksDB database opened for benchmarking.
pub struct RocksDb {
    db: DB,
    /// db_bench's `--verify_checksum` default is on; reads here verify too, like strata's.
    read: ReadOptions,
}

impl RocksDb {
    /// Opens (or creates, unless `--use_existing_db`) the database at `o.path`.
    pub fn open(o: &EngineOptions) -> Result<Self> {
        let opts = options(o)?;
        let db =
            DB::open(&opts, &o.path).with_context(|| format!("opening RocksDB at {}", o.path.display()))?;
        let mut read = ReadOptions::default();
        read.set_verify_checksums(true);
        Ok(Self { db, read })
    }
}

/// Flushes every column family and waits until no compaction is pending (LinkBench's and the
/// insert benchmark's settle step).
pub(super) fn settle(db: &DB) -> Result<()> {
    let mut wait = rocksdb::WaitForCompactOptions::default();
    wait.set_flush(true);
    Ok(db.wait_for_compact(&wait)?)
}

pub(super) fn options(o: &EngineOptions) -> Result<Options> {
    let mut opts = Options::default();
    opts.create_if_missing(!o.use_existing);
    // db_bench's --max_background_compactions=2 --max_background_flushes=1 (the tuning flags).
    opts.set_max_background_jobs(3);
    if o.statistics {
        opts.enable_statistics();
    }
    opts.set_compression_type(compression(&o.compression)?);
    let mut table = BlockBasedOptions::default();
    table.set_block_cache(&Cache::new_lru_cache(o.cache_size));
    if let Some(bits) = o.bloom_bits {
        table.set_bloom_filter(f64::from(bits), false);
    }
    if let Some(v) = o.block_size {
        table.set_block_size(v);
    }
    if o.cache_index_and_filter_blocks {
        // Charged to the cache like strata's, so a memory limit holds for both engines.
        table.set_cache_index_and_filter_blocks(true);
        table.set_pin_l0_filter_and_index_blocks_in_cache(true);
    }
    if let Some(v) = o.block_restart_interval {
        table.set_block_restart_interval(i32::try_from(v).context("--block_restart_interval is too large")?);
    }
    opts.set_block_based_table_factory(&table);
    opts.set_optimize_filters_for_hits(o.optimize_filters_for_hits);
    if let Some(v) = o.write_buffer_size {
        opts.set_write_buffer_size(v);
    }
    if let Some(v) = o.max_write_buffer_number {
        opts.set_max_write_buffer_number(i32::try_from(v).context("--max_write_buffer_number is too large")?);
    }
    if let Some(v) = o.target_file_size {
        opts.set_target_file_size_base(v);
    }
    if let Some(v) = o.level0_compaction_trigger {
        opts.set_level_zero_file_num_compaction_trigger(
            i32::try_from(v).context("--level0_file_num_compaction_trigger is too large")?,
        );
    }
    if let Some(name) = &o.merge_operator {
        match name.as_str() {
            "uint64add" | "UInt64AddOperator" => opts.set_merge_operator_associative("uint64add", uint64add),
            other => {
                return Err(anyhow!(
                    "unknown --merge_operator {other:?} for rocksdb (this engine has uint64add)"
                ))
            }
        }
    }
    Ok(opts)
}

fn compression(name: &str) -> Result<DBCompressionType> {
    Ok(match name {
        "none" => DBCompressionType::None,
        "snappy" => DBCompressionType::Snappy,
        "lz4" => DBCompressionType::Lz4,
        "zstd" => DBCompressionType::Zstd,
        other => return Err(anyhow!("unknown compression {other:?} for rocksdb (none, snappy, lz4, zstd)")),
    })
}

/// RocksDB's `UInt64AddOperator`: 8-byte little-endian counters; a malformed operand counts as 0.
fn uint64add(_key: &[u8], existing: Option<&[u8]>, operands: &MergeOperands) -> Option<Vec<u8>> {
    let decode = |b: &[u8]| <[u8; 8]>::try_from(b).map(u64::from_le_bytes).unwrap_or(0);
    let mut sum = existing.map_or(0, decode);
    for op in operands {
        sum = sum.wrapping_add(decode(op));
    }
    Some(sum.to_le_bytes().to_vec())
}

pub(super) fn write_options(sync: bool, disable_wal: bool) -> WriteOptions {
    let mut w = WriteOptions::default();
    w.set_sync(sync);
    w.disable_wal(disable_wal);
    w
}

impl BenchDb for RocksDb {
    fn put(&self, key: &[u8], value: &[u8], sync: bool, disable_wal: bool) -> Result<()> {
        Ok(self.db.put_opt(key, value, &write_options(sync, disable_wal))?)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        // A pinned read plus one copy: the same work as strata's `get`, which returns a `Vec`.
        Ok(self.db.get_pinned_opt(key, &self.read)?.map(|v| v.to_vec()))
    }

    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        // rocksdb_multi_get: RocksDB's MultiGet over a vector of keys, what db_bench's
        // multireadrandom calls unless --multiread_batched.
        Ok(self.db.multi_get_opt(keys, &self.read).into_iter().collect::<Result<_, _>>()?)
    }

    fn delete(&self, key: &[u8], sync: bool, disable_wal: bool) -> Result<()> {
        Ok(self.db.delete_opt(key, &write_options(sync, disable_wal))?)
    }

    fn merge(&self, key: &[u8], value: &[u8], sync: bool, disable_wal: bool) -> Result<()> {
        Ok(self.db.merge_opt(key, value, &write_options(sync, disable_wal))?)
    }

    fn write_batch(&self, ops: &[(&[u8], &[u8])], sync: bool, disable_wal: bool) -> Result<()> {
        let mut batch = WriteBatch::default();
        for &(k, v) in ops {
            batch.put(k, v);
        }
        Ok(self.db.write_opt(batch, &write_options(sync, disable_wal))?)
    }

    fn scan(&self, start: &[u8], n: usize, reverse: bool, f: &mut dyn FnMut(&[u8], &[u8])) -> Result<usize> {
        let mut read = ReadOptions::default();
        read.set_verify_checksums(true);
        let mut it = self.db.raw_iterator_opt(read);
        match (reverse, start.is_empty()) {
            (false, true) => it.seek_to_first(),
            (false, false) => it.seek(start),
            (true, true) => it.seek_to_last(),
            (true, false) => it.seek_for_prev(start),
        }
        let mut count = 0;
        while count < n {
            let (Some(k), Some(v)) = (it.key(), it.value()) else { break };
            f(k, v);
            count += 1;
            if count < n {
                if reverse {
                    it.prev();
                } else {
                    it.next();
                }
            }
        }
        it.status()?;
        Ok(count)
    }

    fn flush(&self) -> Result<()> {
        Ok(self.db.flush()?)
    }

    fn compact(&self) -> Result<()> {
        self.db.compact_range::<&[u8], &[u8]>(None, None);
        Ok(())
    }

    fn stats(&self, kind: StatsKind) -> String {
        let name = match kind {
            StatsKind::Stats => "rocksdb.stats",
            StatsKind::LevelStats => "rocksdb.levelstats",
        };
        match self.db.property_value(name) {
            Ok(Some(s)) => s,
            Ok(None) => format!("({name} is not available)\n"),
            Err(e) => format!("({name}: {e})\n"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_scan_and_merge() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = EngineOptions::for_test(dir.path());
        o.merge_operator = Some("uint64add".into());
        let db = RocksDb::open(&o).unwrap();
        db.put(b"a", b"1", false, false).unwrap();
        db.put(b"b", b"2", false, false).unwrap();
        db.merge(b"c", &3u64.to_le_bytes(), false, false).unwrap();
        db.merge(b"c", &4u64.to_le_bytes(), false, false).unwrap();
        db.merge(b"c", b"bad", false, false).unwrap();
        assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
        assert_eq!(db.get(b"c").unwrap(), Some(7u64.to_le_bytes().to_vec()));
        db.delete(b"a", false, false).unwrap();
        db.flush().unwrap();
        db.compact().unwrap();
        let mut seen = Vec::new();
        assert_eq!(db.scan(b"", 10, true, &mut |k, _| seen.push(k.to_vec())).unwrap(), 2);
        assert_eq!(seen, [b"c".to_vec(), b"b".to_vec()]);
    }
}
