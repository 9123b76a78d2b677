//! One strata cluster node: its Raft instance over a `RaftStore`, the HTTP server that serves its
//! routes, and its lifecycle (start on a listener, graceful shutdown). It owns the Raft
//! configuration (timeouts, snapshot policy); routes live in `routes_*`, storage in strata-raft.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use openraft::{Config, Raft, SnapshotPolicy};
use strata_raft::{NodeId, RaftStore, TypeConfig};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::api::ApiError;
use crate::http::HttpClient;
use crate::network::{Network, Partition};
use crate::proposer::Proposer;

/// How a node is set up. The defaults follow etcd's (heartbeat 100 ms, election 1000 ms).
#[derive(Clone, Debug)]
pub struct NodeConfig {
    pub id: NodeId,
    /// Where to listen; port 0 picks a free port, which then becomes the node's address.
    pub listen: String,
    /// The node keeps its database under `<dir>/db` (and its snapshots beside it).
    pub dir: PathBuf,
    pub heartbeat_ms: u64,
    /// The election timeout is drawn from `[election_timeout_ms, 2 * election_timeout_ms)`.
    pub election_timeout_ms: u64,
    /// A snapshot is taken after this many log entries since the last one.
    pub snapshot_logs: u64,
    /// Log entries kept behind a snapshot, for followers slightly behind.
    pub logs_kept_after_snapshot: u64,
}

impl NodeConfig {
    pub fn new(id: NodeId, listen: impl Into<String>, dir: impl Into<PathBuf>) -> NodeConfig {
        NodeConfig {
            id,
            listen: listen.into(),
            dir: dir.into(),
            heartbeat_ms: 100,
            election_timeout_ms: 1000,
            snapshot_logs: 10_000,
            logs_kept_after_snapshot: 1000,
        }
    }

    fn raft_config(&self) -> Result<Config, ApiError> {
        let config = Config {
            cluster_name: "strata".into(),
            heartbeat_interval: self.heartbeat_ms,
            election_timeout_min: self.election_timeout_ms,
            election_timeout_max: self.election_timeout_ms * 2,
            // One snapshot transfer is one HTTP request: give it time for a large file.
            install_snapshot_timeout: 60_000,
            snapshot_policy: SnapshotPolicy::LogsSinceLast(self.snapshot_logs),
            max_in_snapshot_log_to_keep: self.logs_kept_after_snapshot,
            ..Default::default()
        };
        config.validate().map_err(|e| ApiError::BadRequest(format!("raft config: {e}")))
    }
}

/// What the routes share: the node's identity, Raft, storage and fault switch.
pub struct Node {
    pub id: NodeId,
    pub addr: String,
    pub raft: Raft<TypeConfig>,
    /// Client writes go through it, batched (`proposer`).
    pub proposer: Proposer,
    pub store: Arc<RaftStore>,
    pub partition: Partition,
}

impl Node {
    /// Refuses a Raft RPC from a peer this node is partitioned from.
    pub fn admit(&self, from: NodeId) -> Result<(), ApiError> {
        if self.partition.blocks(from) {
            return Err(ApiError::Unavailable(format!("node {} is partitioned from {from}", self.id)));
        }
        Ok(())
    }
}

/// A started node; [`RunningNode::shutdown`] stops it.
pub struct RunningNode {
    pub node: Arc<Node>,
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<std::io::Result<()>>>,
}

/// Opens the store, starts Raft and serves HTTP on `config.listen`.
pub async fn start(config: NodeConfig) -> Result<RunningNode, ApiError> {
    let listener = TcpListener::bind(&config.listen)
        .await
        .map_err(|e| ApiError::Unavailable(format!("listen on {}: {e}", config.listen)))?;
    let addr = listener.local_addr().map_err(|e| ApiError::Unavailable(e.to_string()))?;
    let store = RaftStore::open(&config.dir).map_err(crate::errors::from_storage)?;
    let partition = Partition::default();
    let network = Network { id: config.id, http: HttpClient::new(), partition: partition.clone() };
    let raft = Raft::new(
        config.id,
        Arc::new(config.raft_config()?),
        network,
        store.log_store(),
        store.state_machine(),
    )
    .await
    .map_err(|e| ApiError::Internal(format!("start raft: {e}")))?;
    let node = Arc::new(Node {
        id: config.id,
        addr: addr.to_string(),
        proposer: Proposer::start(raft.clone()),
        raft,
        store: Arc::new(store),
        partition,
    });
    let router = crate::routes::router(node.clone());
    let (stop, stopped) = oneshot::channel::<()>();
    // Answers are small writes; without TCP_NODELAY one can wait for the peer's delayed ACK.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let server = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await
    });
    Ok(RunningNode { node, addr, stop: Some(stop), server: Some(server) })
}

impl RunningNode {
    /// Stops Raft, then the HTTP server (finishing requests in progress, for at most 2 s).
    pub async fn shutdown(mut self) {
        let _ = self.node.raft.shutdown().await;
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(mut server) = self.server.take() {
            // A request in progress could hold a graceful stop for long: bound the wait.
            if tokio::time::timeout(std::time::Duration::from_secs(2), &mut server).await.is_err() {
                server.abort();
            }
        }
    }
}
