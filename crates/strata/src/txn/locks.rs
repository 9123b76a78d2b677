//! The lock manager pessimistic transactions wait in (RocksDB's `PointLockManager`): exclusive
//! per-key locks, keyed by (column family id, key) and owned by a transaction id, with lock
//! timeouts and deadlock detection over a wait-for graph.
//!
//! This module owns the lock table and the wait-for graph. It knows nothing of the database:
//! only transaction ids, column family ids and key bytes. It must not read or write data,
//! and it does not remember which keys a transaction holds (the transaction does, and hands
//! them back to [`LockManager::unlock_all`]).
//!
//! Locks are striped into shards by key hash, each a mutex over its part of the table and a
//! condition variable its waiters sleep on, so unrelated keys do not contend on one mutex. The
//! wait-for graph has one mutex of its own; lock order is always shard, then graph.
//!
//! Invariant: transaction `w` is in the waiter list of the lock on key `k` exactly when the
//! graph has the edge `w -> owner of k`. Both change only under `k`'s shard mutex: a waiter
//! adds itself (after the deadlock check) and removes itself when it stops waiting, and the
//! owner's unlock removes all its waiters' edges before they wake. So the graph never holds an
//! edge to a transaction that has let the key go, and a reported cycle is a real one.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};
use crate::util::hash::hash64;

/// Shards of the lock table; a power of two is not needed (the shard is `hash % shards`).
const DEFAULT_SHARDS: usize = 16;
/// How many wait-for edges the deadlock check follows (RocksDB's `deadlock_detect_depth`).
pub(crate) const DEFAULT_DEADLOCK_DETECT_DEPTH: usize = 50;

/// One held key: its owner and the transactions waiting for it.
struct Held {
    owner: u64,
    waiters: Vec<u64>,
}

/// A stripe of the lock table: column family -> key -> lock.
#[derive(Default)]
struct Shard {
    held: Mutex<HashMap<u32, HashMap<Vec<u8>, Held>>>,
    cv: Condvar,
}

/// Exclusive per-key locks for pessimistic transactions. Each transaction id must be used by
/// one thread at a time (a transaction waits for one key at a time).
pub(crate) struct LockManager {
    shards: Box<[Shard]>,
    /// waiter -> the transaction holding the key it waits for.
    waits_for: Mutex<HashMap<u64, u64>>,
    deadlock_detect_depth: usize,
}

impl Default for LockManager {
    fn default() -> Self {
        Self::new(DEFAULT_SHARDS, DEFAULT_DEADLOCK_DETECT_DEPTH)
    }
}

impl LockManager {
    /// A lock manager with `shards` stripes (at least one) whose deadlock check follows at most
    /// `deadlock_detect_depth` wait-for edges: a cycle of `n` transactions is detected when
    /// `n - 1 <= deadlock_detect_depth`, and 0 turns detection off (longer cycles are left to
    /// the lock timeout, as in RocksDB).
    pub(crate) fn new(shards: usize, deadlock_detect_depth: usize) -> Self {
        let shards = (0..shards.max(1)).map(|_| Shard::default()).collect();
        LockManager { shards, waits_for: Mutex::new(HashMap::new()), deadlock_detect_depth }
    }

    fn shard(&self, cf: u32, key: &[u8]) -> &Shard {
        // The family id is mixed in so equal keys of different families spread too.
        let h = hash64(key) ^ u64::from(cf).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        &self.shards[(h % self.shards.len() as u64) as usize]
    }

    /// Locks `key` of family `cf` for `txn`. A no-op when `txn` already holds it (locks are not
    /// counted: one unlock releases). Otherwise waits while another transaction holds it:
    /// `timeout` None waits for ever, `Some(ZERO)` tries once. Fails with
    /// [`Error::LockTimeout`] when the timeout passes and with [`Error::Deadlock`] when waiting
    /// would close a cycle of waiting transactions; either way `txn` holds nothing new and
    /// waits for nothing.
    pub(crate) fn lock(&self, txn: u64, cf: u32, key: &[u8], timeout: Option<Duration>) -> Result<()> {
        // An unrepresentable deadline is as good as none.
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let shard = self.shard(cf, key);
        let mut table = shard.held.lock();
        loop {
            let Some(held) = table.get_mut(&cf).and_then(|m| m.get_mut(key)) else {
                let new = Held { owner: txn, waiters: Vec::new() };
                table.entry(cf).or_default().insert(key.to_vec(), new);
                return Ok(());
            };
            if held.owner == txn {
                return Ok(());
            }
            let waiting = held.waiters.contains(&txn);
            if timeout == Some(Duration::ZERO) || deadline.is_some_and(|d| Instant::now() >= d) {
                if waiting {
                    held.waiters.retain(|&w| w != txn);
                    self.waits_for.lock().remove(&txn);
                }
                return Err(Error::LockTimeout(format!(
                    "{} held by transaction {}",
                    describe(cf, key),
                    held.owner
                )));
            }
            if !waiting {
                // A new edge (first wait, or the key changed hands since): check, then add.
                self.start_waiting(txn, held.owner, cf, key)?;
                held.waiters.push(txn);
            }
            match deadline {
                Some(d) => {
                    shard.cv.wait_until(&mut table, d);
                }
                None => shard.cv.wait(&mut table),
            }
        }
    }

    /// Adds the edge `txn -> holder` unless following the edges from `holder` leads back to
    /// `txn` within the detection depth.
    fn start_waiting(&self, txn: u64, holder: u64, cf: u32, key: &[u8]) -> Result<()> {
        let mut graph = self.waits_for.lock();
        let mut cycle = vec![txn, holder];
        let mut cur = holder;
        for _ in 0..self.deadlock_detect_depth {
            let Some(&next) = graph.get(&cur) else { break };
            cycle.push(next);
            if next == txn {
                let path: Vec<String> = cycle.iter().map(u64::to_string).collect();
                return Err(Error::Deadlock(format!(
                    "transaction {txn} waiting for {} held by transaction {holder} closes the cycle {}",
                    describe(cf, key),
                    path.join(" -> ")
                )));
            }
            cur = next;
        }
        graph.insert(txn, holder);
        Ok(())
    }

    /// Releases `key` of family `cf` if `txn` holds it (otherwise does nothing) and wakes the
    /// transactions waiting in its shard.
    pub(crate) fn unlock(&self, txn: u64, cf: u32, key: &[u8]) {
        let shard = self.shard(cf, key);
        let mut table = shard.held.lock();
        let Some(keys) = table.get_mut(&cf) else { return };
        let waiters = match keys.get_mut(key) {
            Some(held) if held.owner == txn => std::mem::take(&mut held.waiters),
            _ => return,
        };
        keys.remove(key);
        if keys.is_empty() {
            table.remove(&cf);
        }
        if !waiters.is_empty() {
            let mut graph = self.waits_for.lock();
            for w in &waiters {
                graph.remove(w);
            }
            drop(graph);
            // Waiters for other keys of the shard wake too, find theirs still held, and sleep.
            shard.cv.notify_all();
        }
    }

    /// Releases every key in `keys` that `txn` holds (a transaction's commit or rollback).
    pub(crate) fn unlock_all(&self, txn: u64, keys: impl IntoIterator<Item = (u32, Vec<u8>)>) {
        for (cf, key) in keys {
            self.unlock(txn, cf, &key);
        }
    }

    /// The transaction `txn` is waiting for, if it is waiting for a lock.
    #[cfg(test)]
    pub(crate) fn waiting_for(&self, txn: u64) -> Option<u64> {
        self.waits_for.lock().get(&txn).copied()
    }
}

/// A key for error messages: its family and its bytes, escaped.
fn describe(cf: u32, key: &[u8]) -> String {
    format!("key \"{}\" of column family {cf}", key.escape_ascii())
}

#[cfg(test)]
mod tests;
