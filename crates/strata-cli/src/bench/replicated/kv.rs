//! What rput and rget need of a replicated store's client: a put acknowledged by a majority, a
//! linearizable get, and a bulk put to preload keys.
//!
//! Owns: the [`ReplicatedKv`] trait and its error. Must not: measure, print, or retry (the
//! harness decides what an error costs; a client library that retries internally, as etcd's
//! and the cluster's follow their leader, does so inside one call and one latency sample).

use std::fmt;
use std::future::Future;

/// One failed operation. For a put the outcome is unknown: it may have been applied.
#[derive(Debug, Clone, PartialEq)]
pub struct OpError(pub String);

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OpError {}

/// A client of a replicated key-value store. Each benchmark client task owns a clone, so a
/// clone must be cheap and share the connections.
pub trait ReplicatedKv: Clone + Send + Sync + 'static {
    /// Puts `key`; `Ok` only once the write is committed on a majority of the members.
    fn put(&mut self, key: Vec<u8>, value: Vec<u8>) -> impl Future<Output = Result<(), OpError>> + Send;

    /// The value of `key` as of a point after the call began (a linearizable read).
    fn get(&mut self, key: Vec<u8>) -> impl Future<Output = Result<Option<Vec<u8>>, OpError>> + Send;

    /// Puts every pair, in one or several atomic batches (the preload of rget; not measured).
    fn put_many(
        &mut self,
        pairs: Vec<(Vec<u8>, Vec<u8>)>,
    ) -> impl Future<Output = Result<(), OpError>> + Send;

    /// The largest batch [`put_many`](Self::put_many) takes (etcd refuses a transaction of more
    /// than `--max-txn-ops`, 128 by default).
    fn max_batch(&self) -> usize;

    /// What this engine is and how an acknowledged put is made durable, for the header.
    fn describe(&self) -> String;
}
