//! [`BenchDb`] for the real engine, `strata::Db`.
//!
//! Owns: translating [`EngineOptions`] into `strata::Options` (only where a flag was given, so
//! the engine's defaults stay the defaults), by name through the engine's options table
//! (`Options::set`), and each benchmark call into one engine call.
//! Must not: add work to the measured calls (no copies beyond what the engine API returns) or
//! second-guess option values; the engine validates them at open and names the bad one.

use anyhow::{anyhow, Context, Result};
use strata::{ColumnFamily, Db, DbIterator, Options, ReadOptions, WriteBatch, WriteOptions};

use super::engine::{column_family_name, BenchDb, EngineOptions, StatsKind};

/// A strata database opened for benchmarking.
pub struct StrataDb {
    db: Db,
    /// `--num_column_families` handles, the default family first (db_bench's order and names).
    families: Vec<ColumnFamily>,
}

impl StrataDb {
    /// Opens (or creates, unless `--use_existing_db`) the database at `o.path`, with its
    /// `--num_column_families` families (created with it; an existing database must have them).
    pub fn open(o: &EngineOptions) -> Result<Self> {
        let opts = options(o)?;
        let names: Vec<String> = (1..o.num_column_families).map(column_family_name).collect();
        let named: Vec<(String, Options)> = names.iter().map(|n| (n.clone(), opts.clone())).collect();
        let db = Db::open_cf(&o.path, opts, named)
            .with_context(|| format!("opening strata at {}", o.path.display()))?;
        let mut families = vec![db.default_cf()];
        for name in &names {
            families.push(db.cf(name).with_context(|| format!("column family {name} did not open"))?);
        }
        Ok(Self { db, families })
    }

    /// The handle of family `cf`; an error, not a panic, for one that was not opened.
    fn family(&self, cf: usize) -> Result<&ColumnFamily> {
        self.families.get(cf).ok_or_else(|| {
            anyhow!("column family {cf} was not opened (--num_column_families={})", self.families.len())
        })
    }
}

/// Flushes `families` and waits until no compaction is pending (LinkBench's and the insert
/// benchmark's settle step).
pub fn settle<'a>(db: &Db, families: impl IntoIterator<Item = &'a ColumnFamily>) -> Result<()> {
    for cf in families {
        db.flush_cf(cf)?;
    }
    db.wait_for_compactions(None)?;
    Ok(())
}

/// The strata `Options` the flags ask for (also LinkBench's, which opens its own families).
pub fn options(o: &EngineOptions) -> Result<Options> {
    let base = match &o.preset {
        Some(name) => Options::preset(name)?,
        None => Options::default(),
    };
    // db_bench's --use_existing_db=1 fails on a missing database rather than benchmarking an
    // empty one.
    let mut opts = Options { create_if_missing: !o.use_existing, error_if_exists: false, ..base };
    for (flag, name, value) in option_flags(o) {
        if let Some(value) = value {
            opts.set(name, &value).with_context(|| format!("--{flag}"))?;
        }
    }
    if let Some(text) = &o.options {
        opts = opts.with_option_string(text).context("--options")?;
    }
    Ok(opts)
}

/// A flag's value as the options table reads it.
fn text<T: ToString>(v: Option<T>) -> Option<String> {
    v.map(|v| v.to_string())
}

/// The flags that are strata options, as (flag, the option's name or alias in the engine's
/// table, the value as text or `None` when the flag was not given). Every flag but
/// `--statistics` is spelled as the option's name or one of its aliases (db_bench's spelling).
fn option_flags(o: &EngineOptions) -> [(&'static str, &'static str, Option<String>); 16] {
    [
        ("cache_size", "cache_size", text(Some(o.cache_size))),
        ("statistics", "latency_histograms", text(Some(o.statistics))),
        ("compression_type", "compression_type", Some(o.compression.clone())),
        ("bloom_bits", "bloom_bits", text(o.bloom_bits)),
        (
            "optimize_filters_for_hits",
            "optimize_filters_for_hits",
            o.optimize_filters_for_hits.then(|| "true".to_string()),
        ),
        ("write_buffer_size", "write_buffer_size", text(o.write_buffer_size)),
        ("min_blob_size", "min_blob_size", text(o.min_blob_size)),
        ("max_write_buffer_number", "max_write_buffer_number", text(o.max_write_buffer_number)),
        ("compaction_nice", "compaction_nice", text(o.compaction_nice)),
        ("sync_gather_micros", "sync_gather_micros", text(o.sync_gather_micros)),
        ("write_spin_micros", "write_spin_micros", text(o.write_spin_micros)),
        ("target_file_size_base", "target_file_size_base", text(o.target_file_size)),
        (
            "level0_file_num_compaction_trigger",
            "level0_file_num_compaction_trigger",
            text(o.level0_compaction_trigger),
        ),
        ("block_size", "block_size", text(o.block_size)),
        ("block_restart_interval", "block_restart_interval", text(o.block_restart_interval)),
        ("merge_operator", "merge_operator", o.merge_operator.clone()),
    ]
}

fn write_options(sync: bool, disable_wal: bool) -> WriteOptions {
    WriteOptions { sync, disable_wal }
}

impl BenchDb for StrataDb {
    fn put(&self, key: &[u8], value: &[u8], sync: bool, disable_wal: bool) -> Result<()> {
        Ok(self.db.put_opt(&write_options(sync, disable_wal), key, value)?)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        // ReadOptions::new() holds no snapshot or bounds, so building one per call costs nothing.
        Ok(self.db.get(key)?)
    }

    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        Ok(self.db.multi_get(keys).into_iter().collect::<strata::Result<_>>()?)
    }

    fn delete(&self, key: &[u8], sync: bool, disable_wal: bool) -> Result<()> {
        Ok(self.db.delete_opt(&write_options(sync, disable_wal), key)?)
    }

    fn merge(&self, key: &[u8], value: &[u8], sync: bool, disable_wal: bool) -> Result<()> {
        Ok(self.db.merge_opt(&write_options(sync, disable_wal), key, value)?)
    }

    fn write_batch(&self, ops: &[(&[u8], &[u8])], sync: bool, disable_wal: bool) -> Result<()> {
        let mut batch = WriteBatch::new();
        for &(k, v) in ops {
            batch.put(k, v);
        }
        Ok(self.db.write_opt(&write_options(sync, disable_wal), batch)?)
    }

    fn scan(&self, start: &[u8], n: usize, reverse: bool, f: &mut dyn FnMut(&[u8], &[u8])) -> Result<usize> {
        scan_with(self.db.cursor(&ReadOptions::new())?, start, n, reverse, f)
    }

    fn flush(&self) -> Result<()> {
        for cf in &self.families {
            self.db.flush_cf(cf)?;
        }
        Ok(())
    }

    fn compact(&self) -> Result<()> {
        for cf in &self.families {
            self.db.compact_range_cf(cf, None, None)?;
        }
        Ok(())
    }

    fn stats(&self, kind: StatsKind) -> String {
        let name = match kind {
            StatsKind::Stats => "strata.stats",
            StatsKind::LevelStats => "strata.levelstats",
        };
        self.db.property(name).unwrap_or_else(|| format!("({name} is not available)\n"))
    }

    // Family 0 goes through the default-family calls, so one family measures what it did before
    // families existed.

    fn put_cf(&self, cf: usize, key: &[u8], value: &[u8], sync: bool, disable_wal: bool) -> Result<()> {
        if cf == 0 {
            return self.put(key, value, sync, disable_wal);
        }
        Ok(self.db.put_cf_opt(self.family(cf)?, &write_options(sync, disable_wal), key, value)?)
    }

    fn get_cf(&self, cf: usize, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if cf == 0 {
            return self.get(key);
        }
        Ok(self.db.get_cf_opt(self.family(cf)?, &ReadOptions::new(), key)?)
    }

    fn delete_cf(&self, cf: usize, key: &[u8], sync: bool, disable_wal: bool) -> Result<()> {
        if cf == 0 {
            return self.delete(key, sync, disable_wal);
        }
        Ok(self.db.delete_cf_opt(self.family(cf)?, &write_options(sync, disable_wal), key)?)
    }

    fn merge_cf(&self, cf: usize, key: &[u8], value: &[u8], sync: bool, disable_wal: bool) -> Result<()> {
        if cf == 0 {
            return self.merge(key, value, sync, disable_wal);
        }
        Ok(self.db.merge_cf_opt(self.family(cf)?, &write_options(sync, disable_wal), key, value)?)
    }

    fn scan_cf(
        &self,
        cf: usize,
        start: &[u8],
        n: usize,
        reverse: bool,
        f: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        if cf == 0 {
            return self.scan(start, n, reverse, f);
        }
        scan_with(self.db.cursor_cf(self.family(cf)?, &ReadOptions::new())?, start, n, reverse, f)
    }

    fn write_batch_cf(&self, ops: &[(usize, &[u8], &[u8])], sync: bool, disable_wal: bool) -> Result<()> {
        let mut batch = WriteBatch::new();
        for &(cf, k, v) in ops {
            batch.put_cf(self.family(cf)?, k, v);
        }
        Ok(self.db.write_opt(&write_options(sync, disable_wal), batch)?)
    }
}

/// Positions `it` at `start` as [`BenchDb::scan`] says and hands up to `n` entries to `f`.
fn scan_with(
    mut it: DbIterator,
    start: &[u8],
    n: usize,
    reverse: bool,
    f: &mut dyn FnMut(&[u8], &[u8]),
) -> Result<usize> {
    match (reverse, start.is_empty()) {
        (false, true) => it.seek_to_first(),
        (false, false) => it.seek(start),
        (true, true) => it.seek_to_last(),
        (true, false) => it.seek_for_prev(start),
    }
    let mut count = 0;
    while count < n && it.valid() {
        f(it.key(), it.value());
        count += 1;
        // Step only when another entry is wanted: n entries cost one seek and n - 1 steps.
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

#[cfg(test)]
mod tests {
    use strata::Compression;

    use super::*;

    #[test]
    fn a_preset_is_the_base_and_explicit_flags_override_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = EngineOptions::for_test(dir.path());
        o.preset = Some("low_memory".into());
        o.max_write_buffer_number = Some(4);
        let opts = options(&o).unwrap();
        let low = Options::preset("low_memory").unwrap();
        assert_eq!(opts.write_buffer_size, low.write_buffer_size);
        assert_eq!(opts.max_write_buffer_number, 4);
        assert_eq!(opts.cache_size, o.cache_size);

        o.preset = Some("fastest".into());
        assert!(options(&o).unwrap_err().to_string().contains("fastest"));
    }

    #[test]
    fn every_option_flag_names_an_option_of_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let o = EngineOptions::for_test(dir.path());
        for (flag, name, _) in option_flags(&o) {
            assert!(strata::options::table::lookup(name).is_some(), "--{flag}: {name}");
        }
        let mut o = EngineOptions::for_test(dir.path());
        (o.target_file_size, o.level0_compaction_trigger, o.bloom_bits) = (Some(1 << 20), Some(7), Some(12));
        (o.compression, o.statistics, o.merge_operator) = ("lz4".into(), true, Some("uint64add".into()));
        let opts = options(&o).unwrap();
        assert_eq!(
            (opts.target_file_size, opts.level0_compaction_trigger, opts.bloom_bits_per_key),
            (1 << 20, 7, 12)
        );
        assert_eq!(
            (opts.compression_for_level(0), opts.blob_compression),
            (Compression::Lz4, Compression::Lz4)
        );
        assert!(opts.latency_histograms && opts.merge_operator.is_some());

        o.merge_operator = Some("max".into());
        let err = format!("{:#}", options(&o).unwrap_err());
        assert!(err.starts_with("--merge_operator: ") && err.contains("\"max\""), "{err}");
    }

    #[test]
    fn the_options_string_is_applied_after_every_other_flag() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = EngineOptions::for_test(dir.path());
        o.compaction_nice = Some(3);
        o.options = Some("compaction_nice=12; compaction_sched_idle=true".into());
        let opts = options(&o).unwrap();
        assert_eq!(opts.compaction_nice, 12);
        assert!(opts.compaction_sched_idle);

        o.options = Some("compaction_nice=30".into());
        let err = format!("{:#}", options(&o).unwrap_err());
        assert!(err.contains("--options") && err.contains("compaction_nice"), "{err}");
    }
}
