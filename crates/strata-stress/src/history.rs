//! The unlogged-write history: every value a key took during a `run --disable-wal`, appended to
//! `<expected>/unlogged.history` before the engine write (under the key's stripe lock, like the
//! oracle's intent) with `write(2)`, so it survives the kill that the writes themselves do not.
//!
//! Why: writes made with `disable_wal` exist only in memtables until a flush, so after a crash a
//! key may hold any value it had since the run started, up to the last completed flush
//! (docs/durability.md). The oracle only knows the last one; this file knows the rest, and the
//! verifier accepts any of them for the keys it lists, then clears it.
//!
//! With column families the keys are oracle slots (`families::Layout`), and a drop of a family
//! appends a marker record: values its keys took before the drop cannot come back, so `load`
//! forgets them.
//!
//! This module only records and reads values; it must not call the engine or judge a database.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use crate::model::{Kind, Value};

const FILE_NAME: &str = "unlogged.history";
const RECORD_LEN: usize = 32;
const RECORD_MAGIC: u8 = 0x5a;
/// A record saying that the family in its key field was dropped (acknowledged).
const DROP_MAGIC: u8 = 0x5b;

/// An open history, appended to by every writer thread of a `--disable-wal` run.
pub struct History {
    file: File,
    path: PathBuf,
}

impl History {
    /// Starts an empty history in `dir` (the verifier has consumed any earlier one).
    pub fn create(dir: &Path) -> io::Result<History> {
        let path = dir.join(FILE_NAME);
        File::create(&path)?;
        let file = OpenOptions::new().append(true).open(&path)?;
        Ok(History { file, path })
    }

    /// Records that each key goes from `old` to `new`, in one `write(2)` (O_APPEND keeps
    /// concurrent appends whole).
    pub fn append(&self, writes: &[(u64, Value, Value)]) -> io::Result<()> {
        let mut buf = Vec::with_capacity(writes.len() * RECORD_LEN);
        for &(key, old, new) in writes {
            buf.extend_from_slice(&encode(key, old, new));
        }
        (&self.file)
            .write_all(&buf)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.path.display())))
    }

    /// Records that family `family` was dropped: the values its keys took so far are gone.
    pub fn append_drop(&self, family: u64) -> io::Result<()> {
        let mut b = [0u8; RECORD_LEN];
        b[0..8].copy_from_slice(&family.to_le_bytes());
        b[31] = DROP_MAGIC;
        (&self.file)
            .write_all(&b)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.path.display())))
    }
}

fn encode(key: u64, old: Value, new: Value) -> [u8; RECORD_LEN] {
    let mut b = [0u8; RECORD_LEN];
    b[0..8].copy_from_slice(&key.to_le_bytes());
    b[8..16].copy_from_slice(&old.n.to_le_bytes());
    b[16..24].copy_from_slice(&new.n.to_le_bytes());
    b[24] = old.kind as u8;
    b[25] = new.kind as u8;
    b[31] = RECORD_MAGIC;
    b
}

fn decode(b: &[u8]) -> io::Result<(u64, Value, Value)> {
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "corrupt unlogged-history record");
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    if b[31] != RECORD_MAGIC {
        return Err(bad());
    }
    let old = Value { kind: Kind::from_u8(b[24]).ok_or_else(bad)?, n: u64_at(8) };
    let new = Value { kind: Kind::from_u8(b[25]).ok_or_else(bad)?, n: u64_at(16) };
    Ok((u64_at(0), old, new))
}

/// Every value each listed key took (old and new of every recorded write) since the last drop
/// of its family (`keys_per_family` keys each); empty when there is no history. A partial last
/// record (none is expected: each append is one write) is ignored.
pub fn load(dir: &Path, keys_per_family: u64) -> io::Result<BTreeMap<u64, Vec<Value>>> {
    let bytes = match std::fs::read(dir.join(FILE_NAME)) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(e),
    };
    let mut out: BTreeMap<u64, Vec<Value>> = BTreeMap::new();
    for chunk in bytes.chunks_exact(RECORD_LEN) {
        if chunk[31] == DROP_MAGIC {
            let family = u64::from_le_bytes(chunk[0..8].try_into().expect("8 bytes"));
            let lo = family.saturating_mul(keys_per_family);
            out.retain(|&k, _| k < lo || k >= lo.saturating_add(keys_per_family));
            continue;
        }
        let (key, old, new) = decode(chunk)?;
        let values = out.entry(key).or_default();
        for v in [old, new] {
            if !values.contains(&v) {
                values.push(v);
            }
        }
    }
    Ok(out)
}

/// Removes the history once the oracle has been resolved against the database.
pub fn clear(dir: &Path) -> io::Result<()> {
    match std::fs::remove_file(dir.join(FILE_NAME)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appended_values_load_per_key_and_clear_removes_them() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path(), 100).unwrap().is_empty(), "no history yet");
        let v = |n| Value { kind: Kind::Short, n };
        let h = History::create(dir.path()).unwrap();
        h.append(&[(3, Value::ABSENT, v(1)), (9, v(5), v(6))]).unwrap();
        h.append(&[(3, v(1), v(2))]).unwrap();
        drop(h);
        let got = load(dir.path(), 100).unwrap();
        assert_eq!(got[&3], vec![Value::ABSENT, v(1), v(2)]);
        assert_eq!(got[&9], vec![v(5), v(6)]);
        History::create(dir.path()).unwrap();
        assert!(load(dir.path(), 100).unwrap().is_empty(), "create starts afresh");
        clear(dir.path()).unwrap();
        clear(dir.path()).unwrap();
    }

    #[test]
    fn a_drop_marker_forgets_the_values_of_that_familys_keys_only() {
        let dir = tempfile::tempdir().unwrap();
        let v = |n| Value { kind: Kind::Short, n };
        let h = History::create(dir.path()).unwrap();
        h.append(&[(3, Value::ABSENT, v(1)), (12, v(5), v(6))]).unwrap();
        h.append_drop(1).unwrap();
        h.append(&[(13, Value::ABSENT, v(7))]).unwrap();
        drop(h);
        let got = load(dir.path(), 10).unwrap();
        assert_eq!(got[&3], vec![Value::ABSENT, v(1)], "family 0 keeps its values");
        assert!(!got.contains_key(&12), "family 1's values before the drop are gone");
        assert_eq!(got[&13], vec![Value::ABSENT, v(7)], "and those after it are kept");
    }
}
