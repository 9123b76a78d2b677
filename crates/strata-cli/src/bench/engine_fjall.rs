//! [`BenchDb`] for fjall, a pure-Rust LSM-tree (cargo feature `fjall`).
//!
//! Owns: translating [`EngineOptions`] into fjall's database and keyspace options where fjall
//! has the same knob (block cache, bloom bits, memtable size, block size, table size, L0
//! trigger, block compression) and each benchmark call into one call on one keyspace.
//! Must not: tune fjall beyond what a flag asks for, or emulate what it lacks (a merge operator,
//! unjournaled writes) by extra work in the measured calls.

use std::sync::{Arc, Once};

use anyhow::{bail, Context, Result};
use fjall::compaction::Leveled;
use fjall::config::{
    BlockSizePolicy, BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry,
};
use fjall::{CompressionType, Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use super::engine::{BenchDb, EngineOptions, StatsKind};

/// The database directory inside `--db`, which also holds the harness's marker file.
const DIR: &str = "fjall";
/// The one keyspace (fjall's column family) the benchmark uses.
const KEYSPACE: &str = "bench";

/// A fjall database opened for benchmarking.
pub struct FjallDb {
    db: Database,
    ks: Keyspace,
    /// The block compression in effect, for `stats`.
    compression: &'static str,
}

impl FjallDb {
    /// Opens (or creates, unless `--use_existing_db`) the database in `o.path`/fjall.
    pub fn open(o: &EngineOptions) -> Result<Self> {
        if let Some(name) = &o.merge_operator {
            bail!("engine fjall has no merge operator (--merge_operator={name})");
        }
        let path = o.path.join(DIR);
        if o.use_existing && !path.join("version").is_file() {
            bail!("--use_existing_db: no fjall database at {}", path.display());
        }
        let (policy, compression) = compression(&o.compression);
        let db = Database::builder(&path)
            .cache_size(o.cache_size as u64)
            .open()
            .with_context(|| format!("opening fjall at {}", path.display()))?;
        if o.use_existing && !db.keyspace_exists(KEYSPACE) {
            bail!("--use_existing_db: the fjall database at {} has no {KEYSPACE:?} keyspace", path.display());
        }
        let create = keyspace_options(o, policy)?;
        let ks = db.keyspace(KEYSPACE, || create)?;
        Ok(Self { db, ks, compression })
    }
}

/// The keyspace's options; fjall records them when the keyspace is created, so with
/// `--use_existing_db` the ones it was created with stay in effect.
fn keyspace_options(o: &EngineOptions, policy: CompressionPolicy) -> Result<KeyspaceCreateOptions> {
    let mut c = KeyspaceCreateOptions::default().data_block_compression_policy(policy);
    if let Some(bits) = o.bloom_bits {
        c = c.filter_policy(if bits == 0 {
            FilterPolicy::disabled()
        } else {
            FilterPolicy::all(FilterPolicyEntry::Bloom(BloomConstructionPolicy::BitsPerKey(bits as f32)))
        });
    }
    if let Some(v) = o.write_buffer_size {
        c = c.max_memtable_size(v as u64);
    }
    if let Some(v) = o.block_size {
        // fjall panics outside 1 KiB..=1 MiB; say so instead.
        let v = u32::try_from(v).ok().filter(|v| (1 << 10..=1 << 20).contains(v));
        c = c.data_block_size_policy(BlockSizePolicy::all(
            v.context("--block_size must be between 1 KiB and 1 MiB for fjall")?,
        ));
    }
    if o.target_file_size.is_some() || o.level0_compaction_trigger.is_some() {
        let mut leveled = Leveled::default();
        if let Some(v) = o.target_file_size {
            leveled = leveled.with_table_target_size(v);
        }
        if let Some(v) = o.level0_compaction_trigger {
            leveled = leveled.with_l0_threshold(
                u8::try_from(v).context("--level0_file_num_compaction_trigger is too large")?,
            );
        }
        c = c.compaction_strategy(Arc::new(leveled));
    }
    // --max_write_buffer_number and --min_blob_size have no fjall equivalent (fjall bounds its
    // memtables by the journal size, and its key-value separation is a different design).
    Ok(c)
}

/// The block compression for `--compression_type`: fjall has lz4 only (its default `lz4`
/// feature). db_bench's default snappy, and zstd, are the same kind of request (compress every
/// block), so they get lz4 on every level, with one note on stderr; "none" turns it off.
fn compression(name: &str) -> (CompressionPolicy, &'static str) {
    match name {
        "none" | "no" | "nocompression" => (CompressionPolicy::disabled(), "none"),
        "lz4" => (CompressionPolicy::all(CompressionType::Lz4), "lz4"),
        other => {
            static NOTE: Once = Once::new();
            NOTE.call_once(|| eprintln!("fjall: --compression_type={other} is not in fjall; using lz4"));
            (CompressionPolicy::all(CompressionType::Lz4), "lz4 (in place of the requested one)")
        }
    }
}

impl FjallDb {
    /// After a write that went to the journal (and, with fjall's default automatic persist, on
    /// to the kernel: a killed process loses nothing), `sync` makes it durable: fdatasync of the
    /// journal, which holds this write and every earlier one.
    fn persist(&self, sync: bool) -> Result<()> {
        if sync {
            self.db.persist(PersistMode::SyncData)?;
        }
        Ok(())
    }
}

// `disable_wal` is ignored: fjall 3 has no write that skips its journal (each keyspace write and
// each batch is journaled), so `--disable_wal=1` measures journaled writes.
impl BenchDb for FjallDb {
    fn put(&self, key: &[u8], value: &[u8], sync: bool, _disable_wal: bool) -> Result<()> {
        self.ks.insert(key, value)?;
        self.persist(sync)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.ks.get(key)?.map(|v| v.to_vec()))
    }

    fn delete(&self, key: &[u8], sync: bool, _disable_wal: bool) -> Result<()> {
        self.ks.remove(key)?;
        self.persist(sync)
    }

    fn merge(&self, _key: &[u8], _value: &[u8], _sync: bool, _disable_wal: bool) -> Result<()> {
        bail!("engine fjall has no merge operator")
    }

    fn write_batch(&self, ops: &[(&[u8], &[u8])], sync: bool, _disable_wal: bool) -> Result<()> {
        // One journal entry, applied atomically. `Database::batch` persists to the kernel
        // (PersistMode::Buffer) unless told otherwise; `sync` asks for fdatasync instead, inside
        // the commit, under the journal lock.
        let mut batch = self.db.batch();
        if sync {
            batch = batch.durability(Some(PersistMode::SyncData));
        }
        for &(k, v) in ops {
            batch.insert(&self.ks, k, v);
        }
        Ok(batch.commit()?)
    }

    fn scan(&self, start: &[u8], n: usize, reverse: bool, f: &mut dyn FnMut(&[u8], &[u8])) -> Result<usize> {
        // One fresh range iterator per call, opened at `start` and read from the chosen end.
        let it = match (reverse, start.is_empty()) {
            (_, true) => self.ks.iter(),
            (false, false) => self.ks.range(start..),
            (true, false) => self.ks.range(..=start),
        };
        let mut count = 0;
        let mut visit = |guard: fjall::Guard| -> Result<()> {
            let (k, v) = guard.into_inner()?;
            f(&k, &v);
            count += 1;
            Ok(())
        };
        if reverse {
            it.rev().take(n).try_for_each(&mut visit)?;
        } else {
            it.take(n).try_for_each(&mut visit)?;
        }
        Ok(count)
    }

    /// Makes everything durable (fsync of the journal) and, like RocksDB's flush, writes the
    /// memtable out as a table and waits for it.
    fn flush(&self) -> Result<()> {
        self.db.persist(PersistMode::SyncAll)?;
        Ok(self.ks.rotate_memtable_and_wait()?)
    }

    /// fjall's major compaction: every table of the keyspace merged into the last level, like
    /// RocksDB's full `compact_range`. (`major_compact` is public but doc-hidden in fjall 3.1.)
    fn compact(&self) -> Result<()> {
        Ok(self.ks.major_compact()?)
    }

    fn stats(&self, _kind: StatsKind) -> String {
        let disk = self.db.disk_space().map_or_else(|e| format!("? ({e})"), |s| s.to_string());
        format!(
            "fjall: ~{} keys in {} tables ({} in L0), {} journals; {disk} bytes on disk (the journal's sparse preallocation included); block \
             compression {}; cache {} of {} bytes used; {} compactions done\n",
            self.ks.approximate_len(),
            self.ks.table_count(),
            self.ks.l0_table_count(),
            self.db.journal_count(),
            self.compression,
            self.db.cache_size(),
            self.db.cache_capacity(),
            self.db.compactions_completed(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(db: &FjallDb, start: &[u8], n: usize, reverse: bool) -> Vec<Vec<u8>> {
        let mut seen = Vec::new();
        let count = db.scan(start, n, reverse, &mut |k, _| seen.push(k.to_vec())).unwrap();
        assert_eq!(count, seen.len());
        seen
    }

    #[test]
    fn round_trip_scan_reopen_and_no_merge() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = EngineOptions::for_test(dir.path());
        o.compression = "lz4".into();
        let db = FjallDb::open(&o).unwrap();
        db.put(b"a", b"1", false, false).unwrap();
        db.put(b"c", b"3", true, false).unwrap();
        db.write_batch(&[(b"b", b"2"), (b"d", b"4"), (b"e", b"5")], true, false).unwrap();
        db.delete(b"d", false, false).unwrap();
        assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
        assert_eq!(db.get(b"d").unwrap(), None);
        assert_eq!(keys(&db, b"bb", 2, false), [b"c".to_vec(), b"e".to_vec()]);
        assert_eq!(keys(&db, b"bb", 5, true), [b"b".to_vec(), b"a".to_vec()]);
        assert_eq!(keys(&db, b"", 2, true), [b"e".to_vec(), b"c".to_vec()]);
        assert_eq!(keys(&db, b"", 9, false).len(), 4);
        assert_eq!(keys(&db, b"z", 3, false), Vec::<Vec<u8>>::new());
        db.flush().unwrap();
        db.compact().unwrap();
        assert_eq!(keys(&db, b"c", 9, true), [b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]);
        assert!(db.stats(StatsKind::Stats).contains("compression lz4"));
        assert!(db.merge(b"m", &1u64.to_le_bytes(), false, false).is_err());
        db.put(b"f", b"6", false, false).unwrap();
        drop(db);

        o.use_existing = true;
        let db = FjallDb::open(&o).unwrap();
        assert_eq!(db.get(b"e").unwrap(), Some(b"5".to_vec()));
        assert_eq!(db.get(b"f").unwrap(), Some(b"6".to_vec()), "the journal is replayed");
        assert_eq!(keys(&db, b"", 9, false).len(), 5);
        drop(db);

        let missing = tempfile::tempdir().unwrap();
        let err =
            FjallDb::open(&EngineOptions { use_existing: true, ..EngineOptions::for_test(missing.path()) });
        assert!(err.err().unwrap().to_string().contains("no fjall database"));
        o.merge_operator = Some("uint64add".into());
        let err = FjallDb::open(&o).err().unwrap().to_string();
        assert!(err.contains("has no merge operator"), "{err}");
    }
}
