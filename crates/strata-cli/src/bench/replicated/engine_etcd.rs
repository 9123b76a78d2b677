//! `--engine=etcd`: an etcd v3 cluster through its gRPC API (the `etcd-client` crate, tonic).
//!
//! Owns: the connection (one balanced gRPC channel over every endpoint, as etcd's own
//! `benchmark` tool spreads its clients over the members) and the mapping of rput, rget and the
//! preload onto Put, Range and Txn. Must not: change etcd's durability or consistency settings:
//! etcd fsyncs its WAL before it acknowledges a proposal, and a Range without `serializable` is
//! linearizable (a read index through the leader), so the defaults are what is measured.

use std::time::Duration;

use etcd_client::{Client, ConnectOptions, KvClient, Txn, TxnOp};

use super::kv::{OpError, ReplicatedKv};

/// etcd's default `--max-txn-ops`.
const MAX_TXN_OPS: usize = 128;

/// Long enough for a leader election (1 s by default) and a slow fsync; an operation that takes
/// longer is reported as an error, not waited for.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A cheap-to-clone client of one etcd cluster.
#[derive(Clone)]
pub struct Etcd {
    kv: KvClient,
    endpoints: Vec<String>,
}

impl Etcd {
    /// Connects to `endpoints` (`host:port`, or URLs).
    pub async fn connect(endpoints: &[String]) -> Result<Self, OpError> {
        let opts =
            ConnectOptions::new().with_connect_timeout(Duration::from_secs(5)).with_timeout(REQUEST_TIMEOUT);
        let client = Client::connect(endpoints, Some(opts)).await.map_err(err)?;
        Ok(Self { kv: client.kv_client(), endpoints: endpoints.to_vec() })
    }
}

fn err(e: etcd_client::Error) -> OpError {
    OpError(format!("etcd: {e}"))
}

impl ReplicatedKv for Etcd {
    async fn put(&mut self, key: Vec<u8>, value: Vec<u8>) -> Result<(), OpError> {
        self.kv.put(key, value, None).await.map(drop).map_err(err)
    }

    async fn get(&mut self, key: Vec<u8>) -> Result<Option<Vec<u8>>, OpError> {
        let mut resp = self.kv.get(key, None).await.map_err(err)?;
        Ok(resp.take_kvs().into_iter().next().map(|kv| kv.value().to_vec()))
    }

    async fn put_many(&mut self, pairs: Vec<(Vec<u8>, Vec<u8>)>) -> Result<(), OpError> {
        for chunk in pairs.chunks(MAX_TXN_OPS) {
            let ops: Vec<TxnOp> = chunk.iter().map(|(k, v)| TxnOp::put(k.clone(), v.clone(), None)).collect();
            self.kv.txn(Txn::new().and_then(ops)).await.map_err(err)?;
        }
        Ok(())
    }

    fn max_batch(&self) -> usize {
        MAX_TXN_OPS
    }

    fn describe(&self) -> String {
        format!(
            "etcd v3 gRPC at {} (one balanced channel; puts fsynced by a majority before the ack, \
             Range reads linearizable)",
            self.endpoints.join(",")
        )
    }
}
