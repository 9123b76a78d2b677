//! openraft running on `RaftStore`s: a three-node cluster in one process, its nodes linked by
//! direct calls instead of a network, replicates writes and transactions; a learner added
//! after the log was purged catches up from a snapshot file; a node restarted on its directory
//! keeps its state. This checks the storage against openraft itself, not only its test suite.

mod common;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use openraft::error::{
    Fatal, NetworkError, RPCError, RaftError, RemoteError, ReplicationClosed, StreamingError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{BasicNode, Config, Raft, SnapshotPolicy, Vote};
use strata_raft::{NodeId, RaftStore, TypeConfig};

type Node = (Raft<TypeConfig>, RaftStore);

/// Every running node, by id: the "network".
#[derive(Clone, Default)]
struct Router {
    nodes: Arc<Mutex<BTreeMap<NodeId, Node>>>,
}

impl Router {
    fn node(&self, id: NodeId) -> Result<Node, Unreachable> {
        let nodes = self.nodes.lock().unwrap();
        let gone = || Unreachable::new(&std::io::Error::other(format!("node {id} is down")));
        nodes.get(&id).cloned().ok_or_else(gone)
    }
}

struct Link {
    router: Router,
    target: NodeId,
}

impl RaftNetworkFactory<TypeConfig> for Router {
    type Network = Link;

    async fn new_client(&mut self, target: NodeId, _node: &BasicNode) -> Link {
        Link { router: self.clone(), target }
    }
}

type RpcResult<T> = Result<T, RPCError<NodeId, BasicNode, RaftError<NodeId>>>;

impl RaftNetwork<TypeConfig> for Link {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        _option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<NodeId>> {
        let (raft, _) = self.router.node(self.target)?;
        raft.append_entries(rpc).await.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        _option: RPCOption,
    ) -> RpcResult<VoteResponse<NodeId>> {
        let (raft, _) = self.router.node(self.target)?;
        raft.vote(rpc).await.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }

    /// Copies the file into the target's snapshot directory, as the server's transport does.
    async fn full_snapshot(
        &mut self,
        vote: Vote<NodeId>,
        snapshot: Snapshot<TypeConfig>,
        _cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
        _option: RPCOption,
    ) -> Result<SnapshotResponse<NodeId>, StreamingError<TypeConfig, Fatal<NodeId>>> {
        let (raft, store) = self.router.node(self.target)?;
        let received = store.state_machine().begin_receiving_snapshot().await?;
        tokio::fs::copy(&*snapshot.snapshot, &*received).await.map_err(|e| NetworkError::new(&e))?;
        let snapshot = Snapshot { meta: snapshot.meta, snapshot: received };
        raft.install_full_snapshot(vote, snapshot).await.map_err(|e| RemoteError::new(self.target, e).into())
    }
}

fn config() -> Arc<Config> {
    let config = Config {
        heartbeat_interval: 50,
        election_timeout_min: 200,
        election_timeout_max: 400,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(40),
        max_in_snapshot_log_to_keep: 0,
        purge_batch_size: 1,
        ..Default::default()
    };
    Arc::new(config.validate().unwrap())
}

async fn start(router: &Router, id: NodeId, dir: &std::path::Path) -> Raft<TypeConfig> {
    let store = open_when_released(dir).await;
    let raft =
        Raft::new(id, config(), router.clone(), store.log_store(), store.state_machine()).await.unwrap();
    router.nodes.lock().unwrap().insert(id, (raft.clone(), store));
    raft
}

/// Opens the node's store. A node just shut down may still be referenced for a moment by an
/// RPC in flight to it (the router hands out clones) or by openraft's state-machine task, so
/// its lock is released only when the last of those finishes: wait for it, for a bounded time.
async fn open_when_released(dir: &std::path::Path) -> RaftStore {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match RaftStore::open(dir) {
            Err(strata::Error::Locked(_)) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            opened => return opened.unwrap(),
        }
    }
}

fn addr(id: NodeId) -> BasicNode {
    BasicNode { addr: format!("node-{id}") }
}

async fn wait_applied(raft: &Raft<TypeConfig>, index: u64) {
    raft.wait(Some(Duration::from_secs(20))).applied_index_at_least(Some(index), "applied").await.unwrap();
}

/// 16 clients writing 10 keys each at once (their entries reach the log writer together),
/// then a transaction that succeeds and one that fails; the last entry's index.
async fn load(leader: &Raft<TypeConfig>) -> u64 {
    let mut clients = tokio::task::JoinSet::new();
    for c in 0..16 {
        let leader = leader.clone();
        clients.spawn(async move {
            for i in 0..10 {
                let key = format!("c{c:02}-{i}");
                leader.client_write(write(vec![put(&key, "v")])).await.unwrap();
            }
        });
    }
    while let Some(r) = clients.join_next().await {
        r.unwrap();
    }
    let swap = txn(vec![value_is("c00-0", Some("v"))], vec![put("c00-0", "w")], vec![]);
    assert!(leader.client_write(swap).await.unwrap().data.succeeded);
    let stale = txn(vec![value_is("c00-0", Some("v"))], vec![put("never", "1")], vec![]);
    let last = leader.client_write(stale).await.unwrap();
    assert!(!last.data.succeeded);
    last.log_id.index
}

/// Snapshots and purges the leader's log through `index`. A trigger while an automatic build
/// runs is ignored: trigger until one covers it.
async fn purge_through(leader: &Raft<TypeConfig>, index: u64) {
    let purged = |raft: &Raft<TypeConfig>| raft.metrics().borrow().purged.is_some_and(|p| p.index >= index);
    for _ in 0..100 {
        if purged(leader) {
            return;
        }
        leader.trigger().snapshot().await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("no snapshot covering index {index}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_replicates_snapshots_and_restarts() {
    let dirs: Vec<_> = (0..5).map(|_| tempfile::tempdir().unwrap()).collect();
    let router = Router::default();
    let mut rafts = BTreeMap::new();
    for id in 1..=3 {
        rafts.insert(id, start(&router, id, dirs[id as usize].path()).await);
    }
    let members: BTreeMap<NodeId, BasicNode> = (1..=3).map(|id| (id, addr(id))).collect();
    rafts[&1].initialize(members).await.unwrap();
    let wait = rafts[&1].wait(Some(Duration::from_secs(10)));
    let metrics = wait.metrics(|m| m.current_leader.is_some(), "leader").await.unwrap();
    let leader = rafts[&metrics.current_leader.unwrap()].clone();

    let last_index = load(&leader).await;
    for raft in rafts.values() {
        wait_applied(raft, last_index).await;
    }
    let expected = dump(&router.node(1).unwrap().1);
    assert_eq!(expected.len(), 160);
    assert!(expected.contains(&("c00-0".to_string(), "w".to_string())));
    for id in 2..=3 {
        assert_eq!(dump(&router.node(id).unwrap().1), expected, "node {id}");
    }

    // With the log purged, a new learner can only catch up from the snapshot.
    purge_through(&leader, last_index).await;
    let learner = start(&router, 4, dirs[4].path()).await;
    leader.add_learner(4, addr(4), true).await.unwrap();
    wait_applied(&learner, last_index).await;
    assert!(learner.metrics().borrow().snapshot.is_some(), "the learner installed a snapshot");
    assert_eq!(dump(&router.node(4).unwrap().1), expected);

    // A follower restarted on its directory has its state back and keeps up.
    let follower = *rafts.keys().find(|id| **id != leader.metrics().borrow().id).unwrap();
    rafts.remove(&follower).unwrap().shutdown().await.unwrap();
    router.nodes.lock().unwrap().remove(&follower);
    let restarted = start(&router, follower, dirs[follower as usize].path()).await;
    assert_eq!(dump(&router.node(follower).unwrap().1), expected);
    let after = leader.client_write(write(vec![put("after-restart", "1")])).await.unwrap();
    wait_applied(&restarted, after.log_id.index).await;
    assert_eq!(router.node(follower).unwrap().1.get(b"after-restart").unwrap().as_deref(), Some(&b"1"[..]));

    let all: Vec<Node> = router.nodes.lock().unwrap().values().cloned().collect();
    for (raft, _) in all {
        raft.shutdown().await.unwrap();
    }
}
