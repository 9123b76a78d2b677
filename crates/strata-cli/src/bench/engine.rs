//! The seam between the workloads and a storage engine.
//!
//! Owns: the [`BenchDb`] trait the workloads call, the [`EngineOptions`] derived from the flags,
//! and the choice of engine (`--engine`). Keeping the engine behind this trait lets the harness
//! build and be tested while the engine's `Db` API is still being written.
//! Must not: know about benchmarks, timing or output; an engine only stores and returns bytes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Result};

use super::flags::Flags;

/// Which statistics text to return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatsKind {
    /// The general statistics (`strata.stats`), for the `stats` benchmark.
    Stats,
    /// Files and bytes per level (`strata.levelstats`), for `levelstats`.
    LevelStats,
}

/// What a benchmark needs from an engine. Implementations are shared by all benchmark threads.
pub trait BenchDb: Send + Sync {
    fn put(&self, key: &[u8], value: &[u8], sync: bool, disable_wal: bool) -> Result<()>;
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Point reads of `keys` in one call (multireadrandom). Engines without such a call read
    /// the keys one by one.
    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        keys.iter().map(|k| self.get(k)).collect()
    }
    fn delete(&self, key: &[u8], sync: bool, disable_wal: bool) -> Result<()>;
    fn merge(&self, key: &[u8], value: &[u8], sync: bool, disable_wal: bool) -> Result<()>;
    /// Writes all `ops` as puts, atomically (for `--batch_size`).
    fn write_batch(&self, ops: &[(&[u8], &[u8])], sync: bool, disable_wal: bool) -> Result<()>;
    /// Positions a fresh iterator at `start` (forward: first key >= start; reverse: last key
    /// <= start; empty start: the first or last key) and hands up to `n` entries to `f`.
    /// Returns how many entries were handed over.
    fn scan(&self, start: &[u8], n: usize, reverse: bool, f: &mut dyn FnMut(&[u8], &[u8])) -> Result<usize>;
    fn flush(&self) -> Result<()>;
    fn compact(&self) -> Result<()>;
    fn stats(&self, kind: StatsKind) -> String;

    // Column families (`--num_column_families`): family 0 is the default one, the one the
    // methods above use; 1.. are the others. Engines without families keep these defaults, which
    // `open` never lets see a family other than 0.

    fn put_cf(&self, cf: usize, key: &[u8], value: &[u8], sync: bool, disable_wal: bool) -> Result<()> {
        only_default(cf)?;
        self.put(key, value, sync, disable_wal)
    }
    fn get_cf(&self, cf: usize, key: &[u8]) -> Result<Option<Vec<u8>>> {
        only_default(cf)?;
        self.get(key)
    }
    fn delete_cf(&self, cf: usize, key: &[u8], sync: bool, disable_wal: bool) -> Result<()> {
        only_default(cf)?;
        self.delete(key, sync, disable_wal)
    }
    fn merge_cf(&self, cf: usize, key: &[u8], value: &[u8], sync: bool, disable_wal: bool) -> Result<()> {
        only_default(cf)?;
        self.merge(key, value, sync, disable_wal)
    }
    /// [`BenchDb::scan`] in family `cf`.
    fn scan_cf(
        &self,
        cf: usize,
        start: &[u8],
        n: usize,
        reverse: bool,
        f: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        only_default(cf)?;
        self.scan(start, n, reverse, f)
    }
    /// Writes every `(family, key, value)` of `ops` as puts, atomically.
    fn write_batch_cf(&self, _ops: &[(usize, &[u8], &[u8])], _sync: bool, _disable_wal: bool) -> Result<()> {
        bail!("this engine has no column families")
    }
}

/// The error of an engine without column families asked for another one than the default.
fn only_default(cf: usize) -> Result<()> {
    if cf != 0 {
        bail!("this engine has no column families (asked for family {cf})");
    }
    Ok(())
}

/// The built-in engines that take `--num_column_families` > 1.
const FAMILY_ENGINES: &[&str] = &["strata"];

/// Refuses `--num_column_families` > 1 for an engine without column families.
pub fn check_families(engine: &str, families: usize) -> Result<()> {
    if families > 1 && !FAMILY_ENGINES.contains(&engine) {
        bail!(
            "--num_column_families={families}: the {engine} engine has no column families here \
             (strata has; for RocksDB run its db_bench, which takes the same flag)"
        );
    }
    Ok(())
}

/// db_bench's name of column family `i`: `default`, then `column_family_name_000001`...
pub fn column_family_name(i: usize) -> String {
    if i == 0 {
        "default".to_string()
    } else {
        format!("column_family_name_{i:06}")
    }
}

/// Engine settings taken from the flags; `None` means "the engine's default".
#[derive(Debug, Clone, PartialEq)]
pub struct EngineOptions {
    pub path: PathBuf,
    /// Open an existing database (`--use_existing_db`) instead of destroying and recreating it.
    pub use_existing: bool,
    /// `--sync`: the durability every write of this run asks for. Writes still pass `sync` per
    /// call; this is for engines whose durability is chosen when the database is opened (LMDB's
    /// `MDB_NOSYNC`), so they can open in the mode the run measures.
    pub sync: bool,
    pub cache_size: usize,
    pub bloom_bits: Option<u32>,
    /// `--optimize_filters_for_hits`: no bloom filters on the last level.
    pub optimize_filters_for_hits: bool,
    /// `--cache_index_and_filter_blocks` (RocksDB only; strata always charges them).
    pub cache_index_and_filter_blocks: bool,
    pub write_buffer_size: Option<usize>,
    pub compression: String,
    pub min_blob_size: Option<usize>,
    pub preset: Option<String>,
    /// strata only: `key=value;...` applied last (`Options::with_option_string`).
    pub options: Option<String>,
    pub merge_operator: Option<String>,
    pub max_write_buffer_number: Option<usize>,
    pub target_file_size: Option<u64>,
    pub level0_compaction_trigger: Option<usize>,
    pub block_size: Option<usize>,
    pub block_restart_interval: Option<usize>,
    /// strata only: `Options::compaction_nice`.
    pub compaction_nice: Option<u8>,
    /// strata only: `Options::sync_gather_micros`.
    pub sync_gather_micros: Option<u32>,
    /// strata only: `Options::write_spin_micros`.
    pub write_spin_micros: Option<u32>,
    /// `--statistics`: strata's `Options::latency_histograms`, RocksDB's `enable_statistics`.
    pub statistics: bool,
    /// `--num_column_families`: how many families the engine opens (creating them as needed).
    pub num_column_families: usize,
}

impl EngineOptions {
    /// Engine defaults for a fresh database at `path` (for tests of the engines).
    #[cfg(test)]
    pub fn for_test(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            use_existing: false,
            sync: false,
            cache_size: 8 << 20,
            bloom_bits: Some(10),
            optimize_filters_for_hits: false,
            cache_index_and_filter_blocks: false,
            write_buffer_size: None,
            compression: "none".into(),
            min_blob_size: None,
            preset: None,
            options: None,
            merge_operator: None,
            max_write_buffer_number: None,
            target_file_size: None,
            level0_compaction_trigger: None,
            block_size: None,
            block_restart_interval: None,
            compaction_nice: None,
            sync_gather_micros: None,
            write_spin_micros: None,
            statistics: false,
            num_column_families: 1,
        }
    }

    /// The options for the database at `path`.
    pub fn from_flags(f: &Flags, path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            use_existing: f.use_existing_db,
            sync: f.sync,
            cache_size: f.cache_size as usize,
            bloom_bits: u32::try_from(f.bloom_bits).ok(),
            optimize_filters_for_hits: f.optimize_filters_for_hits,
            cache_index_and_filter_blocks: f.cache_index_and_filter_blocks,
            write_buffer_size: f.write_buffer_size.map(|v| v as usize),
            compression: f.compression_type.clone(),
            min_blob_size: f.min_blob_size,
            preset: f.preset.clone(),
            options: f.options.clone(),
            merge_operator: f.merge_operator.clone(),
            max_write_buffer_number: f.max_write_buffer_number,
            target_file_size: f.target_file_size_base,
            level0_compaction_trigger: f.level0_file_num_compaction_trigger,
            block_size: f.block_size,
            block_restart_interval: f.block_restart_interval,
            compaction_nice: f.compaction_nice,
            sync_gather_micros: f.sync_gather_micros,
            write_spin_micros: f.write_spin_micros,
            statistics: f.statistics,
            num_column_families: f.num_column_families,
        }
    }
}

/// The engines this binary was built with; the optional ones need their cargo feature.
pub const ENGINES: &[&str] = &[
    "strata",
    "memory",
    #[cfg(feature = "rocksdb")]
    "rocksdb",
    #[cfg(feature = "heed")]
    "heed",
    #[cfg(feature = "fjall")]
    "fjall",
    #[cfg(feature = "redb")]
    "redb",
    #[cfg(feature = "sled")]
    "sled",
];

/// Optional engines; each one's cargo feature has the engine's name.
const OPTIONAL: &[&str] = &["rocksdb", "heed", "fjall", "redb", "sled"];

/// Opens the engine named by `--engine`. With `fresh`, whatever is at the path is removed first.
pub fn open(engine: &str, opts: &EngineOptions, fresh: bool) -> Result<Arc<dyn BenchDb>> {
    check_families(engine, opts.num_column_families)?;
    if fresh {
        destroy(&opts.path)?;
    }
    match engine {
        "memory" => Ok(Arc::new(super::engine_mem::MemDb::new(opts)?)),
        "strata" => open_strata(opts),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Ok(Arc::new(super::engine_rocksdb::RocksDb::open(opts)?)),
        #[cfg(feature = "heed")]
        "heed" => Ok(Arc::new(super::engine_heed::HeedDb::open(opts)?)),
        #[cfg(feature = "fjall")]
        "fjall" => Ok(Arc::new(super::engine_fjall::FjallDb::open(opts)?)),
        #[cfg(feature = "redb")]
        "redb" => Ok(Arc::new(super::engine_redb::RedbDb::open(opts)?)),
        #[cfg(feature = "sled")]
        "sled" => Ok(Arc::new(super::engine_sled::SledDb::open(opts)?)),
        other => bail!("{}", unknown_engine(other)),
    }
}

/// Why `name` cannot be run by this binary.
pub fn unknown_engine(name: &str) -> String {
    if OPTIONAL.contains(&name) {
        format!(
            "this strata binary was built without the {name} engine: build it with \
             `cargo build --release -p strata-kv-cli --features {name}`"
        )
    } else {
        format!("unknown engine {name:?} (this binary has: {})", ENGINES.join(", "))
    }
}

fn open_strata(opts: &EngineOptions) -> Result<Arc<dyn BenchDb>> {
    Ok(Arc::new(super::engine_strata::StrataDb::open(opts)?))
}

/// Marks a directory as created by the bench, so a later fresh run may empty it.
const MARKER: &str = "STRATA-BENCH";

/// Empties the database directory (db_bench's DestroyDB) but keeps the directory itself, so a
/// temporary directory's guard still owns it. A non-empty directory that is neither a database
/// nor ours is refused: a mistyped `--db` must not wipe someone's files.
pub fn destroy(path: &Path) -> Result<()> {
    let entries: Vec<PathBuf> = match std::fs::read_dir(path) {
        Ok(e) => e.map(|e| e.map(|e| e.path())).collect::<std::io::Result<_>>()?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let ours = entries.iter().any(|p| p.ends_with("CURRENT") || p.ends_with(MARKER));
    if !entries.is_empty() && !ours {
        bail!(
            "refusing to empty {}: it holds files but no database (no CURRENT or {MARKER} file)",
            path.display()
        );
    }
    for p in entries {
        if p.is_dir() {
            std::fs::remove_dir_all(&p)?;
        } else {
            std::fs::remove_file(&p)?;
        }
    }
    std::fs::create_dir_all(path)?;
    std::fs::write(path.join(MARKER), b"")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_engine_opens_and_the_others_are_explained() {
        for name in ENGINES {
            let dir = tempfile::tempdir().unwrap();
            let db = open(name, &EngineOptions::for_test(dir.path()), true).unwrap();
            db.put(b"k", b"v", false, false).unwrap();
            assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()), "{name}");
        }
        for name in OPTIONAL.iter().filter(|n| !ENGINES.contains(n)) {
            assert!(unknown_engine(name).contains(&format!("--features {name}")));
        }
        assert!(unknown_engine("nosuch").contains("this binary has: strata, memory"));
    }

    #[test]
    fn families_have_db_benchs_names_and_other_engines_refuse_them() {
        assert_eq!(column_family_name(0), "default");
        assert_eq!(column_family_name(3), "column_family_name_000003");
        let dir = tempfile::tempdir().unwrap();
        let opts = EngineOptions { num_column_families: 2, ..EngineOptions::for_test(dir.path()) };
        let err = open("memory", &opts, true).err().unwrap().to_string();
        assert!(err.contains("--num_column_families=2: the memory engine has no column families"), "{err}");
        let db = open("memory", &EngineOptions::for_test(dir.path()), true).unwrap();
        assert!(db.put_cf(1, b"k", b"v", false, false).is_err());
        db.put_cf(0, b"k", b"v", false, false).unwrap();
        assert_eq!(db.get_cf(0, b"k").unwrap(), Some(b"v".to_vec()));
    }
}
