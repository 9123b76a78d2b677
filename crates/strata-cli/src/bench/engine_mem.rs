//! An in-memory reference engine: a `BTreeMap` behind a lock.
//!
//! Owns: exact, obviously-correct semantics for every [`BenchDb`] call, so the workloads can be
//! tested end to end without the real engine, and so `--engine=memory` measures the harness's
//! own overhead. Must not: touch the disk or pretend to be fast; it is a model, not an engine.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::RwLock;

use anyhow::{bail, Result};

use super::engine::{BenchDb, EngineOptions, StatsKind};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

/// The merge operators db_bench's `--merge_operator` names that the model understands.
#[derive(Debug, Clone, Copy)]
enum MergeOp {
    /// Little-endian u64 addition; a value that is not 8 bytes counts as 0, as in RocksDB.
    Uint64Add,
    /// Appends with a ',' delimiter.
    StringAppend,
    /// The operand replaces the value.
    Put,
}

impl MergeOp {
    fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "uint64add" | "UInt64AddOperator" => Self::Uint64Add,
            "stringappend" | "StringAppendOperator" => Self::StringAppend,
            "put" | "PutOperator" => Self::Put,
            other => bail!("unknown merge operator {other:?} (expected uint64add, stringappend or put)"),
        })
    }

    fn apply(self, existing: Option<&Vec<u8>>, operand: &[u8]) -> Vec<u8> {
        match self {
            Self::Uint64Add => {
                let sum = existing.map_or(0, |e| as_u64(e)).wrapping_add(as_u64(operand));
                sum.to_le_bytes().to_vec()
            }
            Self::StringAppend => match existing {
                Some(e) => [e.as_slice(), b",", operand].concat(),
                None => operand.to_vec(),
            },
            Self::Put => operand.to_vec(),
        }
    }
}

fn as_u64(b: &[u8]) -> u64 {
    <[u8; 8]>::try_from(b).map_or(0, u64::from_le_bytes)
}

/// The model engine.
pub struct MemDb {
    map: RwLock<Map>,
    merge: Option<MergeOp>,
}

impl MemDb {
    /// An empty model; the path is not used.
    pub fn new(opts: &EngineOptions) -> Result<Self> {
        let merge = opts.merge_operator.as_deref().map(MergeOp::parse).transpose()?;
        Ok(Self { map: RwLock::new(Map::new()), merge })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Map> {
        self.map.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Map> {
        self.map.write().unwrap_or_else(|p| p.into_inner())
    }
}

impl BenchDb for MemDb {
    fn put(&self, key: &[u8], value: &[u8], _sync: bool, _disable_wal: bool) -> Result<()> {
        self.write().insert(key.to_vec(), value.to_vec());
        Ok(())
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.read().get(key).cloned())
    }

    fn delete(&self, key: &[u8], _sync: bool, _disable_wal: bool) -> Result<()> {
        self.write().remove(key);
        Ok(())
    }

    fn merge(&self, key: &[u8], value: &[u8], _sync: bool, _disable_wal: bool) -> Result<()> {
        let Some(op) = self.merge else { bail!("merge needs --merge_operator") };
        let mut map = self.write();
        let merged = op.apply(map.get(key), value);
        map.insert(key.to_vec(), merged);
        Ok(())
    }

    fn write_batch(&self, ops: &[(&[u8], &[u8])], _sync: bool, _disable_wal: bool) -> Result<()> {
        let mut map = self.write();
        for (k, v) in ops {
            map.insert(k.to_vec(), v.to_vec());
        }
        Ok(())
    }

    fn scan(&self, start: &[u8], n: usize, reverse: bool, f: &mut dyn FnMut(&[u8], &[u8])) -> Result<usize> {
        let map = self.read();
        let mut count = 0;
        let mut visit = |(k, v): (&Vec<u8>, &Vec<u8>)| {
            f(k, v);
            count += 1;
        };
        let unbounded = start.is_empty();
        match (reverse, unbounded) {
            (false, true) => map.iter().take(n).for_each(&mut visit),
            (false, false) => {
                map.range::<[u8], _>((Bound::Included(start), Bound::Unbounded)).take(n).for_each(&mut visit)
            }
            (true, true) => map.iter().rev().take(n).for_each(&mut visit),
            (true, false) => map
                .range::<[u8], _>((Bound::Unbounded, Bound::Included(start)))
                .rev()
                .take(n)
                .for_each(&mut visit),
        }
        Ok(count)
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    fn compact(&self) -> Result<()> {
        Ok(())
    }

    fn stats(&self, kind: StatsKind) -> String {
        let map = self.read();
        let bytes: usize = map.iter().map(|(k, v)| k.len() + v.len()).sum();
        match kind {
            StatsKind::Stats => format!("memory engine: {} keys, {bytes} bytes\n", map.len()),
            StatsKind::LevelStats => "memory engine: no levels\n".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(merge: Option<&str>) -> MemDb {
        let mut o =
            EngineOptions::from_flags(&super::super::flags::defaults(), std::path::Path::new("/nonexistent"));
        o.merge_operator = merge.map(String::from);
        MemDb::new(&o).unwrap()
    }

    #[test]
    fn scan_seeks_both_ways() {
        let d = db(None);
        for k in [b"a", b"c", b"e"] {
            d.put(k, b"v", false, false).unwrap();
        }
        let mut got = Vec::new();
        d.scan(b"b", 5, false, &mut |k, _| got.push(k.to_vec())).unwrap();
        assert_eq!(got, [b"c".to_vec(), b"e".to_vec()]);
        got.clear();
        d.scan(b"d", 5, true, &mut |k, _| got.push(k.to_vec())).unwrap();
        assert_eq!(got, [b"c".to_vec(), b"a".to_vec()]);
        assert_eq!(d.scan(b"", 2, true, &mut |_, _| {}).unwrap(), 2);
    }

    #[test]
    fn uint64add_merges() {
        let d = db(Some("uint64add"));
        d.merge(b"k", &5u64.to_le_bytes(), false, false).unwrap();
        d.merge(b"k", &7u64.to_le_bytes(), false, false).unwrap();
        assert_eq!(d.get(b"k").unwrap(), Some(12u64.to_le_bytes().to_vec()));
        assert!(db(None).merge(b"k", b"v", false, false).is_err());
    }
}
