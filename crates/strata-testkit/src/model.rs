//! The expected state: an ordered history of write batches and the `BTreeMap` each prefix of it
//! produces. After a crash the database must equal the state after SOME prefix at least as long
//! as the durably acknowledged part ("no hole", as RocksDB's expected-state oracle checks). This
//! module only computes and compares; it must not decide what a test considers acknowledged.

use std::collections::BTreeMap;

use strata::{Db, ReadOptions, WriteBatch};

/// Keys to values.
pub type Kv = BTreeMap<Vec<u8>, Vec<u8>>;

/// One operation of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mutation {
    /// Set a key.
    Put(Vec<u8>, Vec<u8>),
    /// Remove a key.
    Delete(Vec<u8>),
}

/// Batches in the order they were issued to the database.
#[derive(Debug, Clone, Default)]
pub struct History {
    batches: Vec<Vec<Mutation>>,
}

/// Applies one batch to `state`.
pub fn apply(state: &mut Kv, batch: &[Mutation]) {
    for m in batch {
        match m {
            Mutation::Put(k, v) => {
                state.insert(k.clone(), v.clone());
            }
            Mutation::Delete(k) => {
                state.remove(k);
            }
        }
    }
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a batch about to be written; returns its index.
    pub fn push(&mut self, batch: Vec<Mutation>) -> usize {
        self.batches.push(batch);
        self.batches.len() - 1
    }

    /// Batches recorded.
    pub fn len(&self) -> usize {
        self.batches.len()
    }

    /// True when no batch was recorded.
    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    /// The batch at `i` as a strata write batch.
    pub fn write_batch(&self, i: usize) -> WriteBatch {
        write_batch(&self.batches[i])
    }

    /// The state after the first `k` batches.
    pub fn state_after(&self, k: usize) -> Kv {
        let mut state = Kv::new();
        for b in &self.batches[..k] {
            apply(&mut state, b);
        }
        state
    }

    /// The longest prefix, of at least `at_least` batches, whose state equals `actual`. The error
    /// describes how `actual` differs from the shortest and the longest allowed prefix.
    pub fn matching_prefix(&self, actual: &Kv, at_least: usize) -> Result<usize, String> {
        let mut state = self.state_after(at_least.min(self.len()));
        let mut found = None;
        for k in at_least..=self.len() {
            if k > at_least {
                apply(&mut state, &self.batches[k - 1]);
            }
            if &state == actual {
                found = Some(k);
            }
        }
        found.ok_or_else(|| {
            format!(
                "recovered state matches no prefix of {} to {} batches; vs the shortest: {}; vs all: {}",
                at_least,
                self.len(),
                diff(&self.state_after(at_least.min(self.len())), actual),
                diff(&state, actual)
            )
        })
    }
}

/// `batch` as a strata write batch.
pub fn write_batch(batch: &[Mutation]) -> WriteBatch {
    let mut b = WriteBatch::new();
    for m in batch {
        match m {
            Mutation::Put(k, v) => b.put(k, v),
            Mutation::Delete(k) => b.delete(k),
        };
    }
    b
}

/// A short description of how `actual` differs from `expected`.
pub fn diff(expected: &Kv, actual: &Kv) -> String {
    let missing: Vec<_> = expected.keys().filter(|k| !actual.contains_key(*k)).collect();
    let extra: Vec<_> = actual.keys().filter(|k| !expected.contains_key(*k)).collect();
    let wrong: Vec<_> = expected.iter().filter(|(k, v)| actual.get(*k).is_some_and(|a| a != *v)).collect();
    let show = |ks: Vec<&Vec<u8>>| {
        ks.iter().take(3).map(|k| String::from_utf8_lossy(k).into_owned()).collect::<Vec<_>>()
    };
    format!(
        "{} missing {:?}, {} extra {:?}, {} wrong values {:?}",
        missing.len(),
        show(missing.clone()),
        extra.len(),
        show(extra.clone()),
        wrong.len(),
        show(wrong.iter().map(|(k, _)| *k).collect())
    )
}

/// Every key and value in the database, by a forward scan.
pub fn dump(db: &Db) -> strata::Result<Kv> {
    let mut it = db.cursor(&ReadOptions::new())?;
    it.seek_to_first();
    let mut out = Kv::new();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(k: &str, v: &str) -> Mutation {
        Mutation::Put(k.as_bytes().to_vec(), v.as_bytes().to_vec())
    }

    #[test]
    fn finds_the_longest_matching_prefix_and_rejects_holes() {
        let mut h = History::new();
        h.push(vec![put("a", "1")]);
        h.push(vec![put("b", "2"), Mutation::Delete(b"a".to_vec())]);
        h.push(vec![put("c", "3")]);
        assert_eq!(h.matching_prefix(&h.state_after(2), 0), Ok(2));
        assert_eq!(h.matching_prefix(&h.state_after(3), 1), Ok(3));
        assert!(h.matching_prefix(&h.state_after(1), 2).is_err(), "below the durable floor");
        let mut hole = h.state_after(1);
        hole.insert(b"c".to_vec(), b"3".to_vec());
        assert!(h.matching_prefix(&hole, 0).is_err(), "batch 3 without batch 2 is a hole");
        let mut half = h.state_after(1);
        half.insert(b"b".to_vec(), b"2".to_vec());
        assert!(h.matching_prefix(&half, 0).is_err(), "half of batch 2 applied");
    }
}
