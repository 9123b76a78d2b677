//! `--engine=cluster`: a strata cluster (`strata-server` nodes) through its client library,
//! `strata_server::Client`, which sends each call to the leader it knows and follows redirects.
//!
//! Owns: the mapping of rput, rget and the preload onto `put`, `get` and `write`. Must not:
//! relax what the client guarantees: a put is acknowledged once committed on a majority (whose
//! Raft log is written with sync) and applied, and a get is a read-index read on the leader.

use std::time::Duration;

use strata_server::{Client, ClientError, Op};

use super::kv::{OpError, ReplicatedKv};

/// Puts per batch in the preload: the whole batch is one Raft entry, so this bounds an entry's
/// size (here about 70 KiB with 100-byte values).
const MAX_BATCH: usize = 512;

/// As etcd's engine: long enough for an election and a slow fsync, then an error.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A cheap-to-clone client of one strata cluster.
#[derive(Clone)]
pub struct Cluster {
    client: Client,
    endpoints: Vec<String>,
}

impl Cluster {
    /// A client of the nodes at `endpoints` (`host:port`); it connects on first use.
    pub fn new(endpoints: &[String]) -> Self {
        Self {
            client: Client::new(endpoints.to_vec()).with_timeout(REQUEST_TIMEOUT),
            endpoints: endpoints.to_vec(),
        }
    }
}

fn err(e: ClientError) -> OpError {
    OpError(format!("cluster: {e}"))
}

impl ReplicatedKv for Cluster {
    async fn put(&mut self, key: Vec<u8>, value: Vec<u8>) -> Result<(), OpError> {
        self.client.put(&key, &value).await.map_err(err)
    }

    async fn get(&mut self, key: Vec<u8>) -> Result<Option<Vec<u8>>, OpError> {
        self.client.get(&key).await.map_err(err)
    }

    async fn put_many(&mut self, pairs: Vec<(Vec<u8>, Vec<u8>)>) -> Result<(), OpError> {
        for chunk in pairs.chunks(MAX_BATCH) {
            let ops = chunk.iter().map(|(k, v)| Op::Put { key: k.clone(), value: v.clone() }).collect();
            self.client.write(ops).await.map_err(err)?;
        }
        Ok(())
    }

    fn max_batch(&self) -> usize {
        MAX_BATCH
    }

    fn describe(&self) -> String {
        format!(
            "strata cluster at {} (strata_server::Client, HTTP/1.1 to the leader; puts committed \
             on a majority and applied before the ack, gets by read index)",
            self.endpoints.join(",")
        )
    }
}
