//! [`BenchDb`] for the real engine, `strata::Db`.
//!
//! Owns: translating [`EngineOptions`] into `strata::Options` (only where a flag was given, so
//! the engine's defaults stay the defaults) and each benchmark call into one engine call.
//! Must not: add work to the measured calls (no copies beyond what the engine API returns) or
//! second-guess option values; the engine validates them at open and names the bad one.

use anyhow::{anyhow, Context, Result};
use strata::{Compression, Db, Options, ReadOptions, WriteBatch, WriteOptions};

use super::engine::{BenchDb, EngineOptions, StatsKind};

/// A strata database opened for benchmarking.
pub struct StrataDb {
    db: Db,
}

impl StrataDb {
    /// Opens (or creates, unless `--use_existing_db`) the database at `o.path`.
    pub fn open(o: &EngineOptions) -> Result<Self> {
        let opts = options(o)?;
        let db =
            Db::open(&o.path, opts).with_context(|| format!("opening strata at {}", o.path.display()))?;
        Ok(Self { db })
    }
}

fn options(o: &EngineOptions) -> Result<Options> {
    let base = match &o.preset {
        Some(name) => Options::preset(name)?,
        None => Options::default(),
    };
    let mut opts = Options {
        // db_bench's --use_existing_db=1 fails on a missing database rather than benchmarking an
        // empty one.
        create_if_missing: !o.use_existing,
        error_if_exists: false,
        cache_size: o.cache_size,
        latency_histograms: o.statistics,
        ..base
    };
    opts.set_compression(Compression::parse(&o.compression)?);
    if let Some(bits) = o.bloom_bits {
        opts.bloom_bits_per_key = bits;
    }
    if let Some(v) = o.write_buffer_size {
        opts.write_buffer_size = v;
    }
    if let Some(v) = o.min_blob_size {
        opts.min_blob_size = v;
    }
    if let Some(v) = o.max_write_buffer_number {
        opts.max_write_buffer_number = v;
    }
    if let Some(v) = o.compaction_nice {
        opts.compaction_nice = v;
    }
    if let Some(v) = o.sync_gather_micros {
        opts.sync_gather_micros = v;
    }
    if let Some(v) = o.write_spin_micros {
        opts.write_spin_micros = v;
    }
    if let Some(v) = o.target_file_size {
        opts.target_file_size = v;
    }
    if let Some(v) = o.level0_compaction_trigger {
        opts.level0_compaction_trigger = v;
    }
    if let Some(v) = o.block_size {
        opts.block_size = v;
    }
    if let Some(v) = o.block_restart_interval {
        opts.block_restart_interval = v;
    }
    if let Some(name) = &o.merge_operator {
        let op = strata::merge::builtin(name).ok_or_else(|| {
            anyhow!("unknown --merge_operator {name:?} (strata has uint64add and stringappend)")
        })?;
        opts.merge_operator = Some(op);
    }
    if let Some(text) = &o.options {
        opts = opts.with_option_string(text).context("--options")?;
    }
    Ok(opts)
}

fn write_options(sync: bool, disable_wal: bool) -> WriteOptions {
    WriteOptions { sync, disable_wal }
}

impl BenchDb for StrataDb {
    fn put(&self, key: &[u8], value: &[u8], sync: bool, disable_wal: bool) -> Result<()> {
        Ok(self.db.put(&write_options(sync, disable_wal), key, value)?)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        // ReadOptions::new() holds no snapshot or bounds, so building one per call costs nothing.
        Ok(self.db.get(&ReadOptions::new(), key)?)
    }

    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        Ok(self.db.multi_get(&ReadOptions::new(), keys).into_iter().collect::<strata::Result<_>>()?)
    }

    fn delete(&self, key: &[u8], sync: bool, disable_wal: bool) -> Result<()> {
        Ok(self.db.delete(&write_options(sync, disable_wal), key)?)
    }

    fn merge(&self, key: &[u8], value: &[u8], sync: bool, disable_wal: bool) -> Result<()> {
        Ok(self.db.merge(&write_options(sync, disable_wal), key, value)?)
    }

    fn write_batch(&self, ops: &[(&[u8], &[u8])], sync: bool, disable_wal: bool) -> Result<()> {
        let mut batch = WriteBatch::new();
        for &(k, v) in ops {
            batch.put(k, v);
        }
        Ok(self.db.write(&write_options(sync, disable_wal), batch)?)
    }

    fn scan(&self, start: &[u8], n: usize, reverse: bool, f: &mut dyn FnMut(&[u8], &[u8])) -> Result<usize> {
        let mut it = self.db.iter(&ReadOptions::new())?;
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

    fn flush(&self) -> Result<()> {
        Ok(self.db.flush()?)
    }

    fn compact(&self) -> Result<()> {
        Ok(self.db.compact_range(None, None)?)
    }

    fn stats(&self, kind: StatsKind) -> String {
        let name = match kind {
            StatsKind::Stats => "strata.stats",
            StatsKind::LevelStats => "strata.levelstats",
        };
        self.db.property(name).unwrap_or_else(|| format!("({name} is not available)\n"))
    }
}

#[cfg(test)]
mod tests {
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
