//! openraft's network for strata clusters: each Raft RPC is one HTTP POST to the peer (postcard
//! bodies; a snapshot is streamed as its file's bytes). It also owns the fault-injection switch,
//! the set of peers this node is partitioned from: messages to them are dropped here as
//! `Unreachable`, and the server refuses theirs. It does not decide anything Raft decides.

use std::collections::BTreeSet;
use std::future::Future;
use std::io;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use openraft::error::{
    Fatal, NetworkError, RPCError, RaftError, RemoteError, ReplicationClosed, StreamingError, Timeout,
    Unreachable,
};
use openraft::network::{RPCOption, RPCTypes, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::{BasicNode, Snapshot, Vote};
use serde::de::DeserializeOwned;
use serde::Serialize;
use strata_raft::{NodeId, TypeConfig};

use crate::api::{self, path, ApiResult, RaftRpc, SnapshotHeader, SNAPSHOT_HEADER};
use crate::http::{HttpClient, TransportError};

/// The peers a node is cut off from, shared by its network (outgoing) and server (incoming).
#[derive(Clone, Default)]
pub struct Partition {
    peers: Arc<RwLock<BTreeSet<NodeId>>>,
}

impl Partition {
    /// Replaces the set (empty heals every link).
    pub fn set(&self, peers: BTreeSet<NodeId>) {
        *self.peers.write().unwrap_or_else(|p| p.into_inner()) = peers;
    }

    /// Whether messages to or from `peer` are dropped.
    pub fn blocks(&self, peer: NodeId) -> bool {
        self.peers.read().unwrap_or_else(|p| p.into_inner()).contains(&peer)
    }

    pub fn peers(&self) -> BTreeSet<NodeId> {
        self.peers.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Makes one [`PeerConnection`] per replication target; all share one connection pool.
#[derive(Clone)]
pub struct Network {
    pub id: NodeId,
    pub http: HttpClient,
    pub partition: Partition,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerConnection;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> PeerConnection {
        PeerConnection { net: self.clone(), target, addr: node.addr.clone() }
    }
}

/// The link from this node to one peer.
pub struct PeerConnection {
    net: Network,
    target: NodeId,
    addr: String,
}

type RpcErr<E> = RPCError<NodeId, BasicNode, E>;

fn unreachable(why: impl Into<String>) -> Unreachable {
    Unreachable::new(&io::Error::other(why.into()))
}

impl PeerConnection {
    /// Sends one postcard RPC and decodes the peer's `Result<Resp, RaftError>`.
    async fn call<Req, Resp>(
        &self,
        route: &str,
        action: RPCTypes,
        rpc: Req,
        timeout: Duration,
    ) -> Result<Resp, RpcErr<RaftError<NodeId>>>
    where
        Req: Serialize + DeserializeOwned,
        Resp: DeserializeOwned,
    {
        if self.net.partition.blocks(self.target) {
            return Err(RPCError::Unreachable(unreachable("partitioned (fault injection)")));
        }
        let body = api::encode(&RaftRpc { from: self.net.id, rpc });
        let (_, bytes) = self.net.http.post(&self.addr, route, body, timeout).await.map_err(|e| match e {
            TransportError::NotSent(m) => RPCError::Unreachable(unreachable(m)),
            TransportError::Timeout => {
                RPCError::Timeout(Timeout { action, id: self.net.id, target: self.target, timeout })
            }
            TransportError::Failed(m) => RPCError::Network(NetworkError::new(&io::Error::other(m))),
        })?;
        let answer: ApiResult<Result<Resp, RaftError<NodeId>>> =
            api::decode(&bytes).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        match answer {
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(raft_err)) => Err(RPCError::RemoteError(RemoteError::new(self.target, raft_err))),
            Err(api_err) => Err(RPCError::Unreachable(Unreachable::new(&api_err))),
        }
    }

    /// Streams the snapshot file to the peer, which installs it.
    async fn send_snapshot(
        &self,
        vote: Vote<NodeId>,
        snapshot: Snapshot<TypeConfig>,
        timeout: Duration,
    ) -> Result<SnapshotResponse<NodeId>, StreamingError<TypeConfig, Fatal<NodeId>>> {
        let header = SnapshotHeader { from: self.net.id, vote, meta: snapshot.meta.clone() };
        let header = api::to_hex(&api::encode(&header));
        let file = tokio::fs::File::open(&*snapshot.snapshot).await.map_err(|e| {
            StreamingError::Network(NetworkError::new(&io::Error::other(format!(
                "open snapshot {}: {e}",
                snapshot.snapshot.display()
            ))))
        })?;
        let body = BodyExt::boxed(StreamBody::new(file_chunks(file).map(|r| r.map(Frame::data))));
        let sent = self
            .net
            .http
            .send("POST", &self.addr, path::RAFT_SNAPSHOT, Some((SNAPSHOT_HEADER, header)), body, timeout)
            .await;
        let (_, bytes) = sent.map_err(|e| match e {
            TransportError::NotSent(m) => StreamingError::Unreachable(unreachable(m)),
            TransportError::Timeout => StreamingError::Timeout(Timeout {
                action: RPCTypes::InstallSnapshot,
                id: self.net.id,
                target: self.target,
                timeout,
            }),
            TransportError::Failed(m) => StreamingError::Network(NetworkError::new(&io::Error::other(m))),
        })?;
        let answer: ApiResult<Result<SnapshotResponse<NodeId>, Fatal<NodeId>>> =
            api::decode(&bytes).map_err(|e| StreamingError::Network(NetworkError::new(&e)))?;
        match answer {
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(fatal)) => Err(StreamingError::RemoteError(RemoteError::new(self.target, fatal))),
            Err(api_err) => Err(StreamingError::Unreachable(Unreachable::new(&api_err))),
        }
    }
}

/// The file's bytes as a stream of chunks (1 MiB), so a snapshot is never whole in memory.
fn file_chunks(file: tokio::fs::File) -> impl futures_util::Stream<Item = io::Result<Bytes>> + Send {
    use tokio::io::AsyncReadExt;
    futures_util::stream::unfold(Some(file), |file| async move {
        let mut file = file?;
        let mut buf = vec![0u8; 1 << 20];
        match file.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(Bytes::from(buf)), Some(file)))
            }
            Err(e) => Some((Err(e), None)),
        }
    })
}

impl RaftNetwork<TypeConfig> for PeerConnection {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RpcErr<RaftError<NodeId>>> {
        self.call(path::RAFT_APPEND, RPCTypes::AppendEntries, rpc, option.hard_ttl()).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RpcErr<RaftError<NodeId>>> {
        self.call(path::RAFT_VOTE, RPCTypes::Vote, rpc, option.hard_ttl()).await
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote<NodeId>,
        snapshot: Snapshot<TypeConfig>,
        cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<NodeId>, StreamingError<TypeConfig, Fatal<NodeId>>> {
        if self.net.partition.blocks(self.target) {
            return Err(StreamingError::Unreachable(unreachable("partitioned (fault injection)")));
        }
        tokio::select! {
            closed = cancel => Err(StreamingError::Closed(closed)),
            sent = self.send_snapshot(vote, snapshot, option.hard_ttl()) => sent,
        }
    }
}
