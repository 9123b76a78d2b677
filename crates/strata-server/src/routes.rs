//! The router of a node, and its Raft RPC routes (append, vote, streamed snapshot). Raft routes
//! only decode, check the partition switch and hand the message to openraft; the client, cluster
//! and admin routes are in `routes_kv` and `routes_admin`.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use futures_util::StreamExt;
use openraft::error::{Fatal, RaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::Snapshot;
use strata_raft::{NodeId, TypeConfig};
use tokio::io::AsyncWriteExt;

use crate::api::{self, path, ApiError, ApiResult, RaftRpc, SnapshotHeader, SNAPSHOT_HEADER};
use crate::errors::reply;
use crate::node::Node;
use crate::{routes_admin, routes_kv};

pub fn router(node: Arc<Node>) -> Router {
    Router::new()
        .route(path::RAFT_APPEND, post(append))
        .route(path::RAFT_VOTE, post(vote))
        .route(path::RAFT_SNAPSHOT, post(snapshot))
        .route(path::KV_WRITE, post(routes_kv::write))
        .route(path::KV_TXN, post(routes_kv::txn))
        .route(path::KV_GET, post(routes_kv::get))
        .route(path::KV_SCAN, post(routes_kv::scan))
        .route(path::CLUSTER_INIT, post(routes_admin::init))
        .route(path::CLUSTER_ADD_LEARNER, post(routes_admin::add_learner))
        .route(path::CLUSTER_CHANGE_MEMBERSHIP, post(routes_admin::change_membership))
        .route(path::CLUSTER_STATUS, get(routes_admin::status))
        .route(path::ADMIN_STATS, get(routes_admin::stats))
        .route(path::ADMIN_PROPERTY, get(routes_admin::property))
        .route(path::ADMIN_COMPACT, post(routes_admin::compact))
        .route(path::ADMIN_PARTITION, post(routes_admin::partition))
        // A snapshot is one request body; the default 2 MiB cap would refuse most.
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(node)
}

async fn append(State(node): State<Arc<Node>>, body: Bytes) -> Response {
    let result: ApiResult<Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>> = async {
        let req: RaftRpc<AppendEntriesRequest<TypeConfig>> = api::decode(&body)?;
        node.admit(req.from)?;
        Ok(node.raft.append_entries(req.rpc).await)
    }
    .await;
    reply(result)
}

async fn vote(State(node): State<Arc<Node>>, body: Bytes) -> Response {
    let result: ApiResult<Result<VoteResponse<NodeId>, RaftError<NodeId>>> = async {
        let req: RaftRpc<VoteRequest<NodeId>> = api::decode(&body)?;
        node.admit(req.from)?;
        Ok(node.raft.vote(req.rpc).await)
    }
    .await;
    reply(result)
}

/// Writes the streamed snapshot bytes to `target` and syncs them.
async fn write_snapshot_file(target: &std::path::Path, body: Body) -> ApiResult<()> {
    let io_err = |e: std::io::Error| ApiError::Internal(format!("write snapshot {}: {e}", target.display()));
    let mut file = tokio::fs::File::create(target).await.map_err(io_err)?;
    let mut chunks = body.into_data_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| ApiError::Unavailable(format!("snapshot stream broke: {e}")))?;
        file.write_all(&chunk).await.map_err(io_err)?;
    }
    file.sync_all().await.map_err(io_err)
}

/// Receives a snapshot file into the path the state machine hands out, then installs it.
async fn snapshot(State(node): State<Arc<Node>>, headers: HeaderMap, body: Body) -> Response {
    reply(receive_snapshot(&node, &headers, body).await)
}

async fn receive_snapshot(
    node: &Node,
    headers: &HeaderMap,
    body: Body,
) -> ApiResult<Result<SnapshotResponse<NodeId>, Fatal<NodeId>>> {
    let header = headers
        .get(SNAPSHOT_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(api::from_hex)
        .ok_or_else(|| ApiError::BadRequest(format!("missing or bad {SNAPSHOT_HEADER} header")))?;
    let header: SnapshotHeader = api::decode(&header)?;
    node.admit(header.from)?;
    // A snapshot from a deposed leader would be refused at install: do not receive its bytes.
    let my_vote = node
        .raft
        .with_raft_state(|s| *s.vote_ref())
        .await
        .map_err(|e| ApiError::Unavailable(e.to_string()))?;
    if header.vote < my_vote {
        return Ok(Ok(SnapshotResponse { vote: my_vote }));
    }
    let target =
        node.raft.begin_receiving_snapshot().await.map_err(|e| ApiError::Unavailable(e.to_string()))?;
    if let Err(e) = write_snapshot_file(&target, body).await {
        // A transfer cut short leaves nothing behind (open would remove it, but only at open).
        let _ = tokio::fs::remove_file(&*target).await;
        return Err(e);
    }
    let snapshot = Snapshot { meta: header.meta, snapshot: target };
    Ok(node.raft.install_full_snapshot(header.vote, snapshot).await)
}
