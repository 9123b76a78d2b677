//! A cluster of nodes inside one process on ephemeral loopback ports, talking over the real HTTP
//! network: the harness of this crate's integration tests (and the fault tests). It only starts,
//! inspects and stops nodes; what a test checks is the test's business.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use strata_raft::NodeId;

use crate::api::{ApiError, NodeStatus};
use crate::client::{Client, ClientError};
use crate::node::{self, NodeConfig, RunningNode};
use crate::routes_admin::node_status;

/// Nodes 1..=n (more may be added), each with its data under `<base>/node<id>`.
pub struct LocalCluster {
    base: PathBuf,
    tune: fn(&mut NodeConfig),
    pub nodes: BTreeMap<NodeId, RunningNode>,
    /// Stopped nodes' addresses, which they get back on restart.
    stopped: BTreeMap<NodeId, String>,
}

/// Test timings: elections in well under a second, so tests stay short.
pub fn fast_timeouts(config: &mut NodeConfig) {
    config.heartbeat_ms = 50;
    config.election_timeout_ms = 300;
}

impl LocalCluster {
    /// Starts `n` nodes (not yet a cluster: call [`LocalCluster::init`]); `tune` adjusts each
    /// node's configuration (e.g. [`fast_timeouts`]).
    pub async fn start(n: u64, base: &Path, tune: fn(&mut NodeConfig)) -> Result<LocalCluster, ApiError> {
        let mut cluster =
            LocalCluster { base: base.to_path_buf(), tune, nodes: BTreeMap::new(), stopped: BTreeMap::new() };
        for id in 1..=n {
            cluster.start_node(id).await?;
        }
        Ok(cluster)
    }

    /// Starts one more node (outside the membership until it is added).
    pub async fn start_node(&mut self, id: NodeId) -> Result<String, ApiError> {
        let mut config = NodeConfig::new(id, "127.0.0.1:0", self.base.join(format!("node{id}")));
        (self.tune)(&mut config);
        let running = node::start(config).await?;
        let addr = running.addr.to_string();
        self.nodes.insert(id, running);
        Ok(addr)
    }

    /// Stops node `id` (its data stays); true if it was running.
    pub async fn stop_node(&mut self, id: NodeId) -> bool {
        match self.nodes.remove(&id) {
            Some(node) => {
                self.stopped.insert(id, node.addr.to_string());
                node.shutdown().await;
                true
            }
            None => false,
        }
    }

    /// Starts a stopped node again on its old address and data, as a restart after a crash or
    /// an upgrade would.
    pub async fn restart_node(&mut self, id: NodeId) -> Result<(), ApiError> {
        let addr = self
            .stopped
            .remove(&id)
            .ok_or_else(|| ApiError::BadRequest(format!("node {id} is not stopped")))?;
        let mut config = NodeConfig::new(id, addr, self.base.join(format!("node{id}")));
        (self.tune)(&mut config);
        let running = node::start(config).await?;
        self.nodes.insert(id, running);
        Ok(())
    }

    /// A running or stopped node's address.
    pub fn addr(&self, id: NodeId) -> String {
        match self.nodes.get(&id) {
            Some(n) => n.addr.to_string(),
            None => self.stopped.get(&id).cloned().unwrap_or_default(),
        }
    }

    pub fn endpoints(&self) -> Vec<String> {
        self.nodes.values().map(|n| n.addr.to_string()).collect()
    }

    /// A client that knows every node.
    pub fn client(&self) -> Client {
        Client::new(self.endpoints())
    }

    /// Forms the cluster with every started node as a voter (sent to the first).
    pub async fn init(&self) -> Result<(), ClientError> {
        let members: BTreeMap<NodeId, String> = self.nodes.keys().map(|&id| (id, self.addr(id))).collect();
        let first = self.endpoints().into_iter().next().unwrap_or_default();
        self.client().init(&first, members).await
    }

    pub fn status(&self, id: NodeId) -> Option<NodeStatus> {
        self.nodes.get(&id).map(|n| node_status(&n.node))
    }

    /// Waits until one of `among` leads with all of `among` agreeing on it.
    pub async fn wait_leader(&self, among: &BTreeSet<NodeId>, timeout: Duration) -> Option<NodeId> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            let leaders: BTreeSet<Option<NodeId>> =
                among.iter().map(|id| self.status(*id).and_then(|s| s.leader)).collect();
            if let [Some(leader)] = leaders.into_iter().collect::<Vec<_>>()[..] {
                if among.contains(&leader) && self.status(leader).is_some_and(|s| s.state == "Leader") {
                    return Some(leader);
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        None
    }

    /// Waits until node `id` has applied at least log index `index`.
    pub async fn wait_applied(&self, id: NodeId, index: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.status(id).and_then(|s| s.last_applied).is_some_and(|a| a >= index) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    /// Cuts the running nodes in two: no Raft message crosses between `side` and the rest
    /// (in-process; `Client::set_partition` does the same over HTTP).
    pub fn split(&self, side: &BTreeSet<NodeId>) {
        let all: BTreeSet<NodeId> = self.nodes.keys().copied().collect();
        for (id, running) in &self.nodes {
            let other: BTreeSet<NodeId> =
                if side.contains(id) { all.difference(side).copied().collect() } else { side.clone() };
            running.node.partition.set(other);
        }
    }

    /// Heals every partition among the running nodes.
    pub fn heal(&self) {
        for running in self.nodes.values() {
            running.node.partition.set(BTreeSet::new());
        }
    }

    /// Stops every node.
    pub async fn shutdown(self) {
        for (_, node) in self.nodes {
            node.shutdown().await;
        }
    }
}
