//! `--engine=memory` for rput and rget: a map in this process behind a mutex, no network and
//! no replication, so a run measures the harness alone (the ceiling the client loops impose),
//! as `--engine=memory` does for the local benchmarks.
//!
//! Owns: that map. Must not: pretend to be durable or replicated (the header says it is not).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::kv::{OpError, ReplicatedKv};

/// The largest preload batch; any size would do, this one matches etcd's so both see the
/// same batches.
const MAX_BATCH: usize = 128;

/// A shared in-process map.
#[derive(Clone, Default)]
pub struct MemKv {
    map: Arc<Mutex<HashMap<Vec<u8>, Vec<u8>>>>,
}

impl MemKv {
    fn map(&self) -> MutexGuard<'_, HashMap<Vec<u8>, Vec<u8>>> {
        // A client that panicked holding the lock left a map that is still whole: every
        // operation is one insert or one lookup.
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many keys the map holds.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.map().len()
    }
}

impl ReplicatedKv for MemKv {
    async fn put(&mut self, key: Vec<u8>, value: Vec<u8>) -> Result<(), OpError> {
        self.map().insert(key, value);
        Ok(())
    }

    async fn get(&mut self, key: Vec<u8>) -> Result<Option<Vec<u8>>, OpError> {
        Ok(self.map().get(&key).cloned())
    }

    async fn put_many(&mut self, pairs: Vec<(Vec<u8>, Vec<u8>)>) -> Result<(), OpError> {
        if pairs.len() > MAX_BATCH {
            return Err(OpError(format!("a batch of {} puts, more than {MAX_BATCH}", pairs.len())));
        }
        self.map().extend(pairs);
        Ok(())
    }

    fn max_batch(&self) -> usize {
        MAX_BATCH
    }

    fn describe(&self) -> String {
        "memory (a map in this process: no network, no replication, no durability; measures the \
         harness alone)"
            .to_string()
    }
}
